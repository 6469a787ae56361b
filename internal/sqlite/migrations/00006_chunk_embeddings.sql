-- Chunk embeddings move to their own table. A 384-dimension embedding is
-- 1.5 KB, twenty times a chunk's text, and as a column of chunks it made
-- every row ~1.6 KB: keyword search, which reads the chunk row of each
-- full-text match to filter by collection, read a whole 4 KB page per match,
-- and the table (~220 MB at 100k chunks) did not stay in any cache. Without
-- it, chunks is ~15 MB at 100k chunks. Embeddings are read only to build a
-- collection's vector index. collection_id is repeated here so that does
-- not touch chunks at all.

-- +goose Up
CREATE TABLE chunk_embeddings (
    chunk_id      INTEGER PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,
    collection_id TEXT NOT NULL,
    embedding     BLOB NOT NULL
);
CREATE INDEX chunk_embeddings_collection ON chunk_embeddings (collection_id);
INSERT INTO chunk_embeddings (chunk_id, collection_id, embedding)
    SELECT id, collection_id, embedding FROM chunks WHERE embedding IS NOT NULL;
ALTER TABLE chunks DROP COLUMN embedding;

-- +goose Down
ALTER TABLE chunks ADD COLUMN embedding BLOB;
UPDATE chunks SET embedding = (SELECT e.embedding FROM chunk_embeddings e WHERE e.chunk_id = chunks.id);
DROP TABLE chunk_embeddings;
