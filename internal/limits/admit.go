package limits

import (
	"context"
	"sync"
	"time"
)

// check is one limit an admission takes from: what it takes, once taken,
// is the ticket's to settle.
type check struct {
	taken
	rule *governed
	// op is what the backend is asked, and its answer.
	op Op
	// results
	remaining int64
	retry     time.Duration
	reset     time.Duration
}

// scratch is an admission's or a settlement's working memory, reused
// through a pool: both run on every governed request, and what they would
// allocate is garbage as soon as the backend has answered (the garbage
// collector's share of the tail latency is measured in bench/gateway).
type scratch struct {
	checks []check
	opv    []Op
	ops    []*Op
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// release clears what sc refers to and returns it to the pool.
func (sc *scratch) release() {
	clear(sc.checks)
	clear(sc.opv)
	clear(sc.ops)
	sc.checks, sc.opv, sc.ops = sc.checks[:0], sc.opv[:0], sc.ops[:0]
	scratchPool.Put(sc)
}

// Admit checks every rule that applies to req and takes what the request
// needs from each: all or nothing. It returns the ticket to settle when the
// request ends (nil when no rule applies) and the most restrictive windows
// for the response headers; over a limit, an *ExceededError.
//
// With a backend on the network (Redis) every check goes in one batch, so
// an admission costs one round trip however many rules apply.
func (s *Service) Admit(ctx context.Context, req Request) (*Ticket, Status, error) {
	rules, nrules := s.rules.Load().applicable(req.KeyID, req.TeamID, req.Model)
	if nrules == 0 {
		return nil, Status{}, nil
	}
	now := s.cfg.Now()
	sc := scratchPool.Get().(*scratch)
	defer sc.release()
	checks := sc.checks[:0]
	for _, r := range rules[:nrules] {
		if r.ConcurrentRequests > 0 {
			checks = append(checks, check{rule: r, taken: taken{dimension: ConcurrentRequests, limit: r.ConcurrentRequests, key: r.lease, n: 1}})
		}
		for _, q := range [...]dim{{TokensPerDay, r.TokensPerDay}, {TokensPerMonth, r.TokensPerMonth}} {
			if q.v > 0 {
				key, end := quotaKey(r.Rule, q.name, now)
				checks = append(checks, check{rule: r, taken: taken{dimension: q.name, limit: q.v, key: key, n: max(req.Tokens, 0), end: end}})
			}
		}
		if r.RequestsPerMinute > 0 {
			checks = append(checks, check{rule: r, taken: taken{dimension: RequestsPerMinute, limit: r.RequestsPerMinute, key: r.rpm, n: 1}})
		}
		if r.TokensPerMinute > 0 {
			checks = append(checks, check{rule: r, taken: taken{dimension: TokensPerMinute, limit: r.TokensPerMinute, key: r.tpm, n: max(req.Tokens, 0)}})
		}
	}
	sc.checks = checks
	var st Status
	refuse := func(c *check) (*Ticket, Status, error) {
		if s.cfg.Metrics != nil {
			s.cfg.Metrics.LimitsRefused(c.dimension)
		}
		w := &Window{Scope: c.rule.Scope, Subject: c.rule.Subject, Dimension: c.dimension, Limit: c.limit, Reset: c.retry}
		switch c.dimension {
		case RequestsPerMinute:
			st.Requests = w
		case TokensPerMinute, TokensPerDay, TokensPerMonth:
			st.Tokens = w
		}
		return nil, st, &ExceededError{Scope: c.rule.Scope, Subject: c.rule.Subject, Dimension: c.dimension, Limit: c.limit, Requested: c.n, RetryAfter: c.retry}
	}
	// A request larger than a limit can never fit: refused before
	// anything is taken, without Retry-After, and without a window in the
	// status — nothing was read, so there is no remaining count or reset
	// to report (a "remaining 0, reset 0s" would be false).
	for i := range checks {
		if c := &checks[i]; c.n > c.limit {
			c.retry = 0
			_, _, err := refuse(c)
			return nil, Status{}, err
		}
	}
	leaseID := req.ID
	for retried := false; ; retried = true {
		ops := sc.ops[:0]
		for i := range checks {
			c := &checks[i]
			c.op = c.take(leaseID, s.cfg.Lease)
			ops = append(ops, &c.op)
		}
		sc.ops = ops
		if b, ok := s.cfg.Backend.(Batcher); ok {
			// Every check in one round trip (Redis: one script call, which
			// also carries the settlements held back since the last one).
			b.Batch(ctx, ops)
		} else {
			for _, op := range ops {
				if RunOp(ctx, s.cfg.Backend, op); op.Err != nil || !op.OK {
					break // the rest were not taken (ok false, err nil)
				}
			}
		}
		var failed, refused *check
		for i := range checks {
			c := &checks[i]
			switch c.dimension {
			case ConcurrentRequests:
				// A lease frees when a request ends; a second is an honest
				// guess for a client to come back.
				c.retry = time.Second
			case TokensPerDay, TokensPerMonth:
				c.remaining, c.reset = max(c.limit-c.op.Value, 0), c.end.Sub(now)
				c.retry = c.reset
			default:
				c.remaining, c.retry, c.reset = c.op.Value, c.op.Retry, c.op.Reset
			}
			switch {
			case c.op.Err != nil:
				if failed == nil {
					failed = c
				}
			case c.op.OK:
			case refused == nil && (c.retry > 0 || c.dimension == ConcurrentRequests):
				refused = c
			}
		}
		if failed == nil && refused == nil {
			break
		}
		s.undo(ctx, checks, leaseID)
		if failed != nil {
			return s.backendFailed(failed.op.Err, st)
		}
		// A refusal may come from this replica's own settlements not yet
		// in the backend: the lease a client's previous request released,
		// still held back or on its way in another request's call. Once
		// they have landed, one more try.
		if d, ok := s.cfg.Backend.(Deferrer); ok && !retried && d.Sync(ctx) {
			continue
		}
		return refuse(refused)
	}
	t := &Ticket{s: s, reserved: req.Tokens, leaseID: leaseID, taken: make([]taken, 0, len(checks))}
	// The most restrictive window of each kind for the headers (built
	// once chosen: a request on the hot path).
	var rq, tok *check
	for i := range checks {
		c := &checks[i]
		if c.op.OK {
			t.taken = append(t.taken, c.taken)
		}
		switch c.dimension {
		case RequestsPerMinute:
			if rq == nil || c.remaining < rq.remaining {
				rq = c
			}
		case TokensPerMinute:
			if tok == nil || tok.dimension != TokensPerMinute || c.remaining < tok.remaining {
				tok = c
			}
		case TokensPerDay, TokensPerMonth:
			if tok == nil || (tok.dimension != TokensPerMinute && c.remaining < tok.remaining) {
				tok = c
			}
		}
	}
	window := func(c *check) *Window {
		if c == nil {
			return nil
		}
		return &Window{Scope: c.rule.Scope, Subject: c.rule.Subject, Dimension: c.dimension, Limit: c.limit, Remaining: c.remaining, Reset: c.reset}
	}
	st.Requests, st.Tokens = window(rq), window(tok)
	return t, st, nil
}

// backendFailed applies the fail-open or fail-closed setting.
func (s *Service) backendFailed(err error, st Status) (*Ticket, Status, error) {
	mode := "closed"
	if s.cfg.FailOpen {
		mode = "open"
	}
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.LimitsBackendError(mode)
	}
	now := time.Now().UnixNano()
	if last := s.lastWarn.Load(); now-last > int64(10*time.Second) && s.lastWarn.CompareAndSwap(last, now) {
		s.cfg.Log.Warn("limits: the limits store failed; requests are "+map[bool]string{true: "admitted (fail-open)", false: "refused (fail-closed)"}[s.cfg.FailOpen], "err", err)
	}
	if s.cfg.FailOpen {
		return nil, Status{}, nil
	}
	return nil, Status{}, &UnavailableError{Err: err}
}

// undo gives back what a refused admission's checks took.
func (s *Service) undo(ctx context.Context, checks []check, leaseID string) {
	var ops []*Op
	for i := range checks {
		c := &checks[i]
		// (A per-minute bucket nothing was taken from has nothing to get back.)
		if c.op.Err != nil || !c.op.OK || c.op.Rate && c.n == 0 {
			continue
		}
		op := c.adjust(-c.n, leaseID)
		ops = append(ops, &op)
	}
	runOps(ctx, s.cfg.Backend, ops)
}
