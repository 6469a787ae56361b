package sqlite

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// seedCollections creates team t and, per id, a collection with a document
// "doc_"+id for chunks to belong to.
func seedCollections(tb testing.TB, s *Store, ids ...string) {
	tb.Helper()
	ctx := context.Background()
	now := time.Now()
	if err := s.CreateTeam(ctx, auth.Team{ID: "t", Name: "t", CreatedAt: now}); err != nil {
		tb.Fatal(err)
	}
	for _, c := range ids {
		if err := s.CreateCollection(ctx, sources.Collection{ID: c, TeamID: "t", Name: c, EmbeddingModel: "m", CreatedAt: now}); err != nil {
			tb.Fatal(err)
		}
		if err := s.CreateDocument(ctx, sources.Document{ID: "doc_" + c, CollectionID: c, Title: c, Format: "text", Status: "ready", CreatedAt: now, UpdatedAt: now}); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestKeywordSearchFrequentWords checks keyword search on a collection
// where two query words each occur in more chunks than the search scores
// by a plain OR: chunks with the rare word come first, every score is the
// exact BM25 over all the words (as the plain OR query computes it), chunks
// with every frequent word still match (when there are two or more), and a
// query of frequent words alone needs them all.
func TestKeywordSearchFrequentWords(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seedCollections(t, s, "col_a", "col_b")
	// 3,300 chunks: "alpha" in two thirds, "beta" in two thirds, both in a
	// third; then four chunks with the rare "gamma", and one in another
	// collection.
	var chunks []sources.Chunk
	add := func(col, text string) {
		chunks = append(chunks, sources.Chunk{DocumentID: "doc_" + col, CollectionID: col, Seq: len(chunks), Text: text})
	}
	for i := range 3300 {
		switch i % 3 {
		case 0:
			add("col_a", fmt.Sprintf("alpha filler%d", i))
		case 1:
			add("col_a", fmt.Sprintf("beta filler%d", i))
		default:
			add("col_a", fmt.Sprintf("alpha beta filler%d", i))
		}
	}
	gammaTexts := []string{"gamma alpha beta", "gamma", "gamma gamma beta and more words here", "gamma alpha"}
	for _, g := range gammaTexts {
		add("col_a", g)
	}
	add("col_b", "gamma alpha beta")
	ids, err := s.AddChunks(ctx, chunks)
	if err != nil {
		t.Fatal(err)
	}
	text := map[int64]string{}
	for i, id := range ids {
		text[id] = chunks[i].Text
	}

	exact := map[int64]float64{}
	rows, err := s.db.QueryContext(ctx, `SELECT rowid, -bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH '"gamma" OR "alpha" OR "beta"'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var sc float64
		if err := rows.Scan(&id, &sc); err != nil {
			t.Fatal(err)
		}
		exact[id] = sc
	}
	rows.Close()

	hits, err := s.KeywordSearch(ctx, []string{"col_a"}, "Gamma alpha beta", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 10 {
		t.Fatalf("got %d hits, want 10", len(hits))
	}
	for i, h := range hits {
		if i < len(gammaTexts) != strings.Contains(text[h.ChunkID], "gamma") {
			t.Errorf("hit %d is %q: the %d chunks with gamma should come first", i, text[h.ChunkID], len(gammaTexts))
		}
		if i >= len(gammaTexts) && !strings.Contains(text[h.ChunkID], "alpha beta") {
			t.Errorf("hit %d is %q: without gamma, only chunks with both frequent words match", i, text[h.ChunkID])
		}
		if math.Abs(h.Score-exact[h.ChunkID]) > 1e-9 {
			t.Errorf("hit %d (%q) scores %v, the plain OR query's BM25 is %v", i, text[h.ChunkID], h.Score, exact[h.ChunkID])
		}
		if i > 0 && h.Score > hits[i-1].Score {
			t.Errorf("hit %d scores %v, above hit %d's %v", i, h.Score, i-1, hits[i-1].Score)
		}
	}

	// One frequent word with the rare one only adds to the score of
	// chunks with the rare word.
	hits, err = s.KeywordSearch(ctx, []string{"col_a"}, "gamma alpha", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != len(gammaTexts) {
		t.Errorf("gamma alpha: %d hits, want the %d chunks with gamma", len(hits), len(gammaTexts))
	}
	for _, h := range hits {
		if !strings.Contains(text[h.ChunkID], "gamma") {
			t.Errorf("gamma alpha matched %q", text[h.ChunkID])
		}
	}

	// Frequent words alone: a chunk must hold them all, and the newest
	// 1,000 of the 1,101 that do are ranked.
	hits, err = s.KeywordSearch(ctx, []string{"col_a"}, "alpha beta", 2000)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1000 {
		t.Errorf("alpha beta: %d hits, want the newest 1000 of the 1101 chunks with both words", len(hits))
	}
	newest := false
	for _, h := range hits {
		if tx := text[h.ChunkID]; !strings.Contains(tx, "alpha") || !strings.Contains(tx, "beta") {
			t.Fatalf("alpha beta matched %q", tx)
		}
		newest = newest || h.ChunkID == ids[len(ids)-5] // "gamma alpha beta" in col_a
	}
	if !newest {
		t.Error("alpha beta: the newest chunk with both words is missing")
	}
	// Other collections stay out.
	hits, err = s.KeywordSearch(ctx, []string{"col_b"}, "gamma alpha beta", 10)
	if err != nil || len(hits) != 1 || text[hits[0].ChunkID] != "gamma alpha beta" {
		t.Errorf("col_b: %v, %v; want its one chunk", hits, err)
	}
}
