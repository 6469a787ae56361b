package grammar

import (
	"slices"
)

// merger folds several schemas (allOf branches, $ref targets with sibling
// keywords) into a single schema object, keyword by keyword.
type merger struct {
	c      *converter
	out    *value
	refs   []string        // $refs inlined into out
	active map[string]bool // $refs being inlined right now (cycle check)
}

func (m *merger) add(s *value) error {
	m.c.steps++
	if m.c.steps > maxSteps {
		return schemaError(s, "schema too complex")
	}
	switch s.kind {
	case kindBool:
		if s.boolean {
			return nil
		}
		return schemaError(s, "allOf contains schema false, which admits no value")
	case kindObject:
	default:
		return schemaError(s, "schema must be an object or a boolean, got %s", s.kind)
	}
	if err := checkKeywords(s); err != nil {
		return err
	}
	for _, mem := range s.obj {
		switch {
		case mem.key == "allOf":
			if mem.val.kind != kindArray || len(mem.val.arr) == 0 {
				return schemaError(mem.val, "allOf must be a non-empty array of schemas")
			}
			for _, sub := range mem.val.arr {
				if err := m.add(sub); err != nil {
					return err
				}
			}
		case mem.key == "$ref":
			target, key, err := m.c.resolve(mem.val)
			if err != nil {
				return err
			}
			if m.active[key] || m.c.inlining[key] {
				return schemaError(mem.val, "recursive $ref %q combined with allOf or sibling keywords is not supported", mem.val.str)
			}
			m.active[key] = true
			m.refs = append(m.refs, key)
			err = m.add(target)
			delete(m.active, key)
			if err != nil {
				return err
			}
		case constraintKeywords[mem.key]:
			if err := m.set(mem.key, mem.val); err != nil {
				return err
			}
		}
	}
	return nil
}

// allOfValue is the schema {"allOf": [a, b]}.
func allOfValue(a, b *value) *value {
	return &value{kind: kindObject, ptr: a.ptr, obj: []member{
		{key: "allOf", val: &value{kind: kindArray, ptr: a.ptr, arr: []*value{a, b}}},
	}}
}

func (m *merger) put(key string, v *value) {
	for i := range m.out.obj {
		if m.out.obj[i].key == key {
			m.out.obj[i].val = v
			return
		}
	}
	m.out.obj = append(m.out.obj, member{key: key, val: v})
}

func (m *merger) set(key string, v *value) error {
	cur := m.out.get(key)
	if cur == nil {
		m.put(key, v)
		return nil
	}
	if cur.equal(v) {
		return nil
	}
	switch key {
	case "properties":
		if cur.kind != kindObject {
			return schemaError(cur, "properties must be an object")
		}
		if v.kind != kindObject {
			return schemaError(v, "properties must be an object")
		}
		merged := &value{kind: kindObject, ptr: cur.ptr, obj: slices.Clone(cur.obj)}
		for _, p := range v.obj {
			i := slices.IndexFunc(merged.obj, func(q member) bool { return q.key == p.key })
			switch {
			case i < 0:
				merged.obj = append(merged.obj, p)
			case !merged.obj[i].val.equal(p.val):
				merged.obj[i].val = allOfValue(merged.obj[i].val, p.val)
			}
		}
		m.put(key, merged)
	case "required":
		if cur.kind != kindArray {
			return schemaError(cur, "required must be an array of strings")
		}
		if v.kind != kindArray {
			return schemaError(v, "required must be an array of strings")
		}
		merged := &value{kind: kindArray, ptr: cur.ptr, arr: slices.Clone(cur.arr)}
		for _, r := range v.arr {
			if !slices.ContainsFunc(merged.arr, r.equal) {
				merged.arr = append(merged.arr, r)
			}
		}
		m.put(key, merged)
	case "type":
		a, err := schemaTypes(&value{kind: kindObject, obj: []member{{key: "type", val: cur}}})
		if err != nil {
			return err
		}
		b, err := schemaTypes(&value{kind: kindObject, obj: []member{{key: "type", val: v}}})
		if err != nil {
			return err
		}
		merged := &value{kind: kindArray, ptr: v.ptr}
		for _, t := range a {
			for _, u := range b {
				var r string
				switch {
				case t == u:
					r = t
				case t == "integer" && u == "number", t == "number" && u == "integer":
					r = "integer"
				}
				if r != "" && !slices.ContainsFunc(merged.arr, func(x *value) bool { return x.str == r }) {
					merged.arr = append(merged.arr, &value{kind: kindString, ptr: v.ptr, str: r})
				}
			}
		}
		if len(merged.arr) == 0 {
			return schemaError(v, "allOf combines incompatible types")
		}
		m.put(key, merged)
	case "enum":
		if cur.kind != kindArray {
			return schemaError(cur, "enum must be an array")
		}
		if v.kind != kindArray {
			return schemaError(v, "enum must be an array")
		}
		merged := &value{kind: kindArray, ptr: v.ptr}
		for _, x := range cur.arr {
			if slices.ContainsFunc(v.arr, x.equal) {
				merged.arr = append(merged.arr, x)
			}
		}
		if len(merged.arr) == 0 {
			return schemaError(v, "allOf combines enums with no value in common")
		}
		m.put(key, merged)
	case "additionalProperties", "items", "unevaluatedProperties":
		switch {
		case cur.kind == kindBool && !cur.boolean:
		case v.kind == kindBool && !v.boolean:
			m.put(key, v)
		case cur.kind == kindBool:
			m.put(key, v)
		case v.kind == kindBool:
		default:
			m.put(key, allOfValue(cur, v))
		}
	case "minLength", "minItems", "minimum", "exclusiveMinimum":
		return m.pick(key, cur, v, func(a, b float64) bool { return b > a })
	case "maxLength", "maxItems", "maximum", "exclusiveMaximum":
		return m.pick(key, cur, v, func(a, b float64) bool { return b < a })
	default:
		return schemaError(v, "conflicting values for %q in allOf", key)
	}
	return nil
}

// pick keeps the tighter of two numeric bounds.
func (m *merger) pick(key string, cur, v *value, better func(a, b float64) bool) error {
	if cur.kind != kindNumber {
		return schemaError(cur, "%s must be a number", key)
	}
	if v.kind != kindNumber {
		return schemaError(v, "%s must be a number", key)
	}
	a, err1 := cur.num.Float64()
	b, err2 := v.num.Float64()
	if err1 != nil || err2 != nil {
		return schemaError(v, "%s is out of range", key)
	}
	if better(a, b) {
		m.put(key, v)
	}
	return nil
}
