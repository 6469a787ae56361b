// Package policy is Sovereign's guardrail engine: policies are rules
// scoped to the deployment, a team or a key, written in CEL, checked
// before inference (stage "input") and on the answer (stage "output").
// A rule allows, denies, redacts PII or flags the request; every match
// that is not a plain allow becomes a Decision, which records which rule
// matched and where PII was found (kind and byte offsets), never the text
// itself.
//
// Policies are compiled once (Compile type-checks every rule and reports
// a 400 naming the field, an *apierr.Error) and gathered in a Set, which the
// request path evaluates: Evaluate runs the rules that apply to a request
// in a fixed order and returns an Outcome. PII detection (internal/policy/pii)
// only runs when a rule that applies needs it, and at most once per set of
// detectors per evaluation. Decisions are stored off the request path by a
// Writer.
package policy

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/policy/pii"
)

// Policy is a named list of rules for one scope. Its JSON form is the
// API's.
type Policy struct {
	// ID is "pol_" followed by 22 base62 characters (NewID).
	ID     string `json:"id"`
	Object string `json:"object"` // "policy"
	// Name is unique among policies, 1 to 100 characters.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Scope is ScopeDeployment, ScopeTeam or ScopeKey; ScopeID is the
	// team's or key's id ("" for the deployment).
	Scope   string `json:"scope"`
	ScopeID string `json:"scope_id,omitempty"`
	// Enabled policies are evaluated; disabled ones are kept but ignored
	// (Test still runs them).
	Enabled bool `json:"enabled"`
	// Detectors are custom PII detectors, kind → RE2 pattern, added to
	// the built-in ones for this policy's rules only.
	Detectors map[string]string `json:"detectors,omitempty"`
	Rules     []Rule            `json:"rules"`
	// CreatedAt and UpdatedAt are unix seconds.
	CreatedAt int64 `json:"created_at"`
	UpdatedAt int64 `json:"updated_at"`
}

// Rule is one condition and what to do when it holds.
type Rule struct {
	// Name matches ^[a-z0-9][a-z0-9_-]{0,63}$ and is unique in its policy.
	Name string `json:"name"`
	// Stage is StageInput or StageOutput.
	Stage string `json:"stage"`
	// When is a CEL expression of type bool over the variables listed in
	// docs/policies.md.
	When string `json:"when"`
	// Action is ActionAllow, ActionDeny, ActionRedact or ActionFlag.
	Action string `json:"action"`
	// Reason is shown to the client on a deny and kept in decisions.
	Reason string `json:"reason,omitempty"`
	// Redact lists the PII kinds a redact rule removes (empty: every kind
	// the policy's detectors know).
	Redact []string `json:"redact,omitempty"`
}

// Scopes.
const (
	ScopeDeployment = "deployment"
	ScopeTeam       = "team"
	ScopeKey        = "key"
)

// Stages.
const (
	StageInput  = "input"
	StageOutput = "output"
)

// Actions.
const (
	ActionAllow  = "allow"
	ActionDeny   = "deny"
	ActionRedact = "redact"
	ActionFlag   = "flag"
)

// Object names of the API.
const (
	ObjectPolicy   = "policy"
	ObjectDecision = "policy_decision"
)

// Span is where a rule found PII in the stage's text: its kind and byte
// offsets (End exclusive). It never holds the text itself.
type Span struct {
	Kind  string `json:"kind"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Decision records one rule that matched and did not simply allow.
type Decision struct {
	// ID is "pdec_" followed by the creation time in hex nanoseconds and
	// random characters, so that ids sort by time (NewDecisionID).
	ID        string `json:"id"`
	Object    string `json:"object"` // "policy_decision"
	CreatedAt int64  `json:"created_at"`
	RequestID string `json:"request_id"`
	TeamID    string `json:"team_id"`
	KeyID     string `json:"key_id"`
	Model     string `json:"model,omitempty"`
	Route     string `json:"route,omitempty"`
	PolicyID  string `json:"policy_id"`
	Policy    string `json:"policy"` // the policy's name
	Rule      string `json:"rule"`
	Stage     string `json:"stage"`
	Action    string `json:"action"`
	Reason    string `json:"reason,omitempty"`
	// Spans are the PII findings behind the decision (kind and offsets in
	// the stage's text), never the matched text.
	Spans []Span `json:"spans"`
}

// Input is what a Set evaluates: the request, and the text of the stage.
type Input struct {
	// Stage is StageInput or StageOutput.
	Stage string
	// RequestID, Team, Key, Model and Route are copied into decisions.
	RequestID string
	Model     string
	Backend   string // "local" or "upstream"
	Team      string
	Key       string
	User      string // the request's "user" field
	Route     string // e.g. "/v1/chat/completions"
	ModelTags []string
	// MaxTokens is the requested output limit (0: none).
	MaxTokens int
	// Text is the stage's text: the request's text at the input stage,
	// the answer at the output stage. PII detection runs on it, and
	// Outcome.Redact offsets are into it.
	Text string
	// Input is the request's text, the CEL variable input at the output
	// stage. At the input stage input is Text when Input is "".
	Input string
}

// Outcome is the result of evaluating a Set for one stage.
type Outcome struct {
	// Deny is the first deny, if any; evaluation stopped there.
	Deny *Decision
	// Redact are the spans of Text to redact (sorted, non-overlapping;
	// overlapping findings of different rules are merged and keep the
	// first one's kind), from the redact rules that matched.
	Redact []pii.Finding
	// RedactKinds are the kinds the matching redact rules name, sorted
	// (for a stream redactor).
	RedactKinds []string
	// Decisions are every match that is not a plain allow (deny, redact,
	// flag), in evaluation order, their ID and CreatedAt filled.
	Decisions []Decision
}

// Store keeps policies and decisions.
type Store interface {
	// CreatePolicy stores a new policy. A name (or id) already taken is
	// an error wrapping ErrConflict.
	CreatePolicy(ctx context.Context, p Policy) error
	// GetPolicy returns policy id, or ErrNotFound.
	GetPolicy(ctx context.Context, id string) (Policy, error)
	// ListPolicies returns every policy, oldest first (then by name).
	ListPolicies(ctx context.Context) ([]Policy, error)
	// UpdatePolicy replaces policy p.ID (its CreatedAt is kept):
	// ErrNotFound, or ErrConflict for a name taken by another policy.
	UpdatePolicy(ctx context.Context, p Policy) error
	// DeletePolicy removes policy id, or returns ErrNotFound. Its
	// decisions are kept.
	DeletePolicy(ctx context.Context, id string) error
	DecisionAppender
	// ListDecisions returns the decisions matching f, newest first, and
	// whether more follow. ErrNotFound for a cursor (f.After) that is not
	// one of the decisions f's team can see.
	ListDecisions(ctx context.Context, f DecisionFilter) ([]Decision, bool, error)
	// GetDecision returns the team's decision id (any team's with all),
	// or ErrNotFound.
	GetDecision(ctx context.Context, teamID, id string, all bool) (Decision, error)
	// PurgeDecisions removes the decisions made before before (the
	// request log's retention) and returns how many.
	PurgeDecisions(ctx context.Context, before time.Time) (int64, error)
}

// DecisionAppender stores decisions; it is what a Writer needs.
type DecisionAppender interface {
	// AppendDecisions stores ds in one transaction.
	AppendDecisions(ctx context.Context, ds []Decision) error
}

// DecisionFilter selects decisions, newest first. Empty fields match
// everything.
type DecisionFilter struct {
	// TeamID restricts to one team's decisions ("" is a team too: the
	// decisions of requests without one); AllTeams lifts the restriction.
	TeamID   string
	AllTeams bool
	// Since (inclusive) and Until (exclusive) bound CreatedAt.
	Since, Until time.Time
	PolicyID     string
	Rule         string
	Action       string
	KeyID        string
	RequestID    string
	Model        string
	// After is the id of the last decision of the previous page.
	After string
	// Limit bounds the page (≤ 0: 20).
	Limit int
}

var (
	// ErrNotFound is returned for a policy or decision that does not
	// exist (or is another team's decision), and for a cursor that is not
	// a visible decision (HTTP 404). The store words what is missing
	// (apierr.Wrapf: "no such policy decision"), or for a cursor answers
	// the 400 naming "after" that wraps it.
	ErrNotFound = apierr.New(apierr.NotFound, "no such policy")
	// ErrConflict is returned (wrapped) for a policy name already taken
	// (HTTP 409); it is auth.ErrConflict, which the store reports for every
	// unique violation, and the store words it ("a policy with this name
	// exists").
	ErrConflict = auth.ErrConflict
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randBase62 appends n base62 characters drawn uniformly from crypto/rand.
func randBase62(dst []byte, n int) []byte {
	var buf [32]byte
	for n > 0 {
		rand.Read(buf[:]) // never fails (crypto/rand panics instead since Go 1.24)
		for _, c := range buf {
			// Reject bytes >= 248 (= 4*62) so every character is equally likely.
			if c >= 248 {
				continue
			}
			dst = append(dst, base62[c%62])
			if n--; n == 0 {
				break
			}
		}
	}
	return dst
}

// NewID returns a fresh policy id: "pol_" + 22 base62 characters.
func NewID() string {
	var b [4 + 22]byte
	return string(randBase62(append(b[:0], "pol_"...), 22))
}

// NewDecisionID returns a fresh decision id for a decision made at t:
// "pdec_", t in unix nanoseconds as 16 lowercase hex digits, and 10
// random base62 characters. Ids made later sort after earlier ones (on
// one clock), which orders decisions of the same second.
func NewDecisionID(t time.Time) string {
	const hex = "0123456789abcdef"
	var buf [5 + 16 + 10]byte
	b := append(buf[:0], "pdec_"...)
	ns := uint64(t.UnixNano())
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, hex[(ns>>uint(shift))&0xf])
	}
	return string(randBase62(b, 10))
}
