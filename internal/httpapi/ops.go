package httpapi

import (
	"log/slog"

	"github.com/sovereign-ai/sovereign/internal/answers"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/responses"
)

// Ops are the API's operations on typed requests, shared by the HTTP
// handlers (Server embeds them) and the Batch API's lines (RunLine): a
// batch service built on Ops needs no HTTP server, so the server can be
// given its batch service when it is built.
type Ops struct {
	// Gen governs every model call (internal/generate).
	Gen *generate.Service
	// Sources serves collections, documents and search (nil: those routes
	// answer 404).
	Sources Sources
	// Answers answers with sources (completions with citations or
	// sources, and the Responses API's citations).
	Answers *answers.Service
	// Responses keeps the Responses API's stored responses (nil: only
	// "store": false is served).
	Responses responses.Store
	// DefaultRerankModel serves "rerank": true in searches and completions
	// with sources ("": such requests must name a model).
	DefaultRerankModel string
	Log                *slog.Logger
}
