-- Teams and API keys. Times are UTC text in the fixed-width form
-- 2006-01-02T15:04:05.000000Z, so they sort as they compare.

-- +goose Up
CREATE TABLE teams (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX teams_name ON teams (name);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL DEFAULT '',
    prefix       TEXT NOT NULL,
    hash         BLOB NOT NULL,
    team_id      TEXT NOT NULL REFERENCES teams (id) ON DELETE RESTRICT,
    scopes       TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    expires_at   TEXT,
    last_used_at TEXT,
    revoked_at   TEXT,
    rotated_to   TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);
CREATE INDEX api_keys_team_id ON api_keys (team_id, created_at);

-- +goose Down
DROP TABLE api_keys;
DROP TABLE teams;
