-- Webhooks (docs/webhooks.md): each team's endpoints, the event types each
-- subscribes to ('*': all), the outbox of deliveries — one row per event
-- and webhook, written in the transaction that stores the event — and the
-- log of each delivery's attempts. Secrets are kept as they are (the
-- server signs with them); the API never returns them after creation or
-- rotation. The deliveries' progress itself is the durable engine's
-- (internal/durable): these tables are what the API shows and what the
-- attempts write.

-- +goose Up
CREATE TABLE webhooks (
    id                    TEXT PRIMARY KEY,
    team_id               TEXT NOT NULL,
    url                   TEXT NOT NULL,
    description           TEXT NOT NULL DEFAULT '',
    events                TEXT NOT NULL,
    secret                TEXT NOT NULL,
    previous_secret       TEXT NOT NULL DEFAULT '',
    previous_secret_until TEXT,
    enabled               INTEGER NOT NULL DEFAULT TRUE,
    disabled_reason       TEXT NOT NULL DEFAULT '',
    disabled_at           TEXT,
    disabled_by           TEXT NOT NULL DEFAULT '',
    consecutive_failures  INTEGER NOT NULL DEFAULT 0,
    failing_since         TEXT,
    created_at            TEXT NOT NULL,
    updated_at            TEXT NOT NULL
);
CREATE INDEX webhooks_team ON webhooks (team_id, created_at, id);

CREATE TABLE webhook_subscriptions (
    event_type TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    PRIMARY KEY (event_type, webhook_id)
);
CREATE INDEX webhook_subscriptions_webhook ON webhook_subscriptions (webhook_id);

CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    webhook_id      TEXT NOT NULL,
    team_id         TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    message_id      TEXT NOT NULL,
    status          TEXT NOT NULL,
    dispatched      INTEGER NOT NULL DEFAULT FALSE,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_attempt_at TEXT,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    next_attempt_at TEXT,
    redelivery_of   TEXT NOT NULL DEFAULT '',
    created_at      TEXT NOT NULL,
    ended_at        TEXT
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at, id);
CREATE INDEX webhook_deliveries_undispatched ON webhook_deliveries (created_at, id) WHERE dispatched = FALSE;
CREATE INDEX webhook_deliveries_ended ON webhook_deliveries (ended_at);

CREATE TABLE webhook_delivery_attempts (
    delivery_id   TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    started_at    TEXT NOT NULL,
    duration_us   INTEGER NOT NULL,
    status_code   INTEGER NOT NULL DEFAULT 0,
    response_body TEXT NOT NULL DEFAULT '',
    error         TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (delivery_id, attempt)
);

-- +goose Down
DROP TABLE webhook_delivery_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_subscriptions;
DROP TABLE webhooks;
