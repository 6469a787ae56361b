package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/inference"
)

var jsonCallTools = []inference.Tool{
	{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}`)},
	{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{"zone":{"type":"string"}},"required":["zone"],"additionalProperties":false}`)},
	{Name: "plot", Parameters: json.RawMessage(`{"type":"object","properties":{"p":{"$ref":"#/$defs/point"}},"required":["p"],"$defs":{"point":{"type":"object","properties":{"x":{"type":"integer","minimum":0}},"required":["x"]}}}`)},
}

// TestJSONAnswerCall: answers Qwen2.5-Coder-0.5B-Instruct wrote for
// tool_choice auto (measured) read as the calls they mean, and what must
// stay text.
func TestJSONAnswerCall(t *testing.T) {
	for _, c := range []struct {
		answer string
		call   string // name(args), "" for text
	}{
		{"```json\n{\n  \"name\": \"get_weather\",\n  \"arguments\": {\n    \"city\": \"Paris\",\n    \"unit\": \"c\"\n  }\n}\n```", `get_weather({"city":"Paris","unit":"c"})`},
		{`{"name": "get_weather", "arguments": {"city": "Tokyo", "unit": "c"}}`, `get_weather({"city":"Tokyo","unit":"c"})`},
		{"```json\n{\n  \"name\": \"get_time\",\n  \"arguments\": {\n    \"zone\": \"Europe/Berlin\"\n  }\n}\n```\n", `get_time({"zone":"Europe/Berlin"})`},
		{"```\n{\"name\": \"get_time\", \"parameters\": {\"zone\": \"UTC\"}}\n```", `get_time({"zone":"UTC"})`},
		{`{"name": "plot", "arguments": {"p": {"x": 3}}}`, `plot({"p":{"x":3}})`},
		// An undeclared function, arguments the schema refuses, text
		// around the object, another language's fence: text.
		{"```json\n{\n  \"name\": \"reverse_string\",\n  \"arguments\": {\n    \"string\": \"Hello\"\n  }\n}\n```", ""},
		{`{"name": "get_weather", "arguments": {"unit": "c"}}`, ""},
		{`{"name": "get_weather", "arguments": {"city": "Rome", "unit": "kelvin"}}`, ""},
		{`{"name": "get_time", "arguments": {"zone": "UTC", "dst": true}}`, ""},
		{`{"name": "plot", "arguments": {"p": {"x": -1}}}`, ""},
		{`{"name": "plot", "arguments": {"p": {"x": 1.5}}}`, ""},
		{`{"name": "get_weather", "arguments": "Paris"}`, ""},
		{`{"name": "get_weather", "arguments": {"city": "Paris"}, "id": 1}`, ""},
		{`Sure: {"name": "get_weather", "arguments": {"city": "Paris"}}`, ""},
		{`{"name": "get_weather", "arguments": {"city": "Paris"}} and more`, ""},
		{"```python\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n```", ""},
		{"The weather is fine.", ""},
		{`{"answer": 4}`, ""},
	} {
		got := ""
		if call, ok := jsonAnswerCall(c.answer, jsonCallTools); ok {
			got = call.Name + "(" + compactJSON(call.Arguments) + ")"
		}
		if got != c.call {
			t.Errorf("%q: %q, want %q", c.answer, got, c.call)
		}
	}
}

// TestJSONCallHoldsBack: a stream holds the answer back while it can
// still be such a call, and lets it go as soon as it cannot.
func TestJSONCallHoldsBack(t *testing.T) {
	for _, c := range []struct {
		prefix string
		want   jsonCallState
	}{
		{"", jsonCallMaybe},
		{"  ``", jsonCallMaybe},
		{"```js", jsonCallMaybe},
		{"```json ", jsonCallMaybe}, // the fence's line is not whole yet
		{"```jsonx", jsonCallText},
		{"```py", jsonCallText},
		{"```python\n", jsonCallText},
		{"```json\n{\n  \"na", jsonCallMaybe},
		{`{"name": "get_`, jsonCallMaybe},
		{`{"name": "rev`, jsonCallText},
		{`{"name": "get_weather", "arg`, jsonCallMaybe},
		{`{"name": "get_weather", "id"`, jsonCallText},
		{`{"name": "get_weather", "arguments": "x`, jsonCallText},
		{`{"name": "get_weather", "arguments": {"city": "Pa`, jsonCallMaybe},
		{`{"name": "get_weather", "arguments": {"city": "Paris"}}`, jsonCallComplete},
		{"```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n`", jsonCallMaybe},
		{`{"name": "get_weather", "arguments": {"city": "Paris"}} x`, jsonCallText},
		{`{"title"`, jsonCallText},
		{"Hello", jsonCallText},
		{"[1, 2]", jsonCallText},
	} {
		if got := jsonCallProgress(c.prefix, jsonCallTools); got != c.want {
			t.Errorf("%q: %d, want %d", c.prefix, got, c.want)
		}
	}
	call, ok := jsonCutCall(`{"name": "get_weather", "arguments": {"city": "Pa`, jsonCallTools)
	if !ok || call.Name != "get_weather" || call.partial != `{"city": "Pa` {
		t.Fatalf("cut call: %v %+v", ok, call)
	}
	if _, ok := jsonCutCall(`{"name": "get_`, jsonCallTools); ok {
		t.Fatal("a cut call with its name not whole")
	}
}

// FuzzJSONCall: a call written as JSON is never let go as text before it
// is whole (each prefix is held back or whole), whatever its arguments;
// and no input makes the reader fail.
func FuzzJSONCall(f *testing.F) {
	f.Add("Paris", true, uint8(2))
	f.Add("a \"b\" \\ c\n", false, uint8(0))
	f.Add("", true, uint8(5))
	f.Fuzz(func(t *testing.T, city string, fenced bool, indent uint8) {
		args, _ := json.Marshal(map[string]string{"city": city})
		nl, ind := "", ""
		if indent%5 > 0 {
			nl, ind = "\n", strings.Repeat(" ", int(indent%5))
		}
		s := "{" + nl + ind + `"name": "get_weather",` + nl + ind + `"arguments": ` + string(args) + nl + "}"
		if fenced {
			s = "```json\n" + s + "\n```"
		}
		call, ok := jsonAnswerCall(s, jsonCallTools)
		if !ok || call.Name != "get_weather" {
			t.Fatalf("%q: not read as a call", s)
		}
		var got map[string]string
		if json.Unmarshal(call.Arguments, &got) != nil || got["city"] != jsonRoundTrip(city) {
			t.Fatalf("%q: arguments %s", s, call.Arguments)
		}
		for i := 0; i < len(s); i++ {
			if st := jsonCallProgress(s[:i], jsonCallTools); st == jsonCallText {
				t.Fatalf("%q: let go as text at %d (%q)", s, i, s[:i])
			}
			jsonCutCall(s[:i], jsonCallTools)
		}
	})
}
