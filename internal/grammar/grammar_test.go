package grammar

import (
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden .gbnf files under testdata")

// TestGolden converts every testdata/*.json schema and compares the grammar
// with testdata/*.gbnf. Run with -update to rewrite the golden files.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in testdata: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			schema, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := FromJSONSchema(schema)
			if err != nil {
				t.Fatalf("FromJSONSchema: %v", err)
			}
			if _, err := parseGBNF(got); err != nil {
				t.Fatalf("grammar does not parse: %v\n%s", err, got)
			}
			golden := strings.TrimSuffix(f, ".json") + ".gbnf"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("grammar differs from %s (run go test -update to accept):\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

// instanceCase lists documents a schema's grammar must accept or reject.
type instanceCase struct {
	schema  string // testdata file name without extension, or inline JSON
	valid   []string
	invalid []string
}

var instanceCases = []instanceCase{
	{
		schema: "person",
		valid: []string{
			`{"name":"Ann","age":31,"address":{"street":"Main 1","city":"Oslo"}}`,
			`{"name": "Ann", "age": 0, "email": "a@b.c", "role": "admin", "address": {"street": "x", "city": "y", "zip": null}}`,
			"{\n  \"name\": \"B\\\"ob\\u00e9\",\n  \"age\": 150,\n  \"role\": \"guest\",\n  \"address\": {\"street\": \"s\", \"city\": \"c\", \"zip\": \"0150\"}\n}",
			`{"name":"Ann","age":7,"address":{"street":"Main 1","city":"Oslo"}} `,
		},
		invalid: []string{
			`{"name":"Ann","address":{"street":"Main 1","city":"Oslo"}}`,                   // missing required age
			`{"name":"Ann","age":"31","address":{"street":"Main 1","city":"Oslo"}}`,        // wrong type
			`{"name":"Ann","age":151,"address":{"street":"Main 1","city":"Oslo"}}`,         // above maximum
			`{"name":"Ann","age":-1,"address":{"street":"Main 1","city":"Oslo"}}`,          // below minimum
			`{"name":"Ann","age":31,"address":{"street":"Main 1"}}`,                        // nested required missing
			`{"name":"Ann","age":31,"address":{"street":"Main 1","city":"Oslo","x":1}}`,    // nested extra key
			`{"name":"Ann","age":31,"address":{"street":"Main 1","city":"Oslo"},"x":true}`, // extra key
			`{"name":"Ann","age":31,"role":"root","address":{"street":"a","city":"b"}}`,    // enum mismatch
			`{"age":31,"name":"Ann","address":{"street":"Main 1","city":"Oslo"}}`,          // keys out of schema order
			`{"name":"Ann","age":31,"address":{"street":"Main 1","city":"Oslo"},}`,         // trailing comma
			`{"name":"Ann","age":31,"address":{"street":"Main 1","city":"Oslo"}}` + "\n\n", // two newlines of trailing space
			`{"name":"Ann","age":031,"address":{"street":"Main 1","city":"Oslo"}}`,         // leading zero
			`{"name":"Ann` + "\n" + `","age":31,"address":{"street":"a","city":"b"}}`,      // raw control char in string
			`{"name":"A","age":1,"address":{"street":"a","city":"b"}}` + strings.Repeat(" ", 2),
		},
	},
	{
		schema: "array_bounds",
		valid: []string{
			`{"tags":["a"],"scores":[]}`,
			`{"tags":["ab","cdefghij","x"],"scores":[1.5,-2e10],"empty":[]}`,
			`{"tags": [ "a" ,"b" ], "scores": [ 0 ]}`,
		},
		invalid: []string{
			`{"tags":[],"scores":[]}`,                // minItems
			`{"tags":["a","b","c","d"],"scores":[]}`, // too many items
			`{"tags":["a"],"scores":[1,2,3]}`,        // too many items
			`{"tags":[""],"scores":[]}`,              // minLength
			`{"tags":["abcdefghi"],"scores":[]}`,     // maxLength
			`{"tags":["a"],"scores":[],"empty":[1]}`, // maxItems 0
			`{"tags":["a"],"scores":["1"]}`,          // item type
			`{"tags":["a"]}`,                         // missing required
			`{"tags":["a"],"scores":[1,]}`,           // trailing comma
			`{"tags":"a","scores":[]}`,               // not an array
		},
	},
	{
		schema: "recursive_ref",
		valid: []string{
			`{"value":1,"children":[]}`,
			`{"value":1,"children":[{"value":2,"children":[{"value":3,"children":[]}]},{"value":4,"children":[]}]}`,
		},
		invalid: []string{
			`{"value":1}`,
			`{"value":1,"children":[{"value":2}]}`,
			`{"value":1,"children":[{"value":2,"children":[],"extra":1}]}`,
			`{"value":1,"children":[1]}`,
		},
	},
	{
		schema: "linked_list",
		valid: []string{
			`{"head":{"label":"a","next":null}}`,
			`{"head":{"label":"a","next":{"label":"b","next":{"label":"c","next":null}}}}`,
		},
		invalid: []string{
			`{"head":{"label":"a"}}`,
			`{"head":{"label":"a","next":{"label":"b"}}}`,
			`{"head":null}`,
			`{"head":{"label":"a","next":"b"}}`,
		},
	},
	{
		schema: "any_of",
		valid: []string{
			`{"shape":{"kind":"circle","radius":2.5},"id":7}`,
			`{"shape":{"kind":"rect","w":1,"h":2},"id":"123e4567-e89b-12d3-a456-426614174000"}`,
		},
		invalid: []string{
			`{"shape":{"kind":"circle","w":1,"h":2},"id":7}`,
			`{"shape":{"kind":"square","radius":1},"id":7}`,
			`{"shape":{"kind":"rect","w":1},"id":7}`,
			`{"shape":{"kind":"circle","radius":2.5},"id":"not-a-uuid"}`,
			`{"shape":{"kind":"circle","radius":2.5},"id":1.5}`,
		},
	},
	{
		schema: "nullable",
		valid: []string{
			`{"a":null,"b":null,"c":null,"d":null}`,
			`{"a":"x","b":5,"c":true,"d":[1,2]}`,
		},
		invalid: []string{
			`{"a":1,"b":null,"c":null,"d":null}`,
			`{"a":null,"b":0,"c":null,"d":null}`,
			`{"a":null,"b":null,"c":"true","d":null}`,
			`{"a":null,"b":null,"c":null,"d":["x"]}`,
			`{"a":null,"b":null,"c":null}`,
		},
	},
	{
		schema: "enum_const",
		valid: []string{
			`{"color":"red","version":2,"point":{"x":1,"y":[true,"a\"b"]},"level":"low"}`,
			`{"color":null,"version":2,"point":{ "x" : 1 , "y" : [ true , "a\"b" ] },"level":"high"}`,
			`{"color":42,"version":2,"point":{"x":1,"y":[true,"a\"b"]},"level":"high"}`,
			`{"color":true,"version":2,"point":{"x":1,"y":[true,"a\"b"]},"level":"high"}`,
		},
		invalid: []string{
			`{"color":"yellow","version":2,"point":{"x":1,"y":[true,"a\"b"]},"level":"low"}`,
			`{"color":"red","version":3,"point":{"x":1,"y":[true,"a\"b"]},"level":"low"}`,
			`{"color":"red","version":2,"point":{"x":2,"y":[true,"a\"b"]},"level":"low"}`,
			`{"color":"red","version":2,"point":{"y":[true,"a\"b"],"x":1},"level":"low"}`,
			`{"color":"red","version":2,"point":{"x":1,"y":[true,"a\"b"]},"level":3}`, // filtered by type
			`{"color":false,"version":2,"point":{"x":1,"y":[true,"a\"b"]},"level":"low"}`,
		},
	},
	{
		schema: "all_of",
		valid: []string{
			`{"name":"a","age":1}`,
			`{"name":"a","age":1,"nick":"b"}`,
		},
		invalid: []string{
			`{"name":"a"}`,
			`{"age":1}`,
			`{"name":"a","age":-1}`,
			`{"name":"a","age":1,"other":1}`,
		},
	},
	{
		schema: "additional_properties",
		valid: []string{
			`{"id":1}`,
			`{"id":1,"flag":true,"other":false}`,
			`{"id":1,"meta":{"k":"v","k2":"v2"},"free":{"any":[1,{"x":null}]},"ok":true}`,
			`{"id":1,"meta":{},"free":{}}`,
			`{"id":1,"idx":true,"i":false,"":true}`,
		},
		invalid: []string{
			`{"id":1,"flag":"yes"}`,       // additional value must be boolean
			`{"id":1,"meta":{"k":1}}`,     // meta values must be strings
			`{"id":1,"id":true}`,          // declared key repeated as additional
			`{"id":1,"meta":true}`,        // an additional key may not reuse a declared name
			`{"flag":true}`,               // missing required
			`{"id":1,"flag":true,"id":2}`, // duplicate declared key
		},
	},
	{
		schema: "strings",
		valid: []string{
			`{"code":"ab","day":"2024-02-29","at":"2024-02-29T13:45:00Z","clock":"23:59:59.123+02:00","id":"123e4567-e89b-12d3-a456-426614174000","sku":"ABC-1234","note":"it is ok now"}`,
			`{"code":"abcd","day":"1999-12-31","at":"1999-12-31T00:00:00.5-05:30","clock":"00:00:00Z","id":"00000000-0000-0000-0000-000000000000","sku":"XYZ-000","note":"ok"}`,
			`{"code":"\n\u00e9","day":"1999-12-31","at":"1999-12-31T00:00:00Z","clock":"00:00:00Z","id":"00000000-0000-0000-0000-000000000000","sku":"XYZ-000","note":"ok"}`,
		},
		invalid: []string{
			`{"code":"a","day":"2024-02-29","at":"2024-02-29T13:45:00Z","clock":"23:59:59Z","id":"123e4567-e89b-12d3-a456-426614174000","sku":"ABC-1234","note":"ok"}`,
			`{"code":"abcde","day":"2024-02-29","at":"2024-02-29T13:45:00Z","clock":"23:59:59Z","id":"123e4567-e89b-12d3-a456-426614174000","sku":"ABC-1234","note":"ok"}`,
			`{"code":"ab","day":"2024-13-01","at":"2024-02-29T13:45:00Z","clock":"23:59:59Z","id":"123e4567-e89b-12d3-a456-426614174000","sku":"ABC-1234","note":"ok"}`,
			`{"code":"ab","day":"2024-02-29","at":"2024-02-29 13:45:00","clock":"23:59:59Z","id":"123e4567-e89b-12d3-a456-426614174000","sku":"ABC-1234","note":"ok"}`,
			`{"code":"ab","day":"2024-02-29","at":"2024-02-29T13:45:00Z","clock":"24:00:00Z","id":"123e4567-e89b-12d3-a456-426614174000","sku":"ABC-1234","note":"ok"}`,
			`{"code":"ab","day":"2024-02-29","at":"2024-02-29T13:45:00Z","clock":"23:59:59Z","id":"123e4567e89b12d3a456426614174000","sku":"ABC-1234","note":"ok"}`,
			`{"code":"ab","day":"2024-02-29","at":"2024-02-29T13:45:00Z","clock":"23:59:59Z","id":"123e4567-e89b-12d3-a456-426614174000","sku":"AB-1234","note":"ok"}`,
			`{"code":"ab","day":"2024-02-29","at":"2024-02-29T13:45:00Z","clock":"23:59:59Z","id":"123e4567-e89b-12d3-a456-426614174000","sku":"ABC-12","note":"ok"}`,
			`{"code":"ab","day":"2024-02-29","at":"2024-02-29T13:45:00Z","clock":"23:59:59Z","id":"123e4567-e89b-12d3-a456-426614174000","sku":"ABC-1234","note":"o k"}`,
		},
	},
	{
		schema: "tuple",
		valid: []string{
			`{"pair":["a",1],"open":[true]}`,
			`{"pair":["a",1],"open":[false,null,null]}`,
		},
		invalid: []string{
			`{"pair":["a"],"open":[true]}`,
			`{"pair":["a",1,2],"open":[true]}`,
			`{"pair":[1,"a"],"open":[true]}`,
			`{"pair":["a",1],"open":[true,null,null,null]}`,
			`{"pair":["a",1],"open":[true,1]}`,
		},
	},
	{
		schema: "numbers",
		valid: []string{
			`{"ratio":0,"temp":-40,"positive":0.001,"big":1000}`,
			`{"ratio":1.000,"temp":124,"positive":3,"big":99999999}`,
			`{"ratio":0.5,"temp":0,"positive":1.5,"big":1001}`,
		},
		invalid: []string{
			`{"ratio":1.5,"temp":0,"positive":1,"big":1000}`,
			`{"ratio":1.01,"temp":0,"positive":1,"big":1000}`,
			`{"ratio":-0.5,"temp":0,"positive":1,"big":1000}`,
			`{"ratio":0.5,"temp":125,"positive":1,"big":1000}`,
			`{"ratio":0.5,"temp":-41,"positive":1,"big":1000}`,
			`{"ratio":0.5,"temp":0,"positive":0,"big":1000}`,
			`{"ratio":0.5,"temp":0,"positive":0.000,"big":1000}`,
			`{"ratio":0.5,"temp":0,"positive":-1,"big":1000}`,
			`{"ratio":0.5,"temp":0,"positive":1,"big":999}`,
			`{"ratio":0.5,"temp":0,"positive":1,"big":-1000}`,
		},
	},
	{
		schema: "key_order",
		valid: []string{
			`{"alpha":1,"beta":null}`,
			`{"zeta":"z","alpha":1,"mid":true,"beta":null}`,
			`{"alpha":1,"mid":false,"beta":null}`,
			`{"zeta":"z","alpha":1,"beta":null}`,
		},
		invalid: []string{
			`{"beta":null,"alpha":1}`,
			`{"alpha":1,"zeta":"z","beta":null}`,
			`{"alpha":1}`,
			`{"zeta":"z","beta":null}`,
			`{"alpha":1,"beta":null,"beta":null}`,
		},
	},
	{
		schema: "any_value",
		valid:  []string{`1`, `"x"`, `[1,{"a":[]}]`, `{"a":{"b":null}}`, `true`, `null`},
		invalid: []string{
			``, `{`, `[1,]`, `tru`, `01`,
		},
	},
	{
		// Left-recursion-free self reference through the root.
		schema: `{"type":"object","properties":{"sub":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"required":["sub"],"additionalProperties":false}`,
		valid:  []string{`{"sub":null}`, `{"sub":{"sub":{"sub":null}}}`},
		invalid: []string{
			`{"sub":{}}`, `{}`,
		},
	},
	{
		schema:  `{"type":"array","items":{"type":"integer","minimum":-5,"maximum":5},"minItems":2}`,
		valid:   []string{`[-5,5]`, `[0,0,1]`},
		invalid: []string{`[1]`, `[6,1]`, `[-6,1]`, `[1.0,1]`, `[-0,3]`},
	},
	{
		schema: `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"additionalProperties":true}`,
		valid:  []string{`{}`, `{"a":"x"}`, `{"b":"y","c":1}`, `{"a":"x","b":"y","ab":[],"c":{}}`, `{"zz":1}`},
		invalid: []string{
			`{"a":1}`, `{"a":"x","a":"y"}`, `{"c":1,"b":"y"}`,
		},
	},
}

func loadSchema(t *testing.T, s string) []byte {
	t.Helper()
	if strings.HasPrefix(s, "{") {
		return []byte(s)
	}
	b, err := os.ReadFile(filepath.Join("testdata", s+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInstances checks with the recogniser that grammars accept valid
// instances and reject invalid ones.
func TestInstances(t *testing.T) {
	for _, tc := range instanceCases {
		name := tc.schema
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			text, err := FromJSONSchema(loadSchema(t, tc.schema))
			if err != nil {
				t.Fatalf("FromJSONSchema: %v", err)
			}
			g, err := parseGBNF(text)
			if err != nil {
				t.Fatalf("grammar does not parse: %v\n%s", err, text)
			}
			for _, in := range tc.valid {
				if !json.Valid([]byte(in)) {
					t.Errorf("test bug: valid instance is not JSON: %s", in)
				}
				if !g.accepts(in) {
					t.Errorf("rejected valid instance %s\ngrammar:\n%s", in, text)
				}
			}
			for _, in := range tc.invalid {
				if g.accepts(in) {
					t.Errorf("accepted invalid instance %q\ngrammar:\n%s", in, text)
				}
			}
		})
	}
}

// TestGeneratedAreJSON derives random strings from each grammar and checks
// that they are valid JSON, which catches escaping and structure mistakes
// that hand-written instances could miss.
func TestGeneratedAreJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range instanceCases {
		text, err := FromJSONSchema(loadSchema(t, tc.schema))
		if err != nil {
			t.Fatalf("FromJSONSchema: %v", err)
		}
		g, err := parseGBNF(text)
		if err != nil {
			t.Fatalf("grammar does not parse: %v", err)
		}
		n := 0
		for i := 0; i < 200 && n < 50; i++ {
			s, ok := g.generate(rng)
			if !ok {
				continue
			}
			n++
			if !json.Valid([]byte(s)) {
				t.Errorf("schema %s: generated invalid JSON %q", tc.schema, s)
			}
			if len(s) < 2000 && !g.accepts(s) {
				t.Errorf("schema %s: recogniser rejects generated %q", tc.schema, s)
			}
		}
		if n == 0 {
			t.Errorf("schema %s: could not generate any instance", tc.schema)
		}
	}
}

func TestJSONObject(t *testing.T) {
	got, err := FromJSONSchema([]byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got != JSONObject {
		t.Errorf("JSONObject is out of date; FromJSONSchema({\"type\":\"object\"}) gives:\n%s", got)
	}
	g, err := parseGBNF(JSONObject)
	if err != nil {
		t.Fatalf("JSONObject does not parse: %v", err)
	}
	for _, in := range []string{
		`{}`, `{"a":1}`, `{ "a" : [1, 2.5e3, -0.1, "x\u00e9\n", true, false, null, {}] }`,
		"{\n  \"nested\": {\"deep\": [[[]]]}\n}",
	} {
		if !g.accepts(in) {
			t.Errorf("rejected %s", in)
		}
	}
	for _, in := range []string{`[]`, `1`, `"x"`, `{"a"}`, `{a:1}`, `{"a":1,}`, `{"a":01}`, `{"a":'x'}`, `{} {}`, "\n{}"} {
		if g.accepts(in) {
			t.Errorf("accepted %q", in)
		}
	}
}

// TestWhitespaceBounded checks that whitespace runs are limited.
func TestWhitespaceBounded(t *testing.T) {
	g, err := parseGBNF(JSONObject)
	if err != nil {
		t.Fatal(err)
	}
	if !g.accepts("{\n" + strings.Repeat(" ", 20) + `"a":1}`) {
		t.Error("rejected 20 spaces of indentation")
	}
	if g.accepts("{\n" + strings.Repeat(" ", 21) + `"a":1}`) {
		t.Error("accepted 21 spaces of indentation")
	}
	if g.accepts(`{  "a":1}`) {
		t.Error("accepted two spaces")
	}
}

func TestErrors(t *testing.T) {
	cases := []struct{ schema, want string }{
		{`{"type":"object","properties":{"age":{"type":"decimal"}}}`, `grammar: schema at /properties/age: unsupported type "decimal"`},
		{`{"type":`, `grammar: invalid JSON schema`},
		{`{"type":"object"} x`, `grammar: invalid JSON schema`},
		{`[]`, `grammar: schema at /: schema must be an object or a boolean`},
		{`false`, `grammar: schema at /: schema false admits no value`},
		{`{"type":"string","minLength":"3"}`, `grammar: schema at /minLength: minLength must be a non-negative integer`},
		{`{"type":"array","items":{"type":"integer"},"uniqueItems":true}`, `grammar: schema at /: unsupported keyword "uniqueItems"`},
		{`{"properties":{"a":{"not":{"type":"string"}}}}`, `grammar: schema at /properties/a: unsupported keyword "not"`},
		{`{"$ref":"#/$defs/missing"}`, `grammar: schema at /$ref: $ref "#/$defs/missing" does not resolve`},
		{`{"$ref":"https://example.com/s.json"}`, `grammar: schema at /$ref: only local $ref`},
		{`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `grammar: schema at /$defs/a: recursive $ref that consumes no input`},
		{`{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"string"}]}},"$ref":"#/$defs/a"}`, `left recursion`},
		{`{"$defs":{"a":{"type":"object","properties":{"x":{"$ref":"#/$defs/a"}},"required":["x"]}},"$ref":"#/$defs/a"}`, `schema has no finite instance`},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`, `grammar: schema at /required/0: required property "b" is not declared`},
		{`{"type":"string","maxLength":5000}`, `grammar: schema at /maxLength: maxLength above 2000 is not supported`},
		{`{"type":"string","minLength":3,"maxLength":2}`, `minLength is greater than maxLength`},
		{`{"type":"integer","minimum":5,"maximum":4}`, `no integer satisfies`},
		{`{"type":"number","minimum":0.5}`, `grammar: schema at /minimum: non-integer bounds`},
		{`{"type":"string","pattern":"(?=a)"}`, `grammar: schema at /pattern: unsupported pattern`},
		{`{"type":"string","pattern":"a\\bb"}`, `word boundary`},
		{`{"type":"string","pattern":"(a*)*"}`, `can match the empty string`},
		{`{"enum":[]}`, `grammar: schema at /enum: enum must be a non-empty array`},
		{`{"type":"string","enum":[1,2]}`, `no enum value matches`},
		{`{"type":"string","const":1}`, `const value does not match`},
		{`{"allOf":[{"type":"string"},{"type":"integer"}]}`, `allOf combines incompatible types`},
		{`{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, `recursive $ref "#/$defs/a" combined with allOf`},
		{`{"type":"object","properties":{"a":{"type":"string"}},"unevaluatedProperties":true}`, `only unevaluatedProperties: false`},
		{`{"anyOf":[]}`, `anyOf must be a non-empty array`},
		{`{"type":"array","prefixItems":[{"type":"string"}],"minItems":3}`, `minItems is larger`},
		{`{"type":"object","properties":{"a~b/c":{"type":"bogus"}}}`, `schema at /properties/a~0b~1c: unsupported type "bogus"`},
	}
	for _, tc := range cases {
		_, err := FromJSONSchema([]byte(tc.schema))
		if err == nil {
			t.Errorf("%s: no error, want %q", tc.schema, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got error %q\nwant it to contain %q", tc.schema, err, tc.want)
		}
	}
}

// TestAnnotationsIgnored checks that annotation keywords do not change the
// grammar.
func TestAnnotationsIgnored(t *testing.T) {
	plain, err := FromJSONSchema([]byte(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	annotated, err := FromJSONSchema([]byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"T","description":"d","type":"object","properties":{"a":{"type":"string","description":"x","examples":["e"],"default":"z","title":"A","x-extra":1}},"required":["a"],"$comment":"c"}`))
	if err != nil {
		t.Fatal(err)
	}
	if plain != annotated {
		t.Errorf("annotations changed the grammar:\n%s\nvs\n%s", plain, annotated)
	}
}

// TestIntegerRanges checks integer range grammars exhaustively around their
// bounds.
func TestIntegerRanges(t *testing.T) {
	ranges := [][2]int{{0, 0}, {0, 9}, {1, 10}, {7, 123}, {-123, -7}, {-15, 27}, {99, 1000}, {100, 199}, {-1, 0}, {250, 301}}
	for _, r := range ranges {
		schema := `{"type":"integer","minimum":` + itoa(r[0]) + `,"maximum":` + itoa(r[1]) + `}`
		text, err := FromJSONSchema([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		g, err := parseGBNF(text)
		if err != nil {
			t.Fatalf("%s: %v\n%s", schema, err, text)
		}
		for v := r[0] - 30; v <= r[1]+30; v++ {
			want := v >= r[0] && v <= r[1]
			if got := g.accepts(itoa(v)); got != want {
				t.Errorf("%s: accepts(%d) = %v, want %v\n%s", schema, v, got, want, text)
			}
		}
	}
	// One-sided bounds.
	text, err := FromJSONSchema([]byte(`{"type":"integer","exclusiveMinimum":-3}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := parseGBNF(text)
	if err != nil {
		t.Fatal(err)
	}
	for v := -50; v <= 5000; v++ {
		if got, want := g.accepts(itoa(v)), v > -3; got != want {
			t.Errorf("exclusiveMinimum -3: accepts(%d) = %v", v, got)
		}
	}
	if !g.accepts("9999999999999999") || g.accepts("10000000000000000") {
		t.Error("unbounded side should allow up to 16 digits")
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
