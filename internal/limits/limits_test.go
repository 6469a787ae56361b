package limits_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/limits"
)

func newService(t *testing.T, fail bool, rules ...limits.Rule) *limits.Service {
	t.Helper()
	s, err := limits.New(context.Background(), limits.Config{Rules: rules, FailOpen: fail})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestEveryApplicableRuleIsChecked(t *testing.T) {
	ctx := context.Background()
	// The team allows 2 requests a minute, the key 10: a key in the team
	// gets 2 (a key with a team does not bypass the team's limit).
	s := newService(t, false,
		limits.Rule{Scope: limits.ScopeKey, Subject: "key_a", RequestsPerMinute: 10},
		limits.Rule{Scope: limits.ScopeTeam, Subject: "team_1", RequestsPerMinute: 2})
	for i := 0; i < 2; i++ {
		tk, st, err := s.Admit(ctx, limits.Request{ID: "r", KeyID: "key_a", TeamID: "team_1"})
		if err != nil {
			t.Fatal(err)
		}
		if st.Requests == nil || st.Requests.Scope != limits.ScopeTeam || st.Requests.Remaining != int64(1-i) {
			t.Errorf("request %d: status %+v, want the team's window with %d left", i, st.Requests, 1-i)
		}
		tk.Settle(ctx, 0)
	}
	_, st, err := s.Admit(ctx, limits.Request{ID: "r", KeyID: "key_a", TeamID: "team_1"})
	var ex *limits.ExceededError
	if !errors.As(err, &ex) || ex.Scope != limits.ScopeTeam || ex.Dimension != limits.RequestsPerMinute || ex.Quota() {
		t.Fatalf("third request: %v, want the team's requests_per_minute exceeded", err)
	}
	if ex.RetryAfter <= 0 || ex.RetryAfter > 30*time.Second || st.Requests == nil || st.Requests.Remaining != 0 {
		t.Errorf("retry after %v, status %+v", ex.RetryAfter, st.Requests)
	}
	// All or nothing: the refused request took nothing from the key.
	ws, err := s.Limits(ctx, "key_a", "team_1")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Scope == limits.ScopeKey && w.Remaining != 8 {
			t.Errorf("the key's window has %d left, want 8 (two admitted, the refused one given back)", w.Remaining)
		}
	}
	// Another key of another team is not governed.
	if tk, _, err := s.Admit(ctx, limits.Request{ID: "r", KeyID: "key_b", TeamID: "team_2"}); err != nil || tk != nil {
		t.Errorf("ungoverned request: %v %v", tk, err)
	}
}

func TestTokensAreReservedThenSettled(t *testing.T) {
	ctx := context.Background()
	s := newService(t, false, limits.Rule{Scope: limits.ScopeTeam, Subject: "t", TokensPerMinute: 1000, TokensPerDay: 5000})
	tk, st, err := s.Admit(ctx, limits.Request{ID: "1", KeyID: "k", TeamID: "t", Tokens: 600})
	if err != nil {
		t.Fatal(err)
	}
	if st.Tokens == nil || st.Tokens.Dimension != limits.TokensPerMinute || st.Tokens.Remaining != 400 {
		t.Fatalf("after reserving 600: %+v", st.Tokens)
	}
	// A second request reserving 600 does not fit while the first runs.
	if _, _, err := s.Admit(ctx, limits.Request{ID: "2", KeyID: "k", TeamID: "t", Tokens: 600}); err == nil {
		t.Fatal("600 more tokens fit in 400")
	}
	// The first used only 100: the rest comes back, and the remaining
	// count goes down by what it really used.
	tk.Settle(ctx, 100)
	tk.Settle(ctx, 100) // twice is once
	ws, _ := s.Limits(ctx, "k", "t")
	got := map[string]int64{}
	for _, w := range ws {
		got[w.Dimension] = w.Remaining
	}
	if got[limits.TokensPerMinute] < 899 || got[limits.TokensPerMinute] > 900 || got[limits.TokensPerDay] != 4900 {
		t.Fatalf("after settling to 100: %v, want 900 per minute and 4900 today", got)
	}
	tk2, _, err := s.Admit(ctx, limits.Request{ID: "2", KeyID: "k", TeamID: "t", Tokens: 600})
	if err != nil {
		t.Fatal(err)
	}
	// Using more than reserved is charged too.
	tk2.Settle(ctx, 800)
	ws, _ = s.Limits(ctx, "k", "t")
	for _, w := range ws {
		if w.Dimension == limits.TokensPerDay && w.Remaining != 4100 {
			t.Errorf("today: %d left, want 4100", w.Remaining)
		}
	}
	// A request larger than the limit can never fit: no Retry-After.
	_, st, err = s.Admit(ctx, limits.Request{ID: "3", KeyID: "k", TeamID: "t", Tokens: 1001})
	var ex *limits.ExceededError
	if !errors.As(err, &ex) || ex.RetryAfter != 0 {
		t.Fatalf("oversized request: %v", err)
	}
	// Nothing was read: no window claims a remaining count or a reset.
	if st.Tokens != nil || st.Requests != nil {
		t.Fatalf("oversized request's status: %+v", st)
	}
}

func TestDailyBudgetIsAQuota(t *testing.T) {
	ctx := context.Background()
	s := newService(t, false, limits.Rule{Scope: limits.ScopeKey, Subject: "k", TokensPerDay: 100})
	tk, _, err := s.Admit(ctx, limits.Request{ID: "1", KeyID: "k", Tokens: 90})
	if err != nil {
		t.Fatal(err)
	}
	tk.Settle(ctx, 90)
	_, st, err := s.Admit(ctx, limits.Request{ID: "2", KeyID: "k", Tokens: 20})
	var ex *limits.ExceededError
	if !errors.As(err, &ex) || !ex.Quota() || ex.Dimension != limits.TokensPerDay {
		t.Fatalf("over the day's budget: %v", err)
	}
	now := time.Now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	if d := midnight.Sub(now) - ex.RetryAfter; d < -time.Second || d > time.Second {
		t.Errorf("retry after %v, want until UTC midnight (%v)", ex.RetryAfter, midnight.Sub(now))
	}
	if st.Tokens == nil || st.Tokens.Dimension != limits.TokensPerDay {
		t.Errorf("status %+v", st.Tokens)
	}
}

func TestConcurrentRequests(t *testing.T) {
	ctx := context.Background()
	s := newService(t, false, limits.Rule{Scope: limits.ScopeModel, Subject: "m", ConcurrentRequests: 1})
	tk, _, err := s.Admit(ctx, limits.Request{ID: "1", KeyID: "k", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Admit(ctx, limits.Request{ID: "2", KeyID: "k2", Model: "m"}); err == nil {
		t.Fatal("a second concurrent request to the model was admitted")
	}
	tk.Settle(ctx, 0)
	if _, _, err := s.Admit(ctx, limits.Request{ID: "2", KeyID: "k2", Model: "m"}); err != nil {
		t.Fatalf("after the first ended: %v", err)
	}
}

// failing is a backend whose store is down.
type failing struct{ limits.Backend }

var errDown = errors.New("connection refused")

func (failing) Rate(context.Context, string, int64, time.Duration, int64, bool) (limits.RateResult, error) {
	return limits.RateResult{}, errDown
}

type counted struct{ open, closed int }

func (c *counted) LimitsBackendError(mode string) {
	if mode == "open" {
		c.open++
	} else {
		c.closed++
	}
}
func (c *counted) LimitsUnsettled(int64) {}
func (c *counted) LimitsRefused(string)  {}

func TestBackendDown(t *testing.T) {
	ctx := context.Background()
	rule := limits.Rule{Scope: limits.ScopeKey, Subject: "k", RequestsPerMinute: 5}
	for _, open := range []bool{true, false} {
		m := &counted{}
		s, err := limits.New(ctx, limits.Config{Backend: failing{limits.NewMemory(nil)}, Rules: []limits.Rule{rule}, FailOpen: open, Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = s.Admit(ctx, limits.Request{ID: "1", KeyID: "k"})
		var un *limits.UnavailableError
		if open && (err != nil || m.open != 1) {
			t.Errorf("fail-open: %v, counted %+v", err, m)
		}
		if !open && (!errors.As(err, &un) || !errors.Is(err, errDown) || m.closed != 1) {
			t.Errorf("fail-closed: %v, counted %+v", err, m)
		}
		s.Close()
	}
}

func TestRulesAreValidated(t *testing.T) {
	for _, r := range []limits.Rule{
		{Scope: "user", Subject: "x"},
		{Scope: limits.ScopeKey},
		{Scope: limits.ScopeKey, Subject: "k", TokensPerDay: -1},
	} {
		var inv *apierr.Error
		if err := r.Validate(); !errors.As(err, &inv) || inv.Param == "" {
			t.Errorf("%+v: %v, want an error naming the field", r, err)
		}
	}
}
