// Package redis is the Redis adapter of Sovereign's limits: the state that
// several API replicas share so that a limit is one limit, not one per
// replica. Rate buckets use github.com/go-redis/redis_rate (GCRA in one Lua
// script: one atomic round trip per check); budgets and concurrency leases
// are small Lua scripts of their own, also one round trip each.
package redis

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"

	"github.com/sovereign-ai/sovereign/internal/limits"
)

// Limits implements limits.Backend on Redis.
type Limits struct {
	rdb     *goredis.Client
	gcra    *redis_rate.Limiter
	workers workers
}

// Open connects to the Redis server at url (redis://[:password@]host:port/db
// or rediss:// for TLS) and checks it answers.
func Open(ctx context.Context, url string) (*Limits, error) {
	opt, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	// A limit check is on the request path: fail fast rather than queue
	// behind a dead server (fail-open or fail-closed decides what then).
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = time.Second, 500*time.Millisecond, 500*time.Millisecond
	opt.MaxRetries = 1
	// RESP2: the limits need no server push (RESP3 has the client check
	// for push notifications around every command).
	opt.Protocol = 2
	rdb := goredis.NewClient(opt)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis: %w", err)
	}
	if err := loadScripts(ctx, rdb); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis: loading scripts: %w", err)
	}
	return &Limits{rdb: rdb, gcra: redis_rate.NewLimiter(rdb)}, nil
}

// Close closes the connections.
func (l *Limits) Close() error { return l.rdb.Close() }

// Ping checks the server answers.
func (l *Limits) Ping(ctx context.Context) error { return l.rdb.Ping(ctx).Err() }

// Rate implements limits.Backend with redis_rate's GCRA. redis_rate
// cannot charge past a limit, so a forced charge takes what is left
// (AllowAtMost) and reports the rest as not allowed; and it does not write
// a refund that would leave the bucket full, so such a refund deletes the
// bucket instead (a second round trip, on settlement only).
func (l *Limits) Rate(ctx context.Context, key string, limit int64, period time.Duration, n int64, force bool) (limits.RateResult, error) {
	res, err := l.rate(ctx, l.gcra, key, limit, period, n, force)
	if err == nil && n < 0 && res.ResetAfter <= 0 && !refillsSoon(&limits.Op{N: n, Max: limit, Period: period}) {
		if err := l.gcra.Reset(ctx, key); err != nil {
			return limits.RateResult{}, err
		}
	}
	return res, err
}

// rate runs redis_rate's GCRA through lim (which may be batching), without
// the delete of a bucket a refund fills.
func (l *Limits) rate(ctx context.Context, lim *redis_rate.Limiter, key string, limit int64, period time.Duration, n int64, force bool) (limits.RateResult, error) {
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
		return limits.RateResult{Allowed: true, Remaining: limit}, nil
	}
	out := limits.RateResult{Allowed: res.Allowed > 0 || n <= 0, Remaining: int64(res.Remaining), ResetAfter: max(res.ResetAfter, 0)}
	if !out.Allowed {
		out.RetryAfter = res.RetryAfter
	}
	return out, nil
}

// quotaScript adds ARGV[1] to the counter KEYS[1] unless it would pass
// ARGV[2] (ARGV[3] = "1" forces it), expiring it at ARGV[4] (unix
// seconds); it returns {allowed, value}.
var quotaScript = goredis.NewScript(`
local n = tonumber(ARGV[1])
local cur = tonumber(redis.call("GET", KEYS[1]) or "0")
if n > 0 and ARGV[3] ~= "1" and cur + n > tonumber(ARGV[2]) then
  return {0, cur}
end
if n == 0 then
  return {1, cur}
end
cur = cur + n
if cur < 0 then cur = 0 end
redis.call("SET", KEYS[1], cur, "EXAT", ARGV[4])
return {1, cur}
`)

// Quota implements limits.Backend.
func (l *Limits) Quota(ctx context.Context, key string, max, n int64, force bool, end time.Time) (bool, int64, error) {
	f := "0"
	if force {
		f = "1"
	}
	v, err := quotaScript.Run(ctx, l.rdb, []string{key}, n, max, f, end.Unix()).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	return v[0] == 1, v[1], nil
}

// acquireScript holds leases in a sorted set scored by expiry (unix
// milliseconds, from the server's clock): it drops expired ones and adds
// ARGV[1] when fewer than ARGV[2] remain; it returns {ok, held}.
var acquireScript = goredis.NewScript(`
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
local held = redis.call("ZCARD", KEYS[1])
if held >= tonumber(ARGV[2]) then
  return {0, held}
end
local exp = now + tonumber(ARGV[3])
redis.call("ZADD", KEYS[1], exp, ARGV[1])
redis.call("PEXPIRE", KEYS[1], tonumber(ARGV[3]))
return {1, held + 1}
`)

// Acquire implements limits.Backend.
func (l *Limits) Acquire(ctx context.Context, key, id string, max int64, lease time.Duration) (bool, int64, error) {
	v, err := acquireScript.Run(ctx, l.rdb, []string{key}, id, max, lease.Milliseconds()).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	return v[0] == 1, v[1], nil
}

// Batch implements limits.Batcher: every operation goes in one pipeline,
// one round trip. Each stays atomic on its own: a rate is redis_rate's
// GCRA script, run by the library itself over a Scripter (gather) that
// queues its call into the pipeline; budgets and leases are this
// package's scripts and ZREM. A refund that would leave a bucket full is
// not written by redis_rate, so such buckets are then deleted (a second
// round trip, on settlement only).
func (l *Limits) Batch(ctx context.Context, ops []*limits.Op) {
	g := &gather{rdb: l.rdb, pipe: l.rdb.Pipeline(), done: make(chan struct{})}
	cmds := make([]goredis.Cmder, len(ops))
	for i, op := range ops {
		switch {
		case op.Rate:
			g.want++
		case op.Release:
			cmds[i] = g.pipe.ZRem(ctx, op.Key, op.ID)
		case op.Lease:
			cmds[i] = acquireScript.EvalSha(ctx, g.pipe, []string{op.Key}, op.ID, op.Max, op.TTL.Milliseconds())
		default:
			f := "0"
			if op.Force {
				f = "1"
			}
			cmds[i] = quotaScript.EvalSha(ctx, g.pipe, []string{op.Key}, op.N, op.Max, f, op.End.Unix())
		}
	}
	lim := redis_rate.NewLimiter(g)
	var wg sync.WaitGroup
	for _, op := range ops {
		if op.Rate {
			wg.Add(1)
			l.workers.run(func() {
				defer wg.Done()
				var res limits.RateResult
				res, op.Err = l.rate(ctx, lim, op.Key, op.Max, op.Period, op.N, op.Force)
				op.OK, op.Value, op.Retry, op.Reset = res.Allowed, res.Remaining, res.RetryAfter, res.ResetAfter
			})
		}
	}
	if g.want == 0 {
		g.flush(ctx)
	}
	wg.Wait()
	<-g.done
	var reload bool
	for i, op := range ops {
		if op.Rate {
			continue
		}
		if op.Err = cmds[i].Err(); goredis.HasErrorPrefix(op.Err, "NOSCRIPT") {
			reload = true
			continue
		}
		if op.Err != nil {
			continue
		}
		switch c := cmds[i].(type) {
		case *goredis.IntCmd:
			op.OK = true
		case *goredis.Cmd:
			v, err := c.Int64Slice()
			if err != nil || len(v) != 2 {
				op.Err = fmt.Errorf("redis: unexpected answer %v: %v", c.Val(), err)
				continue
			}
			op.OK, op.Value = v[0] == 1, v[1]
		}
	}
	if reload {
		// The server forgot the scripts (it restarted): load them and run
		// the operations again one by one, in order — releases too (again:
		// ZREM is idempotent), so a lease is not released before it is
		// taken.
		if err := loadScripts(ctx, l.rdb); err == nil {
			for _, op := range ops {
				if !op.Rate && (op.Release || goredis.HasErrorPrefix(op.Err, "NOSCRIPT")) {
					limits.RunOp(ctx, l, op)
				}
			}
		}
	}
	// Refunds redis_rate did not write because they fill the bucket: its
	// Reset deletes them, queued in one more pipeline.
	pipe := l.rdb.Pipeline()
	reset := redis_rate.NewLimiter(pipe)
	var full []*limits.Op
	for _, op := range ops {
		if op.Rate && op.N < 0 && op.Err == nil && op.Reset <= 0 && !refillsSoon(op) {
			reset.Reset(ctx, op.Key)
			full = append(full, op)
		}
	}
	if len(full) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			for _, op := range full {
				op.Err = err
			}
		}
	}
}

// refillsSoon reports whether a refund that filled a bucket may be left
// unwritten: what it would have given back the bucket refills by itself
// within 100 ms (the refund is under 1/600 of a per-minute limit), so
// deleting the bucket is not worth a round trip. Larger refunds are
// written.
func refillsSoon(op *limits.Op) bool {
	return time.Duration(-op.N)*op.Period/time.Duration(max(op.Max, 1)) < 100*time.Millisecond
}

// workers run a batch's rate calls, which block until the batch's pipeline
// returns. They live on, so their stacks have grown to what go-redis needs
// once (a fresh goroutine per call grew its stack every time: a tenth of
// the CPU a governed request costs here). A call goes to an idle worker
// or, when none is idle, to a new goroutine: never queued, since a queued
// call could wait behind workers that wait for it.
type workers struct {
	tasks chan func()
	once  sync.Once
}

func (w *workers) run(f func()) {
	w.once.Do(func() {
		w.tasks = make(chan func())
		for range 32 {
			go func() {
				for f := range w.tasks {
					f()
				}
			}()
		}
	})
	select {
	case w.tasks <- f:
	default:
		go f()
	}
}

// gather is the Scripter redis_rate runs its script through in a batch:
// each EvalSha is queued into the batch's pipeline, and the last of the
// expected calls sends the pipeline; every caller then reads its own
// answer. (The fallbacks go to the server directly.)
type gather struct {
	rdb  *goredis.Client
	pipe goredis.Pipeliner
	mu   sync.Mutex
	want int
	got  int
	once sync.Once
	done chan struct{}
}

func (g *gather) flush(ctx context.Context) {
	g.once.Do(func() {
		g.pipe.Exec(ctx) // errors are each command's
		close(g.done)
	})
}

func (g *gather) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *goredis.Cmd {
	g.mu.Lock()
	cmd := g.pipe.EvalSha(ctx, sha1, keys, args...)
	g.got++
	last := g.got == g.want
	g.mu.Unlock()
	if last {
		g.flush(ctx)
	}
	<-g.done
	return cmd
}

func (g *gather) Eval(ctx context.Context, script string, keys []string, args ...any) *goredis.Cmd {
	return g.rdb.Eval(ctx, script, keys, args...)
}

func (g *gather) EvalRO(ctx context.Context, script string, keys []string, args ...any) *goredis.Cmd {
	return g.rdb.EvalRO(ctx, script, keys, args...)
}

func (g *gather) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *goredis.Cmd {
	return g.rdb.EvalShaRO(ctx, sha1, keys, args...)
}

func (g *gather) ScriptExists(ctx context.Context, hashes ...string) *goredis.BoolSliceCmd {
	return g.rdb.ScriptExists(ctx, hashes...)
}

func (g *gather) ScriptLoad(ctx context.Context, script string) *goredis.StringCmd {
	return g.rdb.ScriptLoad(ctx, script)
}

func (g *gather) Del(ctx context.Context, keys ...string) *goredis.IntCmd {
	return g.rdb.Del(ctx, keys...)
}

// loadScripts loads the scripts a batch runs by hash.
func loadScripts(ctx context.Context, rdb *goredis.Client) error {
	for _, s := range []*goredis.Script{quotaScript, acquireScript} {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return err
		}
	}
	return nil
}

// Release implements limits.Backend.
func (l *Limits) Release(ctx context.Context, key, id string) error {
	return l.rdb.ZRem(ctx, key, id).Err()
}

var heldScript = goredis.NewScript(`
local t = redis.call("TIME")
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
return redis.call("ZCARD", KEYS[1])
`)

// Held implements limits.Backend.
func (l *Limits) Held(ctx context.Context, key string) (int64, error) {
	return heldScript.Run(ctx, l.rdb, []string{key}).Int64()
}

// Redact returns url without its password, for logs.
func Redact(url string) string {
	opt, err := goredis.ParseURL(url)
	if err != nil || opt.Password == "" {
		return url
	}
	return "redis://" + opt.Addr + "/" + strconv.Itoa(opt.DB)
}
