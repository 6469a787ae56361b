package grammar

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// maxSteps bounds the work done for one schema (schemas that inline
// recursive references through allOf could otherwise blow up).
const maxSteps = 20000

// annotationKeywords carry no constraint and are ignored.
var annotationKeywords = map[string]bool{
	"title": true, "description": true, "examples": true, "default": true,
	"$schema": true, "$id": true, "$comment": true, "$anchor": true,
	"$defs": true, "definitions": true, "deprecated": true,
	"readOnly": true, "writeOnly": true, "contentEncoding": true,
	"contentMediaType": true, "discriminator": true,
}

// constraintKeywords are the keywords the converter honours.
var constraintKeywords = map[string]bool{
	"type": true, "enum": true, "const": true, "anyOf": true, "oneOf": true,
	"allOf": true, "$ref": true, "properties": true, "required": true,
	"additionalProperties": true, "unevaluatedProperties": true,
	"items": true, "prefixItems": true, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true, "pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true,
	"exclusiveMaximum": true, "nullable": true,
}

// schemaError builds an error naming the schema location.
func schemaError(at *value, format string, args ...any) error {
	return fmt.Errorf("grammar: schema at %s: %s", at.where(), fmt.Sprintf(format, args...))
}

// at returns the location of keyword key inside schema s.
func at(s *value, key string) *value {
	if v := s.get(key); v != nil {
		return v
	}
	return s
}

type converter struct {
	doc      *value
	b        *builder
	refNames map[string]string // normalised $ref -> rule name
	inlining map[string]bool   // $refs inlined by allOf merging, being visited
	steps    int
}

func newConverter(doc *value) *converter {
	c := &converter{
		doc:      doc,
		b:        newBuilder(),
		refNames: map[string]string{"#": "root"},
		inlining: map[string]bool{},
	}
	c.b.reserveRoot()
	return c
}

func childName(name, suffix string) string {
	if name == "" {
		return suffix
	}
	return name + "-" + suffix
}

// altName names the alternatives of a union or of a type list; at the top
// level they are prefixed with "root" rather than named "0", "1", ...
func altName(name, suffix string) string {
	if name == "" {
		name = "root"
	}
	return name + "-" + suffix
}

func checkKeywords(s *value) error {
	for _, m := range s.obj {
		k := m.key
		if annotationKeywords[k] || constraintKeywords[k] || strings.HasPrefix(k, "x-") {
			continue
		}
		return schemaError(s, "unsupported keyword %q", k)
	}
	return nil
}

// hasConstraints reports whether s has a constraint keyword other than the
// ones listed.
func hasConstraints(s *value, except ...string) bool {
	for _, m := range s.obj {
		if constraintKeywords[m.key] && !slices.Contains(except, m.key) {
			return true
		}
	}
	return false
}

// without returns a copy of object s without the listed keys.
func without(s *value, keys ...string) *value {
	out := &value{kind: kindObject, ptr: s.ptr}
	for _, m := range s.obj {
		if !slices.Contains(keys, m.key) {
			out.obj = append(out.obj, m)
		}
	}
	return out
}

// visitNamed converts s and gives the result its own rule unless it is
// already a plain reference.
func (c *converter) visitNamed(s *value, name string) (*expr, error) {
	e, err := c.visit(s, name)
	if err != nil {
		return nil, err
	}
	if e.kind == eRef {
		return e, nil
	}
	return c.b.add(name, s.ptr, e), nil
}

// visit converts schema s into an expression matching its instances
// (including trailing whitespace). name is the base for derived rule names.
func (c *converter) visit(s *value, name string) (*expr, error) {
	c.steps++
	if c.steps > maxSteps {
		return nil, schemaError(s, "schema too complex")
	}
	switch s.kind {
	case kindBool:
		if s.boolean {
			return c.b.builtin("value"), nil
		}
		return nil, schemaError(s, "schema false admits no value")
	case kindObject:
	default:
		return nil, schemaError(s, "schema must be an object or a boolean, got %s", s.kind)
	}
	if err := checkKeywords(s); err != nil {
		return nil, err
	}

	if r := s.get("$ref"); r != nil && !hasConstraints(s, "$ref") {
		return c.visitRef(r)
	}
	if s.has("$ref") || s.has("allOf") {
		return c.visitMerged([]*value{s}, name)
	}
	if s.has("anyOf") && s.has("oneOf") {
		return nil, schemaError(s, "anyOf together with oneOf is not supported")
	}
	if key := unionKey(s); key != "" {
		list := s.get(key)
		if list.kind != kindArray || len(list.arr) == 0 {
			return nil, schemaError(list, "%s must be a non-empty array of schemas", key)
		}
		rest := without(s, key)
		restHas := hasConstraints(rest)
		var alts []*expr
		for i, sub := range list.arr {
			n := altName(name, strconv.Itoa(i))
			var e *expr
			var err error
			if restHas {
				e, err = c.visitMerged([]*value{rest, sub}, n)
				if err == nil && e.kind != eRef {
					e = c.b.add(n, sub.ptr, e)
				}
			} else {
				e, err = c.visitNamed(sub, n)
			}
			if err != nil {
				return nil, err
			}
			alts = append(alts, e)
		}
		return alt(alts...), nil
	}

	types, err := schemaTypes(s)
	if err != nil {
		return nil, err
	}
	if cv := s.get("const"); cv != nil {
		if types != nil && !matchesAny(cv, types) {
			return nil, schemaError(cv, "const value does not match the schema type")
		}
		if ev := s.get("enum"); ev != nil {
			if ev.kind != kindArray {
				return nil, schemaError(ev, "enum must be an array")
			}
			if !slices.ContainsFunc(ev.arr, cv.equal) {
				return nil, schemaError(cv, "const value is not in enum")
			}
		}
		return c.constExpr(cv), nil
	}
	if ev := s.get("enum"); ev != nil {
		return c.enumExpr(ev, types)
	}
	if types == nil {
		types = inferTypes(s)
	}
	if types == nil {
		return c.b.builtin("value"), nil
	}
	if slices.Contains(types, "number") {
		types = slices.DeleteFunc(types, func(t string) bool { return t == "integer" })
	}
	if len(types) == 1 {
		return c.visitType(s, types[0], name)
	}
	var alts []*expr
	for _, t := range types {
		n := altName(name, t)
		e, err := c.visitType(s, t, n)
		if err != nil {
			return nil, err
		}
		if e.kind != eRef {
			e = c.b.add(n, s.ptr, e)
		}
		alts = append(alts, e)
	}
	return alt(alts...), nil
}

func unionKey(s *value) string {
	if s.has("anyOf") {
		return "anyOf"
	}
	if s.has("oneOf") {
		return "oneOf"
	}
	return ""
}

// visitMerged merges the schemas (resolving allOf and $ref) into one and
// converts it.
func (c *converter) visitMerged(parts []*value, name string) (*expr, error) {
	m := &merger{c: c, out: &value{kind: kindObject, ptr: parts[0].ptr}, active: map[string]bool{}}
	for _, p := range parts {
		if err := m.add(p); err != nil {
			return nil, err
		}
	}
	for _, r := range m.refs {
		c.inlining[r] = true
	}
	defer func() {
		for _, r := range m.refs {
			delete(c.inlining, r)
		}
	}()
	return c.visit(m.out, name)
}

// visitRef converts a {"$ref": ...} schema into a reference to the rule of
// its target, creating that rule on first use.
func (c *converter) visitRef(r *value) (*expr, error) {
	target, key, err := c.resolve(r)
	if err != nil {
		return nil, err
	}
	if n, ok := c.refNames[key]; ok {
		return ref(n), nil
	}
	base := key[strings.LastIndex(key, "/")+1:]
	n := c.b.reserve(base, target.ptr)
	c.refNames[key] = n
	e, err := c.visit(target, n)
	if err != nil {
		return nil, err
	}
	c.b.define(n, e)
	return ref(n), nil
}

// resolve follows a local $ref. The returned key identifies the target.
func (c *converter) resolve(r *value) (*value, string, error) {
	if r.kind != kindString {
		return nil, "", schemaError(r, "$ref must be a string")
	}
	if !strings.HasPrefix(r.str, "#") {
		return nil, "", schemaError(r, "only local $ref (starting with #) is supported, got %q", r.str)
	}
	frag, err := url.PathUnescape(r.str[1:])
	if err != nil {
		return nil, "", schemaError(r, "invalid $ref %q", r.str)
	}
	if frag == "" {
		return c.doc, "#", nil
	}
	if frag[0] != '/' {
		return nil, "", schemaError(r, "unsupported $ref %q: only JSON pointers such as #/$defs/Name are supported", r.str)
	}
	cur := c.doc
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var next *value
		switch cur.kind {
		case kindObject:
			next = cur.get(tok)
		case kindArray:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(cur.arr) && strconv.Itoa(i) == tok {
				next = cur.arr[i]
			}
		}
		if next == nil {
			return nil, "", schemaError(r, "$ref %q does not resolve", r.str)
		}
		cur = next
	}
	return cur, "#" + frag, nil
}

var knownTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// schemaTypes returns the types allowed by "type" (and "nullable"), or nil
// when "type" is absent.
func schemaTypes(s *value) ([]string, error) {
	tv := s.get("type")
	var types []string
	if tv != nil {
		var list []*value
		switch tv.kind {
		case kindString:
			list = []*value{tv}
		case kindArray:
			if len(tv.arr) == 0 {
				return nil, schemaError(tv, "type must not be an empty array")
			}
			list = tv.arr
		default:
			return nil, schemaError(tv, "type must be a string or an array of strings")
		}
		for _, t := range list {
			if t.kind != kindString {
				return nil, schemaError(t, "type must be a string or an array of strings")
			}
			if !slices.Contains(knownTypes, t.str) {
				return nil, schemaError(s, "unsupported type %q", t.str)
			}
			if !slices.Contains(types, t.str) {
				types = append(types, t.str)
			}
		}
	}
	if nv := s.get("nullable"); nv != nil {
		if nv.kind != kindBool {
			return nil, schemaError(nv, "nullable must be a boolean")
		}
		if nv.boolean && types != nil && !slices.Contains(types, "null") {
			types = append(types, "null")
		}
	}
	return types, nil
}

// inferTypes guesses the type of a schema without "type" from its keywords.
func inferTypes(s *value) []string {
	var types []string
	for _, m := range s.obj {
		var t string
		switch m.key {
		case "properties", "required", "additionalProperties", "unevaluatedProperties":
			t = "object"
		case "items", "prefixItems", "minItems", "maxItems":
			t = "array"
		case "minLength", "maxLength", "pattern", "format":
			t = "string"
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			t = "number"
		}
		if t != "" && !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return types
}

func matchesType(v *value, t string) bool {
	switch t {
	case "integer":
		return v.isInteger()
	case "number":
		return v.kind == kindNumber
	default:
		return v.kind.String() == t
	}
}

func matchesAny(v *value, types []string) bool {
	return slices.ContainsFunc(types, func(t string) bool { return matchesType(v, t) })
}

func (c *converter) enumExpr(ev *value, types []string) (*expr, error) {
	if ev.kind != kindArray || len(ev.arr) == 0 {
		return nil, schemaError(ev, "enum must be a non-empty array")
	}
	var scalars, others []*expr
	for _, v := range ev.arr {
		if types != nil && !matchesAny(v, types) {
			continue
		}
		switch v.kind {
		case kindArray, kindObject:
			others = append(others, c.constExpr(v))
		default:
			scalars = append(scalars, lit(scalarText(v)))
		}
	}
	if len(scalars)+len(others) == 0 {
		return nil, schemaError(ev, "no enum value matches the schema type")
	}
	var alts []*expr
	if len(scalars) > 0 {
		alts = append(alts, seq(alt(scalars...), c.b.builtin("space")))
	}
	return alt(append(alts, others...)...), nil
}

// scalarText is the JSON text of a scalar value.
func scalarText(v *value) string {
	switch v.kind {
	case kindNull:
		return "null"
	case kindBool:
		return strconv.FormatBool(v.boolean)
	case kindNumber:
		return string(v.num)
	default:
		return jsonString(v.str)
	}
}

// constExpr matches exactly the JSON value v, with whitespace allowed
// between its tokens.
func (c *converter) constExpr(v *value) *expr {
	space := c.b.builtin("space")
	switch v.kind {
	case kindArray:
		parts := []*expr{lit("["), space}
		for i, it := range v.arr {
			if i > 0 {
				parts = append(parts, lit(","), space)
			}
			parts = append(parts, c.constExpr(it))
		}
		return seq(append(parts, lit("]"), space)...)
	case kindObject:
		parts := []*expr{lit("{"), space}
		for i, m := range v.obj {
			if i > 0 {
				parts = append(parts, lit(","), space)
			}
			parts = append(parts, lit(jsonString(m.key)), space, lit(":"), space, c.constExpr(m.val))
		}
		return seq(append(parts, lit("}"), space)...)
	default:
		return seq(lit(scalarText(v)), space)
	}
}

// jsonString encodes s as a JSON string literal, escaping only what JSON
// requires.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func (c *converter) visitType(s *value, t, name string) (*expr, error) {
	switch t {
	case "null":
		return c.b.builtin("null"), nil
	case "boolean":
		return c.b.builtin("boolean"), nil
	case "integer":
		return c.integer(s)
	case "number":
		return c.number(s)
	case "string":
		return c.str(s)
	case "array":
		return c.array(s, name)
	default:
		return c.object(s, name)
	}
}

// count reads a non-negative integer keyword; ok is false when absent.
func count(s *value, key string) (n int, ok bool, err error) {
	v := s.get(key)
	if v == nil {
		return 0, false, nil
	}
	if v.kind != kindNumber || !v.isInteger() {
		return 0, false, schemaError(v, "%s must be a non-negative integer", key)
	}
	f, _ := v.num.Float64()
	if f < 0 {
		return 0, false, schemaError(v, "%s must be a non-negative integer", key)
	}
	if f > math.MaxInt32 {
		f = math.MaxInt32
	}
	return int(f), true, nil
}

// bounds reads a min/max keyword pair; max is -1 when absent.
func bounds(s *value, minKey, maxKey string) (lo, hi int, err error) {
	lo, _, err = count(s, minKey)
	if err != nil {
		return 0, 0, err
	}
	hi, ok, err := count(s, maxKey)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		hi = -1
	}
	if hi >= 0 && hi < lo {
		return 0, 0, schemaError(s, "%s is greater than %s", minKey, maxKey)
	}
	if lo > maxRepetition {
		return 0, 0, schemaError(at(s, minKey), "%s above %d is not supported", minKey, maxRepetition)
	}
	if hi > maxRepetition {
		return 0, 0, schemaError(at(s, maxKey), "%s above %d is not supported", maxKey, maxRepetition)
	}
	return lo, hi, nil
}

func (c *converter) str(s *value) (*expr, error) {
	lo, hi, err := bounds(s, "minLength", "maxLength")
	if err != nil {
		return nil, err
	}
	hasLen := s.has("minLength") || s.has("maxLength")
	if pv := s.get("pattern"); pv != nil {
		if pv.kind != kindString {
			return nil, schemaError(pv, "pattern must be a string")
		}
		if hasLen || s.has("format") {
			return nil, schemaError(pv, "pattern combined with minLength, maxLength or format is not supported")
		}
		e, err := patternExpr(pv.str, c.b)
		if err != nil {
			return nil, schemaError(pv, "%v", err)
		}
		return e, nil
	}
	if fv := s.get("format"); fv != nil {
		if fv.kind != kindString {
			return nil, schemaError(fv, "format must be a string")
		}
		var rule string
		switch fv.str {
		case "date":
			rule = "date-string"
		case "time":
			rule = "time-string"
		case "date-time":
			rule = "date-time-string"
		case "uuid":
			rule = "uuid-string"
		}
		if rule != "" {
			if hasLen {
				return nil, schemaError(fv, "format %q combined with minLength or maxLength is not supported", fv.str)
			}
			return c.b.builtin(rule), nil
		}
		// Other formats are annotations (JSON Schema 2020-12, format-annotation).
	}
	if lo == 0 && hi < 0 {
		return c.b.builtin("string"), nil
	}
	return seq(lit(`"`), rep(c.b.builtin("char"), lo, hi), lit(`"`), c.b.builtin("space")), nil
}

func (c *converter) array(s *value, name string) (*expr, error) {
	lo, hi, err := bounds(s, "minItems", "maxItems")
	if err != nil {
		return nil, err
	}
	var prefix []*value
	items := s.get("items")
	if pv := s.get("prefixItems"); pv != nil {
		if pv.kind != kindArray {
			return nil, schemaError(pv, "prefixItems must be an array of schemas")
		}
		prefix = pv.arr
	} else if items != nil && items.kind == kindArray { // draft 4-7 tuple form
		prefix, items = items.arr, nil
	}
	// Items after the prefix: absent means none when there is a prefix,
	// anything otherwise.
	var item *expr
	switch {
	case items == nil && len(prefix) > 0:
	case items == nil || (items.kind == kindBool && items.boolean):
		item = c.b.builtin("value")
	case items.kind == kindBool:
	default:
		if item, err = c.visitNamed(items, altName(name, "item")); err != nil {
			return nil, err
		}
	}
	k := len(prefix)
	if hi >= 0 && hi < k {
		k = hi // the tuple is cut short by maxItems
	}
	if item == nil {
		if lo > k {
			return nil, schemaError(s, "minItems is larger than the number of items allowed")
		}
		hi = k
	}
	space := c.b.builtin("space")
	comma := seq(lit(","), space)
	parts := []*expr{lit("["), space}
	for i := 0; i < k; i++ {
		e, err := c.visitNamed(prefix[i], altName(name, strconv.Itoa(i)))
		if err != nil {
			return nil, err
		}
		if i > 0 {
			parts = append(parts, comma)
		}
		parts = append(parts, e)
	}
	// Extra items after the k prefix items.
	xlo, xhi := max(lo-k, 0), -1
	if hi >= 0 {
		xhi = hi - k
	}
	if item != nil && xhi != 0 {
		if k > 0 {
			parts = append(parts, rep(seq(comma, item), xlo, xhi))
		} else {
			restHi := -1
			if xhi > 0 {
				restHi = xhi - 1
			}
			list := seq(item, rep(seq(comma, item), max(xlo-1, 0), restHi))
			if xlo == 0 {
				list = opt(list)
			}
			parts = append(parts, list)
		}
	}
	return seq(append(parts, lit("]"), space)...), nil
}

func (c *converter) object(s *value, name string) (*expr, error) {
	pv := s.get("properties")
	if pv != nil && pv.kind != kindObject {
		return nil, schemaError(pv, "properties must be an object")
	}
	var required []string
	if rv := s.get("required"); rv != nil {
		if rv.kind != kindArray {
			return nil, schemaError(rv, "required must be an array of strings")
		}
		for _, r := range rv.arr {
			if r.kind != kindString {
				return nil, schemaError(r, "required must be an array of strings")
			}
			if pv.get(r.str) == nil {
				return nil, schemaError(r, "required property %q is not declared in properties", r.str)
			}
			required = append(required, r.str)
		}
	}
	if uv := s.get("unevaluatedProperties"); uv != nil && !(uv.kind == kindBool && !uv.boolean) {
		return nil, schemaError(uv, "only unevaluatedProperties: false is supported")
	}
	av := s.get("additionalProperties")
	if pv == nil && av == nil && len(required) == 0 {
		return c.b.builtin("object"), nil
	}
	space := c.b.builtin("space")

	// The key-value items, in schema order.
	type item struct {
		kv       *expr
		required bool
		extra    bool
		name     string
	}
	var items []item
	var declared []string
	for _, m := range pv.objMembers() {
		declared = append(declared, m.key)
		req := slices.Contains(required, m.key)
		if m.val.kind == kindBool && !m.val.boolean {
			if req {
				return nil, schemaError(m.val, "required property %q has schema false", m.key)
			}
			continue // the property can never appear
		}
		ve, err := c.visitNamed(m.val, childName(name, m.key))
		if err != nil {
			return nil, err
		}
		kv := seq(lit(jsonString(m.key)), space, lit(":"), space, ve)
		items = append(items, item{kv: kv, required: req, name: m.key})
	}
	if av != nil && !(av.kind == kindBool && !av.boolean) {
		var ve *expr
		if av.kind == kindBool {
			ve = c.b.builtin("value")
		} else {
			var err error
			if ve, err = c.visitNamed(av, altName(name, "additional")); err != nil {
				return nil, err
			}
		}
		key := c.keyNotIn(declared, name)
		items = append(items, item{kv: seq(key, lit(":"), space, ve), extra: true, name: "additional"})
	}

	comma := seq(lit(","), space)
	n := len(items)
	firstReq := n
	for i, it := range items {
		if it.required {
			firstReq = i
			break
		}
	}
	// tail[k] matches items k.. when an item was already written (so each
	// starts with a comma). Tails that are used twice get their own rule.
	tail := make([]*expr, n+1)
	tail[n] = empty()
	for k := n - 1; k >= 0; k-- {
		it := items[k]
		var part *expr
		switch {
		case it.extra:
			part = rep(seq(comma, it.kv), 0, -1)
		case it.required:
			part = seq(comma, it.kv)
		default:
			part = opt(seq(comma, it.kv))
		}
		tail[k] = seq(part, tail[k+1])
		if k >= 2 && k <= firstReq+1 && !tail[k].isEmpty() && tail[k].kind != eRef {
			tail[k] = c.b.add(childName(name, it.name+"-rest"), s.ptr, tail[k])
		}
	}
	// The first written item is any item up to and including the first
	// required one; with no required items the object may be empty.
	var firsts []*expr
	for k := 0; k < n && k <= firstReq; k++ {
		it := items[k]
		if it.extra {
			firsts = append(firsts, seq(it.kv, rep(seq(comma, it.kv), 0, -1)))
		} else {
			firsts = append(firsts, seq(it.kv, tail[k+1]))
		}
	}
	if firstReq == n {
		firsts = append(firsts, empty())
	}
	return seq(lit("{"), space, alt(firsts...), lit("}"), space), nil
}

func (v *value) objMembers() []member {
	if v == nil {
		return nil
	}
	return v.obj
}

// keyNotIn matches an object key (with trailing whitespace) other than the
// declared ones, so that additional properties cannot repeat them. Names
// that need escaping in JSON fall back to any string.
func (c *converter) keyNotIn(declared []string, name string) *expr {
	if len(declared) == 0 {
		return c.b.builtin("string")
	}
	for _, d := range declared {
		if jsonString(d) != `"`+d+`"` {
			return c.b.builtin("string")
		}
	}
	root := &trieNode{}
	for _, d := range declared {
		root.insert(d)
	}
	char := c.b.builtin("char")
	quote := lit(`"`)
	var visit func(t *trieNode) *expr
	visit = func(t *trieNode) *expr {
		var alts []*expr
		if !t.end {
			alts = append(alts, quote)
		}
		if len(t.next) == 0 {
			alts = append(alts, seq(rep(char, 1, -1), quote))
		} else {
			var cls strings.Builder
			cls.WriteString(`[^"\\\x7F\x00-\x1F`)
			for _, r := range t.order {
				cls.WriteString(classChar(r))
				alts = append(alts, seq(lit(string(r)), visit(t.next[r])))
			}
			cls.WriteString("]")
			alts = append(alts, seq(alt(class(cls.String()), c.b.builtin("char-escape")), rep(char, 0, -1), quote))
		}
		return alt(alts...)
	}
	body := seq(quote, visit(root), c.b.builtin("space"))
	return c.b.add(childName(name, "additional-key"), "", body)
}

type trieNode struct {
	end   bool
	next  map[rune]*trieNode
	order []rune
}

func (t *trieNode) insert(s string) {
	for _, r := range s {
		if t.next == nil {
			t.next = map[rune]*trieNode{}
		}
		n, ok := t.next[r]
		if !ok {
			n = &trieNode{}
			t.next[r] = n
			t.order = append(t.order, r)
		}
		t = n
	}
	t.end = true
}
