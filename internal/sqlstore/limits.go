package sqlstore

import (
	"context"
	"fmt"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/limits"
)

// PutLimitRule implements limits.Store: it creates or replaces the rule of
// r's scope and subject.
func (s *Store) PutLimitRule(ctx context.Context, r limits.Rule) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO limit_rules
		(scope, subject, requests_per_minute, tokens_per_minute, concurrent_requests, tokens_per_day, tokens_per_month, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (scope, subject) DO UPDATE SET
		requests_per_minute = excluded.requests_per_minute, tokens_per_minute = excluded.tokens_per_minute,
		concurrent_requests = excluded.concurrent_requests, tokens_per_day = excluded.tokens_per_day,
		tokens_per_month = excluded.tokens_per_month, updated_at = excluded.updated_at`),
		r.Scope, r.Subject, r.RequestsPerMinute, r.TokensPerMinute, r.ConcurrentRequests, r.TokensPerDay, r.TokensPerMonth, r.UpdatedAt)
	if err != nil {
		return fmt.Errorf("%s: put limit rule: %w", s.d.Name, err)
	}
	return nil
}

// DeleteLimitRule implements limits.Store; limits.ErrNotFound when there
// is no such rule, worded for the client (a configuration file's rule for
// the same subject is not one the API can delete).
func (s *Store) DeleteLimitRule(ctx context.Context, scope, subject string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM limit_rules WHERE scope = ? AND subject = ?`), scope, subject)
	if err != nil {
		return fmt.Errorf("%s: delete limit rule: %w", s.d.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apierr.Wrapf(limits.ErrNotFound, "no limit rule set through the API for %s %q", scope, subject)
	}
	return nil
}

// ListLimitRules implements limits.Store.
func (s *Store) ListLimitRules(ctx context.Context) ([]limits.Rule, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT scope, subject, requests_per_minute, tokens_per_minute, concurrent_requests,
		tokens_per_day, tokens_per_month, updated_at FROM limit_rules ORDER BY scope, subject`)
	if err != nil {
		return nil, fmt.Errorf("%s: list limit rules: %w", s.d.Name, err)
	}
	defer rows.Close()
	var out []limits.Rule
	for rows.Next() {
		var r limits.Rule
		if err := rows.Scan(&r.Scope, &r.Subject, &r.RequestsPerMinute, &r.TokensPerMinute, &r.ConcurrentRequests,
			&r.TokensPerDay, &r.TokensPerMonth, &r.UpdatedAt); err != nil {
			return nil, fmt.Errorf("%s: list limit rules: %w", s.d.Name, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
