package store_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/schema"
	"github.com/sovereign-ai/sovereign/internal/store"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

// TestSchemaAcrossReleases plays the schema's part of a rolling upgrade
// on each dialect: a database behind this release is refused without
// migrating (ErrBehind, naming `sovereign migrate`) and served once
// migrated; a newer release's expand step (a migration this binary does
// not know) is served, by Open and OpenMigrated alike; a newer release's
// contract step (the floor raised past this binary) is refused by both
// with ErrTooOld, and this binary's migrating does not lower the floor.
func TestSchemaAcrossReleases(t *testing.T) {
	for _, tc := range []struct {
		name   string
		url    func(t *testing.T) string
		driver string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "s.db") }, "sqlite"},
		{"postgres", func(t *testing.T) string { return storetest.PostgresURL(t) }, "pgx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			url := tc.url(t)
			_, st, err := store.OpenMigrated(ctx, url)
			if !errors.Is(err, schema.ErrBehind) || !strings.Contains(err.Error(), "sovereign migrate") {
				t.Fatalf("OpenMigrated(new database) = %v, want ErrBehind naming sovereign migrate", err)
			}
			if st.Current != 0 || len(st.Pending) == 0 || st.Known == 0 {
				t.Fatalf("new database: %+v", st)
			}
			s, err := store.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			s, st, err = store.OpenMigrated(ctx, url)
			if err != nil {
				t.Fatalf("OpenMigrated(migrated) = %v", err)
			}
			s.Close()
			if st.Ahead() || st.Behind() || st.Current != st.Known || st.Floor != 0 {
				t.Fatalf("migrated: %+v", st)
			}
			known := st.Known

			raw, err := sql.Open(tc.driver, url)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			exec := func(q string) {
				t.Helper()
				if _, err := raw.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			// A newer release's expand step.
			exec(`CREATE TABLE newer_release_table (id INTEGER PRIMARY KEY)`)
			exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (` + itoa(known+1) + `, true)`)
			s, st, err = store.OpenMigrated(ctx, url)
			if err != nil {
				t.Fatalf("OpenMigrated(expanded by a newer release) = %v, want served", err)
			}
			s.Close()
			if !st.Ahead() || st.Current != known+1 {
				t.Fatalf("expanded: %+v", st)
			}
			if s, err = store.Open(ctx, url); err != nil {
				t.Fatalf("Open(expanded by a newer release) = %v, want served", err)
			}
			s.Close()

			// A newer release's contract step, made after migration known+1.
			exec(`UPDATE schema_floor SET version = ` + itoa(known+1))
			if _, _, err := store.OpenMigrated(ctx, url); !errors.Is(err, schema.ErrTooOld) {
				t.Fatalf("OpenMigrated(contracted past this release) = %v, want ErrTooOld", err)
			}
			if _, err := store.Open(ctx, url); !errors.Is(err, schema.ErrTooOld) {
				t.Fatalf("Open(contracted past this release) = %v, want ErrTooOld", err)
			}
			var floor int64
			if err := raw.QueryRowContext(ctx, `SELECT version FROM schema_floor`).Scan(&floor); err != nil || floor != known+1 {
				t.Fatalf("floor after an older release opened the database: %d, %v; want %d", floor, err, known+1)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
