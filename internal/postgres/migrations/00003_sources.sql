-- Collections, documents and chunks for answers with sources. Chunk text is
-- indexed for full-text search by a generated tsvector column ('simple'
-- configuration: no stemming, language-neutral) over search_text, the text
-- lower-cased with diacritics removed by the application (as SQLite's FTS5
-- unicode61 tokenizer does), with a GIN index; deleting a document cascades
-- to its chunks and so to the index.

-- +goose Up
CREATE TABLE collections (
    id              TEXT PRIMARY KEY,
    team_id         TEXT NOT NULL REFERENCES teams (id) ON DELETE RESTRICT,
    name            TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    embedding_model TEXT NOT NULL,
    metadata        TEXT NOT NULL DEFAULT '{}',
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX collections_team_name ON collections (team_id, name);

CREATE TABLE documents (
    id            TEXT PRIMARY KEY,
    collection_id TEXT NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    title         TEXT NOT NULL DEFAULT '',
    url           TEXT NOT NULL DEFAULT '',
    metadata      TEXT NOT NULL DEFAULT '{}',
    format        TEXT NOT NULL,
    status        TEXT NOT NULL,
    error         TEXT NOT NULL DEFAULT '',
    progress      DOUBLE PRECISION NOT NULL DEFAULT 0,
    text          TEXT NOT NULL,
    chars         INTEGER NOT NULL,
    chunk_count   INTEGER NOT NULL DEFAULT 0,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX documents_collection ON documents (collection_id, created_at);

CREATE TABLE chunks (
    id            BIGSERIAL PRIMARY KEY,
    document_id   TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    collection_id TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    start_char    INTEGER NOT NULL,
    end_char      INTEGER NOT NULL,
    text          TEXT NOT NULL,
    embedding     BYTEA,
    search_text   TEXT NOT NULL,
    tsv           TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED
);
CREATE INDEX chunks_document ON chunks (document_id, seq);
CREATE INDEX chunks_collection ON chunks (collection_id);
CREATE INDEX chunks_tsv ON chunks USING GIN (tsv);

-- +goose Down
DROP TABLE chunks;
DROP TABLE documents;
DROP TABLE collections;
