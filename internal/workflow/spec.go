package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Step types.
const (
	StepChat              = "chat"
	StepRetrieve          = "retrieve"
	StepRerank            = "rerank"
	StepAnswerWithSources = "answer_with_sources"
	StepHTTP              = "http"
	StepTransform         = "transform"
	StepCondition         = "condition"
	StepApproval          = "approval"
	StepWait              = "wait"
)

// Limits of a definition.
const (
	MaxSteps       = 100
	MaxNameLen     = 200
	MaxTemplateLen = 64 << 10
	MaxWait        = 30 * 24 * time.Hour
	MaxTimeout     = 24 * time.Hour
	MaxAttempts    = 10
	// DefaultApprovalTimeout is how long an approval waits when its step
	// names no timeout.
	DefaultApprovalTimeout = 24 * time.Hour
	// DefaultStepTimeout bounds a step that names no timeout.
	DefaultStepTimeout = 10 * time.Minute
)

// Spec is a workflow definition's body: its steps, run in order (a
// condition step jumps forward), and the run's output.
type Spec struct {
	Steps []Step `json:"steps"`
	// Output is the run's output: a value whose strings are templates
	// over input and steps (absent: the last step's output).
	Output any `json:"output,omitempty"`
}

// Step is one step of a definition. Which fields apply depends on Type;
// a field that does not apply to the type is refused.
type Step struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// If is a CEL condition over input and steps; false skips the step.
	If string `json:"if,omitempty"`
	// Retry and Timeout apply to the types that call something (chat,
	// retrieve, rerank, answer_with_sources, http).
	Retry   *Retry `json:"retry,omitempty"`
	Timeout string `json:"timeout,omitempty"`

	// chat, rerank, answer_with_sources
	Model string `json:"model,omitempty"`
	// chat: messages whose contents are templates.
	Messages    []Message `json:"messages,omitempty"`
	MaxTokens   *int      `json:"max_tokens,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	// retrieve, answer_with_sources
	CollectionIDs []string `json:"collection_ids,omitempty"`
	// retrieve, rerank: a template.
	Query string `json:"query,omitempty"`
	// retrieve: how many hits (default 5) and the search mode.
	TopK int    `json:"top_k,omitempty"`
	Mode string `json:"mode,omitempty"`
	// rerank: a CEL expression giving the list of strings to rank; and how
	// many to keep.
	Documents string `json:"documents,omitempty"`
	TopN      int    `json:"top_n,omitempty"`
	// answer_with_sources: the question, a template.
	Question string `json:"question,omitempty"`
	// http
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	// transform: a template (output {"text"}) or a CEL expression
	// (output {"value"}).
	Template   string `json:"template,omitempty"`
	Expression string `json:"expression,omitempty"`
	// condition: When (CEL, a bool) chooses Then or Else, ids of later
	// steps to continue at ("" : the next step).
	When string `json:"when,omitempty"`
	Then string `json:"then,omitempty"`
	Else string `json:"else,omitempty"`
	// approval
	Approvers    *Approvers `json:"approvers,omitempty"`
	Instructions string     `json:"instructions,omitempty"`
	// wait
	Duration string `json:"duration,omitempty"`
}

// Message is a chat step's message; Content is a template.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Retry is a step's retry policy: at most MaxAttempts tries in all, the
// second after Backoff, doubling (default 1 s).
type Retry struct {
	MaxAttempts int    `json:"max_attempts"`
	Backoff     string `json:"backoff,omitempty"`
}

// Approvers says who may decide an approval: keys with one of Scopes, or
// of one of Teams, or one of KeyIDs. Empty: any key of the run's team with
// the workflows scope.
type Approvers struct {
	Scopes []string `json:"scopes,omitempty"`
	Teams  []string `json:"teams,omitempty"`
	KeyIDs []string `json:"key_ids,omitempty"`
}

// fields lists the fields each type takes, besides id, type and if.
var fields = map[string][]string{
	StepChat:              {"model", "messages", "max_tokens", "temperature", "retry", "timeout"},
	StepRetrieve:          {"collection_ids", "query", "top_k", "mode", "retry", "timeout"},
	StepRerank:            {"model", "query", "documents", "top_n", "retry", "timeout"},
	StepAnswerWithSources: {"model", "collection_ids", "question", "max_tokens", "temperature", "retry", "timeout"},
	StepHTTP:              {"method", "url", "headers", "body", "retry", "timeout"},
	StepTransform:         {"template", "expression"},
	StepCondition:         {"when", "then", "else"},
	StepApproval:          {"approvers", "instructions", "timeout"},
	StepWait:              {"duration"},
}

// invalid is a definition's (or a request's) error, a 400: param names
// the field ("steps[2].when"), the message says what is wrong (with the
// CEL or template position when it is an expression's).
func invalid(param, format string, args ...any) *apierr.Error {
	return apierr.Invalid(param, fmt.Sprintf(format, args...))
}

var stepID = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// ParseSpec decodes and validates a definition body: unknown fields, and
// fields that do not apply to a step's type, are refused; expressions and
// templates are compiled.
func ParseSpec(raw json.RawMessage) (*Spec, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, invalid("steps", "a definition is a JSON object with steps")
	}
	for k := range top {
		if k != "steps" && k != "output" {
			return nil, invalid(k, "unknown field %q (a definition has steps and output)", k)
		}
	}
	var rawSteps []json.RawMessage
	if err := json.Unmarshal(top["steps"], &rawSteps); err != nil {
		return nil, invalid("steps", "steps must be an array of step objects")
	}
	if len(rawSteps) == 0 || len(rawSteps) > MaxSteps {
		return nil, invalid("steps", "a workflow has 1 to %d steps, not %d", MaxSteps, len(rawSteps))
	}
	sp := &Spec{Steps: make([]Step, len(rawSteps))}
	for i, rs := range rawSteps {
		param := fmt.Sprintf("steps[%d]", i)
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(rs, &keys); err != nil || keys == nil {
			return nil, invalid(param, "a step is a JSON object")
		}
		var typ string
		if err := json.Unmarshal(keys["type"], &typ); err != nil {
			return nil, invalid(param+".type", "type is required: one of %s", strings.Join(typeNames(), ", "))
		}
		allowed, ok := fields[typ]
		if !ok {
			return nil, invalid(param+".type", "unknown step type %q (one of %s)", typ, strings.Join(typeNames(), ", "))
		}
		for k := range keys {
			if k != "id" && k != "type" && k != "if" && !slices.Contains(allowed, k) {
				return nil, invalid(param+"."+k, "a %s step takes no %q (it takes %s)", typ, k, strings.Join(allowed, ", "))
			}
		}
		d := json.NewDecoder(bytes.NewReader(rs))
		d.DisallowUnknownFields()
		if err := d.Decode(&sp.Steps[i]); err != nil {
			return nil, invalid(param, "%s", strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	if o, ok := top["output"]; ok {
		if err := json.Unmarshal(o, &sp.Output); err != nil {
			return nil, invalid("output", "output must be JSON")
		}
	}
	if err := sp.validate(); err != nil {
		return nil, err
	}
	return sp, nil
}

func typeNames() []string {
	out := make([]string, 0, len(fields))
	for t := range fields {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// validate checks the decoded spec: ids, references, durations, and every
// expression and template compiles.
func (sp *Spec) validate() error {
	index := map[string]int{}
	for i, st := range sp.Steps {
		param := fmt.Sprintf("steps[%d]", i)
		if !stepID.MatchString(st.ID) {
			return invalid(param+".id", "a step id is 1 to 64 letters, digits or _, not starting with a digit (got %q)", st.ID)
		}
		if _, dup := index[st.ID]; dup {
			return invalid(param+".id", "step id %q is used twice", st.ID)
		}
		index[st.ID] = i
	}
	for i := range sp.Steps {
		if err := sp.validateStep(i, index); err != nil {
			return err
		}
	}
	if sp.Output != nil {
		if err := checkTemplates("output", sp.Output); err != nil {
			return err
		}
	}
	return nil
}

func (sp *Spec) validateStep(i int, index map[string]int) error {
	st := sp.Steps[i]
	param := fmt.Sprintf("steps[%d]", i)
	earlier := sp.Steps[:i]
	if st.If != "" {
		if _, err := compileExpr(st.If, earlier, true); err != nil {
			return invalid(param+".if", "%s", err)
		}
	}
	if st.Retry != nil {
		if st.Retry.MaxAttempts < 1 || st.Retry.MaxAttempts > MaxAttempts {
			return invalid(param+".retry.max_attempts", "max_attempts is 1 to %d", MaxAttempts)
		}
		if st.Retry.Backoff != "" {
			if d, err := time.ParseDuration(st.Retry.Backoff); err != nil || d <= 0 || d > time.Hour {
				return invalid(param+".retry.backoff", "backoff is a duration such as \"2s\", at most 1h")
			}
		}
	}
	if st.Timeout != "" {
		if d, err := time.ParseDuration(st.Timeout); err != nil || d <= 0 || d > MaxWait {
			return invalid(param+".timeout", "timeout is a duration such as \"30s\" or \"24h\"")
		} else if st.Type != StepApproval && d > MaxTimeout {
			return invalid(param+".timeout", "a step's timeout is at most %v", MaxTimeout)
		}
	}
	tmpl := func(field, s string, required bool) error {
		if s == "" {
			if required {
				return invalid(param+"."+field, "%s is required for a %s step", field, st.Type)
			}
			return nil
		}
		if len(s) > MaxTemplateLen {
			return invalid(param+"."+field, "a template is at most %d bytes", MaxTemplateLen)
		}
		if _, err := compileTemplate(s); err != nil {
			return invalid(param+"."+field, "%s", err)
		}
		return nil
	}
	required := func(field, s string) error {
		if strings.TrimSpace(s) == "" {
			return invalid(param+"."+field, "%s is required for a %s step", field, st.Type)
		}
		return nil
	}
	switch st.Type {
	case StepChat:
		if err := required("model", st.Model); err != nil {
			return err
		}
		if len(st.Messages) == 0 {
			return invalid(param+".messages", "a chat step needs messages")
		}
		for j, m := range st.Messages {
			if !slices.Contains([]string{"system", "user", "assistant", "developer"}, m.Role) {
				return invalid(fmt.Sprintf("%s.messages[%d].role", param, j), "role is system, developer, user or assistant")
			}
			if err := tmpl(fmt.Sprintf("messages[%d].content", j), m.Content, true); err != nil {
				return err
			}
		}
		if st.MaxTokens != nil && *st.MaxTokens < 1 {
			return invalid(param+".max_tokens", "max_tokens must be at least 1")
		}
	case StepRetrieve:
		if len(st.CollectionIDs) == 0 {
			return invalid(param+".collection_ids", "a retrieve step searches at least one collection")
		}
		if err := tmpl("query", st.Query, true); err != nil {
			return err
		}
		if st.TopK < 0 || st.TopK > 100 {
			return invalid(param+".top_k", "top_k is 1 to 100")
		}
		if st.Mode != "" && !slices.Contains([]string{"hybrid", "vector", "keyword"}, st.Mode) {
			return invalid(param+".mode", "mode is hybrid, vector or keyword")
		}
	case StepRerank:
		if err := tmpl("query", st.Query, true); err != nil {
			return err
		}
		if err := required("documents", st.Documents); err != nil {
			return err
		}
		if _, err := compileExpr(st.Documents, earlier, false); err != nil {
			return invalid(param+".documents", "%s", err)
		}
		if st.TopN < 0 {
			return invalid(param+".top_n", "top_n must be positive")
		}
	case StepAnswerWithSources:
		if err := required("model", st.Model); err != nil {
			return err
		}
		if len(st.CollectionIDs) == 0 {
			return invalid(param+".collection_ids", "an answer_with_sources step cites at least one collection")
		}
		if err := tmpl("question", st.Question, true); err != nil {
			return err
		}
		if st.MaxTokens != nil && *st.MaxTokens < 1 {
			return invalid(param+".max_tokens", "max_tokens must be at least 1")
		}
	case StepHTTP:
		if st.Method == "" {
			sp.Steps[i].Method = "GET"
		} else if !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, st.Method) {
			return invalid(param+".method", "method is GET, POST, PUT, PATCH or DELETE")
		}
		if err := tmpl("url", st.URL, true); err != nil {
			return err
		}
		if !strings.Contains(st.URL, "{{") {
			if u, err := url.Parse(st.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return invalid(param+".url", "url must be an http or https URL")
			}
		}
		for k, v := range st.Headers {
			if err := tmpl("headers."+k, v, false); err != nil {
				return err
			}
		}
		if err := tmpl("body", st.Body, false); err != nil {
			return err
		}
	case StepTransform:
		if (st.Template == "") == (st.Expression == "") {
			return invalid(param+".template", "a transform step has a template or an expression (one of them)")
		}
		if err := tmpl("template", st.Template, false); err != nil {
			return err
		}
		if st.Expression != "" {
			if _, err := compileExpr(st.Expression, earlier, false); err != nil {
				return invalid(param+".expression", "%s", err)
			}
		}
	case StepCondition:
		if err := required("when", st.When); err != nil {
			return err
		}
		if _, err := compileExpr(st.When, earlier, true); err != nil {
			return invalid(param+".when", "%s", err)
		}
		for field, target := range map[string]string{"then": st.Then, "else": st.Else} {
			if target == "" {
				continue
			}
			j, ok := index[target]
			if !ok {
				return invalid(param+"."+field, "no step %q", target)
			}
			if j <= i {
				return invalid(param+"."+field, "a condition jumps forward: %q is not after %q", target, st.ID)
			}
		}
	case StepApproval:
		if st.Approvers != nil {
			for j, sc := range st.Approvers.Scopes {
				if strings.TrimSpace(sc) == "" {
					return invalid(fmt.Sprintf("%s.approvers.scopes[%d]", param, j), "a scope is not empty")
				}
			}
		}
		if len(st.Instructions) > MaxTemplateLen {
			return invalid(param+".instructions", "instructions are at most %d bytes", MaxTemplateLen)
		}
		if err := tmpl("instructions", st.Instructions, false); err != nil {
			return err
		}
	case StepWait:
		d, err := time.ParseDuration(st.Duration)
		if err != nil || d <= 0 || d > MaxWait {
			return invalid(param+".duration", "duration is a duration such as \"10s\" or \"2h\", at most %v", MaxWait)
		}
	}
	return nil
}

// checkTemplates compiles every string of v as a template.
func checkTemplates(param string, v any) error {
	switch x := v.(type) {
	case string:
		if _, err := compileTemplate(x); err != nil {
			return invalid(param, "%s", err)
		}
	case []any:
		for i, e := range x {
			if err := checkTemplates(fmt.Sprintf("%s[%d]", param, i), e); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, e := range x {
			if err := checkTemplates(param+"."+k, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// duration parses a validated duration field ("" gives def).
func duration(s string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(s); err == nil && s != "" {
		return d
	}
	return def
}
