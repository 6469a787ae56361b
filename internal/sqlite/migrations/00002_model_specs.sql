-- Model configurations made through the admin API (upstream models,
-- local models from other paths, aliases, limits, deprecation). The spec
-- is the catalog's JSON; the YAML file's models are not stored.

-- +goose Up
CREATE TABLE model_specs (
    id         TEXT PRIMARY KEY,
    spec       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- +goose Down
DROP TABLE model_specs;
