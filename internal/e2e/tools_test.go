package e2e

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/gguf/testmodel"
	"github.com/sovereign-ai/sovereign/internal/models"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// toolAnswer is the part of a chat completion with tool calls the tests read.
type toolAnswer struct {
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

var weatherTools = []map[string]any{
	{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Current weather in a city",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"enum": []string{"Paris", "Rome"}}},
			"required": []string{"city"}, "additionalProperties": false}}},
	{"type": "function", "function": map[string]any{"name": "get_time", "description": "Current time in a zone",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"zone": map[string]any{"enum": []string{"UTC", "CET"}}},
			"required": []string{"zone"}, "additionalProperties": false}}},
}

// toolChat posts a chat completion with tools and decodes the answer.
func toolChat(t *testing.T, e *env, model string, extra map[string]any) (int, toolAnswer, []byte) {
	t.Helper()
	body := map[string]any{"model": model, "messages": []map[string]any{{"role": "user", "content": "Weather in Paris?"}},
		"tools": weatherTools, "max_tokens": 600, "temperature": 0, "parallel_tool_calls": false}
	for k, v := range extra {
		body[k] = v
	}
	resp := e.post(context.Background(), "/v1/chat/completions", body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a toolAnswer
	json.Unmarshal(raw, &a)
	return resp.StatusCode, a, raw
}

// checkCall fails unless a holds exactly one call, of tool name (either
// tool for ""), whose arguments are valid under that tool's schema.
func checkCall(t *testing.T, what string, a toolAnswer, raw []byte, name string) {
	t.Helper()
	if len(a.Choices) != 1 || a.Choices[0].FinishReason != "tool_calls" || len(a.Choices[0].Message.ToolCalls) != 1 || a.Choices[0].Message.Content != nil {
		t.Fatalf("%s: %s", what, raw)
	}
	c := a.Choices[0].Message.ToolCalls[0]
	checkArgs(t, what, c.Type, c.ID, c.Function.Name, c.Function.Arguments, name)
}

func checkArgs(t *testing.T, what, typ, id, fname, arguments, name string) {
	t.Helper()
	var args map[string]string
	if typ != "function" || !strings.HasPrefix(id, "call_") || (name != "" && fname != name) || json.Unmarshal([]byte(arguments), &args) != nil {
		t.Fatalf("%s: call %s %s %s(%s)", what, typ, id, fname, arguments)
	}
	want, ok := map[string][]string{"get_weather": {"city", "Paris", "Rome"}, "get_time": {"zone", "UTC", "CET"}}[fname]
	if v := args[want[0]]; !ok || len(args) != 1 || v != want[1] && v != want[2] {
		t.Fatalf("%s: %s(%s)", what, fname, arguments)
	}
}

// streamedCall streams a chat completion with tools and returns the call
// assembled from its deltas and the finish reason, checking OpenAI's
// order: index, id, type and name first, then argument fragments.
func streamedCall(t *testing.T, e *env, model string, extra map[string]any) (typ, id, name, args, finish string) {
	t.Helper()
	body := map[string]any{"model": model, "messages": []map[string]any{{"role": "user", "content": "Weather in Paris?"}},
		"tools": weatherTools, "max_tokens": 600, "temperature": 0, "parallel_tool_calls": false, "stream": true}
	for k, v := range extra {
		body[k] = v
	}
	resp := e.post(context.Background(), "/v1/chat/completions", body)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, raw)
	}
	chunks, done := sseEvents(t, resp.Body)
	if !done {
		t.Fatal("stream without [DONE]")
	}
	for _, ch := range chunks {
		cs, _ := ch["choices"].([]any)
		if len(cs) == 0 {
			continue
		}
		c := cs[0].(map[string]any)
		if f, ok := c["finish_reason"].(string); ok {
			finish = f
		}
		d, _ := c["delta"].(map[string]any)
		tcs, _ := d["tool_calls"].([]any)
		for _, x := range tcs {
			tc := x.(map[string]any)
			if tc["index"].(float64) != 0 {
				t.Fatalf("a second call with parallel_tool_calls false: %v", tc)
			}
			f := tc["function"].(map[string]any)
			if v, ok := tc["id"].(string); ok {
				if id != "" {
					t.Fatalf("the call's id sent twice: %v", chunks)
				}
				id, typ, name = v, tc["type"].(string), f["name"].(string)
			} else if id == "" {
				t.Fatalf("arguments before the call's id: %v", chunks)
			}
			a, _ := f["arguments"].(string)
			args += a
		}
	}
	return typ, id, name, args, finish
}

// TestToolCallsGenericFormat runs tool calls on a tiny model whose ChatML
// template does not render tools, so the generic JSON envelope is used:
// "required" and a named function force a call whose arguments match the
// tool's schema (the random model writes whatever the grammar allows),
// "none" answers with text, a streamed call arrives as OpenAI's deltas, a
// conversation with a call and its result is accepted, and bad tool
// fields are refused with the field named.
func TestToolCallsGenericFormat(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{CtxPerSlot: 4096})
	code, a, raw := toolChat(t, e, "tiny", map[string]any{"tool_choice": "required"})
	if code != 200 {
		t.Fatalf("required: %d %s", code, raw)
	}
	checkCall(t, "required", a, raw, "")
	for _, name := range []string{"get_weather", "get_time"} {
		code, a, raw = toolChat(t, e, "tiny", map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": name}}})
		if code != 200 {
			t.Fatalf("named %s: %d %s", name, code, raw)
		}
		checkCall(t, "named "+name, a, raw, name)
	}
	code, a, raw = toolChat(t, e, "tiny", map[string]any{"tool_choice": "none", "max_tokens": 8})
	if code != 200 || len(a.Choices) != 1 || len(a.Choices[0].Message.ToolCalls) != 0 || a.Choices[0].FinishReason == "tool_calls" || a.Choices[0].Message.Content == nil {
		t.Fatalf("none: %d %s", code, raw)
	}

	typ, id, name, args, finish := streamedCall(t, e, "tiny", map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}}})
	if finish != "tool_calls" {
		t.Fatalf("streamed: finish %q", finish)
	}
	checkArgs(t, "streamed", typ, id, name, args, "get_time")

	// A round trip: the call and its result go back to the model.
	history := []map[string]any{
		{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}},
		{"role": "tool", "tool_call_id": "call_1", "content": `{"temp_c": 18}`},
	}
	code, a, raw = toolChat(t, e, "tiny", map[string]any{"messages": history, "tool_choice": "none", "max_tokens": 8})
	if code != 200 || len(a.Choices) != 1 || a.Choices[0].Message.Content == nil {
		t.Fatalf("round trip: %d %s", code, raw)
	}

	for _, c := range []struct {
		extra map[string]any
		param string
	}{
		{map[string]any{"tools": nil, "tool_choice": "required"}, "tool_choice"},
		// Fields that are not served are refused, not dropped.
		{map[string]any{"audio": map[string]any{"voice": "alloy", "format": "wav"}}, "audio"},
		{map[string]any{"store": true}, "store"},
		{map[string]any{"frobnicate": 1}, "frobnicate"},
		{map[string]any{"tool_choice": "sometimes"}, "tool_choice"},
		{map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "nope"}}}, "tool_choice.function.name"},
		{map[string]any{"tools": []map[string]any{{"type": "retrieval"}}}, "tools[0].type"},
		{map[string]any{"tools": []map[string]any{{"type": "function", "function": map[string]any{"name": "bad name"}}}}, "tools[0].function.name"},
		{map[string]any{"tools": []map[string]any{{"type": "function", "function": map[string]any{"name": "f", "parameters": "x"}}}}, "tools[0].function.parameters"},
		{map[string]any{"messages": []map[string]any{{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}}}, "messages[1].tool_call_id"},
		{map[string]any{"messages": []map[string]any{{"role": "assistant", "content": "", "tool_calls": []map[string]any{{"id": "c", "type": "function",
			"function": map[string]any{"name": "f", "arguments": "{"}}}}}}, "messages[0].tool_calls[0].function.arguments"},
	} {
		code, _, raw := toolChat(t, e, "tiny", c.extra)
		var env envelope
		json.Unmarshal(raw, &env)
		if code != 400 || env.Error.Param == nil || *env.Error.Param != c.param {
			t.Errorf("%v: %d %s, want 400 on %s", c.extra, code, raw, c.param)
		}
	}
}

// qwenTemplate is Qwen 2.5's chat template from llama.cpp's corpus of
// real templates (in the llama.cpp source the build uses).
func qwenTemplate(t *testing.T) []byte {
	t.Helper()
	cmd := exec.Command("bash", "scripts/llama-cpp.sh", "source")
	cmd.Dir = testutil.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("llama.cpp's source: %v", err)
	}
	tmpl, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "models", "templates", "Qwen-Qwen2.5-7B-Instruct.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// TestToolCallsNativeFormat gives a tiny model Qwen 2.5's chat template
// (from llama.cpp's corpus), which renders tools and has its own call
// format (<tool_call>{…}</tool_call>): llama.cpp's chat code supplies the
// grammar and the parser, and the answer carries the forced call, plain
// and streamed.
func TestToolCallsNativeFormat(t *testing.T) {
	tmpl := qwenTemplate(t)
	store, err := models.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "qwenish.gguf")
	if err := testmodel.Write(src, testmodel.Options{Seed: 5, ChatTemplate: string(tmpl)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pull(context.Background(), "file://"+src, models.PullOptions{ID: "qwenish"}); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, store, engine.Config{CtxPerSlot: 4096})
	code, a, raw := toolChat(t, e, "qwenish", map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}})
	if code != 200 {
		t.Fatalf("named: %d %s", code, raw)
	}
	checkCall(t, "native, named", a, raw, "get_weather")
	code, a, raw = toolChat(t, e, "qwenish", map[string]any{"tool_choice": "required"})
	if code != 200 {
		t.Fatalf("required: %d %s", code, raw)
	}
	checkCall(t, "native, required", a, raw, "")
	typ, id, name, args, finish := streamedCall(t, e, "qwenish", map[string]any{"tool_choice": "required"})
	if finish != "tool_calls" {
		t.Fatalf("native, streamed: finish %q", finish)
	}
	checkArgs(t, "native, streamed", typ, id, name, args, "")
	// auto: the lazy grammar (llama.cpp's trigger patterns) builds and the
	// random model answers with text or a valid call, plain and streamed.
	for i := 0; i < 3; i++ {
		code, a, raw = toolChat(t, e, "qwenish", map[string]any{"tool_choice": "auto", "max_tokens": 40, "temperature": 1, "seed": i})
		if code != 200 || len(a.Choices) != 1 {
			t.Fatalf("native, auto: %d %s", code, raw)
		}
		if calls := a.Choices[0].Message.ToolCalls; len(calls) > 0 {
			checkArgs(t, "native, auto", calls[0].Type, calls[0].ID, calls[0].Function.Name, calls[0].Function.Arguments, "")
		}
	}
	if _, _, _, _, finish = streamedCall(t, e, "qwenish", map[string]any{"tool_choice": "auto", "max_tokens": 40}); finish == "" {
		t.Fatal("native, auto, streamed: no finish reason")
	}
}

// TestCompletionsSeveralPromptsAndN: /v1/completions takes an array of
// prompts (strings, or arrays of token ids) and n, as OpenAI does: prompt
// k's choices are k*n … k*n+n-1, plain and streamed, and usage counts each
// prompt once.
func TestCompletionsSeveralPromptsAndN(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	one := func(prompt any) int {
		resp := e.post(context.Background(), "/v1/completions", map[string]any{"model": "tiny", "prompt": prompt, "max_tokens": 3})
		defer resp.Body.Close()
		var out struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		json.NewDecoder(resp.Body).Decode(&out)
		return out.Usage.PromptTokens
	}
	wantPrompt := one("Once upon") + one("A cat")
	for _, prompt := range []any{[]string{"Once upon", "A cat"}} {
		resp := e.post(context.Background(), "/v1/completions", map[string]any{"model": "tiny", "prompt": prompt, "n": 2, "max_tokens": 3, "temperature": 1, "seed": 7})
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var out struct {
			Choices []struct {
				Index        int    `json:"index"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				PromptTokens, CompletionTokens int
			} `json:"usage"`
		}
		json.Unmarshal(raw, &out)
		if resp.StatusCode != 200 || len(out.Choices) != 4 {
			t.Fatalf("%v: %d %s", prompt, resp.StatusCode, raw)
		}
		for i, c := range out.Choices {
			if c.Index != i || c.FinishReason == "" {
				t.Fatalf("%v: choice %d: %s", prompt, i, raw)
			}
		}
		var usage map[string]any
		json.Unmarshal(raw, &struct{ Usage *map[string]any }{&usage})
		if int(usage["prompt_tokens"].(float64)) != wantPrompt || int(usage["completion_tokens"].(float64)) != 12 {
			t.Fatalf("usage %v, want %d prompt tokens and 12 completion tokens", usage, wantPrompt)
		}
	}
	resp := e.post(context.Background(), "/v1/completions", map[string]any{"model": "tiny", "prompt": [][]int{{1, 5, 6}, {1, 7}}, "max_tokens": 3,
		"stream": true, "stream_options": map[string]any{"include_usage": true}})
	chunks, done := sseEvents(t, resp.Body)
	resp.Body.Close()
	finished := map[float64]bool{}
	usage := 0
	for _, ch := range chunks {
		for _, c := range ch["choices"].([]any) {
			if c := c.(map[string]any); c["finish_reason"] != nil {
				finished[c["index"].(float64)] = true
			}
		}
		if u, ok := ch["usage"].(map[string]any); ok {
			usage = int(u["prompt_tokens"].(float64))
		}
	}
	if !done || len(finished) != 2 || !finished[0] || !finished[1] || usage != 5 {
		t.Fatalf("streamed token prompts: finished %v, prompt tokens %d, done %v", finished, usage, done)
	}
}
