package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/policy"
)

func testPolicy(id, name string, created int64) policy.Policy {
	return policy.Policy{
		ID: id, Object: policy.ObjectPolicy, Name: name, Description: "about " + name,
		Scope: policy.ScopeTeam, ScopeID: "team_a", Enabled: true,
		Detectors: map[string]string{"ticket": `TCK-\d{6}`},
		Rules: []policy.Rule{
			{Name: "no-cards", Stage: policy.StageInput, When: `"card" in pii`, Action: policy.ActionDeny, Reason: "no cards"},
			{Name: "scrub", Stage: policy.StageOutput, When: "true", Action: policy.ActionRedact, Redact: []string{"email", "ticket"}},
		},
		CreatedAt: created, UpdatedAt: created,
	}
}

func testPolicies(t *testing.T, ks auth.KeyStore) {
	s, ok := ks.(policy.Store)
	if !ok {
		t.Fatalf("%T does not implement policy.Store", ks)
	}
	ctx := context.Background()
	t0 := base.Unix()
	if got, err := s.ListPolicies(ctx); err != nil || len(got) != 0 {
		t.Fatalf("empty list: %v %v", got, err)
	}
	b := testPolicy("pol_b", "bravo", t0)
	a := testPolicy("pol_a", "alpha", t0) // same time: by name
	c := testPolicy("pol_c", "charlie", t0-60)
	c.Scope, c.ScopeID, c.Enabled, c.Detectors, c.Description = policy.ScopeDeployment, "", false, nil, ""
	for _, p := range []policy.Policy{b, a, c} {
		if err := s.CreatePolicy(ctx, p); err != nil {
			t.Fatalf("create %s: %v", p.ID, err)
		}
	}
	got, err := s.GetPolicy(ctx, "pol_b")
	if err != nil || !reflect.DeepEqual(got, b) {
		t.Fatalf("get: %+v %v\nwant %+v", got, err, b)
	}
	if got, err := s.GetPolicy(ctx, "pol_c"); err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("get deployment policy: %+v %v\nwant %+v", got, err, c)
	}
	_, err = s.GetPolicy(ctx, "pol_nope")
	wantErr(t, "get missing", err, policy.ErrNotFound)

	// Names are unique, on create and on update.
	dup := testPolicy("pol_d", "alpha", t0)
	wantErr(t, "create with a taken name", s.CreatePolicy(ctx, dup), policy.ErrConflict)
	wantErr(t, "create with a taken name", s.CreatePolicy(ctx, dup), auth.ErrConflict)
	wantErr(t, "create with a taken id", s.CreatePolicy(ctx, testPolicy("pol_a", "delta", t0)), policy.ErrConflict)
	rename := b
	rename.Name = "alpha"
	wantErr(t, "rename to a taken name", s.UpdatePolicy(ctx, rename), policy.ErrConflict)

	list, err := s.ListPolicies(ctx)
	if err != nil || len(list) != 3 || list[0].ID != "pol_c" || list[1].ID != "pol_a" || list[2].ID != "pol_b" {
		t.Fatalf("list (oldest first, then by name): %v %v", policyIDs(list), err)
	}

	// An update replaces everything but the creation time.
	up := b
	up.Name, up.Enabled, up.Scope, up.ScopeID = "bravo-2", false, policy.ScopeKey, "key_1"
	up.Rules = up.Rules[:1]
	up.Detectors = nil
	up.CreatedAt, up.UpdatedAt = t0+999, t0+120
	if err := s.UpdatePolicy(ctx, up); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetPolicy(ctx, "pol_b")
	up.CreatedAt = t0
	if err != nil || !reflect.DeepEqual(got, up) {
		t.Fatalf("after update: %+v %v\nwant %+v", got, err, up)
	}
	missing := up
	missing.ID = "pol_nope"
	wantErr(t, "update missing", s.UpdatePolicy(ctx, missing), policy.ErrNotFound)

	if err := s.DeletePolicy(ctx, "pol_a"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "delete again", s.DeletePolicy(ctx, "pol_a"), policy.ErrNotFound)
	_, err = s.GetPolicy(ctx, "pol_a")
	wantErr(t, "get deleted", err, policy.ErrNotFound)
	// The name is free again.
	if err := s.CreatePolicy(ctx, testPolicy("pol_e", "alpha", t0+5)); err != nil {
		t.Fatalf("reuse a deleted policy's name: %v", err)
	}
	if list, err := s.ListPolicies(ctx); err != nil || len(list) != 3 {
		t.Fatalf("list after delete: %v %v", policyIDs(list), err)
	}
}

func policyIDs(ps []policy.Policy) []string {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	return ids
}

func decisionIDs(ds []policy.Decision) []string {
	var ids []string
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	return ids
}

func testPolicyDecisions(t *testing.T, ks auth.KeyStore) {
	s, ok := ks.(policy.Store)
	if !ok {
		t.Fatalf("%T does not implement policy.Store", ks)
	}
	ctx := context.Background()
	if err := s.AppendDecisions(ctx, nil); err != nil {
		t.Fatalf("append nothing: %v", err)
	}
	// 30 decisions, one a second, several in the same second (ids order
	// them there); every third is team_b's.
	var all []policy.Decision
	for i := range 30 {
		team, action, key := "team_a", policy.ActionFlag, "key_1"
		if i%3 == 0 {
			team = "team_b"
		}
		if i%2 == 0 {
			action, key = policy.ActionDeny, "key_2"
		}
		at := base.Add(time.Duration(i/2) * time.Second)
		d := policy.Decision{
			ID: policy.NewDecisionID(base.Add(time.Duration(i) * time.Millisecond)), Object: policy.ObjectDecision,
			CreatedAt: at.Unix(), RequestID: fmt.Sprintf("req_%02d", i), TeamID: team, KeyID: key, Model: "m", Route: "/v1/chat/completions",
			PolicyID: "pol_" + string(rune('a'+i%4)), Policy: "p", Rule: fmt.Sprintf("rule-%d", i%5), Stage: policy.StageInput, Action: action,
			Reason: "because", Spans: []policy.Span{{Kind: "email", Start: i, End: i + 5}},
		}
		if i == 7 {
			d.Spans, d.Reason, d.Model, d.Route = nil, "", "", ""
		}
		all = append(all, d)
	}
	if err := s.AppendDecisions(ctx, all[:10]); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendDecisions(ctx, all[10:]); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "a duplicate id", s.AppendDecisions(ctx, all[3:4]), auth.ErrConflict)

	got, err := s.GetDecision(ctx, "team_a", all[1].ID, false)
	if err != nil || !reflect.DeepEqual(got, all[1]) {
		t.Fatalf("get: %+v %v\nwant %+v", got, err, all[1])
	}
	got, err = s.GetDecision(ctx, "team_a", all[7].ID, false)
	if want := all[7]; err != nil || !reflect.DeepEqual(got.Spans, []policy.Span{}) || got.Reason != "" || got.Model != "" {
		t.Fatalf("get without spans: %+v %v, want %+v", got, err, want)
	}
	_, err = s.GetDecision(ctx, "team_b", all[1].ID, false)
	wantErr(t, "another team's decision", err, policy.ErrNotFound)
	if _, err := s.GetDecision(ctx, "", all[1].ID, true); err != nil {
		t.Fatalf("an admin's get: %v", err)
	}
	_, err = s.GetDecision(ctx, "", "pdec_nope", true)
	wantErr(t, "missing", err, policy.ErrNotFound)

	// want is the decisions matching keep, newest first.
	want := func(keep func(d policy.Decision) bool) []string {
		var ids []string
		for i := len(all) - 1; i >= 0; i-- {
			if keep(all[i]) {
				ids = append(ids, all[i].ID)
			}
		}
		return ids
	}
	teamA := func(d policy.Decision) bool { return d.TeamID == "team_a" }
	for _, c := range []struct {
		name string
		f    policy.DecisionFilter
		keep func(d policy.Decision) bool
	}{
		{"team", policy.DecisionFilter{TeamID: "team_a"}, teamA},
		{"all teams", policy.DecisionFilter{AllTeams: true}, func(policy.Decision) bool { return true }},
		{"policy", policy.DecisionFilter{TeamID: "team_a", PolicyID: "pol_b"}, func(d policy.Decision) bool { return teamA(d) && d.PolicyID == "pol_b" }},
		{"rule", policy.DecisionFilter{TeamID: "team_a", Rule: "rule-2"}, func(d policy.Decision) bool { return teamA(d) && d.Rule == "rule-2" }},
		{"action", policy.DecisionFilter{TeamID: "team_a", Action: policy.ActionDeny}, func(d policy.Decision) bool { return teamA(d) && d.Action == policy.ActionDeny }},
		{"key", policy.DecisionFilter{AllTeams: true, KeyID: "key_1"}, func(d policy.Decision) bool { return d.KeyID == "key_1" }},
		{"request", policy.DecisionFilter{TeamID: "team_a", RequestID: "req_05"}, func(d policy.Decision) bool { return teamA(d) && d.RequestID == "req_05" }},
		{"another team's request", policy.DecisionFilter{TeamID: "team_b", RequestID: "req_05"}, func(policy.Decision) bool { return false }},
		{"model", policy.DecisionFilter{AllTeams: true, Model: "m"}, func(d policy.Decision) bool { return d.Model == "m" }},
		{"since", policy.DecisionFilter{TeamID: "team_a", Since: time.Unix(base.Unix()+10, 0)}, func(d policy.Decision) bool {
			return teamA(d) && d.CreatedAt >= base.Unix()+10
		}},
		{"until", policy.DecisionFilter{TeamID: "team_a", Until: time.Unix(base.Unix()+3, 0)}, func(d policy.Decision) bool {
			return teamA(d) && d.CreatedAt < base.Unix()+3
		}},
		{"range", policy.DecisionFilter{AllTeams: true, Since: time.Unix(base.Unix()+3, 0), Until: time.Unix(base.Unix()+5, 0)}, func(d policy.Decision) bool {
			return d.CreatedAt >= base.Unix()+3 && d.CreatedAt < base.Unix()+5
		}},
	} {
		c.f.Limit = 100
		list, more, err := s.ListDecisions(ctx, c.f)
		if w := want(c.keep); err != nil || more || !reflect.DeepEqual(decisionIDs(list), w) {
			t.Errorf("%s: %v %v %v\nwant %v", c.name, decisionIDs(list), more, err, w)
		}
	}

	// Pages follow the cursor, newest first, with no gap or repeat.
	wantA := want(teamA)
	var pages []string
	after := ""
	for range 10 {
		page, more, err := s.ListDecisions(ctx, policy.DecisionFilter{TeamID: "team_a", After: after, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, decisionIDs(page)...)
		if !more {
			break
		}
		after = page[len(page)-1].ID
	}
	if !reflect.DeepEqual(pages, wantA) {
		t.Fatalf("pages: %v\nwant %v", pages, wantA)
	}
	if page, more, err := s.ListDecisions(ctx, policy.DecisionFilter{AllTeams: true}); err != nil || !more || len(page) != 20 {
		t.Fatalf("default limit: %d %v %v", len(page), more, err)
	}
	// A cursor must be one of the decisions the filter can see.
	_, _, err = s.ListDecisions(ctx, policy.DecisionFilter{TeamID: "team_b", After: all[1].ID})
	wantErr(t, "another team's cursor", err, policy.ErrNotFound)
	_, _, err = s.ListDecisions(ctx, policy.DecisionFilter{AllTeams: true, After: "pdec_nope"})
	wantErr(t, "an unknown cursor", err, policy.ErrNotFound)
	if page, _, err := s.ListDecisions(ctx, policy.DecisionFilter{AllTeams: true, After: all[1].ID, Limit: 100}); err != nil || len(page) != 1 || page[0].ID != all[0].ID {
		t.Fatalf("an admin's cursor: %v %v", decisionIDs(page), err)
	}

	// The API's JSON: spans are kind and offsets.
	js, _ := json.Marshal(all[1])
	var back policy.Decision
	if err := json.Unmarshal(js, &back); err != nil || !reflect.DeepEqual(back, all[1]) {
		t.Fatalf("JSON round trip: %s %v", js, err)
	}
}
