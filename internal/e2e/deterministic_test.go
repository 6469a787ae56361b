package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// deterministicPrompts are the test's eight requests: greedy ones, and two
// sampled at temperature 0.8 with a seed (the same seed must give the same
// text however the request is batched).
var deterministicPrompts = []map[string]any{
	{"content": "Say hello in French."},
	{"content": "Name three colours."},
	{"content": "What is twelve times twelve?"},
	{"content": "Write a short poem about the sea."},
	{"content": "List the days of the week."},
	{"content": "Describe a cat in one sentence."},
	{"content": "Tell me a story about a lighthouse keeper.", "temperature": 0.8, "seed": 7},
	{"content": "What should I cook for dinner tonight?", "temperature": 0.8, "seed": 11},
}

// deterministicRun sends the prompts to url, all at once when concurrent,
// and returns each answer.
func deterministicRun(url, key string, concurrent bool) ([]string, error) {
	out := make([]string, len(deterministicPrompts))
	errs := make([]error, len(deterministicPrompts))
	one := func(i int) {
		p := deterministicPrompts[i]
		body := map[string]any{"model": "gemma3-270m", "max_tokens": 32, "temperature": 0,
			"messages": []map[string]any{{"role": "user", "content": p["content"]}}}
		for k, v := range p {
			if k != "content" {
				body[k] = v
			}
		}
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			errs[i] = err
			return
		}
		defer resp.Body.Close()
		var cr chatResponse
		if resp.StatusCode != 200 {
			errs[i] = fmt.Errorf("prompt %d: status %d", i, resp.StatusCode)
			return
		}
		if err := json.NewDecoder(resp.Body).Decode(&cr); err != nil || len(cr.Choices) != 1 {
			errs[i] = fmt.Errorf("prompt %d: bad response (%v)", i, err)
			return
		}
		out[i] = cr.Choices[0].Message.Content
	}
	if !concurrent {
		for i := range deterministicPrompts {
			one(i)
		}
	} else {
		var wg sync.WaitGroup
		for i := range deterministicPrompts {
			wg.Add(1)
			go func() { defer wg.Done(); one(i) }()
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TestDeterministicModeIgnoresTheBatch runs eight prompts on the default
// model one after another, then all eight at once for several rounds: in
// deterministic mode every answer is the same text each time.
// SOVEREIGN_TEST_DETERMINISTIC=false runs the same check in the default mode
// (which is expected to fail: batching changes greedy output there).
func TestDeterministicModeIgnoresTheBatch(t *testing.T) {
	det := true
	if v := os.Getenv("SOVEREIGN_TEST_DETERMINISTIC"); v != "" {
		det, _ = strconv.ParseBool(v)
	}
	e := newEnv(t, defaultStore(t), engine.Config{Slots: 8, CtxPerSlot: 512, Deterministic: det})
	want, err := deterministicRun(e.url, e.key, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		t.Logf("prompt %d alone: %q", i, w)
		if w == "" {
			t.Fatalf("prompt %d gave an empty answer", i)
		}
	}
	for round := 1; round <= 3; round++ {
		got, err := deterministicRun(e.url, e.key, true)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("round %d, prompt %d: alone %q, beside seven others %q", round, i, want[i], got[i])
			}
		}
	}
	// And sequentially again: the concurrent rounds left other slots'
	// caches behind, which must not change anything either.
	again, err := deterministicRun(e.url, e.key, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if again[i] != want[i] {
			t.Errorf("prompt %d alone, later: %q, first %q", i, again[i], want[i])
		}
	}
}
