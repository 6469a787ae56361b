package rawjson

import (
	"bytes"
	"encoding/json"
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
		got, err := Set([]byte(c.in), c.key, []byte(c.val))
		if err != nil {
			t.Fatalf("Set(%s): %v", c.in, err)
		}
		if string(got) != c.want {
			t.Errorf("Set(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestNotAnObject(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `{"a":1`, `{"a":1}{}`, `{"a":}`, `{"a":1} x`} {
		if _, err := Set([]byte(in), "model", []byte(`1`)); err == nil {
			t.Errorf("Set(%q) accepted", in)
		}
	}
}

// FuzzSet checks that Set changes exactly the member it names: the result
// decodes to the input with that member set.
func FuzzSet(f *testing.F) {
	for _, s := range []string{`{"model":"a","messages":[{"role":"user","content":"hi"}]}`, `{}`, `{"a":{"model":1}}`, ` { "model" : null } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var before map[string]any
		dec := json.NewDecoder(bytes.NewReader(doc))
		if dec.Decode(&before) != nil || dec.More() || before == nil {
			if _, err := Set(doc, "model", []byte(`"m"`)); err == nil && !json.Valid(doc) {
				t.Fatalf("Set accepted invalid %q", doc)
			}
			return
		}
		out, err := Set(doc, "model", []byte(`"m"`))
		if err != nil {
			if json.Valid(doc) {
				t.Fatalf("Set(%q): %v", doc, err)
			}
			return
		}
		var after map[string]any
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("Set(%q) = %q: %v", doc, out, err)
		}
		before["model"] = "m"
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("Set(%q) = %q", doc, out)
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
		want, werr := Find(doc, "model")
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
