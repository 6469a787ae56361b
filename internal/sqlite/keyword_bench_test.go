package sqlite

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/sources"
)

// zipfText generates text whose word frequencies follow Zipf's law over a
// vocabulary of made-up words, as natural language does: a few words occur
// in most chunks, most words in few.
type zipfText struct {
	words []string
	z     *rand.Zipf
	r     *rand.Rand
}

func newZipfText(seed uint64, vocab int) *zipfText {
	r := rand.New(rand.NewPCG(seed, 7))
	syl := strings.Fields("ba ke lo mi nu ra se ti vo za dre fan gol hix jur pel quo sty wen yak")
	seen := map[string]bool{}
	var words []string
	for len(words) < vocab {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return &zipfText{words: words, z: rand.NewZipf(r, 1.07, 2, uint64(vocab-1)), r: r}
}

func (g *zipfText) text(n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = g.words[g.z.Uint64()]
	}
	return strings.Join(out, " ")
}

// BenchmarkKeywordSearch measures KeywordSearch (k = 40, as a hybrid search
// with top_k 10 asks) over 100,000 chunks of 12 Zipf-distributed words, with
// queries of 2 to 5 words drawn from the same distribution; it reports the
// p50 and p99 of the queries' times. Building the collection takes about a
// minute.
func BenchmarkKeywordSearch(b *testing.B) {
	const chunks = 100_000
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "kw.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	seedCollections(b, s, "col_b")
	g := newZipfText(1, 20000)
	for d := 0; d < chunks/1000; d++ {
		cs := make([]sources.Chunk, 1000)
		for i := range cs {
			cs[i] = sources.Chunk{DocumentID: "doc_col_b", CollectionID: "col_b", Seq: d*1000 + i, Text: g.text(12)}
		}
		if _, err := s.AddChunks(ctx, cs); err != nil {
			b.Fatal(err)
		}
	}
	queries := make([]string, 300)
	for i := range queries {
		queries[i] = g.text(2 + g.r.IntN(4))
	}
	b.ResetTimer()
	var times []time.Duration
	for i := 0; b.Loop(); i++ {
		t := time.Now()
		if _, err := s.KeywordSearch(ctx, []string{"col_b"}, queries[i%len(queries)], 40); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
}
