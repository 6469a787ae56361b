package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/rawjson"
)

// benchBody is a streamed chat request with 8 tools and an image part, as
// bench/gateway's stream-tools mode sends it.
func benchBody() []byte {
	var tools []map[string]any
	for _, name := range []string{"get_weather", "search_docs", "create_ticket", "send_email", "lookup_user", "list_orders", "refund_order", "schedule_call"} {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
			"name": name, "description": "The " + strings.ReplaceAll(name, "_", " ") + " tool.",
			"parameters": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"id", "query"},
				"properties": map[string]any{
					"id":    map[string]any{"type": "string", "description": "An identifier."},
					"query": map[string]any{"type": "string", "description": "What to look for."},
					"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 100},
					"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				}},
		}})
	}
	t, _ := json.Marshal(tools)
	return []byte(`{"model":"mock","messages":[{"role":"user","content":[{"type":"text","text":"What is in this picture, and what should I do next?"},` +
		`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==","detail":"low"}}]}],"max_tokens":8,"tools":` + string(t) + `,"stream":true}`)
}

func BenchmarkPeekRequest(b *testing.B) {
	body := benchBody()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := PeekRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSetModel(b *testing.B) {
	body := benchBody()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := rawjson.SetValid(body, "model", []byte(`"upstream-name"`)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValid(b *testing.B) {
	body := benchBody()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		json.Valid(body)
	}
}

// TestPeekRequestReadsWhatTheGatewayActsOn checks the scanner-based peek
// on the bench body and on bad bodies.
func TestPeekRequestReadsWhatTheGatewayActsOn(t *testing.T) {
	p, err := PeekRequest(benchBody())
	if err != nil {
		t.Fatal(err)
	}
	if n, f := p.MaxOutput(); p.Model != "mock" || !p.Stream || n != 8 || f != "max_tokens" || len(p.Tools) != 8 ||
		len(p.PartKinds) != 1 || p.PartKinds[0] != "image_url" || p.PartParams[0] != "messages[0].content" ||
		!strings.Contains(p.Prompt, "What is in this picture") {
		t.Fatalf("peek: %+v", p)
	}
	p, err = PeekRequest([]byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_audio","input_audio":{}}]},{"type":"function_call_output","call_id":"c","output":"42"}],"instructions":"be brief"}`))
	if err != nil || !strings.Contains(p.Prompt, "be brief\n") || !strings.Contains(p.Prompt, "hi\n42\n") || len(p.PartKinds) != 1 || p.PartParams[0] != "input[0].content" {
		t.Fatalf("responses peek: %+v %v", p, err)
	}
	for body, param := range map[string]string{
		`{"model":1}`:                    "model",
		`{"model":"m","stream":"y"}`:     "stream",
		`{"model":"m","tools":{}}`:       "tools",
		`{"model":"m","messages":3}`:     "messages",
		`{"model":"m","max_tokens":"8"}`: "max_tokens",
	} {
		_, err := PeekRequest([]byte(body))
		if e := apierr.From(err); err == nil || e.Param != param {
			t.Errorf("%s: %v, want an error naming %s", body, err, param)
		}
	}
	for _, body := range []string{`{"model":`, `[]`, `"x"`, ``} {
		if _, err := PeekRequest([]byte(body)); err == nil {
			t.Errorf("%q accepted", body)
		}
	}
}
