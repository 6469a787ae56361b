// Package sbomtest checks SBOMs in tests against CycloneDX's own 1.5 JSON
// schema (cyclonedx/: the schema and the two it refers to, as CycloneDX
// publishes them; see cyclonedx/README.md). It is apart from internal/sbom
// so that the schema validator is linked into tests only.
package sbomtest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// Validate fails t unless b is a valid CycloneDX 1.5 JSON document.
func Validate(t testing.TB, b []byte) {
	t.Helper()
	dir := filepath.Join(testutil.RepoRoot(), "internal", "sbom", "sbomtest", "cyclonedx")
	c := jsonschema.NewCompiler()
	for _, name := range []string{"bom-1.5.schema.json", "spdx.schema.json", "jsf-0.82.schema.json"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource("http://cyclonedx.org/schema/"+name, doc); err != nil {
			t.Fatal(err)
		}
	}
	sch, err := c.Compile("http://cyclonedx.org/schema/bom-1.5.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("SBOM is not valid CycloneDX 1.5: %v", err)
	}
}
