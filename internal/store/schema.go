package store

import (
	"context"
	"fmt"

	"github.com/sovereign-ai/sovereign/internal/postgres"
	"github.com/sovereign-ai/sovereign/internal/schema"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
)

// Migrator is what both implementations offer beyond Store for schema
// management (`sovereign migrate`, `serve` with migrate_on_start false).
type Migrator interface {
	Store
	// Schema reports the application schema against this binary's
	// migrations, changing nothing.
	Schema(ctx context.Context) (schema.Status, error)
	// Migrate applies the pending migrations.
	Migrate(ctx context.Context) error
}

var (
	_ Migrator = (*sqlite.Store)(nil)
	_ Migrator = (*postgres.Store)(nil)
)

// OpenNoMigrate opens the database at url (as Open) without changing its
// schema. Errors: an unsupported scheme, the database cannot be reached.
func OpenNoMigrate(ctx context.Context, url string) (Migrator, error) {
	kind, err := Kind(url)
	if err != nil {
		return nil, err
	}
	if kind == "postgres" {
		s, err := postgres.OpenNoMigrate(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("%w (database %s)", err, redact(url))
		}
		return s, nil
	}
	return sqlite.OpenNoMigrate(SQLitePath(url))
}

// OpenMigrated opens the database at url without migrating it and checks
// that this binary may serve from it (schema.Status.Serveable): nothing
// pending, and no contract step past this release. A schema that a newer
// release only expanded is accepted: that is the previous release serving
// during a rolling upgrade. Errors: those of OpenNoMigrate, a
// schema.ErrBehind or schema.ErrTooOld.
func OpenMigrated(ctx context.Context, url string) (Store, schema.Status, error) {
	s, err := OpenNoMigrate(ctx, url)
	if err != nil {
		return nil, schema.Status{}, err
	}
	st, err := s.Schema(ctx)
	if err == nil {
		err = st.Serveable()
	}
	if err != nil {
		s.Close()
		return nil, st, err
	}
	return s, st, nil
}
