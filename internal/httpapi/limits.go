package httpapi

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/openai"
)

// Limiter admits inference requests under the rate limits and quotas and
// administers their rules.
type Limiter interface {
	Admit(ctx context.Context, req limits.Request) (*limits.Ticket, limits.Status, error)
	Limits(ctx context.Context, keyID, teamID string) ([]limits.Window, error)
	Rules() []limits.Rule
	Rule(scope, subject string) (limits.Rule, bool)
	Put(ctx context.Context, r limits.Rule) (limits.Rule, error)
	Delete(ctx context.Context, scope, subject string) error
}

// peekGate is the admission gate of a peeked inference request.
func peekGate(p openai.Peek, output bool) generate.Gate {
	g := generate.Gate{Text: p.Prompt, Output: output}
	for _, v := range []*int{p.MaxTokens, p.MaxCompletionTokens, p.MaxOutputTokens} {
		if v != nil && *v > 0 {
			g.MaxTokens = *v
			break
		}
	}
	return g
}

// admit runs the generation service's admission (input policies, then
// limits) for the request and sets the x-ratelimit headers on h (nil: a
// request that answers none, a comparison's models). It returns the
// function that redacts the request's text when a policy says so.
func (s *Server) admit(ctx context.Context, h http.Header, m catalog.Resolved, g generate.Gate) (func(string) string, error) {
	redact, st, err := s.Gen.Admit(ctx, info(ctx), m, g)
	if h != nil {
		rateHeaders(h, st)
	}
	return redact, err
}

// rateHeaders sets OpenAI's x-ratelimit headers from the most restrictive
// request and token windows.
func rateHeaders(h http.Header, st limits.Status) {
	// The names in canonical form and the values in one slice: six
	// headers on every governed answer, set without building a name or a
	// slice each.
	var vals []string
	for _, w := range [...]struct {
		names [3]string
		win   *limits.Window
	}{
		{[3]string{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests"}, st.Requests},
		{[3]string{"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens"}, st.Tokens},
	} {
		if w.win == nil {
			continue
		}
		if vals == nil {
			vals = make([]string, 0, 6)
		}
		n := len(vals)
		vals = append(vals, strconv.FormatInt(w.win.Limit, 10), strconv.FormatInt(w.win.Remaining, 10), resetString(w.win.Reset))
		for i, name := range w.names {
			h[name] = vals[n+i : n+i+1 : n+i+1]
		}
	}
}

// resetString renders a reset time as OpenAI does: "20ms", "1s", "6m0s".
func resetString(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// LimitObject is one limit's state in GET /v1/limits.
type LimitObject struct {
	Object    string `json:"object"`
	Scope     string `json:"scope"`
	Subject   string `json:"subject"`
	Name      string `json:"name"`
	Limit     int64  `json:"limit"`
	Remaining int64  `json:"remaining"`
	// ResetSeconds is how long until the full allowance is back; ResetAt
	// when (unix seconds).
	ResetSeconds float64 `json:"reset_seconds"`
	ResetAt      int64   `json:"reset_at"`
}

func (s *Server) limitsOn() error {
	if s.Limits == nil {
		return apierr.New(apierr.NotFound, "this server enforces no limits")
	}
	return nil
}

// listLimits is GET /v1/limits: the caller's limits — its key's, its
// team's and the models' — with what remains and when each resets.
func (s *Server) listLimits(w http.ResponseWriter, r *http.Request) error {
	if err := s.limitsOn(); err != nil {
		return err
	}
	k, _ := KeyFrom(r.Context())
	ws, err := s.Limits.Limits(r.Context(), k.ID, k.TeamID)
	if err != nil {
		return err
	}
	now := time.Now()
	out := make([]LimitObject, 0, len(ws))
	for _, w := range ws {
		out = append(out, LimitObject{Object: "limit", Scope: w.Scope, Subject: w.Subject, Name: w.Dimension, Limit: w.Limit,
			Remaining: w.Remaining, ResetSeconds: math.Round(w.Reset.Seconds()*1000) / 1000, ResetAt: now.Add(w.Reset).Unix()})
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": out})
}

// listLimitRules is GET /v1/limits/rules (admin): every rule in force.
func (s *Server) listLimitRules(w http.ResponseWriter, r *http.Request) error {
	if err := s.limitsOn(); err != nil {
		return err
	}
	rules := s.Limits.Rules()
	if rules == nil {
		rules = []limits.Rule{}
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": rules})
}

func (s *Server) getLimitRule(w http.ResponseWriter, r *http.Request) error {
	if err := s.limitsOn(); err != nil {
		return err
	}
	scope, subject := r.PathValue("scope"), r.PathValue("subject")
	rule, ok := s.Limits.Rule(scope, subject)
	if !ok {
		return apierr.New(apierr.NotFound, fmt.Sprintf("no limit rule for %s %q", scope, subject))
	}
	return wire.JSON(w, http.StatusOK, rule)
}

// putLimitRule is PUT /v1/limits/rules/{scope}/{subject} (admin): it sets
// the whole rule (an absent dimension is no limit).
func (s *Server) putLimitRule(w http.ResponseWriter, r *http.Request) error {
	if err := s.limitsOn(); err != nil {
		return err
	}
	var req struct {
		RequestsPerMinute  *int64 `json:"requests_per_minute"`
		TokensPerMinute    *int64 `json:"tokens_per_minute"`
		ConcurrentRequests *int64 `json:"concurrent_requests"`
		TokensPerDay       *int64 `json:"tokens_per_day"`
		TokensPerMonth     *int64 `json:"tokens_per_month"`
	}
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	v := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	rule, err := s.Limits.Put(r.Context(), limits.Rule{Scope: r.PathValue("scope"), Subject: r.PathValue("subject"),
		RequestsPerMinute: v(req.RequestsPerMinute), TokensPerMinute: v(req.TokensPerMinute), ConcurrentRequests: v(req.ConcurrentRequests),
		TokensPerDay: v(req.TokensPerDay), TokensPerMonth: v(req.TokensPerMonth)})
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, rule)
}

func (s *Server) deleteLimitRule(w http.ResponseWriter, r *http.Request) error {
	if err := s.limitsOn(); err != nil {
		return err
	}
	scope, subject := r.PathValue("scope"), r.PathValue("subject")
	if err := s.Limits.Delete(r.Context(), scope, subject); err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "limit_rule.deleted", "scope": scope, "subject": subject, "deleted": true})
}
