package sqlite

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/sovereign-ai/sovereign/internal/schema"
)

// schemaDialect reads goose's version table and the floor where the
// store's unqualified names resolve (the main database).
var schemaDialect = schema.Dialect{
	TableExists: `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`,
	Placeholder: "?",
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

// OpenNoMigrate opens the database file at path (as Open) without touching its
// schema, for `sovereign migrate` (which reads the schema before changing
// it) and `serve` with migrate_on_start false (which checks it with
// Schema). Errors: the URL is malformed or the file cannot be opened.
func OpenNoMigrate(path string) (*Store, error) { return connect(path) }

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
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}
