package grammar

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file holds a small GBNF syntax tree, its rendering to the text format
// llama.cpp parses (src/llama-grammar.cpp), and the checks run on the finished
// grammar: no left recursion (llama.cpp refuses it) and every rule able to
// derive a finite string (otherwise generation could never complete).

type exprKind int

const (
	eLit   exprKind = iota // literal text
	eClass                 // character class, stored as rendered text ("[0-9]")
	eRef                   // rule reference
	eSeq                   // concatenation
	eAlt                   // alternation
	eRep                   // bounded or unbounded repetition
)

// expr is a GBNF expression.
type expr struct {
	kind exprKind
	text string // eLit: the literal; eClass: rendered class; eRef: rule name
	subs []*expr
	min  int
	max  int // eRep: -1 for unbounded
}

// maxRepetition is llama.cpp's MAX_REPETITION_THRESHOLD: larger {m,n} bounds
// make its grammar parser fail.
const maxRepetition = 2000

func lit(s string) *expr   { return &expr{kind: eLit, text: s} }
func class(s string) *expr { return &expr{kind: eClass, text: s} }
func ref(s string) *expr   { return &expr{kind: eRef, text: s} }

// empty matches the empty string.
func empty() *expr { return &expr{kind: eSeq} }

func (e *expr) isEmpty() bool {
	return (e.kind == eSeq && len(e.subs) == 0) || (e.kind == eLit && e.text == "")
}

// seq concatenates, flattening nested sequences and merging adjacent literals.
func seq(xs ...*expr) *expr {
	out := &expr{kind: eSeq}
	var add func(x *expr)
	add = func(x *expr) {
		if x.isEmpty() {
			return
		}
		if x.kind == eSeq {
			for _, s := range x.subs {
				add(s)
			}
			return
		}
		if n := len(out.subs); x.kind == eLit && n > 0 && out.subs[n-1].kind == eLit {
			out.subs[n-1] = lit(out.subs[n-1].text + x.text)
			return
		}
		out.subs = append(out.subs, x)
	}
	for _, x := range xs {
		add(x)
	}
	if len(out.subs) == 1 {
		return out.subs[0]
	}
	return out
}

// alt builds an alternation. Nested alternations are flattened, duplicates
// dropped, and an empty alternative turns the rest into an optional group.
func alt(xs ...*expr) *expr {
	out := &expr{kind: eAlt}
	seen := map[string]bool{}
	hasEmpty := false
	var add func(x *expr)
	add = func(x *expr) {
		if x.isEmpty() {
			hasEmpty = true
			return
		}
		if x.kind == eAlt {
			for _, s := range x.subs {
				add(s)
			}
			return
		}
		k := x.render()
		if seen[k] {
			return
		}
		seen[k] = true
		out.subs = append(out.subs, x)
	}
	for _, x := range xs {
		add(x)
	}
	var res *expr
	switch len(out.subs) {
	case 0:
		return empty()
	case 1:
		res = out.subs[0]
	default:
		res = out
	}
	if hasEmpty {
		return rep(res, 0, 1)
	}
	return res
}

// rep repeats x between lo and hi times (hi < 0: unbounded).
func rep(x *expr, lo, hi int) *expr {
	if x.isEmpty() || hi == 0 {
		return empty()
	}
	if lo == 1 && hi == 1 {
		return x
	}
	if x.kind == eRep && x.min == 0 && x.max == 1 && lo == 0 && hi == 1 {
		return x // (x?)? == x?
	}
	return &expr{kind: eRep, subs: []*expr{x}, min: lo, max: hi}
}

func opt(x *expr) *expr { return rep(x, 0, 1) }

// render writes the expression in GBNF syntax.
func (e *expr) render() string {
	var b strings.Builder
	e.write(&b)
	return b.String()
}

func (e *expr) write(b *strings.Builder) {
	switch e.kind {
	case eLit:
		b.WriteString(quoteLiteral(e.text))
	case eClass, eRef:
		b.WriteString(e.text)
	case eSeq:
		if len(e.subs) == 0 {
			b.WriteString(`""`)
			return
		}
		for i, s := range e.subs {
			if i > 0 {
				b.WriteByte(' ')
			}
			if s.kind == eAlt {
				b.WriteString("(")
				s.write(b)
				b.WriteString(")")
			} else {
				s.write(b)
			}
		}
	case eAlt:
		for i, s := range e.subs {
			if i > 0 {
				b.WriteString(" | ")
			}
			s.write(b)
		}
	case eRep:
		s := e.subs[0]
		if s.kind == eSeq || s.kind == eAlt || s.kind == eRep {
			b.WriteString("(")
			s.write(b)
			b.WriteString(")")
		} else {
			s.write(b)
		}
		switch {
		case e.min == 0 && e.max == 1:
			b.WriteString("?")
		case e.min == 0 && e.max < 0:
			b.WriteString("*")
		case e.min == 1 && e.max < 0:
			b.WriteString("+")
		case e.min == e.max:
			fmt.Fprintf(b, "{%d}", e.min)
		case e.max < 0:
			fmt.Fprintf(b, "{%d,}", e.min)
		default:
			fmt.Fprintf(b, "{%d,%d}", e.min, e.max)
		}
	}
}

// quoteLiteral renders s as a GBNF string literal.
func quoteLiteral(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02X`, r)
		case r == utf8.RuneError:
			b.WriteString(`\uFFFD`)
		case r >= 0x80 && r <= 0x9f, r == 0x2028, r == 0x2029, r == 0xfeff:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// classChar renders one character for use inside a GBNF character class.
func classChar(r rune) string {
	switch {
	case r >= 0x21 && r < 0x7f && !strings.ContainsRune(`[]\^-"`, r):
		return string(r)
	case r <= 0xff:
		return fmt.Sprintf(`\x%02X`, r)
	case r <= 0xffff:
		return fmt.Sprintf(`\u%04X`, r)
	default:
		return fmt.Sprintf(`\U%08X`, r)
	}
}

// rule is one named production. Built-in rules are kept as text; the
// analysis treats them as productive, non-recursive leaves (only "space"
// can match the empty string).
type rule struct {
	name    string
	body    *expr  // nil for built-ins and reserved (not yet defined) rules
	text    string // built-in body text
	ptr     string // schema location, for error messages
	builtin bool
	defined bool
}

// builder accumulates rules in definition order.
type builder struct {
	rules  []*rule
	byName map[string]*rule
	byBody map[string]string // rendered body -> rule name, to share rules
}

func newBuilder() *builder {
	return &builder{byName: map[string]*rule{}, byBody: map[string]string{}}
}

var invalidNameChars = regexp.MustCompile(`[^a-zA-Z0-9-]+`)

// maxNameLen keeps derived rule names readable.
const maxNameLen = 48

func sanitizeName(s string) string {
	s = strings.Trim(invalidNameChars.ReplaceAllString(s, "-"), "-")
	if len(s) > maxNameLen {
		s = strings.TrimRight(s[:maxNameLen], "-")
	}
	if s == "" {
		s = "x"
	}
	return s
}

// freshName returns a rule name derived from base that is not yet taken.
func (b *builder) freshName(base string) string {
	base = sanitizeName(base)
	if _, ok := b.byName[base]; !ok && !builtinNames[base] {
		return base
	}
	for i := 1; ; i++ {
		n := base + "-" + strconv.Itoa(i)
		if _, ok := b.byName[n]; !ok && !builtinNames[n] {
			return n
		}
	}
}

// reserve claims a name whose body is supplied later with define; used for
// $ref targets so that recursive references can point at them.
func (b *builder) reserve(base, ptr string) string {
	n := b.freshName(base)
	r := &rule{name: n, ptr: ptr}
	b.rules = append(b.rules, r)
	b.byName[n] = r
	return n
}

// reserveRoot claims the start rule, so that "$ref": "#" can point at it.
func (b *builder) reserveRoot() {
	r := &rule{name: "root"}
	b.rules = append(b.rules, r)
	b.byName["root"] = r
}

// defineRoot sets the body of the start rule.
func (b *builder) defineRoot(body *expr) { b.define("root", body) }

func (b *builder) define(name string, body *expr) {
	r := b.byName[name]
	r.body = body
	r.defined = true
	k := body.render()
	if _, ok := b.byBody[k]; !ok {
		b.byBody[k] = name
	}
}

// add registers a rule for body under a name derived from base, reusing an
// existing rule with the same body.
func (b *builder) add(base, ptr string, body *expr) *expr {
	k := body.render()
	if n, ok := b.byBody[k]; ok {
		return ref(n)
	}
	n := b.reserve(base, ptr)
	b.define(n, body)
	return ref(n)
}

// builtin references a built-in rule, adding it and its dependencies.
func (b *builder) builtin(name string) *expr {
	if _, ok := b.byName[name]; !ok {
		def, ok := builtinRules[name]
		if !ok {
			panic("grammar: unknown built-in rule " + name)
		}
		r := &rule{name: name, text: def.text, builtin: true, defined: true}
		b.byName[name] = r
		for _, d := range def.deps {
			b.builtin(d)
		}
		b.rules = append(b.rules, r)
	}
	return ref(name)
}

// render writes the grammar, root first.
func (b *builder) render() string {
	var out strings.Builder
	write := func(r *rule) {
		out.WriteString(r.name)
		out.WriteString(" ::= ")
		if r.builtin {
			out.WriteString(r.text)
		} else {
			out.WriteString(r.body.render())
		}
		out.WriteByte('\n')
	}
	if r, ok := b.byName["root"]; ok {
		write(r)
	}
	var builtins []*rule
	for _, r := range b.rules {
		switch {
		case r.name == "root":
		case r.builtin:
			builtins = append(builtins, r)
		default:
			write(r)
		}
	}
	for _, r := range builtins {
		write(r)
	}
	return out.String()
}

// check verifies that the grammar has no left recursion and that every rule
// derives at least one finite string.
func (b *builder) check() error {
	nullable := map[string]bool{"space": true}
	productive := map[string]bool{}
	for _, r := range b.rules {
		if r.builtin {
			productive[r.name] = true
		}
	}
	// Fixpoints over the schema rules.
	for changed := true; changed; {
		changed = false
		for _, r := range b.rules {
			if r.builtin {
				continue
			}
			if !nullable[r.name] && r.body.nullable(nullable) {
				nullable[r.name] = true
				changed = true
			}
			if !productive[r.name] && r.body.productive(productive) {
				productive[r.name] = true
				changed = true
			}
		}
	}
	// llama.cpp rewrites S* into S' ::= S S' | which is left recursive when
	// S can be empty.
	for _, r := range b.rules {
		if !r.builtin && r.body.emptyLoop(nullable) {
			return fmt.Errorf("grammar: schema at %s: repetition of a part that can be empty", orRoot(r.ptr))
		}
	}
	// Left recursion: a cycle in the "may start with" graph.
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var visit func(r *rule) error
	visit = func(r *rule) error {
		color[r.name] = grey
		for _, n := range r.body.leftRefs(nullable, nil) {
			d := b.byName[n]
			if d == nil || d.builtin {
				continue
			}
			switch color[n] {
			case grey:
				return fmt.Errorf("grammar: schema at %s: recursive $ref that consumes no input (left recursion)", orRoot(d.ptr))
			case white:
				if err := visit(d); err != nil {
					return err
				}
			}
		}
		color[r.name] = black
		return nil
	}
	for _, r := range b.rules {
		if !r.builtin && color[r.name] == white {
			if err := visit(r); err != nil {
				return err
			}
		}
	}
	// Report the innermost unproductive rule: the root comes last.
	for _, r := range slices.Concat(b.rules[1:], b.rules[:1]) {
		if !productive[r.name] {
			return fmt.Errorf("grammar: schema at %s: schema has no finite instance (recursion without a way out)", orRoot(r.ptr))
		}
	}
	return nil
}

func (e *expr) nullable(n map[string]bool) bool {
	switch e.kind {
	case eLit:
		return e.text == ""
	case eClass:
		return false
	case eRef:
		return n[e.text]
	case eSeq:
		for _, s := range e.subs {
			if !s.nullable(n) {
				return false
			}
		}
		return true
	case eAlt:
		for _, s := range e.subs {
			if s.nullable(n) {
				return true
			}
		}
		return false
	default:
		return e.min == 0 || e.subs[0].nullable(n)
	}
}

// emptyLoop reports an unbounded repetition of a nullable expression.
func (e *expr) emptyLoop(n map[string]bool) bool {
	if e.kind == eRep && e.max < 0 && e.subs[0].nullable(n) {
		return true
	}
	for _, s := range e.subs {
		if s.emptyLoop(n) {
			return true
		}
	}
	return false
}

func (e *expr) productive(p map[string]bool) bool {
	switch e.kind {
	case eLit, eClass:
		return true
	case eRef:
		return p[e.text]
	case eSeq:
		for _, s := range e.subs {
			if !s.productive(p) {
				return false
			}
		}
		return true
	case eAlt:
		for _, s := range e.subs {
			if s.productive(p) {
				return true
			}
		}
		return false
	default:
		return e.min == 0 || e.subs[0].productive(p)
	}
}

// leftRefs appends the rules that can be expanded before any character is
// consumed by e.
func (e *expr) leftRefs(n map[string]bool, acc []string) []string {
	switch e.kind {
	case eRef:
		return append(acc, e.text)
	case eSeq:
		for _, s := range e.subs {
			acc = s.leftRefs(n, acc)
			if !s.nullable(n) {
				break
			}
		}
	case eAlt:
		for _, s := range e.subs {
			acc = s.leftRefs(n, acc)
		}
	case eRep:
		acc = e.subs[0].leftRefs(n, acc)
	}
	return acc
}

type builtinRule struct {
	text string
	deps []string
}

// builtinRules are the fixed rules shared by all grammars. Every value rule
// ends with "space"; whitespace is bounded so that a model cannot emit it
// forever.
var builtinRules = map[string]builtinRule{
	"space":            {text: `| " " | "\n" [ \t]{0,20}`},
	"value":            {text: `object | array | string | number | boolean | null`, deps: []string{"object", "array", "string", "number", "boolean", "null"}},
	"object":           {text: `"{" space (string ":" space value ("," space string ":" space value)*)? "}" space`, deps: []string{"space", "string", "value"}},
	"array":            {text: `"[" space (value ("," space value)*)? "]" space`, deps: []string{"space", "value"}},
	"string":           {text: `"\"" char* "\"" space`, deps: []string{"char", "space"}},
	"char":             {text: `[^"\\\x7F\x00-\x1F] | char-escape`, deps: []string{"char-escape"}},
	"char-escape":      {text: `"\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})`},
	"number":           {text: `"-"? integral-part ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? space`, deps: []string{"integral-part", "space"}},
	"integer":          {text: `"-"? integral-part space`, deps: []string{"integral-part", "space"}},
	"integral-part":    {text: `"0" | [1-9] [0-9]{0,15}`},
	"boolean":          {text: `("true" | "false") space`, deps: []string{"space"}},
	"null":             {text: `"null" space`, deps: []string{"space"}},
	"date":             {text: `[0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])`},
	"time":             {text: `([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])`},
	"date-string":      {text: `"\"" date "\"" space`, deps: []string{"date", "space"}},
	"time-string":      {text: `"\"" time "\"" space`, deps: []string{"time", "space"}},
	"date-time-string": {text: `"\"" date "T" time "\"" space`, deps: []string{"date", "time", "space"}},
	"uuid-string":      {text: `"\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"" space`, deps: []string{"space"}},
}

// builtinNames are never used for derived rule names ("root" is set apart
// for the start rule).
var builtinNames = func() map[string]bool {
	m := map[string]bool{"root": true}
	for k := range builtinRules {
		m[k] = true
	}
	return m
}()
