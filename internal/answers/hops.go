package answers

import (
	"context"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sovereign-ai/sovereign/internal/citation"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// A question that names what it asks about through something else — "Who
// captained the ship that carried the Veldor Bell to Ostrand?" — needs two
// sources: one that names the ship, one that names her captain. A small
// model given both chunks answers with the entity of the wrong one ("the
// Veldor Bell was captained by…"), or stops at the link; and the second
// chunk is often not retrieved at all, because the question does not name
// what it is about. Asked "Who captained the Calloway Wren?" the same
// model answers as well as any one-source question (bench/answers: one-doc
// 0.92, two-doc 0.57 before this). So the answer goes in two hops, as
// multi-hop retrieval does: the sentence of the first sources that
// resolves the description (the closest in meaning that brings a new name)
// gives the name, the question is asked again with the name in place of
// the description, the sources are searched again for it, and the answer
// shows the resolving sentence first, cited, then the model's answer.
// When that answers nothing the question is asked as it was.

// nestedQuestion is a question with a description in it: a noun phrase
// with a relative clause ("the ship that carried the Veldor Bell to
// Ostrand") or an agent noun of a name ("the composer of the Reach
// Suite"). start and end are byte offsets of the description in the
// question.
type nestedQuestion struct {
	question, desc string
	start, end     int
	// noun is the description's noun ("ship", "composer"); agent is
	// true for "the N of X", whose resolving sentence must name the N.
	noun  string
	agent bool
}

// with returns the question with name in place of the description.
func (n nestedQuestion) with(name string) string {
	return n.question[:n.start] + name + n.question[n.end:]
}

var relativeWords = map[string]bool{"that": true, "which": true, "who": true, "whom": true, "whose": true, "where": true}

// notAgents are nouns in -er, -or or -ist that name no one ("the number
// of", "the tower of"), so "the N of X" is no description of a person.
var notAgents = map[string]bool{"number": true, "tower": true, "water": true, "river": true, "letter": true, "other": true,
	"order": true, "quarter": true, "corner": true, "border": true, "manner": true, "winter": true, "summer": true,
	"power": true, "chapter": true, "colour": true, "color": true, "floor": true, "door": true, "interior": true,
	"exterior": true, "centre": true, "center": true, "shelter": true, "harbour": true, "harbor": true, "list": true,
	"mirror": true, "paper": true, "matter": true, "cover": true, "layer": true, "filter": true, "error": true}

// beForms are forms of "be" (and the perfect's "have"): a participle after
// one belongs to the clause it ends ("where Ilse Marrow was born").
var beForms = map[string]bool{"is": true, "are": true, "was": true, "were": true, "be": true, "been": true, "being": true,
	"has": true, "have": true, "had": true}

var articles = map[string]bool{"the": true, "a": true, "an": true, "of": true}

// interrogatives are the words that open a question ("In which …", "How
// deep …") without saying what it is about.
var interrogatives = map[string]bool{"who": true, "whom": true, "what": true, "which": true, "where": true, "when": true, "how": true,
	"why": true, "in": true, "at": true, "on": true, "did": true, "does": true, "do": true}

// adverbsBeforeVerb may stand between a description and its question's
// participle ("first lit").
var adverbsBeforeVerb = map[string]bool{"first": true, "last": true, "originally": true, "finally": true, "later": true, "once": true, "still": true}

// participles are irregular past participles that end a passive question
// ("When was X built?").
var participles = map[string]bool{"built": true, "lit": true, "held": true, "born": true, "made": true, "sold": true, "run": true,
	"won": true, "given": true, "taken": true, "written": true, "known": true, "found": true, "kept": true, "paid": true, "bought": true,
	"led": true, "begun": true, "grown": true, "sunk": true, "hung": true, "drawn": true, "worn": true, "told": true, "brought": true,
	"taught": true, "laid": true, "set": true, "cast": true, "shut": true, "put": true, "broken": true, "chosen": true, "seen": true}

// nested finds the description in a question: the innermost noun phrase
// opened by "the" with a relative clause or an agent noun of a name. The
// description runs to the question's end, except for a passive question's
// own participle ("When was the university that took over Cold Harbour
// Observatory founded?"). Questions whose verb follows the description
// after "did" or "does" ("How many workers did the foundry that cast the
// bell employ?") are left alone: where that verb starts is not known.
func nested(question string) (nestedQuestion, bool) {
	q := strings.TrimSpace(question)
	type word struct {
		text       string // lower case, punctuation trimmed
		start, end int
	}
	var ws []word
	for i := 0; i < len(q); {
		for i < len(q) && q[i] == ' ' {
			i++
		}
		j := i
		for j < len(q) && q[j] != ' ' {
			j++
		}
		if j > i {
			t := strings.TrimRightFunc(q[i:j], func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
			ws = append(ws, word{strings.ToLower(t), i, i + len(t)})
		}
		i = j
	}
	if len(ws) < 5 || !strings.HasSuffix(q, "?") {
		return nestedQuestion{}, false
	}
	upper := func(k int) bool {
		r, _ := utf8.DecodeRuneInString(q[ws[k].start:])
		return unicode.IsUpper(r)
	}
	// The innermost description: the last relative word (or "of" after an
	// agent noun) with "the" at most four words before it.
	start, noun, isAgent := -1, "", false
	for k := len(ws) - 2; k > 0 && start < 0; k-- {
		// "which" right after the question's first word asks ("In which
		// town…"); later it may be relative.
		rel := relativeWords[ws[k].text] && (ws[k].text != "which" || k > 1)
		agent := false
		if ws[k].text == "of" && k+1 < len(ws) {
			h := ws[k-1].text
			agent = !notAgents[h] && (strings.HasSuffix(h, "er") || strings.HasSuffix(h, "or") || strings.HasSuffix(h, "ist")) &&
				(upper(k+1) || ws[k+1].text == "the")
		}
		if !rel && !agent {
			continue
		}
		for t := k - 1; t >= 0 && t >= k-4; t-- {
			if ws[t].text == "the" {
				start, noun, isAgent = t, ws[k-1].text, agent
				break
			}
			if upper(t) || beForms[ws[t].text] {
				break
			}
		}
	}
	if start <= 0 {
		return nestedQuestion{}, false
	}
	end := len(ws)
	aux := ""
	for _, w := range ws[:start] {
		switch w.text {
		case "is", "are", "was", "were", "did", "does", "do":
			if aux == "" {
				aux = w.text
			}
		}
	}
	switch aux {
	case "did", "does", "do":
		return nestedQuestion{}, false
	case "is", "are", "was", "were":
		last := ws[len(ws)-1].text
		if (strings.HasSuffix(last, "ed") || participles[last]) && !beForms[ws[len(ws)-2].text] {
			e := len(ws) - 1
			if adverbsBeforeVerb[ws[e-1].text] {
				e--
			}
			// Only when the description keeps a verb of its own: in
			// "the society that Liesel Anwar-Brook chaired" the participle
			// is the clause's. An agent's "of X" never has one.
			if isAgent {
				end = e
			}
			for k := start + 2; k < e; k++ {
				if !upper(k) && !articles[ws[k].text] && !relativeWords[ws[k].text] {
					end = e
					break
				}
			}
		}
	}
	if end-start < 3 {
		return nestedQuestion{}, false
	}
	n := nestedQuestion{question: q, start: ws[start].start, end: ws[end-1].end, noun: noun, agent: isAgent}
	n.desc = q[n.start:n.end]
	// "Who was the first director of Cold Harbour Observatory?" asks
	// for the description itself: the question has nothing else.
	rest := false
	for _, w := range strings.FieldsFunc(strings.ToLower(n.with("")), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if !interrogatives[w] && !beForms[w] && !articles[w] {
			rest = true
		}
	}
	if !rest {
		return nestedQuestion{}, false
	}
	return n, true
}

// minBridge is the cosine a sentence needs with a description to resolve
// it (all-MiniLM-L6-v2; on bench/answers' two-document questions the
// resolving sentence scores 0.45–0.75 with its description).
const minBridge = 0.35

// bridge is a resolved description: the sentence of a retrieved source
// that names what the description describes, and that name.
type bridge struct {
	src      citation.Source
	sentence string
	name     string
}

// resolve finds the sentence of the retrieved sources that resolves the
// description: of the sentences that bring a name the question lacks, in
// a source that names one of the description's names, the one closest in
// meaning to it, with a bonus for each of its words the sentence has
// ("the shipyard that built the Orla Bright": "She was built at the
// Greywater yard", not "The Orla Bright was a paddle steamer … Velmouth").
// The sentence's name is the one that says it is the description's noun
// ("the University of Velmouth" for "the university that…", "the
// Greywater yard" for "the shipyard…"), else the one that titles another
// retrieved source, else its last.
func resolve(ctx context.Context, embed func(context.Context, []string) ([][]float32, error), n nestedQuestion, found []found) (bridge, bool) {
	descNames := capitalised(n.desc, n.question)
	descWords := describingWords(n.desc)
	qNames := capitalised(n.question, n.question)
	type cand struct {
		src            citation.Source
		sentence, name string
		words          int
	}
	var cands []cand
	var texts []string
	for _, f := range found {
		if !f.retrieved || !namesAny(f.src.Title+" "+f.src.Text, descNames) {
			continue
		}
		for _, s := range citation.Sentences(f.src.Text) {
			if n.agent && !hasStem(s, n.noun) {
				continue
			}
			var names []sentenceName
			for _, nm := range newNames(s, n.question) {
				if !namesAny(nm.text, qNames) {
					names = append(names, nm)
				}
			}
			if len(names) == 0 {
				continue
			}
			c := cand{src: f.src, sentence: s, name: names[len(names)-1].text}
			for _, nm := range names {
				for _, g := range found {
					if g.src.ID != f.src.ID && strings.Contains(strings.ToLower(g.src.Title), strings.ToLower(nm.text)) {
						c.name = nm.text
					}
				}
			}
			for _, nm := range names {
				switch {
				case hasStem(nm.text, n.noun) || nounOf(nm.text, n.noun):
					c.name = "the " + nm.text
				case nm.next != "" && nounOf(nm.next, n.noun):
					c.name = "the " + nm.text + " " + nm.next
				default:
					continue
				}
				break
			}
			for _, w := range descWords {
				if hasStem(s, w) {
					c.words++
				}
			}
			cands = append(cands, c)
			texts = append(texts, f.src.Title+": "+s)
		}
	}
	if len(cands) == 0 || len(texts) > maxBridgeSentences {
		return bridge{}, false
	}
	vecs, err := embed(ctx, append([]string{n.desc}, texts...))
	if err != nil || len(vecs) != len(texts)+1 {
		return bridge{}, false
	}
	best, bestScore := -1, 0.0
	for i, c := range cands {
		sim := cosine(vecs[0], vecs[i+1])
		if sim < minBridge {
			continue
		}
		if score := sim + wordBonus*float64(c.words); score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return bridge{}, false
	}
	c := cands[best]
	return bridge{src: c.src, sentence: c.sentence, name: c.name}, true
}

// wordBonus is what each of the description's own words in a sentence
// adds to its cosine with the description.
const wordBonus = 0.15

// nounOf reports whether word names the same kind of thing as noun: one
// holds the other ("yard" and "shipyard"), or they share their first five
// letters.
func nounOf(word, noun string) bool {
	w, n := strings.ToLower(word), strings.ToLower(noun)
	if len(w) < 3 || len(n) < 3 {
		return false
	}
	return strings.Contains(w, n) || strings.Contains(n, w) || len(w) >= 5 && len(n) >= 5 && w[:5] == n[:5]
}

// describingWords are a description's own words: not its names, its
// articles or its relative word ("ship", "carried").
func describingWords(desc string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(desc, func(r rune) bool { return !unicode.IsLetter(r) }) {
		r, _ := utf8.DecodeRuneInString(f)
		l := strings.ToLower(f)
		if unicode.IsUpper(r) || len(l) < 3 || relativeWords[l] || articles[l] || beForms[l] || minorWords[l] {
			continue
		}
		out = append(out, l)
	}
	return out
}

var minorWords = map[string]bool{"his": true, "her": true, "its": true, "their": true, "for": true, "and": true, "with": true,
	"from": true, "into": true, "most": true, "over": true}

// hopSources is how many chunks of the second search the model is shown:
// asked "Who captained the Calloway Wren?" over four chunks, the small
// default model names the master of another ship.
const hopSources = 2

// maxBridgeSentences bounds what one resolution embeds.
const maxBridgeSentences = 200

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		if i >= len(b) {
			break
		}
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// namesAny reports whether text has one of names (case-insensitively, as
// whole words).
func namesAny(text string, names []string) bool {
	words := map[string]bool{}
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		words[f] = true
		words[strings.TrimSuffix(f, "s")] = true
	}
	for _, n := range names {
		if words[strings.ToLower(n)] {
			return true
		}
	}
	return false
}

// capitalised returns the capitalised words of s that do not open
// question (its interrogative).
func capitalised(s, question string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if r, _ := utf8.DecodeRuneInString(f); unicode.IsUpper(r) && utf8.RuneCountInString(f) > 1 && !strings.HasPrefix(question, f+" ") {
			out = append(out, f)
		}
	}
	return out
}

// nameJoiners may stand inside a name ("Tallow & Vane", "University of
// Velmouth").
var nameJoiners = map[string]bool{"&": true, "of": true, "de": true, "van": true, "von": true, "la": true, "le": true}

// sentenceOpeners are capitalised words that open a sentence without
// naming anything.
var sentenceOpeners = map[string]bool{"the": true, "a": true, "an": true, "in": true, "it": true, "its": true, "he": true, "she": true,
	"her": true, "his": true, "they": true, "their": true, "this": true, "that": true, "these": true, "on": true, "at": true,
	"after": true, "before": true, "since": true, "from": true, "by": true, "for": true, "today": true, "when": true, "there": true,
	"as": true, "with": true, "during": true, "until": true, "each": true, "every": true, "most": true, "some": true, "all": true}

// sentenceName is a name in a sentence and the word right after it
// ("Greywater", "yard"), if any.
type sentenceName struct{ text, next string }

// newNames returns the names a sentence gives that the question does not
// have: runs of capitalised words (joined by "&", "of" and the like), not
// counting a sentence's opening word, none all of whose words are in the
// question.
func newNames(sentence, question string) []sentenceName {
	fields := strings.Fields(sentence)
	ql := strings.ToLower(question)
	var out []sentenceName
	var run []string
	flush := func(next string) {
		for len(run) > 0 && nameJoiners[strings.ToLower(run[len(run)-1])] {
			run, next = run[:len(run)-1], ""
		}
		if len(run) > 0 {
			inQuestion := true
			for _, w := range run {
				if !nameJoiners[strings.ToLower(w)] && !strings.Contains(ql, strings.ToLower(w)) {
					inQuestion = false
				}
			}
			if !inQuestion {
				out = append(out, sentenceName{strings.Join(run, " "), next})
			}
		}
		run = nil
	}
	for i, f := range fields {
		w := strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '&' })
		w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s")
		r, _ := utf8.DecodeRuneInString(w)
		switch {
		case w == "":
			flush("")
		case unicode.IsUpper(r) && !(i == 0 && sentenceOpeners[strings.ToLower(w)]) && utf8.RuneCountInString(w) > 1:
			run = append(run, w)
		case len(run) > 0 && nameJoiners[strings.ToLower(w)]:
			run = append(run, w)
		default:
			next := ""
			if strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) < 0 {
				next = strings.ToLower(w)
			}
			flush(next)
		}
		// A name ends at punctuation after it ("Calloway Wren, which…").
		if f != "&" && strings.TrimRightFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) != f {
			flush("")
		}
	}
	flush("")
	return out
}

// hop plans the two-hop answer of a nested question: the description
// resolved in the first sources, the question asked again with the name
// (searched again, its best chunks first, the resolving chunk with them),
// and the resolving sentence to lead the answer. nil when the question is
// not nested or its description is not resolved.
func (s *Service) hop(ctx context.Context, req Request, f form, cols []sources.Collection, found []found, o citation.Options, abstainText string) *attempt {
	if o.Embed == nil || len(cols) == 0 {
		return nil
	}
	n, ok := nested(Question(req.Chat.Messages))
	if !ok {
		return nil
	}
	b, ok := resolve(ctx, o.Embed, n, found)
	if !ok {
		return nil
	}
	q2 := n.with(b.name)
	so := s.searchOptions(req)
	so.TopK = max(so.TopK, hopSources+1) // the resolving chunk may come first
	hits, err := s.Store.Search(ctx, cols, q2, so)
	if err != nil {
		return nil
	}
	var srcs []citation.Source
	for _, h := range hits {
		if len(srcs) == hopSources {
			break
		}
		if ref := sources.ChunkRef(h.Chunk.ID); ref != b.src.ID {
			srcs = append(srcs, hitSource(h))
		}
	}
	if len(srcs) == 0 {
		return nil
	}
	chat := req.Chat
	chat.Messages = withQuestion(chat.Messages, q2)
	chat = f.request(chat, srcs, abstainText)
	// The resolving chunk is cited (the lead is its sentence), not shown:
	// the model answers the one-source question from the chunks about it.
	srcs = append(srcs, b.src)
	o.Question = q2
	return &attempt{chat: chat, w: citation.NewWriter(srcs, o), lead: b.sentence}
}

// withQuestion returns msgs with the last user message's text replaced.
func withQuestion(msgs []inference.Message, q string) []inference.Message {
	out := append([]inference.Message(nil), msgs...)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == "user" {
			out[i].Content = q
			break
		}
	}
	return out
}

// hasStem reports whether s has a word sharing the first five letters of
// word (all of it, when shorter): "painted" for "painter".
func hasStem(s, word string) bool {
	p := word
	if len(p) > 5 {
		p = p[:5]
	}
	for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}
