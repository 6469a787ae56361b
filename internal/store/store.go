// Package store opens Sovereign's database from a URL, choosing the
// implementation by scheme: internal/postgres for postgres:// and
// postgresql://, internal/sqlite for sqlite:// URLs and plain paths. It is
// the only place that knows both; domain packages see the small interfaces
// they define themselves (auth.KeyStore).
package store

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/batch"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/console/session"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/idempotency"
	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/policy"
	"github.com/sovereign-ai/sovereign/internal/postgres"
	"github.com/sovereign-ai/sovereign/internal/records"
	"github.com/sovereign-ai/sovereign/internal/responses"
	"github.com/sovereign-ai/sovereign/internal/scim"
	"github.com/sovereign-ai/sovereign/internal/sources"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
	"github.com/sovereign-ai/sovereign/internal/webhook"
	"github.com/sovereign-ai/sovereign/internal/workflow"
)

// Store is what every implementation provides: every domain's store
// interface, Close, and Ping for readiness probes.
type Store interface {
	auth.KeyStore
	auth.UserStore
	auth.InvitationStore
	auth.ChallengeStore
	catalog.SpecStore
	sources.Store
	responses.Store
	records.CheckpointStore
	policy.Store
	limits.Store
	events.Store
	batch.Store
	workflow.Store
	webhook.Store
	idempotency.Store
	// scim.Store keeps SCIM's users, groups and members.
	scim.Store
	// session.Store keeps the web console's sessions.
	session.Store
	io.Closer
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
}

// Errors every implementation returns (wrapped); check with errors.Is.
// They are API errors (a 404 and a 409, package apierr) whose messages
// say no more than "not found" and "conflict": the stores wrap them with
// their own text ("sqlite: …"), which clients never see, and the domain
// that knows what was asked for words them for its clients
// (apierr.Wrapf).
var (
	// ErrNotFound: no row matched a lookup, update or delete.
	ErrNotFound = auth.ErrNotFound
	// ErrConflict: a uniqueness rule was broken, or a row is still
	// referenced.
	ErrConflict = auth.ErrConflict
)

var (
	_ Store = (*sqlite.Store)(nil)
	_ Store = (*postgres.Store)(nil)
)

// Kind reports which implementation Open picks for url: "postgres" or
// "sqlite". Errors: a URL with another scheme.
func Kind(url string) (string, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return "postgres", nil
	case strings.HasPrefix(url, "sqlite:"), !strings.Contains(url, "://"):
		return "sqlite", nil
	}
	return "", fmt.Errorf("store: unsupported database URL scheme in %q (use postgres://…, sqlite:///path or a file path)", redact(url))
}

// SQLitePath returns the file path a sqlite URL names: "sqlite:///abs/x.db"
// → "/abs/x.db", "sqlite://rel/x.db" or "sqlite:rel/x.db" → "rel/x.db",
// "sqlite::memory:" → ":memory:", and a plain path as it is.
func SQLitePath(url string) string {
	if p, ok := strings.CutPrefix(url, "sqlite://"); ok {
		return p
	}
	if p, ok := strings.CutPrefix(url, "sqlite:"); ok {
		return p
	}
	return url
}

// Open opens the database at url and applies its migrations: postgres://
// or postgresql:// → PostgreSQL; sqlite:///path, sqlite:path or a plain
// file path → SQLite. Errors: an unsupported scheme, or the
// implementation's Open error.
func Open(ctx context.Context, url string) (Store, error) {
	kind, err := Kind(url)
	if err != nil {
		return nil, err
	}
	if kind == "postgres" {
		s, err := postgres.Open(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("%w (database %s)", err, redact(url))
		}
		return s, nil
	}
	s, err := sqlite.Open(ctx, SQLitePath(url))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// redact hides the password of a URL's user info, for messages and logs.
func redact(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return url
	}
	at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@")
	if at < 0 {
		return url
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return url
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}

// Redact returns url with any password replaced by "xxxxx", fit for logs.
func Redact(url string) string { return redact(url) }
