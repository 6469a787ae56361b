package sbom

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// The SBOM's llama.cpp pin must follow scripts/llama-cpp.sh.
func TestLlamaCppPinMatchesScript(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "scripts", "llama-cpp.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"LLAMA_PKG_VERSION": LlamaCppPinVersion, "LLAMA_SHA256": LlamaCppPinSHA256} {
		m := regexp.MustCompile(`(?m)^` + key + `=(\S+)$`).FindSubmatch(b)
		if m == nil || string(m[1]) != want {
			t.Errorf("scripts/llama-cpp.sh %s=%s; internal/sbom/sbom.go has %s: update the constant", key, m, want)
		}
	}
}
