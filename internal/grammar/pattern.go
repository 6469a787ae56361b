package grammar

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode"
)

// patternExpr converts a string pattern into an expression that matches the
// JSON string literals (quotes and trailing whitespace included) whose
// decoded value matches the pattern. The pattern is parsed with Go's RE2
// syntax, which covers the regular-expression features commonly used in
// JSON Schema; lookaround and backreferences are rejected. As in JSON Schema
// the pattern is not anchored unless it starts with ^ or ends with $.
func patternExpr(pattern string, b *builder) (*expr, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("unsupported pattern %q: %v", pattern, err)
	}
	var parts []*syntax.Regexp
	if re.Op == syntax.OpConcat {
		parts = re.Sub
	} else {
		parts = []*syntax.Regexp{re}
	}
	anchoredStart, anchoredEnd := false, false
	if len(parts) > 0 && parts[0].Op == syntax.OpBeginText {
		anchoredStart, parts = true, parts[1:]
	}
	if len(parts) > 0 && parts[len(parts)-1].Op == syntax.OpEndText {
		anchoredEnd, parts = true, parts[:len(parts)-1]
	}
	pc := patternConverter{b: b}
	body := empty()
	for _, p := range parts {
		e, err := pc.conv(p)
		if err != nil {
			return nil, fmt.Errorf("unsupported pattern %q: %v", pattern, err)
		}
		body = seq(body, e)
	}
	if !anchoredStart {
		body = seq(rep(b.builtin("char"), 0, -1), body)
	}
	if !anchoredEnd {
		body = seq(body, rep(b.builtin("char"), 0, -1))
	}
	return seq(lit(`"`), body, lit(`"`), b.builtin("space")), nil
}

type patternConverter struct {
	b *builder
}

func (pc patternConverter) conv(re *syntax.Regexp) (*expr, error) {
	switch re.Op {
	case syntax.OpNoMatch:
		return nil, errors.New("it matches nothing")
	case syntax.OpEmptyMatch:
		return empty(), nil
	case syntax.OpLiteral:
		var parts []*expr
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				var alts []*expr
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					alts = append(alts, lit(jsonChar(f)))
				}
				parts = append(parts, alt(append([]*expr{lit(jsonChar(r))}, alts...)...))
			} else {
				parts = append(parts, lit(jsonChar(r)))
			}
		}
		return seq(parts...), nil
	case syntax.OpCharClass:
		return pc.charClass(re.Rune)
	case syntax.OpAnyCharNotNL:
		return pc.charClass([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune})
	case syntax.OpAnyChar:
		return pc.charClass([]rune{0, unicode.MaxRune})
	case syntax.OpCapture:
		return pc.conv(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		sub, err := pc.conv(re.Sub[0])
		if err != nil {
			return nil, err
		}
		lo, hi := 0, -1
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
		}
		if hi < 0 && sub.nullable(map[string]bool{}) {
			return nil, errors.New("it repeats a part that can match the empty string")
		}
		if lo > maxRepetition || hi > maxRepetition {
			return nil, fmt.Errorf("repetition above %d", maxRepetition)
		}
		return rep(sub, lo, hi), nil
	case syntax.OpConcat, syntax.OpAlternate:
		var subs []*expr
		for _, s := range re.Sub {
			e, err := pc.conv(s)
			if err != nil {
				return nil, err
			}
			subs = append(subs, e)
		}
		if re.Op == syntax.OpConcat {
			return seq(subs...), nil
		}
		return alt(subs...), nil
	default:
		return nil, fmt.Errorf("%s is only supported as ^ at the start or $ at the end", opName(re.Op))
	}
}

func opName(op syntax.Op) string {
	switch op {
	case syntax.OpBeginText, syntax.OpBeginLine:
		return "^"
	case syntax.OpEndText, syntax.OpEndLine:
		return "$"
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return "a word boundary"
	}
	return "this construct"
}

// jsonChar is the JSON string encoding of one character.
func jsonChar(r rune) string {
	s := jsonString(string(r))
	return s[1 : len(s)-1]
}

// escaped lists, in order, the characters that the built-in "char" rule
// only accepts as escapes.
var escaped = func() []rune {
	var rs []rune
	for r := rune(0); r < 0x20; r++ {
		rs = append(rs, r)
	}
	return append(rs, '"', '\\', 0x7f)
}()

// charClass matches one character from the ranges (pairs lo, hi) in JSON
// string encoding: a GBNF class for characters written as themselves plus
// literal escapes for the others.
func (pc patternConverter) charClass(ranges []rune) (*expr, error) {
	var cls strings.Builder
	var escapes []*expr
	writeRange := func(lo, hi rune) {
		cls.WriteString(classChar(lo))
		if hi > lo {
			cls.WriteString("-" + classChar(hi))
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		start := lo
		for _, x := range escaped {
			if x < start || x > hi {
				continue
			}
			if x > start {
				writeRange(start, x-1)
			}
			escapes = append(escapes, lit(jsonChar(x)))
			start = x + 1
		}
		if start <= hi {
			writeRange(start, hi)
		}
	}
	var alts []*expr
	if cls.Len() > 0 {
		alts = append(alts, class("["+cls.String()+"]"))
	}
	alts = append(alts, escapes...)
	if len(alts) == 0 {
		return nil, errors.New("it has an empty character class")
	}
	e := alt(alts...)
	if len(escapes) > 2 {
		e = pc.b.add("pattern-char", "", e)
	}
	return e, nil
}
