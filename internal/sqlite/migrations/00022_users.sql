-- People (internal/auth, docs/users.md): users who sign in to the console
-- and own API keys, their memberships of teams with a role, and which
-- kind of key each key is. An expand step: a release that knows fewer
-- migrations ignores these tables and columns (its keys are all the
-- team's service-account keys, as before). Times are UTC text in the
-- stores' fixed-width form.

-- +goose Up
CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    email          TEXT NOT NULL,
    name           TEXT NOT NULL DEFAULT '',
    active         INTEGER NOT NULL DEFAULT 1,
    instance_admin INTEGER NOT NULL DEFAULT 0,
    password_hash  TEXT NOT NULL DEFAULT '',
    failed_logins  INTEGER NOT NULL DEFAULT 0,
    locked_until   TEXT,
    created_at     TEXT NOT NULL,
    totp_secret    TEXT NOT NULL DEFAULT '',
    totp_pending   TEXT NOT NULL DEFAULT '',
    totp_last_step INTEGER NOT NULL DEFAULT 0,
    last_login_at  TEXT
);
CREATE UNIQUE INDEX users_email ON users (email);

CREATE TABLE memberships (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    team_id    TEXT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    role       TEXT NOT NULL,
    source     TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    PRIMARY KEY (user_id, team_id)
);
CREATE INDEX memberships_team ON memberships (team_id, created_at);

-- Who a user is at a single sign-on provider: the provider's name and its
-- stable subject (the ID token's sub), so a changed e-mail address at the
-- provider still finds the same user.
CREATE TABLE user_identities (
    provider   TEXT NOT NULL,
    subject    TEXT NOT NULL,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (provider, subject)
);
CREATE INDEX user_identities_user ON user_identities (user_id);

-- A password sign-in waiting for its second step (a TOTP code): the
-- browser's cookie holds the id, this table its SHA-256.
CREATE TABLE signin_challenges (
    id_hash    BLOB PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_us INTEGER NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0
);

-- Invitations by link: the link's token is kept as its SHA-256 only; an
-- invitation is used once, before it expires.
CREATE TABLE invitations (
    id          TEXT PRIMARY KEY,
    token_hash  BLOB NOT NULL,
    email       TEXT NOT NULL,
    team_id     TEXT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    role        TEXT NOT NULL,
    invited_by  TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    accepted_at TEXT,
    user_id     TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX invitations_token ON invitations (token_hash);
CREATE INDEX invitations_team ON invitations (team_id, created_at);

-- A console session signed in through single sign-on: the provider, the
-- ID token to name at its logout (RP-initiated logout), and when it ends
-- whatever its use, so that the provider's groups are read again (0: the
-- console's own limit).
ALTER TABLE console_sessions ADD COLUMN sso TEXT NOT NULL DEFAULT '';
ALTER TABLE console_sessions ADD COLUMN id_token TEXT NOT NULL DEFAULT '';
ALTER TABLE console_sessions ADD COLUMN ends_us INTEGER NOT NULL DEFAULT 0;

ALTER TABLE api_keys ADD COLUMN kind TEXT NOT NULL DEFAULT 'service';
ALTER TABLE api_keys ADD COLUMN owner_user_id TEXT NOT NULL DEFAULT '';
CREATE INDEX api_keys_owner ON api_keys (owner_user_id) WHERE owner_user_id <> '';

-- The user behind a request made with a key they own ('' for a service
-- key).
ALTER TABLE request_logs ADD COLUMN user_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE console_sessions DROP COLUMN ends_us;
ALTER TABLE console_sessions DROP COLUMN id_token;
ALTER TABLE console_sessions DROP COLUMN sso;
DROP TABLE user_identities;
DROP TABLE invitations;
DROP TABLE signin_challenges;
ALTER TABLE request_logs DROP COLUMN user_id;
DROP INDEX api_keys_owner;
ALTER TABLE api_keys DROP COLUMN owner_user_id;
ALTER TABLE api_keys DROP COLUMN kind;
DROP TABLE memberships;
DROP TABLE users;
