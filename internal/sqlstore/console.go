package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/console/session"
)

// The console_sessions table: the store side of session.Store. Times are
// Unix microseconds, compared as numbers on both databases.

var _ session.Store = (*Store)(nil)

// CreateConsoleSession stores a new console session. Errors:
// auth.ErrConflict when its id hash exists.
func (s *Store) CreateConsoleSession(ctx context.Context, cs session.Session) error {
	var ends int64
	if !cs.EndsAt.IsZero() {
		ends = cs.EndsAt.UnixMicro()
	}
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO console_sessions (id_hash, key_id, csrf, created_us, last_seen_us, expires_us, sso, id_token, ends_us)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), cs.IDHash, cs.KeyID, cs.CSRF, cs.CreatedAt.UnixMicro(), cs.LastSeenAt.UnixMicro(), cs.ExpiresAt.UnixMicro(),
		cs.SSO, cs.IDToken, ends)
	if err != nil {
		if s.d.IsUniqueViolation != nil && s.d.IsUniqueViolation(err) {
			return s.errorf("create console session: %w", auth.ErrConflict)
		}
		return s.errorf("create console session: %w", err)
	}
	return nil
}

// GetConsoleSession returns the session whose id hashes to idHash.
// Errors: auth.ErrNotFound.
func (s *Store) GetConsoleSession(ctx context.Context, idHash []byte) (session.Session, error) {
	cs := session.Session{IDHash: idHash}
	var created, seen, expires, ends int64
	err := s.db.QueryRowContext(ctx, s.rebind(`SELECT key_id, csrf, created_us, last_seen_us, expires_us, sso, id_token, ends_us FROM console_sessions WHERE id_hash = ?`), idHash).
		Scan(&cs.KeyID, &cs.CSRF, &created, &seen, &expires, &cs.SSO, &cs.IDToken, &ends)
	if errors.Is(err, sql.ErrNoRows) {
		return cs, s.errorf("console session: %w", auth.ErrNotFound)
	}
	if err != nil {
		return cs, s.errorf("get console session: %w", err)
	}
	cs.CreatedAt, cs.LastSeenAt, cs.ExpiresAt = time.UnixMicro(created).UTC(), time.UnixMicro(seen).UTC(), time.UnixMicro(expires).UTC()
	if ends != 0 {
		cs.EndsAt = time.UnixMicro(ends).UTC()
	}
	return cs, nil
}

// TouchConsoleSession sets a session's last use and expiry. Errors:
// auth.ErrNotFound.
func (s *Store) TouchConsoleSession(ctx context.Context, idHash []byte, lastSeen, expires time.Time) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE console_sessions SET last_seen_us = ?, expires_us = ? WHERE id_hash = ?`),
		lastSeen.UnixMicro(), expires.UnixMicro(), idHash)
	if err != nil {
		return s.errorf("touch console session: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.errorf("console session: %w", auth.ErrNotFound)
	}
	return nil
}

// DeleteConsoleSession removes a session (a missing one is not an error).
func (s *Store) DeleteConsoleSession(ctx context.Context, idHash []byte) error {
	if _, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM console_sessions WHERE id_hash = ?`), idHash); err != nil {
		return s.errorf("delete console session: %w", err)
	}
	return nil
}

// DeleteConsoleSessionsOfKey removes every session of key keyID.
func (s *Store) DeleteConsoleSessionsOfKey(ctx context.Context, keyID string) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM console_sessions WHERE key_id = ?`), keyID)
	if err != nil {
		return 0, s.errorf("delete console sessions: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// PurgeConsoleSessions removes the sessions that expired before t.
func (s *Store) PurgeConsoleSessions(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM console_sessions WHERE expires_us < ?`), before.UnixMicro())
	if err != nil {
		return 0, s.errorf("purge console sessions: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
