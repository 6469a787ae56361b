package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
)

// The scanner below walks JSON that is already known to be valid
// (json.Valid): it finds where values start and end without decoding them,
// which is what the gateway needs on every request and stream chunk, at a
// fraction of encoding/json's cost. On input that is not valid it returns
// errMalformed or wrong spans, never panics.

var errMalformed = errors.New("rawjson: malformed JSON")

func skipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string starting at d[i] == '"'.
func skipString(d []byte, i int) (int, error) {
	for i++; i < len(d); i++ {
		switch d[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errMalformed
}

// skipValue returns the index after the value starting at d[i].
func skipValue(d []byte, i int) (int, error) {
	if i >= len(d) {
		return 0, errMalformed
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for ; i < len(d); i++ {
			switch d[i] {
			case '"':
				j, err := skipString(d, i)
				if err != nil {
					return 0, err
				}
				i = j - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errMalformed
	}
	// A number or a literal: up to the next delimiter.
	j := i
	for j < len(d) && d[j] != ',' && d[j] != '}' && d[j] != ']' && !isSpace(d[j]) {
		j++
	}
	if j == i {
		return 0, errMalformed
	}
	return j, nil
}

// Members calls fn with each top-level member of the valid JSON object
// doc: its key as written (without quotes, escapes kept) and its value's
// bytes, until fn returns false.
func Members(doc []byte, fn func(key, value []byte) bool) error {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return ErrNotObject
	}
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return nil
	}
	for i < len(doc) {
		if doc[i] != '"' {
			return errMalformed
		}
		ke, err := skipString(doc, i)
		if err != nil {
			return err
		}
		key := doc[i+1 : ke-1]
		i = skipSpace(doc, ke)
		if i >= len(doc) || doc[i] != ':' {
			return errMalformed
		}
		vs := skipSpace(doc, i+1)
		ve, err := skipValue(doc, vs)
		if err != nil {
			return err
		}
		if !fn(key, doc[vs:ve]) {
			return nil
		}
		i = skipSpace(doc, ve)
		if i < len(doc) && doc[i] == ',' {
			i = skipSpace(doc, i+1)
			continue
		}
		if i < len(doc) && doc[i] == '}' {
			return nil
		}
		return errMalformed
	}
	return errMalformed
}

// Elements calls fn with each element of the valid JSON array arr, until
// fn returns false. A value that is not an array has no elements.
func Elements(arr []byte, fn func(value []byte) bool) error {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil
	}
	i = skipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return nil
	}
	for i < len(arr) {
		ve, err := skipValue(arr, i)
		if err != nil {
			return err
		}
		if !fn(arr[i:ve]) {
			return nil
		}
		i = skipSpace(arr, ve)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
			continue
		}
		if i < len(arr) && arr[i] == ']' {
			return nil
		}
		return errMalformed
	}
	return errMalformed
}

// FindValid is Find for a document already known to be valid JSON: it
// scans instead of decoding.
func FindValid(doc []byte, key string) (Span, error) {
	var sp Span
	sp.Empty = true
	err := Members(doc, func(k, v []byte) bool {
		sp.Empty = false
		if string(k) == key || bytes.IndexByte(k, '\\') >= 0 && unquote(k) == key {
			sp.Found = true
			sp.Start = cap(doc) - cap(v)
			sp.End = sp.Start + len(v)
		}
		return true
	})
	if err != nil {
		return Span{}, ErrNotObject
	}
	if !sp.Found {
		end := len(doc) - 1
		for end >= 0 && doc[end] != '}' {
			end--
		}
		if end < 0 {
			return Span{}, ErrNotObject
		}
		sp.Start, sp.End = end, end
	}
	return sp, nil
}

// SetValid is Set for a document already known to be valid JSON.
func SetValid(doc []byte, key string, value []byte) ([]byte, error) {
	sp, err := FindValid(doc, key)
	if err != nil {
		return nil, err
	}
	return splice(doc, key, value, sp), nil
}

// unquote decodes a key written with escapes.
func unquote(k []byte) string {
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &s) != nil {
		return ""
	}
	return s
}
