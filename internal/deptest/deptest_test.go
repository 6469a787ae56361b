// Package deptest fences cgo: only the runner may link the llama.cpp
// binding, so the API server never loads C++ code and a model crash can only
// take down a runner process.
package deptest

import (
	"os/exec"
	"strings"
	"testing"
)

const binding = "github.com/sovereign-ai/sovereign/internal/llamacpp"

// allowed may import the binding: the runner package, the binding itself,
// and the command that wires `sovereign runner`.
var allowed = map[string]bool{
	binding: true,
	"github.com/sovereign-ai/sovereign/internal/runner": true,
	"github.com/sovereign-ai/sovereign/cmd/sovereign":   true,
}

func TestOnlyTheRunnerLinksLlamaCpp(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "github.com/sovereign-ai/sovereign/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "github.com/sovereign-ai/sovereign/") {
			continue
		}
		pkg := fields[0]
		checked++
		if allowed[pkg] {
			continue
		}
		for _, d := range fields[1:] {
			if d == binding || strings.HasPrefix(d, "github.com/ollama/ollama/") {
				t.Errorf("%s depends on %s; only the runner may link llama.cpp", pkg, d)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d project packages listed; the fence is not looking at the project", checked)
	}
	// The server-side packages must be among those checked and cgo-free.
	for _, p := range []string{"internal/engine", "internal/httpapi", "internal/openai", "internal/models", "internal/auth", "internal/sqlite", "internal/postgres", "internal/store"} {
		out, err := exec.Command("go", "list", "-f", "{{.CgoFiles}}", "github.com/sovereign-ai/sovereign/"+p).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", p, err)
		}
		if strings.TrimSpace(string(out)) != "[]" {
			t.Errorf("%s has cgo files: %s", p, out)
		}
	}
}
