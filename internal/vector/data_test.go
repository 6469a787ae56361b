package vector

import (
	"math"
	"math/rand/v2"
)

// Test data: seeded, so every run sees the same vectors.

const dim384 = 384

func normalize(v []float32) []float32 {
	var ss float64
	for _, f := range v {
		ss += float64(f) * float64(f)
	}
	inv := float32(1 / math.Sqrt(ss))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// randomVectors returns n normalised vectors drawn uniformly from the
// sphere: the hardest case for a graph index, as no direction stands out.
func randomVectors(n, dim int, seed uint64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = normalize(v)
	}
	return out
}

// clusteredVectors returns n normalised vectors around 50 random centres,
// each a centre plus noise of 0.6 its length.
func clusteredVectors(n, dim int, seed uint64) [][]float32 {
	centres := randomVectors(50, dim, 7)
	noise := randomVectors(n, dim, seed)
	r := rand.New(rand.NewPCG(seed, 2))
	out := make([][]float32, n)
	for i := range out {
		c := centres[r.IntN(len(centres))]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + 0.6*noise[i][j]
		}
		out[i] = normalize(v)
	}
	return out
}

// embeddingLikeVectors returns n normalised vectors that lie near a random
// 24-dimensional subspace (plus a little noise), which is closer to how
// sentence embeddings occupy their space than uniform random vectors are.
func embeddingLikeVectors(n, dim int, seed uint64) [][]float32 {
	const rank = 24
	basis := randomVectors(rank, dim, 7)
	z := randomVectors(n, rank, seed)
	noise := randomVectors(n, dim, seed+1000)
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dim)
		for r := range rank {
			for j := range v {
				v[j] += z[i][r] * basis[r][j]
			}
		}
		for j := range v {
			v[j] += 0.1 * noise[i][j]
		}
		out[i] = normalize(v)
	}
	return out
}

func toMap(vs [][]float32) map[int64][]float32 {
	m := make(map[int64][]float32, len(vs))
	for i, v := range vs {
		m[int64(i)] = v
	}
	return m
}

// recallAt10 is the mean fraction of Exact's top 10 that x.Search finds,
// over the queries.
func recallAt10(x *Index, all map[int64][]float32, queries [][]float32) float64 {
	found := 0
	for _, q := range queries {
		want := make(map[int64]bool, 10)
		for _, h := range Exact(all, q, 10) {
			want[h.ID] = true
		}
		for _, h := range x.Search(q, 10) {
			if want[h.ID] {
				found++
			}
		}
	}
	return float64(found) / float64(10*len(queries))
}
