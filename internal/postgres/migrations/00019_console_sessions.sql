-- Web console sessions (internal/console/session). id_hash is the SHA-256
-- of the session id the browser's cookie carries (the id itself is not
-- stored); key_id is the API key the session acts as; csrf is the token its
-- forms and JS calls must send. Times are Unix microseconds.

-- +goose Up
CREATE TABLE console_sessions (
    id_hash      BYTEA PRIMARY KEY,
    key_id       TEXT NOT NULL,
    csrf         TEXT NOT NULL,
    created_us   BIGINT NOT NULL,
    last_seen_us BIGINT NOT NULL,
    expires_us   BIGINT NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_us);
CREATE INDEX console_sessions_key ON console_sessions (key_id);

-- +goose Down
DROP TABLE console_sessions;
