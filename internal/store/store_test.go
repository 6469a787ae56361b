package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/postgres"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
	"github.com/sovereign-ai/sovereign/internal/store"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

func TestKind(t *testing.T) {
	for _, c := range []struct{ url, kind, path string }{
		{"postgres://u:p@db:5432/sov", "postgres", ""},
		{"postgresql://db/sov?sslmode=require", "postgres", ""},
		{"sqlite:///var/lib/sovereign/sovereign.db", "sqlite", "/var/lib/sovereign/sovereign.db"},
		{"sqlite://data/sovereign.db", "sqlite", "data/sovereign.db"},
		{"sqlite:data/sovereign.db", "sqlite", "data/sovereign.db"},
		{"sqlite::memory:", "sqlite", ":memory:"},
		{"./data/sovereign.db", "sqlite", "./data/sovereign.db"},
		{"/abs/sovereign.db", "sqlite", "/abs/sovereign.db"},
		{":memory:", "sqlite", ":memory:"},
	} {
		kind, err := store.Kind(c.url)
		if err != nil || kind != c.kind {
			t.Errorf("Kind(%q) = %q, %v; want %q", c.url, kind, err, c.kind)
		}
		if c.kind == "sqlite" {
			if got := store.SQLitePath(c.url); got != c.path {
				t.Errorf("SQLitePath(%q) = %q, want %q", c.url, got, c.path)
			}
		}
	}
	_, err := store.Kind("mysql://root:secret@db/sov")
	if err == nil {
		t.Fatal("mysql:// accepted")
	}
	if got := err.Error(); !strings.Contains(got, "mysql://root:xxxxx@db/sov") || strings.Contains(got, "secret") {
		t.Errorf("error %q should name the redacted URL", got)
	}
	if _, err := store.Open(context.Background(), "redis://x"); err == nil {
		t.Error("Open(redis://) accepted")
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db?x=1":  "postgres://u:xxxxx@h:5432/db?x=1",
		"postgres://u@h/db":              "postgres://u@h/db",
		"postgres://h/db":                "postgres://h/db",
		"postgres://u:p@ss@h/db":         "postgres://u:xxxxx@h/db",
		"/plain/path.db":                 "/plain/path.db",
		"postgres://h/db?note=a@b":       "postgres://h/db?note=a@b",
		"postgresql://a:b@h/db?c=d@e:f@": "postgresql://a:xxxxx@h/db?c=d@e:f@",
	} {
		if got := store.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sovereign.db")
	s, err := store.Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*sqlite.Store); !ok {
		t.Errorf("Open(sqlite://) = %T", s)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetKey(ctx, "key_nope")
	if !errors.Is(err, store.ErrNotFound) || !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("GetKey(missing) = %v, want store.ErrNotFound", err)
	}
}

func TestOpenPostgres(t *testing.T) {
	s, err := store.Open(context.Background(), storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*postgres.Store); !ok {
		t.Errorf("Open(postgres://) = %T", s)
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}
