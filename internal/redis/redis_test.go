package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/limits/limitstest"
	"github.com/sovereign-ai/sovereign/internal/redis"
)

// TestLimitsBackend runs the limits backend suite on a real redis-server
// (make test starts one: scripts/redis-test.sh).
func TestLimitsBackend(t *testing.T) {
	l, err := redis.Open(context.Background(), limitstest.RequireRedis(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	limitstest.Run(t, l)
}

// TestServiceOnRedis runs admissions through Redis, where the checks run
// concurrently: a refusal by one rule gives back what the others took.
func TestServiceOnRedis(t *testing.T) {
	ctx := context.Background()
	l, err := redis.Open(ctx, limitstest.RequireRedis(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var b [6]byte
	rand.Read(b[:])
	team, key := "team_"+hex.EncodeToString(b[:]), "key_"+hex.EncodeToString(b[:])
	s, err := limits.New(ctx, limits.Config{Backend: l, Rules: []limits.Rule{
		{Scope: limits.ScopeKey, Subject: key, RequestsPerMinute: 10, ConcurrentRequests: 5, TokensPerDay: 1000},
		{Scope: limits.ScopeTeam, Subject: team, RequestsPerMinute: 2, TokensPerMinute: 500},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 2; i++ {
		tk, st, err := s.Admit(ctx, limits.Request{ID: fmt.Sprint("r", i), KeyID: key, TeamID: team, Tokens: 100})
		if err != nil {
			t.Fatal(err)
		}
		if st.Requests.Scope != limits.ScopeTeam || st.Requests.Remaining != int64(1-i) || st.Tokens.Dimension != limits.TokensPerMinute {
			t.Fatalf("status %+v %+v", st.Requests, st.Tokens)
		}
		tk.Settle(ctx, 40)
	}
	_, _, err = s.Admit(ctx, limits.Request{ID: "r3", KeyID: key, TeamID: team, Tokens: 100})
	var ex *limits.ExceededError
	if !errors.As(err, &ex) || ex.Scope != limits.ScopeTeam || ex.Dimension != limits.RequestsPerMinute {
		t.Fatalf("third: %v", err)
	}
	got := map[string]int64{}
	ws, err := s.Limits(ctx, key, team)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		got[w.Scope+"/"+w.Dimension] = w.Remaining
	}
	// Two admitted (the refused one gave its key request, lease and
	// budget back), each settled to 40 tokens.
	if got["key/requests_per_minute"] != 8 || got["key/concurrent_requests"] != 5 || got["key/tokens_per_day"] != 920 || got["team/tokens_per_minute"] < 419 {
		t.Fatalf("after a refusal: %v", got)
	}
}
