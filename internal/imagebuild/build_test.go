package imagebuild

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/sovereign-ai/sovereign/internal/bundle/libdir"
	"github.com/sovereign-ai/sovereign/internal/bundle/libdir/libdirtest"
	"github.com/sovereign-ai/sovereign/internal/sbom/sbomtest"
)

// testInputs returns the binary (SOVEREIGN_BIN, as make test sets it, else
// this test's own executable: a Go binary with build information, linked
// dynamically when cgo is on), the
// Debian packages (apt-get download into the shared cache; skipped where
// apt or the mirror is not there) and a one-model models directory.
func testInputs(t *testing.T) (bin string, debs []Deb, modelsDir string) {
	t.Helper()
	for _, tool := range []string{"apt-cache", "apt-get", "dpkg-deb", "dpkg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here: the image takes its files from Debian's packages", tool)
		}
	}
	// The real binary where make test gives it, but not under -race, where
	// compressing its 78 MB twice takes more than a minute.
	bin = os.Getenv("SOVEREIGN_BIN")
	if _, err := os.Stat(bin); bin == "" || err != nil || raceEnabled {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		bin = exe
	}
	ctx := context.Background()
	names := append([]string(nil), BasePackages...)
	needed, err := NeededPackages(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	names = append(names, needed...)
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	debs, err = FetchDebs(ctx, names, filepath.Join(cache, "sovereign", "debs"), nil)
	if err != nil {
		t.Skipf("the Debian packages cannot be fetched here: %v", err)
	}
	modelsDir = t.TempDir()
	m := filepath.Join(modelsDir, "tiny")
	os.MkdirAll(m, 0o755)
	weights := []byte("GGUF not really a model")
	sum := sha256.Sum256(weights)
	os.WriteFile(filepath.Join(m, "model.gguf"), weights, 0o600)
	manifest, _ := json.Marshal(map[string]any{"id": "tiny", "source": "pypi://tiny-model==0.1.0",
		"sha256": hex.EncodeToString(sum[:]), "size": len(weights), "file": "model.gguf"})
	os.WriteFile(filepath.Join(m, "manifest.json"), manifest, 0o600)
	return bin, debs, modelsDir
}

func TestImageReproducibleAndMinimal(t *testing.T) {
	bin, debs, modelsDir := testInputs(t)
	ctx := context.Background()
	epoch := time.Unix(1795879479, 0).UTC()
	opts := Options{Binary: bin, Debs: debs, Epoch: epoch, Name: "sovereign", Version: "v0.0.0-test",
		Revision: "0123456789abcdef", SourceURL: "https://example.invalid/sovereign", Licenses: "NOASSERTION",
		ModelsDir: modelsDir, Models: []string{"tiny"}}

	// Twice, each into a directory of its own: the same digests, the same
	// archive bytes, the same SBOM.
	type built struct {
		res          *Result
		base, models string // archive sha256
		sbom         []byte
	}
	var b [2]built
	for i := range b {
		start := time.Now()
		res, err := Build(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := WriteArchive(filepath.Join(dir, "base.tar"), []Image{res.Base}, epoch); err != nil {
			t.Fatal(err)
		}
		if err := WriteArchive(filepath.Join(dir, "models.tar"), []Image{*res.Models}, epoch); err != nil {
			t.Fatal(err)
		}
		sbom, err := res.SBOM(SBOMOptions{LlamaCppVersion: "11434.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		b[i] = built{res: res, base: sha256File(t, filepath.Join(dir, "base.tar")),
			models: sha256File(t, filepath.Join(dir, "models.tar")), sbom: sbom}
		t.Logf("build %d: %s %s, %s %s (%v)", i+1, res.Base.Tag, res.Base.Digest, res.Models.Tag, res.Models.Digest,
			time.Since(start).Round(time.Millisecond))
	}
	if b[0].res.Base.Digest != b[1].res.Base.Digest || b[0].res.Models.Digest != b[1].res.Models.Digest {
		t.Fatalf("digests differ between two builds: %s %s, then %s %s", b[0].res.Base.Digest, b[0].res.Models.Digest,
			b[1].res.Base.Digest, b[1].res.Models.Digest)
	}
	if b[0].base != b[1].base || b[0].models != b[1].models {
		t.Fatalf("archives differ between two builds")
	}
	if string(b[0].sbom) != string(b[1].sbom) {
		t.Fatalf("SBOMs differ between two builds")
	}
	res := b[0].res

	// The models image is the base image and one more layer.
	baseLayers, _ := res.Base.Image.Layers()
	modelLayers, _ := res.Models.Image.Layers()
	if len(modelLayers) != len(baseLayers)+1 {
		t.Fatalf("models image: %d layers, want %d", len(modelLayers), len(baseLayers)+1)
	}
	for i, l := range baseLayers {
		d1, _ := l.Digest()
		d2, _ := modelLayers[i].Digest()
		if d1 != d2 {
			t.Errorf("layer %d: %s in the base image, %s in the models image", i, d1, d2)
		}
	}

	// The configuration.
	for _, im := range res.Images() {
		cf, err := im.Image.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if c.User != "65532:65532" {
			t.Errorf("%s: User %q, want 65532:65532", im.Tag, c.User)
		}
		if c.Healthcheck != nil {
			t.Errorf("%s: has a HEALTHCHECK: %+v", im.Tag, c.Healthcheck)
		}
		if !slices.Equal(c.Entrypoint, []string{"/usr/bin/sovereign", "serve"}) {
			t.Errorf("%s: Entrypoint %q", im.Tag, c.Entrypoint)
		}
		for _, e := range []string{"SOVEREIGN_DATA_DIR=/data", "SOVEREIGN_ADDR=0.0.0.0:8080", "TMPDIR=/data/tmp"} {
			if !slices.Contains(c.Env, e) {
				t.Errorf("%s: no %s in Env %q", im.Tag, e, c.Env)
			}
		}
		if _, ok := c.Volumes["/data"]; !ok || len(c.Volumes) != 1 {
			t.Errorf("%s: Volumes %v, want /data only", im.Tag, c.Volumes)
		}
		if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
			t.Errorf("%s: ExposedPorts %v", im.Tag, c.ExposedPorts)
		}
		if !cf.Created.Time.Equal(epoch) || c.Labels["org.opencontainers.image.created"] != epoch.Format(time.RFC3339) {
			t.Errorf("%s: created %v / %q, want the epoch %v", im.Tag, cf.Created, c.Labels["org.opencontainers.image.created"], epoch)
		}
		for _, h := range cf.History {
			if !h.Created.Time.Equal(epoch) {
				t.Errorf("%s: history entry created %v, want the epoch", im.Tag, h.Created)
			}
		}
		for _, l := range []string{"version", "revision", "source", "licenses", "created"} {
			if c.Labels["org.opencontainers.image."+l] == "" {
				t.Errorf("%s: no org.opencontainers.image.%s label", im.Tag, l)
			}
		}
	}
	mcf, _ := res.Models.Image.ConfigFile()
	if !slices.Contains(mcf.Config.Env, "SOVEREIGN_MODELS_DIR=/models") {
		t.Errorf("models image: no SOVEREIGN_MODELS_DIR=/models in %q", mcf.Config.Env)
	}

	// The root filesystem: no shell, no package manager, no compiler;
	// owned by root or nonroot; /data nonroot's; every time the epoch.
	files := flatten(t, res.Models)
	forbidden := []string{"sh", "bash", "dash", "ash", "busybox", "apt", "apt-get", "apt-cache", "dpkg", "dpkg-deb",
		"rpm", "gcc", "cc", "c++", "g++", "clang", "ld", "as", "make", "perl", "python3", "su", "sudo", "ldconfig"}
	for p, h := range files {
		if slices.Contains(forbidden, path.Base(p)) && h.Typeflag != tar.TypeDir {
			t.Errorf("the image holds %s", p)
		}
		if strings.HasPrefix(p, "usr/bin/") && p != "usr/bin/sovereign" {
			t.Errorf("the image holds a program other than sovereign: %s", p)
		}
		if (h.Uid != 0 && h.Uid != NonRoot) || (h.Gid != 0 && h.Gid != NonRoot) {
			t.Errorf("%s: owned by %d:%d", p, h.Uid, h.Gid)
		}
		if (h.Uid == NonRoot) != (p == "data" || p == "home/nonroot") {
			t.Errorf("%s: owner %d", p, h.Uid)
		}
		if !h.ModTime.Equal(epoch) {
			t.Errorf("%s: mtime %v, want the epoch", p, h.ModTime)
		}
		if h.Typeflag == tar.TypeReg && h.Mode&0o7022 != 0 {
			t.Errorf("%s: mode %o (writable by others or set-id)", p, h.Mode)
		}
	}
	for _, p := range []string{"bin/sh", "usr/bin/sh", "bin/bash", "usr/bin/bash", "usr/bin/apt", "usr/bin/dpkg", "usr/bin/gcc", "usr/bin/cc"} {
		if _, ok := files[p]; ok {
			t.Errorf("the image holds %s", p)
		}
	}
	for _, p := range []string{"usr/bin/sovereign", "etc/passwd", "etc/group", "etc/ssl/certs/ca-certificates.crt",
		"usr/share/zoneinfo/Europe/Paris", "usr/lib/x86_64-linux-gnu/libc.so.6", "usr/lib/x86_64-linux-gnu/libstdc++.so.6",
		"usr/lib64/ld-linux-x86-64.so.2", "models/tiny/model.gguf", "var/lib/dpkg/status.d/libc6", "data"} {
		if _, ok := files[p]; !ok {
			t.Errorf("the image lacks %s", p)
		}
	}
	if h := files["data"]; h != nil && (h.Uid != NonRoot || h.Gid != NonRoot || h.Typeflag != tar.TypeDir) {
		t.Errorf("/data: %d:%d type %c, want a directory of 65532:65532", h.Uid, h.Gid, h.Typeflag)
	}
	if h := files["models/tiny/model.gguf"]; h != nil && (h.Uid != 0 || h.Mode&0o222 != 0) {
		t.Errorf("/models/tiny/model.gguf: uid %d mode %o, want root's and read-only", h.Uid, h.Mode)
	}
	if err := CheckLibraries(res.Files, bin); err != nil {
		t.Error(err)
	}
	// A portable binary's libraries beside it in /usr/lib/sovereign, each
	// a regular root-owned 0644 file; none for a build with llama.cpp in.
	if len(res.Libs) == 0 {
		if _, ok := files["usr/lib/sovereign"]; ok {
			t.Errorf("%s has no libraries of its own, but the image has /usr/lib/sovereign", bin)
		}
	}
	for _, l := range res.Libs {
		h := files["usr/lib/sovereign/"+l.Name]
		if h == nil || h.Typeflag != tar.TypeReg || h.Mode != 0o644 || h.Uid != 0 || h.Size != l.Size {
			t.Errorf("/usr/lib/sovereign/%s: %+v, want a regular file of %d bytes, root's, 0644", l.Name, h, l.Size)
		}
	}
	if slices.ContainsFunc(res.Libs, func(l libdir.Lib) bool { return l.Name == "libllama.so.0" }) {
		t.Logf("portable build: %d libraries in /usr/lib/sovereign", len(res.Libs))
		// Run in the image's root filesystem (chroot: only its own
		// loader and libraries), the binary picks a CPU variant.
		out := runInRoot(t, res.Base, "/usr/bin/sovereign", "version")
		if out != "" && !regexp.MustCompile(`(?m)^CPU kernels: \w+ \(best of \d+ for this CPU\)$`).MatchString(out) {
			t.Errorf("sovereign version in the image's root:\n%s", out)
		}
		t.Logf("sovereign version in the image's root: %q", out)
	}

	// The SBOM: CycloneDX 1.5, the packages, the modules, the digests.
	var bom struct {
		BOMFormat, SpecVersion, SerialNumber string
		Metadata                             struct {
			Component struct {
				Type   string
				Hashes []struct{ Alg, Content string }
			}
		}
		Components []struct {
			Type, Name, Version, PURL string
			Components                []struct{ Type, Name string }
		}
	}
	if err := json.Unmarshal(b[0].sbom, &bom); err != nil {
		t.Fatal(err)
	}
	sbomtest.Validate(t, b[0].sbom)
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != "1.5" || !strings.HasPrefix(bom.SerialNumber, "urn:uuid:") {
		t.Errorf("SBOM: %s %s %s", bom.BOMFormat, bom.SpecVersion, bom.SerialNumber)
	}
	if bom.Metadata.Component.Type != "container" || len(bom.Metadata.Component.Hashes) == 0 ||
		bom.Metadata.Component.Hashes[0].Content != res.Base.Digest.Hex {
		t.Errorf("SBOM: metadata.component %+v, want the image %s", bom.Metadata.Component, res.Base.Digest)
	}
	var purls []string
	var models int
	for _, c := range bom.Components {
		purls = append(purls, c.PURL)
		for _, cc := range c.Components {
			if cc.Type == "machine-learning-model" {
				models++
			}
		}
	}
	joined := strings.Join(purls, "\n")
	for _, want := range []string{"pkg:deb/debian/libc6@", "pkg:deb/debian/libstdc%2B%2B6@", "pkg:deb/debian/tzdata@",
		"pkg:deb/debian/ca-certificates@", "pkg:golang/std@", "pkg:oci/sovereign@sha256%3A" + res.Models.Digest.Hex} {
		if !strings.Contains(joined, want) {
			t.Errorf("SBOM: no component %s…", want)
		}
	}
	if len(res.Libs) > 0 {
		// The llama.cpp component holds the library files with their hashes.
		for _, l := range res.Libs {
			if !strings.Contains(string(b[0].sbom), `"name": "/usr/lib/sovereign/`+l.Name+`"`) ||
				!strings.Contains(string(b[0].sbom), l.SHA256) {
				t.Errorf("SBOM: no file component for /usr/lib/sovereign/%s", l.Name)
			}
		}
	}
	if !strings.Contains(joined, "distro=debian-") {
		t.Errorf("SBOM: Debian purls lack the distro")
	}
	if models != 1 {
		t.Errorf("SBOM: %d models, want 1", models)
	}
}

// flatten returns the image's root filesystem, path → header.
func flatten(t *testing.T, im *Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(im.Image)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(path.Clean(h.Name), "/")] = h
	}
	return out
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	s, err := fileSHA256(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A binary with libraries of its own (libdirtest's stand-in for the
// portable build, made with cc): the image holds them in /usr/lib/sovereign
// under the names the loader looks for, and the binary runs there; the
// checks resolve what the libraries need as well as what the binary does.
func TestImageWithOwnLibraries(t *testing.T) {
	p := libdirtest.Build(t)
	_, debs, _ := testInputs(t)
	ctx := context.Background()
	epoch := time.Unix(1795879479, 0).UTC()
	opts := Options{Binary: p.Bin, Debs: debs, Epoch: epoch, Version: "v0.0.0-libs"}
	res, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Base.Digest != again.Base.Digest {
		t.Errorf("digests differ between two builds: %s, %s", res.Base.Digest, again.Base.Digest)
	}
	files := flatten(t, &res.Base)
	var shipped []string
	for p, h := range files {
		if strings.HasPrefix(p, "usr/lib/sovereign/") {
			shipped = append(shipped, strings.TrimPrefix(p, "usr/lib/sovereign/"))
			if h.Typeflag != tar.TypeReg || h.Mode != 0o644 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
				t.Errorf("%s: type %c mode %o owner %d:%d mtime %v", p, h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime)
			}
		}
	}
	slices.Sort(shipped)
	// The development link (libsovtest.so) and the versioned file name
	// (libsovtest.so.0.1.0) are not what the loader opens.
	if want := []string{libdirtest.Module, libdirtest.Library}; !slices.Equal(shipped, want) {
		t.Errorf("/usr/lib/sovereign holds %q, want %q", shipped, want)
	}
	if h := files["usr/lib/sovereign"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o755 || h.Uid != 0 {
		t.Errorf("/usr/lib/sovereign: %+v", h)
	}
	cf, _ := res.Base.Image.ConfigFile()
	if by := cf.History[len(cf.History)-1].CreatedBy; !strings.Contains(by, "/usr/lib/sovereign (2 libraries)") {
		t.Errorf("the layer's history says %q", by)
	}
	if out := runInRoot(t, res.Base, "/usr/bin/sovereign", "/usr/lib/sovereign/"+libdirtest.Module); out != "" && out != "sovtest 42\nmodule 43\n" {
		t.Errorf("the binary in the image's root: %q", out)
	}

	// What the libraries need must be in the image too: without
	// libstdc++, which only the library needs, the image is refused.
	var noCxx []Deb
	for _, d := range debs {
		if d.Package != "libstdc++6" {
			noCxx = append(noCxx, d)
		}
	}
	_, err = Build(ctx, Options{Binary: p.Bin, Debs: noCxx, Epoch: epoch, Version: "v0.0.0-libs"})
	if err == nil || !strings.Contains(err.Error(), "libstdc++.so.6, which /usr/lib/sovereign/"+libdirtest.Library+" needs, is not in the image") {
		t.Errorf("an image without libstdc++: %v", err)
	}
	// NeededPackages resolves the libraries' needs and leaves their own
	// names (not on this machine) out.
	pkgs, err := NeededPackages(ctx, p.Bin)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pkgs, "libstdc++6") || !slices.Contains(pkgs, "libc6") {
		t.Errorf("NeededPackages: %q, want libc6 and libstdc++6", pkgs)
	}
	// A lib directory without the library the binary needs.
	os.Remove(filepath.Join(p.LibDir, libdirtest.Library))
	os.Remove(filepath.Join(p.LibDir, libdirtest.Library+".1.0"))
	os.Remove(filepath.Join(p.LibDir, "libsovtest.so"))
	if err := CheckLibraries(res.Files, p.Bin); err == nil || !strings.Contains(err.Error(), libdirtest.Library+", which sovereign needs, is not in the image") {
		t.Errorf("CheckLibraries without the library: %v", err)
	}
}

// runInRoot unpacks the image's root filesystem and runs a command in it
// with chroot, so that only the image's loader and libraries serve it; it
// returns the output, or "" (the check left out) where this process may
// not chroot and mount (not root).
func runInRoot(t *testing.T, im Image, args ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Logf("not root: %s not run in the image's root filesystem", args[0])
		return ""
	}
	root := t.TempDir()
	rc := mutate.Extract(im.Image)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.FromSlash(path.Clean("/"+h.Name)))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeSymlink:
			os.MkdirAll(filepath.Dir(p), 0o755)
			err = os.Symlink(h.Linkname, p)
		case tar.TypeReg:
			os.MkdirAll(filepath.Dir(p), 0o755)
			var f *os.File
			if f, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode&0o777)); err == nil {
				_, err = io.Copy(f, tr)
				f.Close()
			}
		}
		if err != nil {
			t.Fatalf("unpacking %s: %v", h.Name, err)
		}
	}
	// /proc mounted in a mount namespace of its own, as a container
	// engine does: the loader reads /proc/self/exe to expand $ORIGIN.
	script := `mount -t proc proc "$1/proc" && exec chroot "$@"`
	out, err := exec.Command("unshare", append([]string{"-m", "--propagation", "private", "sh", "-c", script, "sh", root}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("chroot %s %s: %v\n%s", root, strings.Join(args, " "), err, out)
	}
	return string(out)
}
