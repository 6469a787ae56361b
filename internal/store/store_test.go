package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/policy"
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
	// A client sees a 404, never the store's own text.
	if e := apierr.From(err); e.Status() != 404 || strings.Contains(e.Message, "sqlite") {
		t.Errorf("GetKey(missing) answers %d %q", e.Status(), e.Message)
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

// TestErrorsReachClientsWorded: the not-found and conflict errors of the
// policies and limit rules are the clients' answers, worded by the store
// (which alone knows what was missing), with no storage detail; errors.Is
// still finds the domain's sentinel.
func TestErrorsReachClientsWorded(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "sovereign.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := func(what string, err, sentinel error, status int, param, message string) {
		t.Helper()
		e := apierr.From(err)
		if !errors.Is(err, sentinel) || e.Status() != status || e.Param != param || e.Message != message {
			t.Errorf("%s: %v → %d %q %q, want %d %q %q", what, err, e.Status(), e.Param, e.Message, status, param, message)
		}
	}
	p := policy.Policy{ID: "pol_a", Object: policy.ObjectPolicy, Name: "guard", Scope: policy.ScopeDeployment, Enabled: true,
		Rules: []policy.Rule{{Name: "r", Stage: policy.StageInput, When: "true", Action: policy.ActionFlag}}, CreatedAt: 1, UpdatedAt: 1}
	if err := s.CreatePolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.ID = "pol_b"
	want("a taken name", s.CreatePolicy(ctx, p), policy.ErrConflict, 409, "", "a policy with this name exists")
	_, err = s.GetPolicy(ctx, "pol_nope")
	want("a missing policy", err, policy.ErrNotFound, 404, "", "no such policy")
	want("deleting a missing policy", s.DeletePolicy(ctx, "pol_nope"), policy.ErrNotFound, 404, "", "no such policy")
	_, err = s.GetDecision(ctx, "team_a", "pdec_nope", true)
	want("a missing decision", err, policy.ErrNotFound, 404, "", "no such policy decision")
	_, _, err = s.ListDecisions(ctx, policy.DecisionFilter{AllTeams: true, After: "pdec_nope"})
	want("an unknown cursor", err, policy.ErrNotFound, 400, "after", "'after' is not a policy decision id in this list")
	want("a missing limit rule", s.DeleteLimitRule(ctx, limits.ScopeTeam, "team_a"), limits.ErrNotFound, 404, "",
		`no limit rule set through the API for team "team_a"`)
}
