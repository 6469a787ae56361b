// Package pii detects personal data in text — e-mail addresses, phone
// numbers, IBANs, payment card numbers, IP addresses and custom RE2
// patterns — and redacts it, also in text that arrives in chunks (a
// streamed model answer).
//
// The detectors run on every prompt and every answer, so they are linear
// in the text and cheap on text that holds nothing: each built-in looks
// for its anchor bytes (an '@', a digit, two capitals and two digits, a
// '.' or ':') with a byte loop and parses only there, where a regular
// expression would walk the whole text several times (Go's regexp costs
// tens of nanoseconds a byte without a literal prefix). The parsers then
// decide what a pattern cannot: IBANs must pass ISO 13616's mod-97 and
// have their country's length, card numbers the Luhn check, IP addresses
// net/netip's parser, and every built-in needs a boundary on both sides
// (so "x4111111111111111", "1.2.3.4.5" and "v1.2.3.4" are not findings).
// Custom detectors are RE2 patterns (package regexp).
//
// # Overlaps
//
// Find returns non-overlapping findings. Candidates of different kinds
// can overlap (the digits of an IBAN can look like a phone number, an
// e-mail's local part like a card number); they are settled thus:
//
//  1. A phone candidate that overlaps an IBAN, card, e-mail or IP
//     candidate is dropped, whether or not those kinds are asked for:
//     phone is the only built-in without a checksum or a strict syntax, so
//     when it disagrees with one that has, that one is right ("+1 4111
//     1111 1111 1111" is a card after a stray "+1", not a phone number
//     followed by digits; the digits of "NL91 ABNA 0417 1643 00" are not
//     a phone number even when only phone numbers are redacted).
//  2. Of the rest, the earlier-starting wins, then the longer, then the
//     kind first in priority order: iban, card, email, ip, phone, then the
//     custom kinds by name.
//
// # Streams
//
// [StreamRedactor] redacts a stream chunk by chunk and emits, whatever
// the chunking, exactly Redact(text, Find(text)) of the whole text. It
// runs the very scan Find runs, on a window of the stream, and only
// decides what the window's text fully determines; see [StreamRedactor]
// for what it holds back.
//
// # Limits
//
// The built-ins take a practical subset, leaning to precision:
//
//   - e-mail: ASCII local parts (no internationalised addresses) and
//     host names with a top-level domain of letters;
//   - phone: international numbers with '+' or "00", North American
//     numbers with '-', '.' or parentheses, and national numbers with a
//     trunk 0 and separators ("020 7946 0958"); a bare run of digits, a
//     7-digit local number or "250 300 1200" is not a phone number;
//   - IBAN: in capitals; the lengths of 34 European countries are
//     checked, others only need 15–34 characters;
//   - IP: a four-part version string ("1.2.3.4") is a valid address and
//     is reported; "01.2.3.4" (a leading zero) is not an address.
//
// A custom pattern costs what Go's regexp costs: bytes that cannot start
// a match are skipped with a byte loop, but from a possible start the
// search runs at regexp speed (some tens of nanoseconds a byte for a
// pattern without a literal prefix).
package pii

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Finding is one detected span: byte offsets into the scanned text, End
// exclusive.
type Finding struct {
	Kind  string `json:"kind"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// Built-in kinds.
const (
	Email = "email"
	Phone = "phone"
	IBAN  = "iban"
	Card  = "card"
	IP    = "ip"
)

// Builtin lists the built-in kinds.
func Builtin() []string { return []string{Email, Phone, IBAN, Card, IP} }

// PatternError reports a custom detector New cannot use: a bad kind name
// or a pattern that does not compile or can match the empty string.
type PatternError struct {
	Kind, Pattern string
	Err           error
}

// Error names the kind, which is what the policy's author wrote.
func (e *PatternError) Error() string {
	return fmt.Sprintf("pii: detector %q: %v", e.Kind, e.Err)
}

// Unwrap returns the underlying error (a *syntax.Error for a pattern
// that does not compile).
func (e *PatternError) Unwrap() error { return e.Err }

// Set is a compiled set of detectors: the built-ins plus custom ones. It
// is immutable, so safe for concurrent use.
type Set struct {
	// dets are the detectors in priority order (see the package doc),
	// kinds the kind names in Kinds order.
	dets  []*detector
	kinds []string
}

var kindName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// New returns the built-ins plus custom detectors (kind name → RE2
// pattern). A custom name must match ^[a-z][a-z0-9_]{0,31}$ and not be a
// built-in's; a bad name or pattern is a *PatternError naming the kind
// (the first in name order, so that the error does not depend on map
// order). A pattern that can match the empty string is refused: it would
// report an empty finding at every position.
func New(custom map[string]string) (*Set, error) {
	names := make([]string, 0, len(custom))
	for k := range custom {
		names = append(names, k)
	}
	slices.Sort(names)
	s := &Set{dets: builtins(), kinds: append(Builtin(), names...)}
	for i, name := range names {
		pat := custom[name]
		switch {
		case !kindName.MatchString(name):
			return nil, &PatternError{name, pat, fmt.Errorf("a kind name must match %s", kindName)}
		case slices.Contains(Builtin(), name):
			return nil, &PatternError{name, pat, fmt.Errorf("%q is a built-in kind", name)}
		}
		d, err := newCustom(name, pat, len(s.dets)+i)
		if err != nil {
			return nil, &PatternError{name, pat, err}
		}
		s.dets = append(s.dets, d)
	}
	return s, nil
}

// Kinds lists the set's kinds: the built-ins first (as Builtin), then the
// custom ones sorted.
func (s *Set) Kinds() []string { return slices.Clone(s.kinds) }

// engine returns an engine for the detectors of kinds (all when none are
// given; unknown kinds are ignored). When phone is among them, the strong
// built-ins that are not come along as shadows: their candidates are
// never findings but still make an overlapping phone candidate yield, so
// that what is a phone number does not depend on which kinds are asked
// for (a policy that redacts only phone numbers must not redact an
// IBAN's digits as one).
func (s *Set) engine(kinds []string) *engine {
	if len(kinds) == 0 {
		return newEngine(s.dets, nil)
	}
	var dets, shadows []*detector
	phone := slices.Contains(kinds, Phone)
	for _, d := range s.dets {
		switch {
		case slices.Contains(kinds, d.kind):
			dets = append(dets, d)
		case phone && d.strong:
			shadows = append(shadows, d)
		}
	}
	return newEngine(dets, shadows)
}

// Find returns the findings of the given kinds (all kinds when none are
// given; unknown kinds find nothing) in text, sorted by Start and
// non-overlapping: when two overlap, the earlier-starting is kept, then
// the longer, then the kind first in priority order; and a phone number
// yields to any overlapping IBAN, card, e-mail or IP address, whether or
// not those kinds are asked for (see the package doc). The result is nil
// when there is nothing.
func (s *Set) Find(text string, kinds ...string) []Finding {
	e := s.engine(kinds)
	e.s = text
	e.scan(true)
	e.resolve()
	return e.acc
}

// Redact returns text with each finding replaced by "[REDACTED:<kind>]".
// Findings must be sorted and non-overlapping, as Find returns them. Out
// of order or overlapping ones (a caller's merge gone wrong) still have
// all their bytes redacted: each redacts what of its span the ones
// before it did not, and spans outside text are clipped to it, since
// leaking text is worse than an odd tag.
func Redact(text string, fs []Finding) string {
	if len(fs) == 0 {
		return text
	}
	if !slices.IsSortedFunc(fs, func(a, b Finding) int { return a.Start - b.Start }) {
		fs = slices.Clone(fs)
		slices.SortStableFunc(fs, func(a, b Finding) int { return a.Start - b.Start })
	}
	var b strings.Builder
	b.Grow(len(text) + 16*len(fs))
	last := 0
	for _, f := range fs {
		start, end := max(f.Start, last), min(f.End, len(text))
		if start >= end {
			continue
		}
		b.WriteString(text[last:start])
		writeTag(&b, f.Kind)
		last = end
	}
	b.WriteString(text[last:])
	return b.String()
}

func writeTag(b *strings.Builder, kind string) {
	b.WriteString("[REDACTED:")
	b.WriteString(kind)
	b.WriteByte(']')
}
