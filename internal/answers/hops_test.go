package answers

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/inference/inferencetest"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// TestNestedFindsTheDescription: the description is the innermost noun
// phrase with a relative clause or an agent's "of"; it runs to the end of
// the question except for a passive question's own participle; questions
// that only ask for the description, or whose verb follows it after
// "did", are not nested.
func TestNestedFindsTheDescription(t *testing.T) {
	for _, c := range []struct{ q, desc, with string }{
		{"Who captained the ship that carried the Veldor Bell to Ostrand?", "the ship that carried the Veldor Bell to Ostrand", "Who captained X?"},
		{"When was the university that took over Cold Harbour Observatory founded?", "the university that took over Cold Harbour Observatory", "When was X founded?"},
		{"When was the lighthouse on the reef where the Perpetua was wrecked first lit?", "the reef where the Perpetua was wrecked", "When was the lighthouse on X first lit?"},
		// The participle is the clause's own: without it the clause has no verb.
		{"Who was the first president of the society that Liesel Anwar-Brook chaired?", "the society that Liesel Anwar-Brook chaired", "Who was the first president of X?"},
		{"How deep is the lake beside the village where Ilse Marrow was born?", "the village where Ilse Marrow was born", "How deep is the lake beside X?"},
		{"In which town was the composer of the Reach Suite born?", "the composer of the Reach Suite", "In which town was X born?"},
		{"What colour were the funnels of the line founded by the man who paid for the observatory?", "the man who paid for the observatory", "What colour were the funnels of the line founded by X?"},
		{"Who was the first director of Cold Harbour Observatory?", "", ""},
		{"What is the number of the house?", "", ""},
		{"How many workers did the foundry that cast the Veldor Bell employ at its height?", "", ""},
		{"Which ship carried the bell?", "", ""},
		{"What is the population of Saltgrave?", "", ""},
	} {
		n, ok := nested(c.q)
		if ok != (c.desc != "") || ok && (n.desc != c.desc || n.with("X") != c.with) {
			t.Errorf("%q: nested %v, desc %q, with %q; want %q, %q", c.q, ok, n.desc, n.with("X"), c.desc, c.with)
		}
	}
}

// TestNewNames: runs of capitalised words, joined by "&" or "of", not the
// sentence's opening word or a name the question has, each with the word
// after it.
func TestNewNames(t *testing.T) {
	q := "Who captained the ship that carried the Veldor Bell to Ostrand?"
	for s, want := range map[string][]sentenceName{
		"It was brought to Ostrand aboard the schooner Calloway Wren.":            {{"Calloway Wren", ""}},
		"It was cast at the Tallow & Vane foundry.":                               {{"Tallow & Vane", "foundry"}},
		"The observatory passed to the University of Velmouth in 1953.":           {{"University of Velmouth", "in"}},
		"She was built at the Greywater yard in Dunmere Flats, and sank in 1927.": {{"Greywater", "yard"}, {"Dunmere Flats", ""}},
		"The Veldor Bell was cast in 1872.":                                       nil,
	} {
		if got := newNames(s, q); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v, want %+v", s, got, want)
		}
	}
}

// TestTwoHopAnswer: a question that names its subject through a
// description is answered in two hops — the description resolved by the
// retrieved sentence that names the ship, the question asked again with
// her name over a second search, the resolving sentence leading the
// answer and cited — and asked as it was when that answers nothing.
func TestTwoHopAnswer(t *testing.T) {
	bell := hit(1, "The Veldor Bell", "The Veldor Bell hangs in the clock tower of the Exchange. It was carried to Ostrand aboard the schooner Calloway Wren. Amos Veldor paid for it.", 0.6)
	wren := hit(2, "Calloway Wren", "The Calloway Wren was a schooner of Velmouth. Her master was Captain Ilse Marrow, who captained her for fifteen years.", 0.5)
	mill := hit(3, "Brindlecourt Mills", "Brindlecourt Mills wove blankets in Harrowick.", 0.3)
	var queries []string
	st := &fakeStore{cols: []sources.Collection{{ID: "col_1", TeamID: "team_a", Name: "default", EmbeddingModel: "minilm"}},
		search: func(q string, _ sources.SearchOptions) []sources.Hit {
			queries = append(queries, q)
			if strings.Contains(q, "Calloway Wren") {
				return []sources.Hit{wren, bell, mill}
			}
			return []sources.Hit{bell, mill}
		}}
	svc := &Service{Store: st, Embed: embedFunc(func(texts []string) [][]float32 { return inferencetest.WordVectors(texts, 256) }), EmbeddingModel: "minilm"}
	const q = "Who captained the ship that carried the Veldor Bell to Ostrand?"
	prepare := func() *Answer {
		a, err := svc.Prepare(context.Background(), Request{TeamID: "team_a", Chat: question(q), Cite: true})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := prepare()
	if want := []string{q, "Who captained Calloway Wren?"}; !reflect.DeepEqual(queries, want) {
		t.Fatalf("searched %q, want %q", queries, want)
	}
	// The model sees the chunks about the ship, not the bell's.
	prompt := a.Chat.Messages[len(a.Chat.Messages)-1].Content
	if !strings.HasSuffix(prompt, "Question: Who captained Calloway Wren?") || !strings.Contains(prompt, "Ilse Marrow") || strings.Contains(prompt, "clock tower") {
		t.Fatalf("two-hop prompt:\n%s", prompt)
	}
	gen := func(text string) inference.Stream {
		return inference.StreamOf(inference.Event{Text: text}, inference.Event{Done: true, FinishReason: inference.FinishStop, Usage: &inference.Usage{PromptTokens: 50, CompletionTokens: 10}})
	}
	var asked []inference.CompletionRequest
	again := func(r inference.CompletionRequest) (inference.Stream, error) {
		asked = append(asked, r)
		return gen("Amos Veldor paid for the Veldor Bell."), nil
	}
	text, _ := drain(t, a.Settle(gen("Ilse Marrow captained the Calloway Wren."), again))
	if want := "It was carried to Ostrand aboard the schooner Calloway Wren.[3] Ilse Marrow captained the Calloway Wren.[1]"; text != want || len(asked) != 0 {
		t.Fatalf("two-hop answer %q (asked again %d times), want %q", text, len(asked), want)
	}
	cits, _, err := a.Finish(context.Background(), "resp_1", "m")
	if err != nil || len(cits) != 2 || cits[0].Sources[0].DocumentID != "doc_The Veldor Bell" || cits[1].Sources[0].DocumentID != "doc_Calloway Wren" {
		t.Fatalf("citations %+v, %v", cits, err)
	}

	// A second hop that answers nothing: the question as asked, over the
	// first search's chunks.
	queries = nil
	text, usage := drain(t, prepare().Settle(gen("The Calloway Wren was a schooner."), again))
	// (Then once more over the sentences about the question: "carried".)
	if len(asked) != 2 || !strings.HasSuffix(asked[0].Messages[len(asked[0].Messages)-1].Content, "Question: "+q) ||
		!strings.Contains(asked[0].Messages[len(asked[0].Messages)-1].Content, "clock tower") {
		t.Fatalf("asked again %d times: %+v", len(asked), asked)
	}
	if text != "The sources do not say." && !strings.HasPrefix(text, "Amos Veldor") || usage == nil || usage.PromptTokens != 150 {
		t.Fatalf("after the second hop: %q, usage %+v", text, usage)
	}
}

// TestNoHopWithoutADescription: a question with no description, or one
// whose description no retrieved sentence resolves, searches once.
func TestNoHopWithoutADescription(t *testing.T) {
	bell := hit(1, "The Veldor Bell", "The Veldor Bell hangs in the clock tower. Amos Veldor paid for it.", 0.6)
	var queries []string
	st := &fakeStore{cols: []sources.Collection{{ID: "col_1", TeamID: "team_a", Name: "default", EmbeddingModel: "minilm"}},
		search: func(q string, _ sources.SearchOptions) []sources.Hit {
			queries = append(queries, q)
			return []sources.Hit{bell}
		}}
	svc := &Service{Store: st, Embed: embedFunc(func(texts []string) [][]float32 { return inferencetest.WordVectors(texts, 256) }), EmbeddingModel: "minilm"}
	for _, q := range []string{"Who paid for the Veldor Bell?", "Who captained the ship that carried the Veldor Bell to Ostrand?"} {
		queries = nil
		a, err := svc.Prepare(context.Background(), Request{TeamID: "team_a", Chat: question(q), Cite: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(queries) != 1 || !strings.HasSuffix(a.Chat.Messages[len(a.Chat.Messages)-1].Content, "Question: "+q) {
			t.Errorf("%q: searched %q", q, queries)
		}
	}
}
