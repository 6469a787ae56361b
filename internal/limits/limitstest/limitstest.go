// Package limitstest is the shared test suite of limits.Backend
// implementations: the in-memory one and Redis run the same cases, so one
// node and many enforce a limit alike.
package limitstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/limits"
)

func uniq(prefix string) string {
	var b [6]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Run runs the suite against b.
func Run(t *testing.T, b limits.Backend) {
	ctx := context.Background()
	t.Run("RateCountsDownAndRefuses", func(t *testing.T) {
		key := uniq("rate:")
		for i := int64(1); i <= 5; i++ {
			res, err := b.Rate(ctx, key, 5, time.Minute, 1, false)
			if err != nil || !res.Allowed {
				t.Fatalf("take %d: %+v %v", i, res, err)
			}
			if res.Remaining != 5-i {
				t.Errorf("take %d: remaining %d, want %d", i, res.Remaining, 5-i)
			}
		}
		res, err := b.Rate(ctx, key, 5, time.Minute, 1, false)
		if err != nil || res.Allowed {
			t.Fatalf("sixth: %+v %v, want refused", res, err)
		}
		// One request per 12 s refills: the sixth fits in at most 12 s.
		if res.RetryAfter <= 10*time.Second || res.RetryAfter > 12*time.Second {
			t.Errorf("retry after %v, want about 12s", res.RetryAfter)
		}
		if res.ResetAfter < 59*time.Second || res.ResetAfter > time.Minute {
			t.Errorf("reset after %v, want about 1m", res.ResetAfter)
		}
		// A refund makes room again.
		if res, err := b.Rate(ctx, key, 5, time.Minute, -2, false); err != nil || !res.Allowed {
			t.Fatalf("refund: %+v %v", res, err)
		}
		for i := 0; i < 2; i++ {
			if res, err := b.Rate(ctx, key, 5, time.Minute, 1, false); err != nil || !res.Allowed {
				t.Fatalf("after refund %d: %+v %v", i, res, err)
			}
		}
		if res, _ := b.Rate(ctx, key, 5, time.Minute, 1, false); res.Allowed {
			t.Fatal("the bucket should be empty again")
		}
		// A peek takes nothing.
		if res, err := b.Rate(ctx, key, 5, time.Minute, 0, false); err != nil || res.Remaining != 0 {
			t.Fatalf("peek: %+v %v", res, err)
		}
	})
	t.Run("RateRefundToFull", func(t *testing.T) {
		key := uniq("rate:")
		if res, _ := b.Rate(ctx, key, 100, time.Minute, 60, false); !res.Allowed || res.Remaining != 40 {
			t.Fatalf("take 60: %+v", res)
		}
		if _, err := b.Rate(ctx, key, 100, time.Minute, -60, false); err != nil {
			t.Fatal(err)
		}
		res, err := b.Rate(ctx, key, 100, time.Minute, 0, false)
		if err != nil || res.Remaining < 99 {
			t.Fatalf("after a full refund: %+v %v, want 100 remaining", res, err)
		}
		if res, _ := b.Rate(ctx, key, 100, time.Minute, 101, false); res.Allowed {
			t.Fatal("more than the burst must be refused")
		}
		if res, _ := b.Rate(ctx, key, 100, time.Minute, 100, false); !res.Allowed {
			t.Fatal("the whole burst must be allowed")
		}
	})
	t.Run("RateForce", func(t *testing.T) {
		key := uniq("rate:")
		b.Rate(ctx, key, 10, time.Minute, 7, false)
		// A forced charge that fits is allowed like any other take.
		if res, err := b.Rate(ctx, key, 10, time.Minute, 1, true); err != nil || !res.Allowed || res.Remaining != 2 {
			t.Fatalf("forced charge of 1 with 3 left: %+v %v", res, err)
		}
		// One that does not takes what is left (redis_rate's AllowAtMost)
		// and says it could not take all.
		res, err := b.Rate(ctx, key, 10, time.Minute, 5, true)
		if err != nil || res.Allowed || res.Remaining != 0 || res.RetryAfter != 0 {
			t.Fatalf("forced charge of 5 with 2 left: %+v %v", res, err)
		}
		if res.ResetAfter < 59*time.Second || res.ResetAfter > time.Minute {
			t.Errorf("reset after %v, want about 1m (the bucket empty)", res.ResetAfter)
		}
		if res, _ := b.Rate(ctx, key, 10, time.Minute, 1, false); res.Allowed {
			t.Fatal("a forced charge must leave the bucket empty")
		}
	})
	t.Run("Quota", func(t *testing.T) {
		key := uniq("quota:")
		end := time.Now().Add(time.Hour)
		check := func(n int64, force, wantOK bool, wantUsed int64) {
			t.Helper()
			ok, used, err := b.Quota(ctx, key, 100, n, force, end)
			if err != nil || ok != wantOK || used != wantUsed {
				t.Fatalf("Quota(%d, force=%v) = %v, %d, %v; want %v, %d", n, force, ok, used, err, wantOK, wantUsed)
			}
		}
		check(0, false, true, 0)
		check(60, false, true, 60)
		check(50, false, false, 60)
		check(40, false, true, 100)
		check(10, true, true, 110)
		check(-30, true, true, 80)
		check(0, false, true, 80)
	})
	t.Run("Leases", func(t *testing.T) {
		key := uniq("lease:")
		for i, id := range []string{"a", "b"} {
			ok, held, err := b.Acquire(ctx, key, id, 2, time.Minute)
			if err != nil || !ok || held != int64(i+1) {
				t.Fatalf("acquire %s: %v %d %v", id, ok, held, err)
			}
		}
		if ok, held, _ := b.Acquire(ctx, key, "c", 2, time.Minute); ok || held != 2 {
			t.Fatalf("third lease: %v %d, want refused with 2 held", ok, held)
		}
		if err := b.Release(ctx, key, "a"); err != nil {
			t.Fatal(err)
		}
		if n, _ := b.Held(ctx, key); n != 1 {
			t.Fatalf("held %d after a release, want 1", n)
		}
		if ok, _, _ := b.Acquire(ctx, key, "c", 2, time.Minute); !ok {
			t.Fatal("a released lease must make room")
		}
		// A lease whose holder died expires.
		key2 := uniq("lease:")
		b.Acquire(ctx, key2, "dead", 1, 300*time.Millisecond)
		if ok, _, _ := b.Acquire(ctx, key2, "x", 1, time.Minute); ok {
			t.Fatal("the lease is still held")
		}
		time.Sleep(400 * time.Millisecond)
		if ok, _, _ := b.Acquire(ctx, key2, "x", 1, time.Minute); !ok {
			t.Fatal("an expired lease must not count")
		}
	})
}

// RedisEnv names the environment variable with the test Redis server's URL.
const RedisEnv = "SOVEREIGN_TEST_REDIS_URL"

// RequireRedis returns the test Redis server's URL, failing the test when
// none is set (make test starts one), or skipping it when set to "skip".
func RequireRedis(t testing.TB) string {
	t.Helper()
	url := os.Getenv(RedisEnv)
	switch url {
	case "":
		t.Fatalf("%s is not set. `make test` sets it; by hand, start a throwaway server with\n"+
			"\teval \"$(scripts/redis-test.sh)\"\n"+
			"run the tests, then `scripts/redis-test.sh stop`. Set %s=skip to skip the Redis tests on purpose.", RedisEnv, RedisEnv)
	case "skip":
		t.Skipf("%s=skip", RedisEnv)
	}
	return url
}

// RunBatch checks a Batcher's batches against the single operations.
func RunBatch(t *testing.T, b interface {
	limits.Batcher
	limits.Backend
}) {
	ctx := context.Background()
	q, l := uniq("quota:"), uniq("lease:")
	end := time.Now().Add(time.Hour)
	ops := []*limits.Op{
		{Key: q, Max: 100, N: 60, End: end},
		{Lease: true, Key: l, ID: "a", Max: 1, TTL: time.Minute},
		{Lease: true, Key: l, ID: "b", Max: 1, TTL: time.Minute},
		{Key: q, Max: 100, N: 50, End: end},
		{Key: q, Max: 100, N: 50, Force: true, End: end},
		{Lease: true, Release: true, Key: l, ID: "a"},
		{Lease: true, Key: l, ID: "c", Max: 1, TTL: time.Minute},
	}
	b.Batch(ctx, ops)
	want := []struct {
		ok    bool
		value int64
	}{{true, 60}, {true, 1}, {false, 1}, {false, 60}, {true, 110}, {true, 0}, {true, 1}}
	for i, op := range ops {
		if op.Err != nil {
			t.Fatalf("op %d: %v", i, op.Err)
		}
		if op.OK != want[i].ok || (!op.Release && op.Value != want[i].value) {
			t.Errorf("op %d: ok %v value %d, want %v %d", i, op.OK, op.Value, want[i].ok, want[i].value)
		}
	}
	// Rates in a batch, with a budget: taken, refused, then refunded to
	// full (which a GCRA script may not write by itself).
	r1, r2 := uniq("rate:"), uniq("rate:")
	rates := []*limits.Op{
		{Rate: true, Key: r1, Max: 3, N: 2, Period: time.Minute},
		{Rate: true, Key: r2, Max: 3, N: 4, Period: time.Minute},
		{Key: uniq("quota:"), Max: 10, N: 1, End: end},
	}
	b.Batch(ctx, rates)
	if r := rates[0]; r.Err != nil || !r.OK || r.Value != 1 {
		t.Fatalf("rate taken: %+v", r)
	}
	if r := rates[1]; r.Err != nil || r.OK || r.Retry <= 0 {
		t.Fatalf("rate refused: %+v", r)
	}
	if q := rates[2]; q.Err != nil || !q.OK || q.Value != 1 {
		t.Fatalf("budget beside rates: %+v", q)
	}
	refund := []*limits.Op{{Rate: true, Key: r1, Max: 3, N: -2, Period: time.Minute}, {Lease: true, Release: true, Key: l, ID: "c"}}
	b.Batch(ctx, refund)
	if refund[0].Err != nil || refund[1].Err != nil {
		t.Fatalf("refund: %+v %+v", refund[0], refund[1])
	}
	if res, err := b.Rate(ctx, r1, 3, time.Minute, 0, false); err != nil || res.Remaining != 3 {
		t.Fatalf("after a refund to full: %+v %v", res, err)
	}
}
