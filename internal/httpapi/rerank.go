package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/openai"
)

// rerankRequest is POST /v1/rerank in the Cohere/Jina shape.
type rerankRequest struct {
	Model           string            `json:"model"`
	Query           string            `json:"query"`
	Documents       []json.RawMessage `json:"documents"`
	TopN            *int              `json:"top_n"`
	ReturnDocuments *bool             `json:"return_documents"`
}

type rerankDocument struct {
	Text string `json:"text"`
}

type rerankResult struct {
	Index          int             `json:"index"`
	RelevanceScore float64         `json:"relevance_score"`
	Document       *rerankDocument `json:"document,omitempty"`
}

// maxRerankDocuments bounds one rerank request.
const maxRerankDocuments = 1000

func (s *Server) rerank(w http.ResponseWriter, r *http.Request) error {
	var req rerankRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	if req.Query == "" {
		return apierr.Invalid("query", "'query' must be a non-empty string")
	}
	if len(req.Documents) == 0 || len(req.Documents) > maxRerankDocuments {
		return apierr.Invalid("documents", fmt.Sprintf("'documents' must hold 1 to %d documents", maxRerankDocuments))
	}
	docs := make([]string, len(req.Documents))
	for i, raw := range req.Documents {
		var d rerankDocument
		if len(raw) > 0 && raw[0] == '"' {
			json.Unmarshal(raw, &d.Text)
		} else if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&d); err != nil {
			return apierr.Invalid(fmt.Sprintf("documents[%d]", i), "a document must be a string or {\"text\": \"…\"}")
		}
		if d.Text == "" {
			return apierr.Invalid(fmt.Sprintf("documents[%d]", i), "a document must not be empty")
		}
		docs[i] = d.Text
	}
	topN := 0
	if req.TopN != nil {
		if *req.TopN < 1 {
			return apierr.Invalid("top_n", "'top_n' must be at least 1")
		}
		topN = *req.TopN
	}
	m, err := s.model(w, r, req.Model, "rerank")
	if err != nil {
		return err
	}
	rr, ok := s.Backend.(inference.Reranker)
	if !ok {
		return apierr.Invalid("model", "reranking is not available on this server")
	}
	start := time.Now()
	res, err := rr.Rerank(r.Context(), inference.RerankRequest{Model: m.ID, Query: req.Query, Documents: docs, TopN: topN})
	s.record(r.Context(), m.ID, catalog.Observation{Latency: time.Since(start), Failed: err != nil})
	if err != nil {
		return err
	}
	if s.Metrics != nil {
		s.Metrics.AddTokens(m.ID, res.PromptTokens, 0)
	}
	sort.SliceStable(res.Results, func(i, j int) bool { return res.Results[i].RelevanceScore > res.Results[j].RelevanceScore })
	out := make([]rerankResult, 0, len(res.Results))
	for _, x := range res.Results {
		rr := rerankResult{Index: x.Index, RelevanceScore: x.RelevanceScore}
		if req.ReturnDocuments == nil || *req.ReturnDocuments {
			rr.Document = &rerankDocument{Text: docs[x.Index]}
		}
		out = append(out, rr)
	}
	if topN > 0 && len(out) > topN {
		out = out[:topN]
	}
	return writeJSON(w, http.StatusOK, map[string]any{
		"object": "list", "model": m.ID, "results": out,
		"usage": map[string]int{"prompt_tokens": res.PromptTokens, "total_tokens": res.PromptTokens},
	})
}
