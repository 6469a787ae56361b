package postgres

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/sovereign-ai/sovereign/internal/schema"
)

// schemaDialect reads goose's version table and the floor where the
// store's unqualified names resolve (the URL's search_path).
var schemaDialect = schema.Dialect{
	TableExists: `SELECT to_regclass($1) IS NOT NULL`,
	Placeholder: "$1",
}

// Migrations returns the embedded migrations (the expand-then-contract
// policy test reads them).
func Migrations() fs.FS {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		panic(err)
	}
	return sub
}

// OpenNoMigrate connects to the database at url without touching its
// schema, for `sovereign migrate` (which reads the schema before changing
// it) and `serve` with migrate_on_start false (which checks it with
// Schema). Errors: the URL is malformed or the server cannot be reached.
func OpenNoMigrate(ctx context.Context, url string) (*Store, error) { return connect(ctx, url) }

// Schema reports the application schema against this binary's
// migrations, changing nothing.
func (s *Store) Schema(ctx context.Context) (schema.Status, error) {
	ms, err := schema.Load(Migrations())
	if err != nil {
		return schema.Status{}, err
	}
	return schema.Read(ctx, s.db, schemaDialect, ms)
}

// Migrate applies the pending migrations, as Open does. Errors: a
// migration fails, or the database was contracted past this binary.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.migrate(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// raiseFloor records the floor of every embedded contract step.
func (s *Store) raiseFloor(ctx context.Context) error {
	ms, err := schema.Load(Migrations())
	if err != nil {
		return err
	}
	return schema.RaiseFloor(ctx, s.db, schemaDialect, schema.FloorOf(ms))
}

// afterUp records the floor (its table may have just been created) and
// refuses a database a newer release contracted past this one.
func (s *Store) afterUp(ctx context.Context) error {
	if err := s.raiseFloor(ctx); err != nil {
		return err
	}
	st, err := s.Schema(ctx)
	if err != nil {
		return err
	}
	return st.Serveable()
}
