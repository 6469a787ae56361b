package grammar

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzFromJSONSchema checks that FromJSONSchema never panics and that every
// grammar it returns is accepted by the llama.cpp-compatible test parser
// (syntax, defined rules, "root" present, no left recursion).
func FuzzFromJSONSchema(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{}`, `true`, `false`, `null`, `[]`, `{"type":"object"}`,
		`{"type":["string","null"],"minLength":1}`,
		`{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"string"}]}},"$ref":"#/$defs/a"}`,
		`{"allOf":[{"$ref":"#"}]}`,
		`{"type":"string","pattern":"^(a|b\\d)+[^x-z]?.$"}`,
		`{"type":"object","properties":{"\"q\\":{"const":"\u0000"}},"additionalProperties":true}`,
		`{"type":"integer","exclusiveMinimum":-1e300}`,
		`{"type":"number","minimum":-3,"exclusiveMaximum":0}`,
		`{"items":[{"type":"string"}],"maxItems":0}`,
		`{"enum":[{"a":[1,{"b":null}]},"x",1.5e3]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		start := time.Now()
		defer func() {
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("slow: %v", d)
			}
		}()
		g, err := FromJSONSchema(schema)
		if err != nil {
			return
		}
		if len(g) > 1<<20 {
			t.Fatalf("grammar of %d bytes", len(g))
		}
		if _, err := parseGBNF(g); err != nil {
			t.Fatalf("schema %q gave a grammar that does not parse: %v\n%s", schema, err, g)
		}
	})
}
