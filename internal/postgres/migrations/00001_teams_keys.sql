-- Teams and API keys.

-- +goose Up
CREATE TABLE teams (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX teams_name ON teams (name);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL DEFAULT '',
    prefix       TEXT NOT NULL,
    hash         BYTEA NOT NULL,
    team_id      TEXT NOT NULL REFERENCES teams (id) ON DELETE RESTRICT,
    scopes       TEXT NOT NULL DEFAULT '',
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ,
    last_used_at TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ,
    rotated_to   TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);
CREATE INDEX api_keys_team_id ON api_keys (team_id, created_at);

-- +goose Down
DROP TABLE api_keys;
DROP TABLE teams;
