package e2e

import (
	"math"
	"slices"
	"strings"
	"testing"

	"context"
	"encoding/json"

	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/models"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// defaultStore opens the models directory holding the test models
// ($SOVEREIGN_TEST_MODELS_DIR, set by `make test`, else ./data/models),
// pulling any that are missing: the defaults and gemma3-270m.
func defaultStore(t *testing.T) *models.Store {
	t.Helper()
	return testutil.DefaultModels(t)
}

// The default chat model answers under its alias, "default", as `make run`
// leaves it: the instruction-tuned model, which answers the question
// rather than continuing it.
func TestDefaultChatModelKnowsTheCapitalOfFrance(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 2048})
	if m := e.modelInfo("default"); m.ID != models.Defaults[0].ID || !slices.Contains(m.Capabilities, "tools") {
		t.Fatalf(`"default" is %s (%v), want %s with tools`, m.ID, m.Capabilities, models.Defaults[0].ID)
	}
	out, resp := e.chat("default", "What is the capital of France?", map[string]any{"max_tokens": 32})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %+v", resp.StatusCode, readError(t, resp))
	}
	answer := out.Choices[0].Message.Content
	t.Logf("answer: %q", answer)
	if !strings.Contains(answer, "Paris") {
		t.Fatalf("answer %q does not mention Paris", answer)
	}
}

func TestDefaultEmbeddingModelRanksKittenNearCat(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{})
	resp := e.post(context.Background(), "/v1/embeddings", map[string]any{"model": "all-minilm-l6-v2", "input": []string{"kitten", "cat", "car"}})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %+v", resp.StatusCode, readError(t, resp))
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Data) != 3 || len(out.Data[0].Embedding) != 384 || out.Usage.PromptTokens == 0 {
		t.Fatalf("unexpected response shape: %d items, dim %d", len(out.Data), len(out.Data[0].Embedding))
	}
	for _, d := range out.Data {
		var n float64
		for _, x := range d.Embedding {
			n += x * x
		}
		if math.Abs(math.Sqrt(n)-1) > 1e-3 {
			t.Fatalf("embedding %d has norm %f, want 1", d.Index, math.Sqrt(n))
		}
	}
	cos := func(a, b []float64) float64 {
		var s float64
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	kc, kr := cos(out.Data[0].Embedding, out.Data[1].Embedding), cos(out.Data[0].Embedding, out.Data[2].Embedding)
	t.Logf("cos(kitten,cat)=%.3f cos(kitten,car)=%.3f", kc, kr)
	if kc <= kr {
		t.Fatalf("kitten is not closer to cat (%.3f) than to car (%.3f)", kc, kr)
	}
}
