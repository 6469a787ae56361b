package bundle

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sovereign-ai/sovereign/internal/bundle/libdir"
	"github.com/sovereign-ai/sovereign/internal/sbom"
)

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
	// Libraries are the binary's own libraries (a portable build's),
	// listed as files of the llama.cpp component under the paths the
	// bundle gives them (lib/sovereign/NAME).
	Libraries []libdir.Lib
}

// SBOM returns a CycloneDX 1.5 JSON SBOM of a Sovereign binary: the binary
// itself as the metadata component (with its sha256), and as components
// every Go module linked into it (version, pkg:golang purl, and the module's
// go.sum hash when the build recorded one), the Go standard library, and
// the llama.cpp release the binary links when its cgo flags record it
// (with the library files the bundle carries, for a portable build).
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
	mainRef := sbom.GolangPURL(mainPath, version)
	main := sbom.Component{
		Type: "application", BOMRef: mainRef, Name: "sovereign", Version: version, PURL: mainRef,
		Description: "Sovereign, an OpenAI-compatible inference server (" + bi.Path + ")",
	}
	if in.BinarySHA256 != "" {
		main.Hashes = []sbom.Hash{{Alg: "SHA-256", Content: in.BinarySHA256}}
	}
	for _, s := range bi.Settings {
		// Build settings say how the binary was made (GOOS, GOARCH,
		// CGO_ENABLED, -ldflags, …); vcs.* say from which commit.
		main.Properties = append(main.Properties, sbom.Property{Name: "cdx:gomod:build:" + s.Key, Value: s.Value})
	}
	main.Properties = append(main.Properties, sbom.Property{Name: "cdx:gomod:build:goversion", Value: bi.GoVersion})

	comps := sbom.GoComponents(bi)
	for i := range comps {
		if comps[i].Name == "llama.cpp" {
			for _, l := range in.Libraries {
				comps[i].Components = append(comps[i].Components, sbom.FileComponent(LibraryDir+l.Name, l.SHA256))
			}
		}
	}
	deps := make([]string, 0, len(comps))
	for _, c := range comps {
		deps = append(deps, c.BOMRef)
	}
	bom := sbom.New(serialNumber(in))
	bom.Metadata = sbom.Metadata{
		Timestamp: in.Created.UTC().Format(time.RFC3339),
		Tools: sbom.Tools{Components: []sbom.Component{{
			Type: "application", Name: "sovereign bundle create", Version: version,
		}}},
		Component: main,
	}
	bom.Components = comps
	bom.Dependencies = []sbom.Dependency{{Ref: mainRef, DependsOn: deps}}
	b, err := json.MarshalIndent(bom, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("sbom: %w", err)
	}
	return append(b, '\n'), nil
}

// serialNumber derives from the hashes of the binary and its libraries and
// the time, so two bundles of the same files made at the same second get
// the same SBOM (reproducible), and different ones differ.
func serialNumber(in SBOMInput) string {
	seed := in.BinarySHA256 + "|" + in.Created.UTC().Format(time.RFC3339Nano)
	for _, l := range in.Libraries {
		seed += "|" + l.Name + "=" + l.SHA256
	}
	return sbom.Serial([]byte(seed))
}
