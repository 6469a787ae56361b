-- Guardrail policies and the decisions their rules made. A policy is kept
-- whole as JSON (body); the columns beside it are what queries and the
-- uniqueness of names need. Decisions are records: no foreign keys (they
-- outlive their policy), PII spans as JSON offsets, never the text.

-- +goose Up
CREATE TABLE policies (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    body       TEXT NOT NULL,
    scope      TEXT NOT NULL,
    scope_id   TEXT NOT NULL DEFAULT '',
    enabled    BOOLEAN NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX policies_name ON policies (name);

CREATE TABLE policy_decisions (
    id          TEXT PRIMARY KEY,
    created_at  TIMESTAMPTZ NOT NULL,
    request_id  TEXT NOT NULL DEFAULT '',
    team_id     TEXT NOT NULL DEFAULT '',
    key_id      TEXT NOT NULL DEFAULT '',
    model       TEXT NOT NULL DEFAULT '',
    route       TEXT NOT NULL DEFAULT '',
    policy_id   TEXT NOT NULL,
    policy_name TEXT NOT NULL,
    rule        TEXT NOT NULL,
    stage       TEXT NOT NULL,
    action      TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    spans       TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX policy_decisions_team ON policy_decisions (team_id, created_at, id);
CREATE INDEX policy_decisions_time ON policy_decisions (created_at, id);
CREATE INDEX policy_decisions_request ON policy_decisions (request_id);

-- +goose Down
DROP TABLE policy_decisions;
DROP TABLE policies;
