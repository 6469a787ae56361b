package inference

// LoopGuard spots degenerate output: the same run of tokens repeated back
// to back, as small models do when they lose the thread ("[1][1][1]…", or
// a sentence and its marker over and over to the token limit). Generation
// that loops ends early with finish_reason "length", as if it had run out
// of tokens, which is what it would otherwise do.
//
// A loop is the last tokens being a period of p tokens repeated: at least
// loopMinReps times and over at least loopMinSpan tokens (so a short
// period must repeat more often: "}\n}\n}" in code, or a list of three
// equal items, is not a loop). Periods up to loopMaxPeriod tokens are
// checked, a paragraph or so.
type LoopGuard struct {
	toks []int32
}

const (
	loopMinReps   = 3
	loopMinSpan   = 48
	loopMaxPeriod = 96
	// loopKeep is how many tokens the guard keeps: enough for the longest
	// period's repeats.
	loopKeep = loopMaxPeriod * loopMinReps
)

// Push adds a generated token and reports whether the output now ends in
// a loop.
func (g *LoopGuard) Push(tok int32) bool {
	if len(g.toks) == 2*loopKeep {
		g.toks = append(g.toks[:0], g.toks[loopKeep:]...)
	}
	g.toks = append(g.toks, tok)
	n := len(g.toks)
	for p := 1; p <= loopMaxPeriod; p++ {
		reps := max(loopMinReps, (loopMinSpan+p-1)/p)
		span := p * reps
		if span > n {
			if p*loopMinReps > n {
				break
			}
			continue
		}
		if periodic(g.toks[n-span:], p) {
			return true
		}
	}
	return false
}

// periodic reports whether s repeats with period p.
func periodic(s []int32, p int) bool {
	for i := len(s) - 1; i >= p; i-- {
		if s[i] != s[i-p] {
			return false
		}
	}
	return true
}
