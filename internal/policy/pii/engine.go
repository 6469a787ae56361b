package pii

import (
	"strings"
	"unicode/utf8"
)

// The engine is the one scan behind both Find and StreamRedactor, so that
// the two cannot disagree. Find runs it once over the whole text; a
// stream runs it over a window (the text not yet emitted plus a little
// context), a step per chunk, deciding only what the window determines.
//
// Each kind has a candidate scan: a position p is a candidate start when
// the kind's parser accepts the text at p, which depends only on the text
// from a few bytes before p to at most the detector's window (hold bytes)
// after it. The scan walks forward from the kind's position "from": it
// takes the first candidate at or after from, then goes on from that
// candidate's end (so a kind's candidates never overlap). Candidates of
// all kinds are then settled in start order (resolve): that is the only
// cross-kind step.
//
// In a stream, a position is decided once the window holds everything its
// parser can read. These rules say when (limit): the window holds hold
// bytes past it; or a terminator — a byte no match of the kind can
// contain — follows it, with the few bytes of look-ahead the parser
// takes after a match, so that a match cannot run past the window; or,
// for a custom pattern, no match can start there at all (its byte cannot
// start one, or its literal prefix does not follow). The terminator rule
// is what keeps the hold-back short in prose: a card number cannot go
// past a letter, so "…the end of the answer" holds back nothing for
// cards. A kind's scan stops at its limit; its from then marks how far
// it has decided; resolve waits until every kind has decided a
// candidate's start (and, for a phone candidate, its whole span), and the
// text before the first undecided position can be emitted.

// ctxBytes is how much already-scanned text the window keeps before the
// earliest undecided position: the left-boundary checks look two bytes
// back, a custom pattern's \b or ^ one character (up to 4 bytes).
const ctxBytes = 8

// maxHold bounds what a stream holds back for a custom pattern whose
// matches have no length bound (and that no terminator byte ends): past
// it, the redactor decides with maxHold/2 bytes of look-ahead, so only a
// custom match longer than that can come out differently from Find.
const maxHold = 64 << 10

// detector is one kind's candidate scan.
type detector struct {
	kind string
	// rank orders kinds for ties, and is the detector's index in
	// Set.dets.
	rank int
	// next returns the first candidate that starts in [from, limit) of s,
	// a window of the text: s[0] is the start of the text, or at least
	// ctxBytes lie before from. End may be past limit.
	next func(s string, from, limit int) (start, end int, ok bool)
	// hold: a position p with p+hold <= len(window) is decided. Negative:
	// no bound (custom patterns such as `\d+`).
	hold int
	// right is the look-ahead of the terminator rule: a position before a
	// terminator at t is decided when t+right <= len(window).
	right int
	// term marks the bytes no match can contain.
	term *[256]bool
	// email: the rule that a position 65 bytes before any '@' is decided
	// (an e-mail's local part is at most 64 bytes).
	email bool
	// phone is the built-in phone kind; strong kinds make an overlapping
	// phone candidate yield.
	phone, strong bool
	// custom: positions are aligned to characters (a regexp steps by
	// characters; the built-ins only start at ASCII bytes).
	custom bool
	// prefix is what every match starts with (a custom pattern's literal
	// prefix) and first the bytes a match can start with: a position where
	// neither could start is decided.
	prefix string
	first  *[256]bool
}

type cand struct{ start, end int }

// kstate is one kind's progress through the text (offsets are absolute:
// into the whole stream).
type kstate struct {
	d *detector
	// shadow: the kind was not asked for; its candidates only make phone
	// candidates yield (Set.engine).
	shadow bool
	// from is the next position the scan examines: every candidate that
	// starts before it is known.
	from int
	// q are the candidates found and not yet settled, from index qh.
	q  []cand
	qh int
	// lastEnd is the end of the last candidate settled (for phone
	// suppression), -1 before any.
	lastEnd int
	// lastTerm is the last terminator seen (-1: none), termScan the next
	// byte to look at for one.
	lastTerm, termScan int
	// lastAt is the last '@' seen (email; -1: none), atScan the next byte
	// to look at for one.
	lastAt, atScan int
}

type engine struct {
	ks []kstate
	// s is the window: the text from absolute offset base.
	s    string
	base int
	// pos is the end of the last accepted finding; acc the accepted
	// findings not yet handed out.
	pos int
	acc []Finding
}

func newEngine(dets, shadows []*detector) *engine {
	e := &engine{ks: make([]kstate, 0, len(dets)+len(shadows))}
	for _, d := range dets {
		e.ks = append(e.ks, kstate{d: d, lastEnd: -1, lastTerm: -1, lastAt: -1})
	}
	for _, d := range shadows {
		e.ks = append(e.ks, kstate{d: d, shadow: true, lastEnd: -1, lastTerm: -1, lastAt: -1})
	}
	return e
}

func (e *engine) end() int { return e.base + len(e.s) }

// scan runs every kind's candidate scan as far as it is decided: to the
// end when final (the window ends where the text does), else to the
// kind's limit.
func (e *engine) scan(final bool) {
	end := e.end()
	for i := range e.ks {
		k := &e.ks[i]
		limit := end
		if !final {
			limit = e.limit(k)
		}
		for k.from < limit {
			st, en, ok := k.d.next(e.s, k.from-e.base, limit-e.base)
			if !ok {
				k.from = limit
				break
			}
			k.q = append(k.q, cand{st + e.base, en + e.base})
			k.from = en + e.base
		}
	}
}

// limit returns the position before which k's candidate starts are
// decided by the window (see the comment at the top).
func (e *engine) limit(k *kstate) int {
	d, end := k.d, e.end()
	l := k.from
	if d.hold >= 0 {
		l = max(l, end-d.hold+1)
	}
	// Terminators are looked for once per byte, as chunks arrive.
	stop := end - d.right
	for q := max(k.termScan, e.base); q <= stop; q++ {
		if d.term[e.s[q-e.base]] {
			k.lastTerm = q
		}
	}
	k.termScan = max(k.termScan, stop+1)
	if k.lastTerm >= 0 {
		l = max(l, k.lastTerm+1)
	}
	if d.email {
		// An e-mail starting at p has its '@' within 64 bytes, so a
		// position more than 64 bytes before the last '@' — or with 65
		// bytes and no '@' after it — is decided: any '@' it uses is
		// followed by another, which ends that address's domain.
		from := max(k.atScan, e.base)
		if i := lastIndexByte(e.s[from-e.base:], '@'); i >= 0 {
			k.lastAt = from + i
		}
		k.atScan = end
		if k.lastAt >= k.from {
			l = max(l, k.lastAt-64)
		} else {
			l = max(l, end-64)
		}
	}
	if d.prefix != "" {
		// Up to the next occurrence of the prefix: `(?s)BEGIN.*?END` holds
		// back from a BEGIN, not from everywhere.
		if i := strings.Index(e.s[k.from-e.base:], d.prefix); i >= 0 {
			l = max(l, k.from+i)
		} else {
			l = max(l, end-len(d.prefix)+1)
		}
	}
	if d.first != nil {
		i := max(l, k.from)
		for i < end && !d.first[e.s[i-e.base]] {
			i++
		}
		l = max(l, i)
	}
	if d.hold < 0 && end-k.from > maxHold {
		l = max(l, end-maxHold/2)
	}
	l = min(l, end)
	if d.custom {
		l = e.base + alignDown(e.s, l-e.base)
	}
	return l
}

func lastIndexByte(s string, c byte) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// alignDown moves i back to the start of the character it is inside, if
// any: a regexp reading the text from its start never starts a match
// inside a multi-byte character, so neither may a scan resumed at i. A
// character cut off by the end of s counts as one (the rest of it may be
// in the next chunk).
func alignDown(s string, i int) int {
	if i <= 0 || i >= len(s) || utf8.RuneStart(s[i]) {
		return i
	}
	for j := i - 1; j >= 0 && j >= i-(utf8.UTFMax-1); j-- {
		if utf8.RuneStart(s[j]) {
			if !utf8.FullRuneInString(s[j:]) {
				return j
			}
			if _, n := utf8.DecodeRuneInString(s[j:]); j+n > i {
				return j
			}
			return i
		}
	}
	return i
}

// less orders candidates for settling: by start, then longer first, then
// by kind priority.
func less(a cand, ra int, b cand, rb int) bool {
	if a.start != b.start {
		return a.start < b.start
	}
	if a.end != b.end {
		return a.end > b.end
	}
	return ra < rb
}

// resolve settles the candidates, in order, as far as every kind has
// decided them: a candidate is accepted when it starts at or after the
// last accepted one's end, unless it is a phone candidate that a strong
// kind's candidate overlaps, or a shadow kind's.
func (e *engine) resolve() {
	for {
		bi := -1
		var c cand
		for i := range e.ks {
			k := &e.ks[i]
			if k.qh < len(k.q) && (bi < 0 || less(k.q[k.qh], k.d.rank, c, e.ks[bi].d.rank)) {
				bi, c = i, k.q[k.qh]
			}
		}
		if bi < 0 {
			return
		}
		// A kind that has not examined c.start yet could still find a
		// candidate that comes first.
		for i := range e.ks {
			if e.ks[i].from <= c.start {
				return
			}
		}
		k := &e.ks[bi]
		drop := false
		if k.d.phone {
			for i := range e.ks {
				j := &e.ks[i]
				if !j.d.strong {
					continue
				}
				// j's candidates are sorted and disjoint: only the last
				// settled one and the next can overlap c.
				if j.lastEnd > c.start || (j.qh < len(j.q) && j.q[j.qh].start < c.end) {
					drop = true
					break
				}
			}
			if !drop {
				for i := range e.ks {
					if j := &e.ks[i]; j.d.strong && j.from < c.end {
						return // a strong candidate could still start inside c
					}
				}
			}
		}
		k.qh++
		if k.qh == len(k.q) {
			k.q, k.qh = k.q[:0], 0
		}
		if k.d.strong {
			k.lastEnd = c.end
		}
		if !drop && !k.shadow && c.start >= e.pos {
			e.acc = append(e.acc, Finding{k.d.kind, c.start, c.end})
			e.pos = c.end
		}
	}
}

// decided returns the first position a finding can still start at: the
// earliest unsettled candidate or unexamined position.
func (e *engine) decided() int {
	d := e.end()
	for i := range e.ks {
		k := &e.ks[i]
		if k.qh < len(k.q) {
			d = min(d, k.q[k.qh].start)
		} else {
			d = min(d, k.from)
		}
	}
	return d
}
