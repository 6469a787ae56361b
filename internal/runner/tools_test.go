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
	return readAllNamed(pieces, finish, []string{"f", "g", "get_weather", "get_time"})
}

// readAllNamed is readAll for a request offering the tools names.
func readAllNamed(pieces []string, finish string, names []string) (content string, calls []inference.ToolCall, reason string) {
	return readWith(&toolReader{}, pieces, finish, names)
}

// readWith is readAll with reader r.
func readWith(r *toolReader, pieces []string, finish string, names []string) (content string, calls []inference.ToolCall, reason string) {
	for _, n := range names {
		r.tools = append(r.tools, inference.Tool{Name: n})
	}
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
		// Cut short by max_tokens: the call with the arguments written so
		// far, never the envelope's text, still "length".
		{[]string{`{"tool_calls": [{"name": "f", "argu`}, "length", "", `f()`, "length"},
		{[]string{`{"tool_calls": [{"name": "get_weather", `, `"arguments": {"city": "Pa`}, "length", "", `get_weather({"city": "Pa)`, "length"},
		{[]string{`{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"} `}, "length", "", `get_weather({"city":"Paris"})`, "length"},
		{[]string{`{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}`}, "length", "", `get_weather({"city":"Paris"})`, "length"},
		// A name cut short names the one tool it can be.
		{[]string{`{"tool_calls": [{"name": "get_w`}, "length", "", `get_weather()`, "length"},
		{[]string{`{"tool_calls": [{"name": "get_`}, "length", "", "", "length"},
		{[]string{`{"tool_calls": [{"na`}, "length", "", "", "length"},
		{[]string{`{"tool_calls"`}, "length", "", "", "length"},
		// Cut short after whole calls: those calls, then the one cut.
		{[]string{`{"tool_calls": [{"name": "f", "arguments": {"a": 1}}, {"name": "f", "arguments": {"a": 1}}, {"name": "get_t`}, "length", "", `f({"a":1});f({"a":1});get_time()`, "length"},
		// An envelope cut before it could be recognised is still not text.
		{[]string{`{"tool_c`}, "length", "", "", "length"},
		{[]string{`{`}, "length", "{", "", "length"},
		{[]string{`{"tool_calls": [{"name": "f", "arguments": {"a": 1}}, {"name": "f", "arguments": {"a": [1, 2`}, "length", "", `f({"a":1});f({"a": [1, 2)`, "length"},
		{[]string{`{"tool_calls": [{"name": "f", "arguments": {"a": 1}}, `}, "length", "", `f({"a":1})`, "length"},
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
	f.Add(`{"tool_calls": [{"name": "f", "arguments": {"a": 1}}]}`, 7, false)
	f.Add("plain text", 3, false)
	f.Add(`{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Pa`, 20, true)
	f.Add(`{"tool_calls": [{"name": "f", "arguments": {}}, {"name": "get_t`, 9, true)
	f.Fuzz(func(t *testing.T, s string, cut int, short bool) {
		if cut < 0 || cut > len(s) {
			cut = len(s) / 2
		}
		finish := "stop"
		if short {
			finish = "length"
		}
		content, calls, reason := readAll([]string{s[:cut], s[cut:]}, finish)
		lead := strings.TrimLeft(s, " \t\r\n")
		if strings.HasPrefix(lead, "{") {
			lead = "{" + strings.TrimLeft(lead[1:], " \t\r\n")
		}
		// The envelope, or (cut short) as much of its start as says a
		// call was coming.
		envelope := strings.HasPrefix(lead, `{"tool_calls"`) || short && len(lead) >= 3 && strings.HasPrefix(`{"tool_calls"`, lead)
		switch {
		case short && envelope && content != "":
			t.Fatalf("%q cut short: the envelope's text %q sent as content", s, content)
		case len(calls) == 0 && content != s && !(short && envelope):
			t.Fatalf("%q: neither calls nor the whole text (%q)", s, content)
		case len(calls) > 0 && content != "":
			t.Fatalf("%q: calls and content %q", s, content)
		case reason != finish && !(reason == "tool_calls" && finish == "stop" && len(calls) > 0):
			t.Fatalf("%q: finish reason %q for %q", s, reason, finish)
		}
		for i, c := range calls {
			// Only the last call of an answer cut short may have
			// arguments that are not whole JSON, and they are text the
			// model wrote.
			last := short && i == len(calls)-1
			if !json.Valid([]byte(c.Arguments)) && !(last && strings.Contains(s, c.Arguments)) {
				t.Fatalf("%q: arguments %q", s, c.Arguments)
			}
			if c.Name == "" {
				t.Fatalf("%q: a call without a name", s)
			}
		}
	})
}

// FuzzCutEnvelope cuts a whole envelope at every byte, as max_tokens
// would: the answer is never the envelope's text, the calls finished
// before the cut come back whole, and the call being written comes back
// with a prefix of its arguments once its name is known.
func FuzzCutEnvelope(f *testing.F) {
	f.Add("Paris", int64(2), uint8(3))
	f.Add(`a "quoted" \\ value`, int64(-7), uint8(0))
	f.Fuzz(func(t *testing.T, city string, n int64, calls uint8) {
		type call struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		var env struct {
			ToolCalls []call `json:"tool_calls"`
		}
		for i := 0; i <= int(calls%4); i++ {
			name := []string{"get_weather", "get_time"}[i%2]
			env.ToolCalls = append(env.ToolCalls, call{name, map[string]any{"city": city, "n": n}})
		}
		whole, _ := json.MarshalIndent(env, "", " ")
		for cut := 0; cut < len(whole); cut++ {
			s := string(whole[:cut])
			content, got, reason := readWith(&toolReader{forced: true}, []string{s}, "length", []string{"get_weather", "get_time"})
			if content != "" || reason != "length" {
				t.Fatalf("%q: content %q, finish %q", s, content, reason)
			}
			for i, c := range got {
				want := env.ToolCalls[i]
				if c.Name != want.Name {
					t.Fatalf("%q: call %d is %s, want %s", s, i, c.Name, want.Name)
				}
				if i < len(got)-1 {
					var args map[string]any
					if json.Unmarshal([]byte(c.Arguments), &args) != nil || args["city"] != jsonRoundTrip(city) {
						t.Fatalf("%q: call %d has arguments %q", s, i, c.Arguments)
					}
				} else if !json.Valid([]byte(c.Arguments)) && !strings.Contains(s, c.Arguments) {
					t.Fatalf("%q: the last call's arguments %q are not what was written", s, c.Arguments)
				}
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

// jsonRoundTrip is s as JSON gives it back (invalid UTF-8 replaced).
func jsonRoundTrip(s string) string {
	b, _ := json.Marshal(s)
	var out string
	json.Unmarshal(b, &out)
	return out
}
