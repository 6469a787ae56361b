package sqlstore

import (
	"context"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/records"
)

var _ records.RecordFinder = (*Store)(nil)

// RecordsByID returns every stored record whose request id is one of ids,
// of any team, in chain order: the request log's writer asks it before it
// replays spooled records, to skip those an append that seemed to fail
// had stored (one indexed query per batch; request ids need not be
// unique, so all of an id's records, not only its newest).
func (s *Store) RecordsByID(ctx context.Context, ids []string) ([]records.Record, error) {
	out := []records.Record{}
	for len(ids) > 0 {
		n := min(len(ids), 500)
		args := make([]any, n)
		for i, id := range ids[:n] {
			args[i] = id
		}
		q := `SELECT ` + recordColumns + ` FROM request_logs WHERE id IN (?` + strings.Repeat(", ?", n-1) + `) ORDER BY seq`
		rows, err := s.db.QueryContext(ctx, s.rebind(q), args...)
		if err != nil {
			return nil, s.errorf("records by id: %w", err)
		}
		for rows.Next() {
			r, err := s.scanRecord(rows)
			if err != nil {
				rows.Close()
				return nil, s.errorf("records by id: %w", err)
			}
			out = append(out, r)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, s.errorf("records by id: %w", err)
		}
		ids = ids[n:]
	}
	return out, nil
}
