package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/policy"
	"github.com/sovereign-ai/sovereign/internal/policy/pii"
)

// Policies is the policy engine: the set in force, decisions, and the
// administration of policies.
type Policies interface {
	Set() *policy.Set
	Record(ds []policy.Decision)
	Create(ctx context.Context, p policy.Policy) (policy.Policy, error)
	Get(ctx context.Context, id string) (policy.Policy, error)
	List(ctx context.Context) ([]policy.Policy, error)
	Update(ctx context.Context, id string, p policy.Policy) (policy.Policy, error)
	Delete(ctx context.Context, id string) error
	ListDecisions(ctx context.Context, f policy.DecisionFilter) ([]policy.Decision, bool, error)
	GetDecision(ctx context.Context, teamID, id string, all bool) (policy.Decision, error)
}

// structural are the request members whose strings are not text to
// redact (names, schemas, settings).
var structural = map[string]bool{"model": true, "role": true, "type": true, "tools": true, "tool_choice": true,
	"response_format": true, "name": true, "tool_call_id": true, "call_id": true, "id": true, "previous_response_id": true,
	"format": true, "stop": true, "logit_bias": true, "metadata": false}

// redactJSON returns body with fn applied to its text strings (every
// string but the structural members'). It re-encodes the body, so a
// request whose input is redacted reaches an upstream with the same
// members in another order.
func redactJSON(body []byte, fn func(string) string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return fn(x)
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k, e := range x {
				if !structural[k] {
					x[k] = walk(e)
				}
			}
		}
		return v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(walk(v)); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// PolicyTestRequest is the body of POST /v1/policies/test.
type PolicyTestRequest struct {
	// Policy is a policy to try (not stored); PolicyID names a stored one
	// instead.
	Policy   *policy.Policy `json:"policy"`
	PolicyID string         `json:"policy_id"`
	Input    struct {
		Stage     string   `json:"stage"`
		Model     string   `json:"model"`
		ModelTags []string `json:"model_tags"`
		Backend   string   `json:"backend"`
		TeamID    string   `json:"team_id"`
		KeyID     string   `json:"key_id"`
		User      string   `json:"user"`
		Route     string   `json:"route"`
		MaxTokens int      `json:"max_tokens"`
		Input     string   `json:"input"`
		Output    string   `json:"output"`
	} `json:"input"`
}

func (s *Server) policiesOn() error {
	if s.Policies == nil {
		return apierr.New(apierr.NotFound, "this server has no policy engine")
	}
	return nil
}

// policyBody is a policy as a client writes it: "enabled" defaults to
// true.
type policyBody struct {
	policy.Policy
	Enabled *bool `json:"enabled"`
}

func (b policyBody) policy() policy.Policy {
	p := b.Policy
	p.Enabled = b.Enabled == nil || *b.Enabled
	return p
}

func (s *Server) createPolicy(w http.ResponseWriter, r *http.Request) error {
	if err := s.policiesOn(); err != nil {
		return err
	}
	var b policyBody
	if err := wire.DecodeStrict(r.Body, &b); err != nil {
		return err
	}
	out, err := s.Policies.Create(r.Context(), b.policy())
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusCreated, out)
}

func (s *Server) listPolicies(w http.ResponseWriter, r *http.Request) error {
	if err := s.policiesOn(); err != nil {
		return err
	}
	ps, err := s.Policies.List(r.Context())
	if err != nil {
		return err
	}
	if ps == nil {
		ps = []policy.Policy{}
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": ps})
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request) error {
	if err := s.policiesOn(); err != nil {
		return err
	}
	p, err := s.Policies.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, p)
}

func (s *Server) updatePolicy(w http.ResponseWriter, r *http.Request) error {
	if err := s.policiesOn(); err != nil {
		return err
	}
	var b policyBody
	if err := wire.DecodeStrict(r.Body, &b); err != nil {
		return err
	}
	out, err := s.Policies.Update(r.Context(), r.PathValue("id"), b.policy())
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, out)
}

func (s *Server) deletePolicy(w http.ResponseWriter, r *http.Request) error {
	if err := s.policiesOn(); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := s.Policies.Delete(r.Context(), id); err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"id": id, "object": "policy.deleted", "deleted": true})
}

// testPolicy is POST /v1/policies/test: it evaluates a policy (given, or
// stored) against a sample request and stores nothing.
func (s *Server) testPolicy(w http.ResponseWriter, r *http.Request) error {
	if err := s.policiesOn(); err != nil {
		return err
	}
	var req PolicyTestRequest
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	var p policy.Policy
	switch {
	case req.Policy != nil && req.PolicyID != "":
		return apierr.Invalid("policy_id", "give either policy or policy_id, not both")
	case req.Policy != nil:
		p = *req.Policy
		if p.ID == "" {
			p.ID = "pol_test"
		}
	case req.PolicyID != "":
		var err error
		if p, err = s.Policies.Get(r.Context(), req.PolicyID); err != nil {
			return err
		}
	default:
		return apierr.Invalid("policy", "give the policy to test, or policy_id")
	}
	in := req.Input
	stage := in.Stage
	if stage == "" {
		stage = policy.StageInput
		if in.Output != "" {
			stage = policy.StageOutput
		}
	}
	if stage != policy.StageInput && stage != policy.StageOutput {
		return apierr.Invalid("input.stage", "stage must be input or output")
	}
	text := in.Input
	if stage == policy.StageOutput {
		text = in.Output
	}
	out, err := policy.Test(p, policy.Input{Stage: stage, RequestID: RequestID(r.Context()), Model: in.Model, Backend: in.Backend,
		Team: in.TeamID, Key: in.KeyID, User: in.User, Route: in.Route, ModelTags: in.ModelTags, MaxTokens: in.MaxTokens, Text: text, Input: in.Input})
	if err != nil {
		// The policy is the request's "policy" member: its fields are
		// named under it. A copy, as the error may be shared.
		var e *apierr.Error
		if errors.As(err, &e) && e.Code == apierr.InvalidRequest && e.Param != "" {
			c := *e
			c.Param, c.Err = "policy."+e.Param, err
			return &c
		}
		return err
	}
	action := policy.ActionAllow
	for _, d := range out.Decisions {
		if rank(d.Action) > rank(action) {
			action = d.Action
		}
	}
	decisions := out.Decisions
	if decisions == nil {
		decisions = []policy.Decision{}
	}
	redact := make([]policy.Span, 0, len(out.Redact))
	for _, f := range out.Redact {
		redact = append(redact, policy.Span{Kind: f.Kind, Start: f.Start, End: f.End})
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "policy.test", "stage": stage, "action": action,
		"decisions": decisions, "redact": redact, "redacted_text": pii.Redact(text, out.Redact)})
}

func rank(action string) int {
	switch action {
	case policy.ActionDeny:
		return 3
	case policy.ActionRedact:
		return 2
	case policy.ActionFlag:
		return 1
	}
	return 0
}

// listDecisions is GET /v1/policy_decisions: the team's decisions (an
// admin's: every team's), newest first, filtered, a page at a time.
func (s *Server) listDecisions(w http.ResponseWriter, r *http.Request) error {
	if err := s.policiesOn(); err != nil {
		return err
	}
	q := r.URL.Query()
	k, _ := KeyFrom(r.Context())
	f := policy.DecisionFilter{TeamID: k.TeamID, AllTeams: auth.HasScope(k, auth.ScopeAdmin), PolicyID: q.Get("policy_id"), Rule: q.Get("rule"),
		Action: q.Get("action"), KeyID: q.Get("key_id"), RequestID: q.Get("request_id"), Model: q.Get("model"), After: q.Get("after"), Limit: 20}
	if v := q.Get("team_id"); v != "" {
		if !f.AllTeams && v != k.TeamID {
			return apierr.Invalid("team_id", "only an admin key reads other teams' decisions")
		}
		f.TeamID, f.AllTeams = v, false
	}
	if v := q.Get("action"); v != "" && v != policy.ActionDeny && v != policy.ActionRedact && v != policy.ActionFlag {
		return apierr.Invalid("action", "'action' must be deny, redact or flag")
	}
	if err := wire.ListParams(q, &f.Limit, wire.Bound{Name: "since", Dst: &f.Since}, wire.Bound{Name: "until", Dst: &f.Until}); err != nil {
		return err
	}
	ds, more, err := s.Policies.ListDecisions(r.Context(), f)
	if err != nil {
		return err
	}
	if ds == nil {
		ds = []policy.Decision{}
	}
	out := map[string]any{"object": "list", "data": ds, "has_more": more, "first_id": nil, "last_id": nil}
	if len(ds) > 0 {
		out["first_id"], out["last_id"] = ds[0].ID, ds[len(ds)-1].ID
	}
	return wire.JSON(w, http.StatusOK, out)
}

func (s *Server) getDecision(w http.ResponseWriter, r *http.Request) error {
	if err := s.policiesOn(); err != nil {
		return err
	}
	k, _ := KeyFrom(r.Context())
	d, err := s.Policies.GetDecision(r.Context(), k.TeamID, r.PathValue("id"), auth.HasScope(k, auth.ScopeAdmin))
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, d)
}
