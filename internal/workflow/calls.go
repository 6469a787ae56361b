package workflow

import (
	"context"
	"fmt"

	"github.com/sovereign-ai/sovereign/internal/sources"
)

// Reranker runs rerank steps' model calls through the generation service
// as the run's key (user names the run in the request log), with typed
// requests: governed and recorded like POST /v1/rerank, with no HTTP in
// between.
type Reranker interface {
	Rerank(ctx context.Context, keyID, user, model, query string, docs []string, topN int) ([]Ranked, error)
}

// Ranked is one result of a rerank step, as POST /v1/rerank gives it with
// return_documents: best first.
type Ranked struct {
	Index          int        `json:"index"`
	RelevanceScore float64    `json:"relevance_score"`
	Document       RankedText `json:"document"`
}

// RankedText is a ranked document's text.
type RankedText struct {
	Text string `json:"text"`
}

// documentTexts reads a rerank step's documents: strings, or objects with
// a "text" string (a retrieve step's hits), as POST /v1/rerank takes them.
func documentTexts(list []any) ([]string, error) {
	out := make([]string, len(list))
	for i, d := range list {
		switch v := d.(type) {
		case string:
			out[i] = v
		case map[string]any:
			t, ok := v["text"].(string)
			if !ok {
				return nil, permanent{fmt.Sprintf("documents[%d]: an object without a \"text\" string", i)}
			}
			out[i] = t
		default:
			return nil, permanent{fmt.Sprintf("documents[%d]: a %T, not a string or {\"text\": …}", i, d)}
		}
	}
	return out, nil
}

// Answerer runs answer_with_sources steps through the generation service
// as the run's key: an answer with citations from the team's collections,
// governed and recorded like POST /v1/completions with sources, with no
// HTTP in between.
type Answerer interface {
	AnswerWithSources(ctx context.Context, keyID, user string, q Question) (Cited, error)
}

// Question is an answer_with_sources step's request, its templates
// rendered.
type Question struct {
	Model       string
	Text        string
	Collections []string
	// MaxTokens 0 leaves the model's limit; Temperature nil is OpenAI's
	// default (1), as over HTTP.
	MaxTokens   int
	Temperature *float64
}

// Cited is an answer_with_sources step's answer: its text and its
// citations, as POST /v1/completions gives them (citations are
// citation.Citation objects, kept as JSON here).
type Cited struct {
	Text      string
	Citations any
}

// Searcher runs retrieve steps' searches through the sources service as
// the run's key: the collection must be its team's, and the search is
// recorded like POST /v1/collections/{id}/search, with no HTTP in
// between.
type Searcher interface {
	Search(ctx context.Context, keyID, user, collectionID, query string, topK int, mode string) ([]sources.Result, error)
}
