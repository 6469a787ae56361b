package openai

import (
	"bytes"
	"testing"
)

// FuzzResponsesInput decodes arbitrary Responses request bodies: nothing
// panics, accepted input items are of the three served types with ids, and
// a request that converts yields a conversation whose tool messages answer
// a call id.
func FuzzResponsesInput(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:,"}]}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"1"}]}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}],"tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"}}`,
		`{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"s","schema":{"type":"object"}}}}`,
		`{"model":"m","input":[{"role":"assistant","content":"done"},{"role":"developer","content":"be brief"}],"instructions":"i"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req ResponsesRequest
		if DecodeRequest(bytes.NewReader(body), &req) != nil {
			return
		}
		items, err := req.Items()
		if err != nil {
			return
		}
		for _, it := range items {
			switch it.Type {
			case "message", "function_call", "function_call_output":
			default:
				t.Fatalf("item type %q accepted", it.Type)
			}
			if it.ID == "" {
				t.Fatalf("item without an id: %+v", it)
			}
		}
		native, err := req.Native(nil, items)
		if err != nil {
			return
		}
		for _, m := range native.Messages {
			if m.Role == "tool" && m.ToolCallID == "" {
				t.Fatalf("a tool message without a call id: %+v", m)
			}
		}
	})
}
