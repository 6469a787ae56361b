package runner

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/gguf/testmodel"
)

// TestBenchPrintsEveryLayer runs `sovereign runner --bench` on a tiny model:
// every row of the table is there with a positive rate.
func TestBenchPrintsEveryLayer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := testmodel.Write(path, testmodel.Options{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := Bench(context.Background(), BenchConfig{ModelPath: path, Engine: EngineConfig{Threads: 2, CtxPerSlot: 1024}, Tokens: 8, Runs: 1}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"llama_decode, 1 sequence", "llama_decode, 8 sequences", "-token prompt", "engine step loop, 1 stream", "engine step loop, 1 stream, 7 idle caches"} {
		line := ""
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, row+" ") {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("no %q row in\n%s", row, out.String())
		}
		f := strings.Fields(line)
		if rate := f[len(f)-1]; rate == "0.0" || strings.HasPrefix(rate, "-") || rate == "+Inf" || rate == "NaN" {
			t.Errorf("row %q has rate %s", row, rate)
		}
	}
}
