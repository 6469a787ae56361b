-- Vector indexes live in each server's memory, filled from chunk_embeddings
-- and kept fresh by reading the embeddings whose chunk id is above the
-- largest one the index holds (chunk ids are AUTOINCREMENT: never reused,
-- and visible in increasing order because write transactions are
-- serialized). Deletions leave no row to read, so each collection counts
-- the documents deleted from it: a server that sees the count change lists
-- the collection's embedded chunk ids and drops from its index those that
-- are gone. Existing collections start at 0.

-- +goose Up
ALTER TABLE collections ADD COLUMN document_deletions INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE collections DROP COLUMN document_deletions;
