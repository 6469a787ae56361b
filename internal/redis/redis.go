// Package redis is the Redis adapter of Sovereign's limits: the state that
// several API replicas share so that a limit is one limit, not one per
// replica. Rate buckets are GCRA buckets in github.com/go-redis/redis_rate's
// state and arithmetic (limits.GCRA's on the Go side); budgets are
// counters and concurrency leases sorted sets. Every operation runs in one
// script (batchScript): a request's checks, and the settlements of
// requests that ended since the last one, go to Redis in one call of it,
// so a governed request costs one round trip; a single operation is a
// batch of one.
package redis

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sovereign-ai/sovereign/internal/limits"
)

// Limits implements limits.Backend on Redis.
type Limits struct {
	rdb *goredis.Client

	// held are settlements waiting for the next batch (limits.Deferrer);
	// deferred counts the settlements held back since the sweeper last
	// looked.
	mu       sync.Mutex
	held     []*limits.Op
	dones    []func()
	deferred int
	// inflight are the calls carrying settlements now (Sync waits for
	// them).
	inflight map[*carried]struct{}
	// kick wakes the sweeper, which sends what no admission has carried
	// off every deferWindow while settlements come, and sleeps when none
	// do; stop ends it, and it closes swept when it has.
	kick, stop, swept chan struct{}
	// rateKeys maps a bucket to its redis_rate key (rateKey).
	rateKeys sync.Map
}

// Settlements wait at most about deferWindow for an admission to carry
// them, and at most maxHeld operations wait: under load nearly every
// settlement rides on the next admission's call, and idle, a concurrency
// lease or a refund reaches Redis within a few milliseconds of its
// request's end. One sweeper on a period, rather than a timer per
// settlement: arming a timer wakes the runtime's poller, which cost about
// 15 % of the client CPU of an admission and settlement here
// (BenchmarkAdmitSettleThreeScopes).
const (
	deferWindow = 2 * time.Millisecond
	maxHeld     = 256
)

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
	l := &Limits{rdb: rdb, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), swept: make(chan struct{})}
	go l.sweep()
	return l, nil
}

// Close sends the settlements held back, then closes the connections.
func (l *Limits) Close() error {
	close(l.stop)
	<-l.swept // not in the middle of sending some
	l.flush(context.Background())
	return l.rdb.Close()
}

// sweep sends the settlements no admission carried off, every deferWindow
// for as long as settlements come.
func (l *Limits) sweep() {
	defer close(l.swept)
	for {
		select {
		case <-l.stop:
			return
		case <-l.kick:
		}
		for busy := true; busy; {
			select {
			case <-l.stop:
				return
			case <-time.After(deferWindow):
			}
			l.mu.Lock()
			busy, l.deferred = l.deferred > 0, 0
			l.mu.Unlock()
			l.flush(context.Background())
		}
	}
}

// Defer implements limits.Deferrer.
func (l *Limits) Defer(ops []*limits.Op, done func()) {
	if len(ops) == 0 {
		done()
		return
	}
	l.mu.Lock()
	l.held = append(l.held, ops...)
	l.dones = append(l.dones, done)
	l.deferred++
	full := len(l.held) >= maxHeld
	l.mu.Unlock()
	if full {
		l.flush(context.Background())
		return
	}
	select {
	case l.kick <- struct{}{}:
	default: // the sweeper is awake, or already kicked
	}
}

// carried are the settlements one call took from the held ones; landed
// closes once the call has returned.
type carried struct {
	ops    []*limits.Op
	dones  []func()
	landed chan struct{}
}

// take hands over the settlements held back (nil: none), as in flight.
func (l *Limits) take() *carried {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.held) == 0 {
		return nil
	}
	c := &carried{ops: l.held, dones: l.dones, landed: make(chan struct{})}
	l.held, l.dones = nil, nil
	if l.inflight == nil {
		l.inflight = map[*carried]struct{}{}
	}
	l.inflight[c] = struct{}{}
	return c
}

// land ends c's flight.
func (l *Limits) land(c *carried) {
	for _, f := range c.dones {
		f()
	}
	l.mu.Lock()
	delete(l.inflight, c)
	l.mu.Unlock()
	close(c.landed)
}

// flush sends the settlements held back, if any, by themselves.
func (l *Limits) flush(ctx context.Context) {
	if c := l.take(); c != nil {
		l.run(ctx, c.ops)
		l.land(c)
	}
}

// Sync implements limits.Deferrer: it sends what is held and waits for
// the calls already carrying settlements.
func (l *Limits) Sync(ctx context.Context) bool {
	l.mu.Lock()
	var flying []chan struct{}
	for c := range l.inflight {
		flying = append(flying, c.landed)
	}
	pending := len(flying) > 0 || len(l.held) > 0
	l.mu.Unlock()
	l.flush(context.WithoutCancel(ctx))
	for _, landed := range flying {
		select {
		case <-landed:
		case <-ctx.Done():
			return pending
		}
	}
	return pending
}

// Ping checks the server answers.
func (l *Limits) Ping(ctx context.Context) error { return l.rdb.Ping(ctx).Err() }

// Rate implements limits.Backend: a batch of one operation, through the
// batch script's GCRA — the only one on Redis, so that a bucket answers
// the same whether an admission's batch or a single call takes from it.
func (l *Limits) Rate(ctx context.Context, key string, limit int64, period time.Duration, n int64, force bool) (limits.RateResult, error) {
	if limit <= 0 {
		return limits.RateResult{Allowed: true}, nil // as limits.GCRA: no limit
	}
	op := &limits.Op{Rate: true, Key: key, Max: limit, Period: period, N: n, Force: force}
	l.Batch(ctx, []*limits.Op{op})
	return limits.RateResult{Allowed: op.OK, Remaining: op.Value, RetryAfter: op.Retry, ResetAfter: op.Reset}, op.Err
}

// Quota implements limits.Backend: a batch of one operation.
func (l *Limits) Quota(ctx context.Context, key string, max, n int64, force bool, end time.Time) (bool, int64, error) {
	op := &limits.Op{Key: key, Max: max, N: n, Force: force, End: end}
	l.Batch(ctx, []*limits.Op{op})
	return op.OK, op.Value, op.Err
}

// Acquire implements limits.Backend: a batch of one operation.
func (l *Limits) Acquire(ctx context.Context, key, id string, max int64, lease time.Duration) (bool, int64, error) {
	op := &limits.Op{Lease: true, Key: key, ID: id, Max: max, TTL: lease}
	l.Batch(ctx, []*limits.Op{op})
	return op.OK, op.Value, op.Err
}

// batchScript runs a batch's operations in order, in one call: KEYS[i] is
// operation i's key, ARGV[1] is a MessagePack array of each operation's
// kind and numeric arguments in the same order, and ARGV[2:] are the lease
// ids of the lease and release operations, in order (as they are: an id
// may hold any byte). It answers a MessagePack array of four numbers per
// operation.
//
//   - 1 (rate) limit period_seconds n force: a GCRA bucket, redis_rate's own
//     arithmetic and state (the same keys, the theoretical arrival time as
//     seconds since 2017 in a string), so a bucket written by an earlier
//     version, which charged through redis_rate, reads the same.
//     TestGCRAParity holds this, redis_rate itself and limits.GCRA (the
//     in-memory backend's) to the same answers. n > 0 without force is
//     redis_rate's AllowN, with force its AllowAtMost; n < 0 refunds, and a
//     refund that leaves the bucket full deletes it (redis_rate writes no
//     such refund). Answer: allowed (1/0), remaining, retry after and reset
//     after (µs, -1: none).
//   - 2 (budget) n max force end_unix: a counter expiring at end_unix,
//     to which n is added unless n > 0 without force would take it above
//     max (then nothing is). Answer: allowed, value.
//   - 3 (lease) max ttl_ms, and an id: a lease in a sorted set scored by
//     expiry (unix ms, the server's clock), taken when fewer than max are
//     held. Expired leases are dropped only when the set looks full (they
//     cannot refuse a request below that, and the drop is most of a
//     lease's cost). Answer: ok, held.
//   - 4 (release), and an id: a release (ZREM). Answer: removed.
//
// Why one script, and why it reads every bucket and budget with one MGET
// and writes each once at the end: Redis spends most of a governed
// request's time entering scripts and dispatching their commands, not in
// the GCRA arithmetic (bench/README.md), and a batch often touches a key
// twice (a settlement it carries refunds the bucket its admission takes
// from). Why the numbers travel as one MessagePack string each way: as
// lists, each number is a value the client boxes on the way out and
// unboxes on the way in — about 2.5 KB of garbage a request, and a
// client's garbage collections are part of its tail latency
// (bench/gateway) — while Redis's own cmsgpack decodes and encodes them in
// C, for less than receiving and answering the lists costs it (splitting
// a text string in Lua cost it 10 µs a call more; see bench/README.md).
var batchScript = goredis.NewScript(`
local t = redis.call("TIME")
local now = (t[1] - 1483228800) + (t[2] / 1000000)
local nowms = t[1] * 1000 + math.floor(t[2] / 1000)
local args = cmsgpack.unpack(ARGV[1])
local nid = 2
-- Every bucket and budget the batch touches, read at once.
local reads, seen = {}, {}
local a = 1
for i = 1, #KEYS do
  local kind = args[a]
  if kind <= 2 and not seen[KEYS[i]] then
    seen[KEYS[i]] = true
    reads[#reads+1] = KEYS[i]
  end
  if kind <= 2 then a = a + 5 elseif kind == 3 then a = a + 3 else a = a + 1 end
end
local val, dirty, ttl, at, order = {}, {}, {}, {}, {}
if #reads > 0 then
  local got = redis.call("MGET", unpack(reads))
  for j = 1, #reads do val[reads[j]] = got[j] and tonumber(got[j]) end
end
-- put sets key's state to v, expiring e seconds from now or, when abs,
-- at e (unix seconds).
local function put(key, v, e, abs)
  if not dirty[key] then dirty[key] = true; order[#order+1] = key end
  val[key], ttl[key], at[key] = v, e, abs
end
local out = {}
a = 1
for i = 1, #KEYS do
  local key, kind = KEYS[i], args[a]
  local ok, value, retry, reset = 1, 0, -1, -1
  if kind == 1 then
    local limit, period, cost, force = args[a+1], args[a+2], args[a+3], args[a+4] == 1
    a = a + 5
    local ei = period / limit
    local burst = ei * limit
    local tat = val[key]
    if tat then tat = math.max(tat, now) else tat = now end
    if force and cost > 0 then
      local left = (now - (tat - burst)) / ei
      if left < 1 then
        ok, reset = 0, (tat - now) * 1000000
      else
        local take = cost
        if left < cost then take, ok, left = left, 0, 0 else left = left - cost end
        local new_tat = tat + ei * take
        reset = (new_tat - now) * 1000000
        put(key, new_tat, math.ceil(new_tat - now))
        value = left
      end
    else
      local new_tat = tat + ei * cost
      local diff = now - (new_tat - burst)
      if diff < 0 then
        ok, retry, reset = 0, -diff * 1000000, (tat - now) * 1000000
      else
        value, reset = diff / ei, (new_tat - now) * 1000000
        if new_tat > now then
          if cost ~= 0 then put(key, new_tat, math.ceil(new_tat - now)) end
        elseif cost < 0 then
          put(key, false, 0)
        end
      end
    end
  elseif kind == 2 then
    local n, max = args[a+1], args[a+2]
    local force = args[a+3] == 1
    local exp = args[a+4]
    a = a + 5
    value = val[key] or 0
    if n > 0 and not force and value + n > max then
      ok = 0
    elseif n ~= 0 then
      value = value + n
      if value < 0 then value = 0 end
      put(key, value, exp, true)
    end
  elseif kind == 3 then
    local id, max, ttl = ARGV[nid], args[a+1], args[a+2]
    nid, a = nid + 1, a + 3
    value = redis.call("ZCARD", key)
    if value >= max then
      redis.call("ZREMRANGEBYSCORE", key, "-inf", nowms)
      value = redis.call("ZCARD", key)
    end
    if value >= max then
      ok = 0
    else
      redis.call("ZADD", key, nowms + ttl, id)
      redis.call("PEXPIRE", key, ttl)
      value = value + 1
    end
  else
    value = redis.call("ZREM", key, ARGV[nid])
    nid, a = nid + 1, a + 1
  end
  local o = #out
  out[o+1], out[o+2], out[o+3], out[o+4] = ok, value, retry, reset
end
-- Each key written once, with its final state: a bucket with its expiry
-- (deleted when refunded to full), a budget expiring with its window.
for _, key in ipairs(order) do
  local v = val[key]
  if not v then
    redis.call("DEL", key)
  elseif at[key] then
    redis.call("SET", key, v, "EXAT", ttl[key])
  else
    redis.call("SET", key, v, "EX", ttl[key])
  end
end
return cmsgpack.pack(out)
`)

// Batch implements limits.Batcher: every operation in one call of
// batchScript, one round trip. The operations run in order, each as it
// would through Rate, Quota, Acquire and Release (each a batch of one);
// Redis runs a script whole, so no other client's operation comes between
// them.
//
// The settlements held back (Defer) run first, in the same call: a
// settlement is not the admitting request's to cancel, so then the call
// ignores ctx's cancellation (the client's timeouts still bound it).
func (l *Limits) Batch(ctx context.Context, ops []*limits.Op) {
	c := l.take()
	if c == nil {
		l.run(ctx, ops)
		return
	}
	l.run(context.WithoutCancel(ctx), append(c.ops, ops...))
	l.land(c)
}

// run runs ops in one call of batchScript.
func (l *Limits) run(ctx context.Context, ops []*limits.Op) {
	b := batchBufs.Get().(*batchBuf)
	defer batchBufs.Put(b)
	keys, ids := b.keys[:0], b.ids[:1]
	args, nargs := openArray(b.args[:0]), 0
	for _, op := range ops {
		switch {
		case op.Rate:
			// redis_rate's key: buckets written before are read on.
			keys = append(keys, l.rateKey(op.Key))
			args = appendInt(args, 1)
			args = appendInt(args, op.Max)
			args = appendFloat(args, op.Period.Seconds())
			args = appendInt(args, op.N)
			args = appendInt(args, flag(op.Force))
			nargs += 5
		case op.Release:
			keys, ids = append(keys, op.Key), append(ids, op.ID)
			args = appendInt(args, 4)
			nargs++
		case op.Lease:
			keys, ids = append(keys, op.Key), append(ids, op.ID)
			args = appendInt(args, 3)
			args = appendInt(args, op.Max)
			args = appendInt(args, op.TTL.Milliseconds())
			nargs += 3
		default:
			keys = append(keys, op.Key)
			args = appendInt(args, 2)
			args = appendInt(args, op.N)
			args = appendInt(args, op.Max)
			args = appendInt(args, flag(op.Force))
			args = appendInt(args, op.End.Unix())
			nargs += 5
		}
	}
	closeArray(args, 0, nargs)
	// The numbers go as bytes: the client writes them before Run returns,
	// and b is not reused before then.
	ids[0] = args
	b.keys, b.args, b.ids = keys, args, ids
	// Run sends the script by hash and its text only when Redis has
	// forgotten it (a restart).
	out, err := batchScript.Run(ctx, l.rdb, keys, ids...).Text()
	clear(b.keys) // the pool holds no strings
	clear(b.ids)
	v := b.vals[:0]
	if err == nil {
		v, err = readNumbers(out, v)
	}
	b.vals = v
	if err == nil && len(v) != 4*len(ops) {
		err = fmt.Errorf("redis: %d values for %d operations", len(v), len(ops))
	}
	for i, op := range ops {
		if err != nil {
			op.Err = err
			continue
		}
		ok, value, retry, reset := v[4*i] == 1, v[4*i+1], time.Duration(v[4*i+2])*time.Microsecond, time.Duration(v[4*i+3])*time.Microsecond
		switch {
		case op.Rate && op.Force && op.N > 0:
			op.OK, op.Value, op.Reset = ok, value, max(reset, 0)
		case op.Rate && op.N < 0 && reset <= 0:
			// Refunded to full.
			op.OK, op.Value, op.Reset = true, op.Max, 0
		case op.Rate:
			op.OK, op.Value, op.Reset = ok || op.N <= 0, value, max(reset, 0)
			if !op.OK {
				op.Retry = retry
			}
		default:
			op.OK, op.Value = ok || op.Release, value
		}
	}
}

// batchBuf is what run builds a call in and reads its answer into,
// pooled: a call per governed request.
type batchBuf struct {
	keys []string
	args []byte
	ids  []any // the numbers, then the lease ids
	vals []int64
}

var batchBufs = sync.Pool{New: func() any { return &batchBuf{ids: make([]any, 1)} }}

// rateKey is redis_rate's name of the bucket key: built once per bucket
// (the buckets are the rules', few and long-lived), not on every request.
func (l *Limits) rateKey(key string) string {
	if k, ok := l.rateKeys.Load(key); ok {
		return k.(string)
	}
	k := rateKeyPrefix + key
	l.rateKeys.Store(key, k)
	return k
}

// rateKeyPrefix is what redis_rate puts before a bucket's name.
const rateKeyPrefix = "rate:"

func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// loadScripts loads the scripts, which run by hash.
func loadScripts(ctx context.Context, rdb *goredis.Client) error {
	for _, s := range []*goredis.Script{batchScript, heldScript} {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return err
		}
	}
	return nil
}

// Release implements limits.Backend: a batch of one operation.
func (l *Limits) Release(ctx context.Context, key, id string) error {
	op := &limits.Op{Lease: true, Release: true, Key: key, ID: id}
	l.Batch(ctx, []*limits.Op{op})
	return op.Err
}

var heldScript = goredis.NewScript(`
local t = redis.call("TIME")
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
return redis.call("ZCARD", KEYS[1])
`)

// Held implements limits.Backend.
func (l *Limits) Held(ctx context.Context, key string) (int64, error) {
	l.flush(context.WithoutCancel(ctx)) // what this replica settled comes first
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
