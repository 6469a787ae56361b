// Package session is the web console's server-side sessions: what a
// session holds, the store interface the databases implement
// (internal/sqlstore), and the Manager that creates, checks, renews and
// ends sessions. The session id lives only in the browser's cookie; the
// store keeps its SHA-256, so a read of the database cannot be replayed as
// a cookie.
package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// Session is one signed-in browser.
type Session struct {
	// IDHash is the SHA-256 of the session id (the cookie's value).
	IDHash []byte
	// KeyID is the API key the session acts as.
	KeyID string
	// CSRF is the token every non-GET request of the session must carry.
	CSRF string
	// CreatedAt is when the session signed in; LastSeenAt when it was
	// last used; ExpiresAt when it ends unless used again before (idle
	// expiry, never past CreatedAt + the manager's MaxAge).
	CreatedAt, LastSeenAt, ExpiresAt time.Time
	// SSO names the single sign-on provider a session signed in through
	// ("" for a password or key), IDToken the provider's ID token (for
	// its logout), and EndsAt the end the provider's refresh window puts
	// on it (zero: the manager's MaxAge alone).
	SSO, IDToken string
	EndsAt       time.Time
}

// Options are a new session's SSO fields.
type Options struct {
	SSO, IDToken string
	// Within bounds the session's whole life (0: MaxAge).
	Within time.Duration
}

// Store keeps sessions. Implementations: internal/sqlstore (SQLite and
// PostgreSQL), checked by internal/storetest.
type Store interface {
	// CreateConsoleSession stores s. Errors: auth.ErrConflict when a
	// session with its IDHash exists.
	CreateConsoleSession(ctx context.Context, s Session) error
	// GetConsoleSession returns the session whose id hashes to idHash.
	// Errors: auth.ErrNotFound.
	GetConsoleSession(ctx context.Context, idHash []byte) (Session, error)
	// TouchConsoleSession sets a session's LastSeenAt and ExpiresAt.
	// Errors: auth.ErrNotFound.
	TouchConsoleSession(ctx context.Context, idHash []byte, lastSeen, expires time.Time) error
	// DeleteConsoleSession removes a session; removing a missing one is
	// not an error.
	DeleteConsoleSession(ctx context.Context, idHash []byte) error
	// DeleteConsoleSessionsOfKey removes every session of a key (its
	// revocation signs it out everywhere) and returns how many it removed.
	DeleteConsoleSessionsOfKey(ctx context.Context, keyID string) (int64, error)
	// PurgeConsoleSessions removes the sessions that expired before t and
	// returns how many it removed.
	PurgeConsoleSessions(ctx context.Context, before time.Time) (int64, error)
}

// Defaults of a Manager.
const (
	DefaultIdle   = 12 * time.Hour
	DefaultMaxAge = 7 * 24 * time.Hour
	// touchEvery bounds the writes a busy session costs: its expiry is
	// pushed forward at most once a minute.
	touchEvery = time.Minute
)

// ErrNoSession is Check's error for a missing, unknown or expired session.
var ErrNoSession = errors.New("session: no valid session")

// Manager creates and checks sessions over a Store.
type Manager struct {
	Store Store
	// Idle ends a session this long after its last use (DefaultIdle when
	// zero); MaxAge ends it this long after sign-in whatever its use
	// (DefaultMaxAge when zero).
	Idle, MaxAge time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now().UTC()
	}
	return time.Now().UTC()
}

func (m *Manager) idle() time.Duration {
	if m.Idle > 0 {
		return m.Idle
	}
	return DefaultIdle
}

// MaxAgeOrDefault is how long after sign-in a session ends whatever its
// use (a session key made for it need not outlive it).
func (m *Manager) MaxAgeOrDefault() time.Duration { return m.maxAge() }

func (m *Manager) maxAge() time.Duration {
	if m.MaxAge > 0 {
		return m.MaxAge
	}
	return DefaultMaxAge
}

// Hash is the stored form of a session id.
func Hash(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

func random() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Create starts a session for keyID and returns the id to put in the
// cookie with the stored session. Errors: the store's.
func (m *Manager) Create(ctx context.Context, keyID string) (string, Session, error) {
	return m.CreateWith(ctx, keyID, Options{})
}

// CreateWith is Create for a session signed in through single sign-on.
func (m *Manager) CreateWith(ctx context.Context, keyID string, o Options) (string, Session, error) {
	id, err := random()
	if err != nil {
		return "", Session{}, err
	}
	csrf, err := random()
	if err != nil {
		return "", Session{}, err
	}
	now := m.now()
	s := Session{IDHash: Hash(id), KeyID: keyID, CSRF: csrf, CreatedAt: now, LastSeenAt: now, SSO: o.SSO, IDToken: o.IDToken}
	if o.Within > 0 && o.Within < m.maxAge() {
		s.EndsAt = now.Add(o.Within)
	}
	s.ExpiresAt = m.expiry(s, now)
	if err := m.Store.CreateConsoleSession(ctx, s); err != nil {
		return "", Session{}, fmt.Errorf("session: create: %w", err)
	}
	return id, s, nil
}

func (m *Manager) expiry(s Session, seen time.Time) time.Time {
	e := seen.Add(m.idle())
	limit := s.CreatedAt.Add(m.maxAge())
	if !s.EndsAt.IsZero() && s.EndsAt.Before(limit) {
		limit = s.EndsAt
	}
	if e.After(limit) {
		e = limit
	}
	return e
}

// Check returns the live session of the cookie value id and renews its
// idle expiry. Errors: ErrNoSession (empty, unknown or expired id; an
// expired session is deleted), or the store's other errors.
func (m *Manager) Check(ctx context.Context, id string) (Session, error) {
	if id == "" || len(id) > 128 {
		return Session{}, ErrNoSession
	}
	h := Hash(id)
	s, err := m.Store.GetConsoleSession(ctx, h)
	if err != nil {
		if isNotFound(err) {
			return Session{}, ErrNoSession
		}
		return Session{}, fmt.Errorf("session: read: %w", err)
	}
	now := m.now()
	if !now.Before(s.ExpiresAt) {
		_ = m.Store.DeleteConsoleSession(ctx, h)
		return Session{}, ErrNoSession
	}
	if now.Sub(s.LastSeenAt) >= touchEvery {
		s.LastSeenAt, s.ExpiresAt = now, m.expiry(s, now)
		if err := m.Store.TouchConsoleSession(ctx, h, s.LastSeenAt, s.ExpiresAt); err != nil && !isNotFound(err) {
			return Session{}, fmt.Errorf("session: renew: %w", err)
		}
	}
	return s, nil
}

// End deletes the session of cookie value id (sign-out).
func (m *Manager) End(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	return m.Store.DeleteConsoleSession(ctx, Hash(id))
}

// ValidCSRF reports whether token is the session's CSRF token (in constant
// time).
func (s Session) ValidCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.CSRF)) == 1
}

func isNotFound(err error) bool { return errors.Is(err, auth.ErrNotFound) }
