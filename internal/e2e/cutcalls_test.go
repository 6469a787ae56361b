package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/gguf/testmodel"
	"github.com/sovereign-ai/sovereign/internal/models"
)

// qwenishStore is a store with "tiny" (ChatML, whose template ignores
// tools: the generic envelope) and "qwenish" (Qwen 2.5's template from
// llama.cpp's corpus: the native <tool_call> format).
func qwenishStore(t *testing.T) *models.Store {
	t.Helper()
	tmpl := qwenTemplate(t)
	store := tinyStore(t, "tiny")
	src := filepath.Join(t.TempDir(), "qwenish.gguf")
	if err := testmodel.Write(src, testmodel.Options{Seed: 5, ChatTemplate: string(tmpl)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pull(context.Background(), "file://"+src, models.PullOptions{ID: "qwenish"}); err != nil {
		t.Fatal(err)
	}
	return store
}

// squeeze drops white space, so arguments written with spaces compare
// with the same arguments compacted.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// TestToolCallsCutShort forces a call with max_tokens too small for it, in
// the generic envelope (tiny) and the native format (qwenish), on chat
// completions plain and streamed and on the Responses API: the answer is
// the call with the arguments written so far — a prefix of the whole
// call's — and finish_reason "length" (an incomplete response), never the
// format's text as content. With one token the name alone comes back.
func TestToolCallsCutShort(t *testing.T) {
	e := newEnv(t, qwenishStore(t), engine.Config{CtxPerSlot: 4096})
	named := map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}
	for _, model := range []string{"tiny", "qwenish"} {
		code, whole, raw := toolChat(t, e, model, map[string]any{"tool_choice": named})
		if code != 200 {
			t.Fatalf("%s: %d %s", model, code, raw)
		}
		checkCall(t, model+", whole", whole, raw, "get_weather")
		full := squeeze(whole.Choices[0].Message.ToolCalls[0].Function.Arguments)
		for _, max := range []int{1, 6, 12} {
			extra := map[string]any{"tool_choice": named, "max_tokens": max}
			what := fmt.Sprintf("%s, max_tokens %d", model, max)
			code, a, raw := toolChat(t, e, model, extra)
			if code != 200 || len(a.Choices) != 1 {
				t.Fatalf("%s: %d %s", what, code, raw)
			}
			c := a.Choices[0]
			if c.FinishReason != "length" || c.Message.Content != nil || len(c.Message.ToolCalls) != 1 {
				t.Fatalf("%s: %s", what, raw)
			}
			call := c.Message.ToolCalls[0]
			if call.Type != "function" || !strings.HasPrefix(call.ID, "call_") || call.Function.Name != "get_weather" ||
				!strings.HasPrefix(full, squeeze(call.Function.Arguments)) || max == 1 && call.Function.Arguments != "" {
				t.Fatalf("%s: call %s(%q), the whole call's arguments %q", what, call.Function.Name, call.Function.Arguments, full)
			}
			typ, id, name, args, finish := streamedCall(t, e, model, extra)
			if finish != "length" || typ != "function" || id == "" || name != "get_weather" || squeeze(args) != squeeze(call.Function.Arguments) {
				t.Fatalf("%s, streamed: %s %s(%q) %s; plain %q", what, typ, name, args, finish, call.Function.Arguments)
			}
			streamedContentIsEmpty(t, e, model, extra)

			resp := e.post(context.Background(), "/v1/responses", map[string]any{"model": model, "input": "Weather in Paris?", "max_output_tokens": max,
				"temperature": 0, "parallel_tool_calls": false, "tool_choice": map[string]any{"type": "function", "name": "get_weather"},
				"tools": []map[string]any{{"type": "function", "name": "get_weather", "parameters": weatherTools[0]["function"].(map[string]any)["parameters"]}}})
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var r struct {
				Status            string `json:"status"`
				IncompleteDetails struct {
					Reason string `json:"reason"`
				} `json:"incomplete_details"`
				Output []struct {
					Type, Name, Arguments, Status string
				} `json:"output"`
			}
			json.Unmarshal(body, &r)
			if resp.StatusCode != 200 || r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" || len(r.Output) != 1 ||
				r.Output[0].Type != "function_call" || r.Output[0].Name != "get_weather" || r.Output[0].Status != "incomplete" ||
				squeeze(r.Output[0].Arguments) != squeeze(call.Function.Arguments) {
				t.Fatalf("%s, responses: %d %s", what, resp.StatusCode, body)
			}
		}
	}
}

// streamedContentIsEmpty fails if a streamed answer sends any content.
func streamedContentIsEmpty(t *testing.T, e *env, model string, extra map[string]any) {
	t.Helper()
	body := map[string]any{"model": model, "messages": []map[string]any{{"role": "user", "content": "Weather in Paris?"}},
		"tools": weatherTools, "max_tokens": 600, "temperature": 0, "parallel_tool_calls": false, "stream": true}
	for k, v := range extra {
		body[k] = v
	}
	resp := e.post(context.Background(), "/v1/chat/completions", body)
	defer resp.Body.Close()
	chunks, _ := sseEvents(t, resp.Body)
	for _, ch := range chunks {
		for _, c := range ch["choices"].([]any) {
			d, _ := c.(map[string]any)["delta"].(map[string]any)
			if s, _ := d["content"].(string); s != "" {
				t.Fatalf("%s %v: content %q streamed", model, extra, s)
			}
		}
	}
}

// TestNamedFunctionIsOneCall: a named tool_choice with parallel calls
// allowed (the default, which instructor and LangChain's structured output
// keep) makes one call of it, in both formats.
func TestNamedFunctionIsOneCall(t *testing.T) {
	e := newEnv(t, qwenishStore(t), engine.Config{CtxPerSlot: 4096})
	for _, model := range []string{"tiny", "qwenish"} {
		code, a, raw := toolChat(t, e, model, map[string]any{"parallel_tool_calls": true,
			"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}}})
		if code != 200 {
			t.Fatalf("%s: %d %s", model, code, raw)
		}
		checkCall(t, model, a, raw, "get_time")
	}
}
