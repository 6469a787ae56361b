// Package runnerproto defines the wire protocol between the API server and
// its `sovereign runner` children: loopback HTTP with JSON bodies, and
// completions streamed as NDJSON lines of inference.Event.
//
//	GET  /health          → Health (503 with status "loading" until the model is loaded)
//	POST /completion      inference.CompletionRequest → NDJSON inference.Event…
//	POST /embedding       inference.EmbeddingRequest  → inference.EmbeddingResponse
//	POST /rerank          inference.RerankRequest     → inference.RerankResponse (one result per document, in input order)
//	POST /tokenize        inference.TokenizeRequest   → inference.TokenizeResponse
//	POST /detokenize      inference.DetokenizeRequest → inference.DetokenizeResponse
//	POST /apply-template  TemplateRequest             → TemplateResponse
//
// Every request carries "Authorization: Bearer <token>" with the token the
// server gave the runner in SOVEREIGN_RUNNER_TOKEN. Errors are ErrorBody.
package runnerproto

import (
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// Runner kinds.
const (
	KindGenerate = "generate"
	KindEmbed    = "embed"
)

// Health is the runner's state.
type Health struct {
	Status       string `json:"status"` // "loading" or "ok"
	Kind         string `json:"kind,omitempty"`
	Slots        int    `json:"slots,omitempty"`
	Active       int    `json:"active"`
	Waiting      int    `json:"waiting"`
	CtxPerSlot   int    `json:"ctx_per_slot,omitempty"`
	CtxTrain     int    `json:"ctx_train,omitempty"`
	NVocab       int    `json:"n_vocab,omitempty"`
	NEmbd        int    `json:"n_embd,omitempty"`
	ChatTemplate bool   `json:"chat_template,omitempty"`
	// RerankMethod is how the model reranks (RerankCrossEncoder or
	// RerankQueryLikelihood), "" when it cannot.
	RerankMethod string `json:"rerank_method,omitempty"`
}

// Rerank methods.
const (
	// RerankCrossEncoder scores a (query, document) pair with a model whose
	// pooling type is rank; the relevance is sigmoid(score).
	RerankCrossEncoder = "cross-encoder"
	// RerankChatLogits scores a pair with a chat model: the relevance is
	// P(yes) / (P(yes) + P(no)) for its first answer token.
	RerankChatLogits = "chat-logits"
	// RerankQueryLikelihood scores a pair with a causal language model: the
	// relevance is the geometric mean probability of the query's tokens
	// written after the document. It is how causal models rerank unless a
	// request asks for RerankChatLogits.
	RerankQueryLikelihood = "query-likelihood"
)

// Error codes.
const (
	CodeInvalid     = "invalid_request"
	CodeOverloaded  = "overloaded"
	CodeLoading     = "loading"
	CodeUnsupported = "unsupported"
	CodeInternal    = "internal"
)

// Error is a runner error.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
}

// ErrorBody wraps Error in a response body.
type ErrorBody struct {
	Error Error `json:"error"`
}

// TemplateRequest asks the runner to format messages with the model's chat template.
type TemplateRequest struct {
	Messages []inference.Message `json:"messages"`
}

// TemplateResponse holds the formatted prompt.
type TemplateResponse struct {
	Prompt string   `json:"prompt"`
	Stop   []string `json:"stop,omitempty"` // stop sequences the format implies
}

// Environment variables the server sets for a runner.
const (
	EnvToken = "SOVEREIGN_RUNNER_TOKEN"
)
