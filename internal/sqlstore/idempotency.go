package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sovereign-ai/sovereign/internal/idempotency"
)

// The idempotency_keys table: the store side of idempotency.Store. Times
// are Unix milliseconds, compared as numbers on both databases.

var _ idempotency.Store = (*Store)(nil)

// ClaimIdempotency inserts e as a running attempt, or takes over an
// expired key or a running attempt started before staleBefore; otherwise
// it returns the stored entry.
func (s *Store) ClaimIdempotency(ctx context.Context, e idempotency.Entry, staleBefore time.Time) (idempotency.Entry, bool, error) {
	started, expires := e.StartedAt.UnixMilli(), e.ExpiresAt.UnixMilli()
	res, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO idempotency_keys (id, started_ms, expires_ms) VALUES (?, ?, ?)
		ON CONFLICT (id) DO NOTHING`), e.ID, started, expires)
	if err != nil {
		return e, false, s.errorf("claim idempotency key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return e, true, nil
	}
	// Taken: over when expired or abandoned, in one conditional update so
	// that of two attempts taking over, one wins.
	res, err = s.db.ExecContext(ctx, s.rebind(`UPDATE idempotency_keys
		SET fingerprint = '', done = 0, status = 0, body = NULL, started_ms = ?, expires_ms = ?
		WHERE id = ? AND (expires_ms < ? OR (done = 0 AND started_ms < ?))`),
		started, expires, e.ID, started, staleBefore.UnixMilli())
	if err != nil {
		return e, false, s.errorf("claim idempotency key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return e, true, nil
	}
	var got idempotency.Entry
	var done int
	var startedMs, expiresMs int64
	err = s.db.QueryRowContext(ctx, s.rebind(`SELECT fingerprint, done, status, body, started_ms, expires_ms FROM idempotency_keys WHERE id = ?`), e.ID).
		Scan(&got.Fingerprint, &done, &got.Status, &got.Body, &startedMs, &expiresMs)
	if errors.Is(err, sql.ErrNoRows) {
		// Released between the insert and the read: this attempt may
		// claim it afresh.
		return s.ClaimIdempotency(ctx, e, staleBefore)
	}
	if err != nil {
		return e, false, s.errorf("read idempotency key: %w", err)
	}
	got.ID, got.Done = e.ID, done != 0
	got.StartedAt, got.ExpiresAt = time.UnixMilli(startedMs), time.UnixMilli(expiresMs)
	return got, false, nil
}

// FinishIdempotency stores the running attempt's response.
func (s *Store) FinishIdempotency(ctx context.Context, id, fingerprint string, status int, body []byte) error {
	if _, err := s.db.ExecContext(ctx, s.rebind(`UPDATE idempotency_keys SET fingerprint = ?, done = 1, status = ?, body = ? WHERE id = ? AND done = 0`),
		fingerprint, status, body, id); err != nil {
		return s.errorf("finish idempotency key: %w", err)
	}
	return nil
}

// ReleaseIdempotency forgets a running attempt.
func (s *Store) ReleaseIdempotency(ctx context.Context, id string) error {
	if _, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM idempotency_keys WHERE id = ? AND done = 0`), id); err != nil {
		return s.errorf("release idempotency key: %w", err)
	}
	return nil
}

// PurgeIdempotency removes the keys that expired before t.
func (s *Store) PurgeIdempotency(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM idempotency_keys WHERE expires_ms < ?`), before.UnixMilli())
	if err != nil {
		return 0, s.errorf("purge idempotency keys: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
