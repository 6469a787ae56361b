package sources_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/inference/inferencetest"
	"github.com/sovereign-ai/sovereign/internal/sources"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
)

// hashEmbedder embeds text as a normalised bag of hashed words: texts that
// share words are close. fail makes it return an error.
type hashEmbedder struct{ fail bool }

func (h hashEmbedder) Embed(_ context.Context, req inference.EmbeddingRequest) (inference.EmbeddingResponse, error) {
	if h.fail {
		return inference.EmbeddingResponse{}, errors.New("embedder down")
	}
	return inference.EmbeddingResponse{Embeddings: inferencetest.WordVectors(req.Input, 64)}, nil
}

// exactVectors is an exact in-memory Vectors.
type exactVectors struct {
	mu sync.Mutex
	m  map[string]map[int64][]float32
}

func (x *exactVectors) Add(col string, id int64, v []float32) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = map[string]map[int64][]float32{}
	}
	if x.m[col] == nil {
		x.m[col] = map[int64][]float32{}
	}
	x.m[col][id] = v
	return nil
}
func (x *exactVectors) Delete(col string, ids ...int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range ids {
		delete(x.m[col], id)
	}
}
func (x *exactVectors) DropCollection(col string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.m, col)
}
func (x *exactVectors) Search(col string, q []float32, k int) []sources.VectorHit {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []sources.VectorHit
	for id, v := range x.m[col] {
		var d float32
		for i := range v {
			d += v[i] * q[i]
		}
		out = append(out, sources.VectorHit{ID: id, Score: d})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	if len(out) > k {
		out = out[:k]
	}
	return out
}

// sentences splits on ". ".
func sentences(text string) []sources.Span {
	var out []sources.Span
	start := 0
	for i := 0; i < len(text); i++ {
		if text[i] == '.' {
			out = append(out, sources.Span{Start: start, End: i + 1})
			start = i + 1
			for start < len(text) && text[start] == ' ' {
				start++
			}
			i = start - 1
		}
	}
	if start < len(text) {
		out = append(out, sources.Span{Start: start, End: len(text)})
	}
	return out
}

func newService(t *testing.T, emb sources.Embedder) (*sources.Service, sources.Collection) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	if err := st.CreateTeam(ctx, auth.Team{ID: "team_a", Name: "a", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c := sources.Collection{ID: sources.NewID("col_"), TeamID: "team_a", Name: "facts", EmbeddingModel: "emb", CreatedAt: time.Now()}
	if err := st.CreateCollection(ctx, c); err != nil {
		t.Fatal(err)
	}
	return &sources.Service{Store: st, Embed: emb, Vectors: &exactVectors{}, Split: sentences, EmbedBatch: 2}, c
}

func TestIngestSearchDelete(t *testing.T) {
	ctx := context.Background()
	svc, c := newService(t, hashEmbedder{})
	docs := map[string]string{
		"zorblat": "Ünïcode prelude for offsets. The zorblat engine runs on purple coolant. It was built in Qarth.",
		"garden":  "Quantum gardening needs patience. Tomatoes grow in the dark.",
		"ships":   "Sky ships float on helium. Their captains sing at dawn.",
	}
	ids := map[string]string{}
	for title, text := range docs {
		d, err := svc.Ingest(ctx, c, sources.Document{Title: title, Format: "text", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != sources.StatusProcessing {
			t.Fatalf("status %s", d.Status)
		}
		ids[title] = d.ID
	}
	svc.Wait()
	for title, id := range ids {
		d, err := svc.Store.GetDocument(ctx, id)
		if err != nil || d.Status != sources.StatusReady || d.Progress != 1 || d.ChunkCount < 2 {
			t.Fatalf("%s: %+v %v", title, d, err)
		}
	}
	hits, err := svc.Search(ctx, []sources.Collection{c}, "What coolant does the zorblat engine use?", sources.SearchOptions{TopK: 3})
	if err != nil || len(hits) == 0 {
		t.Fatalf("search: %v %v", hits, err)
	}
	top := hits[0]
	if top.Document.ID != ids["zorblat"] || !strings.Contains(top.Chunk.Text, "purple coolant") || top.Vector == nil || top.Keyword == nil {
		t.Fatalf("top hit: %+v", top)
	}
	// A restarted server (fresh, empty vector index) fills it from the store.
	fresh := &sources.Service{Store: svc.Store, Embed: svc.Embed, Vectors: &exactVectors{}, Split: sentences}
	if again, err := fresh.Search(ctx, []sources.Collection{c}, "What coolant does the zorblat engine use?", sources.SearchOptions{TopK: 3}); err != nil || again[0].Chunk.ID != top.Chunk.ID || again[0].Vector == nil {
		t.Fatalf("after restart: %+v %v", again, err)
	}
	// Offsets are characters into the document's text.
	d, _ := svc.Store.GetDocument(ctx, ids["zorblat"])
	if got := string([]rune(d.Text)[top.Chunk.Start:top.Chunk.End]); got != top.Chunk.Text {
		t.Fatalf("offsets [%d,%d) give %q, chunk is %q", top.Chunk.Start, top.Chunk.End, got, top.Chunk.Text)
	}
	// Deleting the document removes it from both searches.
	if err := svc.DeleteDocument(ctx, d); err != nil {
		t.Fatal(err)
	}
	hits, _ = svc.Search(ctx, []sources.Collection{c}, "zorblat engine purple coolant", sources.SearchOptions{TopK: 5})
	for _, h := range hits {
		if h.Document.ID == ids["zorblat"] {
			t.Fatalf("deleted document found: %+v", h)
		}
	}
}

func TestIngestFailureIsRecorded(t *testing.T) {
	ctx := context.Background()
	svc, c := newService(t, hashEmbedder{fail: true})
	d, err := svc.Ingest(ctx, c, sources.Document{Title: "x", Format: "text", Text: "One. Two."})
	if err != nil {
		t.Fatal(err)
	}
	svc.Wait()
	got, _ := svc.Store.GetDocument(ctx, d.ID)
	if got.Status != sources.StatusFailed || !strings.Contains(got.Error, "embedder down") {
		t.Fatalf("%+v", got)
	}
	if _, err := svc.Ingest(ctx, c, sources.Document{Text: ""}); err == nil {
		t.Fatal("empty text accepted")
	}
}

func TestFuse(t *testing.T) {
	f := sources.Fuse([]int64{1, 2, 3}, []int64{3, 1, 4})
	if f[0].ID != 1 || f[1].ID != 3 || f[2].ID != 2 || f[3].ID != 4 {
		t.Fatalf("%+v", f)
	}
	if math.Abs(f[0].Score-(1.0/61+1.0/62)) > 1e-12 {
		t.Fatalf("score %v", f[0].Score)
	}
	// An exact tie (first and second in opposite lists) goes to the first
	// list's winner, whatever the ids.
	for _, ids := range [][2]int64{{7, 9}, {9, 7}} {
		vec, kw := ids[0], ids[1]
		f := sources.Fuse([]int64{vec, kw}, []int64{kw, vec})
		if f[0].Score != f[1].Score || f[0].ID != vec {
			t.Fatalf("tie %v: %+v", ids, f)
		}
	}
}

// countingEmbedder records how many Embed calls run at once.
type countingEmbedder struct {
	hashEmbedder
	mu        sync.Mutex
	now, peak int
}

func (c *countingEmbedder) Embed(ctx context.Context, req inference.EmbeddingRequest) (inference.EmbeddingResponse, error) {
	c.mu.Lock()
	c.now++
	c.peak = max(c.peak, c.now)
	c.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	defer func() { c.mu.Lock(); c.now--; c.mu.Unlock() }()
	return c.hashEmbedder.Embed(ctx, req)
}

// TestIngestWorkersBoundConcurrency: a burst of documents is processed at
// most IngestWorkers at a time, and every one turns ready.
func TestIngestWorkersBoundConcurrency(t *testing.T) {
	ctx := context.Background()
	emb := &countingEmbedder{}
	svc, c := newService(t, emb)
	svc.IngestWorkers = 3
	var ids []string
	for i := 0; i < 10; i++ {
		d, err := svc.Ingest(ctx, c, sources.Document{Format: "text", Text: fmt.Sprintf("Doc %d. Second sentence. Third one here.", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	svc.Wait()
	if emb.peak > 3 || emb.peak < 2 {
		t.Fatalf("peak concurrent embeddings %d, want 2..3", emb.peak)
	}
	for _, id := range ids {
		if d, _ := svc.Store.GetDocument(ctx, id); d.Status != sources.StatusReady {
			t.Fatalf("%s: %s %s", id, d.Status, d.Error)
		}
	}
}

// TestAnotherTeamsCollectionIsMissing: the service checks the team
// itself: another team's collection, and a document asked for through a
// collection it is not in, are reported as missing (404), in the words
// used for ones that do not exist.
func TestAnotherTeamsCollectionIsMissing(t *testing.T) {
	ctx := context.Background()
	svc, c := newService(t, hashEmbedder{})
	d, err := svc.Ingest(ctx, c, sources.Document{Title: "t", Format: "text", Text: "Some text."})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := svc.Collection(ctx, c.TeamID, c.ID); err != nil || got.ID != c.ID {
		t.Fatalf("own collection: %+v %v", got, err)
	}
	_, err = svc.Collection(ctx, "team_other", c.ID)
	if e := apierr.From(err); !errors.Is(err, sources.ErrNotFound) || e.Status() != 404 || e.Message != fmt.Sprintf("no collection %q", c.ID) {
		t.Errorf("another team's collection: %v", err)
	}
	if got, err := svc.Document(ctx, c, d.ID); err != nil || got.ID != d.ID {
		t.Fatalf("own document: %+v %v", got, err)
	}
	_, err = svc.Document(ctx, sources.Collection{ID: "col_elsewhere", TeamID: c.TeamID}, d.ID)
	if e := apierr.From(err); e.Status() != 404 || e.Message != fmt.Sprintf("no document %q", d.ID) {
		t.Errorf("a document through another collection: %v", err)
	}
}
