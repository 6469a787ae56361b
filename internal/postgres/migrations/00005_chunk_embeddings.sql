-- Chunk embeddings move to their own table (as on SQLite; see its
-- migration 00006): keyword search reads chunk rows, and a 1.5 KB
-- embedding in each made them twenty times wider than their text.
-- Embeddings are read only to build a collection's vector index.

-- +goose Up
CREATE TABLE chunk_embeddings (
    chunk_id      BIGINT PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
    collection_id TEXT NOT NULL,
    embedding     BYTEA NOT NULL
);
CREATE INDEX chunk_embeddings_collection ON chunk_embeddings (collection_id, chunk_id);
INSERT INTO chunk_embeddings (chunk_id, collection_id, embedding)
    SELECT id, collection_id, embedding FROM chunks WHERE embedding IS NOT NULL;
ALTER TABLE chunks DROP COLUMN embedding;

-- +goose Down
ALTER TABLE chunks ADD COLUMN embedding BYTEA;
UPDATE chunks SET embedding = e.embedding FROM chunk_embeddings e WHERE e.chunk_id = chunks.id;
DROP TABLE chunk_embeddings;
