package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// TestLogprobTokensJoinIntoContent: on the default model (a base model,
// whose transcript format makes it start with a space that the answer
// drops), the tokens of logprobs.content join into message.content, also
// when a stop sequence ends the answer mid-stream.
func TestLogprobTokensJoinIntoContent(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 1024})
	for _, extra := range []map[string]any{
		{"logprobs": true, "top_logprobs": 2, "max_tokens": 24},
		{"logprobs": true, "max_tokens": 40, "stop": []string{"Paris"}},
		{"logprobs": true, "max_tokens": 40, "stop": []string{" of"}},
	} {
		var out struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
				Logprobs struct {
					Content []struct {
						Token string `json:"token"`
						Bytes []int  `json:"bytes"`
					} `json:"content"`
					Refusal *[]any `json:"refusal"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		body := map[string]any{"model": "gemma3-270m", "temperature": 0, "messages": []map[string]string{{"role": "user", "content": "What is the capital of France?"}}}
		for k, v := range extra {
			body[k] = v
		}
		r := e.post(t.Context(), "/v1/chat/completions", body)
		if r.StatusCode != 200 {
			t.Fatalf("%v: %d", extra, r.StatusCode)
		}
		err := json.NewDecoder(r.Body).Decode(&out)
		r.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		c := out.Choices[0]
		var joined strings.Builder
		for _, tok := range c.Logprobs.Content {
			joined.WriteString(tok.Token)
			if len(tok.Bytes) != len(tok.Token) {
				t.Fatalf("%v: token %q has %d bytes", extra, tok.Token, len(tok.Bytes))
			}
		}
		if joined.String() != c.Message.Content || c.Message.Content == "" {
			t.Fatalf("%v: logprob tokens join into %q, content %q", extra, joined.String(), c.Message.Content)
		}
	}
}

// TestLogprobsOneEntryPerCompletionToken: logprobs.content has exactly
// usage.completion_tokens entries, plain and streamed, for a plain
// answer, one ended by the end token or cut by a stop sequence (whose
// tokens keep empty entries), and answers with tools: the generic
// envelope (the default model, forced and auto) and a native format whose
// markers (<tool_call>) are special tokens (qwenish).
func TestLogprobsOneEntryPerCompletionToken(t *testing.T) {
	gemma := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 1024})
	native := newEnv(t, qwenishStore(t), engine.Config{CtxPerSlot: 4096})
	tool := weatherTools[:1]
	for _, c := range []struct {
		e     *env
		model string
		extra map[string]any
	}{
		{gemma, "gemma3-270m", map[string]any{"max_tokens": 40}},
		{gemma, "gemma3-270m", map[string]any{"max_tokens": 40, "stop": []string{"Paris"}}},
		{gemma, "gemma3-270m", map[string]any{"max_tokens": 40, "stop": []string{" of"}}},
		{gemma, "gemma3-270m", map[string]any{"max_tokens": 40, "tools": tool, "tool_choice": "required"}},
		{gemma, "gemma3-270m", map[string]any{"max_tokens": 12, "tools": tool, "tool_choice": "required"}},
		{gemma, "gemma3-270m", map[string]any{"max_tokens": 40, "tools": tool, "tool_choice": "auto"}},
		{native, "qwenish", map[string]any{"max_tokens": 40, "tools": tool, "tool_choice": "required"}},
		{native, "qwenish", map[string]any{"max_tokens": 9, "tools": tool, "tool_choice": "required"}},
		{native, "qwenish", map[string]any{"max_tokens": 20, "stop": []string{"e"}}},
	} {
		body := map[string]any{"model": c.model, "temperature": 0, "logprobs": true, "top_logprobs": 1,
			"messages": []map[string]string{{"role": "user", "content": "What is the capital of France?"}}}
		for k, v := range c.extra {
			body[k] = v
		}
		r := c.e.post(t.Context(), "/v1/chat/completions", body)
		var out struct {
			Choices []struct {
				Logprobs struct {
					Content []json.RawMessage `json:"content"`
				} `json:"logprobs"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		err := json.NewDecoder(r.Body).Decode(&out)
		r.Body.Close()
		if err != nil || r.StatusCode != 200 || len(out.Choices) != 1 {
			t.Fatalf("%s %v: %d %v", c.model, c.extra, r.StatusCode, err)
		}
		if n := len(out.Choices[0].Logprobs.Content); n != out.Usage.CompletionTokens || n == 0 {
			t.Errorf("%s %v: %d logprob entries for %d completion tokens", c.model, c.extra, n, out.Usage.CompletionTokens)
		}

		body["stream"], body["stream_options"] = true, map[string]any{"include_usage": true}
		r = c.e.post(t.Context(), "/v1/chat/completions", body)
		chunks, done := sseEvents(t, r.Body)
		r.Body.Close()
		entries, usage := 0, -1
		for _, ch := range chunks {
			if u, ok := ch["usage"].(map[string]any); ok {
				usage = int(u["completion_tokens"].(float64))
			}
			for _, x := range ch["choices"].([]any) {
				if lp, ok := x.(map[string]any)["logprobs"].(map[string]any); ok {
					list, _ := lp["content"].([]any)
					entries += len(list)
				}
			}
		}
		if !done || entries != usage {
			t.Errorf("%s %v, streamed: %d logprob entries for %d completion tokens", c.model, c.extra, entries, usage)
		}
	}
}
