package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// PostgresEnv names the variable that points tests at a PostgreSQL
// database they may create schemas in.
const PostgresEnv = "SOVEREIGN_TEST_POSTGRES_URL"

// RequirePostgres returns SOVEREIGN_TEST_POSTGRES_URL. When the variable
// is unset the test fails with instructions: PostgreSQL support is part of
// the product, so its tests are not optional. Only the explicit value
// "skip" skips the test.
func RequirePostgres(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	switch base {
	case "":
		t.Fatalf("%s is not set. `make test` sets it; by hand, start a throwaway server with\n"+
			"\teval \"$(scripts/postgres-test.sh)\"\n"+
			"run the tests, then `scripts/postgres-test.sh stop`. Set %s=skip to skip the PostgreSQL tests on purpose.",
			PostgresEnv, PostgresEnv)
	case "skip":
		t.Skipf("%s=skip", PostgresEnv)
	}
	return base
}

// PostgresURL returns a URL for a fresh, empty schema in the test database
// named by SOVEREIGN_TEST_POSTGRES_URL (its search_path set to that
// schema); the schema is dropped when t ends. It fails or skips the test
// as RequirePostgres does.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := RequirePostgres(t)
	var b [6]byte
	rand.Read(b[:])
	schema := "test_" + hex.EncodeToString(b[:])

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema in %s: %v (is the server running? `eval \"$(scripts/postgres-test.sh)\"`)", PostgresEnv, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db, err := sql.Open("pgx", base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		// The durable engine's tables, beside the schema's
		// (internal/durable).
		if _, err := db.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+schema+"_dbos CASCADE"); err != nil {
			t.Errorf("drop schema %s_dbos: %v", schema, err)
		}
	})
	return withSearchPath(t, base, schema)
}

// withSearchPath adds search_path=schema to a URL or key=value DSN; pgx
// sends unknown parameters to the server as run-time settings.
func withSearchPath(t testing.TB, base, schema string) string {
	if !strings.Contains(base, "://") {
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
