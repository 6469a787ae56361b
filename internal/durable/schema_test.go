package durable_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

// TestSkipMigrations: an engine told to leave DBOS's tables alone (serve
// with migrate_on_start false) refuses a database whose tables are
// missing, naming `sovereign migrate`, and runs once Migrate made them;
// ReadSchema reports pending, then up to date.
func TestSkipMigrations(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "d.db") }},
		{"postgres", func(t *testing.T) string { return storetest.PostgresURL(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			url := tc.url(t)
			st, err := durable.ReadSchema(ctx, url, "")
			if err != nil {
				t.Fatal(err)
			}
			if !st.Behind() || st.Current != 0 || st.Required == 0 {
				t.Fatalf("new database: %+v", st)
			}
			_, err = durable.New(ctx, durable.Config{DatabaseURL: url, ExecutorID: "a", SkipMigrations: true})
			if err == nil || !strings.Contains(err.Error(), "sovereign migrate") {
				t.Fatalf("New(SkipMigrations) on a new database = %v, want a refusal naming sovereign migrate", err)
			}
			if err := durable.Migrate(ctx, url, "", nil); err != nil {
				t.Fatal(err)
			}
			if st, err = durable.ReadSchema(ctx, url, ""); err != nil || st.Behind() || st.Current != st.Required {
				t.Fatalf("after Migrate: %+v, %v", st, err)
			}
			e, err := durable.New(ctx, durable.Config{DatabaseURL: url, ExecutorID: "a", SkipMigrations: true})
			if err != nil {
				t.Fatalf("New(SkipMigrations) after Migrate = %v", err)
			}
			if err := e.Launch(ctx); err != nil {
				t.Fatal(err)
			}
			e.Close(time.Second)
		})
	}
}
