package grammar

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is a test-only GBNF implementation: a parser that follows
// llama.cpp's src/llama-grammar.cpp closely (same syntax, same rewriting of
// repetitions into helper rules, same checks for undefined rules and left
// recursion), and a memoising recogniser that decides whether a whole string
// is in the language of the "root" rule. If a grammar parses here, llama.cpp
// accepts its syntax too.

// maxRepetitionThreshold mirrors MAX_REPETITION_THRESHOLD.
const maxRepetitionThreshold = 2000

type elemKind int

const (
	elemChar elemKind = iota // a character set (class, literal char, or .)
	elemRef
)

type runeRange struct{ lo, hi rune }

type elem struct {
	kind   elemKind
	neg    bool
	any    bool
	ranges []runeRange
	ref    int
}

func (e elem) match(r rune) bool {
	if e.any {
		return true
	}
	in := false
	for _, rg := range e.ranges {
		if rg.lo <= r && r <= rg.hi {
			in = true
			break
		}
	}
	return in != e.neg
}

// gbnf is a parsed grammar: rules[i] is a list of alternatives.
type gbnf struct {
	rules [][][]elem
	names []string
	ids   map[string]int
}

type gbnfParser struct {
	src string
	pos int
	g   *gbnf
	// defined records which symbols have a rule.
	defined map[int]bool
}

func parseGBNF(src string) (g *gbnf, err error) {
	p := &gbnfParser{src: src, g: &gbnf{ids: map[string]int{}}, defined: map[int]bool{}}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(parseError)
			if !ok {
				panic(r)
			}
			g, err = nil, pe
		}
	}()
	p.space(true)
	for p.pos < len(p.src) {
		p.rule()
	}
	for id, name := range p.g.names {
		if !p.defined[id] {
			return nil, fmt.Errorf("undefined rule identifier %q", name)
		}
	}
	if _, ok := p.g.ids["root"]; !ok {
		return nil, errors.New(`grammar does not contain a "root" symbol`)
	}
	if err := p.g.checkLeftRecursion(); err != nil {
		return nil, err
	}
	return p.g, nil
}

type parseError struct{ msg string }

func (e parseError) Error() string { return e.msg }

func (p *gbnfParser) fail(format string, args ...any) {
	rest := p.src[p.pos:]
	if len(rest) > 30 {
		rest = rest[:30]
	}
	panic(parseError{fmt.Sprintf(format, args...) + fmt.Sprintf(" at %d (%q)", p.pos, rest)})
}

func (p *gbnfParser) peek(off int) byte {
	if p.pos+off < len(p.src) {
		return p.src[p.pos+off]
	}
	return 0
}

// space skips blanks and comments; newlines only when newlineOK.
func (p *gbnfParser) space(newlineOK bool) {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\r' && p.src[p.pos] != '\n' {
				p.pos++
			}
		case newlineOK && (c == '\r' || c == '\n'):
			p.pos++
		default:
			return
		}
	}
}

func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func (p *gbnfParser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isWordChar(p.src[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		p.fail("expecting name")
	}
	return p.src[start:p.pos]
}

func (p *gbnfParser) symbol(name string) int {
	if id, ok := p.g.ids[name]; ok {
		return id
	}
	id := len(p.g.names)
	p.g.ids[name] = id
	p.g.names = append(p.g.names, name)
	p.g.rules = append(p.g.rules, nil)
	return id
}

func (p *gbnfParser) generated(base string) int {
	id := len(p.g.names)
	name := base + "_" + strconv.Itoa(id)
	p.g.ids[name] = id
	p.g.names = append(p.g.names, name)
	p.g.rules = append(p.g.rules, nil)
	return id
}

func (p *gbnfParser) addRule(id int, alts [][]elem) {
	p.g.rules[id] = alts
	p.defined[id] = true
}

func (p *gbnfParser) hex(n int) rune {
	if p.pos+n > len(p.src) {
		p.fail("expecting %d hex chars", n)
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
	if err != nil {
		p.fail("expecting %d hex chars", n)
	}
	p.pos += n
	return rune(v)
}

// char parses one (possibly escaped) character, as llama.cpp's parse_char.
func (p *gbnfParser) char() rune {
	if p.pos >= len(p.src) {
		p.fail("unexpected end of input")
	}
	if p.src[p.pos] == '\\' {
		c := p.peek(1)
		p.pos += 2
		switch c {
		case 'x':
			return p.hex(2)
		case 'u':
			return p.hex(4)
		case 'U':
			return p.hex(8)
		case 't':
			return '\t'
		case 'r':
			return '\r'
		case 'n':
			return '\n'
		case '\\', '"', '[', ']':
			return rune(c)
		}
		p.pos -= 2
		p.fail("unknown escape")
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return r
}

func (p *gbnfParser) integer() int {
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	if p.pos == start {
		p.fail("expecting an int")
	}
	n, err := strconv.Atoi(p.src[start:p.pos])
	if err != nil {
		p.fail("bad int")
	}
	return n
}

func (p *gbnfParser) rule() {
	name := p.name()
	p.space(false)
	id := p.symbol(name)
	if !strings.HasPrefix(p.src[p.pos:], "::=") {
		p.fail("expecting ::=")
	}
	p.pos += 3
	p.space(true)
	p.alternates(name, id, false)
	switch {
	case p.peek(0) == '\r':
		p.pos++
		if p.peek(0) == '\n' {
			p.pos++
		}
	case p.peek(0) == '\n':
		p.pos++
	case p.pos < len(p.src):
		p.fail("expecting newline or end")
	}
	p.space(true)
}

func (p *gbnfParser) alternates(name string, id int, nested bool) {
	var alts [][]elem
	alts = append(alts, p.sequence(name, nested))
	for p.peek(0) == '|' {
		p.pos++
		p.space(true)
		alts = append(alts, p.sequence(name, nested))
	}
	p.addRule(id, alts)
}

func (p *gbnfParser) sequence(name string, nested bool) []elem {
	var seq []elem
	lastStart := 0
	repeat := func(min, max int) { // max < 0: unbounded
		if lastStart == len(seq) {
			p.fail("expecting preceding item to */+/?/{")
		}
		prev := slices.Clone(seq[lastStart:])
		if min == 0 {
			seq = seq[:lastStart]
		} else {
			for i := 1; i < min; i++ {
				seq = append(seq, prev...)
			}
		}
		nOpt := 1
		if max >= 0 {
			nOpt = max - min
		}
		lastRec := -1
		for i := 0; i < nOpt; i++ {
			recID := p.generated(name)
			body := slices.Clone(prev)
			if max < 0 {
				body = append(body, elem{kind: elemRef, ref: recID})
			} else if i > 0 {
				body = append(body, elem{kind: elemRef, ref: lastRec})
			}
			p.addRule(recID, [][]elem{body, nil})
			lastRec = recID
		}
		if nOpt > 0 {
			seq = append(seq, elem{kind: elemRef, ref: lastRec})
		}
	}
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			lastStart = len(seq)
			for p.peek(0) != '"' {
				if p.pos >= len(p.src) {
					p.fail("unexpected end of input")
				}
				r := p.char()
				seq = append(seq, elem{kind: elemChar, ranges: []runeRange{{r, r}}})
			}
			p.pos++
			p.space(nested)
		case c == '[':
			p.pos++
			e := elem{kind: elemChar}
			if p.peek(0) == '^' {
				p.pos++
				e.neg = true
			}
			for p.peek(0) != ']' {
				if p.pos >= len(p.src) {
					p.fail("unexpected end of input")
				}
				lo := p.char()
				hi := lo
				if p.peek(0) == '-' && p.peek(1) != ']' {
					if p.pos+1 >= len(p.src) {
						p.fail("unexpected end of input")
					}
					p.pos++
					hi = p.char()
				}
				e.ranges = append(e.ranges, runeRange{lo, hi})
			}
			p.pos++
			lastStart = len(seq)
			seq = append(seq, e)
			p.space(nested)
		case c == '<' || c == '!':
			p.fail("token syntax is not supported by this test parser")
		case isWordChar(c):
			n := p.name()
			ref := p.symbol(n)
			p.space(nested)
			lastStart = len(seq)
			seq = append(seq, elem{kind: elemRef, ref: ref})
		case c == '(':
			p.pos++
			p.space(true)
			sub := p.generated(name)
			p.alternates(name, sub, true)
			lastStart = len(seq)
			seq = append(seq, elem{kind: elemRef, ref: sub})
			if p.peek(0) != ')' {
				p.fail("expecting ')'")
			}
			p.pos++
			p.space(nested)
		case c == '.':
			lastStart = len(seq)
			seq = append(seq, elem{kind: elemChar, any: true})
			p.pos++
			p.space(nested)
		case c == '*':
			p.pos++
			p.space(nested)
			repeat(0, -1)
		case c == '+':
			p.pos++
			p.space(nested)
			repeat(1, -1)
		case c == '?':
			p.pos++
			p.space(nested)
			repeat(0, 1)
		case c == '{':
			p.pos++
			p.space(nested)
			min := p.integer()
			p.space(nested)
			max := -1
			switch p.peek(0) {
			case '}':
				max = min
				p.pos++
				p.space(nested)
			case ',':
				p.pos++
				p.space(nested)
				if c := p.peek(0); c >= '0' && c <= '9' {
					max = p.integer()
					p.space(nested)
				}
				if p.peek(0) != '}' {
					p.fail("expecting '}'")
				}
				p.pos++
				p.space(nested)
			default:
				p.fail("expecting ','")
			}
			if min > maxRepetitionThreshold || max > maxRepetitionThreshold {
				p.fail("number of repetitions exceeds sane defaults")
			}
			if max >= 0 && max < min {
				// llama.cpp silently produces a broken rule here; treat it
				// as an error.
				p.fail("max repetitions below min")
			}
			repeat(min, max)
		default:
			return seq
		}
	}
	return seq
}

// checkLeftRecursion follows llama_grammar_detect_left_recursion.
func (g *gbnf) checkLeftRecursion() error {
	n := len(g.rules)
	visited := make([]bool, n)
	inProgress := make([]bool, n)
	mayBeEmpty := make([]bool, n)
	var detect func(i int) bool
	detect = func(i int) bool {
		if inProgress[i] {
			return true
		}
		inProgress[i] = true
		for _, a := range g.rules[i] {
			if len(a) == 0 {
				mayBeEmpty[i] = true
			}
		}
		for _, a := range g.rules[i] {
			for _, e := range a {
				if e.kind != elemRef {
					break
				}
				if detect(e.ref) {
					return true
				}
				if !mayBeEmpty[e.ref] {
					break
				}
			}
		}
		inProgress[i] = false
		visited[i] = true
		return false
	}
	for i := range g.rules {
		if visited[i] {
			continue
		}
		if detect(i) {
			return fmt.Errorf("left recursion detected for nonterminal %q", g.names[i])
		}
	}
	return nil
}

// recognizer decides membership of whole strings.
type recognizer struct {
	g     *gbnf
	in    []rune
	memo  map[[2]int][]int
	busy  map[[2]int]bool
	steps int
}

// accepts reports whether s is in the language of rule "root".
func (g *gbnf) accepts(s string) bool {
	r := &recognizer{g: g, in: []rune(s), memo: map[[2]int][]int{}, busy: map[[2]int]bool{}}
	return slices.Contains(r.ends(g.ids["root"], 0), len(r.in))
}

// ends returns the sorted positions where a match of rule id starting at pos
// can end.
func (r *recognizer) ends(id, pos int) []int {
	key := [2]int{id, pos}
	if e, ok := r.memo[key]; ok {
		return e
	}
	if r.busy[key] {
		panic("left recursion reached in recogniser")
	}
	r.busy[key] = true
	var out []int
	for _, alt := range r.g.rules[id] {
		cur := []int{pos}
		for _, e := range alt {
			var next []int
			for _, p := range cur {
				if e.kind == elemChar {
					if p < len(r.in) && e.match(r.in[p]) {
						next = append(next, p+1)
					}
				} else {
					next = append(next, r.ends(e.ref, p)...)
				}
			}
			slices.Sort(next)
			cur = slices.Compact(next)
			if len(cur) == 0 {
				break
			}
		}
		out = append(out, cur...)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	delete(r.busy, key)
	r.memo[key] = out
	return out
}

// generate produces a random string from the language of root, preferring
// short derivations once depth grows. ok is false when it gave up.
func (g *gbnf) generate(rng *rand.Rand) (string, bool) {
	var b strings.Builder
	budget := 20000
	var gen func(id, depth int) bool
	gen = func(id, depth int) bool {
		budget--
		if budget < 0 {
			return false
		}
		alts := g.rules[id]
		i := rng.IntN(len(alts))
		if depth > 12 {
			// Prefer an empty alternative, then the shortest one.
			i = 0
			for j, a := range alts {
				if len(a) < len(alts[i]) {
					i = j
				}
			}
		}
		for _, e := range alts[i] {
			if e.kind == elemRef {
				if !gen(e.ref, depth+1) {
					return false
				}
				continue
			}
			b.WriteRune(pickRune(rng, e))
		}
		return true
	}
	ok := gen(g.ids["root"], 0)
	return b.String(), ok
}

// pickRune returns a random character matched by e.
func pickRune(rng *rand.Rand, e elem) rune {
	for {
		var r rune
		switch {
		case e.any || e.neg || len(e.ranges) == 0:
			pool := []rune("aZ09 _-\"\\/\n\té€😀\x01\x7f")
			r = pool[rng.IntN(len(pool))]
			if rng.IntN(4) == 0 && len(e.ranges) > 0 && !e.neg {
				rg := e.ranges[rng.IntN(len(e.ranges))]
				r = rg.lo
			}
		default:
			rg := e.ranges[rng.IntN(len(e.ranges))]
			r = rg.lo + rune(rng.IntN(int(min(rg.hi-rg.lo, 1000))+1))
		}
		if e.match(r) {
			return r
		}
	}
}
