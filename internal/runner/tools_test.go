package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/inference"
)

// readAll feeds pieces to a generic tool reader and returns the content
// sent, the calls assembled and the finish reason.
func readAll(pieces []string, finish string) (content string, calls []inference.ToolCall, reason string) {
	r := &toolReader{}
	for i, p := range pieces {
		ev := inference.Event{Text: p}
		if i == len(pieces)-1 {
			ev.Done, ev.FinishReason = true, finish
		}
		for _, out := range r.read(ev) {
			content += out.Text
			for _, d := range out.ToolCalls {
				for len(calls) <= d.Index {
					calls = append(calls, inference.ToolCall{})
				}
				if d.ID != "" {
					calls[d.Index].ID, calls[d.Index].Name = d.ID, d.Name
				}
				calls[d.Index].Arguments += d.Arguments
			}
			if out.Done {
				reason = out.FinishReason
			}
		}
	}
	return content, calls, reason
}

func TestGenericToolReader(t *testing.T) {
	for _, c := range []struct {
		pieces  []string
		finish  string
		content string
		calls   string // name(args);…
		reason  string
	}{
		{[]string{" {", `"tool_calls": [{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}}]}`}, "stop", "", `f({"a":1});g({})`, "tool_calls"},
		{[]string{"{ ", `"tool_calls":[{"name":"f","arguments":{"x":[1, 2]}}]}`}, "stop", "", `f({"x":[1,2]})`, "tool_calls"},
		{[]string{"It is", " sunny."}, "stop", "It is sunny.", "", "stop"},
		{[]string{"{", `"answer": 1}`}, "stop", `{"answer": 1}`, "", "stop"},
		{[]string{`{"tool_calls": [{"name": "f", "argu`}, "length", `{"tool_calls": [{"name": "f", "argu`, "", "length"},
		// Cut short after whole calls: those calls, still "length".
		{[]string{`{"tool_calls": [{"name": "f", "arguments": {"a": 1}}, {"name": "f", "arguments": {"a": 1}}, {"name": "g`}, "length", "", `f({"a":1});f({"a":1})`, "length"},
		{[]string{`{"tool_calls": [{"name": "f", "arguments": {}}, {"arguments": {}}]}`}, "stop", "", `f({})`, "tool_calls"},
		{[]string{" ", "{"}, "stop", " {", "", "stop"},
	} {
		content, calls, reason := readAll(c.pieces, c.finish)
		var got []string
		for _, k := range calls {
			if !strings.HasPrefix(k.ID, "call_") {
				t.Errorf("%q: call id %q", c.pieces, k.ID)
			}
			got = append(got, k.Name+"("+k.Arguments+")")
		}
		if content != c.content || strings.Join(got, ";") != c.calls || reason != c.reason {
			t.Errorf("%q: content %q calls %q reason %q, want %q %q %q", c.pieces, content, got, reason, c.content, c.calls, c.reason)
		}
	}
}

func FuzzGenericToolReader(f *testing.F) {
	f.Add(`{"tool_calls": [{"name": "f", "arguments": {"a": 1}}]}`, 7)
	f.Add("plain text", 3)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		if cut < 0 || cut > len(s) {
			cut = len(s) / 2
		}
		content, calls, _ := readAll([]string{s[:cut], s[cut:]}, "stop")
		if len(calls) == 0 && content != s {
			t.Fatalf("%q: neither calls nor the whole text (%q)", s, content)
		}
		for _, c := range calls {
			if !json.Valid([]byte(c.Arguments)) {
				t.Fatalf("%q: arguments %q", s, c.Arguments)
			}
		}
	})
}

func TestEnvelopeGrammarRebasesReferences(t *testing.T) {
	params := json.RawMessage(`{"type":"object","properties":{"p":{"$ref":"#/$defs/point"}},"required":["p"],"$defs":{"point":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}}`)
	g, err := envelopeGrammar([]inference.Tool{{Name: "plot", Parameters: params}, {Name: "noop", Parameters: json.RawMessage(`{"type":"object"}`)}}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"\"tool_calls\""`, `"\"plot\""`, `"\"noop\""`, `"\"x\""`} {
		if !strings.Contains(g, want) {
			t.Errorf("grammar lacks %s:\n%s", want, g)
		}
	}
}

func TestGrammarRewrites(t *testing.T) {
	g := "a ::= \"x\"\nroot ::= \"<|im_start|>assistant\\n\" space until-161? tool-calls\nspace ::= \" \"?"
	got, ok := dropLeadingLiteral(g, "<|im_start|>assistant\n")
	if !ok || !strings.Contains(got, "\nroot ::= space until-161? tool-calls\n") {
		t.Fatalf("dropLeadingLiteral: %v\n%s", ok, got)
	}
	if _, ok := dropLeadingLiteral(g, "<start_of_turn>model\n"); ok {
		t.Fatal("dropLeadingLiteral removed a literal the root does not start with")
	}
	if got = dropFreeText(got); !strings.Contains(got, "\nroot ::= space tool-calls\n") {
		t.Fatalf("dropFreeText:\n%s", got)
	}
}
