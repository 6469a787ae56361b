// Package chunk splits a document's text into overlapping chunks for
// embedding and citation, each with its byte offsets into the text, and
// converts byte offsets to character (Unicode code point) offsets, which is
// what the API shows.
//
// Split is deterministic and keeps these invariants, whatever the input
// (valid UTF-8 or not):
//
//   - Chunk.Text == text[Start:End]; in valid UTF-8, Start and End fall on
//     code point boundaries, so every chunk is valid UTF-8 too;
//   - no chunk is longer than Options.MaxChars bytes, and none starts or
//     ends with whitespace or is empty;
//   - chunks are in order: Start and End both strictly increase;
//   - every non-whitespace byte of text is in at least one chunk;
//   - consecutive chunks overlap by at most Options.Overlap bytes.
package chunk

import (
	"unicode"
	"unicode/utf8"
)

// Defaults for the zero fields of Options.
const (
	DefaultMaxChars = 1200
	DefaultOverlap  = 150
	// MinMaxChars is the smallest MaxChars honoured; smaller values are
	// raised to it, so that any code point fits a chunk with room to spare.
	MinMaxChars = 16
)

// Options tunes Split.
type Options struct {
	// MaxChars is the largest chunk, in bytes of UTF-8 (a chunk of ASCII
	// text has as many characters; one of CJK text about a third). Zero
	// means DefaultMaxChars; values below MinMaxChars are raised to it.
	MaxChars int
	// Overlap is how many bytes at most the start of a chunk repeats of the
	// end of the one before, so that a passage cut by a chunk boundary is
	// whole in one of them. Zero means DefaultOverlap, a negative value no
	// overlap; it is capped at MaxChars/2.
	Overlap int
}

func (o Options) normalize() Options {
	if o.MaxChars == 0 {
		o.MaxChars = DefaultMaxChars
	}
	o.MaxChars = max(o.MaxChars, MinMaxChars)
	switch {
	case o.Overlap == 0:
		o.Overlap = DefaultOverlap
	case o.Overlap < 0:
		o.Overlap = 0
	}
	o.Overlap = min(o.Overlap, o.MaxChars/2)
	return o
}

// Chunk is one piece of a text.
type Chunk struct {
	Index int    // position in the list Split returns, from 0
	Start int    // byte offset of the first byte in the text
	End   int    // byte offset just past the last byte (exclusive)
	Text  string // text[Start:End]
}

// Split cuts text into chunks of at most opts.MaxChars bytes, each ending
// at the best boundary available in the latter half of its room, in this
// order of preference: a paragraph break (a blank line), a line break, the
// end of a sentence (".", "?" or "!" followed by a space or line break, or
// "。", "？", "！"), any whitespace; failing all of them, a hard cut
// between two code points. Each chunk after the first starts about
// opts.Overlap bytes before the end of the previous one, at the start of a
// word (after a hard cut, at a code point boundary; where no word starts in
// that span, without overlap). Leading and trailing whitespace is left out
// of chunks by moving Start and End; text that is only whitespace gives no
// chunks. Split returns nil for such text; it never fails.
func Split(text string, opts Options) []Chunk {
	o := opts.normalize()
	var chunks []Chunk
	start := skipSpace(text, 0) // start of the next chunk
	fresh := start              // first non-whitespace byte not yet in a chunk
	for fresh < len(text) {
		if fresh-start > o.MaxChars/2 {
			start = fresh // a long gap of whitespace: no overlap across it
		}
		brk, hard := len(text), false
		if len(text)-start > o.MaxChars {
			brk, hard = findBreak(text, start, fresh, o.MaxChars)
		}
		end := trimSpaceLeft(text, start, brk)
		chunks = append(chunks, Chunk{Index: len(chunks), Start: start, End: end, Text: text[start:end]})
		fresh = skipSpace(text, end)
		if fresh >= len(text) {
			break
		}
		start = overlapStart(text, start, end, fresh, o.Overlap, hard)
	}
	return chunks
}

// Boundary kinds, in order of preference.
const (
	paragraphBreak = iota
	lineBreak
	sentenceEnd
	anySpace
	levels
)

// findBreak returns where a chunk starting at start, which must take in
// the byte at fresh, ends: the last boundary of the best kind found in the
// latter half of its room, else of the best kind found in the rest of the
// room after fresh, else (hard) a cut at the last code point boundary that
// fits. The chunk is text[start:brk] before trimming.
func findBreak(text string, start, fresh, maxChars int) (brk int, hard bool) {
	limit := start + maxChars // < len(text)
	half := max(start+maxChars/2, fresh+1)
	for kind := range levels {
		if b := lastBoundary(text, kind, half, limit); b >= 0 {
			return b, false
		}
	}
	for kind := range levels {
		if b := lastBoundary(text, kind, fresh+1, half-1); b >= 0 {
			return b, false
		}
	}
	// A code point is at most utf8.UTFMax bytes: back up to its start (a
	// longer run of continuation bytes is invalid UTF-8, cut anywhere).
	for b := limit; b > max(fresh, limit-utf8.UTFMax); b-- {
		if utf8.RuneStart(text[b]) {
			return b, true
		}
	}
	return limit, true
}

// lastBoundary returns the largest b in [lo, hi] at which a chunk may end
// before a boundary of the given kind, or -1. A chunk ends before the
// newline of a paragraph or line break, after a sentence's punctuation, or
// before whitespace.
func lastBoundary(text string, kind, lo, hi int) int {
	for b := hi; b >= lo; b-- {
		if b >= len(text) || !utf8.RuneStart(text[b]) {
			continue
		}
		switch kind {
		case paragraphBreak:
			if text[b] == '\n' && blankLineFollows(text, b+1) {
				return b
			}
		case lineBreak:
			if text[b] == '\n' {
				return b
			}
		case sentenceEnd:
			if isSentenceEnd(text, b) {
				return b
			}
		case anySpace:
			if isSpaceAt(text, b) {
				return b
			}
		}
	}
	return -1
}

// blankLineFollows reports whether text[i:] starts with a line of
// whitespace only that ends with a newline.
func blankLineFollows(text string, i int) bool {
	for i < len(text) {
		switch text[i] {
		case '\n':
			return true
		case ' ', '\t', '\r', '\f', '\v':
			i++
		default:
			return false
		}
	}
	return false
}

// isSentenceEnd reports whether text[:b] ends a sentence: ".", "?" or "!"
// with whitespace at b, or a CJK full stop, question or exclamation mark.
func isSentenceEnd(text string, b int) bool {
	if b == 0 {
		return false
	}
	switch text[b-1] {
	case '.', '?', '!':
		return isSpaceAt(text, b)
	}
	r, _ := utf8.DecodeLastRuneInString(text[:b])
	switch r {
	case '。', '？', '！', '｡':
		return true
	}
	return false
}

// overlapStart returns where the chunk after text[start:end] starts: the
// first start of a word at most overlap bytes before end (and after
// start); after a hard cut, in a run without whitespace, the first code
// point boundary there; otherwise fresh, the next non-whitespace byte
// (no overlap).
func overlapStart(text string, start, end, fresh, overlap int, hard bool) int {
	if overlap <= 0 {
		return fresh
	}
	target := max(end-overlap, start+1)
	for p := target; p < end; p++ {
		if utf8.RuneStart(text[p]) && !isSpaceAt(text, p) && isSpaceBefore(text, p) {
			return p
		}
	}
	if hard {
		for p := target; p < end; p++ {
			if utf8.RuneStart(text[p]) {
				return p
			}
		}
	}
	return fresh
}

// isSpaceAt reports whether the code point at text[i] is whitespace.
func isSpaceAt(text string, i int) bool {
	if c := text[i]; c < utf8.RuneSelf {
		return asciiSpace(c)
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return unicode.IsSpace(r)
}

// isSpaceBefore reports whether the code point ending at text[i] is
// whitespace.
func isSpaceBefore(text string, i int) bool {
	if i == 0 {
		return false
	}
	if c := text[i-1]; c < utf8.RuneSelf {
		return asciiSpace(c)
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return unicode.IsSpace(r)
}

func asciiSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v':
		return true
	}
	return false
}

// skipSpace returns the index of the first non-whitespace code point at or
// after i, or len(text).
func skipSpace(text string, i int) int {
	for i < len(text) {
		if c := text[i]; c < utf8.RuneSelf {
			if !asciiSpace(c) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsSpace(r) {
			return i
		}
		i += size
	}
	return i
}

// trimSpaceLeft moves end back over whitespace, not past start.
func trimSpaceLeft(text string, start, end int) int {
	for end > start {
		if c := text[end-1]; c < utf8.RuneSelf {
			if !asciiSpace(c) {
				return end
			}
			end--
			continue
		}
		r, size := utf8.DecodeLastRuneInString(text[start:end])
		if !unicode.IsSpace(r) {
			return end
		}
		end -= size
	}
	return end
}
