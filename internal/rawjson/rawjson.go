// Package rawjson edits one top-level member of a JSON object in place,
// leaving every other byte as it was. The gateway needs that: a request
// relayed to an upstream must arrive as the client sent it, with only the
// model name changed, and an upstream's answer must reach the client the
// same way. Decoding into a map and encoding again would reorder keys,
// reformat numbers and drop duplicates.
package rawjson

import (
	"encoding/json"
	"errors"
)

// The functions (scan.go) take JSON already known to be valid: the
// gateway checks a request once (json.Valid) and then only scans it.

// ErrNotObject is returned for input that is not one JSON object.
var ErrNotObject = errors.New("rawjson: not a JSON object")

// Span is the byte range [Start, End) of a member's value; Found is false
// when the object has no such member (Start is then the offset of the
// object's closing brace, and Empty whether the object has no members).
type Span struct {
	Start, End int
	Found      bool
	Empty      bool
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// splice writes value at sp (adding the member key when sp was not found).
func splice(doc []byte, key string, value []byte, sp Span) []byte {
	out := make([]byte, 0, len(doc)+len(key)+len(value)+4)
	if sp.Found {
		out = append(out, doc[:sp.Start]...)
		out = append(out, value...)
		return append(out, doc[sp.End:]...)
	}
	out = append(out, doc[:sp.Start]...)
	if !sp.Empty {
		out = append(out, ',')
	}
	k, _ := json.Marshal(key)
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, value...)
	return append(out, doc[sp.End:]...)
}
