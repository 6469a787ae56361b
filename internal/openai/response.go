package openai

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/sovereign-ai/sovereign/internal/citation"

	"github.com/sovereign-ai/sovereign/internal/inference"
)

// Usage is OpenAI's usage object.
type Usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// NewUsage converts native usage.
func NewUsage(u *inference.Usage) *Usage {
	if u == nil {
		return nil
	}
	out := &Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	out.PromptTokensDetails.CachedTokens = u.CachedTokens
	return out
}

// TopLogprob is one alternative token.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// TokenLogprob is one entry of logprobs.content.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float32      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// Logprobs is a chat choice's logprobs. Refusal is always null: local
// models do not refuse as a separate channel.
type Logprobs struct {
	Content []TokenLogprob  `json:"content"`
	Refusal *[]TokenLogprob `json:"refusal"`
}

func byteInts(b []byte) []int {
	out := make([]int, len(b))
	for i, c := range b {
		out[i] = int(c)
	}
	return out
}

// NewLogprobs converts native logprobs.
func NewLogprobs(lps []inference.TokenLogprob) []TokenLogprob {
	out := make([]TokenLogprob, 0, len(lps))
	for _, l := range lps {
		t := TokenLogprob{Token: l.Token, Logprob: l.Logprob, Bytes: byteInts(l.Bytes), TopLogprobs: []TopLogprob{}}
		for _, a := range l.Top {
			t.TopLogprobs = append(t.TopLogprobs, TopLogprob{Token: a.Token, Logprob: a.Logprob, Bytes: byteInts(a.Bytes)})
		}
		out = append(out, t)
	}
	return out
}

// AssistantMessage is the message of a chat choice. With tool calls (or
// a legacy function call) and no text, content is null (as OpenAI
// answers).
type AssistantMessage struct {
	Role         string          `json:"role"`
	Content      string          `json:"content"`
	Refusal      *string         `json:"refusal"`
	ToolCalls    []ToolCallParam `json:"tool_calls,omitempty"`
	FunctionCall *FunctionCall   `json:"function_call,omitempty"`
}

// MarshalJSON writes content as null for a message of calls alone.
func (m AssistantMessage) MarshalJSON() ([]byte, error) {
	type plain AssistantMessage
	if len(m.ToolCalls) == 0 && m.FunctionCall == nil || m.Content != "" {
		return json.Marshal(plain(m))
	}
	return json.Marshal(struct {
		Role         string          `json:"role"`
		Content      *string         `json:"content"`
		Refusal      *string         `json:"refusal"`
		ToolCalls    []ToolCallParam `json:"tool_calls,omitempty"`
		FunctionCall *FunctionCall   `json:"function_call,omitempty"`
	}{m.Role, nil, m.Refusal, m.ToolCalls, m.FunctionCall})
}

// ToolCallDelta is a piece of a tool call in a chunk.
type ToolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ChatChoice is one choice of a chat completion.
type ChatChoice struct {
	Index        int              `json:"index"`
	Message      AssistantMessage `json:"message"`
	Logprobs     *Logprobs        `json:"logprobs"`
	FinishReason string           `json:"finish_reason"`
}

// ChatCompletion is the body answering a non-streamed chat completion.
type ChatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []ChatChoice `json:"choices"`
	Usage             *Usage       `json:"usage"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

// Delta is the incremental message of a chunk.
type Delta struct {
	Role         string          `json:"role,omitempty"`
	Content      *string         `json:"content,omitempty"`
	ToolCalls    []ToolCallDelta `json:"tool_calls,omitempty"`
	FunctionCall *FunctionDelta  `json:"function_call,omitempty"`
}

// FunctionDelta is a piece of a legacy function call in a chunk: the
// first has the name.
type FunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ChunkChoice is one choice of a chat completion chunk.
type ChunkChoice struct {
	Index        int       `json:"index"`
	Delta        Delta     `json:"delta"`
	Logprobs     *Logprobs `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// ChatChunk is one SSE chunk of a streamed chat completion.
type ChatChunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []ChunkChoice `json:"choices"`
	Usage             *Usage        `json:"usage,omitempty"`
}

// TextLogprobs is the legacy completions logprobs object. An echoed
// prompt's first token has null for its logprob and top logprobs.
type TextLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float32           `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// TextChoice is one choice of a text completion (or chunk).
type TextChoice struct {
	Index        int           `json:"index"`
	Text         string        `json:"text"`
	Logprobs     *TextLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// TextCompletion is the body (or SSE chunk) of a text completion.
type TextCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []TextChoice `json:"choices"`
	Usage             *Usage       `json:"usage,omitempty"`
}

// Fingerprint identifies this server build in system_fingerprint.
const Fingerprint = "fp_sovereign"

// NewID returns a random id with prefix ("chatcmpl-", "cmpl-").
func NewID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Now is the clock used for "created".
var Now = time.Now

// CitedChatCompletion is a chat completion with the citations of its
// answer (POST /v1/completions with citations).
type CitedChatCompletion struct {
	ChatCompletion
	Citations []citation.Citation `json:"citations,omitempty"`
	// Unsupported lists the sentences left without a marker because a
	// number or name they state is in none of the sources.
	Unsupported []citation.Span `json:"unsupported,omitempty"`
}

// CitedTextCompletion is a text completion with the citations of its
// answer (POST /v1/completions with a prompt and citations), or the chunk
// of a stream that carries them.
type CitedTextCompletion struct {
	TextCompletion
	Citations   []citation.Citation `json:"citations,omitempty"`
	Unsupported []citation.Span     `json:"unsupported,omitempty"`
}

// CitationsChunk is the chunk of a streamed answer with sources that
// carries its citations, after the last text and before [DONE].
type CitationsChunk struct {
	ChatChunk
	Citations   []citation.Citation `json:"citations"`
	Unsupported []citation.Span     `json:"unsupported,omitempty"`
}
