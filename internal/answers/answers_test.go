package answers

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// fakeStore is a sources store with function fields.
type fakeStore struct {
	cols   []sources.Collection
	search func(query string, o sources.SearchOptions) []sources.Hit
	links  []sources.SourceLink
}

func (f *fakeStore) Collection(_ context.Context, team, id string) (sources.Collection, error) {
	for _, c := range f.cols {
		if c.ID == id && c.TeamID == team {
			return c, nil
		}
	}
	return sources.Collection{}, sources.ErrNotFound
}

func (f *fakeStore) ListCollections(_ context.Context, team string) ([]sources.Collection, error) {
	var out []sources.Collection
	for _, c := range f.cols {
		if c.TeamID == team {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeStore) Search(_ context.Context, _ []sources.Collection, q string, o sources.SearchOptions) ([]sources.Hit, error) {
	return f.search(q, o), nil
}

func (f *fakeStore) RecordLinks(_ context.Context, l []sources.SourceLink) error {
	f.links = append(f.links, l...)
	return nil
}

// embedFunc is an Embedder from a function.
type embedFunc func(texts []string) [][]float32

func (f embedFunc) Embed(_ context.Context, r inference.EmbeddingRequest) (inference.EmbeddingResponse, error) {
	return inference.EmbeddingResponse{Embeddings: f(r.Input)}, nil
}

func hit(id int64, title, text string, vector float32) sources.Hit {
	return sources.Hit{Chunk: sources.Chunk{ID: id, DocumentID: "doc_" + title, CollectionID: "col_1", Text: text},
		Document: sources.Document{Title: title}, Vector: &vector}
}

func question(q string) inference.CompletionRequest {
	return inference.CompletionRequest{Messages: []inference.Message{{Role: "user", Content: q}}}
}

func newService(hits []sources.Hit) (*Service, *fakeStore) {
	st := &fakeStore{cols: []sources.Collection{{ID: "col_1", TeamID: "team_a", Name: "default", EmbeddingModel: "minilm"}},
		search: func(string, sources.SearchOptions) []sources.Hit { return hits }}
	return &Service{Store: st}, st
}

// TestPrepareAsksInTheFamilysForm: the sources are the context of the last
// user message with the question last, the form's system message comes
// before the caller's, at most the form's number of chunks are shown, a
// grounded answer gets the form's length, and a base model's form adds
// its stop strings.
func TestPrepareAsksInTheFamilysForm(t *testing.T) {
	var hits []sources.Hit
	for i, title := range []string{"Engines", "Ships", "Bells", "Mills", "Lighthouses", "Roads"} {
		hits = append(hits, hit(int64(i+1), title, title+" text number "+string(rune('A'+i))+".", 0.6))
	}
	svc, _ := newService(hits)
	chat := inference.CompletionRequest{Messages: []inference.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Earlier question?"}, {Role: "assistant", Content: "Earlier answer."},
		{Role: "user", Content: "What coolant does the zorblat engine run on?"}}}
	a, err := svc.Prepare(context.Background(), Request{TeamID: "team_a", Chat: chat, Cite: true, Family: "qwen2"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := a.Chat.Messages
	def := formFor("qwen2")
	if len(msgs) != 4 || msgs[0].Role != "system" || !strings.HasPrefix(msgs[0].Content, strings.ReplaceAll(def.System, "{abstain}", "The sources do not say.")) ||
		!strings.HasSuffix(msgs[0].Content, "\n\nBe brief.") || msgs[1].Content != "Earlier question?" {
		t.Fatalf("messages: %+v", msgs)
	}
	last := msgs[3].Content
	// The best chunk last, next to the question.
	if !strings.HasPrefix(last, "Context:\nMills\nMills text") || !strings.Contains(last, "Engines text number A.\n\nQuestion: What coolant does the zorblat engine run on?") {
		t.Fatalf("last user message:\n%s", last)
	}
	if len(a.Sources) != def.MaxSources || strings.Contains(last, "Lighthouses") || a.Chat.MaxTokens != def.MaxTokens || a.Abstains() {
		t.Fatalf("%d sources (want %d), max_tokens %d, abstains %v:\n%s", len(a.Sources), def.MaxSources, a.Chat.MaxTokens, a.Abstains(), last)
	}
	// The caller's max_tokens stands; gemma3's form stops at the paragraph.
	chat.MaxTokens = 40
	a, err = svc.Prepare(context.Background(), Request{TeamID: "team_a", Chat: chat, Cite: true, Family: "gemma3"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Chat.MaxTokens != 40 || !strings.Contains(strings.Join(a.Chat.Stop, "|"), "\n\n") {
		t.Fatalf("gemma3: max_tokens %d, stop %q", a.Chat.MaxTokens, a.Chat.Stop)
	}
	// Without sources asked for, the conversation is left alone.
	a, err = svc.Prepare(context.Background(), Request{TeamID: "team_a", Chat: chat})
	if err != nil || len(a.Chat.Messages) != len(chat.Messages) || a.Chat.Messages[3].Content != chat.Messages[3].Content {
		t.Fatalf("ungrounded: %v %+v", err, a.Chat.Messages)
	}
}

// TestNothingRelevantAbstainsWithoutTheModel: when the best chunk is not
// about the question, the answer is the abstain text and no generation is
// needed; {"abstain": false} asks the model anyway, and inline documents
// are always relevant.
func TestNothingRelevantAbstainsWithoutTheModel(t *testing.T) {
	svc, st := newService([]sources.Hit{hit(1, "Engines", "The zorblat engine runs on purple coolant.", 0.05)})
	svc.AbstainText = "No source says."
	a, err := svc.Prepare(context.Background(), Request{TeamID: "team_a", Chat: question("What is the capital of France?"), Cite: true})
	if err != nil || !a.Abstains() {
		t.Fatalf("abstains %v, %v", a != nil && a.Abstains(), err)
	}
	if got := a.Write("") + a.Flush(); got != "No source says." {
		t.Fatalf("answer %q", got)
	}
	cits, unsupported, err := a.Finish(context.Background(), "resp_1", "m")
	if err != nil || len(cits) != 0 || len(unsupported) != 0 || len(st.links) != 0 {
		t.Fatalf("finish: %v %v %v links %d", cits, unsupported, err, len(st.links))
	}
	if a, _ := svc.Prepare(context.Background(), Request{TeamID: "team_a", Chat: question("What is the capital of France?"), Cite: true, NoAbstain: true}); a.Abstains() {
		t.Fatal("abstain false still abstains")
	}
	a, _ = svc.Prepare(context.Background(), Request{TeamID: "team_a", Chat: question("What is the capital of France?"), Cite: true,
		Documents: []Document{{Text: "Paris is the capital of France."}}, Collections: []string{"col_1"}})
	if a.Abstains() {
		t.Fatal("an inline document did not count as relevant")
	}
}

// TestAnswerAttributesAndRecords: an answer's sentences are attributed
// with the collection's embedding model and every citation becomes a
// source link of the team.
func TestAnswerAttributesAndRecords(t *testing.T) {
	svc, st := newService([]sources.Hit{hit(7, "Engines", "The zorblat engine runs on purple coolant.", 0.7), hit(8, "Ships", "Sky ships float on helium.", 0.3)})
	var models []string
	svc.Embed = embedFunc(func(texts []string) [][]float32 {
		out := make([][]float32, len(texts))
		for i, t := range texts {
			out[i] = []float32{0, 1}
			if strings.Contains(strings.ToLower(t), "coolant") {
				out[i] = []float32{1, 0}
			}
		}
		return out
	})
	svc.Embed = recordModel{svc.Embed, &models}
	a, err := svc.Prepare(context.Background(), Request{TeamID: "team_a", KeyID: "key_1", Chat: question("What coolant does the zorblat engine run on?"), Cite: true})
	if err != nil {
		t.Fatal(err)
	}
	text := a.Write("It runs on purple ") + a.Write("coolant. ") + a.Flush()
	if text != "It runs on purple coolant.[1]" {
		t.Fatalf("answer %q", text)
	}
	cits, _, err := a.Finish(context.Background(), "resp_1", "qwen")
	if err != nil || len(cits) != 1 || len(st.links) != 1 || st.links[0].TeamID != "team_a" || st.links[0].ChunkID != "chunk_7" || st.links[0].ResponseID != "resp_1" {
		t.Fatalf("citations %+v links %+v err %v", cits, st.links, err)
	}
	if len(models) == 0 || models[0] != "minilm" {
		t.Fatalf("embedded with %v, want the collection's model", models)
	}
}

type recordModel struct {
	Embedder
	models *[]string
}

func (r recordModel) Embed(ctx context.Context, req inference.EmbeddingRequest) (inference.EmbeddingResponse, error) {
	*r.models = append(*r.models, req.Model)
	return r.Embedder.Embed(ctx, req)
}

// TestAnotherTeamsCollectionIsNotFound: a collection of another team is a
// 404 naming the field, as if it did not exist.
func TestAnotherTeamsCollectionIsNotFound(t *testing.T) {
	svc, _ := newService(nil)
	_, err := svc.Prepare(context.Background(), Request{TeamID: "team_b", Chat: question("q?"), Cite: true, Collections: []string{"col_1"}})
	var e *apierr.Error
	if !errors.As(err, &e) || e.Code != apierr.NotFound || e.Param != "sources.collections[0]" {
		t.Fatalf("%v", err)
	}
}

// TestFormsData: every family form in forms.json is complete once the
// default fills it in.
func TestFormsData(t *testing.T) {
	for name, f := range forms {
		if !strings.Contains(f.User, "{context}") || !strings.Contains(f.User, "{question}") || f.MaxSources <= 0 || f.MaxTokens <= 0 ||
			strings.Index(f.User, "{question}") < strings.Index(f.User, "{context}") {
			t.Fatalf("form %s: %+v", name, f)
		}
	}
	if formFor("GEMMA3").Stop == nil || formFor("unknown-family").User != forms["default"].User {
		t.Fatal("family lookup")
	}
}

// drain reads a settled stream to its end: the text and the last usage.
func drain(t *testing.T, st inference.Stream) (string, *inference.Usage) {
	t.Helper()
	var b strings.Builder
	for {
		ev, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(ev.Text)
		if ev.Done {
			return b.String(), ev.Usage
		}
	}
}

// TestSettleRetriesWithTheRelevantSentences: a first generation that
// answers nothing (a fact of the right source, not the one asked for) is
// never shown; the model is asked once more with only the sentences about
// the question, and the usage is both generations'. An answer that
// answers is not retried, a retry that answers nothing abstains, and
// {"abstain": false} keeps the first answer.
func TestSettleRetriesWithTheRelevantSentences(t *testing.T) {
	bell := "The Veldor Bell hangs in the clock tower of the Exchange. It was cast in 1872 at the Tallow foundry. Amos Veldor, a grain merchant, paid for the bell after a fog."
	svc, _ := newService([]sources.Hit{hit(1, "The Veldor Bell", bell, 0.7)})
	prepare := func(noAbstain bool) *Answer {
		a, err := svc.Prepare(context.Background(), Request{TeamID: "team_a", Chat: question("Who paid for the Veldor Bell?"), Cite: true, NoAbstain: noAbstain})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	gen := func(text string, prompt, completion int) inference.Stream {
		return inference.StreamOf(inference.Event{Text: text}, inference.Event{Done: true, FinishReason: inference.FinishStop, Usage: &inference.Usage{PromptTokens: prompt, CompletionTokens: completion}})
	}
	var asked []inference.CompletionRequest
	again := func(answer string) func(inference.CompletionRequest) (inference.Stream, error) {
		return func(r inference.CompletionRequest) (inference.Stream, error) {
			asked = append(asked, r)
			return gen(answer, 30, 8), nil
		}
	}

	a := prepare(false)
	text, usage := drain(t, a.Settle(gen("The Veldor Bell was cast in 1872.", 100, 10), again("Amos Veldor paid for the Veldor Bell.")))
	if text != "Amos Veldor paid for the Veldor Bell.[1]" || usage == nil || usage.PromptTokens != 130 || usage.CompletionTokens != 18 {
		t.Fatalf("retried answer %q, usage %+v", text, usage)
	}
	if len(asked) != 1 {
		t.Fatalf("asked again %d times", len(asked))
	}
	prompt := asked[0].Messages[len(asked[0].Messages)-1].Content
	if !strings.Contains(prompt, "Amos Veldor, a grain merchant, paid for the bell") || strings.Contains(prompt, "clock tower") || !strings.HasSuffix(prompt, "Question: Who paid for the Veldor Bell?") {
		t.Fatalf("second prompt:\n%s", prompt)
	}

	asked = nil
	text, _ = drain(t, prepare(false).Settle(gen("Amos Veldor paid for it.", 100, 10), again("unused")))
	if text != "Amos Veldor paid for it.[1]" || len(asked) != 0 {
		t.Fatalf("an answer that answers: %q, asked again %d times", text, len(asked))
	}

	text, _ = drain(t, prepare(false).Settle(gen("The Veldor Bell was cast in 1872.", 100, 10), again("It hangs in the clock tower of the Exchange.")))
	if text != "The sources do not say." || len(asked) != 1 {
		t.Fatalf("a retry that answers nothing: %q, asked again %d times", text, len(asked))
	}

	asked = nil
	text, _ = drain(t, prepare(true).Settle(gen("The Veldor Bell was cast in 1872.", 100, 10), again("unused")))
	if text != "The Veldor Bell was cast in 1872.[1]" || len(asked) != 0 {
		t.Fatalf("abstain false: %q, asked again %d times", text, len(asked))
	}
}
