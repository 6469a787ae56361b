package rawjson

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"
)

func TestSetReplacesOnlyTheValue(t *testing.T) {
	cases := []struct{ in, key, val, want string }{
		{`{"model": "a", "x" :1}`, "model", `"b"`, `{"model": "b", "x" :1}`},
		{"{\n  \"x\": {\"model\": \"inner\"},\n  \"model\"\t:\t\"a\"\n}", "model", `"b"`, "{\n  \"x\": {\"model\": \"inner\"},\n  \"model\"\t:\t\"b\"\n}"},
		{`{"x":[1,2.50,3e2]}`, "model", `"b"`, `{"x":[1,2.50,3e2],"model":"b"}`},
		{`{ }`, "model", `"b"`, `{ "model":"b"}`},
		{`{"model":"a","model":"c"}`, "model", `"b"`, `{"model":"a","model":"b"}`},
		{` {"m\u006fdel":"a"} `, "model", `"b"`, ` {"m\u006fdel":"b"} `},
	}
	for _, c := range cases {
		got, err := SetValid([]byte(c.in), c.key, []byte(c.val))
		if err != nil {
			t.Fatalf("SetValid(%s): %v", c.in, err)
		}
		if string(got) != c.want {
			t.Errorf("Set(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestNotAnObject(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `{"a":1`, `{"a":}`} {
		if _, err := SetValid([]byte(in), "model", []byte(`1`)); err == nil {
			t.Errorf("SetValid(%q) accepted", in)
		}
	}
}

// FuzzSet checks that SetValid changes exactly the member it names: on a
// valid object the result decodes to the input with that member set, and
// on anything else it does not panic.
func FuzzSet(f *testing.F) {
	for _, s := range []string{`{"model":"a","messages":[{"role":"user","content":"hi"}]}`, `{}`, `{"a":{"model":1}}`, ` { "model" : null } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var before map[string]any
		dec := json.NewDecoder(bytes.NewReader(doc))
		if !json.Valid(doc) || dec.Decode(&before) != nil || before == nil {
			SetValid(doc, "model", []byte(`"m"`)) // must not panic
			return
		}
		out, err := SetValid(doc, "model", []byte(`"m"`))
		if err != nil {
			t.Fatalf("SetValid(%q): %v", doc, err)
		}
		var after map[string]any
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("SetValid(%q) = %q: %v", doc, out, err)
		}
		before["model"] = "m"
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("SetValid(%q) = %q", doc, out)
		}
	})
}

// FuzzFindValid checks the scanner against the decoder: on every valid
// JSON object they find the same member at the same place.
func FuzzFindValid(f *testing.F) {
	for _, s := range []string{`{"model":"a","messages":[{"role":"user","content":"h\\"i]}"}]}`, `{}`, `{"a":{"model":1},"model":[1,{"x":"}"}]}`, ` { "m\u006fdel" : null } `, `{"model":1e5,"b":true}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		want, werr := decodeFind(doc, "model")
		if !json.Valid(doc) {
			FindValid(doc, "model") // must not panic
			return
		}
		got, gerr := FindValid(doc, "model")
		if (werr == nil) != (gerr == nil) || werr == nil && got != want {
			t.Fatalf("FindValid(%q) = %+v, %v; Find = %+v, %v", doc, got, gerr, want, werr)
		}
		var n []json.RawMessage
		if json.Unmarshal(doc, &n) == nil {
			count := 0
			if err := Elements(doc, func([]byte) bool { count++; return true }); err != nil || count != len(n) {
				t.Fatalf("Elements(%q): %d, %v; want %d", doc, count, err, len(n))
			}
		}
	})
}

// decodeFind is the reference the scanner is held to: it locates the
// member key with encoding/json's decoder (the last one, as it reads
// duplicates).
func decodeFind(doc []byte, key string) (Span, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return Span{}, ErrNotObject
	}
	var sp Span
	sp.Empty = true
	for dec.More() {
		sp.Empty = false
		k, err := dec.Token()
		if err != nil {
			return Span{}, ErrNotObject
		}
		name, _ := k.(string)
		afterKey := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Span{}, ErrNotObject
		}
		if name != key {
			continue
		}
		end := int(dec.InputOffset())
		// The value starts after the colon and any white space.
		start := afterKey
		for start < end && (isSpace(doc[start]) || doc[start] == ':') {
			start++
		}
		sp.Start, sp.End, sp.Found = start, end, true
	}
	closing := int(dec.InputOffset())
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return Span{}, ErrNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return Span{}, ErrNotObject
	}
	if !sp.Found {
		// InputOffset after More is at the closing brace, possibly
		// preceded by white space.
		for closing < len(doc) && doc[closing] != '}' {
			closing++
		}
		sp.Start, sp.End = closing, closing
	}
	return sp, nil
}
