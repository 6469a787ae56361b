package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/refresh"
)

// AuditTriggered is the event type published for every flag and deny
// decision.
const AuditTriggered = events.AuditTriggered

// Service keeps the policies in force — compiled once, re-read from the
// store every few seconds so that a change made through another replica
// applies here too — administers them, and records decisions.
type Service struct {
	store  Store
	writer *Writer
	events events.TeamPublisher
	log    *slog.Logger
	now    func() time.Time

	set  atomic.Pointer[Set]
	mu   sync.Mutex // serializes reloads
	loop *refresh.Loop
}

// ServiceConfig configures a Service.
type ServiceConfig struct {
	Store Store
	// Writer stores decisions off the request path.
	Writer *Writer
	// Events, when set, receives audit.triggered for flag and deny
	// decisions, as events of the decision's team.
	Events events.TeamPublisher
	// Refresh is how often policies are re-read (default 2 s).
	Refresh time.Duration
	Log     *slog.Logger
}

// NewService loads the stored policies and keeps them fresh until Close.
func NewService(ctx context.Context, cfg ServiceConfig) (*Service, error) {
	if cfg.Refresh <= 0 {
		cfg.Refresh = 2 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &Service{store: cfg.Store, writer: cfg.Writer, events: cfg.Events, log: cfg.Log, now: time.Now}
	if err := s.Reload(ctx); err != nil {
		return nil, err
	}
	s.loop = refresh.Every(cfg.Refresh, "policies", cfg.Log, s.Reload)
	return s, nil
}

// Close stops the refresh.
func (s *Service) Close() { s.loop.Stop() }

// Reload compiles the stored policies again. A stored policy that no
// longer compiles (stored by a newer version, say) is left out and
// logged rather than failing the others.
func (s *Service) Reload(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, err := s.store.ListPolicies(ctx)
	if err != nil {
		return err
	}
	var ok []Policy
	for _, p := range ps {
		if !p.Enabled {
			continue
		}
		if _, err := Compile(p); err != nil {
			s.log.Error("policies: a stored policy does not compile; it is not enforced", "policy", p.ID, "name", p.Name, "err", err)
			continue
		}
		ok = append(ok, p)
	}
	set, err := NewSet(ok)
	if err != nil {
		return err
	}
	s.set.Store(set)
	return nil
}

// Set is the policies in force.
func (s *Service) Set() *Set { return s.set.Load() }

// Record stores decisions and announces flags and denies as
// audit.triggered events of the decision's team. It never blocks.
func (s *Service) Record(ds []Decision) {
	if len(ds) == 0 {
		return
	}
	if s.writer != nil {
		s.writer.Log(ds...)
	}
	if s.events == nil {
		return
	}
	for _, d := range ds {
		if d.Action == ActionFlag || d.Action == ActionDeny {
			s.events.PublishTeam(d.TeamID, AuditTriggered, d)
		}
	}
}

// Create validates and stores a new policy.
func (s *Service) Create(ctx context.Context, p Policy) (Policy, error) {
	now := s.now().Unix()
	p.ID, p.Object, p.CreatedAt, p.UpdatedAt = NewID(), "policy", now, now
	if err := Validate(p); err != nil {
		return p, err
	}
	if err := s.store.CreatePolicy(ctx, p); err != nil {
		return p, err
	}
	return p, s.Reload(ctx)
}

// Get returns policy id.
func (s *Service) Get(ctx context.Context, id string) (Policy, error) {
	return s.store.GetPolicy(ctx, id)
}

// List returns every policy.
func (s *Service) List(ctx context.Context) ([]Policy, error) { return s.store.ListPolicies(ctx) }

// Update replaces policy id with p (its id and creation time are kept).
func (s *Service) Update(ctx context.Context, id string, p Policy) (Policy, error) {
	old, err := s.store.GetPolicy(ctx, id)
	if err != nil {
		return p, err
	}
	p.ID, p.Object, p.CreatedAt, p.UpdatedAt = id, "policy", old.CreatedAt, s.now().Unix()
	if err := Validate(p); err != nil {
		return p, err
	}
	if err := s.store.UpdatePolicy(ctx, p); err != nil {
		return p, err
	}
	return p, s.Reload(ctx)
}

// Delete removes policy id (its decisions stay).
func (s *Service) Delete(ctx context.Context, id string) error {
	if err := s.store.DeletePolicy(ctx, id); err != nil {
		return err
	}
	return s.Reload(ctx)
}

// ListDecisions lists decisions (see Store).
func (s *Service) ListDecisions(ctx context.Context, f DecisionFilter) ([]Decision, bool, error) {
	return s.store.ListDecisions(ctx, f)
}

// GetDecision returns one decision (see Store).
func (s *Service) GetDecision(ctx context.Context, teamID, id string, all bool) (Decision, error) {
	return s.store.GetDecision(ctx, teamID, id, all)
}

// DenyMessage is the client's message for a denied request: the policy,
// the rule and its reason, never the matched text.
func DenyMessage(d *Decision) string {
	msg := fmt.Sprintf("denied by policy %q, rule %q", d.Policy, d.Rule)
	if d.Reason != "" {
		msg += ": " + d.Reason
	}
	return msg
}

// IsNotFound reports whether err is a missing policy or decision.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
