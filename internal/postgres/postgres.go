// Package postgres is the shared store: PostgreSQL through
// github.com/jackc/pgx/v5 (database/sql interface), for running several
// API server replicas on one database. Open applies the embedded
// migrations under an advisory lock, so replicas starting together do not
// race. The queries themselves are shared with internal/sqlite in
// internal/sqlstore, run here in the PostgreSQL dialect.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is a PostgreSQL database holding Sovereign's state. It is safe for
// concurrent use. Its auth.KeyStore methods come from internal/sqlstore.
type Store struct {
	*keyStore
	db *sql.DB
}

// keyStore names the shared implementation so that embedding it adds no
// exported field to Store.
type keyStore = sqlstore.Store

var _ auth.KeyStore = (*Store)(nil)

// dialect is how the shared queries run on PostgreSQL: $n placeholders,
// times as UTC timestamptz, constraint violations by SQLSTATE.
var dialect = sqlstore.Dialect{
	Name:                  "postgres",
	Placeholder:           sqlstore.Dollar,
	TimeValue:             func(t time.Time) any { return t.UTC() },
	IsUniqueViolation:     func(err error) bool { return sqlState(err) == uniqueViolation },
	IsForeignKeyViolation: func(err error) bool { return sqlState(err) == foreignKeyViolation },
	// One chain across every server: a transaction-level advisory lock
	// (released at commit) keyed by a constant of the request log's own.
	ChainLock: `SELECT pg_advisory_xact_lock(7301234567)`,
	// Chunk ids come from a sequence, taken in one order and committed in
	// another; serializing the transactions that add chunks to a
	// collection makes its ids visible in increasing order. The two-key
	// form is a lock space apart from the one-key locks above and goose's.
	CollectionLock: `SELECT pg_advisory_xact_lock(1935762787, hashtext(?))`,
	// One event log across every server, numbered in commit order: the
	// lock is taken before the sequence hands out a number and released
	// after the commit is visible. The notice reaches ListenEvents on
	// every server at commit.
	EventLock:   `SELECT pg_advisory_xact_lock(7301234568)`,
	EventNotify: `SELECT pg_notify('` + eventsChannel + `', '')`,
	DayExpr:     `to_char(time AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
}

// Open connects to the PostgreSQL database at url (postgres://… or
// postgresql://…, any parameter pgx accepts; an unknown parameter such as
// search_path=… is sent to the server as a run-time setting) and brings
// its schema up to date. Errors: the URL is malformed, the server cannot
// be reached, or a migration fails.
func Open(ctx context.Context, url string) (*Store, error) {
	s, err := connect(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return s, nil
}

// connect opens the pool and checks that the server answers, touching no
// table (Open and OpenNoMigrate).
func connect(ctx context.Context, url string) (*Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	db.SetMaxOpenConns(20)
	db.SetMaxIdleConns(5)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	return &Store{keyStore: sqlstore.New(db, dialect), db: db}, nil
}

func (s *Store) migrate(ctx context.Context) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	// Retry the advisory lock every second for up to five minutes.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, s.db, sub, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	// The floor of the contract steps about to be applied is recorded
	// first, so that no moment exists where they are applied and an older
	// release may still start (internal/schema).
	if err := s.schema().RaiseFloor(ctx); err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	return s.schema().AfterUp(ctx)
}

// Close closes the connection pool. Errors: those of database/sql's Close.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks that the database answers (for readiness probes). Errors:
// the server cannot be reached.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// SQLSTATE codes this package reacts to.
const (
	uniqueViolation     = "23505"
	foreignKeyViolation = "23503"
	// The server is going away or not taking connections: a fast or
	// immediate shutdown (57P01, 57P02), a server starting up, shutting
	// down or in recovery (57P03), all connection slots taken (53300).
	adminShutdown      = "57P01"
	crashShutdown      = "57P02"
	cannotConnectNow   = "57P03"
	tooManyConnections = "53300"
	// connectionException is the class of 08xxx codes: the connection
	// itself failed.
	connectionException = "08"
)

// A database outage is a 503 database_unavailable wherever it surfaces.
func init() { apierr.RegisterClassifier(sqlstore.Unavailable(unavailable)) }

// unavailable reports whether err says the server cannot be used right
// now, as opposed to refusing this statement: no connection could be made
// (refused, reset, unknown host, the pool's dial failing), the server is
// shutting down or not yet accepting connections, or a connection broke
// mid-call. Only pgx's own error types are matched, never a bare network
// error, so that an upstream model's refused connection is not taken for
// the database's.
func unavailable(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	switch code := sqlState(err); {
	case code == adminShutdown, code == crashShutdown, code == cannotConnectNow, code == tooManyConnections,
		strings.HasPrefix(code, connectionException):
		return true
	case code != "":
		return false
	}
	// pgconn's errors say whether a retry is safe; one of them around a
	// network failure or an early end of the stream is a connection that
	// broke while in use.
	var pe interface{ SafeToRetry() bool }
	if !errors.As(err, &pe) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
