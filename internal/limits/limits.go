// Package limits enforces rate limits and quotas: requests per minute,
// tokens per minute, concurrent requests, tokens per day and a monthly token
// budget, each set per key, per team and per model. Every rule that applies
// to a request is checked — a key's, its team's and the model's — so a key
// with a team can never bypass the team's budget.
//
// Rates are GCRA buckets (a limit per minute with a burst of the same
// size); daily and monthly budgets are fixed windows in UTC; concurrency is
// a set of leases. Where the state lives is a Backend: in memory on one
// node (Memory), or Redis for several (internal/redis), so that any number
// of replicas share one limit.
//
// Tokens are reserved when a request is admitted, from its prompt and its
// output limit, and settled to the real usage when it ends: a refund when
// it used less, a further charge when it used more.
package limits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sovereign-ai/sovereign/internal/refresh"
)

// Scopes a rule applies to.
const (
	ScopeKey   = "key"
	ScopeTeam  = "team"
	ScopeModel = "model"
)

// Dimensions a rule limits.
const (
	RequestsPerMinute  = "requests_per_minute"
	TokensPerMinute    = "tokens_per_minute"
	ConcurrentRequests = "concurrent_requests"
	TokensPerDay       = "tokens_per_day"
	TokensPerMonth     = "tokens_per_month"
)

// Rule is the limits of one key, team or model. A zero (or absent) value
// is no limit in that dimension.
type Rule struct {
	Object             string `json:"object" yaml:"-"`
	Scope              string `json:"scope" yaml:"scope"`
	Subject            string `json:"subject" yaml:"subject"`
	RequestsPerMinute  int64  `json:"requests_per_minute,omitempty" yaml:"requests_per_minute"`
	TokensPerMinute    int64  `json:"tokens_per_minute,omitempty" yaml:"tokens_per_minute"`
	ConcurrentRequests int64  `json:"concurrent_requests,omitempty" yaml:"concurrent_requests"`
	TokensPerDay       int64  `json:"tokens_per_day,omitempty" yaml:"tokens_per_day"`
	TokensPerMonth     int64  `json:"tokens_per_month,omitempty" yaml:"tokens_per_month"`
	// Source is "config" for rules from the configuration file and "api"
	// for rules set through the admin API (which take precedence).
	Source    string `json:"source" yaml:"-"`
	UpdatedAt int64  `json:"updated_at,omitempty" yaml:"-"`
}

// Validate checks a rule's scope, subject and values; the error names the
// field.
func (r Rule) Validate() error {
	switch r.Scope {
	case ScopeKey, ScopeTeam, ScopeModel:
	default:
		return &InvalidError{Param: "scope", Message: fmt.Sprintf("scope must be key, team or model, not %q", r.Scope)}
	}
	if r.Subject == "" || len(r.Subject) > 256 {
		return &InvalidError{Param: "subject", Message: "subject (the key id, team id or model id) must be 1 to 256 characters"}
	}
	for _, d := range r.dims() {
		if d.v < 0 {
			return &InvalidError{Param: d.name, Message: d.name + " must be zero (no limit) or positive"}
		}
	}
	return nil
}

type dim struct {
	name string
	v    int64
}

func (r Rule) dims() []dim {
	return []dim{{RequestsPerMinute, r.RequestsPerMinute}, {TokensPerMinute, r.TokensPerMinute},
		{ConcurrentRequests, r.ConcurrentRequests}, {TokensPerDay, r.TokensPerDay}, {TokensPerMonth, r.TokensPerMonth}}
}

// InvalidError is a rule that cannot be stored; Param names the field.
type InvalidError struct{ Param, Message string }

func (e *InvalidError) Error() string { return e.Message }

// ErrNotFound is a rule that does not exist.
var ErrNotFound = errors.New("limit rule not found")

// Store keeps the rules set through the API.
type Store interface {
	PutLimitRule(ctx context.Context, r Rule) error
	DeleteLimitRule(ctx context.Context, scope, subject string) error
	ListLimitRules(ctx context.Context) ([]Rule, error)
}

// RateResult is a GCRA bucket's answer.
type RateResult struct {
	Allowed bool
	// Remaining is what may still be taken now.
	Remaining int64
	// RetryAfter is how long until the refused amount would fit; ResetAfter
	// how long until the bucket is full again.
	RetryAfter, ResetAfter time.Duration
}

// Backend holds the limits' state. Each call is one atomic operation (one
// round trip for Redis).
type Backend interface {
	// Rate takes n from the GCRA bucket key, which refills limit per
	// period with a burst of limit; a negative n refunds. Refused (nothing
	// taken) when n does not fit; with force, n is taken whatever the
	// bucket holds (settling a request that used more than it reserved),
	// as far as the backend can.
	Rate(ctx context.Context, key string, limit int64, period time.Duration, n int64, force bool) (RateResult, error)
	// Quota adds n to the counter key, which expires at end, unless that
	// would take it above max (n > 0 without force: refused, nothing
	// added). It returns the counter's value after.
	Quota(ctx context.Context, key string, max, n int64, force bool, end time.Time) (allowed bool, used int64, err error)
	// Acquire takes a lease named id in the set key when fewer than max
	// are held (expired leases do not count); it returns how many are held
	// after.
	Acquire(ctx context.Context, key, id string, max int64, lease time.Duration) (ok bool, held int64, err error)
	// Release ends the lease id.
	Release(ctx context.Context, key, id string) error
	// Held is how many leases of key are held.
	Held(ctx context.Context, key string) (int64, error)
}

// Op is one operation of a batch: Rate's (Rate: limit Max per Period),
// Quota's (the default), Acquire's (Lease) or Release's (Lease and
// Release).
type Op struct {
	Rate, Lease, Release bool
	Key, ID              string
	Max, N               int64
	Force                bool
	Period               time.Duration
	End                  time.Time
	TTL                  time.Duration
	// OK, Value (a rate's remaining, a budget's use after, or the leases
	// held after), Retry and Reset (rates) and Err are the results.
	OK           bool
	Value        int64
	Retry, Reset time.Duration
	Err          error
}

// Batcher is a Backend that runs several operations, in order, in one
// round trip (Redis: one script call). Each operation answers as it would
// through Rate, Quota, Acquire and Release; a batch need not be atomic as
// a whole, and admission does not rely on it (it gives back what a refused
// request took).
type Batcher interface {
	Batch(ctx context.Context, ops []*Op)
}

// Deferrer is a Batcher that may hold a settlement's operations back and
// run them at the head of its next batch — usually the next request's
// admission, so that a request costs one round trip, not two — or shortly
// after when no batch comes. Every read of the state runs what is held
// first. done runs once the operations have.
type Deferrer interface {
	Batcher
	Defer(ops []*Op, done func())
	// Sync returns once every settlement deferred before it was called
	// has reached the backend; it reports whether any had not.
	Sync(ctx context.Context) bool
}

// runOps runs ops on b: batched when it can, one by one otherwise.
func runOps(ctx context.Context, b Backend, ops []*Op) {
	if len(ops) == 0 {
		return
	}
	if bb, ok := b.(Batcher); ok {
		bb.Batch(ctx, ops)
		return
	}
	for _, op := range ops {
		RunOp(ctx, b, op)
	}
}

// RunOp runs one operation through the Backend's own methods (what a
// Batcher falls back to).
func RunOp(ctx context.Context, b Backend, op *Op) {
	switch {
	case op.Rate:
		var res RateResult
		res, op.Err = b.Rate(ctx, op.Key, op.Max, op.Period, op.N, op.Force)
		op.OK, op.Value, op.Retry, op.Reset = res.Allowed, res.Remaining, res.RetryAfter, res.ResetAfter
	case op.Release:
		op.OK, op.Err = true, b.Release(ctx, op.Key, op.ID)
	case op.Lease:
		op.OK, op.Value, op.Err = b.Acquire(ctx, op.Key, op.ID, op.Max, op.TTL)
	default:
		op.OK, op.Value, op.Err = b.Quota(ctx, op.Key, op.Max, op.N, op.Force, op.End)
	}
}

// ExceededError is a request over a limit: 429 rate_limit_exceeded, or
// quota_exceeded for a daily or monthly budget.
type ExceededError struct {
	Scope, Subject, Dimension string
	Limit                     int64
	Requested                 int64
	// RetryAfter is when the request would fit (0: it never will, being
	// larger than the limit).
	RetryAfter time.Duration
}

// Quota reports whether the exceeded limit is a budget (a day's or a
// month's tokens) rather than a rate.
func (e *ExceededError) Quota() bool {
	return e.Dimension == TokensPerDay || e.Dimension == TokensPerMonth
}

func (e *ExceededError) Error() string {
	what := fmt.Sprintf("the %s %s's limit of %d %s", e.Scope, e.Subject, e.Limit, label(e.Dimension))
	if e.RetryAfter <= 0 {
		return fmt.Sprintf("this request needs %d, more than %s allows at all; lower max_tokens or the input", e.Requested, what)
	}
	return fmt.Sprintf("%s is reached; retry after %s", what, e.RetryAfter.Round(time.Millisecond))
}

func label(dimension string) string {
	switch dimension {
	case RequestsPerMinute:
		return "requests per minute"
	case TokensPerMinute:
		return "tokens per minute"
	case ConcurrentRequests:
		return "concurrent requests"
	case TokensPerDay:
		return "tokens per day (UTC)"
	case TokensPerMonth:
		return "tokens per month (UTC)"
	}
	return dimension
}

// UnavailableError is a failing backend under fail-closed.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string {
	return "rate limits cannot be checked right now (their store is unavailable); retry shortly"
}

// Unwrap returns the backend's error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Request is what admission needs to know of a request.
type Request struct {
	ID, KeyID, TeamID, Model string
	// Tokens is the reservation: the prompt's estimated tokens plus the
	// output limit.
	Tokens int64
}

// Window is one limit's state for the x-ratelimit headers and GET
// /v1/limits.
type Window struct {
	Scope, Subject, Dimension string
	Limit, Remaining          int64
	// Reset is how long until the limit is back to its full allowance.
	Reset time.Duration
}

// Status is the most restrictive request and token windows of an
// admission (nil: no such limit applies).
type Status struct {
	Requests, Tokens *Window
}

// Metrics counts what the service cannot do as asked.
type Metrics interface {
	// LimitsBackendError counts a backend failure and what was done
	// ("open": allowed, "closed": refused).
	LimitsBackendError(mode string)
	// LimitsUnsettled counts tokens a request used beyond its reservation
	// that the backend could not charge.
	LimitsUnsettled(tokens int64)
	// LimitsRefused counts a refused request by dimension.
	LimitsRefused(dimension string)
}

// Config configures a Service.
type Config struct {
	Backend Backend
	// Store keeps API-set rules (nil: configuration rules only).
	Store Store
	// Rules are the configuration file's rules.
	Rules []Rule
	// FailOpen admits requests when the backend fails (default: refuse
	// them with 503).
	FailOpen bool
	// Refresh is how often rules are re-read from the store, so rules set
	// through another replica apply here (default 2 s).
	Refresh time.Duration
	// Lease bounds a concurrency lease, in case a server dies holding it
	// (default 15 minutes, beyond any request's timeout).
	Lease   time.Duration
	Metrics Metrics
	Log     *slog.Logger
	Now     func() time.Time
}

// Service admits requests under the rules.
type Service struct {
	cfg   Config
	rules atomic.Pointer[ruleSet]
	mu    sync.Mutex // serializes reloads
	loop  *refresh.Loop
	// lastWarn rate-limits backend error logs (unix nanoseconds).
	lastWarn atomic.Int64
}

type ruleSet struct {
	byKey   map[ruleID]*governed
	loaded  time.Time
	list    []Rule
	anyRule bool
}

// governed is a rule in force with the keys of its state, built once per
// load rather than on every request.
type governed struct {
	Rule
	lease, rpm, tpm string
}

func newGoverned(r Rule) *governed {
	base := r.Scope + ":" + r.Subject
	return &governed{Rule: r, lease: leaseBase + base,
		rpm: rateBase + base + ":" + RequestsPerMinute, tpm: rateBase + base + ":" + TokensPerMinute}
}

// ruleID names a rule: a struct, so that looking one up builds no string
// (three lookups on every request).
type ruleID struct{ scope, subject string }

// New returns a service with the configuration's rules loaded and, with a
// store, the stored ones, refreshed in the background until Close.
func New(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Backend == nil {
		cfg.Backend = NewMemory(nil)
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 2 * time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 15 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	for i, r := range cfg.Rules {
		if err := r.Validate(); err != nil {
			var inv *InvalidError
			errors.As(err, &inv)
			return nil, fmt.Errorf("limits[%d].%s: %s", i, inv.Param, inv.Message)
		}
	}
	s := &Service{cfg: cfg}
	if err := s.Reload(ctx); err != nil {
		return nil, err
	}
	if cfg.Store != nil {
		s.loop = refresh.Every(cfg.Refresh, "limits", cfg.Log, s.Reload)
	}
	return s, nil
}

// Close stops the background refresh.
func (s *Service) Close() { s.loop.Stop() }

// Reload reads the rules again: configuration rules, overridden by stored
// ones for the same scope and subject.
func (s *Service) Reload(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := &ruleSet{byKey: map[ruleID]*governed{}, loaded: s.cfg.Now()}
	for _, r := range s.cfg.Rules {
		r.Source, r.Object = "config", "limit_rule"
		rs.byKey[ruleID{r.Scope, r.Subject}] = newGoverned(r)
	}
	if s.cfg.Store != nil {
		stored, err := s.cfg.Store.ListLimitRules(ctx)
		if err != nil {
			return err
		}
		for _, r := range stored {
			r.Source, r.Object = "api", "limit_rule"
			rs.byKey[ruleID{r.Scope, r.Subject}] = newGoverned(r)
		}
	}
	for _, g := range rs.byKey {
		rs.list = append(rs.list, g.Rule)
	}
	sort.Slice(rs.list, func(i, j int) bool {
		if rs.list[i].Scope != rs.list[j].Scope {
			return rs.list[i].Scope < rs.list[j].Scope
		}
		return rs.list[i].Subject < rs.list[j].Subject
	})
	rs.anyRule = len(rs.list) > 0
	s.rules.Store(rs)
	return nil
}

// Rules lists every rule in force.
func (s *Service) Rules() []Rule { return append([]Rule(nil), s.rules.Load().list...) }

// Rule returns the rule in force for scope and subject.
func (s *Service) Rule(scope, subject string) (Rule, bool) {
	g, ok := s.rules.Load().byKey[ruleID{scope, subject}]
	if !ok {
		return Rule{}, false
	}
	return g.Rule, true
}

// Put stores a rule through the API and applies it here at once (other
// replicas within the refresh interval).
func (s *Service) Put(ctx context.Context, r Rule) (Rule, error) {
	if err := r.Validate(); err != nil {
		return r, err
	}
	if s.cfg.Store == nil {
		return r, errors.New("limits: no store for rules")
	}
	r.UpdatedAt = s.cfg.Now().Unix()
	if err := s.cfg.Store.PutLimitRule(ctx, r); err != nil {
		return r, err
	}
	r.Source, r.Object = "api", "limit_rule"
	return r, s.Reload(ctx)
}

// Delete removes an API-set rule (a configuration rule for the same
// subject applies again).
func (s *Service) Delete(ctx context.Context, scope, subject string) error {
	if s.cfg.Store == nil {
		return ErrNotFound
	}
	if err := s.cfg.Store.DeleteLimitRule(ctx, scope, subject); err != nil {
		return err
	}
	return s.Reload(ctx)
}

// applicable returns the rules that govern req: its key's, its team's and
// its model's.
func (rs *ruleSet) applicable(keyID, teamID, model string) (out [3]*governed, n int) {
	if !rs.anyRule {
		return out, 0
	}
	for _, k := range [...]ruleID{{ScopeKey, keyID}, {ScopeTeam, teamID}, {ScopeModel, model}} {
		if g, ok := rs.byKey[k]; ok && k.subject != "" {
			out[n] = g
			n++
		}
	}
	return out, n
}

// Governed reports whether any rule applies to a request of this key,
// team and model (cheap: no backend call).
func (s *Service) Governed(keyID, teamID, model string) bool {
	_, n := s.rules.Load().applicable(keyID, teamID, model)
	return n > 0
}

// Ticket is an admitted request's reservation, settled once it ends.
type Ticket struct {
	s        *Service
	reserved int64
	// taken lists what was taken, to settle.
	taken   []taken
	leaseID string
	settled atomic.Bool
}

// taken is one thing an admission took: from a per-minute bucket, a
// budget or a set of leases (by dimension).
type taken struct {
	dimension string
	key       string
	limit     int64
	n         int64
	end       time.Time // budgets: when the window ends
}

const (
	rateBase  = "sov:rate:"
	quotaBase = "sov:quota:"
	leaseBase = "sov:lease:"
)

func dayEnd(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

func monthEnd(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
}

func quotaKey(r Rule, dimension string, now time.Time) (string, time.Time) {
	if dimension == TokensPerDay {
		return quotaBase + r.Scope + ":" + r.Subject + ":d:" + now.UTC().Format("20060102"), dayEnd(now)
	}
	return quotaBase + r.Scope + ":" + r.Subject + ":m:" + now.UTC().Format("200601"), monthEnd(now)
}

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

// take is what the backend is asked to take tk: a lease, or n from a
// budget or a per-minute bucket unless that would pass its limit.
func (tk *taken) take(leaseID string, lease time.Duration) Op {
	switch tk.dimension {
	case ConcurrentRequests:
		return Op{Lease: true, Key: tk.key, ID: leaseID, Max: tk.limit, TTL: lease}
	case TokensPerDay, TokensPerMonth:
		return Op{Key: tk.key, Max: tk.limit, N: tk.n, End: tk.end}
	default:
		return Op{Rate: true, Key: tk.key, Max: tk.limit, N: tk.n, Period: time.Minute}
	}
}

// adjust is what the backend is asked to change once tk is taken: add n
// (negative: give back) to its budget or bucket, whatever the limit (a
// bucket is only charged past it when n > 0, which settlement counts), or
// release its lease.
func (tk *taken) adjust(n int64, leaseID string) Op {
	switch tk.dimension {
	case ConcurrentRequests:
		return Op{Lease: true, Release: true, Key: tk.key, ID: leaseID}
	case TokensPerDay, TokensPerMonth:
		return Op{Key: tk.key, Max: tk.limit, N: n, Force: true, End: tk.end}
	default:
		return Op{Rate: true, Key: tk.key, Max: tk.limit, Period: time.Minute, N: n, Force: n > 0}
	}
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

// Reserved is the tokens the request reserved.
func (t *Ticket) Reserved() int64 { return t.reserved }

// Settle ends the request: its concurrency leases are released and the
// token reservation becomes the real usage (a refund when it used less, a
// further charge when more). It is safe to call more than once; only the
// first call counts.
func (t *Ticket) Settle(ctx context.Context, used int64) {
	if t == nil || !t.settled.CompareAndSwap(false, true) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	b := t.s.cfg.Backend
	delta := used - t.reserved
	// One batch: per-minute token refunds or charges, budgets, leases.
	sc := scratchPool.Get().(*scratch)
	opv := sc.opv[:0]
	for i := range t.taken {
		// The lease goes; the token windows take the difference between
		// the usage and the reservation; a request is a request.
		switch tk := &t.taken[i]; tk.dimension {
		case ConcurrentRequests:
			opv = append(opv, tk.adjust(0, t.leaseID))
		case TokensPerMinute, TokensPerDay, TokensPerMonth:
			if delta != 0 {
				opv = append(opv, tk.adjust(delta, t.leaseID))
			}
		}
	}
	ops := sc.ops[:0]
	for i := range opv {
		ops = append(ops, &opv[i])
	}
	sc.opv, sc.ops = opv, ops
	// done counts a charge past the reservation the backend could not
	// take, then gives the scratch back: the operations are not used
	// after it.
	done := func() {
		for _, op := range ops {
			if op.Rate && op.Force && op.N > 0 && op.Err == nil && !op.OK && t.s.cfg.Metrics != nil {
				t.s.cfg.Metrics.LimitsUnsettled(delta)
			}
		}
		sc.release()
	}
	if d, ok := b.(Deferrer); ok {
		d.Defer(ops, done)
		return
	}
	runOps(ctx, b, ops)
	done()
}

// Limits returns the state of every limit that governs a key in team:
// the key's rule, the team's, and every model rule, one window per
// dimension, without taking anything.
func (s *Service) Limits(ctx context.Context, keyID, teamID string) ([]Window, error) {
	rs := s.rules.Load()
	var rules []Rule
	for _, r := range rs.list {
		if (r.Scope == ScopeKey && r.Subject == keyID) || (r.Scope == ScopeTeam && r.Subject == teamID) || r.Scope == ScopeModel {
			rules = append(rules, r)
		}
	}
	now := s.cfg.Now()
	var out []Window
	for _, r := range rules {
		for _, d := range r.dims() {
			if d.v <= 0 {
				continue
			}
			w := Window{Scope: r.Scope, Subject: r.Subject, Dimension: d.name, Limit: d.v, Remaining: d.v}
			switch d.name {
			case RequestsPerMinute, TokensPerMinute:
				res, err := s.cfg.Backend.Rate(ctx, rateBase+r.Scope+":"+r.Subject+":"+d.name, d.v, time.Minute, 0, false)
				if err != nil {
					return nil, &UnavailableError{Err: err}
				}
				w.Remaining, w.Reset = min(res.Remaining, d.v), res.ResetAfter
			case TokensPerDay, TokensPerMonth:
				key, end := quotaKey(r, d.name, now)
				_, used, err := s.cfg.Backend.Quota(ctx, key, d.v, 0, false, end)
				if err != nil {
					return nil, &UnavailableError{Err: err}
				}
				w.Remaining, w.Reset = max(d.v-used, 0), end.Sub(now)
			case ConcurrentRequests:
				held, err := s.cfg.Backend.Held(ctx, leaseBase+r.Scope+":"+r.Subject)
				if err != nil {
					return nil, &UnavailableError{Err: err}
				}
				w.Remaining = max(d.v-held, 0)
			}
			out = append(out, w)
		}
	}
	return out, nil
}

// Estimate is a request's token reservation: its prompt, counted as one
// token per three bytes (more than most tokenizers make, so that the
// settlement is mostly a refund), plus its output limit.
func Estimate(promptBytes int, outputTokens int) int64 {
	return int64(math.Ceil(float64(promptBytes)/3)) + int64(max(outputTokens, 0))
}
