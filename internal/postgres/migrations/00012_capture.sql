-- Prompt and output capture: off by default, switched on per team
-- (PATCH /v1/teams/{id} {"capture": true}); a captured request's record
-- keeps its prompt and output text, redacted by the team's policies first.

-- +goose Up
ALTER TABLE teams ADD COLUMN capture BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE request_logs ADD COLUMN prompt TEXT NOT NULL DEFAULT '';
ALTER TABLE request_logs ADD COLUMN output TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE request_logs DROP COLUMN output;
ALTER TABLE request_logs DROP COLUMN prompt;
ALTER TABLE teams DROP COLUMN capture;
