// Package sqlstore is the dialect-independent SQL implementation of
// Sovereign's stores over database/sql. Queries are written once, with '?'
// placeholders; a Dialect supplied by each adapter (internal/sqlite,
// internal/postgres) says how to rebind them, how to encode times and how
// to recognise constraint violations. The adapters open the database, run
// their own migrations and embed the *Store built here; each domain's
// queries live in their own file (keys.go for teams and API keys).
package sqlstore

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// Placeholder is a SQL dialect's bind-parameter style.
type Placeholder int

const (
	// Question keeps '?' placeholders as written (SQLite, MySQL).
	Question Placeholder = iota
	// Dollar numbers placeholders $1, $2, … (PostgreSQL).
	Dollar
)

// Dialect is what differs between the SQL databases a Store runs on.
type Dialect struct {
	// Name starts every error message ("sqlite", "postgres").
	Name string
	// Placeholder is how the '?' placeholders of the shared queries are
	// rewritten before they are sent.
	Placeholder Placeholder
	// TimeValue converts a time to the value stored in a time column
	// (RFC 3339 text for SQLite, a UTC time.Time for timestamptz). Nil
	// stores t.UTC() as it is. Read values may be time.Time, string or
	// []byte (RFC 3339); see TimeScanner.
	TimeValue func(t time.Time) any
	// IsUniqueViolation reports whether err broke a unique or primary-key
	// constraint; such errors are reported as auth.ErrConflict.
	IsUniqueViolation func(err error) bool
	// IsForeignKeyViolation reports whether err broke a foreign-key
	// constraint.
	IsForeignKeyViolation func(err error) bool
	// LocalFile says the database is a file this process opens (SQLite):
	// its calls cannot hang on a network, only wait on its own locks, which
	// the driver bounds (busy_timeout). The request log's appends then run
	// without cancellation: the driver watches a cancellable context with a
	// goroutine per statement and per transaction, and on a busy server
	// those goroutines' wake-ups were part of every request's tail
	// (bench/README.md, "Where the tail comes from").
	LocalFile bool
	// ChainLock, when set, is run first in a transaction that appends to
	// the request log chain, to serialize appends across connections and
	// servers ("" when write transactions are serialized already).
	ChainLock string
	// CollectionLock, when set, is run first in a transaction that adds
	// chunks, once per collection with the collection id as its one
	// argument, to serialize those transactions per collection across
	// connections and servers ("" when write transactions are serialized
	// already). Then a collection's chunk ids become visible in increasing
	// order, which is what lets a server read the embeddings added since
	// the largest id it has seen (see EmbeddingsAfter).
	CollectionLock string
	// EventLock, when set, is run first in a transaction that appends to
	// the event log, to serialize appends across connections and servers
	// so that events' sequence numbers become visible in increasing order
	// ("" when write transactions are serialized already).
	EventLock string
	// EventNotify, when set, is run in a transaction that stored events,
	// to tell other servers at commit that the log grew (PostgreSQL
	// NOTIFY; "" for none).
	EventNotify string
	// DayExpr is the SQL expression of a row's UTC day (YYYY-MM-DD) from
	// its time column.
	DayExpr string
}

// Store implements auth.KeyStore (and, as more tables arrive, the other
// store interfaces) over db in dialect d. It is safe for concurrent use.
type Store struct {
	db *sql.DB
	d  Dialect
	// terms caches how many chunks hold each word, for KeywordSearch.
	terms termCounts
}

// New returns a Store running queries on db in dialect d. db must already
// hold the schema (the adapter's migrations); the caller keeps ownership
// of db and closes it.
func New(db *sql.DB, d Dialect) *Store {
	return &Store{db: db, d: d}
}

// Rebind rewrites the '?' placeholders of query for placeholder style p.
// Question marks inside single-quoted literals, double-quoted identifiers
// and comments are left alone.
func Rebind(p Placeholder, query string) string {
	if p != Dollar || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(query[i+1:], c)
			if j < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+j+2])
			i += j + 1
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+j+1])
			i += j
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (s *Store) rebind(query string) string { return Rebind(s.d.Placeholder, query) }

// errorf formats an error message prefixed with the dialect's name.
func (s *Store) errorf(format string, args ...any) error {
	return fmt.Errorf(s.d.Name+": "+format, args...)
}

// classify maps unique and primary-key violations to auth.ErrConflict
// (store.ErrConflict, a 409 that says only "conflict": the driver's text
// stays in the chain for logs, and the domain words it for clients).
func (s *Store) classify(err error) error {
	if err != nil && s.d.IsUniqueViolation != nil && s.d.IsUniqueViolation(err) {
		return fmt.Errorf("%w: %v", auth.ErrConflict, err)
	}
	return err
}

func (s *Store) isForeignKey(err error) bool {
	return err != nil && s.d.IsForeignKeyViolation != nil && s.d.IsForeignKeyViolation(err)
}

// timeValue is t as stored in a time column.
func (s *Store) timeValue(t time.Time) any {
	if s.d.TimeValue == nil {
		return t.UTC()
	}
	return s.d.TimeValue(t)
}

// timePtrValue is t as stored in a nullable time column: NULL for nil.
func (s *Store) timePtrValue(t *time.Time) any {
	if t == nil {
		return nil
	}
	return s.timeValue(*t)
}

// TimeScanner is a sql.Scanner for time columns of any dialect: it keeps
// the driver's value (time.Time for timestamptz, RFC 3339 text for
// SQLite, or NULL) so that it can be decoded after Scan, with the
// dialect's name in errors.
type TimeScanner struct {
	v any
}

// Scan stores src: nil, time.Time, string or []byte (copied).
func (ts *TimeScanner) Scan(src any) error {
	switch v := src.(type) {
	case nil, time.Time, string:
		ts.v = v
	case []byte:
		ts.v = string(v)
	default:
		return fmt.Errorf("unsupported time value of type %T", src)
	}
	return nil
}

// timeOf decodes a scanned time: nil for NULL, else the instant in UTC.
func (s *Store) timeOf(ts TimeScanner) (*time.Time, error) {
	switch v := ts.v.(type) {
	case nil:
		return nil, nil
	case time.Time:
		u := v.UTC()
		return &u, nil
	case string:
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, s.errorf("bad stored time %q: %w", v, err)
		}
		u := t.UTC()
		return &u, nil
	}
	return nil, s.errorf("bad stored time of type %T", ts.v)
}

// requiredTime decodes a scanned NOT NULL time.
func (s *Store) requiredTime(ts TimeScanner) (time.Time, error) {
	t, err := s.timeOf(ts)
	if err != nil {
		return time.Time{}, err
	}
	if t == nil {
		return time.Time{}, s.errorf("bad stored time: NULL")
	}
	return *t, nil
}

type scanner interface{ Scan(dest ...any) error }

// conds gathers a list query's WHERE conditions and their arguments, so
// that each list builds its filters the same way.
type conds struct {
	where []string
	args  []any
}

// add adds one condition with its arguments.
func (c *conds) add(cond string, args ...any) {
	c.where, c.args = append(c.where, cond), append(c.args, args...)
}

// equal adds "col = v" for each pair whose value is set.
func (c *conds) equal(pairs ...[2]string) {
	for _, p := range pairs {
		if p[1] != "" {
			c.add(p[0]+" = ?", p[1])
		}
	}
}

// within adds col's bounds, since inclusive and until exclusive, for those
// that are set.
func (c *conds) within(s *Store, col string, since, until time.Time) {
	if !since.IsZero() {
		c.add(col+" >= ?", s.timeValue(since))
	}
	if !until.IsZero() {
		c.add(col+" < ?", s.timeValue(until))
	}
}

// sql is " WHERE …" ("" without conditions).
func (c *conds) sql() string {
	if len(c.where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(c.where, " AND ")
}

// pageSize is a list's page size: n, or 20 when unset.
func pageSize(n int) int {
	if n <= 0 {
		return 20
	}
	return n
}
