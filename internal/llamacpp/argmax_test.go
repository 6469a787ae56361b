package llamacpp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// scalarArgmax is the obvious loop the vectorised scan must agree with.
func scalarArgmax(x []float32) int {
	best, bv := 0, float32(math.Inf(-1))
	for i, v := range x {
		if v > bv {
			best, bv = i, v
		}
	}
	return best
}

func TestArgmaxMatchesTheScalarLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 8, 15, 16, 17, 31, 33, 1000, 262144} {
		for trial := 0; trial < 20; trial++ {
			x := make([]float32, n)
			for i := range x {
				// Few distinct values, so ties between lanes are common.
				x[i] = float32(r.IntN(50)) - 25
			}
			if trial%4 == 1 {
				x[r.IntN(n)] = float32(math.NaN())
			}
			if trial%4 == 2 {
				x[n-1] = 1000 // the maximum in the scalar tail
			}
			if got, want := argmax(x), scalarArgmax(x); got != want {
				t.Fatalf("n=%d trial %d: argmax = %d (%v), the scalar loop gives %d (%v)", n, trial, got, x[got], want, x[want])
			}
		}
	}
	// Every value equal: the first index.
	x := make([]float32, 100)
	if got := argmax(x); got != 0 {
		t.Fatalf("all equal: argmax = %d, want 0", got)
	}
	// -Inf everywhere (every token banned) still picks one.
	for i := range x {
		x[i] = float32(math.Inf(-1))
	}
	if got := argmax(x); got != 0 {
		t.Fatalf("all -Inf: argmax = %d, want 0", got)
	}
}

// BenchmarkArgmax times the greedy pick over Gemma 3's vocabulary (262,144
// logits): the vectorised scan against the scalar loop it replaced.
func BenchmarkArgmax(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 262144)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	b.Run("vector", func(b *testing.B) {
		for b.Loop() {
			argmax(x)
		}
	})
	b.Run("scalar", func(b *testing.B) {
		for b.Loop() {
			scalarArgmax(x)
		}
	})
}
