package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/policy"
	"github.com/sovereign-ai/sovereign/internal/records"
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

func testCapture(t *testing.T, ks auth.KeyStore) {
	ctx := context.Background()
	team := auth.Team{ID: "team_capture", Name: "capture", CreatedAt: at(0)}
	if err := ks.CreateTeam(ctx, team); err != nil {
		t.Fatal(err)
	}
	if got, _ := ks.GetTeam(ctx, team.ID); got.Capture {
		t.Fatal("a new team captures")
	}
	if err := ks.SetTeamCapture(ctx, team.ID, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := ks.GetTeam(ctx, team.ID); !got.Capture {
		t.Fatal("capture did not stick")
	}
	if err := ks.SetTeamCapture(ctx, "team_nope", true); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("unknown team: %v", err)
	}
	rs, ok := ks.(records.Store)
	if !ok {
		t.Fatalf("%T does not implement records.Store", ks)
	}
	batch := []records.Record{
		{ID: "req-a", Time: at(time.Second), TeamID: team.ID, Status: 200, Prompt: "hello [REDACTED:email]", Output: "hi ✓"},
		{ID: "req-b", Time: at(2 * time.Second), TeamID: team.ID, Status: 200},
	}
	if err := rs.AppendRecords(ctx, batch); err != nil {
		t.Fatal(err)
	}
	got, err := rs.GetRecord(ctx, team.ID, "req-a", false)
	if err != nil || got.Prompt != batch[0].Prompt || got.Output != batch[0].Output {
		t.Fatalf("captured record: %+v %v", got, err)
	}
	if got.Hash != got.ComputeHash(got.PrevHash) {
		t.Fatal("a captured record's hash does not cover what was stored")
	}
	tampered := got
	tampered.Output = "hi"
	if tampered.ComputeHash(got.PrevHash) == got.Hash {
		t.Fatal("changing a captured output keeps the hash")
	}
}

// testPurgeDecisions: retention removes the decisions made before the
// cut, and only those.
func testPurgeDecisions(t *testing.T, ks auth.KeyStore) {
	s, ok := ks.(policy.Store)
	if !ok {
		t.Fatalf("%T does not implement policy.Store", ks)
	}
	ctx := context.Background()
	var ds []policy.Decision
	for i := range 4 {
		ds = append(ds, policy.Decision{ID: policy.NewDecisionID(at(time.Duration(i) * time.Hour)), Object: "policy_decision",
			CreatedAt: at(time.Duration(i) * time.Hour).Unix(), RequestID: "r", TeamID: "team_p", PolicyID: "pol_x", Policy: "p",
			Rule: "r", Stage: policy.StageInput, Action: policy.ActionFlag})
	}
	if err := s.AppendDecisions(ctx, ds); err != nil {
		t.Fatal(err)
	}
	n, err := s.PurgeDecisions(ctx, time.Unix(at(2*time.Hour).Unix(), 0)) // decisions keep whole seconds
	if err != nil || n != 2 {
		t.Fatalf("purged %d, %v; want 2", n, err)
	}
	left, _, err := s.ListDecisions(ctx, policy.DecisionFilter{AllTeams: true, Limit: 10})
	if err != nil || len(left) != 2 || left[1].ID != ds[2].ID {
		t.Fatalf("left %+v, %v", left, err)
	}
}
