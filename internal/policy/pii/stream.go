package pii

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// StreamRedactor redacts text that arrives in chunks (a streamed model
// answer). Whatever the chunking, the concatenation of what Write and
// Flush return is exactly Redact(text, Find(text, kinds...)) of the
// whole text: a finding split across chunks is never partly emitted, and
// nothing is redacted that the whole text's redaction would not.
//
// It runs Find's own scan over a window of the stream and emits only the
// text before the first position whose outcome the window does not yet
// determine. What it holds back, per kind, is at most:
//
//   - the trailing bytes that could still belong to a match: after the
//     last byte no match of the kind can contain (a letter for a card
//     number, a space for an e-mail address), so in prose it is the last
//     word or so;
//   - and in any case no more than the kind's window, the longest match
//     plus look-ahead: 40 bytes for cards and phone numbers, 48 for IBANs
//     and IP addresses, 330 for e-mail addresses (64 for the local part,
//     253 for the domain), but for e-mail only around an '@' (without one,
//     64 bytes);
//   - for a custom pattern, nothing before the first byte a match can
//     start with (`\bTCK-\d+` holds nothing back until a 'T', and
//     `(?s)BEGIN.*?END` nothing until a "BEGIN"); from there, its longest
//     match plus 4 bytes when that is bounded (`EMP-\d{6}`: 14), else up
//     to the last byte no match can contain (for `\w+`, any non-word byte;
//     for a pattern that cannot match a newline, the start of the line).
//     A custom pattern with no bound and no such byte in sight
//     (`(?s)BEGIN.*?END` after a BEGIN while no END has come) is held
//     back up to 64 KiB, then decided with 32 KiB of look-ahead: only a
//     custom match longer than that can come out differently from Find,
//     and the price of exactness up to there is latency and a window of
//     that size.
//
// A finding that reaches into the held-back text holds back from its
// start. Each chunk costs the scan of itself and of the held-back text,
// not of the stream so far. Emitted text never ends inside a UTF-8
// character.
//
// A StreamRedactor is not safe for concurrent use. After Flush it starts
// a new stream, with offsets from 0 again.
type StreamRedactor struct {
	set   *Set
	kinds []string
	e     *engine
	// out is the end of the text emitted (an absolute offset).
	out int
}

// NewStreamRedactor returns a redactor of the given kinds (all the set's
// kinds when none are given).
func (s *Set) NewStreamRedactor(kinds ...string) *StreamRedactor {
	kinds = slices.Clone(kinds)
	return &StreamRedactor{set: s, kinds: kinds, e: s.engine(kinds)}
}

// Write takes the next chunk and returns the text that is now safe to
// emit (already redacted) and the findings redacted in it, with offsets
// into the whole original stream so far.
func (r *StreamRedactor) Write(chunk string) (emit string, found []Finding) {
	r.e.s += chunk
	return r.step(false)
}

// Flush ends the stream and returns the rest, redacted, and the findings
// in it. The redactor is then ready for a new stream.
func (r *StreamRedactor) Flush() (emit string, found []Finding) {
	emit, found = r.step(true)
	r.e, r.out = r.set.engine(r.kinds), 0
	return emit, found
}

func (r *StreamRedactor) step(final bool) (string, []Finding) {
	e := r.e
	e.scan(final)
	e.resolve()
	cut := e.end()
	if !final {
		// Up to the first undecided position, or through the last
		// accepted finding if that ends later (the candidates that start
		// inside it are lost to it anyway), not inside a character.
		cut = max(e.decided(), e.pos)
		for i := 0; i < utf8.UTFMax-1 && cut > e.pos && cut > r.out && cut < e.end() && !utf8.RuneStart(e.s[cut-e.base]); i++ {
			cut--
		}
	}
	emit, found := r.emit(cut)
	// Keep from the first byte a scan or the next emit needs, with the
	// context the scans look back at.
	keep := r.out
	for i := range e.ks {
		keep = min(keep, e.ks[i].from)
	}
	if keep -= ctxBytes; keep > e.base {
		e.s, e.base = e.s[keep-e.base:], keep
	}
	return emit, found
}

// emit returns the text from r.out to cut, with the accepted findings (all
// of which end by cut) redacted.
func (r *StreamRedactor) emit(cut int) (string, []Finding) {
	e := r.e
	if cut <= r.out && len(e.acc) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.Grow(cut - r.out + 16*len(e.acc))
	for _, f := range e.acc {
		b.WriteString(e.s[r.out-e.base : f.Start-e.base])
		writeTag(&b, f.Kind)
		r.out = f.End
	}
	b.WriteString(e.s[r.out-e.base : cut-e.base])
	r.out = cut
	found := e.acc
	e.acc = nil
	return b.String(), found
}
