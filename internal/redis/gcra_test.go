package redis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"

	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/limits/limitstest"
	"github.com/sovereign-ai/sovereign/internal/redis"
)

// viaRedisRate is the reference GCRA: github.com/go-redis/redis_rate's
// AllowN, or AllowAtMost for a forced take, read as limits.Backend.Rate
// answers — what Limits.Rate was before the batch script took its place.
// A refund that leaves the bucket full deletes it, which redis_rate does
// not do by itself (it leaves such a refund unwritten).
func viaRedisRate(ctx context.Context, lim *redis_rate.Limiter, key string, limit int64, period time.Duration, n int64, force bool) (limits.RateResult, error) {
	rl := redis_rate.Limit{Rate: int(limit), Burst: int(limit), Period: period}
	if force && n > 0 {
		res, err := lim.AllowAtMost(ctx, key, rl, int(n))
		if err != nil {
			return limits.RateResult{}, err
		}
		return limits.RateResult{Allowed: int64(res.Allowed) >= n, Remaining: int64(res.Remaining), ResetAfter: max(res.ResetAfter, 0)}, nil
	}
	res, err := lim.AllowN(ctx, key, rl, int(n))
	if err != nil {
		return limits.RateResult{}, err
	}
	if n < 0 && res.ResetAfter <= 0 {
		return limits.RateResult{Allowed: true, Remaining: limit}, lim.Reset(ctx, key)
	}
	out := limits.RateResult{Allowed: res.Allowed > 0 || n <= 0, Remaining: int64(res.Remaining), ResetAfter: max(res.ResetAfter, 0)}
	if !out.Allowed {
		out.RetryAfter = res.RetryAfter
	}
	return out, nil
}

// rawClient is a client of the test Redis beside Limits' own, set as Open
// sets its own (RESP2), for redis_rate and for the test's own commands.
func rawClient(tb testing.TB) *goredis.Client {
	opt, err := goredis.ParseURL(limitstest.RequireRedis(tb))
	if err != nil {
		tb.Fatal(err)
	}
	opt.Protocol = 2
	rdb := goredis.NewClient(opt)
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// shiftScript moves the theoretical arrival time of the buckets KEYS
// ARGV[1] seconds back: for a GCRA, whose answers depend only on how far
// the TAT is ahead of now, the same as the clock moving that far forward
// — the one clock a Redis script cannot be given. A bucket moved back to
// now or before is full, and goes, as the scripts themselves do it.
var shiftScript = goredis.NewScript(`
local t = redis.call("TIME")
local now = (t[1] - 1483228800) + (t[2] / 1000000)
local d = tonumber(ARGV[1])
for _, k in ipairs(KEYS) do
  local v = redis.call("GET", k)
  if v then
    local tat = tonumber(v) - d
    if tat > now then
      redis.call("SET", k, tat, "EX", math.ceil(tat - now))
    else
      redis.call("DEL", k)
    end
  end
end
return 0
`)

// TestGCRAParity holds the three GCRAs to one behaviour: redis_rate (the
// reference), the batch script (Limits.Rate, and Limits.Batch with two
// operations on one bucket in one call), and limits.GCRA (through the
// in-memory backend). The same random sequence of takes (some larger than
// the limit), forced takes, refunds, reads and waits runs on a bucket of
// each, and every answer must agree: allowed and remaining exactly, retry
// and reset within what the time between the three calls explains.
//
// Waits are made, not slept: the memory backend's clock is moved forward,
// and the Redis buckets' TATs back (shiftScript), by whole quarters of an
// emission interval. With intervals of 15 s or more, a test that runs in
// well under a second then leaves every bucket's count a quarter-unit
// fraction plus far less than a quarter, so the moments between the three
// calls of a step (well under a millisecond, apart from stalls) never
// carry a count across a whole number: a difference in the answers is a
// difference in the arithmetic. The seed is logged; a failure names it.
func TestGCRAParity(t *testing.T) {
	ctx := context.Background()
	l, id := openLimits(t)
	ref := redis_rate.NewLimiter(rawClient(t))
	rdb := rawClient(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, c := range []struct {
		limit  int64
		period time.Duration
	}{{10, time.Hour}, {100, time.Hour}, {4, time.Minute}} {
		t.Run(fmt.Sprintf("%d per %v", c.limit, c.period), func(t *testing.T) {
			gcraParity(t, ctx, l, ref, rdb, id, seed, c.limit, c.period)
		})
	}
}

func gcraParity(t *testing.T, ctx context.Context, l *redis.Limits, ref *redis_rate.Limiter, rdb *goredis.Client,
	id string, seed uint64, limit int64, period time.Duration) {
	const steps = 300
	rng := rand.New(rand.NewPCG(seed, uint64(limit)))
	refKey, luaKey := fmt.Sprintf("gcra:ref:%d:%s", limit, id), fmt.Sprintf("gcra:lua:%d:%s", limit, id)
	var offset time.Duration // the memory backend's clock, ahead of the real one
	mem := limits.NewMemory(func() time.Time { return time.Now().Add(offset) })
	memKey := "gcra"
	ei := period / time.Duration(limit)

	// An operation: n > 0 takes (with force, what is left of it), 0 reads,
	// n < 0 refunds.
	type op struct {
		n     int64
		force bool
	}
	// slowest is the longest a step's three calls have taken: the paths'
	// clocks differ by at most that at a call, and their buckets' TATs by
	// at most that too (each was last set in some step), so their times
	// differ by at most twice it, plus the script's microseconds.
	var slowest time.Duration
	compare := func(step int, o op, ref, lua, mem limits.RateResult) {
		t.Helper()
		tol := 2*slowest + time.Millisecond
		near := func(a, b time.Duration) bool { return (a - b).Abs() <= tol }
		for _, got := range []struct {
			path string
			res  limits.RateResult
		}{{"batch script", lua}, {"limits.GCRA", mem}} {
			r := got.res
			if r.Allowed != ref.Allowed || r.Remaining != ref.Remaining || (r.RetryAfter > 0) != (ref.RetryAfter > 0) ||
				!near(r.RetryAfter, ref.RetryAfter) || !near(r.ResetAfter, ref.ResetAfter) {
				t.Fatalf("seed %d, step %d (n %d, force %v): %s answers %+v, redis_rate %+v (times within %v)",
					seed, step, o.n, o.force, got.path, r, ref, tol)
			}
		}
	}
	// seen counts the cases the single operations reached, by what the
	// bucket held before (a read of the memory backend's) and redis_rate's
	// answer: each must come up, or the test would compare less than it
	// says.
	seen := map[string]int{}
	count := func(o op, before, ref limits.RateResult) {
		switch {
		case o.n > 0 && !o.force:
			seen[map[bool]string{true: "take allowed", false: "take refused"}[ref.Allowed]]++
		case o.force && ref.Allowed:
			seen["forced take whole"]++
		case o.force && before.Remaining > 0:
			seen["forced take of what is left"]++
		case o.force && before.ResetAfter < period-ei/8:
			seen["forced take, under one left"]++ // which it does not take
		case o.force:
			seen["forced take, nothing left"]++
		case o.n < 0 && ref.ResetAfter == 0:
			seen["refund to full"]++
		case o.n < 0:
			seen["refund"]++
		default:
			seen["read"]++
		}
	}
	random := func() op {
		switch k := rng.IntN(10); {
		case k < 4:
			return op{n: rng.Int64N(limit + 2)} // 0 to limit+1
		case k < 6:
			return op{n: 1 + rng.Int64N(limit+1), force: true}
		default:
			return op{n: -1 - rng.Int64N(limit+2)}
		}
	}
	wait := func(d time.Duration) {
		if err := shiftScript.Run(ctx, rdb, []string{"rate:" + refKey, "rate:" + luaKey}, strconv.FormatFloat(d.Seconds(), 'f', -1, 64)).Err(); err != nil {
			t.Fatal(err)
		}
		offset += d
	}
	single := func(step int, o op) {
		before, _ := mem.Rate(ctx, memKey, limit, period, 0, false)
		began := time.Now()
		r, err := viaRedisRate(ctx, ref, refKey, limit, period, o.n, o.force)
		if err != nil {
			t.Fatalf("step %d: redis_rate: %v", step, err)
		}
		lua, err := l.Rate(ctx, luaKey, limit, period, o.n, o.force)
		if err != nil {
			t.Fatalf("step %d: Limits.Rate: %v", step, err)
		}
		m, _ := mem.Rate(ctx, memKey, limit, period, o.n, o.force)
		slowest = max(slowest, time.Since(began))
		compare(step, o, r, lua, m)
		count(o, before, r)
	}
	for step := range steps {
		switch k := rng.IntN(20); {
		case k < 3: // a wait: often under one emission interval
			d := time.Duration(1+rng.Int64N(3)) * ei / 4
			if rng.IntN(2) == 0 {
				d = time.Duration(1+rng.Int64N(4*limit+4)) * ei / 4
			}
			wait(d)
		case k < 4:
			// A settlement's charge when the bucket has refilled by less
			// than one since it was emptied, or not at all (rare by
			// chance): nothing is taken.
			single(step, op{n: limit + 1, force: true})
			if q := rng.Int64N(4); q > 0 {
				wait(time.Duration(q) * ei / 4)
			}
			single(step, op{n: 1 + rng.Int64N(limit), force: true})
		case k < 6: // two operations on the bucket in one batch
			// A forced take that empties the bucket is not followed by a
			// refund in the same call: both run at one instant there, and
			// the refund's count lands exactly on a whole number, where
			// the rounding of the arithmetic (redis_rate's too) decides.
			first := random()
			for first.force {
				first = random()
			}
			second := random()
			began := time.Now()
			r1, err1 := viaRedisRate(ctx, ref, refKey, limit, period, first.n, first.force)
			r2, err2 := viaRedisRate(ctx, ref, refKey, limit, period, second.n, second.force)
			ops := []*limits.Op{
				{Rate: true, Key: luaKey, Max: limit, Period: period, N: first.n, Force: first.force},
				{Rate: true, Key: luaKey, Max: limit, Period: period, N: second.n, Force: second.force},
			}
			l.Batch(ctx, ops)
			m1, _ := mem.Rate(ctx, memKey, limit, period, first.n, first.force)
			m2, _ := mem.Rate(ctx, memKey, limit, period, second.n, second.force)
			slowest = max(slowest, time.Since(began))
			for _, err := range []error{err1, err2, ops[0].Err, ops[1].Err} {
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			answer := func(o *limits.Op) limits.RateResult {
				return limits.RateResult{Allowed: o.OK, Remaining: o.Value, RetryAfter: o.Retry, ResetAfter: o.Reset}
			}
			compare(step, first, r1, answer(ops[0]), m1)
			compare(step, second, r2, answer(ops[1]), m2)
		case k < 8:
			single(step, op{}) // a read
		default:
			single(step, random())
		}
	}
	// Each Redis bucket is in one state, readable by the other path: the
	// script keeps redis_rate's keys and state.
	began := time.Now()
	refViaLua, err1 := l.Rate(ctx, refKey, limit, period, 0, false)
	luaViaRef, err2 := viaRedisRate(ctx, ref, luaKey, limit, period, 0, false)
	m, _ := mem.Rate(ctx, memKey, limit, period, 0, false)
	slowest = max(slowest, time.Since(began))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	compare(steps, op{}, luaViaRef, refViaLua, m)
	for _, c := range []string{"take allowed", "take refused", "forced take whole", "forced take of what is left",
		"forced take, under one left", "forced take, nothing left", "refund to full", "refund", "read"} {
		if seen[c] == 0 {
			t.Errorf("seed %d: the sequence never reached %q (%v)", seed, c, seen)
		}
	}
	t.Logf("compared: %v", seen)
}
