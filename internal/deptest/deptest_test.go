// Package deptest fences cgo: only the runner may link the llama.cpp
// binding, so the API server never loads C++ code and a model crash can only
// take down a runner process.
package deptest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const (
	module  = "github.com/sovereign-ai/sovereign/"
	binding = module + "internal/llamacpp"
	runner  = module + "internal/runner"
)

// TestOnlyTheRunnerLinksLlamaCpp: no package but the runner imports the
// binding, and a package that links it at all (the sovereign command, which
// wires `sovereign runner`) does so only through the runner: there is no
// exemption by name. The server-side packages link neither, and have no
// cgo files of their own.
func TestOnlyTheRunnerLinksLlamaCpp(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}|{{join .Imports " "}}|{{join .Deps " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[0], module) {
			continue
		}
		pkg, imports, all := parts[0], strings.Fields(parts[1]), strings.Fields(parts[2])
		deps[pkg] = all
		checked++
		if pkg == binding || pkg == runner {
			continue
		}
		for _, d := range imports {
			if d == binding || strings.HasPrefix(d, "github.com/ollama/ollama/") {
				t.Errorf("%s imports %s; only the runner may", pkg, d)
			}
		}
		if slices.Contains(all, binding) && !slices.Contains(all, runner) {
			t.Errorf("%s links %s other than through the runner", pkg, binding)
		}
	}
	if checked < 10 {
		t.Fatalf("only %d project packages listed; the fence is not looking at the project", checked)
	}
	for _, p := range []string{"internal/app", "internal/engine", "internal/httpapi", "internal/openai", "internal/models", "internal/auth", "internal/sqlite", "internal/postgres", "internal/store", "internal/extract"} {
		d, ok := deps[module+p]
		if !ok {
			t.Errorf("%s was not listed", p)
		}
		if slices.Contains(d, binding) || slices.Contains(d, runner) {
			t.Errorf("%s links the runner or llama.cpp; the server must not", p)
		}
		out, err := exec.Command("go", "list", "-f", "{{.CgoFiles}}", module+p).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", p, err)
		}
		if strings.TrimSpace(string(out)) != "[]" {
			t.Errorf("%s has cgo files: %s", p, out)
		}
	}
}
