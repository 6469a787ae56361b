package vector

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Benchmarks at 10k and 100k vectors of 384 dimensions, on two kinds of
// data: uniform random vectors (the worst case for a graph index) and
// embedding-like ones (near a 24-dimensional subspace, as sentence
// embeddings are). The 100k sizes take minutes to build and are skipped with
// -short. Run them explicitly:
//
//	go test -run '^$' -bench . ./internal/vector/
//
// BenchmarkAdd reports ns/add (one Add into a growing index), build-s (the
// whole build) and B/vector (heap held per vector, graph and vector
// included). BenchmarkSearch reports ns/op for a k=10 query and the
// recall@10 of those queries against Exact; BenchmarkExactScan is the
// brute-force scan at the same sizes, for comparison.

var benchSizes = []int{10_000, 100_000}

var benchData = []struct {
	name string
	gen  func(n, dim int, seed uint64) [][]float32
}{
	{"random", randomVectors},
	{"embedding-like", embeddingLikeVectors},
}

// built caches the indexes BenchmarkAdd builds, for BenchmarkSearch.
var built struct {
	sync.Mutex
	m map[string]*benchIndex
}

type benchIndex struct {
	x       *Index
	all     map[int64][]float32
	queries [][]float32
}

func benchKey(data string, n int) string { return fmt.Sprintf("%s/n=%d", data, n) }

func getIndex(b *testing.B, data string, gen func(int, int, uint64) [][]float32, n int) *benchIndex {
	built.Lock()
	defer built.Unlock()
	if bi := built.m[benchKey(data, n)]; bi != nil {
		return bi
	}
	vs := gen(n, dim384, 1)
	bi := &benchIndex{x: build(b, vs, Options{}), all: toMap(vs), queries: gen(200, dim384, 2)}
	cache(data, n, bi)
	return bi
}

func cache(data string, n int, bi *benchIndex) {
	if built.m == nil {
		built.m = make(map[string]*benchIndex)
	}
	built.m[benchKey(data, n)] = bi
}

func skipLarge(b *testing.B, n int) {
	if n > 10_000 && testing.Short() {
		b.Skip("100k build skipped with -short")
	}
}

func BenchmarkAdd(b *testing.B) {
	for _, d := range benchData {
		for _, n := range benchSizes {
			b.Run(benchKey(d.name, n), func(b *testing.B) {
				skipLarge(b, n)
				vs := d.gen(n, dim384, 1)
				var x *Index
				var mem uint64
				builds := 0
				start := time.Now()
				for b.Loop() {
					x = nil
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					x = New(dim384, Options{})
					for i, v := range vs {
						if err := x.Add(int64(i), v); err != nil {
							b.Fatal(err)
						}
					}
					runtime.GC()
					runtime.ReadMemStats(&after)
					mem = after.HeapAlloc - before.HeapAlloc
					builds++
				}
				elapsed := time.Since(start)
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(builds*n), "ns/add")
				b.ReportMetric(elapsed.Seconds()/float64(builds), "build-s")
				b.ReportMetric(float64(mem)/float64(n), "B/vector")
				built.Lock()
				cache(d.name, n, &benchIndex{x: x, all: toMap(vs), queries: d.gen(200, dim384, 2)})
				built.Unlock()
			})
		}
	}
}

func BenchmarkSearch(b *testing.B) {
	for _, d := range benchData {
		for _, n := range benchSizes {
			for _, ef := range []int{DefaultEfSearch, 512} {
				b.Run(fmt.Sprintf("%s/ef=%d", benchKey(d.name, n), ef), func(b *testing.B) {
					skipLarge(b, n)
					bi := getIndex(b, d.name, d.gen, n)
					bi.x.efSearch = ef
					defer func() { bi.x.efSearch = DefaultEfSearch }()
					recall := recallAt10(bi.x, bi.all, bi.queries)
					i := 0
					for b.Loop() {
						bi.x.Search(bi.queries[i%len(bi.queries)], 10)
						i++
					}
					b.ReportMetric(recall, "recall@10")
				})
			}
		}
	}
}

// BenchmarkSaveLoad reports the time to save and to load the embedding-like
// index, against rebuilding it (BenchmarkAdd's build-s).
func BenchmarkSaveLoad(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			skipLarge(b, n)
			bi := getIndex(b, "embedding-like", embeddingLikeVectors, n)
			var buf bytes.Buffer
			var save, load time.Duration
			loads := 0
			for b.Loop() {
				buf.Reset()
				t0 := time.Now()
				if err := bi.x.Save(&buf); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := New(dim384, Options{}).Load(bytes.NewReader(buf.Bytes())); err != nil {
					b.Fatal(err)
				}
				save += t1.Sub(t0)
				load += time.Since(t1)
				loads++
			}
			b.ReportMetric(save.Seconds()/float64(loads), "save-s")
			b.ReportMetric(load.Seconds()/float64(loads), "load-s")
			b.ReportMetric(float64(buf.Len())/float64(n), "file-B/vector")
		})
	}
}

func BenchmarkExactScan(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			skipLarge(b, n)
			bi := getIndex(b, "embedding-like", embeddingLikeVectors, n)
			bi.x.exactBelow = math.MaxInt
			defer func() { bi.x.exactBelow = DefaultExactBelow }()
			i := 0
			for b.Loop() {
				bi.x.Search(bi.queries[i%len(bi.queries)], 10)
				i++
			}
		})
	}
}
