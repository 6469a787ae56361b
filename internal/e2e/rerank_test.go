package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

type rerankOut struct {
	Object  string `json:"object"`
	Model   string `json:"model"`
	Results []struct {
		Index          int             `json:"index"`
		RelevanceScore float64         `json:"relevance_score"`
		Document       json.RawMessage `json:"document"`
	} `json:"results"`
	Usage *struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func (e *env) rerank(t *testing.T, body map[string]any) rerankOut {
	t.Helper()
	resp := e.post(context.Background(), "/v1/rerank", body)
	if resp.StatusCode != 200 {
		t.Fatalf("rerank: status %d: %+v", resp.StatusCode, readError(t, resp))
	}
	defer resp.Body.Close()
	var out rerankOut
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDefaultRerankModelReranks ranks documents with gemma3-270m, the
// default rerank model where the test models are installed (the smallest
// known chat model; query likelihood): in each clear-cut case the document
// that answers the query comes first. The cases leave a margin of at least
// 0.045 between the answer and the best distractor, above the ~0.03 by
// which a pair's score moves with how its decode is batched (measured; see
// docs/rerank.md).
func TestDefaultRerankModelReranks(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 1024})

	resp := e.get("/v1/models/gemma3-270m")
	var m struct {
		Capabilities []string `json:"capabilities"`
		RerankMethod string   `json:"rerank_method"`
	}
	json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if !slices.Contains(m.Capabilities, "rerank") || m.RerankMethod != "query-likelihood" {
		t.Fatalf("gemma3-270m: capabilities %v, rerank_method %q; want rerank by query-likelihood", m.Capabilities, m.RerankMethod)
	}
	resp = e.get("/v1/models/all-minilm-l6-v2")
	var emb map[string]any
	json.NewDecoder(resp.Body).Decode(&emb)
	resp.Body.Close()
	if _, ok := emb["rerank_method"]; ok || slices.Contains(emb["capabilities"].([]any), any("rerank")) {
		t.Errorf("the embedding model claims to rerank: %v", emb)
	}

	cases := []struct {
		query string
		docs  []string
		best  int
	}{
		{"What is the capital of France?", []string{
			"The stock market fell sharply on Monday.",
			"Paris is the capital and largest city of France.",
			"Cats sleep for most of the day.",
		}, 1},
		{"How do I bake bread?", []string{
			"The stock market fell sharply on Monday.",
			"To bake bread, mix flour, water, yeast and salt, let the dough rise, then bake it in a hot oven.",
			"Cats sleep for most of the day.",
		}, 1},
		{"What is photosynthesis?", []string{
			"Photosynthesis is the process by which plants use sunlight, water and carbon dioxide to make glucose and oxygen.",
			"The Eiffel Tower is in Paris.",
			"Football is played with eleven players per side.",
		}, 0},
	}
	for _, c := range cases {
		out := e.rerank(t, map[string]any{"model": "gemma3-270m", "query": c.query, "documents": c.docs})
		for _, r := range out.Results {
			t.Logf("%s: document %d scored %.3f", c.query, r.Index, r.RelevanceScore)
		}
		if out.Object != "list" || out.Model != "gemma3-270m" || len(out.Results) != len(c.docs) {
			t.Fatalf("%s: unexpected response %+v", c.query, out)
		}
		if out.Usage == nil || out.Usage.PromptTokens <= 0 || out.Usage.TotalTokens != out.Usage.PromptTokens {
			t.Errorf("%s: usage %+v", c.query, out.Usage)
		}
		seen := map[int]bool{}
		for i, r := range out.Results {
			if r.RelevanceScore < 0 || r.RelevanceScore > 1 || r.Index < 0 || r.Index >= len(c.docs) || seen[r.Index] {
				t.Fatalf("%s: bad result %d: %+v", c.query, i, r)
			}
			seen[r.Index] = true
			if i > 0 && r.RelevanceScore > out.Results[i-1].RelevanceScore {
				t.Errorf("%s: results are not sorted by relevance_score: %+v", c.query, out.Results)
			}
			var d struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(r.Document, &d); d.Text != c.docs[r.Index] {
				t.Errorf("%s: result %d carries document %s, want %q", c.query, i, r.Document, c.docs[r.Index])
			}
		}
		if out.Results[0].Index != c.best {
			t.Errorf("%s: document %d ranked first (%+v), want %d: %q", c.query, out.Results[0].Index, out.Results, c.best, c.docs[c.best])
		}
	}

	// top_n and return_documents.
	out := e.rerank(t, map[string]any{"model": "gemma3-270m", "query": cases[0].query, "documents": cases[0].docs,
		"top_n": 2, "return_documents": false})
	if len(out.Results) != 2 || out.Results[0].Index != cases[0].best {
		t.Fatalf("top_n 2: %+v", out.Results)
	}
	for _, r := range out.Results {
		if r.Document != nil {
			t.Errorf("return_documents false still returned %s", r.Document)
		}
	}

	// A model that cannot rerank is a 400 naming the model.
	resp = e.post(context.Background(), "/v1/rerank", map[string]any{"model": "all-minilm-l6-v2", "query": "q", "documents": []string{"d"}})
	if env := readError(t, resp); resp.StatusCode != 400 || env.Error.Param == nil || *env.Error.Param != "model" {
		t.Errorf("rerank with an embedding model: status %d, %+v", resp.StatusCode, env)
	}
}
