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
