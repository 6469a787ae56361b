package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/gguf"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/runnerproto"
)

// rerank posts a rerank request and decodes the answer (a RerankResponse
// for 200, else the runner's error).
func (tr *testRunner) rerank(t *testing.T, req inference.RerankRequest) (int, inference.RerankResponse, runnerproto.Error) {
	t.Helper()
	resp, err := tr.post(context.Background(), "/rerank", req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out inference.RerankResponse
	var eb runnerproto.ErrorBody
	if resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
	} else {
		json.NewDecoder(resp.Body).Decode(&eb)
	}
	return resp.StatusCode, out, eb.Error
}

var rerankDocs = []string{
	"The cat sat on the mat and looked at the dog.",
	"{\"name\": \"value\", \"type\": true}",
	"Hello world, how are you today?",
	"It was red and blue and green.",
	"We can make it all work if we try.",
}

func checkResults(t *testing.T, res inference.RerankResponse, n int) {
	t.Helper()
	if len(res.Results) != n {
		t.Fatalf("%d results for %d documents", len(res.Results), n)
	}
	for i, r := range res.Results {
		if r.Index != i {
			t.Errorf("result %d has index %d; results must be in input order", i, r.Index)
		}
		if !(r.RelevanceScore >= 0 && r.RelevanceScore <= 1) {
			t.Errorf("score %d = %v, want a value in [0, 1]", i, r.RelevanceScore)
		}
	}
	if res.PromptTokens <= 0 {
		t.Errorf("prompt_tokens = %d", res.PromptTokens)
	}
}

// TestCausalRerank checks both methods of a causal model: its own
// (query-likelihood, reported by /health) and chat-logits, asked for by
// the request.
func TestCausalRerank(t *testing.T) {
	tr := sharedRunner(t)
	var h runnerproto.Health
	tr.get(t, "/health", &h)
	if h.RerankMethod != runnerproto.RerankQueryLikelihood {
		t.Fatalf("health rerank_method = %q, want %q", h.RerankMethod, runnerproto.RerankQueryLikelihood)
	}
	for _, method := range []string{"", runnerproto.RerankChatLogits} {
		t.Run("method="+method, func(t *testing.T) { checkCausalRerank(t, tr, method) })
	}
	code, _, e := tr.rerank(t, inference.RerankRequest{Query: "cat", Documents: []string{"dog"}, Method: runnerproto.RerankCrossEncoder})
	if code != 400 || e.Param != "method" {
		t.Errorf("cross-encoder on a causal model: status %d, %+v; want 400 with param method", code, e)
	}
}

func checkCausalRerank(t *testing.T, tr *testRunner, method string) {
	req := inference.RerankRequest{Query: "what is the name of the cat", Documents: rerankDocs, Method: method}
	code, a, e := tr.rerank(t, req)
	if code != 200 {
		t.Fatalf("status %d: %+v", code, e)
	}
	checkResults(t, a, len(rerankDocs))
	distinct := map[float64]bool{}
	for _, r := range a.Results {
		distinct[r.RelevanceScore] = true
	}
	if len(distinct) < 3 {
		t.Errorf("scores %v barely depend on the document", a.Results)
	}
	// The same request again (its prompts now cached whole), and each
	// document alone (decoded in other batches), give the same scores:
	// pairs decoded together do not leak into each other, and a cached
	// prompt is still scored over every token the method reads.
	_, b, _ := tr.rerank(t, req)
	for i := range rerankDocs {
		_, one, _ := tr.rerank(t, inference.RerankRequest{Query: req.Query, Documents: rerankDocs[i : i+1], Method: method})
		checkResults(t, one, 1)
		for _, got := range []float64{b.Results[i].RelevanceScore, one.Results[0].RelevanceScore} {
			if math.Abs(got-a.Results[i].RelevanceScore) > 2e-3 {
				t.Errorf("document %d scored %v, then %v", i, a.Results[i].RelevanceScore, got)
			}
		}
	}
	// More documents than slots are all scored.
	many := append(append([]string{}, rerankDocs...), rerankDocs...)
	_, m, _ := tr.rerank(t, inference.RerankRequest{Query: req.Query, Documents: many, Method: method})
	checkResults(t, m, len(many))
	if math.Abs(m.Results[7].RelevanceScore-a.Results[2].RelevanceScore) > 2e-3 {
		t.Errorf("repeated document scored %v and %v", m.Results[7].RelevanceScore, a.Results[2].RelevanceScore)
	}
}

func TestCausalRerankLimits(t *testing.T) {
	for _, method := range []string{"", runnerproto.RerankChatLogits} {
		t.Run("method="+method, func(t *testing.T) { checkCausalRerankLimits(t, method) })
	}
}

func checkCausalRerankLimits(t *testing.T, method string) {
	tr := sharedRunner(t) // 512 tokens per slot
	// A document longer than the context is cut to fit.
	long := strings.Repeat("the cat and the dog were red and blue. ", 200)
	code, res, e := tr.rerank(t, inference.RerankRequest{Query: "cat", Documents: []string{long, "dog"}, Method: method})
	if code != 200 {
		t.Fatalf("long document: status %d: %+v", code, e)
	}
	checkResults(t, res, 2)
	if res.PromptTokens > 2*512 {
		t.Errorf("prompt_tokens = %d; the long document was not cut to the context", res.PromptTokens)
	}
	for _, c := range []struct {
		name  string
		req   inference.RerankRequest
		param string
	}{
		{"query too long", inference.RerankRequest{Query: long, Documents: []string{"dog"}}, "query"},
		{"no documents", inference.RerankRequest{Query: "cat"}, "documents"},
		{"empty document", inference.RerankRequest{Query: "cat", Documents: []string{"dog", " "}}, "documents[1]"},
		{"empty query", inference.RerankRequest{Query: "", Documents: []string{"dog"}}, "query"},
	} {
		c.req.Method = method
		code, _, e := tr.rerank(t, c.req)
		if code != 400 || e.Code != runnerproto.CodeInvalid || e.Param != c.param {
			t.Errorf("%s: status %d, error %+v; want 400 invalid_request with param %q", c.name, code, e, c.param)
		}
	}
}

func TestYesProbability(t *testing.T) {
	for _, c := range []struct {
		yes, no []float32
		want    float64
	}{
		{[]float32{0}, []float32{0}, 0.5},
		{[]float32{float32(math.Log(3))}, []float32{0}, 0.75},
		{[]float32{0, 0}, []float32{0, 0, 0, 0}, 1.0 / 3},
		{[]float32{1000}, []float32{0}, 1}, // no overflow
		{[]float32{-1000}, []float32{0}, 0},
	} {
		if got := yesProbability(c.yes, c.no); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("yesProbability(%v, %v) = %v, want %v", c.yes, c.no, got, c.want)
		}
	}
}

// writeTinyReranker writes a random-weight BERT cross-encoder GGUF with
// rank pooling and a one-logit classification head (cls.output), the
// layout llama.cpp loads for BERT rerankers, with a WordPiece vocabulary.
func writeTinyReranker(t *testing.T, path string, ctxLen int) {
	t.Helper()
	const n, ff, layers, heads = 32, 64, 2, 4
	tokens := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	types := []int32{3, 2, 3, 3, 3}
	for c := 'a'; c <= 'z'; c++ {
		tokens = append(tokens, string(c), "▁"+string(c))
	}
	for _, p := range strings.Split(".,?!'\"", "") {
		tokens = append(tokens, p, "▁"+p)
	}
	for _, w := range strings.Fields("the cat dog sat on mat and is what name of red blue green it was we can make all work if try hello world how are you today") {
		tokens = append(tokens, "▁"+w)
	}
	for len(types) < len(tokens) {
		types = append(types, 1)
	}
	w := gguf.NewWriter()
	w.SetString("general.architecture", "bert")
	w.SetString("general.name", "sovereign-tiny-reranker")
	w.SetUint32("general.file_type", gguf.FileTypeMostlyF16)
	w.SetUint32("bert.block_count", layers)
	w.SetUint32("bert.context_length", uint32(ctxLen))
	w.SetUint32("bert.embedding_length", n)
	w.SetUint32("bert.feed_forward_length", ff)
	w.SetUint32("bert.attention.head_count", heads)
	w.SetFloat32("bert.attention.layer_norm_epsilon", 1e-12)
	w.SetBool("bert.attention.causal", false)
	w.SetUint32("bert.pooling_type", 4) // rank
	w.SetUint32("tokenizer.ggml.token_type_count", 2)
	w.SetString("tokenizer.ggml.model", "bert")
	w.SetString("tokenizer.ggml.pre", "default")
	w.SetStrings("tokenizer.ggml.tokens", tokens)
	w.SetInt32s("tokenizer.ggml.token_type", types)
	w.SetUint32("tokenizer.ggml.padding_token_id", 0)
	w.SetUint32("tokenizer.ggml.unknown_token_id", 1)
	w.SetUint32("tokenizer.ggml.bos_token_id", 2)
	w.SetUint32("tokenizer.ggml.seperator_token_id", 3)
	w.SetUint32("tokenizer.ggml.mask_token_id", 4)
	w.SetBool("tokenizer.ggml.add_bos_token", true)
	w.SetBool("tokenizer.ggml.add_sep_token", true)
	rng := rand.New(rand.NewPCG(11, 13))
	randn := func(k int, scale float64) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * scale)
		}
		return v
	}
	fill := func(k int, x float32) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = x
		}
		return v
	}
	var err error
	mat := func(name string, in, out int, scale float64) {
		if err == nil {
			err = w.AddTensorF16(name, []uint64{uint64(in), uint64(out)}, randn(in*out, scale))
		}
	}
	vec := func(name string, k int, v []float32) {
		if err == nil {
			err = w.AddTensorF32(name, []uint64{uint64(k)}, v)
		}
	}
	mat("token_embd.weight", n, len(tokens), 1)
	// Embeddings added to others stay F32 (ggml adds F32 to F32 only).
	if err == nil {
		err = w.AddTensorF32("token_types.weight", []uint64{n, 2}, randn(n*2, 0.1))
	}
	if err == nil {
		err = w.AddTensorF32("position_embd.weight", []uint64{n, uint64(ctxLen)}, randn(n*ctxLen, 0.1))
	}
	vec("token_embd_norm.weight", n, fill(n, 1))
	vec("token_embd_norm.bias", n, fill(n, 0))
	for i := 0; i < layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		for _, m := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
			mat(p+m+".weight", n, n, 0.2)
			vec(p+m+".bias", n, randn(n, 0.1))
		}
		vec(p+"attn_output_norm.weight", n, fill(n, 1))
		vec(p+"attn_output_norm.bias", n, fill(n, 0))
		mat(p+"ffn_up.weight", n, ff, 0.2)
		vec(p+"ffn_up.bias", ff, randn(ff, 0.1))
		mat(p+"ffn_down.weight", ff, n, 0.2)
		vec(p+"ffn_down.bias", n, randn(n, 0.1))
		vec(p+"layer_output_norm.weight", n, fill(n, 1))
		vec(p+"layer_output_norm.bias", n, fill(n, 0))
	}
	mat("cls.output.weight", n, 1, 0.5)
	vec("cls.output.bias", 1, []float32{0.1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

func TestCrossEncoderRerank(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reranker.gguf")
	writeTinyReranker(t, path, 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrCh := make(chan string, 1)
	errCh := make(chan error, 1)
	tr := &testRunner{token: "t"}
	go func() {
		errCh <- Run(ctx, Config{ModelPath: path, Token: tr.token, Engine: EngineConfig{Threads: 2}, Ready: func(a string) { addrCh <- a }})
	}()
	select {
	case a := <-addrCh:
		tr.base = "http://" + a
	case err := <-errCh:
		t.Fatalf("runner failed: %v", err)
	}
	var h runnerproto.Health
	for deadline := time.Now().Add(30 * time.Second); ; {
		if code := tr.get(t, "/health", &h); code == 200 && h.Status == "ok" {
			break
		}
		select {
		case err := <-errCh:
			t.Fatalf("runner exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("runner did not become healthy")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if h.RerankMethod != runnerproto.RerankCrossEncoder {
		t.Fatalf("health rerank_method = %q, want %q", h.RerankMethod, runnerproto.RerankCrossEncoder)
	}
	req := inference.RerankRequest{Query: "what is the name of the cat", Documents: rerankDocs}
	code, a, e := tr.rerank(t, req)
	if code != 200 {
		t.Fatalf("status %d: %+v", code, e)
	}
	checkResults(t, a, len(rerankDocs))
	// The pair is [CLS] query [SEP] document, as llama-server formats it
	// for a vocabulary that adds BOS and SEP and has no EOS.
	count := func(s string) int {
		var tok inference.TokenizeResponse
		resp, err := tr.post(context.Background(), "/tokenize", inference.TokenizeRequest{Content: s})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&tok)
		return len(tok.Tokens)
	}
	want := 0
	for _, d := range rerankDocs {
		want += 2 + count(req.Query) + count(d)
	}
	if a.PromptTokens != want {
		t.Errorf("prompt_tokens = %d, want %d ([CLS] query [SEP] document per pair)", a.PromptTokens, want)
	}
	distinct := map[float64]bool{}
	for _, r := range a.Results {
		distinct[r.RelevanceScore] = true
	}
	if len(distinct) < 3 {
		t.Errorf("scores %v barely depend on the document", a.Results)
	}
	// Deterministic, and independent of the other documents in the batch.
	_, b, _ := tr.rerank(t, req)
	_, one, _ := tr.rerank(t, inference.RerankRequest{Query: req.Query, Documents: rerankDocs[3:4]})
	for i := range rerankDocs {
		if math.Abs(a.Results[i].RelevanceScore-b.Results[i].RelevanceScore) > 1e-6 {
			t.Errorf("document %d scored %v, then %v", i, a.Results[i].RelevanceScore, b.Results[i].RelevanceScore)
		}
	}
	if math.Abs(one.Results[0].RelevanceScore-a.Results[3].RelevanceScore) > 1e-4 {
		t.Errorf("document 3 alone scored %v, in a batch %v", one.Results[0].RelevanceScore, a.Results[3].RelevanceScore)
	}
	// A long document is cut to the 64-token context; a query that fills
	// it is refused.
	long := strings.Repeat("the cat sat on the mat. ", 40)
	code, res, e := tr.rerank(t, inference.RerankRequest{Query: "cat", Documents: []string{long}})
	if code != 200 || res.PromptTokens != 64 {
		t.Errorf("long document: status %d, prompt_tokens %d (want 200, 64): %+v", code, res.PromptTokens, e)
	}
	code, _, e = tr.rerank(t, inference.RerankRequest{Query: long, Documents: []string{"dog"}})
	if code != 400 || e.Param != "query" {
		t.Errorf("long query: status %d, %+v; want 400 with param query", code, e)
	}
	os.Remove(path)
}
