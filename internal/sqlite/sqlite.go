// Package sqlite is the embedded store: SQLite through the pure-Go driver
// modernc.org/sqlite (cgo is reserved for the llama.cpp binding). Open
// applies the embedded migrations; the queries themselves are shared with
// internal/postgres in internal/sqlstore, run here in the SQLite dialect.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is a SQLite database holding Sovereign's state. It is safe for
// concurrent use. Its auth.KeyStore methods come from internal/sqlstore.
type Store struct {
	*keyStore
	db *sql.DB
}

// keyStore names the shared implementation so that embedding it adds no
// exported field to Store.
type keyStore = sqlstore.Store

var _ auth.KeyStore = (*Store)(nil)

// dialect is how the shared queries run on SQLite: '?' placeholders, times
// as fixed-width RFC 3339 text, constraint violations from the driver's
// extended result codes.
var dialect = sqlstore.Dialect{
	Name:                  "sqlite",
	LocalFile:             true,
	Placeholder:           sqlstore.Question,
	TimeValue:             func(t time.Time) any { return fmtTime(t) },
	IsUniqueViolation:     isUnique,
	IsForeignKeyViolation: isForeignKey,
	DayExpr:               `substr(time, 1, 10)`, // times are stored as UTC RFC 3339 text
}

// Open opens (creating if needed) the SQLite database at path and brings
// its schema up to date. The database runs in WAL mode with a 5 s busy
// timeout, foreign keys enforced and write transactions that take the
// write lock when they begin. path ":memory:" (or "") opens a private
// in-memory database on a single connection, for tests. The parent
// directory is created if missing. Errors: the file cannot be opened or
// a migration fails.
func Open(ctx context.Context, path string) (*Store, error) {
	s, err := connect(path)
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	return s, nil
}

// connect opens (creating if needed) the database file, touching no table
// (Open and OpenNoMigrate).
func connect(path string) (*Store, error) {
	memory := path == "" || path == ":memory:"
	if memory {
		path = ":memory:"
	} else {
		if strings.ContainsAny(path, "?#") {
			return nil, fmt.Errorf("sqlite: path %q: '?' and '#' are not allowed in a database path", path)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(1)")
	if !memory {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if memory {
		// Every connection to ":memory:" is a different database.
		db.SetMaxOpenConns(1)
	}
	db.SetConnMaxIdleTime(5 * time.Minute)
	return &Store{keyStore: sqlstore.New(db, dialect), db: db}, nil
}

func (s *Store) migrate(ctx context.Context) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, s.db, sub)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	// The floor first, as internal/postgres does.
	if err := s.schema().RaiseFloor(ctx); err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	return s.schema().AfterUp(ctx)
}

// Close closes the database. Errors: those of database/sql's Close.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks that the database answers (for readiness probes). Errors:
// the database cannot be reached.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// timeFormat is fixed-width so that stored times sort as they compare.
const timeFormat = "2006-01-02T15:04:05.000000Z"

func fmtTime(t time.Time) string { return t.UTC().Format(timeFormat) }

// A database locked beyond the busy timeout is a 503 database_unavailable.
func init() { apierr.RegisterClassifier(sqlstore.Unavailable(busy)) }

// busy reports whether err is SQLite giving up on a lock: SQLITE_BUSY
// after the busy timeout (5 s of another connection or process holding
// the write lock, a checkpoint, a backup) or SQLITE_LOCKED. The file is
// there and sound; a retry a moment later succeeds, so the answer is the
// same honest 503 as a PostgreSQL server that cannot be reached, not a
// 500. Other failures (a full disk, a corrupt file, a missing directory)
// are not transient and stay internal errors.
func busy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

// isUnique reports whether err is a unique or primary-key violation.
func isUnique(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return true
	}
	return false
}

// isForeignKey reports whether err is a foreign-key violation. SQLite
// reports ON DELETE RESTRICT through its trigger code (1811), so the
// message is checked too.
func isForeignKey(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY ||
		se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT && strings.Contains(se.Error(), "FOREIGN KEY")
}
