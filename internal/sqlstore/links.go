package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// The source_links table: the store side of sources.LinkStore. An unknown
// cursor is sources.ErrNotFound wrapped with a message a client may read
// (apierr.Wrapf), without the s.errorf prefix (see sources.go).

const linkColumns = `id, team_id, key_id, response_id, model, citation_index, answer_start, answer_end, cited_text,
	source_number, source_id, collection_id, document_id, chunk_id, title, url, snippet, created_at`

// AddSourceLinks stores links in one transaction.
func (s *Store) AddSourceLinks(ctx context.Context, links []sources.SourceLink) error {
	if len(links) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("add source links: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO source_links (`+linkColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`))
	if err != nil {
		return s.errorf("add source links: %w", err)
	}
	defer stmt.Close()
	for _, l := range links {
		if _, err := stmt.ExecContext(ctx, l.ID, l.TeamID, l.KeyID, l.ResponseID, l.Model, l.CitationIndex, l.Start, l.End, l.Text,
			l.SourceNumber, l.SourceID, l.CollectionID, l.DocumentID, l.ChunkID, l.Title, l.URL, l.Snippet, s.timeValue(l.CreatedAt)); err != nil {
			return s.errorf("add source links: %w", s.classify(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("add source links: %w", err)
	}
	return nil
}

// ListSourceLinks returns up to f.Limit of the team's links matching f,
// newest first, and whether more follow. Errors: sources.ErrNotFound for a
// cursor that names no link of the team.
func (s *Store) ListSourceLinks(ctx context.Context, f sources.LinkFilter) ([]sources.SourceLink, bool, error) {
	var c conds
	c.add("team_id = ?", f.TeamID)
	if f.After != "" {
		var seq int64
		err := s.db.QueryRowContext(ctx, s.rebind(`SELECT seq FROM source_links WHERE id = ? AND team_id = ?`), f.After, f.TeamID).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, apierr.Wrapf(sources.ErrNotFound, "no source link %q", f.After)
		}
		if err != nil {
			return nil, false, s.errorf("list source links: %w", err)
		}
		c.add("seq < ?", seq)
	}
	c.equal([2]string{"response_id", f.ResponseID}, [2]string{"document_id", f.DocumentID}, [2]string{"collection_id", f.CollectionID})
	c.within(s, "created_at", f.Since, f.Until)
	limit := pageSize(f.Limit)
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+linkColumns+` FROM source_links`+c.sql()+` ORDER BY seq DESC LIMIT ?`), append(c.args, limit+1)...)
	if err != nil {
		return nil, false, s.errorf("list source links: %w", err)
	}
	defer rows.Close()
	out := []sources.SourceLink{}
	for rows.Next() {
		var l sources.SourceLink
		var created TimeScanner
		if err := rows.Scan(&l.ID, &l.TeamID, &l.KeyID, &l.ResponseID, &l.Model, &l.CitationIndex, &l.Start, &l.End, &l.Text,
			&l.SourceNumber, &l.SourceID, &l.CollectionID, &l.DocumentID, &l.ChunkID, &l.Title, &l.URL, &l.Snippet, &created); err != nil {
			return nil, false, s.errorf("list source links: %w", err)
		}
		if l.CreatedAt, err = s.requiredTime(created); err != nil {
			return nil, false, err
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.errorf("list source links: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}
