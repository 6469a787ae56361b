package inference

import (
	"bytes"
	"unicode/utf8"
)

// TextGate turns a stream of token bytes into text that is safe to send:
// it holds back an incomplete UTF-8 sequence until the next token completes
// it, and any tail that could be the start of a stop sequence, so a stop
// sequence split across tokens is never partly sent.
type TextGate struct {
	stops   [][]byte
	pending []byte
	// TrimLeft drops spaces at the start of the output (set for prompt
	// formats that end in "Assistant:", after which models write a space).
	TrimLeft bool
	// released counts the bytes sent so far; lps holds the logprobs of
	// tokens whose bytes are still (partly) held back, with the offset
	// where each token's bytes end, so that the logprobs sent join into
	// exactly the text sent (PushLogprob).
	released int
	lps      []heldLogprob
}

type heldLogprob struct {
	lp         TokenLogprob
	start, end int
}

// NewTextGate returns a gate for the given stop sequences (empty ones are
// ignored).
func NewTextGate(stops []string) *TextGate {
	g := &TextGate{}
	for _, s := range stops {
		if s != "" {
			g.stops = append(g.stops, []byte(s))
		}
	}
	return g
}

// Push adds the bytes of one token. It returns the text that may be sent now
// and whether a stop sequence was found; after a stop the text is everything
// before the earliest stop sequence and the gate must not be used again.
func (g *TextGate) Push(piece []byte) (string, bool) {
	text, _, stopped := g.PushLogprob(piece, nil)
	return text, stopped
}

// PushLogprob is Push for a token with its logprob: it also returns the
// logprobs whose tokens' text has now been sent in full, so that the tokens
// of the logprobs sent join into the text sent. Every token pushed with a
// logprob gets exactly one entry (OpenAI's logprobs.content has one per
// completion token): a token cut by a stop sequence keeps the part of its
// text before it, and a token wholly inside the stop sequence, or wholly
// trimmed, keeps none of it (an empty token), each with the whole token's
// logprob.
func (g *TextGate) PushLogprob(piece []byte, lp *TokenLogprob) (string, []TokenLogprob, bool) {
	if g.TrimLeft {
		trimmed := bytes.TrimLeft(piece, " ")
		if len(trimmed) == 0 {
			if lp == nil {
				return "", nil, false
			}
			return "", []TokenLogprob{Unsent(*lp)}, false
		}
		if lp != nil && len(trimmed) < len(piece) {
			t := *lp
			t.Token = string(bytes.TrimLeft([]byte(t.Token), " "))
			t.Bytes = bytes.TrimLeft(t.Bytes, " ")
			lp = &t
		}
		piece = trimmed
		g.TrimLeft = false
	}
	if lp != nil {
		start := g.released + len(g.pending)
		g.lps = append(g.lps, heldLogprob{lp: *lp, start: start, end: start + len(piece)})
	}
	text, stopped := g.push(piece)
	g.released += len(text)
	var out []TokenLogprob
	n := 0
	for _, h := range g.lps {
		if h.end <= g.released {
			out = append(out, h.lp)
			n++
			continue
		}
		if !stopped {
			break
		}
		// Cut by the stop sequence: the token keeps the part of its text
		// that was sent (none when it lies wholly inside the stop
		// sequence), so the tokens still join into the text.
		lp := h.lp
		k := max(g.released-h.start, 0)
		if k < len(lp.Bytes) {
			lp.Bytes = lp.Bytes[:k:k]
			lp.Token = string(lp.Bytes)
		}
		out = append(out, lp)
		n++
	}
	g.lps = g.lps[n:]
	return text, out, stopped
}

// Unsent is lp for a token none of whose text reaches the answer (wholly
// inside a stop sequence, a trimmed space, the end-of-generation token): it
// keeps its entry and logprob, with an empty token, so the tokens of the
// logprobs still join into the text sent.
func Unsent(lp TokenLogprob) TokenLogprob {
	lp.Token, lp.Bytes = "", []byte{}
	return lp
}

// push adds piece to the held bytes and releases what may be sent.
func (g *TextGate) push(piece []byte) (string, bool) {
	g.pending = append(g.pending, piece...)
	cut := -1
	for _, s := range g.stops {
		if i := bytes.Index(g.pending, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		out := validUTF8(g.pending[:cut])
		g.pending = nil
		return out, true
	}
	hold := 0
	for _, s := range g.stops {
		if h := overlap(g.pending, s); h > hold {
			hold = h
		}
	}
	if h := incompleteUTF8(g.pending); h > hold {
		hold = h
	}
	n := len(g.pending) - hold
	out := string(g.pending[:n])
	g.pending = append(g.pending[:0], g.pending[n:]...)
	return out, false
}

// Flush returns whatever is held back, at the end of generation. Invalid
// UTF-8 is replaced with U+FFFD.
func (g *TextGate) Flush() string {
	out, _ := g.FlushLogprobs()
	return out
}

// FlushLogprobs is Flush, with the logprobs of the tokens still held.
func (g *TextGate) FlushLogprobs() (string, []TokenLogprob) {
	out := validUTF8(g.pending)
	g.pending = nil
	g.released += len(out)
	var lps []TokenLogprob
	for _, h := range g.lps {
		lps = append(lps, h.lp)
	}
	g.lps = nil
	return out, lps
}

// overlap is the length of the longest proper prefix of stop that is a
// suffix of b.
func overlap(b, stop []byte) int {
	max := len(stop) - 1
	if max > len(b) {
		max = len(b)
	}
	for n := max; n > 0; n-- {
		if bytes.Equal(b[len(b)-n:], stop[:n]) {
			return n
		}
	}
	return 0
}

// incompleteUTF8 is the number of trailing bytes of b that begin a UTF-8
// sequence the bytes so far do not complete.
func incompleteUTF8(b []byte) int {
	for i := 1; i <= 3 && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return 0
		}
		if c >= 0xC0 { // a leading byte
			need := 2
			switch {
			case c >= 0xF0:
				need = 4
			case c >= 0xE0:
				need = 3
			}
			if need > i {
				return i
			}
			return 0
		}
	}
	return 0
}

func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}
