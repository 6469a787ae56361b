package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/limits"
)

func testLimitRules(t *testing.T, ks auth.KeyStore) {
	s, ok := ks.(limits.Store)
	if !ok {
		t.Fatalf("%T does not implement limits.Store", ks)
	}
	ctx := context.Background()
	a := limits.Rule{Scope: limits.ScopeTeam, Subject: "team_a", RequestsPerMinute: 60, TokensPerMinute: 1000, UpdatedAt: 1}
	b := limits.Rule{Scope: limits.ScopeModel, Subject: "org/model:7b", ConcurrentRequests: 2, TokensPerDay: 10, TokensPerMonth: 100, UpdatedAt: 2}
	for _, r := range []limits.Rule{a, b} {
		if err := s.PutLimitRule(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	a.RequestsPerMinute, a.UpdatedAt = 0, 3 // a put replaces the whole rule
	if err := s.PutLimitRule(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListLimitRules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != b || got[1] != a {
		t.Fatalf("rules = %+v, want %+v then %+v", got, b, a)
	}
	if err := s.DeleteLimitRule(ctx, limits.ScopeTeam, "team_a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteLimitRule(ctx, limits.ScopeTeam, "team_a"); !errors.Is(err, limits.ErrNotFound) {
		t.Fatalf("deleting a deleted rule: %v, want ErrNotFound", err)
	}
	if got, _ := s.ListLimitRules(ctx); len(got) != 1 {
		t.Fatalf("after delete: %+v", got)
	}
}
