-- Periodic Merkle checkpoints of the request log: the RFC 6962 root of the
-- records first_seq..last_seq (the chain as stored when it was taken).
-- `sovereign audit verify` recomputes each one still within the kept
-- chain, so a chain rewritten consistently (every hash recomputed) still
-- fails against the roots taken before; proofs can be asked against one.

-- +goose Up
CREATE TABLE log_checkpoints (
    id         BIGSERIAL PRIMARY KEY,
    created_at TIMESTAMPTZ NOT NULL,
    first_seq  BIGINT NOT NULL,
    last_seq   BIGINT NOT NULL,
    size       BIGINT NOT NULL,
    root       TEXT NOT NULL
);

-- +goose Down
DROP TABLE log_checkpoints;
