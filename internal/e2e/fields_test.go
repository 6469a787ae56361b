package e2e

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// TestEveryFieldIsHonouredOrRefused walks docs/openai-compat.md's tables
// for local models on the tiny model: each honoured field changes the
// answer against the same request without it (same seed, temperature 1),
// each accepted field is taken without a change of meaning, and each
// refused field is a 400 naming it.
func TestEveryFieldIsHonouredOrRefused(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	call := func(path string, body map[string]any) (int, string, map[string]any) {
		t.Helper()
		resp := e.post(context.Background(), path, body)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var out map[string]any
		json.Unmarshal(raw, &out)
		return resp.StatusCode, string(raw), out
	}
	// answer is what a field can change: choices (text, finish reason,
	// tool calls, logprobs) and usage, without the ids and times.
	answer := func(out map[string]any) string {
		b, _ := json.Marshal([]any{out["choices"], out["usage"]})
		return string(b)
	}
	chat := func(extra map[string]any) map[string]any {
		b := map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Tell me a story about the sea."}},
			"temperature": 1, "seed": 11, "max_tokens": 12}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	text := func(extra map[string]any) map[string]any {
		b := map[string]any{"model": "tiny", "prompt": "Once upon a time", "temperature": 1, "seed": 11, "max_tokens": 12}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	tool := map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "integer"}}, "required": []string{"x"}}}}
	for _, route := range []struct {
		path     string
		build    func(map[string]any) map[string]any
		honoured map[string]map[string]any
		accepted map[string]map[string]any
		refused  map[string]map[string]any
	}{
		{"/v1/chat/completions", chat,
			map[string]map[string]any{
				"max_tokens":            {"max_tokens": 3},
				"max_completion_tokens": {"max_completion_tokens": 3},
				"temperature":           {"temperature": 0},
				"top_p":                 {"top_p": 0.05},
				"top_k":                 {"top_k": 1},
				"min_p":                 {"min_p": 0.9},
				"seed":                  {"seed": 12},
				"stop":                  {"stop": []string{" "}},
				"presence_penalty":      {"presence_penalty": 2},
				"frequency_penalty":     {"frequency_penalty": 2},
				"repeat_penalty":        {"repeat_penalty": 3},
				"logit_bias":            {"logit_bias": map[string]any{"5": 100}},
				"n":                     {"n": 2},
				"logprobs":              {"logprobs": true},
				"top_logprobs":          {"logprobs": true, "top_logprobs": 3},
				"response_format":       {"response_format": map[string]any{"type": "json_object"}},
				"tools":                 {"tools": []any{tool}, "tool_choice": "required"},
				"functions (legacy)":    {"functions": []any{tool["function"]}, "function_call": map[string]any{"name": "f"}},
				"messages (system)":     {"messages": []map[string]any{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Tell me a story about the sea."}}},
			},
			map[string]map[string]any{
				// name reaches the chat template, which shows it only if it
				// knows names (this one, like most, does not).
				"messages[].name": {"messages": []map[string]any{{"role": "user", "name": "Ann", "content": "Tell me a story about the sea."}}},
				"user":            {"user": "u1"}, "metadata": {"metadata": map[string]any{"a": "b"}}, "service_tier": {"service_tier": "auto"},
				"safety_identifier": {"safety_identifier": "s"}, "prompt_cache_key": {"prompt_cache_key": "k"}, "store": {"store": false},
				"modalities": {"modalities": []string{"text"}}, "stream_options": {"stream": true, "stream_options": map[string]any{"include_usage": true}},
				"functions": {"functions": []any{}},
			},
			map[string]map[string]any{
				"audio": {"audio": map[string]any{"voice": "alloy", "format": "wav"}}, "modalities": {"modalities": []string{"text", "audio"}},
				"prediction": {"prediction": map[string]any{"type": "content", "content": "x"}}, "web_search_options": {"web_search_options": map[string]any{}},
				"verbosity": {"verbosity": "low"}, "reasoning_effort": {"reasoning_effort": "low"},
				// function_call without functions, as tool_choice without tools.
				"function_call": {"function_call": "auto"}, "store": {"store": true}, "tool_choice": {"tool_choice": "required"},
				"vendor_field": {"vendor_field": 1},
			}},
		{"/v1/completions", text,
			map[string]map[string]any{
				"max_tokens": {"max_tokens": 3}, "temperature": {"temperature": 0}, "top_p": {"top_p": 0.05}, "seed": {"seed": 12},
				"stop": {"stop": " "}, "presence_penalty": {"presence_penalty": 2}, "frequency_penalty": {"frequency_penalty": 2},
				"logit_bias": {"logit_bias": map[string]any{"5": 100}}, "n": {"n": 2}, "logprobs": {"logprobs": 2},
				"prompt": {"prompt": []string{"Once upon a time", "The sea"}}, "echo": {"echo": true},
			},
			map[string]map[string]any{"user": {"user": "u1"}},
			// suffix is honoured by a model with FIM tokens
			// (TestFillInTheMiddle); the tiny model has none.
			map[string]map[string]any{"suffix": {"suffix": "x"}, "best_of": {"best_of": 2}, "vendor_field": {"vendor_field": 1}}},
	} {
		status, raw, base := call(route.path, route.build(nil))
		if status != 200 {
			t.Fatalf("%s baseline: %d %s", route.path, status, raw)
		}
		for name, extra := range route.honoured {
			status, raw, out := call(route.path, route.build(extra))
			if status != 200 || answer(out) == answer(base) {
				t.Errorf("%s %s: %d, the answer did not change: %s", route.path, name, status, raw)
			}
		}
		for name, extra := range route.accepted {
			if status, raw, _ := call(route.path, route.build(extra)); status != 200 {
				t.Errorf("%s %s: %d %s, want it accepted", route.path, name, status, raw)
			}
		}
		for name, extra := range route.refused {
			status, raw, out := call(route.path, route.build(extra))
			errObj, _ := out["error"].(map[string]any)
			want := name
			if name == "tool_choice" {
				want = "tool_choice" // without tools
			}
			if status != 400 || errObj == nil || errObj["param"] != want {
				t.Errorf("%s %s: %d %s, want a 400 naming %s", route.path, name, status, raw, want)
			}
		}
	}
}
