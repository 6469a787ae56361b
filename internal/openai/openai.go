// Package openai is the edge translation layer between OpenAI's HTTP API
// shapes and Sovereign's native inference model: it decodes and validates
// OpenAI requests into inference requests, and renders native results and
// events as OpenAI responses and SSE chunks. No inference logic lives here.
package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/grammar"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// decodes counts the request bodies this process decoded (Decode,
// DecodeRequest, PeekRequest): a body is decoded once on its way in, and
// in-process callers of the generation service decode none (tests hold
// them to it).
var decodes atomic.Int64

// Decodes is how many request bodies this process has decoded.
func Decodes() int64 { return decodes.Load() }

// Decode reads one JSON object from r into v, strictly: malformed JSON, a
// wrong type or trailing data is an invalid_request error naming the field.
func Decode(r io.Reader, v any) error {
	decodes.Add(1)
	return decode(r, v)
}

func decode(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return apierr.New(apierr.InvalidJSON, "the request body has data after the JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &te):
		// Fields of embedded structs come prefixed with the struct's name.
		field := strings.TrimPrefix(strings.TrimPrefix(te.Field, "Sampling."), "Peek.")
		if field == "" {
			return apierr.New(apierr.InvalidJSON, "the request body must be a JSON object")
		}
		return apierr.Invalid(field, fmt.Sprintf("invalid type for '%s': expected %s, got JSON %s", field, typeName(te.Type.String()), te.Value))
	case errors.As(err, &se):
		return apierr.New(apierr.InvalidJSON, fmt.Sprintf("the request body is not valid JSON (at byte %d): %s", se.Offset, se.Error()))
	case errors.Is(err, io.EOF):
		return apierr.New(apierr.InvalidJSON, "the request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apierr.New(apierr.InvalidJSON, "the request body is truncated JSON")
	case errors.As(err, &maxErr):
		return apierr.New(apierr.BodyTooLarge, fmt.Sprintf("the request body exceeds the limit of %d bytes", maxErr.Limit))
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return apierr.Invalid(fe.field, fe.msg)
	}
	if strings.Contains(err.Error(), "http: request body too large") {
		return apierr.New(apierr.BodyTooLarge, "the request body is too large")
	}
	return apierr.New(apierr.InvalidJSON, "the request body could not be decoded: "+err.Error())
}

func typeName(goType string) string {
	switch {
	case strings.Contains(goType, "string"):
		return "a string"
	case strings.Contains(goType, "int"), strings.Contains(goType, "float"):
		return "a number"
	case strings.Contains(goType, "bool"):
		return "a boolean"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.Contains(goType, "map"), strings.Contains(goType, "struct"), strings.Contains(goType, "openai."):
		return "an object or string"
	}
	return goType
}

type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.msg }

// StringOrArray is a JSON string or array of strings ("stop", "input").
type StringOrArray []string

// UnmarshalJSON accepts "x", ["x","y"] or null.
func (s *StringOrArray) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*s = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return &fieldError{msg: "expected a string or an array of strings"}
	}
	*s = many
	return nil
}

// Content is message content: a string, or an array of parts. Text parts
// are joined into the string; a message with other parts (image_url,
// input_audio, file) keeps them verbatim in Parts, for a model that takes
// them (an upstream declared with the vision or audio capability), and
// Kinds names their types.
type Content struct {
	Text  string
	Parts json.RawMessage
	Kinds []string
}

// UnmarshalJSON accepts a string or an array of {"type": …} parts.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*c = Content{}
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &c.Text)
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return &fieldError{field: "messages.content", msg: "message content must be a string or an array of content parts"}
	}
	var sb strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			sb.WriteString(p.Text)
		case "image_url", "input_audio", "file":
			if !slices.Contains(c.Kinds, p.Type) {
				c.Kinds = append(c.Kinds, p.Type)
			}
		default:
			return &fieldError{field: "messages.content", msg: fmt.Sprintf("content part type %q is unknown; expected text, image_url, input_audio or file", p.Type)}
		}
	}
	c.Text = sb.String()
	if len(c.Kinds) > 0 {
		c.Parts = append(json.RawMessage(nil), b...)
	}
	return nil
}

// contentOf returns a message's text content ("" for none).
func contentOf(c *Content) string {
	if c == nil {
		return ""
	}
	return c.Text
}

// Message is an OpenAI chat message. FunctionCall (an assistant's) and
// the "function" role are the legacy forms of tool calls and their
// results (see ChatRequest.Functions).
type Message struct {
	Role         string          `json:"role"`
	Content      *Content        `json:"content"`
	Name         string          `json:"name,omitempty"`
	ToolCalls    []ToolCallParam `json:"tool_calls,omitempty"`
	ToolCallID   string          `json:"tool_call_id,omitempty"`
	FunctionCall *FunctionCall   `json:"function_call,omitempty"`
}

// StreamOptions is OpenAI's stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ResponseFormat is OpenAI's response_format.
type ResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict"`
	} `json:"json_schema,omitempty"`
	// raw is the field as the client sent it, passed to upstreams as is.
	raw json.RawMessage
}

// UnmarshalJSON decodes response_format and keeps the client's bytes.
func (f *ResponseFormat) UnmarshalJSON(b []byte) error {
	type plain ResponseFormat
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*f = ResponseFormat(p)
	f.raw = append(json.RawMessage(nil), b...)
	return nil
}

// Sampling holds the sampling fields chat and text completions share,
// including llama.cpp-style extensions (top_k, min_p, repeat_penalty).
type Sampling struct {
	Temperature      *float32           `json:"temperature"`
	TopP             *float32           `json:"top_p"`
	TopK             *int               `json:"top_k"`
	MinP             *float32           `json:"min_p"`
	RepeatPenalty    *float32           `json:"repeat_penalty"`
	PresencePenalty  *float32           `json:"presence_penalty"`
	FrequencyPenalty *float32           `json:"frequency_penalty"`
	Seed             *int64             `json:"seed"`
	LogitBias        map[string]float32 `json:"logit_bias"`
	Stop             StringOrArray      `json:"stop"`
	MaxTokens        *int               `json:"max_tokens"`
	N                *int               `json:"n"`
	Stream           bool               `json:"stream"`
	StreamOptions    *StreamOptions     `json:"stream_options"`
	User             string             `json:"user"`
}

// ChatRequest is the body of POST /v1/chat/completions.
type ChatRequest struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	ResponseFormat      *ResponseFormat `json:"response_format"`
	Logprobs            bool            `json:"logprobs"`
	TopLogprobs         *int            `json:"top_logprobs"`
	Tools               []ToolParam     `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	// Functions and FunctionCall are OpenAI's legacy forms of tools and
	// tool_choice: they are served as those, and the answer then comes in
	// the legacy shape (Legacy).
	Functions    []FunctionParam `json:"functions"`
	FunctionCall json.RawMessage `json:"function_call"`
	Sampling
}

// CompletionRequest is the body of POST /v1/completions: OpenAI's prompt
// form, or Sovereign's answer-with-sources form (messages, citations,
// sources; see Grounded).
type CompletionRequest struct {
	Model    string          `json:"model"`
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Echo     bool            `json:"echo"`
	// Suffix asks for the text between the prompt and it (fill in the
	// middle), on a model with FIM tokens.
	Suffix *string `json:"suffix"`
	// Messages, Citations and Sources make a completion grounded in
	// sources; its answer is a chat completion.
	Messages  []Message       `json:"messages"`
	Citations *CitationsParam `json:"citations"`
	Sources   *SourcesParam   `json:"sources"`
	Sampling
}

// CitationsParam is the citations field of a grounded request: true or
// false, or an object that turns citations on with options:
// {"abstain": false} keeps an answer no source supports (its sentences
// are listed as unsupported) instead of "The sources do not say.".
type CitationsParam struct {
	On bool
	// Abstain is nil when not given (abstaining is the default).
	Abstain *bool
}

// UnmarshalJSON reads true, false or {"abstain": bool}; anything else is
// a 400 naming the field.
func (c *CitationsParam) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &c.On); err == nil {
		return nil
	}
	var o struct {
		Abstain *bool `json:"abstain"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return &fieldError{field: "citations", msg: "'citations' is true, false or an object {\"abstain\": bool}: " + err.Error()}
	}
	c.On, c.Abstain = true, o.Abstain
	return nil
}

// Cite reports whether citations are asked for.
func (c *CitationsParam) Cite() bool { return c != nil && c.On }

// NoAbstain reports whether the caller asked to keep unsupported answers.
func (c *CitationsParam) NoAbstain() bool { return c != nil && c.Abstain != nil && !*c.Abstain }

// SourcesParam names what a grounded completion draws on: the team's
// collections (searched with the question), documents given inline, or
// both.
type SourcesParam struct {
	Collections []string         `json:"collections"`
	Documents   []InlineDocument `json:"documents"`
	// TopK is how many chunks retrieval contributes (default 5).
	TopK *int `json:"top_k"`
	// Mode and Rerank are as in collection search.
	Mode   string          `json:"mode"`
	Rerank json.RawMessage `json:"rerank"`
}

// InlineDocument is a source given in the request itself.
type InlineDocument struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	URL   string `json:"url"`
	Text  string `json:"text"`
}

// Grounded reports whether r asks for an answer drawn from sources (it has
// messages, citations or sources) rather than OpenAI's prompt completion.
func (r *CompletionRequest) Grounded() bool {
	return r.Messages != nil || r.Citations != nil || r.Sources != nil
}

// ChatRequest returns the chat request of a grounded completion: its
// messages, or its prompt (a string) as one user message.
func (r *CompletionRequest) ChatRequest() (ChatRequest, error) {
	out := ChatRequest{Model: r.Model, Messages: r.Messages, Sampling: r.Sampling}
	p := bytes.TrimSpace(r.Prompt)
	hasPrompt := len(p) > 0 && !bytes.Equal(p, []byte("null"))
	switch {
	case hasPrompt && r.Messages != nil:
		return out, apierr.Invalid("prompt", "send either 'messages' or 'prompt', not both")
	case hasPrompt:
		var text string
		if err := json.Unmarshal(p, &text); err != nil {
			return out, apierr.Invalid("prompt", "with 'citations' or 'sources', 'prompt' must be a string")
		}
		out.Messages = []Message{{Role: "user", Content: &Content{Text: text}}}
	}
	if r.Logprobs != nil || r.Echo {
		return out, apierr.Invalid("logprobs", "'logprobs' and 'echo' are not supported with 'messages', 'citations' or 'sources'")
	}
	return out, nil
}

var roles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}

// Native validates r and converts it to a native request.
func (r *ChatRequest) Native() (inference.CompletionRequest, error) {
	if r.Model == "" {
		return inference.CompletionRequest{}, apierr.Invalid("model", "'model' is required")
	}
	if len(r.Messages) == 0 {
		return inference.CompletionRequest{}, apierr.Invalid("messages", "'messages' must be a non-empty array")
	}
	out := inference.CompletionRequest{Model: r.Model}
	legacyCalls := map[string]string{} // function name → id of its last legacy call
	for i, m := range r.Messages {
		if !roles[m.Role] {
			return out, apierr.Invalid(fmt.Sprintf("messages[%d].role", i), fmt.Sprintf("invalid role %q: expected one of system, developer, user, assistant, tool, function", m.Role))
		}
		if m.Content == nil && m.Role != "assistant" {
			return out, apierr.Invalid(fmt.Sprintf("messages[%d].content", i), "'content' is required")
		}
		if err := legacyMessage(i, &m, legacyCalls); err != nil {
			return out, err
		}
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		msg := inference.Message{Role: role, Content: contentOf(m.Content)}
		if m.Content != nil && len(m.Content.Parts) > 0 {
			msg.Parts, msg.PartKinds = m.Content.Parts, m.Content.Kinds
		}
		if err := toolMessage(i, m, &msg); err != nil {
			return out, err
		}
		out.Messages = append(out.Messages, msg)
	}
	// The legacy functions become tools on a copy: r stays as sent.
	q := *r
	if err := q.legacyFunctions(); err != nil {
		return out, err
	}
	if err := q.tools(&out); err != nil {
		return out, err
	}
	max := r.MaxTokens
	if r.MaxCompletionTokens != nil {
		max = r.MaxCompletionTokens
	}
	if err := r.Sampling.apply(&out, max); err != nil {
		return out, err
	}
	if r.Logprobs {
		out.Logprobs = true
		if r.TopLogprobs != nil {
			if *r.TopLogprobs < 0 || *r.TopLogprobs > 20 {
				return out, apierr.Invalid("top_logprobs", "'top_logprobs' must be between 0 and 20")
			}
			out.TopLogprobs = *r.TopLogprobs
		}
	} else if r.TopLogprobs != nil && *r.TopLogprobs > 0 {
		return out, apierr.Invalid("top_logprobs", "'top_logprobs' requires 'logprobs' to be true")
	}
	if rf := r.ResponseFormat; rf != nil {
		out.ResponseFormat = rf.raw // for upstream servers, as sent
		if len(out.ResponseFormat) == 0 {
			out.ResponseFormat, _ = json.Marshal(rf)
		}
		switch rf.Type {
		case "", "text":
		case "json_object":
			out.Grammar, out.JSONOutput = grammar.JSONObject, true
		case "json_schema":
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
				return out, apierr.Invalid("response_format", "'response_format.json_schema.schema' is required for type json_schema")
			}
			// The local backend compiles the schema into a grammar; an
			// upstream gets the client's response_format untouched, so a
			// schema our converter cannot take still reaches a server
			// that can.
			out.JSONSchema, out.JSONOutput = rf.JSONSchema.Schema, true
		default:
			return out, apierr.Invalid("response_format", fmt.Sprintf("unsupported response_format type %q: expected text, json_object or json_schema", rf.Type))
		}
	}
	return out, nil
}

// MaxPrompts bounds the prompts of one completion request times n: each
// is a generation of its own. (LangChain's completion client sends up to
// 20 prompts per request.)
const MaxPrompts = 64

// NativeAll validates r and converts it to one native request per prompt:
// prompt may be a string, an array of strings, an array of token ids, or
// an array of arrays of token ids (OpenAI's four forms).
func (r *CompletionRequest) NativeAll() ([]inference.CompletionRequest, error) {
	p := bytes.TrimSpace(r.Prompt)
	// (A failed Unmarshal can leave a partly filled slice: decode into
	// fresh ones and keep only a success.)
	var strs []string
	var lists [][]int32
	if len(p) > 0 && p[0] == '[' {
		var ss []string
		var ls [][]int32
		if json.Unmarshal(p, &ss) == nil && len(ss) > 1 {
			strs = ss
		} else if json.Unmarshal(p, &ls) == nil && len(ls) > 0 {
			lists = ls
		}
	}
	switch {
	case strs != nil, lists != nil:
	default:
		one, err := r.Native()
		if err != nil {
			return nil, err
		}
		return []inference.CompletionRequest{one}, nil
	}
	n := len(strs)
	if n == 0 {
		n = len(lists)
	}
	if n*r.Choices() > MaxPrompts {
		return nil, apierr.Invalid("prompt", fmt.Sprintf("at most %d prompts times n per request", MaxPrompts))
	}
	out := make([]inference.CompletionRequest, n)
	for i := range out {
		sub := *r
		if strs != nil {
			sub.Prompt, _ = json.Marshal(strs[i])
		} else {
			sub.Prompt, _ = json.Marshal(lists[i])
		}
		one, err := sub.Native()
		if err != nil {
			if apierr.From(err).Param == "prompt" {
				return nil, apierr.WithParam(err, fmt.Sprintf("prompt[%d]", i))
			}
			return nil, err
		}
		out[i] = one
	}
	return out, nil
}

// Native validates r and converts it to a native request. Prompt may be a
// string, an array with one string, or an array of token ids.
func (r *CompletionRequest) Native() (inference.CompletionRequest, error) {
	if r.Model == "" {
		return inference.CompletionRequest{}, apierr.Invalid("model", "'model' is required")
	}
	out := inference.CompletionRequest{Model: r.Model}
	p := bytes.TrimSpace(r.Prompt)
	switch {
	case len(p) == 0 || bytes.Equal(p, []byte("null")):
		return out, apierr.Invalid("prompt", "'prompt' is required")
	case p[0] == '"':
		if err := json.Unmarshal(p, &out.Prompt); err != nil {
			return out, apierr.Invalid("prompt", "'prompt' is not a valid string")
		}
	default:
		var strs []string
		var toks []int32
		if json.Unmarshal(p, &strs) == nil && len(strs) == 1 {
			out.Prompt = strs[0]
		} else if json.Unmarshal(p, &toks) == nil && len(toks) > 0 {
			out.Tokens = toks
		} else {
			return out, apierr.Invalid("prompt", "'prompt' must be a string, an array of strings, an array of token ids, or an array of arrays of token ids")
		}
	}
	max := r.MaxTokens
	if r.Echo && max != nil && *max == 0 {
		// max_tokens 0 with echo asks for the prompt alone (with its
		// logprobs: how scoring harnesses read a text's likelihood).
		max, out.PromptOnly = nil, true
	}
	if err := r.Sampling.apply(&out, max); err != nil {
		return out, err
	}
	if r.Suffix != nil && *r.Suffix != "" {
		// An empty suffix leaves nothing after the insertion point: the
		// plain completion answers that.
		out.Suffix = *r.Suffix
	}
	out.Echo = r.Echo
	if r.Logprobs != nil {
		if *r.Logprobs < 0 || *r.Logprobs > 5 {
			return out, apierr.Invalid("logprobs", "'logprobs' must be between 0 and 5")
		}
		out.Logprobs = true
		out.TopLogprobs = *r.Logprobs
		if r.Echo && out.Suffix != "" {
			// The prompt's tokens then include the suffix and the
			// model's insertion markers, which the echoed text does not.
			return out, apierr.Invalid("echo", "'echo' with 'logprobs' is not supported together with 'suffix'")
		}
	}
	if out.PromptOnly && out.Suffix != "" {
		return out, apierr.Invalid("max_tokens", "'max_tokens' 0 (the prompt alone, with 'echo') cannot be combined with 'suffix'")
	}
	return out, nil
}

// MaxChoices bounds n: each choice is a separate generation holding a slot.
const MaxChoices = 16

// Choices is the number of choices asked for (n, default 1).
func (s *Sampling) Choices() int {
	if s.N == nil {
		return 1
	}
	return *s.N
}

func (s *Sampling) apply(out *inference.CompletionRequest, max *int) error {
	if s.N != nil && (*s.N < 1 || *s.N > MaxChoices) {
		return apierr.Invalid("n", fmt.Sprintf("'n' must be between 1 and %d", MaxChoices))
	}
	if s.StreamOptions != nil && !s.Stream {
		return apierr.Invalid("stream_options", "'stream_options' is only allowed when 'stream' is true")
	}
	out.Temperature = 1 // OpenAI's default
	if t := s.Temperature; t != nil {
		if *t < 0 || *t > 2 || math.IsNaN(float64(*t)) {
			return apierr.Invalid("temperature", "'temperature' must be between 0 and 2")
		}
		out.Temperature = *t
	}
	if p := s.TopP; p != nil {
		if *p <= 0 || *p > 1 {
			return apierr.Invalid("top_p", "'top_p' must be greater than 0 and at most 1")
		}
		out.TopP = *p
	}
	if k := s.TopK; k != nil {
		if *k < 0 {
			return apierr.Invalid("top_k", "'top_k' must be 0 (disabled) or positive")
		}
		out.TopK = *k
	}
	if p := s.MinP; p != nil {
		if *p < 0 || *p > 1 {
			return apierr.Invalid("min_p", "'min_p' must be between 0 and 1")
		}
		out.MinP = *p
	}
	if p := s.RepeatPenalty; p != nil {
		if *p <= 0 {
			return apierr.Invalid("repeat_penalty", "'repeat_penalty' must be positive")
		}
		out.RepeatPenalty = *p
	}
	for name, v := range map[string]*float32{"presence_penalty": s.PresencePenalty, "frequency_penalty": s.FrequencyPenalty} {
		if v != nil && (*v < -2 || *v > 2) {
			return apierr.Invalid(name, fmt.Sprintf("'%s' must be between -2 and 2", name))
		}
	}
	if s.PresencePenalty != nil {
		out.PresencePenalty = *s.PresencePenalty
	}
	if s.FrequencyPenalty != nil {
		out.FrequencyPenalty = *s.FrequencyPenalty
	}
	if s.Seed != nil {
		seed := uint32(*s.Seed)
		out.Seed = &seed
	}
	if len(s.LogitBias) > 0 {
		out.LogitBias = make(map[int32]float32, len(s.LogitBias))
		for k, v := range s.LogitBias {
			id, err := strconv.ParseInt(k, 10, 32)
			if err != nil {
				return apierr.Invalid("logit_bias", fmt.Sprintf("logit_bias key %q is not a token id", k))
			}
			if v < -100 || v > 100 {
				return apierr.Invalid("logit_bias", "logit_bias values must be between -100 and 100")
			}
			out.LogitBias[int32(id)] = v
		}
	}
	if len(s.Stop) > 4 {
		return apierr.Invalid("stop", "'stop' may hold at most 4 sequences")
	}
	out.Stop = s.Stop
	if max != nil {
		if *max < 1 {
			return apierr.Invalid("max_tokens", "'max_tokens' must be at least 1")
		}
		out.MaxTokens = *max
	}
	return nil
}

// EmbeddingRequest is the body of POST /v1/embeddings.
type EmbeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
}

// Native validates r and returns the native request.
func (r *EmbeddingRequest) Native() (inference.EmbeddingRequest, error) {
	if r.Model == "" {
		return inference.EmbeddingRequest{}, apierr.Invalid("model", "'model' is required")
	}
	var in StringOrArray
	if len(bytes.TrimSpace(r.Input)) == 0 || json.Unmarshal(r.Input, &in) != nil {
		var ids []int64
		var idLists [][]int64
		if json.Unmarshal(r.Input, &ids) == nil || json.Unmarshal(r.Input, &idLists) == nil {
			return inference.EmbeddingRequest{}, apierr.Invalid("input", "'input' holds token ids; send text instead: "+
				"the model embeds text with its own tokenizer, and ids from another tokenizer (such as tiktoken's) mean nothing to it. "+
				"LangChain's OpenAIEmbeddings sends token ids unless created with check_embedding_ctx_length=False")
		}
		return inference.EmbeddingRequest{}, apierr.Invalid("input", "'input' must be a string or an array of strings")
	}
	if len(in) == 0 {
		return inference.EmbeddingRequest{}, apierr.Invalid("input", "'input' must not be empty")
	}
	if len(in) > 2048 {
		return inference.EmbeddingRequest{}, apierr.Invalid("input", "'input' may hold at most 2048 items")
	}
	for i, s := range in {
		if s == "" {
			return inference.EmbeddingRequest{}, apierr.Invalid("input", fmt.Sprintf("input[%d] is an empty string", i))
		}
	}
	switch r.EncodingFormat {
	case "", "float", "base64":
	default:
		return inference.EmbeddingRequest{}, apierr.Invalid("encoding_format", "'encoding_format' must be float or base64")
	}
	if r.Dimensions != nil && *r.Dimensions < 1 {
		return inference.EmbeddingRequest{}, apierr.Invalid("dimensions", "'dimensions' must be at least 1")
	}
	return inference.EmbeddingRequest{Model: r.Model, Input: in}, nil
}

// Embedding is one item of an embeddings response; Embedding is []float32
// or a base64 string.
type Embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// EmbeddingResponse is the body answering POST /v1/embeddings.
type EmbeddingResponse struct {
	Object string      `json:"object"`
	Data   []Embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// EmbeddingsResponse renders native embeddings, truncating to dimensions
// (and renormalising) when asked, in float or base64 encoding.
func (r *EmbeddingRequest) Response(res inference.EmbeddingResponse) (EmbeddingResponse, error) {
	out := EmbeddingResponse{Object: "list", Model: r.Model}
	out.Usage.PromptTokens = res.PromptTokens
	out.Usage.TotalTokens = res.PromptTokens
	for i, v := range res.Embeddings {
		if r.Dimensions != nil {
			if *r.Dimensions > len(v) {
				return out, apierr.Invalid("dimensions", fmt.Sprintf("'dimensions' is %d but this model's embeddings have %d", *r.Dimensions, len(v)))
			}
			v = renormalize(v[:*r.Dimensions])
		}
		var e any = v
		if r.EncodingFormat == "base64" {
			buf := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(x))
			}
			e = base64.StdEncoding.EncodeToString(buf)
		}
		out.Data = append(out.Data, Embedding{Object: "embedding", Index: i, Embedding: e})
	}
	return out, nil
}

func renormalize(v []float32) []float32 {
	out := append([]float32(nil), v...)
	var s float64
	for _, x := range out {
		s += float64(x) * float64(x)
	}
	if s > 0 {
		inv := float32(1 / math.Sqrt(s))
		for i := range out {
			out[i] *= inv
		}
	}
	return out
}
