package pii

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// A custom detector is an RE2 pattern whose leftmost-first matches are the
// candidates. What a stream needs to know of it is read off its syntax
// tree: the longest match in bytes (if bounded), the characters a match
// can contain (the others are terminators), and whether it looks at the
// character before a match (\b, \B, ^), which a scan resumed in the
// middle of the text must then be shown.

type customRE struct {
	re *regexp.Regexp
	// first marks the bytes a match can start with (firstBytes).
	first [256]bool
	// ctx finds the first match after the first character of its input,
	// with that character as context; nil when the pattern never looks
	// left.
	ctx *regexp.Regexp
}

// tooLong stands for "no bound" in the length arithmetic.
const tooLong = 1 << 30

func newCustom(kind, pattern string, rank int) (*detector, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	if minRunes(tree) == 0 {
		return nil, errors.New("the pattern can match the empty string")
	}
	c := &customRE{re: re}
	if looksLeft(tree) {
		// The lazy skip makes the first match after the context character
		// the one taken, with the pattern's own preference among the
		// matches that start there: what a search starting after it would
		// find if it could see it. The pattern goes in as its parsed form,
		// which a \Q without \E cannot spill out of.
		if c.ctx, err = regexp.Compile(`\A(?s:.)(?s:.)*?(` + tree.String() + `)`); err != nil {
			return nil, err
		}
	}
	var ascii [128]bool
	var high bool
	alphabet(tree, &ascii, &high)
	d := &detector{
		kind: kind, rank: rank, next: c.next, custom: true,
		// A regexp decodes the character at a position to look at it,
		// and a match is checked against the one after it (\b, $): the
		// window must hold 4 bytes past what a match can reach.
		right: utf8.UTFMax,
		term: terminators(func(b byte) bool {
			if b < utf8.RuneSelf {
				return ascii[b]
			}
			return high // any byte of a multi-byte or invalid character
		}),
		hold: -1,
	}
	if n := maxBytes(tree); n < maxHold/2 {
		d.hold = n + utf8.UTFMax
	}
	d.prefix, _ = re.LiteralPrefix()
	firstBytes(tree, &c.first)
	d.first = &c.first
	return d, nil
}

// next returns the first match that starts in [from, limit).
func (c *customRE) next(s string, from, limit int) (int, int, bool) {
	// Skip what cannot start a match with a byte loop, which is much
	// cheaper than the regexp's search (that only skips ahead by itself
	// for a literal prefix). It stops on a character's first byte, since
	// the bytes of multi-byte characters are all in first or none is.
	for from < limit && !c.first[s[from]] {
		from++
	}
	if from >= limit {
		return 0, 0, false
	}
	off := from
	var loc []int
	if c.ctx != nil && from > 0 {
		// Search from the character before from, so that \b and ^ see it;
		// a match that starts on it is not ours, and then the context
		// pattern finds the first one after it.
		_, w := utf8.DecodeLastRuneInString(s[:from])
		off = from - w
		if loc = c.re.FindStringIndex(s[off:]); loc != nil && loc[0] < w {
			if m := c.ctx.FindStringSubmatchIndex(s[off:]); m != nil {
				loc = m[2:4]
			} else {
				loc = nil
			}
		}
	} else {
		loc = c.re.FindStringIndex(s[from:])
	}
	if loc == nil || off+loc[0] >= limit || loc[1] <= loc[0] {
		return 0, 0, false
	}
	return off + loc[0], off + loc[1], true
}

// minRunes returns the fewest characters a match of re has (tooLong if it
// cannot match).
func minRunes(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpNoMatch:
		return tooLong
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return tooLong
		}
		return 1
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minRunes(re.Sub[0])
	case syntax.OpRepeat:
		return min(tooLong, re.Min*minRunes(re.Sub[0]))
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n = min(tooLong, n+minRunes(sub))
		}
		return n
	case syntax.OpAlternate:
		n := tooLong
		for _, sub := range re.Sub {
			n = min(n, minRunes(sub))
		}
		return n
	}
	return 0 // empty, assertions, star, quest
}

// maxBytes returns the most bytes a match of re has (tooLong: no bound).
func maxBytes(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += runeBytes(r, re.Flags&syntax.FoldCase != 0)
		}
		return n
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0
		}
		return runeBytes(re.Rune[len(re.Rune)-1], false) // ranges are sorted
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxBytes(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		if maxBytes(re.Sub[0]) == 0 {
			return 0
		}
		return tooLong
	case syntax.OpRepeat:
		n := maxBytes(re.Sub[0])
		if n == 0 {
			return 0
		}
		if re.Max < 0 {
			return tooLong
		}
		return min(tooLong, n*re.Max)
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n = min(tooLong, n+maxBytes(sub))
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, sub := range re.Sub {
			n = max(n, maxBytes(sub))
		}
		return n
	}
	return 0
}

// runeBytes is the UTF-8 length of r, or of the longest character it
// matches when case is folded ('k' also matches the 3-byte Kelvin sign).
func runeBytes(r rune, fold bool) int {
	n := utf8.RuneLen(r)
	if n < 0 {
		n = utf8.UTFMax
	}
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			n = max(n, runeBytes(f, false))
		}
	}
	return n
}

// looksLeft reports whether re has an assertion about the character
// before a position.
func looksLeft(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpBeginText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, sub := range re.Sub {
		if looksLeft(sub) {
			return true
		}
	}
	return false
}

// alphabet marks the characters a match of re can contain: ascii the
// ASCII ones, high whether any other (which the invalid bytes, read as
// U+FFFD, are).
func alphabet(re *syntax.Regexp, ascii *[128]bool, high *bool) {
	add := func(r rune) {
		if r < utf8.RuneSelf {
			ascii[r] = true
		} else {
			*high = true
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			add(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					add(f)
				}
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < utf8.RuneSelf; r++ {
				ascii[r] = true
			}
			if re.Rune[i+1] >= utf8.RuneSelf {
				*high = true
			}
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		for r := range ascii {
			if r != '\n' || re.Op == syntax.OpAnyChar {
				ascii[r] = true
			}
		}
		*high = true
	}
	for _, sub := range re.Sub {
		alphabet(sub, ascii, high)
	}
}

// firstBytes marks in set the bytes a match of re can start with (all
// bytes of multi-byte characters when it can start with one) and reports
// whether re can match the empty string (so that what follows it can
// come first).
func firstBytes(re *syntax.Regexp, set *[256]bool) (nullable bool) {
	add := func(r rune) {
		if r < utf8.RuneSelf {
			set[r] = true
			return
		}
		for b := utf8.RuneSelf; b < len(set); b++ {
			set[b] = true
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return true
		}
		r := re.Rune[0]
		add(r)
		if re.Flags&syntax.FoldCase != 0 {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				add(f)
			}
		}
		return false
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < utf8.RuneSelf; r++ {
				set[r] = true
			}
			if re.Rune[i+1] >= utf8.RuneSelf {
				add(utf8.RuneSelf)
			}
		}
		return false
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		for b := range set {
			set[b] = true
		}
		return false
	case syntax.OpCapture, syntax.OpPlus:
		return firstBytes(re.Sub[0], set)
	case syntax.OpStar, syntax.OpQuest:
		firstBytes(re.Sub[0], set)
		return true
	case syntax.OpRepeat:
		return firstBytes(re.Sub[0], set) || re.Min == 0
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !firstBytes(sub, set) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if firstBytes(sub, set) {
				nullable = true
			}
		}
		return nullable
	case syntax.OpNoMatch:
		return false
	}
	return true // empty, assertions
}
