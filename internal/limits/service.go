package limits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/refresh"
)

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
			var inv *apierr.Error
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
