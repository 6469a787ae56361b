package e2e

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// The instruction-tuned default chat model.
const instructModel = "qwen2.5-coder-0.5b-instruct"

// postJSON posts body and decodes the answer into out; it returns the
// status and the raw body.
func postJSON(t *testing.T, e *env, path string, body map[string]any, out any) (int, []byte) {
	t.Helper()
	resp := e.post(context.Background(), path, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		json.Unmarshal(raw, out)
	}
	return resp.StatusCode, raw
}

// TestInstructModelAutoToolCalls: with tool_choice auto, Qwen2.5-Coder
// 0.5B Instruct writes the call it means as JSON in a ```json block (not
// in its template's <tool_call> tags); that answer comes back as the
// call, plain and streamed (no content streamed first). A block naming a
// function that was not offered stays text.
func TestInstructModelAutoToolCalls(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 2048})
	tools := []map[string]any{
		{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Current weather in a city",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"},
				"unit": map[string]any{"type": "string", "enum": []string{"c", "f"}}}, "required": []string{"city"}}}},
		{"type": "function", "function": map[string]any{"name": "get_time", "description": "Current time in a time zone",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"zone": map[string]any{"type": "string"}}, "required": []string{"zone"}}}},
	}
	body := func(q string) map[string]any {
		return map[string]any{"model": instructModel, "messages": []map[string]any{{"role": "user", "content": q}},
			"tools": tools, "tool_choice": "auto", "max_tokens": 80, "temperature": 0}
	}
	var a toolAnswer
	code, raw := postJSON(t, e, "/v1/chat/completions", body("Weather in Paris?"), &a)
	if code != 200 || len(a.Choices) != 1 || a.Choices[0].FinishReason != "tool_calls" || a.Choices[0].Message.Content != nil || len(a.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("auto: %d %s", code, raw)
	}
	call := a.Choices[0].Message.ToolCalls[0]
	var args map[string]string
	if call.Function.Name != "get_weather" || json.Unmarshal([]byte(call.Function.Arguments), &args) != nil || args["city"] != "Paris" {
		t.Fatalf("auto: %s(%s)", call.Function.Name, call.Function.Arguments)
	}
	streamed := body("Weather in Paris?")
	streamed["stream"] = true
	typ, id, name, sargs, finish := streamedCallBody(t, e, streamed)
	if typ != "function" || id == "" || name != "get_weather" || sargs != call.Function.Arguments || finish != "tool_calls" {
		t.Fatalf("auto, streamed: %s %s(%s) %s", typ, name, sargs, finish)
	}
	streamedContentIsEmptyBody(t, e, streamed)

	var text toolAnswer
	code, raw = postJSON(t, e, "/v1/chat/completions", body("Write a Python function that reverses a string."), &text)
	if code != 200 || len(text.Choices) != 1 || len(text.Choices[0].Message.ToolCalls) != 0 || text.Choices[0].Message.Content == nil ||
		!strings.Contains(*text.Choices[0].Message.Content, "reverse_string") || text.Choices[0].FinishReason != "stop" {
		t.Fatalf("an undeclared function: %d %s", code, raw)
	}
}

// streamedCallBody streams body and assembles its first tool call.
func streamedCallBody(t *testing.T, e *env, body map[string]any) (typ, id, name, args, finish string) {
	t.Helper()
	resp := e.post(context.Background(), "/v1/chat/completions", body)
	defer resp.Body.Close()
	chunks, done := sseEvents(t, resp.Body)
	if !done {
		t.Fatal("stream without [DONE]")
	}
	for _, ch := range chunks {
		for _, x := range ch["choices"].([]any) {
			c := x.(map[string]any)
			if f, ok := c["finish_reason"].(string); ok {
				finish = f
			}
			d, _ := c["delta"].(map[string]any)
			tcs, _ := d["tool_calls"].([]any)
			for _, y := range tcs {
				tc := y.(map[string]any)
				f := tc["function"].(map[string]any)
				if v, ok := tc["id"].(string); ok {
					id, typ, name = v, tc["type"].(string), f["name"].(string)
				}
				a, _ := f["arguments"].(string)
				args += a
			}
		}
	}
	return typ, id, name, args, finish
}

// streamedContentIsEmptyBody fails if streaming body sends any content.
func streamedContentIsEmptyBody(t *testing.T, e *env, body map[string]any) {
	t.Helper()
	resp := e.post(context.Background(), "/v1/chat/completions", body)
	defer resp.Body.Close()
	chunks, _ := sseEvents(t, resp.Body)
	for _, ch := range chunks {
		for _, c := range ch["choices"].([]any) {
			d, _ := c.(map[string]any)["delta"].(map[string]any)
			if s, _ := d["content"].(string); s != "" {
				t.Fatalf("content %q streamed", s)
			}
		}
	}
}

// TestLegacyFunctionCalls: the legacy functions and function_call are
// served as tools, and the answer takes the legacy shape — a
// function_call message (content null) with finish_reason
// "function_call", delta.function_call in a stream, "length" with the
// arguments so far when cut short — and a legacy conversation (an
// assistant's function_call, then a "function" message) is taken.
func TestLegacyFunctionCalls(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 1024})
	fn := weatherTools[0]["function"]
	body := func(extra map[string]any) map[string]any {
		b := map[string]any{"model": "gemma3-270m", "messages": []map[string]any{{"role": "user", "content": "Weather in Paris?"}},
			"functions": []any{fn}, "function_call": map[string]any{"name": "get_weather"}, "max_tokens": 60, "temperature": 0}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	type legacy struct {
		Choices []struct {
			Message struct {
				Content      *string                           `json:"content"`
				ToolCalls    []any                             `json:"tool_calls"`
				FunctionCall *struct{ Name, Arguments string } `json:"function_call"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	var whole legacy
	code, raw := postJSON(t, e, "/v1/chat/completions", body(nil), &whole)
	m := whole.Choices
	if code != 200 || len(m) != 1 || m[0].FinishReason != "function_call" || m[0].Message.Content != nil || m[0].Message.ToolCalls != nil ||
		m[0].Message.FunctionCall == nil || m[0].Message.FunctionCall.Name != "get_weather" || !json.Valid([]byte(m[0].Message.FunctionCall.Arguments)) {
		t.Fatalf("legacy: %d %s", code, raw)
	}
	var cut legacy
	code, raw = postJSON(t, e, "/v1/chat/completions", body(map[string]any{"max_tokens": 18}), &cut)
	if c := cut.Choices; code != 200 || len(c) != 1 || c[0].FinishReason != "length" || c[0].Message.Content != nil || c[0].Message.FunctionCall == nil ||
		!strings.HasPrefix(squeeze(m[0].Message.FunctionCall.Arguments), squeeze(c[0].Message.FunctionCall.Arguments)) {
		t.Fatalf("legacy, cut short: %d %s", code, raw)
	}

	resp := e.post(context.Background(), "/v1/chat/completions", body(map[string]any{"stream": true}))
	chunks, done := sseEvents(t, resp.Body)
	resp.Body.Close()
	var name, args, finish string
	for _, ch := range chunks {
		for _, x := range ch["choices"].([]any) {
			c := x.(map[string]any)
			d := c["delta"].(map[string]any)
			if _, ok := d["tool_calls"]; ok {
				t.Fatalf("tool_calls in a legacy stream: %v", ch)
			}
			if fc, ok := d["function_call"].(map[string]any); ok {
				if n, _ := fc["name"].(string); n != "" {
					name = n
				}
				a, _ := fc["arguments"].(string)
				args += a
			}
			if f, ok := c["finish_reason"].(string); ok {
				finish = f
			}
		}
	}
	if !done || name != "get_weather" || args != m[0].Message.FunctionCall.Arguments || finish != "function_call" {
		t.Fatalf("legacy, streamed: %s(%s) %s", name, args, finish)
	}

	history := []map[string]any{
		{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": nil, "function_call": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}},
		{"role": "function", "name": "get_weather", "content": `{"temp_c": 18}`},
	}
	var after legacy
	if code, raw := postJSON(t, e, "/v1/chat/completions", body(map[string]any{"messages": history, "function_call": "none", "max_tokens": 8}), &after); code != 200 ||
		len(after.Choices) != 1 || after.Choices[0].Message.FunctionCall != nil {
		t.Fatalf("legacy history: %d %s", code, raw)
	}
}

// TestFillInTheMiddle: suffix on /v1/completions fills in the middle on a
// model with FIM tokens (the instruct model, Qwen2.5-Coder), plain and
// streamed, and is a 400 naming suffix on one without (gemma3-270m).
func TestFillInTheMiddle(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 1024})
	body := map[string]any{"model": instructModel, "prompt": "def add(a, b):\n    return ", "suffix": "\n\nprint(add(1, 2))\n",
		"max_tokens": 12, "temperature": 0}
	var out struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct{ PromptTokens, CompletionTokens int } `json:"usage"`
	}
	code, raw := postJSON(t, e, "/v1/completions", body, &out)
	if code != 200 || len(out.Choices) != 1 || !strings.HasPrefix(out.Choices[0].Text, "a + b") {
		t.Fatalf("fim: %d %s", code, raw)
	}
	body["stream"] = true
	resp := e.post(context.Background(), "/v1/completions", body)
	chunks, done := sseEvents(t, resp.Body)
	resp.Body.Close()
	var text strings.Builder
	for _, ch := range chunks {
		for _, c := range ch["choices"].([]any) {
			s, _ := c.(map[string]any)["text"].(string)
			text.WriteString(s)
		}
	}
	if !done || text.String() != out.Choices[0].Text {
		t.Fatalf("fim, streamed: %q, plain %q", text.String(), out.Choices[0].Text)
	}
	// Echoed, the prompt (the text before the insertion point) comes first.
	body["stream"], body["echo"] = false, true
	if code, raw := postJSON(t, e, "/v1/completions", body, &out); code != 200 || out.Choices[0].Text != "def add(a, b):\n    return "+text.String() {
		t.Fatalf("fim, echoed: %d %s", code, raw)
	}
	body["model"], body["echo"] = "gemma3-270m", false
	var env envelope
	if code, raw := postJSON(t, e, "/v1/completions", body, &env); code != 400 || env.Error.Param == nil || *env.Error.Param != "suffix" {
		t.Fatalf("fim without FIM tokens: %d %s", code, raw)
	}
}

// textCompletion is the part of a text completion the echo tests read.
type textCompletion struct {
	Choices []struct {
		Text     string `json:"text"`
		Logprobs *struct {
			Tokens        []string             `json:"tokens"`
			TokenLogprobs []*float64           `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
			TextOffset    []int                `json:"text_offset"`
		} `json:"logprobs"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// TestEchoWithPromptLogprobs: echo puts the prompt before the completion
// (plain and streamed); with logprobs the prompt's tokens come first, the
// first with null, each scored as the model scores it when generating
// (the logprob of " is" after "The capital of France" is the one a
// generation from that prompt lists for it); max_tokens 0 gives the
// prompt alone.
func TestEchoWithPromptLogprobs(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 1024})
	const prompt = "The capital of France is"
	var plain, echoed textCompletion
	base := map[string]any{"model": "gemma3-270m", "prompt": prompt, "max_tokens": 4, "temperature": 0}
	if code, raw := postJSON(t, e, "/v1/completions", base, &plain); code != 200 {
		t.Fatalf("plain: %d %s", code, raw)
	}
	base["echo"] = true
	if code, raw := postJSON(t, e, "/v1/completions", base, &echoed); code != 200 || echoed.Choices[0].Text != prompt+plain.Choices[0].Text {
		t.Fatalf("echo: %d %s; without echo %q", code, raw, plain.Choices[0].Text)
	}
	base["stream"] = true
	resp := e.post(context.Background(), "/v1/completions", base)
	chunks, _ := sseEvents(t, resp.Body)
	resp.Body.Close()
	if len(chunks) == 0 || chunks[0]["choices"].([]any)[0].(map[string]any)["text"] != prompt {
		t.Fatalf("echo, streamed: the first chunk is not the prompt: %v", chunks)
	}

	var lp textCompletion
	code, raw := postJSON(t, e, "/v1/completions", map[string]any{"model": "gemma3-270m", "prompt": prompt, "max_tokens": 3, "temperature": 0,
		"echo": true, "logprobs": 2}, &lp)
	c := lp.Choices[0]
	if code != 200 || c.Logprobs == nil || len(c.Logprobs.Tokens) != lp.Usage.PromptTokens+lp.Usage.CompletionTokens ||
		c.Logprobs.TokenLogprobs[0] != nil || c.Logprobs.TopLogprobs[0] != nil || strings.Join(c.Logprobs.Tokens, "") != c.Text ||
		!strings.HasPrefix(c.Text, prompt) {
		t.Fatalf("echo with logprobs: %d %s", code, raw)
	}
	off := 0
	for i, tok := range c.Logprobs.Tokens {
		if c.Logprobs.TextOffset[i] != off || i > 0 && (c.Logprobs.TokenLogprobs[i] == nil || len(c.Logprobs.TopLogprobs[i]) == 0) {
			t.Fatalf("echo with logprobs, token %d: %s", i, raw)
		}
		off += len(tok)
	}

	var only textCompletion
	code, raw = postJSON(t, e, "/v1/completions", map[string]any{"model": "gemma3-270m", "prompt": prompt, "max_tokens": 0, "echo": true, "logprobs": 5}, &only)
	o := only.Choices[0]
	if code != 200 || o.Text != prompt || only.Usage.CompletionTokens != 0 || o.FinishReason != "length" || len(o.Logprobs.Tokens) != only.Usage.PromptTokens {
		t.Fatalf("max_tokens 0: %d %s", code, raw)
	}
	last := len(o.Logprobs.Tokens) - 1
	if o.Logprobs.Tokens[last] != " is" {
		t.Fatalf("the prompt's last token is %q", o.Logprobs.Tokens[last])
	}
	var gen textCompletion
	code, raw = postJSON(t, e, "/v1/completions", map[string]any{"model": "gemma3-270m", "prompt": strings.TrimSuffix(prompt, " is"), "max_tokens": 1,
		"temperature": 0, "logprobs": 5}, &gen)
	want, ok := gen.Choices[0].Logprobs.TopLogprobs[0][" is"]
	if code != 200 || !ok {
		t.Fatalf("generation: %d %s", code, raw)
	}
	if got := *o.Logprobs.TokenLogprobs[last]; math.Abs(got-want) > 0.01 {
		t.Fatalf("echo scores \" is\" %v, a generation %v", got, want)
	}
}
