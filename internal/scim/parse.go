package scim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// This file parses the two small languages SCIM requests carry: filters
// (RFC 7644 §3.4.2.2) and PATCH paths (§3.5.2). Only what Okta and Entra
// ID send is understood — one comparison `attribute eq "value"` in a
// filter, and a path `attr`, `attr.sub`, `attr[sub eq value]` or
// `attr[sub eq value].sub`, optionally after a schema URN — and anything
// else is refused by name (invalidFilter, invalidPath) rather than
// misread.

// The core schemas' URNs.
const (
	UserSchema  = "urn:ietf:params:scim:schemas:core:2.0:User"
	GroupSchema = "urn:ietf:params:scim:schemas:core:2.0:Group"
)

// comparison is `attr op value`: attr as written (a path), op
// lower-cased, value a JSON literal (string, bool, number or nil).
type comparison struct {
	Attr  string
	Op    string
	Value any
}

// parseComparison reads exactly one comparison `attr op value` from s.
func parseComparison(s string) (comparison, error) {
	s = strings.TrimSpace(s)
	attr, rest, ok := strings.Cut(s, " ")
	if !ok || attr == "" {
		return comparison{}, fmt.Errorf("expected `attribute eq \"value\"`, got %q", s)
	}
	rest = strings.TrimLeft(rest, " ")
	op, val, ok := strings.Cut(rest, " ")
	if !ok {
		return comparison{}, fmt.Errorf("expected `attribute eq \"value\"`, got %q", s)
	}
	op = strings.ToLower(op)
	val = strings.TrimSpace(val)
	if op == "pr" || val == "" {
		return comparison{}, fmt.Errorf("operator %q is not supported (only eq)", op)
	}
	d := json.NewDecoder(strings.NewReader(val))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return comparison{}, fmt.Errorf("the value in %q is not a JSON string, number, boolean or null", s)
	}
	if strings.TrimSpace(val[d.InputOffset():]) != "" {
		return comparison{}, fmt.Errorf("only one comparison is supported (no and, or, not or grouping): %q", s)
	}
	switch v.(type) {
	case string, bool, json.Number, nil:
	default:
		return comparison{}, fmt.Errorf("the value in %q is not a JSON string, number, boolean or null", s)
	}
	return comparison{Attr: attr, Op: op, Value: v}, nil
}

// stripSchema removes a core schema's URN prefix ("urn:…:User:userName"
// → "userName") and reports whether the path was in another schema (an
// extension, such as the enterprise user's) instead.
func stripSchema(p string) (string, bool) {
	for _, urn := range []string{UserSchema, GroupSchema} {
		if len(p) > len(urn) && strings.EqualFold(p[:len(urn)], urn) && p[len(urn)] == ':' {
			return p[len(urn)+1:], false
		}
	}
	if strings.HasPrefix(strings.ToLower(p), "urn:") {
		return "", true
	}
	return p, false
}

// filterOf parses a list request's filter into (attribute, value) with
// the attribute lower-cased and its core schema's URN removed: only `eq`
// with a string value, on one of attrs (lower-case names).
func filterOf(s string, attrs ...string) (attr, value string, err error) {
	c, err := parseComparison(s)
	if err != nil {
		return "", "", errorf(http.StatusBadRequest, TypeInvalidFilter, "unsupported filter: %v", err)
	}
	if c.Op != "eq" {
		return "", "", errorf(http.StatusBadRequest, TypeInvalidFilter, "unsupported filter operator %q (only eq)", c.Op)
	}
	a, ext := stripSchema(c.Attr)
	a = strings.ToLower(a)
	ok := !ext
	if ok {
		ok = false
		for _, x := range attrs {
			ok = ok || a == x
		}
	}
	if !ok {
		return "", "", errorf(http.StatusBadRequest, TypeInvalidFilter, "filtering on %q is not supported (only %s)", c.Attr, strings.Join(attrs, ", "))
	}
	v, isString := c.Value.(string)
	if !isString {
		return "", "", errorf(http.StatusBadRequest, TypeInvalidFilter, "the filter's value must be a string")
	}
	return a, v, nil
}

// path is a parsed PATCH path: Attr and Sub lower-cased, Filter the
// bracketed value filter (nil when none; its Attr lower-cased). Ext marks
// an extension schema's attribute (which this server keeps none of).
type path struct {
	Attr   string
	Sub    string
	Filter *comparison
	Ext    bool
}

// parsePath reads a PATCH path.
func parsePath(s string) (path, error) {
	bad := func(why string) (path, error) {
		return path{}, errorf(http.StatusBadRequest, TypeInvalidPath, "path %q: %s", s, why)
	}
	p, ext := stripSchema(strings.TrimSpace(s))
	if ext {
		return path{Ext: true}, nil
	}
	var out path
	if i := strings.IndexByte(p, '['); i >= 0 {
		j := strings.LastIndexByte(p, ']')
		if j < i {
			return bad("an unclosed [")
		}
		c, err := parseComparison(p[i+1 : j])
		if err != nil {
			return bad(err.Error())
		}
		if c.Op != "eq" {
			return bad("only eq is supported in a value filter")
		}
		c.Attr = strings.ToLower(c.Attr)
		out.Filter = &c
		after := p[j+1:]
		p = p[:i]
		if after != "" {
			sub, ok := strings.CutPrefix(after, ".")
			if !ok || sub == "" {
				return bad("expected .subAttribute after ]")
			}
			out.Sub = sub
		}
	} else if a, sub, ok := strings.Cut(p, "."); ok {
		p, out.Sub = a, sub
	}
	if !validName(p) || (out.Sub != "" && !validName(out.Sub)) {
		return bad("not an attribute path")
	}
	out.Attr, out.Sub = strings.ToLower(p), strings.ToLower(out.Sub)
	return out, nil
}

// validName reports whether s is an attribute name: ALPHA *(nameChar),
// nameChar = "-" / "_" / DIGIT / ALPHA, or "$ref".
func validName(s string) bool {
	if s == "$ref" {
		return true
	}
	if s == "" || !isAlpha(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isAlpha(c) && !(c >= '0' && c <= '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// lookup returns m's value for attribute name (attribute names are
// case-insensitive, RFC 7643 §2.1), and whether it is there.
func lookup(m map[string]any, name string) (any, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// asString reads a string attribute (null: "").
func asString(attr string, v any) (string, error) {
	switch s := v.(type) {
	case string:
		return s, nil
	case nil:
		return "", nil
	}
	return "", invalidValue("%s must be a string", attr)
}

// asBool reads a boolean attribute: a JSON boolean, or the strings
// "true" and "false" in any case, which Entra ID sends in PATCH.
func asBool(attr string, v any) (bool, error) {
	switch b := v.(type) {
	case bool:
		return b, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(b)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, invalidValue("%s must be a boolean", attr)
}

// MaxBody is the largest request body accepted (a 413 beyond it).
const MaxBody = 1 << 20

// readJSON reads r's body (at most MaxBody bytes) as one JSON value into
// v: a 413 when larger, invalidSyntax when it is not JSON.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return errorf(http.StatusRequestEntityTooLarge, "", "the request body is larger than %d bytes", MaxBody)
		}
		return errorf(http.StatusBadRequest, TypeInvalidSyntax, "reading the request body: %v", err)
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return errorf(http.StatusBadRequest, TypeInvalidSyntax, "the request body is not valid JSON: %v", err)
	}
	if d.More() {
		return errorf(http.StatusBadRequest, TypeInvalidSyntax, "the request body holds more than one JSON value")
	}
	if _, err := d.Token(); err != io.EOF {
		return errorf(http.StatusBadRequest, TypeInvalidSyntax, "the request body holds more than one JSON value")
	}
	return nil
}
