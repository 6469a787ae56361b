package generate

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/policy"
	"github.com/sovereign-ai/sovereign/internal/policy/pii"
	"github.com/sovereign-ai/sovereign/internal/records"
)

// Models resolves a model name once per call, and takes the live figures
// of the calls it served.
type Models interface {
	Resolve(ctx context.Context, name string) (catalog.Resolved, error)
	Record(id string, o catalog.Observation)
}

// Policies is the policy set in force and the store of its decisions.
type Policies interface {
	Set() *policy.Set
	Record(ds []policy.Decision)
}

// Limiter admits calls under the rate limits and quotas.
type Limiter interface {
	Admit(ctx context.Context, req limits.Request) (*limits.Ticket, limits.Status, error)
}

// CaptureSet knows which teams keep their prompts and outputs.
type CaptureSet interface {
	Enabled(team string) bool
}

// Metrics counts tokens and model calls.
type Metrics interface {
	AddTokens(model string, prompt, completion int)
	ObserveModel(model string, failed bool)
}

// RecordLogger takes request records; it must not block.
type RecordLogger interface {
	Log(records.Record)
}

// Keys reads the key an in-process call runs as.
type Keys interface {
	GetKey(ctx context.Context, id string) (auth.Key, error)
}

// RecordGate says whether the request log can keep the records of new
// calls: a non-nil error (records.Writer.Accepting: 503
// request_log_unavailable) refuses a call before it does any work, when
// the operator chose that the log fails closed.
type RecordGate interface {
	Accepting() error
}

// Service governs model calls. Every dependency but Models may be nil:
// no policies, no limits, no capture, no metrics, no records.
type Service struct {
	Models   Models
	Policies Policies
	Limits   Limiter
	Capture  CaptureSet
	Metrics  Metrics
	Records  RecordLogger
	Keys     Keys
	// RecordGate, when set, refuses calls while their records could not
	// be kept.
	RecordGate RecordGate
}

// NewID is a fresh request id: "req_" and 24 hex digits, the first 12 the
// time in milliseconds and the rest random. Time first, so that ids made
// one after another sort together: the request log indexes records by id,
// and a random id put each new record on a page of its own in that index
// (2.5× the cost of appending a record, most of it written to disk;
// BenchmarkAppendRecords in internal/sqlite).
func NewID() string {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	rand.Read(b[6:])
	return "req_" + hex.EncodeToString(b[:])
}

// Resolve resolves the model a call names and checks that it offers
// capability ("" for any) and has not been retired; the call notes it.
// A deprecated model resolves (the caller tells its client).
func (s *Service) Resolve(ctx context.Context, c *Call, name, capability string) (catalog.Resolved, error) {
	if name == "" {
		return catalog.Resolved{}, apierr.Invalid("model", "'model' is required")
	}
	m, err := s.Models.Resolve(ctx, name)
	if err != nil {
		return m, err
	}
	c.NoteModel(m.ID, m.Backend)
	if d := m.Deprecation; d != nil && d.Sunset != nil && !time.Now().Before(*d.Sunset) {
		replacement := ""
		if d.Replacement != "" {
			replacement = fmt.Sprintf("; use %q instead", d.Replacement)
		}
		return m, apierr.New(apierr.ModelRetired, fmt.Sprintf("the model %q was retired on %s%s", m.ID, d.Sunset.UTC().Format(time.RFC3339), replacement))
	}
	if capability != "" && !m.Has(capability) {
		return m, apierr.Invalid("model", fmt.Sprintf("the model %q does not support %s (it supports: %s)", m.ID, capability, strings.Join(m.Capabilities, ", ")))
	}
	return m, nil
}

// Gate is what admission needs from a call once its model is known.
type Gate struct {
	// Text is the call's input text (policies read it; its size makes the
	// prompt's share of the token reservation).
	Text string
	// MaxTokens is the output limit the call sets (0: none); Output is
	// false for calls that generate nothing (embeddings, rerank).
	MaxTokens int
	Output    bool
}

// defaultOutputReservation is the output a call reserves against token
// limits when neither it nor its model sets an output limit; settling
// corrects it to what was generated.
const defaultOutputReservation = 1024

// Admit is where every model call passes once its model is resolved: first
// the request log's gate (a call whose record could not be kept is refused
// when the log fails closed), then the input policies (a deny never
// reaches the model or uses a limit), then the rate limits and quotas of
// its key, its team and its model. It keeps the reservation on the call,
// to settle to the real usage when the call ends (Settle), and arms the
// output stage when output rules apply. It returns the function that
// redacts the call's text when a policy says so (nil: nothing to redact),
// and the limits' status for the x-ratelimit headers (also with a
// refusal).
func (s *Service) Admit(ctx context.Context, c *Call, m catalog.Resolved, g Gate) (func(string) string, limits.Status, error) {
	if s.RecordGate != nil {
		if err := s.RecordGate.Accepting(); err != nil {
			return nil, limits.Status{}, err
		}
	}
	redact, err := s.checkInput(c, m, g)
	if err != nil {
		return nil, limits.Status{}, err
	}
	key, ok := c.Key()
	if !ok {
		return redact, limits.Status{}, nil
	}
	if s.Capture != nil && s.Capture.Enabled(key.TeamID) {
		// The team keeps its prompts and outputs: the prompt as the model
		// will see it (after the input policies' redaction); the output
		// as it is sent.
		text := g.Text
		if redact != nil {
			text = redact(text)
		}
		c.mu.Lock()
		c.capture, c.prompt = true, text
		c.mu.Unlock()
	}
	if s.Limits == nil {
		return redact, limits.Status{}, nil
	}
	out := 0
	if g.Output {
		out = g.MaxTokens
		if out <= 0 {
			out = m.Limits.MaxOutputTokens
		}
		if out <= 0 {
			out = defaultOutputReservation
		}
	}
	// Leases are named by a fresh id: x-request-id is the client's to
	// choose and need not be unique.
	tk, st, err := s.Limits.Admit(ctx, limits.Request{ID: NewID(), KeyID: key.ID, TeamID: key.TeamID, Model: m.ID,
		Tokens: limits.Estimate(len(g.Text), out)})
	if err != nil {
		return nil, st, err
	}
	if tk != nil {
		c.mu.Lock()
		c.tickets = append(c.tickets, tk)
		c.mu.Unlock()
	}
	return redact, st, nil
}

// outputPolicy is what the output stage of a call needs: the set, the
// call's input, and the detectors of its output redact rules (nil: none
// apply, the answer is only evaluated).
type outputPolicy struct {
	set   *policy.Set
	in    policy.Input
	pii   *pii.Set
	kinds []string
}

// Redacts reports whether output redact rules apply.
func (op *outputPolicy) Redacts() bool { return op != nil && op.pii != nil }

// Redact removes the findings of the output redact rules' kinds from s.
func (op *outputPolicy) Redact(s string) string {
	if !op.Redacts() {
		return s
	}
	return pii.Redact(s, op.pii.Find(s, op.kinds...))
}

// NewStreamRedactor is a redactor for one streamed text (nil when no
// redact rule applies).
func (op *outputPolicy) NewStreamRedactor() *pii.StreamRedactor {
	if !op.Redacts() {
		return nil
	}
	return op.pii.NewStreamRedactor(op.kinds...)
}

// checkInput evaluates the input-stage policies of a call: a deny is a
// 403 policy_violation naming the rule (the model never sees the call),
// redact rules return the function that redacts the call's text, and
// every decision is recorded. It arms the output stage when output rules
// apply.
func (s *Service) checkInput(c *Call, m catalog.Resolved, g Gate) (func(string) string, error) {
	if s.Policies == nil {
		return nil, nil
	}
	set := s.Policies.Set()
	k, ok := c.Key()
	if !ok || set == nil {
		return nil, nil
	}
	in := policy.Input{RequestID: c.ID, Model: m.ID, Backend: m.Backend, Team: k.TeamID, Key: k.ID, User: c.User(),
		Route: c.Path, ModelTags: m.Tags, MaxTokens: g.MaxTokens, Input: g.Text}
	if g.Output && set.Applies(policy.StageOutput, k.TeamID, k.ID) {
		op := &outputPolicy{set: set, in: in}
		op.in.Stage = policy.StageOutput
		op.pii, op.kinds = set.Detectors(k.TeamID, k.ID)
		c.mu.Lock()
		c.output = op
		c.mu.Unlock()
	}
	if !set.Applies(policy.StageInput, k.TeamID, k.ID) {
		return nil, nil
	}
	in.Stage, in.Text = policy.StageInput, g.Text
	out := set.Evaluate(in)
	s.Policies.Record(out.Decisions)
	if out.Deny != nil {
		return nil, Denied(out.Deny)
	}
	if len(out.RedactKinds) == 0 || len(out.Redact) == 0 {
		return nil, nil
	}
	ps, _ := set.Detectors(k.TeamID, k.ID)
	if ps == nil {
		ps = defaultPII()
	}
	kinds := out.RedactKinds
	return func(text string) string { return pii.Redact(text, ps.Find(text, kinds...)) }, nil
}

// defaultPII is the built-in detector set, built once: calls redact
// concurrently.
var defaultPII = sync.OnceValue(func() *pii.Set {
	s, _ := pii.New(nil)
	return s
})

// Denied is the 403 for a deny decision, naming the policy and rule in the
// envelope's own members as well as in the message.
func Denied(d *policy.Decision) *apierr.Error {
	return &apierr.Error{Code: apierr.PolicyViolation, Message: policy.DenyMessage(d), Policy: d.Policy, Rule: d.Rule}
}

// evaluate runs the call's output stage on a whole answer's text, records
// the decisions and returns them.
func (s *Service) evaluate(op *outputPolicy, text string) policy.Outcome {
	if op == nil {
		return policy.Outcome{}
	}
	in := op.in
	in.Text = text
	out := op.set.Evaluate(in)
	if s.Policies != nil {
		s.Policies.Record(out.Decisions)
	}
	return out
}

// Settle turns the call's reservations into its real usage (split between
// them by their size when a call made several, as a comparison does) and
// releases its concurrency leases. The reservation must become the real
// usage before the caller's next call can be admitted.
func (s *Service) Settle(ctx context.Context, c *Call) {
	c.mu.Lock()
	tickets, used := c.tickets, int64(c.promptTokens+c.completed)
	c.tickets = nil
	c.mu.Unlock()
	if len(tickets) == 0 {
		return
	}
	if len(tickets) == 1 {
		tickets[0].Settle(ctx, used)
		return
	}
	var total int64
	for _, t := range tickets {
		total += t.Reserved()
	}
	for _, t := range tickets {
		share := used / int64(len(tickets))
		if total > 0 {
			share = int64(math.Round(float64(used) * float64(t.Reserved()) / float64(total)))
		}
		t.Settle(ctx, share)
	}
}

// Log writes the call's request record, once it ended with status.
func (s *Service) Log(c *Call, status int) {
	if s.Records != nil {
		s.Records.Log(c.Record(status, time.Since(c.Start)))
	}
}

// As starts an in-process call (a workflow step's, a batch line's) as the
// key keyID on route ("POST /v1/chat/completions"): the key must still be
// active — revoking a key stops the work that runs as it — and hold scope.
// The call's record has no client address. End it with Finish.
func (s *Service) As(ctx context.Context, keyID, route string, scope auth.Scope) (*Call, error) {
	method, path, _ := strings.Cut(route, " ")
	c := &Call{ID: NewID(), Method: method, Route: route, Path: path, Start: time.Now()}
	if s.Keys == nil {
		return c, errors.New("generate: no key store for in-process calls")
	}
	key, err := s.Keys.GetKey(ctx, keyID)
	if err != nil {
		return c, fmt.Errorf("generate: the key %s: %w", keyID, err)
	}
	c.SetKey(key)
	if !key.Active(time.Now()) {
		return c, &apierr.Error{Code: apierr.InvalidAPIKey, Message: "The API key " + keyID + " this work runs as has been revoked or has expired."}
	}
	if !auth.HasScope(key, scope) {
		return c, &apierr.Error{Code: apierr.PermissionDenied, Message: "This API key lacks the '" + string(scope) + "' scope this operation needs."}
	}
	return c, nil
}

// Finish ends an in-process call: it settles its reservations and writes
// its request record, with err's status (200 without one).
func (s *Service) Finish(ctx context.Context, c *Call, err error) {
	status := http.StatusOK
	if err != nil {
		c.NoteError(err)
		status = apierr.From(err).Status()
	}
	s.Settle(context.WithoutCancel(ctx), c)
	s.Log(c, status)
}
