package durable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, for reading the version
)

// SchemaStatus is the durable engine's schema (DBOS's system tables) in a
// database. DBOS numbers its migrations itself and tolerates a schema
// newer than it knows, as goose does for the application's: a release
// with an older DBOS keeps running on tables a newer one migrated.
type SchemaStatus struct {
	// Where names the tables: `PostgreSQL schema "dbos"` or `the SQLite file`.
	Where string
	// Current is the version applied (0: none yet); Required the version
	// this build's DBOS needs.
	Current, Required int64
}

// Behind reports whether DBOS's migrations are pending.
func (s SchemaStatus) Behind() bool { return s.Current < s.Required }

func (s SchemaStatus) String() string {
	state := "up to date"
	switch {
	case s.Behind():
		state = "migrations pending"
	case s.Current > s.Required:
		state = "the database is newer"
	}
	return fmt.Sprintf("version %d in %s (this build needs %d; %s)", s.Current, s.Where, s.Required, state)
}

// target is where DBOS keeps its tables for a database URL, as New puts
// them.
type target struct {
	postgres bool
	url      string // postgres:// URL or SQLite file path
	schema   string
}

func targetOf(databaseURL, schema string) (target, error) {
	if strings.HasPrefix(databaseURL, "postgres://") || strings.HasPrefix(databaseURL, "postgresql://") {
		if schema == "" {
			schema = schemaFor(databaseURL)
		}
		return target{postgres: true, url: databaseURL, schema: schema}, nil
	}
	path := strings.TrimPrefix(strings.TrimPrefix(databaseURL, "sqlite://"), "sqlite:")
	if path == "" || path == ":memory:" {
		return target{}, errors.New("durable: the durable engine needs a database file (not an in-memory database)")
	}
	return target{url: path}, nil
}

func (t target) where() string {
	if t.postgres {
		return fmt.Sprintf("PostgreSQL schema %q", t.schema)
	}
	return "the SQLite file"
}

// ReadSchema reports the durable engine's schema in the database at
// databaseURL (a SQLite path or a postgres:// URL, as Config.DatabaseURL;
// schema as Config.Schema), changing nothing.
func ReadSchema(ctx context.Context, databaseURL, schema string) (SchemaStatus, error) {
	t, err := targetOf(databaseURL, schema)
	if err != nil {
		return SchemaStatus{}, err
	}
	st := SchemaStatus{Where: t.where()}
	if st.Required, err = requiredVersion(ctx, t.postgres); err != nil {
		return st, err
	}
	st.Current, err = currentVersion(ctx, t)
	return st, err
}

// Migrate creates or migrates the durable engine's tables in the database
// at databaseURL, as New does at a server's start (`sovereign migrate`).
func Migrate(ctx context.Context, databaseURL, schema string, log *slog.Logger) error {
	t, err := targetOf(databaseURL, schema)
	if err != nil {
		return err
	}
	if log == nil {
		log = slog.Default()
	}
	quiet := slog.New(minLevel{log.Handler(), slog.LevelWarn}).With("component", "durable")
	if !t.postgres {
		if err := dbos.Migrate(ctx, "sqlite:"+t.url, dbos.WithMigrateLogger(quiet)); err != nil {
			return fmt.Errorf("durable: migrating: %w", err)
		}
		return nil
	}
	unlock, err := migrationLock(ctx, t.url)
	if err != nil {
		return err
	}
	defer unlock()
	if err := dbos.Migrate(ctx, t.url, dbos.WithMigrateSchema(t.schema), dbos.WithMigrateLogger(quiet)); err != nil {
		return fmt.Errorf("durable: migrating: %w", err)
	}
	return nil
}

func currentVersion(ctx context.Context, t target) (int64, error) {
	driver, table, exists := "sqlite", "dbos_migrations",
		`SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dbos_migrations')`
	var args []any
	if t.postgres {
		driver, table = "pgx", pgx.Identifier{t.schema, "dbos_migrations"}.Sanitize()
		exists = `SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'dbos_migrations')`
		args = []any{t.schema}
	} else if _, err := os.Stat(t.url); errors.Is(err, os.ErrNotExist) {
		return 0, nil // not created yet; opening it would create it
	}
	db, err := sql.Open(driver, t.url)
	if err != nil {
		return 0, fmt.Errorf("durable: %w", err)
	}
	defer db.Close()
	var ok bool
	if err := db.QueryRowContext(ctx, exists, args...).Scan(&ok); err != nil {
		return 0, fmt.Errorf("durable: reading the schema version: %w", err)
	}
	if !ok {
		return 0, nil
	}
	var v sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(version) FROM `+table).Scan(&v); err != nil {
		return 0, fmt.Errorf("durable: reading the schema version: %w", err)
	}
	return v.Int64, nil
}

var (
	requiredOnce         [2]sync.Once
	requiredV            [2]int64
	requiredErr          [2]error
	migrationVersionRE   = regexp.MustCompile(`(?i)(?:SET version = |VALUES \()([0-9]+)\)?;\s*$`)
	errNoRequiredVersion = errors.New("durable: cannot tell the version DBOS's migrations reach")
)

// requiredVersion is the version this build's DBOS migrates to. DBOS
// exports its PostgreSQL migrations as statements (the last one records
// the version); for SQLite it exports nothing, so a scratch file is
// migrated once and read.
func requiredVersion(ctx context.Context, postgres bool) (int64, error) {
	i := 0
	if postgres {
		i = 1
	}
	requiredOnce[i].Do(func() {
		if postgres {
			stmts, err := dbos.MigrationStatements("dbos", 1)
			if err != nil {
				requiredErr[i] = err
				return
			}
			for j := len(stmts) - 1; j >= 0; j-- {
				if m := migrationVersionRE.FindStringSubmatch(stmts[j]); m != nil {
					requiredV[i], _ = strconv.ParseInt(m[1], 10, 64)
					return
				}
			}
			requiredErr[i] = errNoRequiredVersion
			return
		}
		dir, err := os.MkdirTemp("", "sovereign-dbos-")
		if err != nil {
			requiredErr[i] = err
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "scratch.db")
		discard := slog.New(slog.NewTextHandler(io.Discard, nil))
		if err := dbos.Migrate(ctx, "sqlite:"+path, dbos.WithMigrateLogger(discard)); err != nil {
			requiredErr[i] = fmt.Errorf("durable: %w", err)
			return
		}
		requiredV[i], requiredErr[i] = currentVersion(ctx, target{url: path})
	})
	return requiredV[i], requiredErr[i]
}
