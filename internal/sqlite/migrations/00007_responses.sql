-- Stored responses of the Responses API (store: true), per team: the
-- response as answered, its request's input items, and the conversation
-- it ends, which previous_response_id continues.

-- +goose Up
CREATE TABLE responses (
    id            TEXT PRIMARY KEY,
    team_id       TEXT NOT NULL,
    model         TEXT NOT NULL,
    response      TEXT NOT NULL,
    input_items   TEXT NOT NULL,
    conversation  TEXT NOT NULL,
    created_at    TEXT NOT NULL
);
CREATE INDEX responses_team ON responses (team_id, created_at);

-- +goose Down
DROP TABLE responses;
