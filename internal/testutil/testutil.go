// Package testutil helps tests find the sovereign binary and the default
// models. It is imported only by tests.
package testutil

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/models"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Binary returns the path of the sovereign binary: $SOVEREIGN_BIN (set by
// `make test`), or one built once per test process by `make build`.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SOVEREIGN_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("SOVEREIGN_BIN=%s: %v (run `make build`)", p, err)
		}
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sovereign-bin-")
		if err != nil {
			buildErr = err
			return
		}
		root := RepoRoot()
		// make build itself (the portable build: the binary and its
		// libraries in ../lib/sovereign), so that tests run what ships.
		bin := filepath.Join(dir, "bin", "sovereign")
		cmd := exec.Command("make", "-s", "build", "BIN="+bin)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: string(b)}
			return
		}
		builtBin = bin
	})
	if buildErr != nil {
		t.Fatalf("building sovereign: %v", buildErr)
	}
	return builtBin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string {
	out := e.out
	if len(out) > 4000 {
		out = out[len(out)-4000:]
	}
	return e.err.Error() + "\n" + out
}

// TestModels are the models the suites use: the defaults (the default chat
// model, which tests that need an instruction-tuned model name, and the
// embedding model), and gemma3-270m, a small base model that keeps the
// suites fast where the model's skill does not matter. `make test` pulls
// the same list (`sovereign models pull --defaults gemma3-270m`).
var TestModels = func() []models.DefaultModel {
	gemma, ok := models.Lookup("gemma3-270m")
	if !ok {
		panic("testutil: gemma3-270m is not a known model")
	}
	return append(slices.Clone(models.Defaults), gemma)
}()

// DefaultModels opens the model store of the end-to-end tests
// (SOVEREIGN_TEST_MODELS_DIR, default data/models in the checkout) and
// fetches [TestModels] into it when they are missing.
func DefaultModels(t testing.TB) *models.Store {
	t.Helper()
	dir := os.Getenv("SOVEREIGN_TEST_MODELS_DIR")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "data", "models")
	}
	store, err := models.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := models.Ensure(context.Background(), store, TestModels, os.Stderr); err != nil {
		t.Fatalf("fetching the test models: %v", err)
	}
	return store
}
