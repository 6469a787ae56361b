package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
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

func (s *Server) rerank(w http.ResponseWriter, r *http.Request) error {
	var req rerankRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	m, docs, out, promptTokens, err := s.rerankDocs(w, r, req)
	if err != nil {
		return err
	}
	for i := range out {
		if req.ReturnDocuments == nil || *req.ReturnDocuments {
			out[i].Document = &rerankDocument{Text: docs[out[i].Index]}
		}
	}
	return wire.JSON(w, http.StatusOK, map[string]any{
		"object": "list", "model": m.ID, "results": out,
		"usage": map[string]int{"prompt_tokens": promptTokens, "total_tokens": promptTokens},
	})
}

// rerankV2Request is Cohere's v2 rerank request (documents are strings).
type rerankV2Request struct {
	Model           string            `json:"model"`
	Query           string            `json:"query"`
	Documents       []json.RawMessage `json:"documents"`
	TopN            *int              `json:"top_n"`
	MaxTokensPerDoc *int              `json:"max_tokens_per_doc"`
	Priority        *int              `json:"priority"`
}

// rerankV2 serves POST /v2/rerank, the route of Cohere's current client
// (cohere.ClientV2, LiteLLM's cohere/ models), with Cohere's v2 response:
// id, results (index, relevance_score) and meta. It is a vendor route for
// those clients, not a version of Sovereign's API.
func (s *Server) rerankV2(w http.ResponseWriter, r *http.Request) error {
	var req rerankV2Request
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	if req.MaxTokensPerDoc != nil && *req.MaxTokensPerDoc < 1 {
		return apierr.Invalid("max_tokens_per_doc", "'max_tokens_per_doc' must be at least 1")
	}
	// max_tokens_per_doc bounds Cohere's truncation (default 4096 tokens);
	// the model's context bounds ours, so any value above 0 is honoured by
	// documents that fit. priority orders Cohere's queue: nothing to do.
	_, _, out, promptTokens, err := s.rerankDocs(w, r, rerankRequest{Model: req.Model, Query: req.Query, Documents: req.Documents, TopN: req.TopN})
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{
		"id":      openai.NewID(""),
		"results": out,
		"meta": map[string]any{
			"api_version":  map[string]any{"version": "2"},
			"billed_units": map[string]any{"search_units": 1, "input_tokens": promptTokens},
		},
	})
}

// rerankDocs reads the documents (strings or {"text": …} objects), then
// reranks through the generation service.
func (s *Server) rerankDocs(w http.ResponseWriter, r *http.Request, req rerankRequest) (catalog.Resolved, []string, []rerankResult, int, error) {
	var none catalog.Resolved
	if req.Query == "" {
		return none, nil, nil, 0, apierr.Invalid("query", "'query' must be a non-empty string")
	}
	if len(req.Documents) == 0 || len(req.Documents) > generate.MaxRerankDocuments {
		return none, nil, nil, 0, apierr.Invalid("documents", fmt.Sprintf("'documents' must hold 1 to %d documents", generate.MaxRerankDocuments))
	}
	docs := make([]string, len(req.Documents))
	for i, raw := range req.Documents {
		var d rerankDocument
		if len(raw) > 0 && raw[0] == '"' {
			json.Unmarshal(raw, &d.Text)
		} else if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&d); err != nil {
			return none, nil, nil, 0, apierr.Invalid(fmt.Sprintf("documents[%d]", i), "a document must be a string or {\"text\": \"…\"}")
		}
		docs[i] = d.Text
	}
	topN := 0
	if req.TopN != nil {
		if *req.TopN < 1 {
			return none, nil, nil, 0, apierr.Invalid("top_n", "'top_n' must be at least 1")
		}
		topN = *req.TopN
	}
	m, err := s.model(w, r, req.Model, "rerank")
	if err != nil {
		return none, nil, nil, 0, err
	}
	ranked, st, err := s.Gen.Rerank(r.Context(), info(r.Context()), m, req.Query, docs, topN)
	rateHeaders(w.Header(), st)
	if err != nil {
		return none, nil, nil, 0, err
	}
	out := make([]rerankResult, 0, len(ranked.Results))
	for _, x := range ranked.Results {
		out = append(out, rerankResult{Index: x.Index, RelevanceScore: x.RelevanceScore})
	}
	return m, ranked.Documents, out, ranked.PromptTokens, nil
}
