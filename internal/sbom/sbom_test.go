package sbom

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
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

// The llama.cpp component follows the prefix named in the cgo flags: a
// portable build's (shared libraries) and a build for one CPU's (linked
// statically) are told apart, and the version and march read from both.
func TestLlamaCpp(t *testing.T) {
	for _, tc := range []struct {
		flags, tags, march, linkage, desc string
	}{
		{"-I/root/.cache/sovereign/llama.cpp/11434.0.0-portable-5325bc1abe11/include", "ggml_dl", "portable", "shared", "shared libraries in lib/sovereign"},
		{"-L/root/.cache/sovereign/llama.cpp/11434.0.0-portable-5325bc1abe11/lib -Wl,-rpath,$ORIGIN/../lib/sovereign", "", "portable", "shared", "shared libraries"},
		{"-L/root/.cache/sovereign/llama.cpp/11434.0.0-native-cabb5c160292/lib", "", "native", "static", "linked statically"},
		{"-L/home/u/.cache/sovereign/llama.cpp/11434.0.0-x86-64-v3-0123456789ab/lib", "", "x86-64-v3", "static", "linked statically"},
	} {
		bi := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "CGO_LDFLAGS", Value: tc.flags}}}
		if tc.tags != "" {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "-tags", Value: tc.tags})
		}
		c, ok := LlamaCpp(bi)
		if !ok {
			t.Errorf("%s: no llama.cpp", tc.flags)
			continue
		}
		props := map[string]string{}
		for _, p := range c.Properties {
			props[p.Name] = p.Value
		}
		if c.Version != "b11434" || props["sovereign:llama.cpp:march"] != tc.march || props["sovereign:llama.cpp:linkage"] != tc.linkage ||
			!strings.Contains(c.Description, tc.desc) || c.Pedigree.Ancestors[0].Hashes[0].Content != LlamaCppPinSHA256 {
			t.Errorf("%s: %+v", tc.flags, c)
		}
		if tc.march == "portable" && !strings.Contains(c.Pedigree.Notes, "x86-64-v2") {
			t.Errorf("%s: notes %q", tc.flags, c.Pedigree.Notes)
		}
	}
	if _, ok := LlamaCpp(&debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "CGO_LDFLAGS", Value: "-L/usr/lib"}}}); ok {
		t.Error("llama.cpp found in flags that do not name it")
	}
}
