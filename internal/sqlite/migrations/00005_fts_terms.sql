-- chunks_fts_terms reads the keyword index's vocabulary: how many chunks
-- hold each word (column doc). Keyword search reads it to score a query's
-- rare words over every chunk that has them and its frequent words only
-- where they meet (see sqlstore.KeywordSearch).

-- +goose Up
CREATE VIRTUAL TABLE chunks_fts_terms USING fts5vocab (chunks_fts, 'row');

-- +goose Down
DROP TABLE chunks_fts_terms;
