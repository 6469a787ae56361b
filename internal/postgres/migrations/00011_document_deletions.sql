-- Vector indexes live in each server's memory, filled from chunk_embeddings
-- and kept fresh by reading the embeddings whose chunk id is above the
-- largest one the index holds (as on SQLite, see its migration 00012).
-- Chunk ids come from a sequence and are never reused; AddChunks takes a
-- per-collection advisory lock so that a collection's ids also become
-- visible in increasing order. Deletions leave no row to read, so each
-- collection counts the documents deleted from it: a server that sees the
-- count change lists the collection's embedded chunk ids and drops from its
-- index those that are gone. Existing collections start at 0.

-- +goose Up
ALTER TABLE collections ADD COLUMN document_deletions BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE collections DROP COLUMN document_deletions;
