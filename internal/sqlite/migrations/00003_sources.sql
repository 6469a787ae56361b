-- Collections, documents and chunks for answers with sources. Chunk text is
-- indexed by an FTS5 table kept in step by triggers (cascading deletes
-- fire them too), so deleting a document removes its chunks from the
-- keyword index.

-- +goose Up
CREATE TABLE collections (
    id              TEXT PRIMARY KEY,
    team_id         TEXT NOT NULL REFERENCES teams (id) ON DELETE RESTRICT,
    name            TEXT NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    embedding_model TEXT NOT NULL,
    metadata        TEXT NOT NULL DEFAULT '{}',
    created_at      TEXT NOT NULL
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
    progress      REAL NOT NULL DEFAULT 0,
    text          TEXT NOT NULL,
    chars         INTEGER NOT NULL,
    chunk_count   INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE INDEX documents_collection ON documents (collection_id, created_at);

CREATE TABLE chunks (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id   TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    collection_id TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    start_char    INTEGER NOT NULL,
    end_char      INTEGER NOT NULL,
    text          TEXT NOT NULL,
    embedding     BLOB
);
CREATE INDEX chunks_document ON chunks (document_id, seq);
CREATE INDEX chunks_collection ON chunks (collection_id);

CREATE VIRTUAL TABLE chunks_fts USING fts5 (text, content = 'chunks', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2');

-- +goose StatementBegin
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER chunks_fts_delete;
DROP TRIGGER chunks_fts_insert;
DROP TABLE chunks_fts;
DROP TABLE chunks;
DROP TABLE documents;
DROP TABLE collections;
