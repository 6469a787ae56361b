package runner

import "testing"

func TestBatchThreads(t *testing.T) {
	for _, c := range []struct{ tokens, limit, want int }{
		{1, 2, 1}, {10, 2, 1}, {63, 2, 1}, {64, 2, 2}, {475, 2, 2},
		{10, 16, 1}, {96, 16, 3}, {475, 16, 14}, {4096, 16, 16}, {10, 1, 1},
	} {
		if got := batchThreads(c.tokens, c.limit); got != c.want {
			t.Errorf("batchThreads(%d, %d) = %d, want %d", c.tokens, c.limit, got, c.want)
		}
	}
}
