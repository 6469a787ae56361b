package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/gguf/testmodel"
	"github.com/sovereign-ai/sovereign/internal/grammar"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/runnerproto"
)

var (
	shared     *testRunner
	sharedOnce sync.Once
)

type testRunner struct {
	base  string
	token string
	stop  context.CancelFunc
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.stop()
	}
	os.Exit(code)
}

// startRunner serves a tiny random model in-process.
func startRunner(t *testing.T, cfg EngineConfig) *testRunner {
	t.Helper()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("sov-runner-test-%d.gguf", os.Getpid()))
	if _, err := os.Stat(path); err != nil {
		if err := testmodel.Write(path, testmodel.Options{Seed: 7}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrCh := make(chan string, 1)
	errCh := make(chan error, 1)
	tr := &testRunner{token: "test-token", stop: cancel}
	go func() {
		errCh <- Run(ctx, Config{ModelPath: path, Token: tr.token, Engine: cfg, Ready: func(a string) { addrCh <- a }})
	}()
	select {
	case a := <-addrCh:
		tr.base = "http://" + a
	case err := <-errCh:
		t.Fatalf("runner failed: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var h runnerproto.Health
		if code := tr.get(t, "/health", &h); code == 200 && h.Status == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("runner did not become healthy")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return tr
}

func sharedRunner(t *testing.T) *testRunner {
	sharedOnce.Do(func() { shared = startRunner(t, EngineConfig{Slots: 4, CtxPerSlot: 512, Threads: 2, QueueSize: 8}) })
	if shared == nil {
		t.Fatal("shared runner failed to start")
	}
	return shared
}

func (tr *testRunner) get(t *testing.T, path string, out any) int {
	req, _ := http.NewRequest(http.MethodGet, tr.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+tr.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	json.NewDecoder(resp.Body).Decode(out)
	return resp.StatusCode
}

func (tr *testRunner) post(ctx context.Context, path string, in any) (*http.Response, error) {
	b, _ := json.Marshal(in)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tr.base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+tr.token)
	return http.DefaultClient.Do(req)
}

type result struct {
	text   string
	finish string
	usage  inference.Usage
	lps    []inference.TokenLogprob
	events int
}

func (tr *testRunner) complete(t *testing.T, req inference.CompletionRequest) result {
	t.Helper()
	resp, err := tr.post(context.Background(), "/completion", req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		var eb runnerproto.ErrorBody
		json.NewDecoder(resp.Body).Decode(&eb)
		t.Fatalf("status %d: %+v", resp.StatusCode, eb)
	}
	var r result
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var ev inference.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("bad event %q: %v", sc.Text(), err)
		}
		if ev.Error != "" {
			t.Fatalf("stream error: %s", ev.Error)
		}
		r.events++
		r.text += ev.Text
		r.lps = append(r.lps, ev.Logprobs...)
		if ev.Done {
			r.finish = ev.FinishReason
			r.usage = *ev.Usage
			return r
		}
	}
	t.Fatalf("stream ended without a final event (read %d events)", r.events)
	return r
}

func greedy(prompt string, max int) inference.CompletionRequest {
	return inference.CompletionRequest{Prompt: prompt, MaxTokens: max, Sampling: inference.Sampling{Temperature: 0}}
}

var prompts = []string{
	"The quick brown fox",
	"Once upon a time in a land far away",
	"{\"name\": \"value\"",
	"hello world and all the people in it",
}

func TestGreedyIsDeterministicAndBatchingDoesNotMixSequences(t *testing.T) {
	tr := sharedRunner(t)
	alone := make([]result, len(prompts))
	for i, p := range prompts {
		alone[i] = tr.complete(t, greedy(p, 24))
		if alone[i].usage.CompletionTokens == 0 {
			t.Fatalf("prompt %d generated nothing", i)
		}
		again := tr.complete(t, greedy(p, 24))
		if again.text != alone[i].text {
			t.Fatalf("greedy output not deterministic for %q:\n%q\n%q", p, alone[i].text, again.text)
		}
	}
	distinct := map[string]bool{}
	for _, r := range alone {
		distinct[r.text] = true
	}
	if len(distinct) < 2 {
		t.Fatalf("all prompts produced the same text %q; the test model is not discriminating", alone[0].text)
	}
	for round := 0; round < 2; round++ {
		together := make([]result, len(prompts))
		var wg sync.WaitGroup
		for i, p := range prompts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				together[i] = tr.complete(t, greedy(p, 24))
			}()
		}
		wg.Wait()
		for i := range prompts {
			if together[i].text != alone[i].text {
				t.Fatalf("round %d: concurrent output for prompt %d differs from its output alone:\nalone:    %q\ntogether: %q", round, i, alone[i].text, together[i].text)
			}
		}
	}
}

func TestSeedMakesSamplingReproducible(t *testing.T) {
	tr := sharedRunner(t)
	req := func(seed uint32) inference.CompletionRequest {
		return inference.CompletionRequest{Prompt: "Once upon a time", MaxTokens: 24, Sampling: inference.Sampling{Temperature: 1.0, Seed: &seed}}
	}
	a := tr.complete(t, req(42))
	b := tr.complete(t, req(42))
	if a.text != b.text {
		t.Fatalf("same seed gave different text:\n%q\n%q", a.text, b.text)
	}
	differs := false
	for _, s := range []uint32{1, 2, 3} {
		if tr.complete(t, req(s)).text != a.text {
			differs = true
		}
	}
	if !differs {
		t.Fatal("different seeds always gave the same text; sampling ignores the seed")
	}
}

func TestMaxTokensAndStopSequences(t *testing.T) {
	tr := sharedRunner(t)
	r := tr.complete(t, greedy("The quick brown fox", 5))
	if r.usage.CompletionTokens != 5 || r.finish != inference.FinishLength {
		t.Fatalf("max_tokens 5: got %d tokens, finish %q", r.usage.CompletionTokens, r.finish)
	}
	full := tr.complete(t, greedy("Once upon a time in a land far away", 40))
	if len(full.text) < 12 {
		t.Fatalf("reference text too short to cut: %q", full.text)
	}
	// A stop sequence taken from the middle of the text, likely spanning a
	// token boundary: output must end right before its first occurrence.
	for _, start := range []int{len(full.text) / 3, len(full.text) / 2} {
		stop := full.text[start : start+3]
		if strings.TrimSpace(stop) == "" {
			continue
		}
		want := full.text[:strings.Index(full.text, stop)]
		req := greedy("Once upon a time in a land far away", 40)
		req.Stop = []string{"zzzz-never", stop}
		got := tr.complete(t, req)
		if got.text != want || got.finish != inference.FinishStop {
			t.Fatalf("stop %q: got %q (finish %q), want %q (finish stop)", stop, got.text, got.finish, want)
		}
	}
}

func TestPromptPrefixIsReused(t *testing.T) {
	tr := sharedRunner(t)
	base := strings.Repeat("the cat sat on the mat and ", 8)
	first := tr.complete(t, greedy(base, 2))
	second := tr.complete(t, greedy(base+"then it ran away", 2))
	if second.usage.CachedTokens < first.usage.PromptTokens/2 {
		t.Fatalf("second prompt reused %d cached tokens; want most of the first prompt's %d", second.usage.CachedTokens, first.usage.PromptTokens)
	}
	// Reuse must not change results.
	fresh := startRunner(t, EngineConfig{Slots: 1, CtxPerSlot: 512, Threads: 2})
	defer fresh.stop()
	if want := fresh.complete(t, greedy(base+"then it ran away", 2)); want.text != second.text {
		t.Fatalf("output with reused prefix %q differs from a fresh run %q", second.text, want.text)
	}
}

func TestLogprobs(t *testing.T) {
	tr := sharedRunner(t)
	req := greedy("hello world", 6)
	req.Logprobs = true
	req.TopLogprobs = 3
	r := tr.complete(t, req)
	if len(r.lps) != r.usage.CompletionTokens {
		t.Fatalf("%d logprob entries for %d tokens", len(r.lps), r.usage.CompletionTokens)
	}
	for i, lp := range r.lps {
		if lp.Logprob > 0 || len(lp.Top) != 3 {
			t.Fatalf("entry %d: %+v", i, lp)
		}
		if lp.Top[0].ID != lp.ID {
			t.Fatalf("greedy token %d is not the most likely %d", lp.ID, lp.Top[0].ID)
		}
		if lp.Top[0].Logprob < lp.Top[1].Logprob || lp.Top[1].Logprob < lp.Top[2].Logprob {
			t.Fatalf("top logprobs not sorted: %+v", lp.Top)
		}
	}
}

func TestLogitBiasBansAndForcesTokens(t *testing.T) {
	tr := sharedRunner(t)
	req := greedy("The quick brown fox", 4)
	req.Logprobs = true
	req.TopLogprobs = 3
	base := tr.complete(t, req)
	first := base.lps[0].ID
	req.LogitBias = map[int32]float32{first: -100}
	banned := tr.complete(t, req)
	if banned.lps[0].ID == first {
		t.Fatalf("token %d still chosen with bias -100", first)
	}
	forced := base.lps[0].Top[len(base.lps[0].Top)-1].ID
	req.TopLogprobs = 0
	req.LogitBias = map[int32]float32{forced: 100}
	got := tr.complete(t, req)
	for i, lp := range got.lps {
		if lp.ID != forced {
			t.Fatalf("token %d is %d, want the forced %d", i, lp.ID, forced)
		}
	}
}

func TestGrammarConstrainsOutputToSchema(t *testing.T) {
	tr := sharedRunner(t)
	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":8},"ok":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":3}},"required":["name","ok","tags"],"additionalProperties":false}`
	g, err := grammar.FromJSONSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []uint32{1, 2, 3} {
		s := seed
		req := inference.CompletionRequest{Prompt: "Reply with JSON:", MaxTokens: 200, Grammar: g, Sampling: inference.Sampling{Temperature: 0.8, Seed: &s}}
		r := tr.complete(t, req)
		if r.finish != inference.FinishStop {
			t.Fatalf("seed %d: grammar output did not complete: %q (finish %s)", seed, r.text, r.finish)
		}
		var v struct {
			Name *string  `json:"name"`
			OK   *bool    `json:"ok"`
			Tags []string `json:"tags"`
		}
		dec := json.NewDecoder(strings.NewReader(r.text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("seed %d: output %q is not the schema's JSON: %v", seed, r.text, err)
		}
		if v.Name == nil || v.OK == nil || v.Tags == nil || len([]rune(*v.Name)) > 8 || len(v.Tags) > 3 {
			t.Fatalf("seed %d: output %q violates the schema", seed, r.text)
		}
		for _, tag := range v.Tags {
			if tag != "a" && tag != "b" {
				t.Fatalf("seed %d: tag %q not in enum", seed, tag)
			}
		}
	}
	// JSON mode.
	s := uint32(5)
	r := tr.complete(t, inference.CompletionRequest{Prompt: "JSON:", MaxTokens: 200, Grammar: grammar.JSONObject, Sampling: inference.Sampling{Temperature: 0.7, Seed: &s}})
	var obj map[string]any
	if r.finish == inference.FinishStop {
		if err := json.Unmarshal([]byte(r.text), &obj); err != nil {
			t.Fatalf("json_object output %q does not parse: %v", r.text, err)
		}
	} else if !strings.HasPrefix(strings.TrimSpace(r.text), "{") {
		t.Fatalf("json_object output %q does not start an object", r.text)
	}
}

func TestBadGrammarIsInvalidRequest(t *testing.T) {
	tr := sharedRunner(t)
	resp, err := tr.post(context.Background(), "/completion", inference.CompletionRequest{Prompt: "x", Grammar: "root ::= ("})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb runnerproto.ErrorBody
	json.NewDecoder(resp.Body).Decode(&eb)
	if resp.StatusCode != 400 || eb.Error.Code != runnerproto.CodeInvalid {
		t.Fatalf("got %d %+v", resp.StatusCode, eb)
	}
}

func TestCancellationFreesTheSlot(t *testing.T) {
	tr := sharedRunner(t)
	ctx, cancel := context.WithCancel(context.Background())
	// The end token is banned: sampled early at temperature 1, it would end
	// the request before the slot is looked at.
	resp, err := tr.post(ctx, "/completion", inference.CompletionRequest{Prompt: "Once upon a time",
		Sampling: inference.Sampling{Temperature: 1, LogitBias: map[int32]float32{testmodel.EOSID: -100}}})
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for i := 0; i < 3 && sc.Scan(); i++ {
	}
	var h runnerproto.Health
	tr.get(t, "/health", &h)
	if h.Active < 1 {
		t.Fatalf("no active slot while generating: %+v", h)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		tr.get(t, "/health", &h)
		if h.Active == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot still active after the client went away: %+v", h)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestChatTemplateAndTokenize(t *testing.T) {
	tr := sharedRunner(t)
	resp, err := tr.post(context.Background(), "/apply-template", runnerproto.TemplateRequest{Messages: []inference.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	var tpl runnerproto.TemplateResponse
	json.NewDecoder(resp.Body).Decode(&tpl)
	resp.Body.Close()
	want := "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
	if tpl.Prompt != want {
		t.Fatalf("chatml prompt:\n%q\nwant\n%q", tpl.Prompt, want)
	}
	resp, _ = tr.post(context.Background(), "/tokenize", inference.TokenizeRequest{Content: "hello world", AddSpecial: false})
	var tok inference.TokenizeResponse
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if len(tok.Tokens) == 0 {
		t.Fatal("no tokens")
	}
	resp, _ = tr.post(context.Background(), "/detokenize", inference.DetokenizeRequest{Tokens: tok.Tokens})
	var de inference.DetokenizeResponse
	json.NewDecoder(resp.Body).Decode(&de)
	resp.Body.Close()
	if strings.TrimSpace(de.Content) != "hello world" {
		t.Fatalf("round trip gave %q", de.Content)
	}
}

func TestRunnerRejectsBadToken(t *testing.T) {
	tr := sharedRunner(t)
	req, _ := http.NewRequest(http.MethodGet, tr.base+"/health", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad runner token got %d", resp.StatusCode)
	}
}

// TestGoldenGrammarsParseInLlamaCpp loads every grammar internal/grammar's
// golden files hold into llama.cpp's grammar sampler, so a grammar llama.cpp
// rejects cannot pass the grammar package's own tests.
func TestGoldenGrammarsParseInLlamaCpp(t *testing.T) {
	tr := sharedRunner(t)
	files, err := filepath.Glob("../grammar/testdata/*.gbnf")
	if err != nil || len(files) < 5 {
		t.Fatalf("golden grammars not found: %v %v", files, err)
	}
	for _, f := range files {
		g, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tr.post(context.Background(), "/completion", inference.CompletionRequest{Prompt: "x", MaxTokens: 1, Grammar: string(g)})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: llama.cpp rejected the grammar (status %d)", filepath.Base(f), resp.StatusCode)
		}
	}
}

// TestInteractivePromptHoldsBackgroundBack runs background generations
// (batch lines) while interactive requests arrive: the steps that read an
// interactive prompt leave the background sequences out, and no sequence
// loses or repeats a token for it — every output equals its output alone
// (short generations, which this model answers alike alone and batched).
func TestInteractivePromptHoldsBackgroundBack(t *testing.T) {
	tr := sharedRunner(t)
	req := func(p string, pr inference.Priority) inference.CompletionRequest {
		r := greedy(p, 24)
		r.Priority = pr
		return r
	}
	alone := map[string]string{}
	for _, p := range prompts {
		alone[p] = tr.complete(t, greedy(p, 24)).text
		if got := tr.complete(t, req(p, inference.PriorityBackground)).text; got != alone[p] {
			t.Fatalf("background output alone differs: %q vs %q", got, alone[p])
		}
	}
	for round := range 30 {
		var wg sync.WaitGroup
		got := make([]string, len(prompts))
		for i, p := range prompts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pr := inference.PriorityBackground
				if i == round%len(prompts) {
					// One interactive request, arriving while the others
					// generate.
					time.Sleep(time.Duration(round%5) * 200 * time.Microsecond)
					pr = inference.PriorityInteractive
				}
				got[i] = tr.complete(t, req(p, pr)).text
			}()
		}
		wg.Wait()
		for i, p := range prompts {
			if got[i] != alone[p] {
				t.Fatalf("round %d: output %d beside the others differs from its output alone:\nalone: %q\ngot:   %q", round, i, alone[p], got[i])
			}
		}
	}
}

// TestLoopEndsGeneration: output that repeats itself ends long before
// max_tokens, with finish_reason length (inference.LoopGuard).
func TestLoopEndsGeneration(t *testing.T) {
	tr := sharedRunner(t)
	req := greedy("The quick brown fox", 400)
	req.Logprobs = true
	first := tr.complete(t, req).lps[0].ID
	req.LogitBias = map[int32]float32{first: 100} // the same token every time
	got := tr.complete(t, req)
	if got.finish != inference.FinishLength || got.usage.CompletionTokens >= 100 {
		t.Fatalf("a loop ran %d tokens (finish %q); want it cut within 100, finish length", got.usage.CompletionTokens, got.finish)
	}
}
