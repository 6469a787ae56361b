// Package inference holds Sovereign's native request and stream model for
// text generation, embeddings and tokenization, and the Backend interface
// that the local engine and upstream servers implement. The OpenAI API is a
// translation layer over these types (package openai); runners speak them
// on the wire as JSON.
package inference

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Message is one chat turn. An assistant turn may carry the tool calls it
// made; a "tool" turn is the result of the call ToolCallID.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	// Parts is the client's content array, verbatim, when it has parts
	// other than text (PartKinds names their types: image_url,
	// input_audio, file); Content then holds its text parts. Only models
	// that take such input get it (an upstream with the vision or audio
	// capability), and it goes out as the message's content.
	Parts     json.RawMessage `json:"-"`
	PartKinds []string        `json:"-"`
}

// MarshalJSON writes Parts, when there are any, as the content.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	if len(m.Parts) == 0 {
		return json.Marshal(plain(m))
	}
	return json.Marshal(struct {
		plain
		Content json.RawMessage `json:"content"`
	}{plain(m), m.Parts})
}

// ToolCall is a function call made by the model: Arguments is JSON text.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a function the model may call; Parameters is its arguments'
// JSON Schema.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Tool choices (CompletionRequest.ToolChoice).
const (
	ToolChoiceAuto     = "auto"     // the model answers with text or calls
	ToolChoiceNone     = "none"     // the model answers with text
	ToolChoiceRequired = "required" // the model calls one or more tools
)

// ToolCallDelta is a piece of a tool call in a stream: the first piece of
// call Index has its ID and Name, later ones add to Arguments.
type ToolCallDelta struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// GrammarTrigger starts a lazy grammar: a regular expression matched from
// the start of the output (the grammar sees the output from its first
// group on), or a token.
type GrammarTrigger struct {
	Pattern string `json:"pattern,omitempty"`
	Token   *int32 `json:"token,omitempty"`
}

// Sampling holds per-request sampling settings. Temperature <= 0 means
// greedy decoding.
type Sampling struct {
	Temperature      float32           `json:"temperature"`
	TopP             float32           `json:"top_p,omitempty"`
	TopK             int               `json:"top_k,omitempty"`
	MinP             float32           `json:"min_p,omitempty"`
	Seed             *uint32           `json:"seed,omitempty"`
	RepeatPenalty    float32           `json:"repeat_penalty,omitempty"`
	RepeatLastN      int               `json:"repeat_last_n,omitempty"`
	PresencePenalty  float32           `json:"presence_penalty,omitempty"`
	FrequencyPenalty float32           `json:"frequency_penalty,omitempty"`
	LogitBias        map[int32]float32 `json:"logit_bias,omitempty"`
}

// CompletionRequest asks a model to continue a prompt. Exactly one of
// Prompt, Messages and Tokens is set; Messages are formatted with the
// model's chat template.
type CompletionRequest struct {
	Model     string    `json:"model,omitempty"`
	Prompt    string    `json:"prompt,omitempty"`
	Messages  []Message `json:"messages,omitempty"`
	Tokens    []int32   `json:"tokens,omitempty"`
	MaxTokens int       `json:"max_tokens,omitempty"` // 0: until the end of the context
	// MaxInputTokens refuses prompts longer than this (0: the context).
	MaxInputTokens int      `json:"max_input_tokens,omitempty"`
	Stop           []string `json:"stop,omitempty"`
	Sampling
	// Grammar is a GBNF grammar (root rule "root") constraining the output.
	Grammar string `json:"grammar,omitempty"`
	// JSONSchema is the client's JSON schema (response_format
	// json_schema): a local backend compiles it into Grammar, an upstream
	// gets ResponseFormat instead.
	JSONSchema json.RawMessage `json:"-"`
	// JSONOutput ends generation when the JSON value the output starts
	// with is complete (JSON response formats; see JSONEnd).
	JSONOutput bool `json:"json_output,omitempty"`
	// GrammarTriggers make Grammar lazy: it applies from the first trigger
	// on (tool calls a model may or may not make).
	GrammarTriggers []GrammarTrigger `json:"grammar_triggers,omitempty"`
	// GrammarPrefill is text the grammar starts with that the prompt
	// already ends with; it is fed to the grammar before sampling.
	GrammarPrefill string `json:"grammar_prefill,omitempty"`
	// PreservedTokens are special tokens that appear in the output as their
	// text (a tool-call format's markers); other special tokens do not.
	PreservedTokens []int32 `json:"preserved_tokens,omitempty"`
	// Tools the model may call (with Messages), and how: ToolChoice is
	// auto (also for ""), none or required; ToolName forces that tool.
	Tools             []Tool `json:"tools,omitempty"`
	ToolChoice        string `json:"tool_choice,omitempty"`
	ToolName          string `json:"tool_name,omitempty"`
	ParallelToolCalls bool   `json:"parallel_tool_calls,omitempty"`
	Logprobs          bool   `json:"logprobs,omitempty"`
	TopLogprobs       int    `json:"top_logprobs,omitempty"`
	// Suffix asks for fill in the middle: the text between Prompt (or
	// Tokens) and Suffix, in the model's FIM format (its fim_pre, fim_suf
	// and fim_mid tokens); a model without them refuses it.
	Suffix string `json:"suffix,omitempty"`
	// Echo sends the prompt before the completion, as the first event,
	// with the prompt tokens' logprobs when Logprobs is set (the first
	// token's marked NoLogprob). PromptOnly (with Echo) generates nothing.
	Echo       bool `json:"echo,omitempty"`
	PromptOnly bool `json:"prompt_only,omitempty"`
	// ResponseFormat is the client's OpenAI response_format, kept verbatim
	// for upstream servers, which apply it themselves (Grammar is what a
	// local runner applies).
	ResponseFormat json.RawMessage `json:"-"`
	// Stream tells whether the caller forwards events as they come; when
	// false a backend may produce the answer in one piece.
	Stream bool `json:"-"`
	// Priority is the request's (PriorityFrom its context, set by the
	// local engine): a runner reads an interactive request's prompt in
	// steps of its own, without the background generations beside it.
	Priority Priority `json:"priority,omitempty"`
	// trimLeft is set by a runner whose prompt format makes the model start
	// with a space; it is not part of the protocol.
	trimLeft bool
}

// TrimLeft reports whether the output's leading spaces are dropped.
func (r *CompletionRequest) TrimLeft() bool { return r.trimLeft }

// SetTrimLeft asks for the output's leading spaces to be dropped.
func (r *CompletionRequest) SetTrimLeft() { r.trimLeft = true }

// TokenLogprob is the log-probability of one generated (or, echoed,
// prompt) token.
type TokenLogprob struct {
	ID      int32          `json:"id"`
	Token   string         `json:"token"`
	Bytes   []byte         `json:"bytes"`
	Logprob float32        `json:"logprob"`
	Top     []TokenLogprob `json:"top,omitempty"`
	// NoLogprob marks the first token of an echoed prompt: nothing
	// precedes it, so it has no log-probability (null in OpenAI's answer).
	NoLogprob bool `json:"no_logprob,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	CachedTokens     int `json:"cached_tokens"`
}

// Finish reasons.
const (
	FinishStop      = "stop"
	FinishLength    = "length"
	FinishToolCalls = "tool_calls"
)

// Event is one element of a completion stream: text (possibly empty, when
// only logprobs advance), then a final event with Done set. A stream that
// fails ends with an event carrying Error.
type Event struct {
	Text string `json:"text,omitempty"`
	// ToolCalls are pieces of the tool calls being made.
	ToolCalls    []ToolCallDelta `json:"tool_calls,omitempty"`
	Logprobs     []TokenLogprob  `json:"logprobs,omitempty"`
	Done         bool            `json:"done,omitempty"`
	FinishReason string          `json:"finish_reason,omitempty"`
	Usage        *Usage          `json:"usage,omitempty"`
	Error        string          `json:"error,omitempty"`
}

// EmbeddingRequest asks for one embedding per input.
type EmbeddingRequest struct {
	Model string   `json:"model,omitempty"`
	Input []string `json:"input"`
}

// EmbeddingResponse holds L2-normalised embeddings in input order.
type EmbeddingResponse struct {
	Embeddings   [][]float32 `json:"embeddings"`
	PromptTokens int         `json:"prompt_tokens"`
}

// TokenizeRequest asks for the tokens of Content.
type TokenizeRequest struct {
	Model        string `json:"model,omitempty"`
	Content      string `json:"content"`
	AddSpecial   bool   `json:"add_special"`
	ParseSpecial bool   `json:"parse_special"`
}

// TokenizeResponse holds tokens.
type TokenizeResponse struct {
	Tokens []int32 `json:"tokens"`
}

// DetokenizeRequest asks for the text of Tokens.
type DetokenizeRequest struct {
	Model  string  `json:"model,omitempty"`
	Tokens []int32 `json:"tokens"`
}

// DetokenizeResponse holds text.
type DetokenizeResponse struct {
	Content string `json:"content"`
}

// RerankRequest asks for the relevance of each document to the query.
type RerankRequest struct {
	Model     string   `json:"model,omitempty"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	// TopN keeps the best TopN results (0: all).
	TopN int `json:"top_n,omitempty"`
	// Method asks a local causal model's runner for a rerank method other
	// than its own ("chat-logits" instead of "query-likelihood"); "" uses
	// the model's. Not part of the public API: bench/retrieval compares
	// the methods with it.
	Method string `json:"method,omitempty"`
}

// RerankResult is one document's relevance.
type RerankResult struct {
	Index          int     `json:"index"`
	RelevanceScore float64 `json:"relevance_score"`
}

// RerankResponse holds results ordered by decreasing relevance.
type RerankResponse struct {
	Results      []RerankResult `json:"results"`
	PromptTokens int            `json:"prompt_tokens"`
}

// Reranker is implemented by backends that can rerank documents.
type Reranker interface {
	Rerank(ctx context.Context, req RerankRequest) (RerankResponse, error)
}

// Stream yields completion events. Recv returns io.EOF after the final
// event; Close releases the request (cancelling generation if unfinished).
type Stream interface {
	Recv() (Event, error)
	Close() error
}

// Backend serves one or more models.
type Backend interface {
	Complete(ctx context.Context, req CompletionRequest) (Stream, error)
	Embed(ctx context.Context, req EmbeddingRequest) (EmbeddingResponse, error)
	Tokenize(ctx context.Context, req TokenizeRequest) (TokenizeResponse, error)
	Detokenize(ctx context.Context, req DetokenizeRequest) (DetokenizeResponse, error)
}

// Error kinds that backends return, wrapped with what they know
// (fmt.Errorf("%w: %q", ErrModelNotFound, id)); each is an API error of
// its own code, shown with the wrapping's text.
var (
	ErrModelNotFound  = apierr.Kind(apierr.Error{Code: apierr.ModelNotFound, Param: "model", Message: "model not found"})
	ErrModelFailed    = apierr.Kind(apierr.Error{Code: apierr.ModelFailed, Message: "model failed to load", RetryAfter: 30 * time.Second})
	ErrUnsupported    = apierr.Kind(apierr.Error{Code: apierr.InvalidRequest, Param: "model", Message: "operation not supported by this model"})
	ErrBackendCrashed = errBackendCrashed{}
)

// OverloadedError says a model's queue is full; retry after RetryAfter.
type OverloadedError struct {
	Model      string
	RetryAfter time.Duration
}

// APIError is a 503 model_overloaded with the wait.
func (e *OverloadedError) APIError() *apierr.Error {
	return &apierr.Error{Code: apierr.ModelOverloaded, Message: e.Error(), RetryAfter: e.RetryAfter}
}

func (e *OverloadedError) Error() string {
	return fmt.Sprintf("model %q is overloaded: too many queued requests, retry after %s", e.Model, e.RetryAfter)
}

// LoadingError says a model is still loading.
type LoadingError struct {
	Model      string
	RetryAfter time.Duration
}

// APIError is a 503 model_loading with the wait.
func (e *LoadingError) APIError() *apierr.Error {
	return &apierr.Error{Code: apierr.ModelLoading, Message: e.Error(), RetryAfter: e.RetryAfter}
}

func (e *LoadingError) Error() string {
	return fmt.Sprintf("model %q is loading, retry after %s", e.Model, e.RetryAfter)
}

// Upstream failure kinds (see UpstreamError).
const (
	UpstreamUnavailable = "unavailable"  // no replica could be reached
	UpstreamTimeout     = "timeout"      // the upstream did not answer in time
	UpstreamBadResponse = "bad_response" // the upstream answered with an error or garbage
	UpstreamRateLimited = "rate_limited" // the upstream answered 429
)

// UpstreamError is a failure of an upstream server behind a model. Kind
// says which (the HTTP layer maps it to 503, 504, 502 or 429); Status is
// the upstream's HTTP status when it answered; RetryAfter passes its
// Retry-After on.
type UpstreamError struct {
	Model      string
	Kind       string
	Status     int
	Message    string
	RetryAfter time.Duration
}

func (e *UpstreamError) Error() string { return e.Message }

// APIError is the upstream's failure as the API reports it: a 429 with
// its wait, 504, 503 with a wait, or 502.
func (e *UpstreamError) APIError() *apierr.Error {
	out := &apierr.Error{Message: e.Message, RetryAfter: e.RetryAfter}
	switch e.Kind {
	case UpstreamRateLimited:
		out.Code = apierr.RateLimitExceeded
		if out.RetryAfter <= 0 {
			out.RetryAfter = time.Second
		}
	case UpstreamTimeout:
		out.Code = apierr.UpstreamTimeout
	case UpstreamUnavailable:
		out.Code = apierr.UpstreamUnavailable
		if out.RetryAfter <= 0 {
			out.RetryAfter = time.Second
		}
	default:
		out.Code = apierr.UpstreamError
	}
	return out
}

// GenerationError is a generation that the model's runner ended with an
// error of its own ("decode failed: …") after it had started: not the
// caller's fault, worth a retry. The HTTP layer shows the runner's message
// (a 502 model_crashed, or OpenAI's error event in a stream).
type GenerationError struct {
	Model   string
	Message string
}

// APIError is a 502 model_crashed that shows the runner's message and
// asks for a retry.
func (e *GenerationError) APIError() *apierr.Error {
	return &apierr.Error{Code: apierr.ModelCrashed, Message: e.Error() + "; retry the request", RetryAfter: time.Second}
}

func (e *GenerationError) Error() string {
	return fmt.Sprintf("model %q failed while generating: %s", e.Model, e.Message)
}

// errBackendCrashed is a runner that stopped while serving a request: a
// 502 whose message hides the runner's exit detail (the wrapping text,
// which names the model file, goes to the log only).
type errBackendCrashed struct{}

func (errBackendCrashed) Error() string { return "model runner stopped unexpectedly" }

func (errBackendCrashed) APIError() *apierr.Error {
	return &apierr.Error{Code: apierr.ModelCrashed, Message: "the model runner stopped while serving this request; retry to restart it"}
}

// StreamOf returns a stream of the given events, then io.EOF: a
// generation that is already known (an answer that need not ask a model).
func StreamOf(events ...Event) Stream { return &eventsStream{events: events} }

type eventsStream struct{ events []Event }

func (s *eventsStream) Recv() (Event, error) {
	if len(s.events) == 0 {
		return Event{}, io.EOF
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func (s *eventsStream) Close() error { return nil }
