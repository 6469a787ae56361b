package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// TestJSONAnswersEndWithTheValue asks the default model for JSON with
// json_schema and json_object response formats, plain and streamed: the
// answer is the JSON value alone (no whitespace padding after it, which
// the grammar allows and the model writes), generation stops there with
// finish_reason "stop" well before max_tokens, and a json_schema answer has
// the schema's required keys — what the SDKs' parse() needs.
func TestJSONAnswersEndWithTheValue(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 1024})
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"name": map[string]any{"type": "string"}, "age": map[string]any{"type": "integer"}}, "required": []string{"name", "age"}}
	for _, c := range []struct {
		name     string
		format   map[string]any
		required []string
	}{
		{"json_schema", map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "person", "schema": schema}}, []string{"name", "age"}},
		{"json_object", map[string]any{"type": "json_object"}, nil},
	} {
		check := func(how, content, finish string) {
			var v map[string]any
			if err := json.Unmarshal([]byte(content), &v); err != nil || content != strings.TrimSpace(content) || finish != "stop" {
				t.Fatalf("%s, %s: %q finish %q (%v)", c.name, how, content, finish, err)
			}
			for _, k := range c.required {
				if _, ok := v[k]; !ok {
					t.Fatalf("%s, %s: %q lacks %q", c.name, how, content, k)
				}
			}
		}
		extra := map[string]any{"max_tokens": 200, "response_format": c.format}
		out, resp := e.chat("gemma3-270m", "Give a person with a name and an age as JSON.", extra)
		if resp.StatusCode != 200 || len(out.Choices) != 1 {
			t.Fatalf("%s: %d %+v", c.name, resp.StatusCode, out)
		}
		check("plain", out.Choices[0].Message.Content, out.Choices[0].FinishReason)
		if out.Usage.CompletionTokens >= 200 {
			t.Fatalf("%s: %d tokens", c.name, out.Usage.CompletionTokens)
		}
		extra["stream"] = true
		sresp := e.chatRaw("gemma3-270m", "Give a person with a name and an age as JSON.", extra)
		chunks, done := sseEvents(t, sresp.Body)
		sresp.Body.Close()
		text, _ := streamText(chunks)
		finish := ""
		for _, ch := range chunks {
			if cs, ok := ch["choices"].([]any); ok && len(cs) > 0 {
				if f, ok := cs[0].(map[string]any)["finish_reason"].(string); ok {
					finish = f
				}
			}
		}
		if !done {
			t.Fatalf("%s: stream without [DONE]", c.name)
		}
		check("streamed", text, finish)
	}
}
