package generate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/limits"
)

// MaxRerankDocuments is the most documents one rerank scores.
const MaxRerankDocuments = 1000

// Ranked is a rerank's answer.
type Ranked struct {
	// Results are best first, at most top_n of them.
	Results []inference.RerankResult
	// Documents are the documents as the model read them (an input
	// policy may have redacted them), by index.
	Documents    []string
	PromptTokens int
}

// Rerank scores docs against query with the model m (resolved with the
// "rerank" capability), governed like a generation: input policies read
// and may redact the query and the documents, and limits admit the call.
// topN > 0 keeps the best topN. It returns the limits' status too, for an
// HTTP caller's rate-limit headers. HTTP handlers and workflow steps both
// call it.
func (s *Service) Rerank(ctx context.Context, c *Call, m catalog.Resolved, query string, docs []string, topN int) (Ranked, limits.Status, error) {
	var st limits.Status
	switch {
	case query == "":
		return Ranked{}, st, apierr.Invalid("query", "'query' must be a non-empty string")
	case len(docs) == 0 || len(docs) > MaxRerankDocuments:
		return Ranked{}, st, apierr.Invalid("documents", fmt.Sprintf("'documents' must hold 1 to %d documents", MaxRerankDocuments))
	case topN < 0:
		return Ranked{}, st, apierr.Invalid("top_n", "'top_n' must be at least 1")
	}
	for i, d := range docs {
		if d == "" {
			return Ranked{}, st, apierr.Invalid(fmt.Sprintf("documents[%d]", i), "a document must not be empty")
		}
	}
	redact, st, err := s.Admit(ctx, c, m, Gate{Text: query + "\n" + strings.Join(docs, "\n")})
	if err != nil {
		return Ranked{}, st, err
	}
	if redact != nil {
		query = redact(query)
		red := make([]string, len(docs))
		for i, d := range docs {
			red[i] = redact(d)
		}
		docs = red
	}
	rr, ok := m.Target.(inference.Reranker)
	if !ok {
		return Ranked{}, st, apierr.Invalid("model", "reranking is not available on this server")
	}
	start := time.Now()
	res, err := rr.Rerank(ctx, inference.RerankRequest{Model: m.ID, Query: query, Documents: docs, TopN: topN})
	s.Observe(ctx, m.ID, catalog.Observation{Latency: time.Since(start), Failed: err != nil})
	if err != nil {
		return Ranked{}, st, err
	}
	s.AddTokens(m.ID, res.PromptTokens, 0)
	sort.SliceStable(res.Results, func(i, j int) bool { return res.Results[i].RelevanceScore > res.Results[j].RelevanceScore })
	if topN > 0 && len(res.Results) > topN {
		res.Results = res.Results[:topN]
	}
	return Ranked{Results: res.Results, Documents: docs, PromptTokens: res.PromptTokens}, st, nil
}
