package inference

import "testing"

// feed pushes toks and returns the index of the token at which the guard
// fired, or -1.
func feed(toks []int32) int {
	var g LoopGuard
	for i, t := range toks {
		if g.Push(t) {
			return i
		}
	}
	return -1
}

func repeat(unit []int32, n int) []int32 {
	var out []int32
	for range n {
		out = append(out, unit...)
	}
	return out
}

func TestLoopGuard(t *testing.T) {
	sentence := []int32{10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39}
	prose := make([]int32, 400)
	for i := range prose {
		prose[i] = int32(1000 + i%397) // no period under 397
	}
	cases := []struct {
		name string
		toks []int32
		want int // index at which it fires, -1 for never
	}{
		{"one token over and over", repeat([]int32{7}, 100), loopMinSpan - 1},
		{"a marker over and over", repeat([]int32{5, 6, 7}, 40), 48 - 1},
		{"a sentence three times", append(append([]int32{1, 2}, repeat(sentence, 4)...), 3), 2 + 3*len(sentence) - 1},
		{"a paragraph of 90 tokens three times", repeat(prose[:90], 3), 270 - 1},
		{"prose", prose, -1},
		{"a short period repeated under the span", append(repeat([]int32{8, 9}, 20), prose[:50]...), -1},
		{"a sentence twice", append(repeat(sentence, 2), prose[:100]...), -1},
	}
	for _, c := range cases {
		if got := feed(c.toks); got != c.want {
			t.Errorf("%s: fired at %d, want %d", c.name, got, c.want)
		}
	}
	// The guard keeps a bounded window however long the output.
	var g LoopGuard
	for i := range 10_000 {
		g.Push(int32(i % 1000))
	}
	if len(g.toks) > 2*loopKeep {
		t.Fatalf("the guard keeps %d tokens", len(g.toks))
	}
}
