-- Periodic Merkle checkpoints of the request log: the RFC 6962 root of the
-- records first_seq..last_seq (the chain as stored when it was taken).
-- `sovereign audit verify` recomputes each one still within the kept
-- chain, so a chain rewritten consistently (every hash recomputed) still
-- fails against the roots taken before; proofs can be asked against one.

-- +goose Up
CREATE TABLE log_checkpoints (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    first_seq  INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    size       INTEGER NOT NULL,
    root       TEXT NOT NULL
);

-- +goose Down
DROP TABLE log_checkpoints;
