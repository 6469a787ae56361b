package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
)

// TestBusyIsDatabaseUnavailable: SQLite giving up on a lock (SQLITE_BUSY,
// here at once: the writer below has no busy timeout) is a 503
// database_unavailable with Retry-After, however wrapped; a statement's
// own error stays an internal one.
func TestBusyIsDatabaseUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sovereign.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	open := func() *sql.DB {
		db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db
	}
	holder, writer := open(), open()
	tx, err := holder.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`CREATE TABLE lock_holder (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	_, err = writer.Exec(`CREATE TABLE blocked (x INTEGER)`)
	if err == nil {
		t.Fatal("a second writer got the lock")
	}
	for _, err := range []error{err, fmt.Errorf("sqlite: create key: %w", err), errors.Join(errors.New("rollback"), err)} {
		if e := apierr.From(err); e.Code != apierr.DatabaseUnavailable || e.Status() != 503 || e.RetryAfter <= 0 {
			t.Errorf("From(%v) = %s %d retry %s; want 503 database_unavailable", err, e.Code, e.Status(), e.RetryAfter)
		}
	}
	_, err = writer.Exec(`SELECT * FROM no_such_table`)
	if e := apierr.From(err); err == nil || e.Code != apierr.Internal {
		t.Errorf("a bad statement: %v → %s, want internal_error", err, e.Code)
	}
}
