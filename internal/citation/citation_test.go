package citation

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

var srcs = []Source{
	{ID: "chunk_1", DocumentID: "doc_a", Title: "Engines", Text: "The zorblat engine runs on purple coolant and was first built in the harbour town of Qarth in 1872."},
	{ID: "chunk_2", DocumentID: "doc_b", Title: "Gardening", Text: "Quantum tomatoes ripen only in complete darkness, and their seeds hum softly at dawn."},
	{ID: "chunk_3", DocumentID: "doc_c", Title: "Aviation", Text: "The sky ships of Veloria float on warm helium and are steered by singing captains."},
}

// run feeds answer to a Writer in one piece and returns the final text.
func run(answer string, o Options) (string, *Writer) {
	w := NewWriter(srcs, o)
	out := w.Write(answer) + w.Flush()
	if out != w.Text() {
		panic("returned text differs from Text()")
	}
	return out, w
}

// chunked feeds in to a Writer in pieces of size bytes.
func chunked(in string, size int, o Options) string {
	w := NewWriter(srcs, o)
	var b strings.Builder
	for i := 0; i < len(in); i += size {
		b.WriteString(w.Write(in[i:min(i+size, len(in))]))
	}
	return b.String() + w.Flush()
}

func checkSpans(t *testing.T, answer string, w *Writer) {
	t.Helper()
	runes := []rune(answer)
	for i, c := range w.Citations() {
		if c.Index != i || c.Start < 0 || c.End > len(runes) || c.Start >= c.End || string(runes[c.Start:c.End]) != c.Text {
			t.Fatalf("citation %d does not slice the answer %q: %+v", i, answer, c)
		}
	}
	for _, u := range w.Unsupported() {
		if u.Start < 0 || u.End > len(runes) || string(runes[u.Start:u.End]) != u.Text {
			t.Fatalf("unsupported span does not slice the answer %q: %+v", answer, u)
		}
	}
}

// TestWriterAttributesSentences: the model writes prose; every sentence a
// source supports gets that source's marker after its final punctuation,
// the model's own markers are removed, and the rest is left unmarked.
func TestWriterAttributesSentences(t *testing.T) {
	cases := []struct {
		name, in, want string
		docs           [][]string // documents of each citation
	}{
		{"plain prose gets markers", "The zorblat engine runs on purple coolant. Quantum tomatoes ripen in darkness.",
			"The zorblat engine runs on purple coolant.[1] Quantum tomatoes ripen in darkness.[2]", [][]string{{"doc_a"}, {"doc_b"}}},
		{"the model's markers are replaced", "Sky ships float on warm helium [7]. The zorblat engine runs on purple coolant. [3]",
			"Sky ships float on warm helium.[3] The zorblat engine runs on purple coolant.[1]", [][]string{{"doc_c"}, {"doc_a"}}},
		{"a heading copied as markers goes", "[1][2][3] The zorblat engine was built in Qarth in 1872.",
			"The zorblat engine was built in Qarth in 1872.[1]", [][]string{{"doc_a"}}},
		{"brackets that are not markers stay", "See [note] and [1a] here.", "See [note] and [1a] here.", nil},
		{"a newline ends a sentence", "Veloria sky ships are steered by singing captains\n- Tomatoes hum at dawn",
			"Veloria sky ships are steered by singing captains[3]\n- Tomatoes hum at dawn[2]", [][]string{{"doc_c"}, {"doc_b"}}},
		{"an initial does not end a sentence", "Captain J. Veloria steers sky ships on warm helium.",
			"Captain J. Veloria steers sky ships on warm helium.[3]", [][]string{{"doc_c"}}},
		{"facts from two sources cite both", "The engine built in Qarth is carried by the sky ships of Veloria.",
			"The engine built in Qarth is carried by the sky ships of Veloria.[1][3]", [][]string{{"doc_a", "doc_c"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, w := run(c.in, Options{Cite: true})
			if got != c.want {
				t.Fatalf("answer\n got %q\nwant %q", got, c.want)
			}
			cits := w.Citations()
			if len(cits) != len(c.docs) {
				t.Fatalf("%d citations, want %d: %+v", len(cits), len(c.docs), cits)
			}
			checkSpans(t, got, w)
			for i, ci := range cits {
				var docs []string
				for _, s := range ci.Sources {
					docs = append(docs, s.DocumentID)
				}
				if strings.Join(docs, ",") != strings.Join(c.docs[i], ",") {
					t.Fatalf("citation %d cites %v, want %v", i, docs, c.docs[i])
				}
			}
		})
	}
}

// TestUnsupportedSentences: a sentence whose facts are in no source, or
// that adds words its sources do not have, gets no marker and is listed.
func TestUnsupportedSentences(t *testing.T) {
	q := "What coolant does the zorblat engine run on?"
	for _, c := range []struct {
		in, want    string
		unsupported []string
	}{
		{"The coolant is purple. The zorblat engine is a 1900-year-old engine.",
			"The coolant is purple.[1] The zorblat engine is a 1900-year-old engine.", []string{"The zorblat engine is a 1900-year-old engine."}},
		{"The zorblat engine was first built in Paris.", "The zorblat engine was first built in Paris.", []string{"The zorblat engine was first built in Paris."}},
		{"The zorblat engine runs on green coolant.", "The zorblat engine runs on green coolant.", []string{"The zorblat engine runs on green coolant."}},
		{"It runs on purple coolant. I hope this helps!", "It runs on purple coolant.[1] I hope this helps!", []string{"I hope this helps!"}},
	} {
		for size := 0; size <= 5; size++ {
			var out string
			w := NewWriter(srcs, Options{Cite: true, Question: q})
			if size == 0 {
				out = w.Write(c.in)
			} else {
				for i := 0; i < len(c.in); i += size {
					out += w.Write(c.in[i:min(i+size, len(c.in))])
				}
			}
			out += w.Flush()
			if out != c.want {
				t.Fatalf("%q (chunks of %d): %q, want %q", c.in, size, out, c.want)
			}
			checkSpans(t, out, w)
			var got []string
			for _, u := range w.Unsupported() {
				got = append(got, u.Text)
			}
			if strings.Join(got, "|") != strings.Join(c.unsupported, "|") {
				t.Fatalf("%q (chunks of %d): unsupported %q, want %q", c.in, size, got, c.unsupported)
			}
		}
	}
}

// TestAbstain: an answer with no supported sentence becomes the fixed
// sentence, streamed or not; one supported sentence keeps the answer,
// and what came before it is released with it.
func TestAbstain(t *testing.T) {
	o := Options{Cite: true, Abstain: true, Question: "How fast do sky ships fly?"}
	for _, in := range []string{"I don't know.", "The context does not say how fast they fly.", "Sky ships fly at 300 knots.", "Bananas are yellow fruit.", ""} {
		got, w := run(in, o)
		if got != DefaultAbstainText || !w.Abstained() || len(w.Citations()) != 0 || len(w.Unsupported()) != 0 {
			t.Fatalf("%q: %q, citations %v, unsupported %v; want the abstain text alone", in, got, w.Citations(), w.Unsupported())
		}
		for size := 1; size <= 4; size++ {
			if c := chunked(in, size, o); c != got {
				t.Fatalf("%q in chunks of %d: %q, want %q", in, size, c, got)
			}
		}
	}
	o.AbstainText = "No idea."
	if got, _ := run("Bananas are yellow fruit.", o); got != "No idea." {
		t.Fatalf("configured abstain text: %q", got)
	}
	in := "Good question. Sky ships of Veloria float on warm helium."
	w := NewWriter(srcs, Options{Cite: true, Abstain: true})
	if first := w.Write("Good question. "); first != "" {
		t.Fatalf("an unsupported first sentence was sent before support: %q", first)
	}
	got := "" + w.Write(in[len("Good question. "):]) + w.Flush()
	if got != "Good question. Sky ships of Veloria float on warm helium.[3]" || w.Abstained() {
		t.Fatalf("held text: %q", got)
	}
	checkSpans(t, got, w)
	if u := w.Unsupported(); len(u) != 1 || u[0].Text != "Good question." {
		t.Fatalf("unsupported: %+v", u)
	}
	// Without citations nothing is attributed, held or replaced.
	if got, _ := run("Bananas are yellow [2].", Options{Abstain: true}); got != "Bananas are yellow." {
		t.Fatalf("without cite: %q", got)
	}
}

func TestOffsetsAreCharacters(t *testing.T) {
	got, w := run("Ünïcode first: the zorblat engine runs on purple coolant [1].", Options{Cite: true})
	cits := w.Citations()
	if len(cits) != 1 {
		t.Fatalf("citations: %+v in %q", cits, got)
	}
	c := cits[0]
	if string([]rune(got)[c.Start:c.End]) != c.Text || !strings.HasPrefix(c.Text, "Ünïcode") {
		t.Fatalf("offsets are not character offsets: %+v in %q", c, got)
	}
}

// TestStreamingMatchesWhole checks that however the answer is cut into
// chunks, the Writer returns the same text as for the whole answer.
func TestStreamingMatchesWhole(t *testing.T) {
	for _, in := range []string{
		"The zorblat engine runs on purple coolant [1]. Quantum tomatoes ripen in darkness. [2] Sky ships [9] float on warm helium.",
		"Veloria ships are steered by singing captains\n\nThe zorblat engine dates from 1872 [1,3].",
		"[1] starts with a marker, then [ an open bracket and [12",
	} {
		for _, o := range []Options{{Cite: true}, {Cite: true, Abstain: true}, {}} {
			whole, _ := run(in, o)
			for size := 1; size <= 7; size++ {
				if got := chunked(in, size, o); got != whole {
					t.Fatalf("chunks of %d:\n got %q\nwant %q", size, got, whole)
				}
			}
		}
	}
}

// TestEmbedderDecides: with embeddings, the source closest in meaning wins
// among sources that hold the sentence's words, and a failing embedder
// leaves the decision to the words.
func TestEmbedderDecides(t *testing.T) {
	two := []Source{
		{DocumentID: "a", Title: "Harbour", Text: "Ships in Qarth carry purple coolant to the mills."},
		{DocumentID: "b", Title: "Mills", Text: "The mills of Qarth run on purple coolant that ships carry."},
	}
	calls := 0
	vec := func(s string) []float32 {
		if strings.Contains(s, "Mills") || strings.Contains(s, "mills run") {
			return []float32{0, 1}
		}
		return []float32{1, 0}
	}
	embed := func(_ context.Context, texts []string) ([][]float32, error) {
		calls++
		out := make([][]float32, len(texts))
		for i, t := range texts {
			out[i] = vec(t)
		}
		return out, nil
	}
	w := NewWriter(two, Options{Cite: true, Embed: embed})
	got := w.Write("In Qarth the mills run on purple coolant that ships carry.") + w.Flush()
	if c := w.Citations(); len(c) != 1 || c[0].Sources[0].DocumentID != "b" || calls != 2 {
		t.Fatalf("%q: citations %+v after %d embedder calls, want document b", got, c, calls)
	}
	failing := func(context.Context, []string) ([][]float32, error) { return nil, errors.New("no embedder") }
	w = NewWriter(two, Options{Cite: true, Embed: failing})
	if got := w.Write("Ships in Qarth carry purple coolant to the mills.") + w.Flush(); len(w.Citations()) != 1 {
		t.Fatalf("words alone: %q has no citation", got)
	}
}

func FuzzWriter(f *testing.F) {
	f.Add("The zorblat engine runs on purple coolant [1]. Tomatoes [2].", 3, true)
	f.Add("[[1]] [1,,2] [ 3 ] .[2]\n[1]", 1, false)
	f.Add("ÿ\xff[1", 2, true)
	f.Add("1. Dr. J. Smith flew. 2) Qarth 1872!\n", 4, true)
	f.Fuzz(func(t *testing.T, in string, size int, abstain bool) {
		if size < 1 || size > 64 {
			size = 1 + (size%8+8)%8
		}
		if !utf8.ValidString(in) {
			return // runners send whole characters; offsets count them
		}
		o := Options{Cite: true, Abstain: abstain, Question: "What runs on purple coolant?"}
		whole, w := run(in, o)
		if got := chunked(in, size, o); got != whole {
			t.Fatalf("chunked output differs:\n got %q\nwant %q", got, whole)
		}
		checkSpans(t, whole, w)
		for _, c := range w.Citations() {
			for _, s := range c.Sources {
				if s.Number < 1 || s.Number > len(srcs) {
					t.Fatalf("citation names source %d", s.Number)
				}
			}
		}
		if off, w := run(in, Options{}); len(w.Citations()) > 0 || strings.Count(off, "[") > strings.Count(in, "[") {
			t.Fatalf("citations or markers appeared with cite off: %q", off)
		}
	})
}

// TestAnswerGivesWhatIsAsked: a supported sentence that does not give the
// kind of thing the question asks for (a number, a time, a name) does not
// answer it, and the answer abstains.
func TestAnswerGivesWhatIsAsked(t *testing.T) {
	for _, c := range []struct {
		q, answer string
		abstains  bool
	}{
		{"How many captains steer each sky ship of Veloria?", "The sky ships of Veloria are steered by singing captains.", true},
		{"When was the zorblat engine first built?", "The zorblat engine runs on purple coolant.", true},
		{"When was the zorblat engine first built?", "The zorblat engine was first built in 1872.", false},
		{"Who steers the sky ships of Veloria?", "The sky ships of Veloria are steered by singing captains.", true},
		{"Where was the zorblat engine first built?", "It was first built in the harbour town of Qarth.", false},
		{"What do the seeds of quantum tomatoes do?", "Their seeds hum softly at dawn.", false},
	} {
		got, w := run(c.answer, Options{Cite: true, Abstain: true, Question: c.q})
		if w.Abstained() != c.abstains {
			t.Errorf("%q answered %q: %q (abstained %v, want %v)", c.q, c.answer, got, w.Abstained(), c.abstains)
		}
	}
	if k := expects("how MANY ships?"); k != numberAnswer {
		t.Fatalf("expects: %v", k)
	}
}

// reach is a corpus in which a wrong answer is made of right facts: the
// numbers and names of an unanswerable question's answer are in the
// sources, about something else.
var reach = []Source{
	{ID: "c1", DocumentID: "bell", Title: "The Veldor Bell", Text: "The Veldor Bell hangs in the clock tower of the Ostrand Exchange. It was cast in 1872 and weighs 2,340 kilograms. It was brought to Ostrand aboard the schooner Calloway Wren."},
	{ID: "c2", DocumentID: "wren", Title: "The Calloway Wren", Text: "The Calloway Wren was a trading schooner. Her hull was painted green. She carried 180 tonnes of salt from Saltgrave each summer. Her longest-serving master was Captain Ilse Marrow."},
	{ID: "c3", DocumentID: "exchange", Title: "The Ostrand Exchange", Text: "The Ostrand Exchange opened in 1868. The clock tower at its north corner was added in 1899. In 1890 its school had 640 pupils. Merchants traded grain there until 1961. Today the trading floor is a covered market, open every day. The Reach Council meets four times a year in the Exchange's upper hall."},
	{ID: "c4", DocumentID: "marrow", Title: "Ilse Marrow", Text: "Ilse Marrow was born in Cobble Tarn in 1838. Sailors called her the Weathercock."},
	{ID: "c5", DocumentID: "mills", Title: "Brindlecourt Mills", Text: "Brindlecourt Mills was a cotton mill on the river Lisk. It burned down in 1911."},
	{ID: "c7", DocumentID: "coop", Title: "The Saltgrave Pan Cooperative", Text: "The Saltgrave Pan Cooperative was formed in 1897 by 23 salt-making families."},
	{ID: "c8", DocumentID: "lantern", Title: "The Oskari Lantern Company", Text: "The Oskari Lantern Company of Velmouth has made lamps since 1879. Its founder, Pavo Oskari, patented a storm lantern."},
	{ID: "c6", DocumentID: "vesk", Title: "Jorunn Vesk", Text: "Her best-known work is the Reach Suite for brass band, first performed in 1895. She wrote four operas, of which only The Salt Wife is still staged."},
}

// TestAnswerIsAboutTheQuestion: a supported sentence answers only when
// what it adds to the question stands in its source next to what the
// question asks about, with the question's own numbers, the same
// quantities, and in a source about the question's subject (or linked to
// one). Otherwise the answer abstains; answers that hold stay.
func TestAnswerIsAboutTheQuestion(t *testing.T) {
	for _, c := range []struct {
		name, q, answer string
		abstains        bool
	}{
		{"a fact of a cargo is no population", "What is the population of Saltgrave?", "The population of Saltgrave is 180 tonnes.", true},
		{"the relation word in the source sentence", "What colour was the hull of the Calloway Wren?", "The hull of the Calloway Wren was green.", false},
		{"another fact of the right source", "Who paid for the Veldor Bell?", "The Veldor Bell was cast in 1872.", true},
		{"the question said back adds nothing", "What colour was the hull of the Calloway Wren?", "What colour was the hull of the Calloway Wren?", true},
		{"a year with a unit is no height", "How tall is the clock tower of the Ostrand Exchange?", "The clock tower of the Ostrand Exchange is 1899 metres tall.", true},
		{"the year asked for, not another fact's word", "Until what year was grain traded at the Ostrand Exchange?", "The Ostrand Exchange opened in 1868.", true},
		{"the year beside the relation word", "Until what year was grain traded at the Ostrand Exchange?", "Grain was traded there until 1961.", false},
		{"a name that opens the answer", "Who founded the Oskari Lantern Company?", "Pavo Oskari founded the Oskari Lantern Company of Velmouth.", false},
		{"a quantity with a word between", "How many families formed the Saltgrave Pan Cooperative?", "The cooperative was formed by 23 families.", false},
		{"the quantity as the source has it", "How much does the Veldor Bell weigh?", "The Veldor Bell weighs 2,340 kilograms.", false},
		{"the question's year must be in the source", "How many pupils did the Exchange's school have in 1900?", "The school had 640 pupils.", true},
		{"the question's year in the source", "How many pupils did the Exchange's school have in 1890?", "The school had 640 pupils.", false},
		{"a count from a source about something else", "How many pupils did Brindlecourt Mills train?", "Brindlecourt Mills trained 640 pupils.", true},
		{"where wants a place", "Where does the Reach Council meet?", "The Reach Council meets four times a year.", true},
		{"where answered with a place", "Where does the Reach Council meet?", "The Reach Council meets in the upper hall of the Exchange.", false},
		{"two linked sources", "Who captained the ship that carried the Veldor Bell?", "Captain Ilse Marrow was the master of the Calloway Wren.", false},
		{"linked the other way", "Where was the longest-serving master of the Calloway Wren born?", "Ilse Marrow was born in Cobble Tarn.", false},
		{"an irregular verb meets its base", "What did sailors call Ilse Marrow?", "Sailors called her the Weathercock.", false},
		{"a fact of the sentence before is another work", "Which opera by Jorunn Vesk is still staged?", "Jorunn Vesk's Reach Suite for brass band is still staged.", true},
		{"the work the opera sentence names", "Which opera by Jorunn Vesk is still staged?", "Only The Salt Wife is still staged.", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := NewWriter(reach, Options{Cite: true, Abstain: true, Question: c.q})
			got := w.Write(c.answer) + w.Flush()
			if w.Abstained() != c.abstains {
				t.Errorf("%q answered %q: %q (abstained %v, want %v)", c.q, c.answer, got, w.Abstained(), c.abstains)
			}
		})
	}
}

// TestExpectsTheFirstInterrogative: a question's kind is its first
// interrogative's, not a later "when".
func TestExpectsTheFirstInterrogative(t *testing.T) {
	for q, want := range map[string]answerKind{
		"Who swam ashore when the Perpetua was wrecked?":      nameAnswer,
		"What did she wear when she observed?":                anyAnswer,
		"In what year was the bell cast?":                     timeAnswer,
		"How many men came ashore when the ship was wrecked?": numberAnswer,
		"Where does the council meet?":                        placeAnswer,
	} {
		if got := expects(q); got != want {
			t.Errorf("expects(%q) = %v, want %v", q, got, want)
		}
	}
}
