-- The request log's anchor: the last record removed by retention (its seq
-- and hash), so the chain of the records kept still verifies from there.
-- One row at most (id = 1).

-- +goose Up
CREATE TABLE request_log_anchor (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    seq       BIGINT NOT NULL,
    hash      TEXT NOT NULL,
    purged    BIGINT NOT NULL
);

-- +goose Down
DROP TABLE request_log_anchor;
