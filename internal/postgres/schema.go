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
func (s *Store) Schema(ctx context.Context) (schema.Status, error) { return s.schema().Status(ctx) }

// schema is the database's schema as this binary's migrations see it.
func (s *Store) schema() schema.DB {
	return schema.DB{DB: s.db, Dialect: schemaDialect, Migrations: Migrations()}
}

// Migrate applies the pending migrations, as Open does. Errors: a
// migration fails, or the database was contracted past this binary.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.migrate(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}
