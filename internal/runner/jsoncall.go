package runner

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/inference"
)

// Small instruction-tuned models often answer tool_choice "auto" with the
// call they mean written as plain JSON rather than in their family's
// format: Qwen2.5-Coder-0.5B-Instruct, asked "Weather in Paris?" with a
// get_weather tool, writes ```json\n{"name": "get_weather", "arguments":
// {"city": "Paris"}}\n``` instead of <tool_call>…</tool_call> (and so
// does llama-server --jinja with the same file), even when a system
// message asks for the tags. An answer that is nothing but such an object
// — bare or in one fenced block, naming a tool that was offered, with
// arguments its schema accepts — is read as that call (docs/engine.md,
// "Tool calls"). Anything else stays text: an undeclared name, arguments
// the schema refuses, text around the object.

// jsonCallState says what the answer so far can still be.
type jsonCallState int

const (
	jsonCallText     jsonCallState = iota // not a call: send it as text
	jsonCallMaybe                         // could still become a call: hold it back
	jsonCallComplete                      // a whole call; more text may still spoil it
)

// fenceBody strips an opening code fence (```json or ```) from s (with
// leading white space); ok is false when s cannot be one, more when the
// fence's first line is not whole yet.
func fenceBody(s string) (body string, fenced, more, ok bool) {
	s = skipSpace(s)
	if !strings.HasPrefix(s, "```") {
		if strings.HasPrefix("```", s) {
			return "", false, true, true
		}
		return s, false, false, true
	}
	rest := s[3:]
	nl := strings.IndexByte(rest, '\n')
	if nl < 0 {
		lang := strings.TrimSpace(rest)
		return "", true, true, strings.HasPrefix("json", lang)
	}
	if lang := strings.TrimSpace(rest[:nl]); lang != "" && lang != "json" {
		return "", true, false, false
	}
	return rest[nl+1:], true, false, true
}

// jsonCallProgress classifies the answer so far (content) for tools.
func jsonCallProgress(content string, tools []inference.Tool) jsonCallState {
	body, fenced, more, ok := fenceBody(content)
	if !ok {
		return jsonCallText
	}
	if more {
		return jsonCallMaybe
	}
	body = skipSpace(body)
	if body == "" {
		return jsonCallMaybe
	}
	if body[0] != '{' {
		return jsonCallText
	}
	dec := json.NewDecoder(strings.NewReader(body))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		// Not whole yet: only an object that starts with "name" (of a
		// tool offered) and then "arguments" or "parameters" may go on.
		c, viable := cutCallKeys(body, []string{"arguments", "parameters"})
		if c == nil || !viable || c.arguments != "" && c.arguments[0] != '{' {
			return jsonCallText
		}
		for _, t := range tools {
			if c.nameWhole && t.Name == c.name || !c.nameWhole && strings.HasPrefix(t.Name, c.name) {
				return jsonCallMaybe
			}
		}
		return jsonCallText
	}
	if _, ok := jsonCall(body[:dec.InputOffset()], tools); !ok {
		return jsonCallText
	}
	tail := strings.TrimSpace(body[dec.InputOffset():])
	switch {
	case tail == "":
		return jsonCallComplete
	case fenced && tail == "```":
		return jsonCallComplete
	case fenced && strings.HasPrefix("```", tail):
		return jsonCallMaybe
	}
	return jsonCallText
}

// jsonAnswerCall reads an answer that is one call written as JSON (bare
// or fenced) naming one of tools with arguments its schema accepts.
func jsonAnswerCall(content string, tools []inference.Tool) (envelopeCall, bool) {
	if jsonCallProgress(content, tools) != jsonCallComplete {
		return envelopeCall{}, false
	}
	body, _, _, _ := fenceBody(content)
	body = skipSpace(body)
	dec := json.NewDecoder(strings.NewReader(body))
	var raw json.RawMessage
	if dec.Decode(&raw) != nil {
		return envelopeCall{}, false
	}
	return jsonCall(string(raw), tools)
}

// jsonCutCall reads an answer cut short (max_tokens) while it was writing
// a call as JSON: the call, with the arguments written so far, once its
// name is whole and names one of tools.
func jsonCutCall(content string, tools []inference.Tool) (envelopeCall, bool) {
	if jsonCallProgress(content, tools) != jsonCallMaybe {
		return envelopeCall{}, false
	}
	body, _, _, _ := fenceBody(content)
	c, _ := cutCallKeys(skipSpace(body), []string{"arguments", "parameters"})
	if c == nil || !c.nameWhole {
		return envelopeCall{}, false
	}
	for _, t := range tools {
		if t.Name == c.name {
			return envelopeCall{Name: c.name, partial: c.arguments}, true
		}
	}
	return envelopeCall{}, false
}

// jsonCall reads one JSON object {"name": …, "arguments": {…}} (or
// "parameters") naming one of tools with arguments its schema accepts.
func jsonCall(obj string, tools []inference.Tool) (envelopeCall, bool) {
	var call map[string]json.RawMessage
	if json.Unmarshal([]byte(obj), &call) != nil || len(call) != 2 {
		return envelopeCall{}, false
	}
	var name string
	if json.Unmarshal(call["name"], &name) != nil {
		return envelopeCall{}, false
	}
	args, ok := call["arguments"]
	if !ok {
		args, ok = call["parameters"]
	}
	if !ok {
		return envelopeCall{}, false
	}
	var v any
	if json.Unmarshal(args, &v) != nil {
		return envelopeCall{}, false
	}
	if _, isObject := v.(map[string]any); !isObject {
		return envelopeCall{}, false
	}
	for _, t := range tools {
		if t.Name != name {
			continue
		}
		var schema any
		if len(t.Parameters) > 0 && json.Unmarshal(t.Parameters, &schema) != nil {
			return envelopeCall{}, false
		}
		if !schemaAccepts(schema, schema, v, 0) {
			return envelopeCall{}, false
		}
		return envelopeCall{Name: name, Arguments: args}, true
	}
	return envelopeCall{}, false
}

// schemaAccepts checks v against a JSON Schema, for the keywords that
// decide whether arguments fit a tool: type, enum, const, properties,
// required, additionalProperties, items, anyOf, oneOf, allOf and local
// $refs, plus the bounds of numbers, strings and arrays. Other keywords
// (formats, patterns) are not checked. root resolves references.
func schemaAccepts(root, schema, v any, depth int) bool {
	if depth > 32 {
		return false // a reference cycle
	}
	s, ok := schema.(map[string]any)
	if !ok {
		// true, or no schema, accepts anything; false accepts nothing.
		b, isBool := schema.(bool)
		return !isBool || b
	}
	if ref, ok := s["$ref"].(string); ok {
		target, ok := resolveRef(root, ref)
		if !ok || !schemaAccepts(root, target, v, depth+1) {
			return false
		}
	}
	if t, ok := s["type"]; ok && !typeAccepts(t, v) {
		return false
	}
	if e, ok := s["enum"].([]any); ok && !containsJSON(e, v) {
		return false
	}
	if c, ok := s["const"]; ok && !containsJSON([]any{c}, v) {
		return false
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		subs, ok := s[k].([]any)
		if !ok {
			continue
		}
		n := 0
		for _, sub := range subs {
			if schemaAccepts(root, sub, v, depth+1) {
				n++
			}
		}
		if k == "allOf" && n != len(subs) || k == "anyOf" && n == 0 || k == "oneOf" && n != 1 {
			return false
		}
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asStrings(s["required"]) {
			if _, ok := x[r]; !ok {
				return false
			}
		}
		for k, e := range x {
			if p, ok := props[k]; ok {
				if !schemaAccepts(root, p, e, depth+1) {
					return false
				}
			} else if ap, ok := s["additionalProperties"]; ok && !schemaAccepts(root, ap, e, depth+1) {
				return false
			}
		}
	case []any:
		if items, ok := s["items"]; ok {
			for _, e := range x {
				if !schemaAccepts(root, items, e, depth+1) {
					return false
				}
			}
		}
		if !within(float64(len(x)), s["minItems"], s["maxItems"]) {
			return false
		}
	case string:
		if !within(float64(len([]rune(x))), s["minLength"], s["maxLength"]) {
			return false
		}
	case float64:
		if !within(x, s["minimum"], s["maximum"]) {
			return false
		}
		if m, ok := s["exclusiveMinimum"].(float64); ok && x <= m {
			return false
		}
		if m, ok := s["exclusiveMaximum"].(float64); ok && x >= m {
			return false
		}
	}
	return true
}

// within reports whether x lies between the bounds lo and hi (either may
// be absent).
func within(x float64, lo, hi any) bool {
	if l, ok := lo.(float64); ok && x < l {
		return false
	}
	if h, ok := hi.(float64); ok && x > h {
		return false
	}
	return true
}

func asStrings(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// typeAccepts checks a schema's type (a name or a list of names).
func typeAccepts(t, v any) bool {
	names := asStrings(t)
	if s, ok := t.(string); ok {
		names = []string{s}
	}
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		switch x := v.(type) {
		case nil:
			if n == "null" {
				return true
			}
		case bool:
			if n == "boolean" {
				return true
			}
		case float64:
			if n == "number" || n == "integer" && x == math.Trunc(x) {
				return true
			}
		case string:
			if n == "string" {
				return true
			}
		case []any:
			if n == "array" {
				return true
			}
		case map[string]any:
			if n == "object" {
				return true
			}
		}
	}
	return false
}

func containsJSON(list []any, v any) bool {
	want, _ := json.Marshal(v)
	for _, e := range list {
		if b, _ := json.Marshal(e); bytes.Equal(b, want) {
			return true
		}
	}
	return false
}

// resolveRef follows a local reference ("#/$defs/point") within root.
func resolveRef(root any, ref string) (any, bool) {
	path, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	cur := root
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if part == "" {
			continue
		}
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}
