-- The event log behind GET /v1/events and the webhooks: one row per
-- published event, numbered by seq in the order the events became visible
-- (SQLite serializes write transactions; AUTOINCREMENT never reuses a
-- number). team_id is NULL for events about the deployment (models), which
-- every team sees. subject is the object a stream may follow alone (a
-- workflow run), '' for none. data is the event's JSON payload.

-- +goose Up
CREATE TABLE events (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    type       TEXT NOT NULL,
    team_id    TEXT,
    subject    TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    data       TEXT NOT NULL
);
CREATE INDEX events_team ON events (team_id, seq);
CREATE INDEX events_subject ON events (subject, seq);

-- +goose Down
DROP TABLE events;
