// Package rawjson edits one top-level member of a JSON object in place,
// leaving every other byte as it was. The gateway needs that: a request
// relayed to an upstream must arrive as the client sent it, with only the
// model name changed, and an upstream's answer must reach the client the
// same way. Decoding into a map and encoding again would reorder keys,
// reformat numbers and drop duplicates.
package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

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

// Find locates the value of the top-level member key in the JSON object
// doc (the last one, as encoding/json reads duplicates).
func Find(doc []byte, key string) (Span, error) {
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

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Get returns the raw value of the top-level member key (nil when absent).
func Get(doc []byte, key string) (json.RawMessage, error) {
	sp, err := Find(doc, key)
	if err != nil || !sp.Found {
		return nil, err
	}
	return json.RawMessage(doc[sp.Start:sp.End]), nil
}

// Set returns doc with the top-level member key set to value (raw JSON):
// replaced where it is, or added at the end of the object. The rest of
// doc is unchanged. doc itself is not modified.
func Set(doc []byte, key string, value []byte) ([]byte, error) {
	sp, err := Find(doc, key)
	if err != nil {
		return nil, err
	}
	return splice(doc, key, value, sp), nil
}

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

// SetString is Set with a string value.
func SetString(doc []byte, key, value string) ([]byte, error) {
	v, _ := json.Marshal(value)
	return Set(doc, key, v)
}
