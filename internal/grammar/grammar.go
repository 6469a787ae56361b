// Package grammar converts OpenAI-style response_format specifications into
// GBNF grammars for llama.cpp's grammar sampler.
//
// The grammars constrain generation: every string a grammar accepts is a JSON
// document valid against the schema it was made from. The converse does not
// hold everywhere; a grammar may accept only a canonical subset of the valid
// documents (object keys in schema order, no escapes where a literal is
// expected, bounded whitespace), which is what constrained decoding needs.
//
// Whitespace between tokens is limited to nothing, one space, or a newline
// followed by up to 20 spaces or tabs, so that a model cannot loop forever on
// whitespace.
package grammar

// JSONObject is a GBNF grammar (start rule "root") that accepts any JSON
// object, as needed for OpenAI's response_format {"type": "json_object"}.
const JSONObject = `root ::= object
space ::= | " " | "\n" [ \t]{0,20}
char-escape ::= "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
char ::= [^"\\\x7F\x00-\x1F] | char-escape
string ::= "\"" char* "\"" space
array ::= "[" space (value ("," space value)*)? "]" space
integral-part ::= "0" | [1-9] [0-9]{0,15}
number ::= "-"? integral-part ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? space
boolean ::= ("true" | "false") space
null ::= "null" space
value ::= object | array | string | number | boolean | null
object ::= "{" space (string ":" space value ("," space string ":" space value)*)? "}" space
`

// FromJSONSchema converts a JSON Schema into a GBNF grammar whose start rule
// is "root". It supports the subset of JSON Schema used by OpenAI structured
// outputs:
//
//   - type: object, array, string, number, integer, boolean, null, or an
//     array of these (e.g. ["string", "null"]); OpenAPI's nullable: true
//   - properties (emitted in schema order), required, additionalProperties
//     (absent or false: no other keys; true or a schema: extra keys may
//     follow the declared ones); an object schema with neither properties
//     nor additionalProperties accepts any object
//   - items, prefixItems, minItems, maxItems
//   - enum, const, anyOf, oneOf (treated as anyOf), allOf (merged)
//   - $ref to local JSON pointers such as #/$defs/Name or
//     #/definitions/Name, recursion included
//   - minLength, maxLength, pattern, and format date, time, date-time and
//     uuid for strings (other formats are annotations and ignored)
//   - minimum, maximum, exclusiveMinimum, exclusiveMaximum for integers,
//     and for numbers when the bounds are whole numbers
//
// Annotations (title, description, examples, default, $schema, ...) are
// ignored. Any other keyword, or a supported one used in a way that cannot
// be honoured, makes FromJSONSchema fail with an error that names the JSON
// pointer of the offending part, e.g.
//
//	grammar: schema at /properties/age: unsupported type "decimal"
func FromJSONSchema(schema []byte) (string, error) {
	doc, err := parseJSON(schema)
	if err != nil {
		return "", err
	}
	c := newConverter(doc)
	body, err := c.visit(doc, "")
	if err != nil {
		return "", err
	}
	c.b.defineRoot(body)
	if err := c.b.check(); err != nil {
		return "", err
	}
	return c.b.render(), nil
}
