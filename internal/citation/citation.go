// Package citation turns a generated answer into an answer with sources:
// it writes the system prompt that numbers the sources for the model, then
// reads the answer as it streams and settles its [n] markers, and finally
// lists the citations with character offsets into the answer.
//
// The model is asked to put [n] after each sentence that uses source n.
// Small models do that unreliably, so the markers are checked as they
// arrive (a [Writer] sees the text before the client does):
//
//   - a marker whose number names no source is removed;
//   - a marker whose sources share no content word with its sentence, when
//     another source clearly supports the sentence, is rewritten to name
//     that source;
//   - a sentence that ends without a marker but is clearly supported by a
//     source gets that source's marker after its final punctuation
//     ("… in 1872.[2]");
//   - with citations off, every marker is removed.
//
// A marker also needs the sentence's checkable facts, its numbers and the
// names it capitalises, to appear in a source it cites: otherwise it is
// dropped (and a sentence that reads like a source is not given one), and
// the sentence is listed by [Writer.Unsupported].
//
// "Clearly supported" is lexical: the content words the sentence shares
// with the source, weighted by how rare each word is among the sources,
// make up at least a third of the sentence's weight and at least two
// words (or every content word of a shorter sentence). It is what grounds a sentence in a source whether or not the model
// wrote a marker, and it never invents support that is not in the text.
//
// Markers are written in one canonical form, [1] or [1][3] for several, so
// that [Writer.Citations] can read them back from the final text.
package citation

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Source is one numbered source offered to the model. Its number is its
// position in the list plus one.
type Source struct {
	// ID is the public id of the source: a chunk id ("chunk_12") for a
	// collection's chunk, the caller's id for an inline document.
	ID           string `json:"id"`
	CollectionID string `json:"collection_id"`
	DocumentID   string `json:"document_id"`
	ChunkID      string `json:"chunk_id"`
	Title        string `json:"title"`
	URL          string `json:"url"`
	// Text is what the model is shown.
	Text string `json:"-"`
}

// CitedSource is a source as a citation shows it: its ids, title and URL
// (not its text), a snippet and its number.
type CitedSource struct {
	Source
	// Snippet is the start of the source's text, verbatim (cut at about
	// 300 characters, then marked with an ellipsis).
	Snippet string `json:"snippet"`
	// Number is the marker number the source has in the answer ([Number]).
	Number int `json:"number"`
}

// Citation is a span of the answer and the sources that support it.
// Start and End are character (code point) offsets into the answer, End
// exclusive, so that the answer's characters [Start, End) are Text.
type Citation struct {
	// Index is the citation's position in the list, from 0.
	Index   int           `json:"index"`
	Start   int           `json:"start"`
	End     int           `json:"end"`
	Text    string        `json:"text"`
	Sources []CitedSource `json:"sources"`
}

// maxPromptSourceChars bounds each source's text in the prompt.
const maxPromptSourceChars = 4000

// snippetChars bounds a cited source's snippet.
const snippetChars = 300

// SystemPrompt returns the system message that gives the model the
// numbered sources; with cite it also asks for [n] markers.
func SystemPrompt(srcs []Source, cite bool) string {
	var b strings.Builder
	if cite {
		b.WriteString("Answer the user's question using the sources below. After each sentence that uses a source, write the source's number in square brackets, like [1].\n")
	} else {
		b.WriteString("Answer the user's question using the sources below.\n")
	}
	b.WriteString("\nSources:\n")
	for i, s := range srcs {
		fmt.Fprintf(&b, "\n[%d]", i+1)
		if s.Title != "" {
			b.WriteString(" " + oneLine(s.Title))
		}
		b.WriteString("\n" + truncate(strings.TrimSpace(s.Text), maxPromptSourceChars) + "\n")
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// truncate cuts s to at most n characters, at a space when one is near.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n]
	if i := strings.LastIndexFunc(string(r), unicode.IsSpace); i > len(string(r))*3/4 {
		return strings.TrimSpace(string(r)[:i]) + "…"
	}
	return string(r) + "…"
}

// Writer settles the markers of an answer as its text arrives. Write takes
// generated text and returns the text that can go to the client now; Flush
// returns the rest at the end. The concatenation of everything returned is
// the final answer, which Citations describes. A Writer is not safe for
// concurrent use.
type Writer struct {
	srcs  []Source
	cite  bool
	words []map[string]bool // content words of each source
	idf   map[string]float64

	out      strings.Builder // everything returned so far
	outRunes int             // characters in out
	pending  string          // held back: a possible marker or trailing white space
	sentence strings.Builder // the current sentence's text so far (markers excluded)
	sentAt   int             // character offset in out where the sentence began
	marked   bool            // the current sentence has a marker
	closing  bool            // the current sentence ended; it closes at the next non-space
	// unsupported are the sentences whose markers were dropped because a
	// fact they state is in none of the sources they cited.
	unsupported []Span
	// prev is the sentence a marker settled last, until new text starts
	// another: a marker that follows at once (whether or not the end of
	// the sentence was seen in between) belongs to it too. prevDropped
	// says its marker was dropped.
	prev        string
	prevDropped bool
	// afterTerminal: the last text ended with . ! or ?, and whether the
	// sentence ended there depends on the next character (a space).
	afterTerminal bool
}

// Span is a part of the answer: character offsets, End exclusive.
type Span struct {
	Start int    `json:"start"`
	End   int    `json:"end"`
	Text  string `json:"text"`
}

// NewWriter returns a Writer for an answer drawing on srcs; with cite false
// it removes every marker.
func NewWriter(srcs []Source, cite bool) *Writer {
	w := &Writer{srcs: srcs, cite: cite, idf: map[string]float64{}}
	df := map[string]int{}
	for _, s := range srcs {
		ws := contentWords(s.Title + " " + s.Text)
		w.words = append(w.words, ws)
		for t := range ws {
			df[t]++
		}
	}
	for t, n := range df {
		w.idf[t] = math.Log(1 + float64(len(srcs))/float64(n))
	}
	return w
}

// maxMarker is the longest text held back as a possible marker.
const maxMarker = 16

// Write adds generated text and returns what can be sent now.
func (w *Writer) Write(text string) string {
	w.pending += text
	return w.drain(false)
}

// Flush returns the text still held back, ending the answer.
func (w *Writer) Flush() string {
	return w.drain(true)
}

// Text returns the whole answer returned so far.
func (w *Writer) Text() string { return w.out.String() }

// drain emits what of pending is settled; at the end (final) everything.
func (w *Writer) drain(final bool) string {
	start := w.out.Len()
	p := w.pending
	for len(p) > 0 {
		r, size := utf8.DecodeRuneInString(p)
		if w.afterTerminal {
			w.afterTerminal = false
			if unicode.IsSpace(r) {
				w.endSentence()
			}
		}
		switch {
		case r == '[':
			end := strings.IndexByte(p, ']')
			// A marker is at most maxMarker long, whether it arrives in one
			// piece or not.
			if end < 0 || end >= maxMarker {
				if end < 0 && !final && len(p) < maxMarker && markerPrefix(p[1:]) {
					w.pending = p
					return w.out.String()[start:]
				}
				w.text(p[:1])
				p = p[1:]
				continue
			}
			nums, ok := parseMarker(p[1:end])
			if !ok {
				w.text(p[:1])
				p = p[1:]
				continue
			}
			w.marker(nums)
			p = p[end+1:]
		case unicode.IsSpace(r):
			// White space is held until what follows shows whether a
			// marker (which takes the space before it) comes next.
			n := len(p) - len(strings.TrimLeftFunc(p, unicode.IsSpace))
			if n == len(p) && !final {
				w.pending = p
				return w.out.String()[start:]
			}
			ws := p[:n]
			p = p[n:]
			if len(p) > 0 && p[0] == '[' {
				if end := strings.IndexByte(p, ']'); end < 0 && !final && len(p) < maxMarker && markerPrefix(p[1:]) {
					w.pending = ws + p
					return w.out.String()[start:]
				} else if end > 0 && end < maxMarker {
					if _, ok := parseMarker(p[1:end]); ok {
						continue // the space before a marker is dropped
					}
				}
			}
			if strings.ContainsRune(ws, '\n') {
				w.endSentence()
			}
			w.closeSentence()
			w.text(ws)
		default:
			if w.closing {
				w.closeSentence()
			}
			w.text(p[:size])
			p = p[size:]
			switch {
			case !isTerminal(r):
			case len(p) == 0 && !final:
				// The next text decides (as it would in one piece).
				w.afterTerminal = true
			case len(p) == 0 || startsWithSpace(p):
				w.endSentence()
			}
		}
	}
	w.pending = ""
	if final {
		if w.afterTerminal {
			w.afterTerminal = false
			w.endSentence()
		}
		w.closeSentence()
	}
	return w.out.String()[start:]
}

func startsWithSpace(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsSpace(r)
}

func isTerminal(r rune) bool { return r == '.' || r == '!' || r == '?' || r == '。' }

// markerPrefix reports whether s (after '[') could still become a marker.
func markerPrefix(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r == ',' || r == ' ') {
			return false
		}
	}
	return true
}

// parseMarker parses the inside of [1], [1, 2] or [1,2].
func parseMarker(s string) ([]int, bool) {
	if !markerPrefix(s) {
		return nil, false
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, false
		}
		out = append(out, n)
	}
	return out, len(out) > 0
}

// emit returns text to the client as it is.
func (w *Writer) emit(s string) {
	w.out.WriteString(s)
	w.outRunes += utf8.RuneCountInString(s)
}

// text emits answer text that belongs to the current sentence.
func (w *Writer) text(s string) {
	if w.sentence.Len() == 0 {
		w.sentAt = w.outRunes
	}
	if strings.TrimSpace(s) != "" {
		w.prev = ""
	}
	w.sentence.WriteString(s)
	w.emit(s)
}

// endSentence notes that the current sentence has ended; its attribution
// waits until what follows shows that no marker of the model's comes.
func (w *Writer) endSentence() {
	if strings.TrimSpace(w.sentence.String()) != "" {
		w.closing = true
	}
}

// closeSentence settles the current sentence: an unmarked sentence that a
// source clearly supports gets that source's marker.
func (w *Writer) closeSentence() {
	if !w.closing {
		return
	}
	if w.cite && !w.marked {
		if best, _ := w.best(w.sentence.String()); best >= 0 {
			if w.factsHold(w.sentence.String(), []int{best + 1}) {
				w.writeMarker([]int{best + 1})
			} else {
				// It reads like the source but states what the source
				// does not: no marker, and listed.
				w.unsupported = append(w.unsupported, w.sentenceSpan())
			}
		}
	}
	w.sentence.Reset()
	w.marked, w.closing = false, false
}

// marker handles a marker the model wrote for the current sentence.
func (w *Writer) marker(nums []int) {
	if !w.cite {
		return
	}
	var valid []int
	for _, n := range nums {
		if n >= 1 && n <= len(w.srcs) && !contains(valid, n) {
			valid = append(valid, n)
		}
	}
	if len(valid) == 0 {
		return
	}
	sent := w.sentence.String()
	if strings.TrimSpace(sent) == "" && w.prev != "" {
		// Another marker for the sentence just settled.
		if w.prevDropped {
			return
		}
		sent = w.prev
	}
	supported := false
	for _, n := range valid {
		if w.support(sent, n-1) > 0 {
			supported = true
		}
	}
	if !supported {
		if best, _ := w.best(sent); best >= 0 {
			valid = []int{best + 1}
		}
	}
	dropped := !w.factsHold(sent, valid)
	if !dropped {
		w.writeMarker(valid)
	} else if !w.marked && strings.TrimSpace(w.sentence.String()) != "" {
		// A number or name of the sentence is in none of its sources: the
		// marker would vouch for something the sources do not say.
		w.unsupported = append(w.unsupported, w.sentenceSpan())
	}
	w.marked = true
	w.prev, w.prevDropped = sent, dropped
	// A marker after the sentence's end (seen, or the sentence's last
	// character is . ! ?) belongs to it; the sentence is settled.
	if r, _ := utf8.DecodeLastRuneInString(strings.TrimSpace(w.sentence.String())); w.closing || isTerminal(r) {
		w.sentence.Reset()
		w.marked, w.closing = false, false
	}
}

func (w *Writer) writeMarker(nums []int) {
	for _, n := range nums {
		w.emit("[" + strconv.Itoa(n) + "]")
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// minSupport is the share of a sentence's content-word weight a source
// must hold to support it clearly; minShared the number of shared words
// (or all of them, for a sentence of fewer content words).
const (
	minSupport = 0.34
	minShared  = 2
)

// support is the idf-weighted share of the sentence's content words that
// source i holds (0 to 1).
func (w *Writer) support(sentence string, i int) float64 {
	sw := contentWords(sentence)
	var total, shared float64
	for t := range sw {
		wt := w.idf[t]
		if wt == 0 {
			wt = math.Log(1 + float64(len(w.srcs))) // a word no source has
		}
		total += wt
		if w.words[i][t] {
			shared += wt
		}
	}
	if total == 0 {
		return 0
	}
	return shared / total
}

// best returns the source that clearly supports sentence best, or -1.
func (w *Writer) best(sentence string) (int, float64) {
	sw := contentWords(sentence)
	best, bestScore := -1, 0.0
	for i := range w.srcs {
		n := 0
		for t := range sw {
			if w.words[i][t] {
				n++
			}
		}
		if n < min(minShared, len(sw)) || n == 0 {
			continue
		}
		if sc := w.support(sentence, i); sc >= minSupport && sc > bestScore {
			best, bestScore = i, sc
		}
	}
	return best, bestScore
}

// sentenceSpan is the current sentence's span in the answer, without the
// white space around it.
func (w *Writer) sentenceSpan() Span {
	text := w.sentence.String()
	lead := utf8.RuneCountInString(text) - utf8.RuneCountInString(strings.TrimLeftFunc(text, unicode.IsSpace))
	text = strings.TrimSpace(text)
	start := w.sentAt + lead
	return Span{Start: start, End: start + utf8.RuneCountInString(text), Text: text}
}

// Unsupported lists the sentences whose markers were dropped, or that were
// not given one, because a number or name they state is in none of the
// sources. Call it after Flush.
func (w *Writer) Unsupported() []Span {
	if w.unsupported == nil {
		return []Span{}
	}
	return w.unsupported
}

// factsHold reports whether every checkable fact of sentence (see facts)
// appears in at least one of the numbered sources.
func (w *Writer) factsHold(sentence string, nums []int) bool {
	fs := facts(sentence)
	if len(fs) == 0 {
		return true
	}
	var have []map[string]bool
	for _, n := range nums {
		if n >= 1 && n <= len(w.srcs) {
			src := w.srcs[n-1]
			have = append(have, factWords(src.Title+" "+src.Text))
		}
	}
	for _, f := range fs {
		found := false
		for _, h := range have {
			if h[f] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// facts returns what a sentence states that can be checked against a
// source word for word: its numbers (digit runs, as in "1872" or the 1900
// of "1900-year-old") and the names it writes with a capital letter after
// its first word, lower-cased.
func facts(sentence string) []string {
	var out []string
	first := true
	for _, f := range strings.FieldsFunc(sentence, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		r, _ := utf8.DecodeRuneInString(f)
		switch {
		case unicode.IsDigit(r):
			for _, d := range digitRuns(f) {
				out = append(out, d)
			}
		case !first && unicode.IsUpper(r) && utf8.RuneCountInString(f) > 1:
			out = append(out, strings.ToLower(f))
		}
		first = false
	}
	return out
}

// digitRuns returns the runs of digits in s.
func digitRuns(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsDigit(r) })
}

// factWords is the set facts are looked up in: a source's lower-cased
// words and digit runs.
func factWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out[f] = true
		for _, d := range digitRuns(f) {
			out[d] = true
		}
	}
	return out
}

// Citations lists the answer's citations: for each run of markers, the
// text it follows back to the previous sentence end or marker, and its
// sources. Call it after Flush.
func (w *Writer) Citations() []Citation {
	return Parse(w.out.String(), w.srcs)
}

// Parse lists the citations of an answer whose markers are in canonical
// form ([1] or [1][3]) and name srcs by number.
func Parse(answer string, srcs []Source) []Citation {
	out := []Citation{}
	runes := []rune(answer)
	spanStart := 0 // where the text the next marker cites may begin
	for i := 0; i < len(runes); {
		if runes[i] != '[' {
			if i > 0 && isTerminal(runes[i-1]) && unicode.IsSpace(runes[i]) || runes[i] == '\n' {
				spanStart = i + 1
			}
			i++
			continue
		}
		nums, end := readMarkers(runes, i)
		if len(nums) == 0 {
			i++
			continue
		}
		s, e := spanStart, i
		for s < e && unicode.IsSpace(runes[s]) {
			s++
		}
		for e > s && unicode.IsSpace(runes[e-1]) {
			e--
		}
		if e > s {
			c := Citation{Index: len(out), Start: s, End: e, Text: string(runes[s:e])}
			for _, n := range nums {
				if n < 1 || n > len(srcs) {
					continue
				}
				src := srcs[n-1]
				snippet := truncate(strings.TrimSpace(src.Text), snippetChars)
				src.Text = ""
				c.Sources = append(c.Sources, CitedSource{Source: src, Snippet: snippet, Number: n})
			}
			if len(c.Sources) > 0 {
				out = append(out, c)
			}
		}
		spanStart = end
		i = end
	}
	return out
}

// readMarkers reads a run of canonical markers starting at runes[i] and
// returns their numbers and the index after the run.
func readMarkers(runes []rune, i int) ([]int, int) {
	var nums []int
	for i < len(runes) && runes[i] == '[' {
		j := i + 1
		for j < len(runes) && runes[j] >= '0' && runes[j] <= '9' {
			j++
		}
		if j == i+1 || j >= len(runes) || runes[j] != ']' {
			break
		}
		n, _ := strconv.Atoi(string(runes[i+1 : j]))
		nums = append(nums, n)
		i = j + 1
	}
	return nums, i
}

// contentWords returns the lower-cased words of s that carry content:
// letters or digits, at least three characters (or two digits), not a
// common function word.
func contentWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		n := utf8.RuneCountInString(f)
		digits := strings.IndexFunc(f, func(r rune) bool { return !unicode.IsDigit(r) }) < 0
		if n < 3 && !(digits && n >= 2) || stopwords[f] {
			continue
		}
		out[f] = true
	}
	return out
}

// stopwords are English function words that say nothing about a source.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for are but not you all any can had her was one our out has have him his how its may new now old see two who did get let put say she too use that with this from they will would there their what about which when make like time just know take into year your some could them than then look only come over also back after work first well even want because these give most very been were said each where such here more other many much should those being does done while through between under again still both same own off down upon yes answer question source sources`) {
		m[w] = true
	}
	return m
}()
