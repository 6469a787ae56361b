-- OpenAI's Batch API (internal/batch): uploaded files, batches and their
-- lines.
--
-- files: an upload (kind '') keeps its content in file_parts, in pieces of
-- 1 MiB written as the upload streams in (status 'uploading' until it has
-- been read and checked whole, then 'processed'). A batch's output or error
-- file (kind 'output' or 'error', batch_id set) stores no content of its
-- own: it is the batch's finished lines of that kind, read from
-- batch_items in input order.
--
-- batches: one row per batch, with its counts kept up to date in the same
-- transaction as each finished line (request_counts, the result files'
-- sizes, token usage).
--
-- batch_items: one row per line, copied from the input file when the batch
-- starts; status goes from 'pending' to how it ended, with result the
-- line of the output or error file (kind). A line's ending is written only
-- while it is pending, so a line is finished once.

-- +goose Up
CREATE TABLE files (
    seq        BIGSERIAL PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    team_id    TEXT NOT NULL,
    filename   TEXT NOT NULL,
    purpose    TEXT NOT NULL,
    status     TEXT NOT NULL,
    bytes      BIGINT NOT NULL DEFAULT 0,
    lines      INTEGER NOT NULL DEFAULT 0,
    batch_id   TEXT,
    kind       TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX files_team ON files (team_id, seq);

CREATE TABLE file_parts (
    file_id TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    part    INTEGER NOT NULL,
    data    BYTEA NOT NULL,
    PRIMARY KEY (file_id, part)
);

CREATE TABLE batches (
    seq               BIGSERIAL PRIMARY KEY,
    id                TEXT NOT NULL UNIQUE,
    team_id           TEXT NOT NULL,
    key_id            TEXT NOT NULL,
    endpoint          TEXT NOT NULL,
    input_file_id     TEXT NOT NULL,
    completion_window TEXT NOT NULL,
    status            TEXT NOT NULL,
    model             TEXT NOT NULL DEFAULT '',
    errors            TEXT,
    output_file_id    TEXT,
    error_file_id     TEXT,
    metadata          TEXT NOT NULL DEFAULT '{}',
    total             INTEGER NOT NULL DEFAULT 0,
    completed         INTEGER NOT NULL DEFAULT 0,
    failed            INTEGER NOT NULL DEFAULT 0,
    output_bytes      BIGINT NOT NULL DEFAULT 0,
    error_bytes       BIGINT NOT NULL DEFAULT 0,
    output_lines      INTEGER NOT NULL DEFAULT 0,
    error_lines       INTEGER NOT NULL DEFAULT 0,
    input_tokens      BIGINT NOT NULL DEFAULT 0,
    output_tokens     BIGINT NOT NULL DEFAULT 0,
    created_at        TIMESTAMPTZ NOT NULL,
    expires_at        TIMESTAMPTZ NOT NULL,
    in_progress_at    TIMESTAMPTZ,
    finalizing_at     TIMESTAMPTZ,
    completed_at      TIMESTAMPTZ,
    failed_at         TIMESTAMPTZ,
    expired_at        TIMESTAMPTZ,
    cancelling_at     TIMESTAMPTZ,
    cancelled_at      TIMESTAMPTZ
);
CREATE INDEX batches_team ON batches (team_id, seq);
CREATE INDEX batches_status ON batches (status);

CREATE TABLE batch_items (
    batch_id  TEXT NOT NULL,
    idx       INTEGER NOT NULL,
    line      INTEGER NOT NULL,
    custom_id TEXT NOT NULL,
    body      TEXT NOT NULL,
    status    TEXT NOT NULL DEFAULT 'pending',
    kind      TEXT,
    result    TEXT,
    PRIMARY KEY (batch_id, idx)
);

-- +goose Down
DROP TABLE batch_items;
DROP TABLE batches;
DROP TABLE file_parts;
DROP TABLE files;
