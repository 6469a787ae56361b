package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of the schema document, so that hostile input
// cannot exhaust the stack of the recursive converter.
const maxDepth = 64

// valueKind is the JSON type of a parsed value.
type valueKind int

const (
	kindNull valueKind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k valueKind) String() string {
	switch k {
	case kindNull:
		return "null"
	case kindBool:
		return "boolean"
	case kindNumber:
		return "number"
	case kindString:
		return "string"
	case kindArray:
		return "array"
	default:
		return "object"
	}
}

// value is a parsed JSON value that keeps object members in document order
// and remembers its JSON pointer inside the schema document.
type value struct {
	kind    valueKind
	ptr     string // JSON pointer from the document root ("" is the root)
	boolean bool
	num     json.Number
	str     string
	arr     []*value
	obj     []member
}

type member struct {
	key string
	val *value
}

// get returns the member named key of an object, or nil.
func (v *value) get(key string) *value {
	if v == nil || v.kind != kindObject {
		return nil
	}
	for _, m := range v.obj {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

// has reports whether an object has a member named key.
func (v *value) has(key string) bool { return v.get(key) != nil }

// where renders the pointer for error messages.
func (v *value) where() string {
	if v.ptr == "" {
		return "/"
	}
	return v.ptr
}

// equal reports deep equality of two JSON values (numbers compare by value
// when both parse as float64, object member order is ignored).
func (v *value) equal(o *value) bool {
	if v.kind != o.kind {
		return false
	}
	switch v.kind {
	case kindNull:
		return true
	case kindBool:
		return v.boolean == o.boolean
	case kindNumber:
		if v.num == o.num {
			return true
		}
		a, err1 := v.num.Float64()
		b, err2 := o.num.Float64()
		return err1 == nil && err2 == nil && a == b
	case kindString:
		return v.str == o.str
	case kindArray:
		if len(v.arr) != len(o.arr) {
			return false
		}
		for i := range v.arr {
			if !v.arr[i].equal(o.arr[i]) {
				return false
			}
		}
		return true
	default:
		if len(v.obj) != len(o.obj) {
			return false
		}
		for _, m := range v.obj {
			om := o.get(m.key)
			if om == nil || !m.val.equal(om) {
				return false
			}
		}
		return true
	}
}

// isInteger reports whether a number value has no fractional part.
func (v *value) isInteger() bool {
	if v.kind != kindNumber {
		return false
	}
	if _, err := strconv.ParseInt(string(v.num), 10, 64); err == nil {
		return true
	}
	f, err := v.num.Float64()
	return err == nil && f == math.Trunc(f)
}

// pointerToken escapes a key for use in a JSON pointer (RFC 6901).
func pointerToken(s string) string {
	s = strings.ReplaceAll(s, "~", "~0")
	return strings.ReplaceAll(s, "/", "~1")
}

// parseJSON decodes a single JSON document, preserving object key order.
func parseJSON(data []byte) (*value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("grammar: invalid JSON schema: unexpected data after the top-level value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, ptr string, depth int) (*value, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("grammar: invalid JSON schema: %v", err)
	}
	return decodeFrom(dec, tok, ptr, depth)
}

func decodeFrom(dec *json.Decoder, tok json.Token, ptr string, depth int) (*value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("grammar: schema at %s: nesting deeper than %d levels", orRoot(ptr), maxDepth)
	}
	switch t := tok.(type) {
	case nil:
		return &value{kind: kindNull, ptr: ptr}, nil
	case bool:
		return &value{kind: kindBool, ptr: ptr, boolean: t}, nil
	case json.Number:
		return &value{kind: kindNumber, ptr: ptr, num: t}, nil
	case string:
		return &value{kind: kindString, ptr: ptr, str: t}, nil
	case json.Delim:
		switch t {
		case '[':
			v := &value{kind: kindArray, ptr: ptr}
			for dec.More() {
				item, err := decodeValue(dec, ptr+"/"+strconv.Itoa(len(v.arr)), depth+1)
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, item)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, fmt.Errorf("grammar: invalid JSON schema: %v", err)
			}
			return v, nil
		case '{':
			v := &value{kind: kindObject, ptr: ptr}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("grammar: invalid JSON schema: %v", err)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, errors.New("grammar: invalid JSON schema: object key is not a string")
				}
				if seen[key] {
					return nil, fmt.Errorf("grammar: schema at %s: duplicate key %q", orRoot(ptr), key)
				}
				item, err := decodeValue(dec, ptr+"/"+pointerToken(key), depth+1)
				if err != nil {
					return nil, err
				}
				seen[key] = true
				v.obj = append(v.obj, member{key: key, val: item})
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, fmt.Errorf("grammar: invalid JSON schema: %v", err)
			}
			return v, nil
		}
	}
	return nil, fmt.Errorf("grammar: invalid JSON schema: unexpected token %v", tok)
}

func orRoot(ptr string) string {
	if ptr == "" {
		return "/"
	}
	return ptr
}
