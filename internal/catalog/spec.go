package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/models"
)

// Backends a model can have.
const (
	BackendLocal    = "local"
	BackendUpstream = "upstream"
)

// Where a model's configuration comes from.
const (
	SourceInstalled = "installed" // a GGUF in the models directory, unconfigured
	SourceConfig    = "config"    // the YAML configuration file (read-only through the API)
	SourceAPI       = "api"       // created or changed through the admin API (stored in the database)
)

// Capabilities a model can have.
var knownCapabilities = []string{"chat", "completions", "embeddings", "rerank", "tools", "vision", "audio", "responses"}

// rerankMethods are the values of Spec.RerankMethod.
var rerankMethods = []string{models.RerankCrossEncoder, models.RerankQueryLikelihood, models.RerankChatLogits}

// Spec configures one model: a YAML `models:` entry or the body of the
// admin API. Local models are GGUF files (installed ones need no spec;
// a spec with their id sets aliases, limits or deprecation); upstream
// models are served by OpenAI-compatible servers.
type Spec struct {
	ID      string `json:"id,omitempty" yaml:"id"`
	Backend string `json:"backend,omitempty" yaml:"backend"`
	// Path is the GGUF file of a local model that is not in the models
	// directory.
	Path string `json:"path,omitempty" yaml:"path"`

	// BaseURL is the upstream's OpenAI base URL (…/v1); Replicas lists
	// more base URLs serving the same model. Requests are balanced over all.
	BaseURL  string   `json:"base_url,omitempty" yaml:"base_url"`
	Replicas []string `json:"replicas,omitempty" yaml:"replicas"`
	// APIKey is sent to the upstream as a bearer token; it is stored but
	// never shown. APIKeyEnv names an environment variable holding it
	// instead (YAML only).
	APIKey    string `json:"api_key,omitempty" yaml:"api_key"`
	APIKeyEnv string `json:"api_key_env,omitempty" yaml:"api_key_env"`
	// UpstreamModel is the model's name on the upstream (default: ID).
	UpstreamModel string    `json:"upstream_model,omitempty" yaml:"upstream_model"`
	Timeouts      *Timeouts `json:"timeouts,omitempty" yaml:"timeouts"`
	// HealthCheckInterval is how often replicas are checked (default 10s;
	// "off" or a negative duration disables checks).
	HealthCheckInterval *Duration `json:"health_check_interval,omitempty" yaml:"health_check_interval"`

	// Metadata shown in the catalog. For local models it is read from the
	// GGUF; set here it overrides.
	Family       string   `json:"family,omitempty" yaml:"family"`
	Capabilities []string `json:"capabilities,omitempty" yaml:"capabilities"`
	// Tags are the operator's labels (for example "eu" for where a model
	// runs), which policies can require (model_tags in CEL).
	Tags []string `json:"tags,omitempty" yaml:"tags"`
	// RerankMethod says how the model reranks when it has the rerank
	// capability: "cross-encoder", "query-likelihood" or "chat-logits" (local models get it
	// from the GGUF; an upstream's is unknown unless set here).
	RerankMethod  string `json:"rerank_method,omitempty" yaml:"rerank_method"`
	ContextLength uint64 `json:"context_length,omitempty" yaml:"context_length"`
	Parameters    uint64 `json:"parameters,omitempty" yaml:"parameters"`
	Quantization  string `json:"quantization,omitempty" yaml:"quantization"`
	// Tokenizer names a local model whose vocabulary this model shares;
	// upstream models use it for /v1/tokenize and to count usage the
	// upstream does not report.
	Tokenizer string `json:"tokenizer,omitempty" yaml:"tokenizer"`

	// Aliases are other names that resolve to this model ("default",
	// "fast").
	Aliases     []string     `json:"aliases,omitempty" yaml:"aliases"`
	Limits      *Limits      `json:"limits,omitempty" yaml:"limits"`
	Deprecation *Deprecation `json:"deprecation,omitempty" yaml:"deprecation"`
}

// Timeouts bound the phases of an upstream request.
type Timeouts struct {
	Connect   Duration `json:"connect,omitempty" yaml:"connect"`
	FirstByte Duration `json:"first_byte,omitempty" yaml:"first_byte"`
	Idle      Duration `json:"idle,omitempty" yaml:"idle"`
	Total     Duration `json:"total,omitempty" yaml:"total"`
}

// Limits bound what one request may ask of a model.
type Limits struct {
	// MaxInputTokens refuses longer prompts (0: the context length).
	MaxInputTokens int `json:"max_input_tokens,omitempty" yaml:"max_input_tokens"`
	// MaxOutputTokens refuses a larger max_tokens and is the default when
	// a request sets none (0: no limit beyond the context).
	MaxOutputTokens int `json:"max_output_tokens,omitempty" yaml:"max_output_tokens"`
}

// Deprecation marks a model as on its way out: responses carry
// Deprecation and Sunset headers, and after Sunset requests are refused
// with 410.
type Deprecation struct {
	// DeprecatedAt is when the model was deprecated (default: when the
	// deprecation was set).
	DeprecatedAt *time.Time `json:"deprecated_at,omitempty" yaml:"deprecated_at"`
	// Sunset is when the model stops serving.
	Sunset *time.Time `json:"sunset,omitempty" yaml:"sunset"`
	// Replacement is the model to move to.
	Replacement string `json:"replacement,omitempty" yaml:"replacement"`
}

// Duration is a time.Duration written as "30s" in JSON and YAML (a number
// is seconds).
type Duration time.Duration

// MarshalJSON writes the duration as a string like "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "30s", "off" (disabled: -1) or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return d.parse(s)
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("a duration must be a string like \"30s\" or a number of seconds")
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// UnmarshalYAML reads "30s", "off" or a number of seconds.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
		*d = Duration(f * float64(time.Second))
		return nil
	}
	return d.parse(n.Value)
}

func (d *Duration) parse(s string) error {
	if s == "off" {
		*d = -1
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q: want a value like \"30s\" or \"2m\"", s)
	}
	*d = Duration(v)
	return nil
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$`)

// ValidName reports whether s can be a model id or alias: 1 to 128 of
// [A-Za-z0-9._:@+-], starting with a letter or digit.
func ValidName(s string) bool { return validName.MatchString(s) }

// reserved are path segments under /v1/models that name operations.
var reserved = []string{"compare"}

// Normalize checks s and fills defaults (backend local when no URL is
// given, upstream otherwise). It returns an apierr.Invalid naming the field.
func (s *Spec) Normalize() error {
	bad := func(field, format string, args ...any) error {
		return apierr.Invalid(field, fmt.Sprintf(format, args...))
	}
	if !ValidName(s.ID) || slices.Contains(reserved, s.ID) {
		return bad("id", "model id %q is invalid: use 1-128 letters, digits and . _ : @ + -, starting with a letter or digit (and not %q)", s.ID, reserved[0])
	}
	if s.Backend == "" {
		s.Backend = BackendLocal
		if s.BaseURL != "" || len(s.Replicas) > 0 {
			s.Backend = BackendUpstream
		}
	}
	switch s.Backend {
	case BackendLocal:
		for field, v := range map[string]bool{"base_url": s.BaseURL != "", "replicas": len(s.Replicas) > 0, "api_key": s.APIKey != "" || s.APIKeyEnv != "", "upstream_model": s.UpstreamModel != "", "timeouts": s.Timeouts != nil} {
			if v {
				return bad(field, "'%s' applies to upstream models only (this one's backend is local)", field)
			}
		}
	case BackendUpstream:
		if s.Path != "" {
			return bad("path", "'path' applies to local models only")
		}
		urls := s.URLs()
		if len(urls) == 0 {
			return bad("base_url", "an upstream model needs 'base_url' (or 'replicas')")
		}
		for _, u := range urls {
			p, err := url.Parse(u)
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil || p.RawQuery != "" {
				return bad("base_url", "upstream URL %q must be http(s)://host[:port]/path with no credentials or query", u)
			}
		}
		if len(s.Capabilities) == 0 {
			s.Capabilities = []string{"chat", "completions"}
		}
	default:
		return bad("backend", "backend %q is unknown: use local or upstream", s.Backend)
	}
	for _, c := range s.Capabilities {
		if !slices.Contains(knownCapabilities, c) {
			return bad("capabilities", "capability %q is unknown: use %s", c, strings.Join(knownCapabilities, ", "))
		}
		if (c == "tools" || c == "vision" || c == "audio" || c == "responses") && !slices.Contains(s.Capabilities, "chat") {
			return bad("capabilities", "capability %q qualifies chat: list \"chat\" too", c)
		}
	}
	if s.RerankMethod != "" && !slices.Contains(rerankMethods, s.RerankMethod) {
		return bad("rerank_method", "rerank method %q is unknown: use %s", s.RerankMethod, strings.Join(rerankMethods, ", "))
	}
	seen := map[string]bool{}
	for _, a := range s.Aliases {
		if !ValidName(a) || slices.Contains(reserved, a) {
			return bad("aliases", "alias %q is invalid: use the same characters as model ids", a)
		}
		if a == s.ID || seen[a] {
			return bad("aliases", "alias %q is repeated or equals the model id", a)
		}
		seen[a] = true
	}
	if l := s.Limits; l != nil && (l.MaxInputTokens < 0 || l.MaxOutputTokens < 0) {
		return bad("limits", "limits must not be negative")
	}
	if d := s.Deprecation; d != nil && d.Sunset != nil && d.DeprecatedAt != nil && d.Sunset.Before(*d.DeprecatedAt) {
		return bad("deprecation.sunset", "the sunset is before the deprecation")
	}
	if s.Timeouts != nil {
		for name, v := range map[string]Duration{"connect": s.Timeouts.Connect, "first_byte": s.Timeouts.FirstByte, "idle": s.Timeouts.Idle, "total": s.Timeouts.Total} {
			if v < 0 {
				return bad("timeouts."+name, "timeouts must be positive")
			}
		}
	}
	return nil
}

// URLs is every replica's base URL: BaseURL first, then Replicas.
func (s *Spec) URLs() []string {
	var out []string
	if s.BaseURL != "" {
		out = append(out, s.BaseURL)
	}
	for _, r := range s.Replicas {
		if r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// Patch applies a JSON merge patch (RFC 7396) to s: a field set to null is
// cleared, an absent one is kept, and objects (limits, timeouts,
// deprecation) merge field by field. The id cannot change.
func (s *Spec) Patch(raw []byte) error {
	var patch any
	if err := json.Unmarshal(raw, &patch); err != nil {
		return apierr.Invalid("", "the body must be a JSON object")
	}
	fields, ok := patch.(map[string]any)
	if !ok {
		return apierr.Invalid("", "the body must be a JSON object")
	}
	if v, ok := fields["id"]; ok && v != s.ID {
		return apierr.Invalid("id", "a model's id cannot be changed")
	}
	cur, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var target any
	if err := json.Unmarshal(cur, &target); err != nil {
		return err
	}
	b, err := json.Marshal(mergePatch(target, patch))
	if err != nil {
		return err
	}
	var out Spec
	if err := DecodeSpec(b, &out); err != nil {
		return err
	}
	*s = out
	return nil
}

// mergePatch is RFC 7396's MergePatch(target, patch).
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
		} else {
			t[k] = mergePatch(t[k], v)
		}
	}
	return t
}

// DecodeSpec decodes a JSON spec strictly: unknown fields and wrong types
// are errors naming the field.
func DecodeSpec(b []byte, s *Spec) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return apierr.Invalid(te.Field, fmt.Sprintf("'%s' has the wrong type (got JSON %s)", te.Field, te.Value))
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			f = strings.Trim(f, `"`)
			return apierr.Invalid(f, fmt.Sprintf("unknown field '%s'", f))
		}
		return apierr.Invalid("", "the model configuration is not valid: "+err.Error())
	}
	return nil
}
