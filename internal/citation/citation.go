// Package citation turns generated prose into an answer with sources. The
// model is not asked to write markers (small models copy the sources'
// headings or loop on "[1][1][1]" when they are); it writes plain prose,
// and a [Writer] reads that prose as it streams, attributes each sentence
// to the source(s) that support it and writes the [n] markers itself,
// with character offsets into the answer, as Cohere's grounded generation
// and OpenAI's file-search annotations do.
//
// A sentence is supported by a source when
//
//   - its checkable facts — its numbers and the names it capitalises after
//     its first word — all appear in that source, and
//   - most of what it adds to the question (its content words that the
//     question does not have) is in that source, and
//   - its meaning is close to one of the source's sentences (cosine of
//     the deployment's embeddings, when an [Embedder] is given) or it
//     shares a third of its rarity-weighted content words with the source.
//
// When no single source holds all of a sentence's facts, two sources that
// together do (and each hold at least one) are cited together: answers
// that join two documents cite both.
//
// A sentence's quantities (a number with the word it counts, "640
// workers") must stand so in the source: "1899 metres" is not "in 1899".
//
// A supported sentence answers the question only when it gives the kind
// of thing asked for (a number, a time, a name, a place) and what it adds
// to the question stands in its source beside one of the question's
// relation words (in one sentence of it), in a
// source that has the question's numbers and is about its subject (names
// one of the question's names, or is linked to a source that does). A
// small model asked "What is the population of Saltgrave?" writes "The
// population of Saltgrave is 180 tonnes." from a sentence about a cargo:
// every fact is in the source, and it answers nothing.
//
// Markers a model writes anyway are removed. A sentence no source
// supports carries no marker and is listed by [Writer.Unsupported]. With
// [Options.Abstain], an answer in which no sentence is supported — a
// guess, or the model's own "I don't know" — becomes [Options.AbstainText]
// instead; while no sentence has been supported yet, the text is held
// back, so a streamed answer never shows a guess it then takes back.
//
// Markers are written in one canonical form, [1] or [1][3] for several,
// right after the sentence's final punctuation; a marker may trail its
// sentence by one chunk of a stream (the sentence's end is known only when
// the next character arrives).
package citation

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
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

// Span is a part of the answer: character offsets, End exclusive.
type Span struct {
	Start int    `json:"start"`
	End   int    `json:"end"`
	Text  string `json:"text"`
}

// Embedder returns one L2-normalised vector per text (the deployment's
// embedding model). Its errors make attribution fall back to words alone.
type Embedder func(ctx context.Context, texts []string) ([][]float32, error)

// DefaultAbstainText is what an answer says when its sources do not.
const DefaultAbstainText = "The sources do not say."

// Options configure a [Writer].
type Options struct {
	// Cite attributes sentences and writes markers; without it every
	// marker is removed and the text passes as it is.
	Cite bool
	// Abstain replaces an answer that has no supported sentence with
	// AbstainText (DefaultAbstainText when empty). Only with Cite.
	Abstain     bool
	AbstainText string
	// Question is what the answer answers: a short answer ("Purple.") is
	// compared with the sources together with it, and the words the
	// answer repeats from it need no source.
	Question string
	// Embed, when set, measures how close in meaning a sentence is to the
	// sources' sentences; Context bounds its calls.
	Embed   Embedder
	Context context.Context
}

// Thresholds of support (see the package comment). They were set on
// bench/answers' labelled set with all-MiniLM-L6-v2.
const (
	// minSimilarity is the cosine a sentence needs with one of the
	// source's sentences.
	minSimilarity = 0.5
	// minSupport is the share of a sentence's content-word weight a source
	// must hold, without embeddings or below minSimilarity; minShared the
	// number of shared words (or all of them, for a shorter sentence).
	minSupport = 0.34
	minShared  = 2
	// minNovel is the share of the words a sentence adds to the question
	// that its sources must hold (room for a paraphrased verb).
	minNovel = 0.5
	// shortSentence: a sentence with fewer content words is compared with
	// the sources together with the question it answers.
	shortSentence = 6
	// maxSourceSentences bounds what is embedded per answer.
	maxSourceSentences = 256
)

// maxMarker is the longest text held back as a possible model marker.
const maxMarker = 16

// snippetChars bounds a cited source's snippet.
const snippetChars = 300

// Writer settles an answer as its text arrives. Write takes generated text
// and returns the text that can go to the client now; Flush returns the
// rest at the end. The concatenation of everything returned is the final
// answer, which Citations and Unsupported describe. A Writer is not safe
// for concurrent use.
type Writer struct {
	srcs []Source
	opts Options

	words    []map[string]bool // content words (stemmed) of each source
	factSets []map[string]bool // fact words of each source
	idf      map[string]float64
	question map[string]bool   // the question's content words (stemmed)
	relation []string          // the question's relation words (see relates)
	qfacts   map[string]bool   // the question's facts and words, lower-cased
	qnames   []string          // the names the question gives
	subjects [][]string        // the names each source is about (its title's)
	units    []map[string]bool // each source's numbers with the words after them: "340 kilogram"
	sents    [][]sentence      // each source's sentences
	wants    answerKind        // what kind of thing the question asks for
	answered bool              // a supported sentence gives the kind asked for

	// Source sentences and their vectors, embedded once in the background
	// (started by NewWriter) and waited for by the first attribution.
	sentOf  []int // source index of each sentence
	vecs    [][]float32
	vecOnce sync.Once
	vecDone chan struct{}

	out      strings.Builder // the answer so far
	outRunes int
	returned int    // bytes of out already returned
	pending  string // input not yet settled (a possible marker, white space)
	cur      strings.Builder
	curAt    int  // character offset in out where cur began
	holding  bool // no sentence is supported yet: nothing is returned
	done     bool

	citations   []Citation
	unsupported []Span
	abstained   bool
	heldAll     bool // abstained with nothing returned before
}

// NewWriter returns a Writer for an answer drawing on srcs. With an
// Embedder it starts embedding the sources' sentences at once, so that
// the work overlaps the model reading its prompt.
func NewWriter(srcs []Source, o Options) *Writer {
	if o.AbstainText == "" {
		o.AbstainText = DefaultAbstainText
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	if !o.Cite {
		o.Abstain = false
	}
	w := &Writer{srcs: srcs, opts: o, idf: map[string]float64{}, holding: o.Abstain, vecDone: make(chan struct{})}
	df := map[string]int{}
	for _, s := range srcs {
		ws := contentWords(s.Title + " " + s.Text)
		w.words = append(w.words, ws)
		w.factSets = append(w.factSets, factWords(s.Title+" "+s.Text))
		for t := range ws {
			df[t]++
		}
	}
	for t, n := range df {
		w.idf[t] = math.Log(1 + float64(len(srcs))/float64(n))
	}
	for _, s := range srcs {
		w.subjects = append(w.subjects, subjectNames(s))
		w.units = append(w.units, sourceQuantities(s.Title+" "+s.Text))
		var ss []sentence
		for _, t := range splitSentences(s.Text) {
			ss = append(ss, sentence{text: t, words: contentWords(t), facts: factWords(t)})
		}
		w.sents = append(w.sents, ss)
	}
	w.question = contentWords(o.Question)
	w.relation = relationWords(o.Question)
	w.qfacts = factWords(o.Question)
	w.qnames = questionNames(o.Question)
	w.wants = expects(o.Question)
	if o.Cite && o.Embed != nil && len(srcs) > 0 {
		go w.embedSources()
	} else {
		close(w.vecDone)
	}
	return w
}

// embedSources embeds every source's sentences (its title with each, so
// that "It was built in 1872." still says what "it" is).
func (w *Writer) embedSources() {
	defer close(w.vecDone)
	var texts []string
	var of []int
	for i, s := range w.srcs {
		for _, sent := range w.sents[i] {
			if len(texts) == maxSourceSentences {
				break
			}
			t := sent.text
			if s.Title != "" {
				t = s.Title + ": " + sent.text
			}
			texts = append(texts, t)
			of = append(of, i)
		}
	}
	if len(texts) == 0 {
		return
	}
	vecs, err := w.opts.Embed(w.opts.Context, texts)
	if err != nil || len(vecs) != len(texts) {
		return // words alone decide
	}
	w.sentOf, w.vecs = of, vecs
}

// Write adds generated text and returns what can be sent now.
func (w *Writer) Write(text string) string {
	if w.done {
		return ""
	}
	w.pending += text
	w.drain(false)
	return w.release()
}

// Flush ends the answer and returns the text still held back. An answer
// with no supported sentence, under Options.Abstain, is AbstainText.
func (w *Writer) Flush() string {
	if w.done {
		return ""
	}
	w.drain(true)
	w.done = true
	if w.opts.Abstain && !w.answered {
		w.abstained = true
		w.heldAll = w.returned == 0
		w.out.Reset()
		w.out.WriteString(w.opts.AbstainText)
		w.outRunes = utf8.RuneCountInString(w.opts.AbstainText)
		w.citations, w.unsupported = nil, nil
		w.holding = false
	}
	return w.release()
}

// AbstainedUnseen reports whether the answer abstained with none of the
// generated text returned before (all of it was held back): another
// generation may still answer, and the client has seen nothing to take
// back. Call it after Flush.
func (w *Writer) AbstainedUnseen() bool { return w.abstained && w.heldAll }

// Reset forgets the answer written so far, to settle another generation
// for the same question and sources (the sources' analysis and vectors
// are kept). Only an answer that was held entirely may be reset: the
// client has seen none of it.
func (w *Writer) Reset() {
	w.out.Reset()
	w.cur.Reset()
	w.outRunes, w.returned, w.curAt = 0, 0, 0
	w.pending = ""
	w.holding, w.done, w.answered, w.abstained, w.heldAll = w.opts.Abstain, false, false, false, false
	w.citations, w.unsupported = nil, nil
}

// Relevant returns the sentences of text that hold one of the question's
// relation words (see relates), joined by spaces; empty when none does.
// A second try at an answer shows the model only these: a small model
// that missed the answer in whole chunks finds it among a few sentences.
func Relevant(question, text string) string {
	rel := relationWords(question)
	var keep []string
	for _, s := range splitSentences(text) {
		if relatedIn(contentWords(s), rel) {
			keep = append(keep, s)
		}
	}
	return strings.Join(keep, " ")
}

// release returns what of the answer the client has not had, unless the
// answer is being held back.
func (w *Writer) release() string {
	if w.holding {
		return ""
	}
	s := w.out.String()[w.returned:]
	w.returned = w.out.Len()
	return s
}

// Text returns the answer written so far (all of it after Flush).
func (w *Writer) Text() string { return w.out.String() }

// Abstained reports whether the answer was replaced by the abstain text.
func (w *Writer) Abstained() bool { return w.abstained }

// Citations lists the answer's citations. Call it after Flush.
func (w *Writer) Citations() []Citation {
	if w.citations == nil {
		return []Citation{}
	}
	return w.citations
}

// Unsupported lists the sentences of the answer that no source supports
// (they carry no marker). Call it after Flush.
func (w *Writer) Unsupported() []Span {
	if w.unsupported == nil {
		return []Span{}
	}
	return w.unsupported
}

// drain settles what of pending it can; at the end (final) everything.
func (w *Writer) drain(final bool) {
	p := w.pending
	w.pending = ""
	for len(p) > 0 {
		r, size := utf8.DecodeRuneInString(p)
		switch {
		case r == '[':
			if n, wait := markerAt(p, final); wait {
				w.pending = p
				return
			} else if n > 0 {
				p = p[n:] // the model's marker: Sovereign writes its own
				continue
			}
			w.text(p[:1])
			p = p[1:]
		case unicode.IsSpace(r):
			n := len(p) - len(strings.TrimLeftFunc(p, unicode.IsSpace))
			ws, rest := p[:n], p[n:]
			if rest == "" && !final {
				w.pending = p // what follows decides
				return
			}
			if strings.HasPrefix(rest, "[") {
				if m, wait := markerAt(rest, final); wait {
					w.pending = p
					return
				} else if m > 0 {
					p = rest[m:] // a marker takes the space before it
					continue
				}
			}
			if strings.ContainsRune(ws, '\n') || rest == "" || w.sentenceEnded() {
				w.closeSentence()
				if rest == "" && w.opts.Cite {
					p = rest // an attributed answer ends with its last marker
					continue
				}
				w.emit(ws)
			} else {
				w.text(ws)
			}
			p = rest
		default:
			w.text(p[:size])
			p = p[size:]
		}
	}
	if final {
		w.closeSentence()
	}
}

// markerAt reports whether p starts with a model's marker ([1], [1, 2]):
// its length, or wait when p is a marker's beginning and more may come.
func markerAt(p string, final bool) (n int, wait bool) {
	end := strings.IndexByte(p, ']')
	if end < 0 {
		return 0, !final && len(p) < maxMarker && markerPrefix(p[1:])
	}
	if end >= maxMarker {
		return 0, false
	}
	if _, ok := parseMarker(p[1:end]); ok {
		return end + 1, false
	}
	return 0, false
}

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

// emit appends text outside any sentence (the white space between them).
func (w *Writer) emit(s string) {
	if w.opts.Cite && w.out.Len() == 0 && strings.TrimSpace(s) == "" {
		return // an answer starts with its text (a removed marker may leave a space)
	}
	w.out.WriteString(s)
	w.outRunes += utf8.RuneCountInString(s)
}

// text appends text of the current sentence.
func (w *Writer) text(s string) {
	if w.cur.Len() == 0 {
		if strings.TrimSpace(s) == "" {
			w.emit(s)
			return
		}
		w.curAt = w.outRunes
	}
	w.cur.WriteString(s)
	w.emit(s)
}

// sentenceEnded reports whether the current sentence ends with final
// punctuation (before closing quotes or brackets) that is not an
// abbreviation's or an initial's.
func (w *Writer) sentenceEnded() bool {
	s := strings.TrimRightFunc(w.cur.String(), func(r rune) bool { return strings.ContainsRune(`"')]”’»*`, r) })
	r, size := utf8.DecodeLastRuneInString(s)
	if !isTerminal(r) {
		return false
	}
	if r != '.' {
		return true
	}
	word := s[:len(s)-size]
	if i := strings.LastIndexFunc(word, func(r rune) bool { return unicode.IsSpace(r) || r == '(' }); i >= 0 {
		word = word[i+1:]
	}
	if utf8.RuneCountInString(word) == 1 && unicode.IsUpper([]rune(word)[0]) {
		return false // an initial: "J. Smith"
	}
	return !abbreviations[strings.ToLower(word)]
}

var abbreviations = map[string]bool{"e.g": true, "i.e": true, "mr": true, "mrs": true, "ms": true, "dr": true, "st": true,
	"no": true, "vs": true, "approx": true, "fig": true, "cf": true, "capt": true, "gen": true, "prof": true, "jr": true, "sr": true}

func isTerminal(r rune) bool { return r == '.' || r == '!' || r == '?' || r == '。' }

// closeSentence settles the current sentence: its markers, its citation,
// or its place among the unsupported.
func (w *Writer) closeSentence() {
	// cur never ends in white space: drain closes a sentence before it
	// emits the space that follows.
	text := w.cur.String()
	w.cur.Reset()
	if text == "" || !w.opts.Cite {
		return
	}
	span := Span{Start: w.curAt, End: w.curAt + utf8.RuneCountInString(text), Text: text}
	nums, claim := w.attribute(text)
	if len(nums) == 0 {
		if claim {
			w.unsupported = append(w.unsupported, span)
		}
		return
	}
	c := Citation{Index: len(w.citations), Start: span.Start, End: span.End, Text: span.Text}
	for _, n := range nums {
		src := w.srcs[n-1]
		snippet := truncate(strings.TrimSpace(src.Text), snippetChars)
		src.Text = ""
		c.Sources = append(c.Sources, CitedSource{Source: src, Snippet: snippet, Number: n})
		w.emit("[" + strconv.Itoa(n) + "]")
	}
	w.citations = append(w.citations, c)
	// A supported sentence that does not give what the question asks
	// ("How many captains…?" answered "Singing captains steer them.")
	// does not answer it: the answer stays held, and abstains if nothing
	// else does.
	if w.wants.in(text, w.opts.Question) && w.relates(text, nums) {
		w.answered = true
		w.holding = false
	}
}

// attribute returns the numbers of the sources that support sentence
// (none when no source or pair of sources does), and whether the
// sentence states anything (a claim; an abstention or a bare connective
// does not).
func (w *Writer) attribute(sentence string) ([]int, bool) {
	claimText := stripBullet(sentence)
	cw := contentWords(claimText)
	fs := facts(claimText)
	qs := quantities(claimText)
	if len(cw) == 0 && len(fs) == 0 {
		return nil, false
	}
	if w.isAbstention(claimText) {
		return nil, false
	}
	if len(w.srcs) == 0 {
		return nil, true
	}
	var novel []string
	for t := range cw {
		if !w.question[t] {
			novel = append(novel, t)
		}
	}
	// Meaning is measured (an embedding call) only when some source, or
	// pair of sources, holds the sentence's facts and words at all.
	var sim []float64
	if w.anyHolds(fs, novel) {
		sim = w.similarity(claimText, len(cw))
	}
	type cand struct {
		i       int
		score   float64
		factsOK bool
		have    map[string]bool // facts this source holds
	}
	cands := make([]cand, len(w.srcs))
	best := -1
	for i := range w.srcs {
		have := map[string]bool{}
		for _, f := range fs {
			if w.factSets[i][f] {
				have[f] = true
			}
		}
		c := cand{i: i, factsOK: len(have) == len(uniq(fs)) && w.quantitiesHeld(qs, i, -1), have: have}
		lex := w.support(cw, i)
		c.score = lex
		if sim != nil {
			c.score = math.Max(sim[i], lex)
		}
		cands[i] = c
		if c.factsOK && w.novelHeld(novel, i, -1) && w.close(cw, i, sim) && (best < 0 || c.score > cands[best].score) {
			best = i
		}
	}
	if best >= 0 {
		return []int{best + 1}, true
	}
	// Two sources that hold the facts between them, each some of them.
	if len(fs) < 2 {
		return nil, true
	}
	bi, bj, bs := -1, -1, 0.0
	for i := range cands {
		for j := i + 1; j < len(cands); j++ {
			a, b := cands[i], cands[j]
			if len(a.have) == 0 || len(b.have) == 0 || a.factsOK || b.factsOK {
				continue
			}
			all, onlyA, onlyB := true, false, false
			for _, f := range fs {
				switch {
				case a.have[f] && !b.have[f]:
					onlyA = true
				case b.have[f] && !a.have[f]:
					onlyB = true
				case !a.have[f] && !b.have[f]:
					all = false
				}
			}
			if !all || !onlyA || !onlyB || !w.quantitiesHeld(qs, i, j) || !w.novelHeld(novel, i, j) || !(w.close(cw, i, sim) || w.close(cw, j, sim) || w.supportPair(cw, i, j) >= minSupport) {
				continue
			}
			if s := a.score + b.score; s > bs {
				bi, bj, bs = i, j, s
			}
		}
	}
	if bi >= 0 {
		return []int{bi + 1, bj + 1}, true
	}
	return nil, true
}

// quantitiesHeld reports whether sources i (and j, when ≥ 0) hold each of
// a sentence's quantities — a number with the word it counts or measures
// ("1899 metres" is not "in 1899"; "640 workers" not "640 pupils").
func (w *Writer) quantitiesHeld(qs map[string]bool, i, j int) bool {
	for q := range qs {
		if !w.units[i][q] && !(j >= 0 && w.units[j][q]) {
			return false
		}
	}
	return true
}

// quantities returns the quantities of a text: each number (its last
// digit run) with the content word right after it, stemmed ("2,340
// kilograms" → "340 kilogram"). A number followed by a function word, a
// name or punctuation ("in 1872 at", "1872.") is no quantity.
func quantities(s string) map[string]bool {
	out := map[string]bool{}
	fields := strings.Fields(s)
	for k := 0; k+1 < len(fields); k++ {
		num := strings.TrimLeft(fields[k], "(\"'")
		if num == "" || !unicode.IsDigit([]rune(num)[0]) || strings.IndexFunc(num, func(r rune) bool { return !unicode.IsDigit(r) && r != ',' && r != '.' }) >= 0 {
			continue
		}
		if strings.ContainsAny(num[len(num)-1:], ",.") {
			continue // the number ends a clause
		}
		next := fields[k+1]
		r, _ := utf8.DecodeRuneInString(next)
		word := strings.ToLower(strings.TrimRightFunc(next, func(r rune) bool { return !unicode.IsLetter(r) }))
		if !unicode.IsLower(r) || utf8.RuneCountInString(word) < 3 || stopwords[word] || strings.IndexFunc(word, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
			continue
		}
		runs := digitRuns(num)
		out[runs[len(runs)-1]+" "+stem(word)] = true
	}
	return out
}

// sourceQuantities returns what a source's numbers may count: each
// number (its last digit run) with each of the three words after it,
// stemmed ("23 salt-making families" → "23 salt", "23 making", "23
// famili"), so that an answer's "23 families" stands.
func sourceQuantities(s string) map[string]bool {
	out := map[string]bool{}
	fields := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != ',' && r != '.' })
	for k, f := range fields {
		f = strings.Trim(f, ",.")
		if f == "" || !unicode.IsDigit([]rune(f)[0]) {
			continue
		}
		runs := digitRuns(f)
		if len(runs) == 0 {
			continue
		}
		n := runs[len(runs)-1]
		for _, next := range fields[k+1 : min(len(fields), k+4)] {
			out[n+" "+stem(strings.ToLower(strings.Trim(next, ",.")))] = true
		}
	}
	return out
}

// anyHolds reports whether some source holds all the facts fs and the
// novel words, or any two sources hold the facts between them (the
// precondition of support, checked before measuring meaning).
func (w *Writer) anyHolds(fs, novel []string) bool {
	covered := map[string]bool{}
	for i := range w.srcs {
		all := true
		for _, f := range fs {
			if w.factSets[i][f] {
				covered[f] = true
			} else {
				all = false
			}
		}
		if all && w.novelHeld(novel, i, -1) {
			return true
		}
	}
	return len(fs) >= 2 && len(covered) == len(uniq(fs))
}

// close reports whether source i is close to the sentence: in meaning
// (sim, when embedded) or in its rarity-weighted words.
func (w *Writer) close(cw map[string]bool, i int, sim []float64) bool {
	if sim != nil && sim[i] >= minSimilarity {
		return true
	}
	n := 0
	for t := range cw {
		if w.words[i][t] {
			n++
		}
	}
	return n >= min(minShared, len(cw)) && n > 0 && w.support(cw, i) >= minSupport
}

// novelHeld reports whether sources i (and j, when ≥ 0) hold at least
// minNovel of the words the sentence adds to the question.
func (w *Writer) novelHeld(novel []string, i, j int) bool {
	if len(novel) == 0 {
		return true
	}
	n := 0
	for _, t := range novel {
		if w.words[i][t] || j >= 0 && w.words[j][t] {
			n++
		}
	}
	return float64(n) >= minNovel*float64(len(novel))
}

// similarity returns, per source, the best cosine between the sentence
// (with the question, when it is short) and the source's sentences; nil
// without embeddings.
func (w *Writer) similarity(sentence string, contentWords int) []float64 {
	if w.opts.Embed == nil {
		return nil
	}
	<-w.vecDone
	if len(w.vecs) == 0 {
		return nil
	}
	text := sentence
	if contentWords < shortSentence && w.opts.Question != "" {
		text = w.opts.Question + " " + sentence
	}
	v, err := w.opts.Embed(w.opts.Context, []string{text})
	if err != nil || len(v) != 1 {
		return nil
	}
	out := make([]float64, len(w.srcs))
	for k, sv := range w.vecs {
		if d := dot(v[0], sv); d > out[w.sentOf[k]] {
			out[w.sentOf[k]] = d
		}
	}
	return out
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range min(len(a), len(b)) {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// support is the idf-weighted share of the content words cw that source i
// holds (0 to 1).
func (w *Writer) support(cw map[string]bool, i int) float64 {
	return w.supportPair(cw, i, -1)
}

// supportPair is support over sources i and j together (j < 0: i alone).
func (w *Writer) supportPair(cw map[string]bool, i, j int) float64 {
	var total, shared float64
	for t := range cw {
		wt := w.idf[t]
		if wt == 0 {
			wt = math.Log(1 + float64(len(w.srcs))) // a word no source has
		}
		total += wt
		if w.words[i][t] || j >= 0 && w.words[j][t] {
			shared += wt
		}
	}
	if total == 0 {
		return 0
	}
	return shared / total
}

// sentence is a source sentence: its text (embedded once), content words
// and fact words.
type sentence struct {
	text         string
	words, facts map[string]bool
}

// relates reports whether a supported sentence answers what the question
// asks about, not just something its sources say: what the sentence adds
// to the question (one of its new facts or words) must stand in one of
// its sources in a sentence that has one of the question's relation
// words. "What is the population of Saltgrave?"
// answered "The population of Saltgrave is 180 tonnes." takes 180 tonnes
// from a sentence about a cargo, where no population is; "Who paid for the
// bell?" answered with where it was cast names no payer. A sentence that
// adds nothing to the question (the question said back) answers nothing.
func (w *Writer) relates(text string, nums []int) bool {
	var newFacts, newWords []string
	for _, f := range facts(text) {
		if !w.qfacts[f] {
			newFacts = append(newFacts, f)
		}
	}
	for t := range contentWords(text) {
		if !w.question[t] {
			newWords = append(newWords, t)
		}
	}
	if len(newFacts) == 0 && len(newWords) == 0 {
		return false
	}
	// What stands beside the relation word must be the kind of thing
	// asked for, when the sentence has one: the year of "Until what year
	// was grain traded?", not the "opened" of a sentence about opening
	// days; for "who", the name.
	switch w.wants {
	case numberAnswer, timeAnswer:
		var fs, ws []string
		for _, f := range newFacts {
			if r, _ := utf8.DecodeRuneInString(f); unicode.IsDigit(r) || months[f] {
				fs = append(fs, f)
			}
		}
		for _, t := range newWords {
			if numberWords[t] || months[t] {
				ws = append(ws, t)
			}
		}
		if len(fs)+len(ws) > 0 {
			newFacts, newWords = fs, ws
		}
	case nameAnswer:
		// The name may open the sentence, where facts does not read
		// capitals ("Pavo Oskari founded it.").
		if f := strings.FieldsFunc(text, notWordRune); len(f) > 0 {
			if r, _ := utf8.DecodeRuneInString(f[0]); unicode.IsUpper(r) && !stopwords[strings.ToLower(f[0])] && !w.qfacts[strings.ToLower(f[0])] {
				newFacts = append(newFacts, strings.ToLower(f[0]))
			}
		}
		if len(newFacts) > 0 {
			newWords = nil
		}
	}
	// A question about a year or a count ("in 1900") is answered from a
	// source that has that number.
	for _, f := range digitFacts(w.opts.Question) {
		held := false
		for _, n := range nums {
			held = held || w.factSets[n-1][f]
		}
		if !held {
			return false
		}
	}
	for _, n := range nums {
		for _, s := range w.sents[n-1] {
			if holdsAny(s.facts, newFacts) || holdsAny(s.words, newWords) {
				if (len(w.relation) == 0 || relatedIn(s.words, w.relation)) && w.about(n-1) {
					return true
				}
			}
		}
	}
	return false
}

// holdsAny reports whether set holds one of xs.
func holdsAny(set map[string]bool, xs []string) bool {
	for _, x := range xs {
		if set[x] {
			return true
		}
	}
	return false
}

// about reports whether source i is about what the question names: it
// names one of the question's names itself, or another source that does
// and source i are linked — one names the other's subject (the names of
// its title) — as a two-document answer needs ("the ship that carried the
// bell": the bell's source names the ship whose source holds her
// captain). "How many workers did
// Brindlecourt Mills employ?" answered from a foundry's source that no
// Brindlecourt source mentions is about something else.
func (w *Writer) about(i int) bool {
	if len(w.qnames) == 0 || w.namesAny(i, w.qnames) {
		return true
	}
	for j := range w.srcs {
		if j != i && w.namesAny(j, w.qnames) && (w.namesAny(j, w.subjects[i]) || w.namesAny(i, w.subjects[j])) {
			return true
		}
	}
	return false
}

// namesAny reports whether source i (its title or text) has one of names.
func (w *Writer) namesAny(i int, names []string) bool {
	for _, n := range names {
		if w.factSets[i][n] {
			return true
		}
	}
	return false
}

// subjectNames returns the names a source is about: the words its title
// capitalises that its text capitalises too ("Tallow" and "Vane" of
// "Tallow & Vane Foundry", not "Foundry" when the text says "foundry").
func subjectNames(s Source) []string {
	inText := map[string]bool{}
	for _, f := range strings.FieldsFunc(s.Text, notWordRune) {
		if r, _ := utf8.DecodeRuneInString(f); unicode.IsUpper(r) {
			inText[f] = true
		}
	}
	var out []string
	for _, f := range strings.FieldsFunc(s.Title, notWordRune) {
		if r, _ := utf8.DecodeRuneInString(f); unicode.IsUpper(r) && inText[f] && !stopwords[strings.ToLower(f)] {
			out = append(out, strings.ToLower(f))
		}
	}
	return out
}

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// questionNames returns the names a question gives (the words it
// capitalises after its first), lower-cased.
func questionNames(question string) []string {
	var out []string
	for i, f := range strings.FieldsFunc(question, notWordRune) {
		if r, _ := utf8.DecodeRuneInString(f); i > 0 && unicode.IsUpper(r) && utf8.RuneCountInString(f) > 1 {
			out = append(out, strings.ToLower(f))
		}
	}
	return out
}

// digitFacts returns the digit runs of s.
func digitFacts(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, notWordRune) {
		out = append(out, digitRuns(f)...)
	}
	return out
}

// relatedIn reports whether words hold one of the relation stems, or a
// word sharing its first five letters ("design" and "designer").
func relatedIn(words map[string]bool, relation []string) bool {
	for _, r := range relation {
		if words[r] {
			return true
		}
		if len(r) < 5 {
			continue
		}
		for t := range words {
			if len(t) >= 5 && t[:5] == r[:5] {
				return true
			}
		}
	}
	return false
}

// relationWords returns what a question asks about, as stems: its
// content words that are not names (capitalised after its first word) and
// not words every question of its kind has ("name", "called").
func relationWords(question string) []string {
	var out []string
	seen := map[string]bool{}
	for i, f := range strings.FieldsFunc(question, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' }) {
		r, _ := utf8.DecodeRuneInString(f)
		if i > 0 && unicode.IsUpper(r) || unicode.IsDigit(r) {
			continue
		}
		for _, part := range strings.Split(strings.ToLower(f), "-") {
			if utf8.RuneCountInString(part) < 3 || stopwords[part] || generic[part] {
				continue
			}
			if t := stem(part); !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// generic are question words that say what kind of answer is wanted, not
// what it is about.
var generic = map[string]bool{"name": true, "named": true, "called": true, "kind": true, "type": true, "sort": true,
	"happen": true, "happened": true, "place": true, "thing": true, "things": true, "why": true, "whose": true, "whom": true}

// irregular maps irregular English verb forms to their base form, so that
// "Who built it?" meets "built" and "build".
var irregular = map[string]string{}

func init() {
	for _, l := range strings.Split(`build built|buy bought|sell sold|give gave given|lead led|teach taught|bring brought|win won|make made|begin began begun|write wrote written|grow grew grown|know knew known|hold held|keep kept|leave left|lose lost|pay paid|run ran|sink sank sunk|speak spoke spoken|steal stole stolen|take took taken|throw threw thrown|wear wore worn|fly flew flown|fall fell fallen|ring rang rung|rise rose risen|break broke broken|choose chose chosen|drive drove driven|eat ate eaten|forget forgot forgotten|freeze froze frozen|hide hid hidden|ride rode ridden|see saw seen|shake shook shaken|sing sang sung|swim swam swum|tell told|think thought|catch caught|fight fought|seek sought|feed fed|meet met|send sent|spend spent|stand stood|understand understood|lend lent|bend bent|dig dug|hang hung|shoot shot|sit sat|sleep slept|sweep swept|weep wept|deal dealt|feel felt|mean meant|bear bore born borne|tear tore torn|swear swore sworn|go went gone|come came|get got gotten|become became|draw drew drawn|blow blew blown|lie lay lain|strike struck|stick stuck|win won|weave wove woven|wake woke woken|light lit`, "|") {
		fs := strings.Fields(l)
		for _, f := range fs[1:] {
			irregular[f] = fs[0]
		}
	}
}

// answerKind is what a question asks for, as far as its first words
// tell: a number, a time, a name, or anything.
type answerKind int

const (
	anyAnswer answerKind = iota
	numberAnswer
	timeAnswer
	nameAnswer
	placeAnswer
)

// expects reads the kind of answer a question asks for from its
// interrogative ("How many …", "When …", "Who …"): the first one in it, so
// that "Who swam ashore when the ship was wrecked?" asks for a name.
func expects(question string) answerKind {
	q := " " + strings.ToLower(strings.Join(strings.FieldsFunc(question, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }), " ")) + " "
	kind, at := anyAnswer, len(q)
	for _, k := range []struct {
		kind    answerKind
		phrases []string
	}{
		{numberAnswer, []string{"how many", "how much", "how long", "how old", "how far", "how tall", "how high", "how heavy", "how deep", "how wide", "how fast", "what percentage", "what number"}},
		{timeAnswer, []string{"when", "what year", "which year", "what date", "which century", "what century"}},
		{nameAnswer, []string{"who", "whom", "whose"}},
		{placeAnswer, []string{"where"}},
		{anyAnswer, []string{"what", "which", "why", "how"}},
	} {
		for _, p := range k.phrases {
			if i := strings.Index(q, " "+p+" "); i >= 0 && i < at {
				kind, at = k.kind, i
			}
		}
	}
	return kind
}

// locatives are the prepositions that say where.
var locatives = map[string]bool{"in": true, "at": true, "on": true, "near": true, "inside": true, "outside": true, "above": true,
	"below": true, "beside": true, "under": true, "behind": true, "beneath": true, "along": true, "across": true, "off": true, "between": true}

// numberWords are numbers written out, and words that stand for them.
var numberWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred hundreds thousand thousands million millions dozen dozens half once twice single pair none no`) {
		numberWords[w] = true
	}
}

var months = map[string]bool{"january": true, "february": true, "march": true, "april": true, "may": true, "june": true, "july": true,
	"august": true, "september": true, "october": true, "november": true, "december": true, "spring": true, "summer": true,
	"autumn": true, "winter": true, "century": true, "solstice": true, "equinox": true, "dawn": true, "dusk": true, "midnight": true, "noon": true}

// in reports whether sentence gives the kind of answer: a number (digits
// or a number word), a time (also a month, season or century), a name (a
// capitalised word the question does not have).
func (k answerKind) in(sentence, question string) bool {
	words := strings.FieldsFunc(sentence, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, f := range words {
		r, _ := utf8.DecodeRuneInString(f)
		l := strings.ToLower(f)
		switch k {
		case anyAnswer:
			return true
		case numberAnswer:
			if unicode.IsDigit(r) || numberWords[l] {
				return true
			}
		case timeAnswer:
			if unicode.IsDigit(r) || months[l] || numberWords[l] {
				return true
			}
		case nameAnswer:
			if unicode.IsUpper(r) && utf8.RuneCountInString(f) > 1 && !strings.Contains(strings.ToLower(question), l) {
				return true
			}
		case placeAnswer:
			if unicode.IsUpper(r) && utf8.RuneCountInString(f) > 1 && !strings.Contains(strings.ToLower(question), l) || locatives[l] {
				return true
			}
		}
	}
	return k == anyAnswer
}

// abstentions are phrases with which a model says its sources do not
// answer (lower case, apostrophes straight).
var abstentions = []string{
	"i don't know", "i do not know", "do not say", "does not say", "don't say", "doesn't say",
	"do not mention", "does not mention", "doesn't mention", "don't mention", "not mentioned",
	"do not contain", "does not contain", "doesn't contain", "don't contain",
	"do not provide", "does not provide", "doesn't provide", "don't provide", "not provided",
	"no information", "not specified", "cannot be determined", "can't be determined",
	"not stated", "does not state", "do not state", "there is no mention",
}

// isAbstention reports whether a sentence says the sources do not answer.
func (w *Writer) isAbstention(s string) bool {
	l := strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(s, "’", "'"), "‘", "'"))
	if strings.Contains(l, strings.ToLower(strings.TrimRight(w.opts.AbstainText, "."))) {
		return true
	}
	for _, a := range abstentions {
		if strings.Contains(l, a) {
			return true
		}
	}
	return false
}

// stripBullet removes a list item's bullet or number.
func stripBullet(s string) string {
	t := strings.TrimLeft(s, " \t-*•")
	if i := strings.IndexAny(t, ".)"); i > 0 && i <= 3 {
		if _, err := strconv.Atoi(t[:i]); err == nil {
			t = t[i+1:]
		}
	}
	return strings.TrimSpace(t)
}

func uniq(xs []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// splitSentences cuts a source's text into sentences (at final
// punctuation followed by white space, and at line breaks).
func splitSentences(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		start := 0
		runes := []rune(line)
		for i, r := range runes {
			if isTerminal(r) && (i+1 == len(runes) || unicode.IsSpace(runes[i+1])) {
				if s := strings.TrimSpace(string(runes[start : i+1])); s != "" {
					out = append(out, s)
				}
				start = i + 1
			}
		}
		if s := strings.TrimSpace(string(runes[start:])); s != "" {
			out = append(out, s)
		}
	}
	return out
}

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

// Truncate cuts a source's text to at most n characters for a prompt, at
// a space when one is near, marking the cut with an ellipsis.
func Truncate(s string, n int) string { return truncate(s, n) }

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
			out = append(out, digitRuns(f)...)
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
		// "Qarth's" is a fact about Qarth.
		out[strings.TrimSuffix(f, "s")] = true
	}
	return out
}

// contentWords returns the stems of the words of s that carry content:
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
		out[stem(f)] = true
	}
	return out
}

// stem strips the commonest English inflections, so that "ships",
// "shipped" and "ship" meet.
func stem(w string) string {
	if base := irregular[w]; base != "" {
		return base
	}
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if strings.HasSuffix(w, suf) && utf8.RuneCountInString(w)-len(suf) >= 3 {
			return strings.TrimSuffix(w, suf)
		}
	}
	return w
}

// stopwords are English function words that say nothing about a source.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for are but not you all any can had her was one our out has have him his how its may new now old see two who did get let put say she too use that with this from they will would there their what about which when make like time just know take into year your some could them than then look only come over also back after work first well even want because these give most very been were said each where such here more other many much should those being does done while through between under again still both same own off down upon yes answer question source sources context based according provided text`) {
		m[w] = true
	}
	return m
}()

// Sentences cuts a source's text into sentences as attribution does (at
// final punctuation followed by white space, and at line breaks).
func Sentences(text string) []string { return splitSentences(text) }
