-- Workflows (docs/workflows.md): definitions at their current version,
-- runs (each keeps the definition's steps it started with), the state of
-- each step of a run, and the approvals runs wait for. The runs' progress
-- itself is the durable engine's (internal/durable); these tables are what
-- the API shows and what the run's steps write as they go.

-- +goose Up
CREATE TABLE workflows (
    id          TEXT PRIMARY KEY,
    team_id     TEXT NOT NULL,
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    version     INTEGER NOT NULL,
    spec        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    deleted_at  TEXT
);
CREATE INDEX workflows_team ON workflows (team_id, created_at, id);

CREATE TABLE workflow_versions (
    workflow_id TEXT NOT NULL,
    version     INTEGER NOT NULL,
    spec        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (workflow_id, version)
);

CREATE TABLE workflow_runs (
    id                 TEXT PRIMARY KEY,
    team_id            TEXT NOT NULL,
    workflow_id        TEXT NOT NULL,
    version            INTEGER NOT NULL,
    key_id             TEXT NOT NULL,
    status             TEXT NOT NULL,
    input              TEXT NOT NULL,
    output             TEXT,
    error              TEXT,
    spec               TEXT NOT NULL,
    cancel_requested   INTEGER NOT NULL DEFAULT FALSE,
    created_at         TEXT NOT NULL,
    started_at         TEXT,
    ended_at           TEXT
);
CREATE INDEX workflow_runs_team ON workflow_runs (team_id, created_at, id);
CREATE INDEX workflow_runs_status ON workflow_runs (status, created_at, id);

CREATE TABLE workflow_run_steps (
    run_id     TEXT NOT NULL,
    step_id    TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    type       TEXT NOT NULL,
    status     TEXT NOT NULL,
    output     TEXT,
    error      TEXT,
    attempts   INTEGER NOT NULL DEFAULT 0,
    started_at TEXT,
    ended_at   TEXT,
    PRIMARY KEY (run_id, step_id)
);

CREATE TABLE approvals (
    id           TEXT PRIMARY KEY,
    team_id      TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    workflow_id  TEXT NOT NULL,
    step_id      TEXT NOT NULL,
    status       TEXT NOT NULL,
    instructions TEXT NOT NULL DEFAULT '',
    approvers    TEXT NOT NULL DEFAULT '{}',
    comment      TEXT NOT NULL DEFAULT '',
    decided_by   TEXT NOT NULL DEFAULT '',
    decided_at   TEXT,
    expires_at   TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
CREATE INDEX approvals_team ON approvals (team_id, status, created_at, id);

-- +goose Down
DROP TABLE approvals;
DROP TABLE workflow_run_steps;
DROP TABLE workflow_runs;
DROP TABLE workflow_versions;
DROP TABLE workflows;
