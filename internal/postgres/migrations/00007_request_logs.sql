-- The request log: one row per API call, chained by hash (seq orders the
-- chain). Records, so no foreign keys. id is the request id, which a
-- client may choose (x-request-id), so it is not unique.

-- +goose Up
CREATE TABLE request_logs (
    seq               BIGSERIAL PRIMARY KEY,
    id                TEXT NOT NULL,
    time              TIMESTAMPTZ NOT NULL,
    team_id           TEXT NOT NULL DEFAULT '',
    key_id            TEXT NOT NULL DEFAULT '',
    method            TEXT NOT NULL DEFAULT '',
    route             TEXT NOT NULL DEFAULT '',
    model             TEXT NOT NULL DEFAULT '',
    backend           TEXT NOT NULL DEFAULT '',
    replica           TEXT NOT NULL DEFAULT '',
    status            INTEGER NOT NULL,
    error_code        TEXT NOT NULL DEFAULT '',
    latency_ms        DOUBLE PRECISION NOT NULL,
    ttft_ms           DOUBLE PRECISION,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    client_ip         TEXT NOT NULL DEFAULT '',
    user_name         TEXT NOT NULL DEFAULT '',
    prev_hash         TEXT NOT NULL,
    hash              TEXT NOT NULL
);
CREATE INDEX request_logs_team ON request_logs (team_id, seq);
CREATE INDEX request_logs_id ON request_logs (id);

-- +goose Down
DROP TABLE request_logs;
