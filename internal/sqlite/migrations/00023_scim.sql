-- SCIM provisioning (internal/scim, docs/scim.md): which users an identity
-- provider manages, with what SCIM alone knows of them (userName,
-- externalId, the parts of the name), its groups, and their members. An
-- expand step: new tables only, which a release that knows fewer
-- migrations ignores. userName and displayName are unique
-- case-insensitively through their lower-cased keys. Times are UTC text in
-- the stores' fixed-width form.

-- +goose Up
CREATE TABLE scim_users (
    user_id       TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    user_name     TEXT NOT NULL,
    user_name_key TEXT NOT NULL,
    external_id   TEXT NOT NULL DEFAULT '',
    given_name    TEXT NOT NULL DEFAULT '',
    family_name   TEXT NOT NULL DEFAULT '',
    formatted     TEXT NOT NULL DEFAULT '',
    display_name  TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE UNIQUE INDEX scim_users_user_name ON scim_users (user_name_key);
CREATE INDEX scim_users_external_id ON scim_users (external_id) WHERE external_id <> '';
CREATE INDEX scim_users_created ON scim_users (created_at, user_id);

CREATE TABLE scim_groups (
    id               TEXT PRIMARY KEY,
    display_name     TEXT NOT NULL,
    display_name_key TEXT NOT NULL,
    external_id      TEXT NOT NULL DEFAULT '',
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE UNIQUE INDEX scim_groups_display_name ON scim_groups (display_name_key);
CREATE INDEX scim_groups_external_id ON scim_groups (external_id) WHERE external_id <> '';
CREATE INDEX scim_groups_created ON scim_groups (created_at, id);

CREATE TABLE scim_group_members (
    group_id   TEXT NOT NULL REFERENCES scim_groups (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES scim_users (user_id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX scim_group_members_user ON scim_group_members (user_id);

-- +goose Down
DROP TABLE scim_group_members;
DROP TABLE scim_groups;
DROP TABLE scim_users;
