-- Source links: one row per citation and source of an answer with
-- citations. Records, so no foreign keys: a link outlives the document it
-- names. seq orders links (newest first) and backs cursor pagination.

-- +goose Up
CREATE TABLE source_links (
    seq            BIGSERIAL PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,
    team_id        TEXT NOT NULL,
    key_id         TEXT NOT NULL DEFAULT '',
    response_id    TEXT NOT NULL,
    model          TEXT NOT NULL,
    citation_index INTEGER NOT NULL,
    answer_start   INTEGER NOT NULL,
    answer_end     INTEGER NOT NULL,
    cited_text     TEXT NOT NULL,
    source_number  INTEGER NOT NULL,
    source_id      TEXT NOT NULL,
    collection_id  TEXT NOT NULL DEFAULT '',
    document_id    TEXT NOT NULL DEFAULT '',
    chunk_id       TEXT NOT NULL DEFAULT '',
    title          TEXT NOT NULL DEFAULT '',
    url            TEXT NOT NULL DEFAULT '',
    snippet        TEXT NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX source_links_team ON source_links (team_id, seq);
CREATE INDEX source_links_response ON source_links (team_id, response_id, seq);
CREATE INDEX source_links_document ON source_links (team_id, document_id, seq);

-- +goose Down
DROP TABLE source_links;
