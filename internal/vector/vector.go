// Package vector is the in-memory approximate-nearest-neighbour index behind
// "answers with sources": document chunks are embedded, and their vectors are
// searched by cosine similarity, then fused with keyword search elsewhere.
//
// An [Index] is a Hierarchical Navigable Small World graph (Malkov &
// Yashunin, arXiv:1603.09320): neighbour selection uses the paper's
// heuristic, and deletions leave tombstones that are skipped in results and
// swept by rebuilding the graph once they outnumber the live vectors. Below
// [Options.ExactBelow] live vectors (default 1000) Search scans every vector
// instead, which at that size is both cheaper and exact. Dot products run on
// gonum's assembly kernels; nothing here needs cgo.
//
// Vectors are stored L2-normalised (Add normalises a copy), so the score of
// a [Hit] is the cosine similarity whether or not the caller normalised.
//
// Searches are per collection: callers keep one Index per collection, and a
// [Set] manages that (created lazily on the first Add to a collection). There
// is deliberately no filtered search: a collection's index holds only that
// collection's chunks, so no over-fetching and filtering is needed.
//
// An Index can be saved and loaded ([Index.Save], [Index.Load]) so a restart
// need not rebuild the graph; the database stays the source of truth, and
// rebuilding from it with Add is always possible.
package vector

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"gonum.org/v1/gonum/blas/blas32"
)

// Errors returned by Add and Load. They are wrapped with detail; test with
// errors.Is.
var (
	// ErrDimension means a vector's length differs from the index's.
	ErrDimension = errors.New("vector: dimension mismatch")
	// ErrInvalidVector means a vector is all zeros or holds NaN or ±Inf, so
	// it has no direction to compare.
	ErrInvalidVector = errors.New("vector: zero or non-finite vector")
	// ErrFormat means Load was given data that is not a saved index, is of an
	// unsupported version, or is corrupt.
	ErrFormat = errors.New("vector: bad index data")
)

// Hit is one search result.
type Hit struct {
	// ID is the id the vector was added with (the chunk's row id).
	ID int64
	// Score is the cosine similarity to the query, in [-1, 1]; higher is
	// closer.
	Score float32
}

// Options tune an Index. The zero value gives the defaults, chosen for
// recall@10 of at least 0.95 on 384-dimensional sentence embeddings, which
// occupy far fewer directions than their dimension: on embedding-like test
// data they give 1.00 at 10k vectors and 0.985 at 100k. Uniformly random
// vectors are the worst case for any HNSW index, this one and the reference
// C++ hnswlib alike: they need EfSearch ≈ 500 for 0.95 at 10k.
type Options struct {
	// M is the number of neighbours a node links to on the upper layers of
	// the graph; the bottom layer allows 2*M. More links raise recall and
	// memory. Default 16, at most 4096.
	M int
	// EfConstruction is the width of the search that picks a new vector's
	// neighbours. Higher builds a better graph, more slowly. Default 200.
	EfConstruction int
	// EfSearch is the width of a query's search on the bottom layer (raised
	// to k when k is larger). Higher raises recall and latency. Default 128.
	EfSearch int
	// ExactBelow: while fewer vectors than this are live, Search scans them
	// all exactly instead of walking the graph. Default 1000; a negative
	// value always walks the graph.
	ExactBelow int
	// Seed seeds the random layer assignment, so that a build is
	// reproducible. Default 1.
	Seed uint64
}

// Default values of Options.
const (
	DefaultM              = 16
	DefaultEfConstruction = 200
	DefaultEfSearch       = 128
	DefaultExactBelow     = 1000
)

const maxLevel = 31 // layers above this are never drawn (they would hold ~16^-31 of the nodes)

func (o Options) withDefaults() Options {
	if o.M <= 0 {
		o.M = DefaultM
	}
	o.M = min(max(o.M, 2), maxM)
	if o.EfConstruction <= 0 {
		o.EfConstruction = DefaultEfConstruction
	}
	if o.EfConstruction < o.M {
		o.EfConstruction = o.M
	}
	if o.EfSearch <= 0 {
		o.EfSearch = DefaultEfSearch
	}
	if o.ExactBelow == 0 {
		o.ExactBelow = DefaultExactBelow
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// Index is an approximate-nearest-neighbour index of vectors of one
// dimension, keyed by int64 ids. It is safe for concurrent use: searches run
// in parallel with each other, while Add, Delete and Load take turns with
// everything else. Create one with New.
type Index struct {
	mu sync.RWMutex

	dim        int
	efSearch   int
	exactBelow int
	rng        *rand.Rand
	pool       sync.Pool // *searcher

	graph
}

// graph is the HNSW graph. Nodes are numbered densely from 0 in the order
// they were added; a deleted node stays in the graph as a tombstone (it still
// routes searches) until the graph is rebuilt.
type graph struct {
	m, m0, efConstruction int
	ml                    float64 // level multiplier, 1/ln(M)

	vecs   []float32  // node i's normalised vector at [i*dim, (i+1)*dim)
	ids    []int64    // node → id
	dead   []bool     // node → deleted
	links0 []uint32   // layer-0 links, stride m0+1: [count, neighbours...]
	upper  [][]uint32 // node → links of layers 1..level, stride m+1 each
	byID   map[int64]uint32
	ndead  int

	entry uint32 // entry node (valid when len(ids) > 0)
	top   int    // the entry node's level
}

// New returns an empty index for vectors of dim dimensions. Zero fields of
// opts take their defaults. It panics if dim is not positive.
func New(dim int, opts Options) *Index {
	if dim <= 0 {
		panic(fmt.Sprintf("vector.New: dimension %d is not positive", dim))
	}
	o := opts.withDefaults()
	x := &Index{
		dim:        dim,
		efSearch:   o.EfSearch,
		exactBelow: o.ExactBelow,
		rng:        rand.New(rand.NewPCG(o.Seed, 0x5eed)),
	}
	x.graph = newGraph(o.M, o.EfConstruction)
	x.pool.New = func() any { return new(searcher) }
	return x
}

func newGraph(m, efConstruction int) graph {
	return graph{
		m:              m,
		m0:             2 * m,
		efConstruction: efConstruction,
		ml:             1 / math.Log(float64(m)),
		byID:           make(map[int64]uint32),
	}
}

// Dim returns the dimension of the index's vectors.
func (x *Index) Dim() int { return x.dim }

// Len returns the number of vectors in the index (deleted ones excluded).
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.byID)
}

// Add inserts v under id, replacing the vector id had, if any. It stores a
// normalised copy of v. It returns an error wrapping ErrDimension if v has
// the wrong length, or ErrInvalidVector if v is zero or not finite; the index
// is unchanged then.
func (x *Index) Add(id int64, v []float32) error {
	if len(v) != x.dim {
		return fmt.Errorf("%w: vector has %d dimensions, the index %d", ErrDimension, len(v), x.dim)
	}
	inv, ok := invNorm(v)
	if !ok {
		return fmt.Errorf("%w (id %d)", ErrInvalidVector, id)
	}
	s := x.pool.Get().(*searcher)
	defer x.pool.Put(s)

	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.byID[id]; ok {
		if sameDirection(x.vector(old), v, inv) {
			return nil
		}
		x.kill(old)
	}
	x.insert(s, id, v, inv, x.randomLevel())
	x.maybeRebuild(s)
	return nil
}

// Delete removes the vectors of ids. Ids that are not in the index are
// ignored. A deleted vector stays in the graph as a tombstone; once the
// tombstones outnumber the live vectors, the Delete (or Add) that tipped the
// balance rebuilds the graph from the live ones, holding off searches
// meanwhile (about as long as adding them all again).
func (x *Index) Delete(ids ...int64) {
	if len(ids) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range ids {
		if n, ok := x.byID[id]; ok {
			x.kill(n)
		}
	}
	if x.ndead > 0 {
		s := x.pool.Get().(*searcher)
		x.maybeRebuild(s)
		x.pool.Put(s)
	}
}

// Search returns the k vectors most similar to q, best first (ties by
// ascending id); fewer if the index holds fewer. It returns nil if k < 1, if
// q has the wrong length, or if q is zero or not finite.
func (x *Index) Search(q []float32, k int) []Hit {
	if k < 1 || len(q) != x.dim {
		return nil
	}
	inv, ok := invNorm(q)
	if !ok {
		return nil
	}
	qn := make([]float32, len(q))
	for i, f := range q {
		qn[i] = f * inv
	}
	s := x.pool.Get().(*searcher)
	defer x.pool.Put(s)

	x.mu.RLock()
	defer x.mu.RUnlock()
	live := len(x.byID)
	if live == 0 {
		return nil
	}
	if live < x.exactBelow || k >= live {
		return x.scan(s, qn, k)
	}
	return x.search(s, qn, k, max(x.efSearch, k))
}

// scan is Search by brute force over the live nodes.
func (x *Index) scan(s *searcher, q []float32, k int) []Hit {
	s.res = s.res[:0]
	for n := range x.ids {
		if x.dead[n] {
			continue
		}
		d := -dot(q, x.vector(uint32(n)))
		if len(s.res) < k {
			s.res.push(item{-d, uint32(n)})
		} else if d < -s.res[0].d {
			s.res[0] = item{-d, uint32(n)}
			s.res.fix0()
		}
	}
	return x.hits(s, k)
}

// hits drains s.res (a max-heap by distance, as negated distances) into
// hits, best first, at most k.
func (x *Index) hits(s *searcher, k int) []Hit {
	out := make([]Hit, len(s.res))
	for i := len(out) - 1; i >= 0; i-- {
		it := s.res.pop()
		out[i] = Hit{ID: x.ids[it.n], Score: it.d} // it.d = -distance = similarity
	}
	slices.SortStableFunc(out, compareHits)
	if len(out) > k {
		out = out[:k]
	}
	return out
}

func compareHits(a, b Hit) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// Exact returns the k vectors of vs most similar to q by cosine similarity,
// best first (ties by ascending id), computed by brute force. Vectors of a
// length other than len(q), and zero or non-finite ones, are skipped; a zero
// or non-finite q, or k < 1, gives nil. It is the reference for the index's
// recall, and fine on its own for small sets.
func Exact(vs map[int64][]float32, q []float32, k int) []Hit {
	qinv, ok := invNorm(q)
	if k < 1 || !ok {
		return nil
	}
	// h is a heap of the best k so far with the worst at h[0].
	h := make(hitHeap, 0, min(k, len(vs)))
	for id, v := range vs {
		if len(v) != len(q) {
			continue
		}
		vinv, ok := invNorm(v)
		if !ok {
			continue
		}
		hit := Hit{ID: id, Score: dot(q, v) * qinv * vinv}
		if len(h) < k {
			h.push(hit)
		} else if compareHits(hit, h[0]) < 0 {
			h[0] = hit
			h.down(0)
		}
	}
	slices.SortFunc(h, compareHits)
	return h
}

// hitHeap is a binary heap of hits whose root is the worst hit.
type hitHeap []Hit

func (h *hitHeap) push(x Hit) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if compareHits(s[i], s[p]) <= 0 {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h hitHeap) down(i int) {
	for {
		w := i
		if l := 2*i + 1; l < len(h) && compareHits(h[l], h[w]) > 0 {
			w = l
		}
		if r := 2*i + 2; r < len(h) && compareHits(h[r], h[w]) > 0 {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// dot is the inner product of two vectors of equal length.
func dot(a, b []float32) float32 {
	return blas32.Dot(blas32.Vector{N: len(a), Inc: 1, Data: a}, blas32.Vector{N: len(b), Inc: 1, Data: b})
}

// invNorm returns 1/|v|, and false if v is zero or not finite.
func invNorm(v []float32) (float32, bool) {
	var ss float64
	for _, f := range v {
		ss += float64(f) * float64(f)
	}
	if ss == 0 || math.IsNaN(ss) || math.IsInf(ss, 0) {
		return 0, false
	}
	inv := float32(1 / math.Sqrt(ss))
	if inv == 0 || math.IsInf(float64(inv), 0) {
		return 0, false
	}
	return inv, true
}

// sameDirection reports whether stored (normalised) equals v scaled by inv.
func sameDirection(stored, v []float32, inv float32) bool {
	for i, f := range v {
		if stored[i] != f*inv {
			return false
		}
	}
	return true
}
