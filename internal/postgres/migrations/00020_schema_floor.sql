-- The schema's floor (internal/schema, docs/upgrading.md): the lowest
-- "highest migration" a release may embed and still serve from this
-- database. It stays 0 while every migration applied is an expand step
-- (a release that knows fewer migrations ignores the newer tables and
-- columns); applying a contract step ("-- sovereign:contract after=N")
-- raises it to N, and an older release then refuses to start instead of
-- failing on a column that is gone. One row; it only ever rises.

-- +goose Up
CREATE TABLE schema_floor (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version BIGINT NOT NULL
);
INSERT INTO schema_floor (id, version) VALUES (1, 0);

-- +goose Down
DROP TABLE schema_floor;
