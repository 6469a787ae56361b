-- Idempotency keys (internal/idempotency): the first response of a create
-- route called with an Idempotency-Key, so that a retry gets it again.
--
-- id is the SHA-256 of the caller's key id and the Idempotency-Key (the
-- header itself is not stored); fingerprint is the SHA-256 of the first
-- request's method, path and body; body is the response sealed with a key
-- derived from the Idempotency-Key (AES-GCM), so that a response holding a
-- secret (a new API key) cannot be read from the database alone. done is
-- 0 while the first request runs. Times are Unix milliseconds.

-- +goose Up
CREATE TABLE idempotency_keys (
    id          TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL DEFAULT '',
    done        INTEGER NOT NULL DEFAULT 0,
    status      INTEGER NOT NULL DEFAULT 0,
    body        BLOB,
    started_ms  INTEGER NOT NULL,
    expires_ms  INTEGER NOT NULL
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_ms);

-- +goose Down
DROP TABLE idempotency_keys;
