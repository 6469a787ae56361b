-- Limit rules set through the admin API (PUT /v1/limits/rules/{scope}/{subject}):
-- requests and tokens per minute, concurrent requests and token budgets per
-- day and month for one key, team or model. 0 is no limit. Rules from the
-- configuration file are not stored; a stored rule overrides one for the
-- same scope and subject.

-- +goose Up
CREATE TABLE limit_rules (
    scope               TEXT NOT NULL,
    subject             TEXT NOT NULL,
    requests_per_minute BIGINT NOT NULL DEFAULT 0,
    tokens_per_minute   BIGINT NOT NULL DEFAULT 0,
    concurrent_requests BIGINT NOT NULL DEFAULT 0,
    tokens_per_day      BIGINT NOT NULL DEFAULT 0,
    tokens_per_month    BIGINT NOT NULL DEFAULT 0,
    updated_at          BIGINT NOT NULL,
    PRIMARY KEY (scope, subject)
);

-- +goose Down
DROP TABLE limit_rules;
