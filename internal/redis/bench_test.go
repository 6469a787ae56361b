package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/limits/limitstest"
	"github.com/sovereign-ai/sovereign/internal/redis"
)

// BenchmarkAdmitSettle is one governed request's limits work on Redis: one
// team rule with every dimension, admitted and settled.
func BenchmarkAdmitSettle(b *testing.B) {
	benchAdmitSettle(b, []limits.Rule{{Scope: limits.ScopeTeam, Subject: "team_bench",
		RequestsPerMinute: 1e8, TokensPerMinute: 1e8, ConcurrentRequests: 1e5, TokensPerDay: 1e12, TokensPerMonth: 1e12}})
}

// BenchmarkAdmitSettleThreeScopes is the gateway bench's default: rules on
// the key, its team and the model (six rate checks, three leases and a
// budget to admit).
func BenchmarkAdmitSettleThreeScopes(b *testing.B) {
	benchAdmitSettle(b, []limits.Rule{
		{Scope: limits.ScopeTeam, Subject: "team_bench", RequestsPerMinute: 1e8, TokensPerMinute: 1e8, ConcurrentRequests: 1e5, TokensPerDay: 1e12},
		{Scope: limits.ScopeKey, Subject: "key_bench", RequestsPerMinute: 1e8, TokensPerMinute: 1e8, ConcurrentRequests: 1e5},
		{Scope: limits.ScopeModel, Subject: "mock", RequestsPerMinute: 1e8, TokensPerMinute: 1e8, ConcurrentRequests: 1e5},
	})
}

func benchAdmitSettle(b *testing.B, rules []limits.Rule) {
	ctx := context.Background()
	l, err := redis.Open(ctx, limitstest.RequireRedis(b))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	s, err := limits.New(ctx, limits.Config{Backend: l, Rules: rules})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	i := 0
	for b.Loop() {
		i++
		tk, _, err := s.Admit(ctx, limits.Request{ID: fmt.Sprint("r", i), KeyID: "key_bench", TeamID: "team_bench", Model: "mock", Tokens: 20})
		if err != nil {
			b.Fatal(err)
		}
		tk.Settle(ctx, 12)
	}
}

// BenchmarkRate is one rate check on Redis, through redis_rate (viaRedisRate:
// what Limits.Rate ran before) and through the batch script (Limits.Rate
// now): "take" takes one from a bucket that never runs out; "take+refund"
// takes one and gives it back, the refund filling the bucket (redis_rate
// leaves that unwritten, so it costs a delete more).
func BenchmarkRate(b *testing.B) {
	ctx := context.Background()
	l, err := redis.Open(ctx, limitstest.RequireRedis(b))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	lim := redis_rate.NewLimiter(rawClient(b))
	const limit, period = 1e9, time.Minute
	paths := []struct {
		name string
		rate func(key string, n int64) (limits.RateResult, error)
	}{
		{"redis_rate", func(key string, n int64) (limits.RateResult, error) {
			return viaRedisRate(ctx, lim, key, limit, period, n, false)
		}},
		{"script", func(key string, n int64) (limits.RateResult, error) { return l.Rate(ctx, key, limit, period, n, false) }},
	}
	for _, p := range paths {
		b.Run(p.name+"/take", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.rate("bench:rate:take:"+p.name, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(p.name+"/take+refund", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.rate("bench:rate:refund:"+p.name, 1); err != nil {
					b.Fatal(err)
				}
				if _, err := p.rate("bench:rate:refund:"+p.name, -1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
