package sources_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/postgres"
	"github.com/sovereign-ai/sovereign/internal/sources"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

// sharedStore is a store that can also create the team collections belong
// to (the SQLite and PostgreSQL stores).
type sharedStore interface {
	sources.Store
	CreateTeam(ctx context.Context, t auth.Team) error
}

// ids returns the ids in the collection's index, ascending, and whether
// the collection has an index at all.
func (x *exactVectors) ids(col string) ([]int64, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	m, ok := x.m[col]
	out := make([]int64, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, ok
}

// replica is one server: a Service with its own vector index, over its
// own connection to the shared database.
type replica struct {
	*sources.Service
	vecs *exactVectors
}

func newReplica(st sources.Store) replica {
	v := &exactVectors{}
	return replica{&sources.Service{Store: st, Embed: hashEmbedder{}, Vectors: v, Split: sentences, EmbedBatch: 2,
		Log: slog.New(slog.DiscardHandler)}, v}
}

// TestReplicas runs the replica tests on two stores, opened separately,
// over one SQLite file and over one PostgreSQL schema.
func TestReplicas(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open func(t *testing.T) sharedStore)
	}{
		{"Store", testStoreSync},
		{"SeeEachOther", testReplicasSeeEachOther},
		{"Converge", testReplicasConverge},
	}
	for _, tc := range tests {
		t.Run("SQLite/"+tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "shared.db")
			tc.fn(t, func(t *testing.T) sharedStore {
				st, err := sqlite.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st
			})
		})
		t.Run("PostgreSQL/"+tc.name, func(t *testing.T) {
			url := storetest.PostgresURL(t)
			tc.fn(t, func(t *testing.T) sharedStore {
				st, err := postgres.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st
			})
		})
	}
}

// eventually polls cond every 20 ms until it holds, failing the test with
// the last reason cond gave when within has passed.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for {
		ok, why := cond()
		if ok {
			t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, within, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sharedCollection(t *testing.T, st sharedStore) sources.Collection {
	t.Helper()
	ctx := context.Background()
	if err := st.CreateTeam(ctx, auth.Team{ID: "team_a", Name: "a", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	c := sources.Collection{ID: sources.NewID("col_"), TeamID: "team_a", Name: "facts", EmbeddingModel: "emb", CreatedAt: time.Now()}
	if err := st.CreateCollection(ctx, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func ingestReady(t *testing.T, r replica, c sources.Collection, text string) sources.Document {
	t.Helper()
	ctx := context.Background()
	d, err := r.Ingest(ctx, c, sources.Document{Format: "text", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait()
	if d, err = r.GetDocument(ctx, d.ID); err != nil || d.Status != sources.StatusReady {
		t.Fatalf("ingest: %+v %v", d, err)
	}
	return d
}

// vectorFinds reports whether r's vector search for query returns a chunk
// of document docID.
func vectorFinds(t *testing.T, r replica, c sources.Collection, query, docID string) (bool, string) {
	hits, err := r.Search(context.Background(), []sources.Collection{c}, query, sources.SearchOptions{TopK: 5, Mode: sources.ModeVector})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hits {
		if h.Document.ID == docID {
			return true, ""
		}
		got = append(got, h.Chunk.Text)
	}
	return false, fmt.Sprintf("hits %q", got)
}

// testStoreSync checks the store side: EmbeddingsAfter returns the
// embeddings past an id in order with the collection's deletion count,
// which DeleteDocument raises, and EmbeddedChunkIDs lists what is left.
func testStoreSync(t *testing.T, open func(t *testing.T) sharedStore) {
	ctx := context.Background()
	st := open(t)
	c := sharedCollection(t, st)
	read := func(col string, after int64) ([]int64, int64, error) {
		var ids []int64
		n, err := st.EmbeddingsAfter(ctx, col, after, func(id int64, v []float32) error {
			if len(v) != 2 {
				t.Fatalf("chunk %d: %v", id, v)
			}
			ids = append(ids, id)
			return nil
		})
		return ids, n, err
	}
	if _, _, err := read("col_unknown", 0); !errors.Is(err, sources.ErrNotFound) {
		t.Fatalf("unknown collection: %v", err)
	}
	if ids, n, err := read(c.ID, 0); err != nil || len(ids) != 0 || n != 0 {
		t.Fatalf("empty collection: %v %d %v", ids, n, err)
	}
	var all []int64
	for _, id := range []string{"doc_1", "doc_2"} {
		if err := st.CreateDocument(ctx, sources.Document{ID: id, CollectionID: c.ID, Format: "text", Status: sources.StatusReady, Text: "x", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		ids, err := st.AddChunks(ctx, []sources.Chunk{
			{DocumentID: id, CollectionID: c.ID, Seq: 0, End: 1, Text: "x", Embedding: []float32{1, 0}},
			{DocumentID: id, CollectionID: c.ID, Seq: 1, End: 1, Text: "y"}, // not embedded
			{DocumentID: id, CollectionID: c.ID, Seq: 2, End: 1, Text: "z", Embedding: []float32{0, 1}},
		})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ids[0], ids[2])
	}
	if ids, n, err := read(c.ID, 0); err != nil || !slices.Equal(ids, all) || n != 0 {
		t.Fatalf("everything: %v (want %v) %d %v", ids, all, n, err)
	}
	if ids, _, _ := read(c.ID, all[1]); !slices.Equal(ids, all[2:]) {
		t.Fatalf("after %d: %v", all[1], ids)
	}
	if ids, _, _ := read(c.ID, all[3]); len(ids) != 0 {
		t.Fatalf("after the last: %v", ids)
	}
	if err := st.DeleteDocument(ctx, "doc_1"); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteDocument(ctx, "doc_1"); !errors.Is(err, sources.ErrNotFound) {
		t.Fatalf("delete again: %v", err)
	}
	if ids, n, err := read(c.ID, 0); err != nil || !slices.Equal(ids, all[2:]) || n != 1 {
		t.Fatalf("after a deletion: %v %d %v", ids, n, err)
	}
	if ids, err := st.EmbeddedChunkIDs(ctx, c.ID); err != nil || !slices.Equal(ids, all[2:]) {
		t.Fatalf("embedded chunk ids: %v %v", ids, err)
	}
	if err := st.DeleteCollection(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := read(c.ID, 0); !errors.Is(err, sources.ErrNotFound) {
		t.Fatalf("deleted collection: %v", err)
	}
	if ids, err := st.EmbeddedChunkIDs(ctx, c.ID); err != nil || len(ids) != 0 {
		t.Fatalf("deleted collection's chunk ids: %v %v", ids, err)
	}
}

// testReplicasSeeEachOther: a document ingested through replica A is found
// by replica B's vector search within 2 s, and the other way round; once
// deleted through A it leaves B's index within 2 s, and so does a deleted
// collection. B's index is filled before, so all of this reaches it by
// incremental reads.
func testReplicasSeeEachOther(t *testing.T, open func(t *testing.T) sharedStore) {
	ctx := context.Background()
	stA := open(t)
	a, b := newReplica(stA), newReplica(open(t))
	c := sharedCollection(t, stA)
	for _, r := range []replica{a, b} {
		if hits, err := r.Search(ctx, []sources.Collection{c}, "anything", sources.SearchOptions{TopK: 5}); err != nil || len(hits) != 0 {
			t.Fatalf("search of an empty collection: %+v %v", hits, err)
		}
	}

	zorblat := ingestReady(t, a, c, "The zorblat engine runs on purple coolant. It was built in Qarth.")
	eventually(t, 2*time.Second, "B finds A's document", func() (bool, string) {
		return vectorFinds(t, b, c, "zorblat engine purple coolant", zorblat.ID)
	})
	ships := ingestReady(t, b, c, "Sky ships float on helium. Their captains sing at dawn.")
	eventually(t, 2*time.Second, "A finds B's document", func() (bool, string) {
		return vectorFinds(t, a, c, "sky ships helium captains", ships.ID)
	})

	zChunks, err := stA.ChunkIDs(ctx, zorblat.ID)
	if err != nil || len(zChunks) != 2 {
		t.Fatalf("chunk ids: %v %v", zChunks, err)
	}
	sChunks, _ := stA.ChunkIDs(ctx, ships.ID)
	if ids, _ := b.vecs.ids(c.ID); len(ids) != 4 {
		t.Fatalf("B's index: %v", ids)
	}
	if err := a.DeleteDocument(ctx, zorblat); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "the deleted document leaves B's index", func() (bool, string) {
		if ok, _ := vectorFinds(t, b, c, "zorblat engine purple coolant", zorblat.ID); ok {
			return false, "B's search returns it"
		}
		ids, _ := b.vecs.ids(c.ID)
		return slices.Equal(ids, sChunks), fmt.Sprintf("B's index holds %v, want %v", ids, sChunks)
	})
	if ok, why := vectorFinds(t, b, c, "sky ships helium captains", ships.ID); !ok {
		t.Fatalf("B lost the document that stays: %s", why)
	}
	// A deleted its own at once.
	if ids, _ := a.vecs.ids(c.ID); !slices.Equal(ids, sChunks) {
		t.Fatalf("A's index holds %v, want %v", ids, sChunks)
	}

	if err := a.DeleteCollection(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Second, "the deleted collection's index leaves B", func() (bool, string) {
		if ok, _ := vectorFinds(t, b, c, "sky ships helium captains", ships.ID); ok {
			return false, "B's search returns its document"
		}
		ids, ok := b.vecs.ids(c.ID)
		return !ok, fmt.Sprintf("B's index holds %v", ids)
	})
}

// testReplicasConverge: two replicas ingest and delete documents at once
// while both search all the time (every search reading from the store), and
// then each index holds exactly the collection's embedded chunks: none
// missed because another replica's transaction committed out of order, no
// deleted one left behind.
func testReplicasConverge(t *testing.T, open func(t *testing.T) sharedStore) {
	ctx := context.Background()
	stA := open(t)
	reps := []replica{newReplica(stA), newReplica(open(t))}
	c := sharedCollection(t, stA)
	for _, r := range reps {
		r.SyncInterval = time.Nanosecond
		r.IngestWorkers = 4
	}
	stop := make(chan struct{})
	var searching sync.WaitGroup
	for _, r := range reps {
		searching.Add(1)
		go func() {
			defer searching.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := r.Search(ctx, []sources.Collection{c}, "word seven", sources.SearchOptions{TopK: 3, Mode: sources.ModeVector}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var writing sync.WaitGroup
	for i, r := range reps {
		writing.Add(1)
		go func() {
			defer writing.Done()
			var docs []sources.Document
			for j := range 12 {
				d, err := r.Ingest(ctx, c, sources.Document{Format: "text",
					Text: fmt.Sprintf("Replica %d document %d. Word %d here. Another %d sentence. And word seven.", i, j, j, i*100+j)})
				if err != nil {
					t.Error(err)
					return
				}
				docs = append(docs, d)
				if j%3 == 2 {
					// Delete an earlier one, perhaps still being processed.
					if err := r.DeleteDocument(ctx, docs[j-2]); err != nil {
						t.Error(err)
						return
					}
				}
			}
			r.Wait()
		}()
	}
	writing.Wait()
	close(stop)
	searching.Wait()
	if t.Failed() {
		return
	}
	want, err := stA.EmbeddedChunkIDs(ctx, c.ID)
	if err != nil || len(want) == 0 {
		t.Fatalf("embedded chunks: %v %v", want, err)
	}
	for i, r := range reps {
		r.SyncInterval = 0
		eventually(t, 2*time.Second, fmt.Sprintf("replica %d's index", i), func() (bool, string) {
			vectorFinds(t, r, c, "word seven", "")
			got, _ := r.vecs.ids(c.ID)
			return slices.Equal(got, want), fmt.Sprintf("holds %d ids, the store %d\n%v\n%v", len(got), len(want), got, want)
		})
	}
}

// shortEmbedder embeds texts that mention "short" with half the dimension.
type shortEmbedder struct{ hashEmbedder }

func (e shortEmbedder) Embed(ctx context.Context, req inference.EmbeddingRequest) (inference.EmbeddingResponse, error) {
	res, err := e.hashEmbedder.Embed(ctx, req)
	for i, in := range req.Input {
		if strings.Contains(in, "short") {
			res.Embeddings[i] = res.Embeddings[i][:32]
		}
	}
	return res, err
}

// TestRefusedVectorFailsDocument: a document whose vectors the index
// refuses (a dimension other than the collection's) fails with the index's
// error, and the collection's other documents stay searchable.
func TestRefusedVectorFailsDocument(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := sharedCollection(t, st)
	svc := sources.New(st, shortEmbedder{}, "emb", nil)
	svc.Split = sentences
	good := ingestReady(t, replica{Service: svc}, c, "The zorblat engine runs on purple coolant.")
	bad, err := svc.Ingest(ctx, c, sources.Document{Format: "text", Text: "A short text. Embedded short."})
	if err != nil {
		t.Fatal(err)
	}
	svc.Wait()
	if bad, _ = svc.GetDocument(ctx, bad.ID); bad.Status != sources.StatusFailed || !strings.Contains(bad.Error, "dimension") {
		t.Fatalf("document with refused vectors: %s %q", bad.Status, bad.Error)
	}
	hits, err := svc.Search(ctx, []sources.Collection{c}, "zorblat coolant", sources.SearchOptions{TopK: 3, Mode: sources.ModeVector})
	if err != nil || len(hits) != 1 || hits[0].Document.ID != good.ID {
		t.Fatalf("search: %+v %v", hits, err)
	}
}
