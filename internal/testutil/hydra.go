package testutil

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/testutil/oidcop"
)

// Hydra starts a real OpenID Provider for the test (internal/testutil/
// oidcop: Ory Hydra, built by scripts/hydra.sh, and its login app), stopped
// at the test's end. It fails the test when Hydra cannot be built or
// started.
func Hydra(t testing.TB) *oidcop.OP {
	t.Helper()
	bin := os.Getenv("SOVEREIGN_HYDRA_BIN")
	if bin == "" {
		out, err := exec.Command("bash", filepath.Join(RepoRoot(), "scripts", "hydra.sh")).Output()
		if err != nil {
			msg := ""
			if ee, ok := err.(*exec.ExitError); ok {
				msg = string(ee.Stderr)
			}
			t.Fatalf("building Ory Hydra (scripts/hydra.sh): %v\n%s", err, msg)
		}
		bin = strings.TrimSpace(string(out))
	}
	var logs bytes.Buffer
	op, stop, err := oidcop.Start(bin, &syncWriter{b: &logs}, false)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("Hydra's log:\n%s", logs.String())
		}
	})
	return op
}

// syncWriter lets Hydra's two output streams share one buffer.
type syncWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
