package chunk

import (
	"sort"
	"unicode/utf8"
)

// RuneOffset returns the character (Unicode code point) offset of byte
// offset byteOff in text: the number of code points before it. An offset
// inside a code point counts from that code point's start; offsets out of
// range are clamped to [0, len(text)]. Invalid UTF-8 bytes count as one
// code point each, as utf8.RuneCountInString counts them. It scans
// text[:byteOff]; to convert many offsets into one text, build an Index
// once.
func RuneOffset(text string, byteOff int) int {
	return utf8.RuneCountInString(text[:clampToRuneStart(text, byteOff)])
}

// indexStride is the distance in bytes between the Index's checkpoints.
const indexStride = 256

// Index converts between byte and character offsets of one text, each
// conversion scanning at most about indexStride bytes, after a single pass
// over the text by NewIndex. It takes about 16 bytes per indexStride bytes
// of text, nothing for ASCII text. It is safe for concurrent use.
type Index struct {
	text  string
	ascii bool
	marks []mark // at code point starts near every multiple of indexStride
	runes int    // code points in text
}

type mark struct {
	pos   int // byte offset, a code point start
	runes int // code points in text[:pos]
}

// NewIndex builds the Index of text.
func NewIndex(text string) *Index {
	x := &Index{text: text, ascii: true}
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			x.ascii = false
			break
		}
	}
	if x.ascii {
		x.runes = len(text)
		return x
	}
	x.marks = make([]mark, 0, len(text)/indexStride+1)
	prev := mark{}
	for i := 0; i <= len(text); i += indexStride {
		p := clampToRuneStart(text, i)
		m := mark{pos: p, runes: prev.runes + utf8.RuneCountInString(text[prev.pos:p])}
		x.marks = append(x.marks, m)
		prev = m
	}
	x.runes = prev.runes + utf8.RuneCountInString(text[prev.pos:])
	return x
}

// Len returns the number of code points in the text.
func (x *Index) Len() int { return x.runes }

// RuneOffset returns the character offset of byte offset byteOff, as the
// function RuneOffset does.
func (x *Index) RuneOffset(byteOff int) int {
	if x.ascii {
		return min(max(byteOff, 0), len(x.text))
	}
	off := clampToRuneStart(x.text, byteOff)
	i := min(off/indexStride, len(x.marks)-1)
	if x.marks[i].pos > off {
		i--
	}
	m := x.marks[i]
	return m.runes + utf8.RuneCountInString(x.text[m.pos:off])
}

// ByteOffset returns the byte offset at which the code point with
// character offset runeOff starts (len(text) for Len()): the inverse of
// RuneOffset. Offsets out of range are clamped to [0, Len()].
func (x *Index) ByteOffset(runeOff int) int {
	runeOff = min(max(runeOff, 0), x.runes)
	if x.ascii {
		return runeOff
	}
	i := sort.Search(len(x.marks), func(i int) bool { return x.marks[i].runes > runeOff }) - 1
	m := x.marks[max(i, 0)]
	pos := m.pos
	for n := m.runes; n < runeOff; n++ {
		_, size := utf8.DecodeRuneInString(x.text[pos:])
		pos += size
	}
	return pos
}

// RuneSpan returns c's Start and End as character offsets into the text
// c was split from.
func (x *Index) RuneSpan(c Chunk) (start, end int) {
	return x.RuneOffset(c.Start), x.RuneOffset(c.End)
}

// clampToRuneStart clamps off to [0, len(text)] and moves it back to the
// start of the code point it falls in: at most three bytes back to a byte
// that can start one. A continuation byte with no such byte within three
// before it is an invalid code point of its own, and stays.
func clampToRuneStart(text string, off int) int {
	off = min(max(off, 0), len(text))
	for back := 1; back <= utf8.UTFMax && off-back+1 >= 0 && off < len(text); back++ {
		if utf8.RuneStart(text[off-back+1]) {
			return off - back + 1
		}
	}
	return off
}
