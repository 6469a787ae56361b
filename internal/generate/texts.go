package generate

import (
	"sort"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/policy/pii"
	"github.com/sovereign-ai/sovereign/internal/records"
)

// answerTexts is an answer's text as it streams, per choice (or, for the
// Responses API, per output part): what the model wrote, which the output
// stage evaluates whole at the end; what was passed on after redaction,
// which the record keeps when the team keeps its outputs; and each one's
// stream redactor, which holds back the tail that could still become a
// match. Native generations and relayed answers share it. It is not safe
// for concurrent use.
type answerTexts struct {
	op      *outputPolicy
	capture bool
	wrote   map[int]*strings.Builder
	sent    map[int]*strings.Builder
	reds    map[int]*pii.StreamRedactor
}

func newAnswerTexts(op *outputPolicy, capture bool) *answerTexts {
	return &answerTexts{op: op, capture: capture, wrote: map[int]*strings.Builder{}, sent: map[int]*strings.Builder{},
		reds: map[int]*pii.StreamRedactor{}}
}

// add takes index idx's next piece of text (final: its last, when the
// held-back text is let go) and returns what may be passed on.
func (a *answerTexts) add(idx int, s string, final bool) string {
	w := a.wrote[idx]
	if w == nil {
		w = &strings.Builder{}
		a.wrote[idx] = w
		if r := a.op.NewStreamRedactor(); r != nil {
			a.reds[idx] = r
		}
	}
	w.WriteString(s)
	emit := s
	if r := a.reds[idx]; r != nil {
		emit, _ = r.Write(s)
		if final {
			rest, _ := r.Flush()
			emit += rest
			delete(a.reds, idx)
		}
	}
	if a.capture && emit != "" {
		b := a.sent[idx]
		if b == nil {
			b = &strings.Builder{}
			a.sent[idx] = b
		}
		if b.Len() < 2*records.MaxCapture {
			b.WriteString(emit)
		}
	}
	return emit
}

// whole is every index's text in index order: as written, each ending in
// a newline (what the output stage evaluates), and as sent, joined by
// newlines (what the record keeps).
func (a *answerTexts) whole() (wrote, sent string) {
	idx := make([]int, 0, len(a.wrote))
	for i := range a.wrote {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var w, s strings.Builder
	for n, i := range idx {
		w.WriteString(a.wrote[i].String())
		w.WriteByte('\n')
		if n > 0 {
			s.WriteByte('\n')
		}
		if b := a.sent[i]; b != nil {
			s.WriteString(b.String())
		}
	}
	return w.String(), s.String()
}
