package bundle

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/bundle/libdir/libdirtest"
	"github.com/sovereign-ai/sovereign/internal/gguf/testmodel"
	"github.com/sovereign-ai/sovereign/internal/models"
	"github.com/sovereign-ai/sovereign/internal/sbom"
	"github.com/sovereign-ai/sovereign/internal/sbom/sbomtest"
)

// fixture is a models store with two tiny generated models, a stand-in
// binary and a signing key: everything Create needs, in milliseconds.
type fixture struct {
	dir    string
	store  *models.Store
	binary string
	priv   ed25519.PrivateKey
	pub    ed25519.PublicKey
	keyID  string
}

// fakeLlamaFlags is a cgo flag as `make build` records it, naming the
// llama.cpp prefix scripts/llama-cpp.sh built.
const fakeLlamaFlags = "-L/root/.cache/sovereign/llama.cpp/" + sbom.LlamaCppPinVersion + "-native-cabb5c160292/lib"

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	fx := &fixture{dir: dir}
	store, err := models.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	fx.store = store
	for i, id := range []string{"tiny-a", "tiny-b"} {
		src := filepath.Join(dir, id+".gguf")
		if err := testmodel.Write(src, testmodel.Options{Seed: int64(i + 1), Vocab: testmodel.MinVocab}); err != nil {
			t.Fatal(err)
		}
		opts := models.PullOptions{ID: id}
		if i == 0 {
			opts.Aliases = []string{"default"}
		}
		if _, err := store.Pull(context.Background(), src, opts); err != nil {
			t.Fatal(err)
		}
	}
	fx.binary = filepath.Join(dir, "sovereign")
	if err := os.WriteFile(fx.binary, []byte("#!/bin/sh\necho 'sovereign stand-in'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "key")
	if _, err := GenerateKey(keyPath, false); err != nil {
		t.Fatal(err)
	}
	if fx.priv, err = LoadPrivateKey(keyPath); err != nil {
		t.Fatal(err)
	}
	if fx.pub, err = LoadPublicKey(keyPath + ".pub"); err != nil {
		t.Fatal(err)
	}
	fx.keyID = KeyID(fx.pub)
	return fx
}

// fakePortableFlags is the same for the portable build.
const fakePortableFlags = "-L/root/.cache/sovereign/llama.cpp/" + sbom.LlamaCppPinVersion + "-portable-5325bc1abe11/lib -Wl,-rpath,$ORIGIN/../lib/sovereign"

// buildInfo is the test binary's own build information, with the cgo flag
// a `make build MARCH=native` binary records.
func buildInfo(t testing.TB) *debug.BuildInfo { return buildInfoWith(t, fakeLlamaFlags) }

// buildInfoWith is the test binary's build information with the cgo flags
// given.
func buildInfoWith(t testing.TB, cgoLDFlags string) *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information in the test binary")
	}
	cp := *bi
	cp.Settings = append([]debug.BuildSetting{{Key: "CGO_LDFLAGS", Value: cgoLDFlags}}, bi.Settings...)
	return &cp
}

func (fx *fixture) create(t testing.TB, key ed25519.PrivateKey, ids ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	_, err := Create(&buf, CreateOptions{
		BinaryPath: fx.binary, Build: buildInfo(t), Version: "v9.9.9-test",
		Store: fx.store, Models: ids, Key: key, Created: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	fx := newFixture(t)
	data := fx.create(t, fx.priv, "tiny-a", "tiny-b")

	// The same inputs at the same time make the same bytes.
	if again := fx.create(t, fx.priv, "tiny-a", "tiny-b"); !bytes.Equal(again, data) {
		t.Error("two bundles of the same inputs differ")
	}

	c, err := Read(bytes.NewReader(data), fx.pub, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.KeyID != fx.keyID || c.Manifest.SovereignVersion != "v9.9.9-test" || c.Manifest.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("contents %+v", c.Manifest)
	}
	if got := strings.Join(c.Manifest.Models(), ","); got != "tiny-a,tiny-b" {
		t.Errorf("models %s", got)
	}
	if mm := c.ModelManifests["tiny-a"]; mm.ID != "tiny-a" || len(mm.Aliases) != 1 || mm.Aliases[0] != "default" {
		t.Errorf("model manifest %+v", mm)
	}
	for _, m := range c.Manifest.Members {
		if len(m.SHA256) != 64 {
			t.Errorf("member %s has no sha256", m.Path)
		}
	}

	prefix := filepath.Join(fx.dir, "opt")
	opts := InstallOptions{BinDir: filepath.Join(prefix, "bin"), ModelsDir: filepath.Join(prefix, "data", "models"), ShareDir: filepath.Join(prefix, "share", "sovereign")}
	res, err := Install(bytes.NewReader(data), fx.pub, opts)
	if err != nil {
		t.Fatal(err)
	}
	sameFile(t, res.Binary, fx.binary)
	if st, err := os.Stat(res.Binary); err != nil || st.Mode().Perm()&0o111 == 0 {
		t.Errorf("installed binary %v %v: not executable", st, err)
	}
	installed, err := models.Open(opts.ModelsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"tiny-a", "tiny-b"} {
		m, err := installed.Get(id)
		if err != nil {
			t.Fatalf("installed model %s: %v", id, err)
		}
		orig, _ := fx.store.Get(id)
		if m.SHA256 != orig.SHA256 {
			t.Errorf("model %s sha256 %s, want %s", id, m.SHA256, orig.SHA256)
		}
		sameFile(t, installed.Path(id), fx.store.Path(id))
	}
	for _, name := range []string{SBOMName, "bundle-manifest.json"} {
		if _, err := os.Stat(filepath.Join(opts.ShareDir, name)); err != nil {
			t.Error(err)
		}
	}
	// No libraries (a stand-in without a run path, as a build with
	// llama.cpp linked in): format version 1, no lib directory made.
	if c.Manifest.FormatVersion != 1 || len(c.Manifest.Libraries()) != 0 || res.LibDir != "" {
		t.Errorf("format version %d, libraries %v, LibDir %q", c.Manifest.FormatVersion, c.Manifest.Libraries(), res.LibDir)
	}
	if _, err := os.Stat(filepath.Join(prefix, "lib")); err == nil {
		t.Error("a bundle without libraries made PREFIX/lib")
	}
	noStaging(t, prefix)

	// Installing again (an upgrade) replaces what is there.
	if _, err := Install(bytes.NewReader(data), fx.pub, opts); err != nil {
		t.Fatalf("second install: %v", err)
	}
	noStaging(t, prefix)
}

func TestInstallRefusesOtherPlatform(t *testing.T) {
	fx := newFixture(t)
	var buf bytes.Buffer
	if _, err := Create(&buf, CreateOptions{BinaryPath: fx.binary, Build: buildInfo(t), Version: "x", Platform: "plan9/mips", Key: fx.priv}); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(fx.dir, "opt")
	opts := InstallOptions{BinDir: filepath.Join(prefix, "bin"), ModelsDir: filepath.Join(prefix, "models"), ShareDir: filepath.Join(prefix, "share")}
	_, err := Install(bytes.NewReader(buf.Bytes()), fx.pub, opts)
	if err == nil || !strings.Contains(err.Error(), "plan9/mips") {
		t.Fatalf("install of another platform's bundle: %v", err)
	}
	assertEmptyInstall(t, prefix)
	opts.AnyPlatform = true
	if _, err := Install(bytes.NewReader(buf.Bytes()), fx.pub, opts); err != nil {
		t.Fatalf("with AnyPlatform: %v", err)
	}
}

func sameFile(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Errorf("%s differs from %s", a, b)
	}
}

// noStaging fails if an install left temporary files behind.
func noStaging(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), stagingPrefix) {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

// assertEmptyInstall fails if a refused install left anything but empty
// directories under root.
func assertEmptyInstall(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("a refused install left %s", p)
		}
		if err == nil && d.IsDir() && strings.Contains(d.Name(), stagingPrefix) {
			t.Errorf("a refused install left %s", p)
		}
		return nil
	})
}

// entry is one tar member, for rewriting archives.
type entry struct {
	hdr  tar.Header
	body []byte
}

func entries(t testing.TB, data []byte) []entry {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(data))
	var out []entry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{*hdr, body})
	}
}

func archive(t testing.TB, es []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := e.hdr
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func find(es []entry, name string) int {
	for i, e := range es {
		if e.hdr.Name == Root+name {
			return i
		}
	}
	panic("no member " + name)
}

func TestTamperedBundlesAreRefused(t *testing.T) {
	fx := newFixture(t)
	good := fx.create(t, fx.priv, "tiny-a")
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	fromOther := fx.create(t, otherPriv, "tiny-a")

	edit := func(f func([]entry) []entry) func() []byte {
		return func() []byte { return archive(t, f(entries(t, good))) }
	}
	extra := func(h tar.Header, body string) func() []byte {
		return edit(func(es []entry) []entry { return append(es, entry{h, []byte(body)}) })
	}
	reg := func(name string) tar.Header {
		return tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644}
	}
	cases := []struct {
		name string
		data func() []byte
		want string
	}{
		{"flipped byte in a model", edit(func(es []entry) []entry {
			i := find(es, "models/tiny-a/model.gguf")
			es[i].body = bytes.Clone(es[i].body)
			es[i].body[len(es[i].body)/2] ^= 0x01
			return es
		}), "models/tiny-a/model.gguf is damaged or was changed"},
		{"flipped byte in the binary", edit(func(es []entry) []entry {
			i := find(es, BinaryName)
			es[i].body = bytes.Clone(es[i].body)
			es[i].body[3] ^= 0x20
			return es
		}), "bin/sovereign is damaged or was changed"},
		{"member added", extra(reg(Root+"bin/backdoor"), "#!/bin/sh\n"), "not in the signed manifest"},
		{"member removed", edit(func(es []entry) []entry {
			i := find(es, "models/tiny-a/model.gguf")
			return append(es[:i], es[i+1:]...)
		}), "members missing from the archive: models/tiny-a/model.gguf"},
		{"member duplicated", edit(func(es []entry) []entry {
			return append(es, es[find(es, SBOMName)])
		}), "appears twice"},
		{"member grown", edit(func(es []entry) []entry {
			i := find(es, SBOMName)
			es[i].body = append(bytes.Clone(es[i].body), ' ')
			return es
		}), "the signed manifest says"},
		{"manifest edited", edit(func(es []entry) []entry {
			i := find(es, ManifestName)
			es[i].body = bytes.Replace(es[i].body, []byte("v9.9.9-test"), []byte("v9.9.9-evil"), 1)
			return es
		}), "signature does not verify"},
		{"checksums edited", edit(func(es []entry) []entry {
			i := find(es, SumsName)
			b := bytes.Clone(es[i].body)
			if b[0] == 'a' {
				b[0] = 'b'
			} else {
				b[0] = 'a'
			}
			es[i].body = b
			return es
		}), "signature does not verify"},
		{"signed by another key", func() []byte { return fromOther }, "signed by key"},
		{"another key's signature under our key id", edit(func(es []entry) []entry {
			other := entries(t, fromOther)
			i := find(es, SignatureName)
			sig := other[find(other, SignatureName)].body
			es[i].body = regexp.MustCompile(`key-id: \S+`).ReplaceAll(sig, []byte("key-id: "+fx.keyID))
			return es
		}), "signature does not verify"},
		{"path traversal", extra(reg(Root+"../../etc/cron.d/evil"), "* * * * * root sh\n"), "path escapes the bundle"},
		{"absolute path", extra(reg("/etc/cron.d/evil"), "x"), "absolute path"},
		{"outside the root", extra(reg("evil"), "x"), "outside sovereign-bundle/"},
		{"symlink member", edit(func(es []entry) []entry {
			i := find(es, BinaryName)
			es[i] = entry{tar.Header{Typeflag: tar.TypeSymlink, Name: Root + BinaryName, Linkname: "/bin/sh"}, nil}
			return es
		}), "symbolic link"},
		{"hard link member", extra(tar.Header{Typeflag: tar.TypeLink, Name: Root + "bin/x", Linkname: "/etc/shadow"}, ""), "hard link"},
		{"device member", extra(tar.Header{Typeflag: tar.TypeChar, Name: Root + "dev-null", Devmajor: 1, Devminor: 3}, ""), "device"},
		{"directory member", extra(tar.Header{Typeflag: tar.TypeDir, Name: Root + "bin/", Mode: 0o755}, ""), "directory"},
		{"data appended", func() []byte { return append(bytes.Clone(good), []byte("#!/bin/sh\n")...) }, "appended"},
		{"truncated", func() []byte { return good[:len(good)/2] }, "truncated"},
		{"metadata reordered", edit(func(es []entry) []entry {
			es[1], es[2] = es[2], es[1]
			return es
		}), "reordered"},
		{"empty file", func() []byte { return nil }, "not a sovereign bundle"},
		{"not a tar", func() []byte { return bytes.Repeat([]byte("GGUF not a tar "), 100) }, "damaged"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data()
			_, err := Read(bytes.NewReader(data), fx.pub, ReadOptions{})
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrRefused) {
				t.Errorf("error does not wrap ErrRefused: %v", err)
			}
			t.Logf("refused: %v", err)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to say %q", err, tc.want)
			}
			prefix := filepath.Join(t.TempDir(), "opt")
			_, err = Install(bytes.NewReader(data), fx.pub, InstallOptions{
				BinDir: filepath.Join(prefix, "bin"), ModelsDir: filepath.Join(prefix, "data", "models"), ShareDir: filepath.Join(prefix, "share"),
			})
			if !errors.Is(err, ErrRefused) {
				t.Errorf("install: %v", err)
			}
			assertEmptyInstall(t, prefix)
		})
	}
}

// A refused install must also leave an earlier install as it was.
func TestRefusedUpgradeKeepsInstall(t *testing.T) {
	fx := newFixture(t)
	good := fx.create(t, fx.priv, "tiny-a")
	prefix := filepath.Join(fx.dir, "opt")
	opts := InstallOptions{BinDir: filepath.Join(prefix, "bin"), ModelsDir: filepath.Join(prefix, "data", "models"), ShareDir: filepath.Join(prefix, "share")}
	if _, err := Install(bytes.NewReader(good), fx.pub, opts); err != nil {
		t.Fatal(err)
	}
	es := entries(t, good)
	i := find(es, "models/tiny-a/model.gguf")
	es[i].body[len(es[i].body)-1] ^= 0xff
	if _, err := Install(bytes.NewReader(archive(t, es)), fx.pub, opts); !errors.Is(err, ErrRefused) {
		t.Fatalf("tampered upgrade: %v", err)
	}
	sameFile(t, filepath.Join(opts.ModelsDir, "tiny-a", "model.gguf"), fx.store.Path("tiny-a"))
	sameFile(t, filepath.Join(opts.BinDir, "sovereign"), fx.binary)
	noStaging(t, prefix)
}

// Create reads each model once, checking it against the store's recorded
// sha256: a model damaged on disk fails the create instead of being
// signed.
func TestCreateRefusesDamagedModel(t *testing.T) {
	fx := newFixture(t)
	p := fx.store.Path("tiny-b")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-10] ^= 0x55
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Create(io.Discard, CreateOptions{BinaryPath: fx.binary, Build: buildInfo(t), Version: "x", Store: fx.store, Models: []string{"tiny-b"}, Key: fx.priv})
	if err == nil || !strings.Contains(err.Error(), "does not match the sha256 in its models-store manifest") {
		t.Fatalf("create with a damaged model: %v", err)
	}
	_, err = Create(io.Discard, CreateOptions{BinaryPath: fx.binary, Build: buildInfo(t), Version: "x", Store: fx.store, Models: []string{"missing"}, Key: fx.priv})
	if !errors.Is(err, models.ErrNotFound) {
		t.Fatalf("create with a missing model: %v", err)
	}
}

func TestKeys(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "k")
	pub, err := GenerateKey(key, false)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]fs.FileMode{key: 0o600, key + ".pub": 0o644} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", path, st.Mode().Perm(), want)
		}
	}
	b, _ := os.ReadFile(key)
	if !strings.HasPrefix(string(b), "-----BEGIN PRIVATE KEY-----\n") {
		t.Errorf("private key file %q", b)
	}
	b, _ = os.ReadFile(key + ".pub")
	if !strings.HasPrefix(string(b), "-----BEGIN PUBLIC KEY-----\n") {
		t.Errorf("public key file %q", b)
	}
	priv, err := LoadPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if !priv.Public().(ed25519.PublicKey).Equal(pub) {
		t.Error("private key does not match the public key")
	}
	if _, err := GenerateKey(key, false); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("overwrote a key: %v", err)
	}
	if _, err := GenerateKey(key, true); err != nil {
		t.Errorf("--force: %v", err)
	}
	if _, err := LoadPrivateKey(key + ".pub"); err == nil || !strings.Contains(err.Error(), ".pub") {
		t.Errorf("public key as private: %v", err)
	}
	if _, err := LoadPublicKey(key); err == nil {
		t.Error("private key loaded as public")
	}
	if id := KeyID(pub); !regexp.MustCompile(`^sha256:[0-9a-f]{16}$`).MatchString(id) {
		t.Errorf("key id %q", id)
	}
}

func TestSBOM(t *testing.T) {
	bi := buildInfo(t)
	bi.Deps = append(bi.Deps, &debug.Module{Path: "example.com/old", Version: "v2.0.0+incompatible", Sum: "h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="})
	b, err := SBOM(SBOMInput{Build: bi, Version: "v1.2.3", BinarySHA256: strings.Repeat("ab", 32), Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	sbomtest.Validate(t, b)
	var bom sbom.BOM
	if err := json.Unmarshal(b, &bom); err != nil {
		t.Fatal(err)
	}
	if bom.SpecVersion != "1.5" || bom.Metadata.Component.Version != "v1.2.3" || bom.Metadata.Component.Hashes[0].Content != strings.Repeat("ab", 32) {
		t.Errorf("metadata %+v", bom.Metadata.Component)
	}
	byName := map[string]sbom.Component{}
	for _, c := range bom.Components {
		byName[c.Name] = c
	}
	if c := byName["std"]; c.Version != runtime.Version() {
		t.Errorf("std component %+v", c)
	}
	old := byName["example.com/old"]
	if old.PURL != "pkg:golang/example.com/old@v2.0.0%2Bincompatible?type=module" ||
		len(old.Hashes) != 1 || old.Hashes[0].Content != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("module component %+v", old)
	}
	llama := byName["llama.cpp"]
	if llama.Version != "b11434" || llama.PURL != "pkg:github/ggml-org/llama.cpp@b11434" ||
		llama.Pedigree == nil || llama.Pedigree.Ancestors[0].Hashes[0].Content != sbom.LlamaCppPinSHA256 {
		t.Errorf("llama.cpp component %+v", llama)
	}
	if len(bom.Dependencies) != 1 || len(bom.Dependencies[0].DependsOn) != len(bom.Components) {
		t.Errorf("dependencies %+v", bom.Dependencies)
	}
}

// The SBOM inside a real bundle is valid too, and names the bundled
// binary's hash.
func TestBundledSBOMIsValid(t *testing.T) {
	fx := newFixture(t)
	es := entries(t, fx.create(t, fx.priv))
	doc := es[find(es, SBOMName)].body
	sbomtest.Validate(t, doc)
	sum, _, err := hashFile(fx.binary, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte(sum)) {
		t.Error("the SBOM does not carry the binary's sha256")
	}
}

// FuzzBundleRead feeds the reader arbitrary archives: it must never panic
// or hang, and must accept nothing but what the key signed.
func FuzzBundleRead(f *testing.F) {
	fx := newFixture(f)
	good := fx.create(f, fx.priv, "tiny-a")
	// Small seeds keep the fuzzer fast (a mutated input the fuzzer finds
	// interesting is minimized, which takes long for large ones): a
	// bundle with no models and an SBOM of one module is a few kB.
	var buf bytes.Buffer
	if _, err := Create(&buf, CreateOptions{
		BinaryPath: fx.binary, Version: "v0", Key: fx.priv, Created: time.Unix(0, 0),
		Build: &debug.BuildInfo{GoVersion: "go1.26.0", Path: "example.com/s", Main: debug.Module{Path: "example.com/s"}},
	}); err != nil {
		f.Fatal(err)
	}
	small := buf.Bytes()
	f.Add(small)
	f.Add(small[:1024])
	f.Add(archive(f, entries(f, good)[:3]))
	es := entries(f, small)
	f.Add(archive(f, es[:3]))
	f.Add(archive(f, append(es, entry{tar.Header{Typeflag: tar.TypeSymlink, Name: Root + "x", Linkname: "/"}, nil})))
	signed := es[find(es, ManifestName)].body
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Read(bytes.NewReader(data), fx.pub, ReadOptions{})
		if err == nil && !bytes.Equal(c.ManifestJSON, signed) {
			// Tar headers (times, owners) are not signed and may vary;
			// what verifies must be the signed manifest and its members.
			t.Fatalf("accepted a manifest that was not signed: %q", c.ManifestJSON)
		}
	})
}

// Create reads the SBOM's build information from the binary file itself
// (here the test binary, a real Go executable), so the SBOM describes the
// bytes in the bundle rather than the process that made it.
func TestSBOMFromBinaryFile(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t)
	var buf bytes.Buffer
	if _, err := Create(&buf, CreateOptions{BinaryPath: exe, Version: "v1", Key: fx.priv}); err != nil {
		t.Fatal(err)
	}
	es := entries(t, buf.Bytes())
	doc := es[find(es, SBOMName)].body
	sbomtest.Validate(t, doc)
	var bom sbom.BOM
	if err := json.Unmarshal(doc, &bom); err != nil {
		t.Fatal(err)
	}
	// A test binary records its main module and Go version but no
	// dependencies; cmd/sovereign's test checks those in a real build.
	if !strings.HasPrefix(bom.Metadata.Component.PURL, "pkg:golang/github.com/sovereign-ai/sovereign@v1") {
		t.Errorf("main component %+v", bom.Metadata.Component)
	}
	if len(bom.Components) == 0 || bom.Components[0].Name != "std" || bom.Components[0].Version != runtime.Version() {
		t.Errorf("components %+v", bom.Components)
	}
	if _, err := Create(io.Discard, CreateOptions{BinaryPath: fx.binary, Version: "v1", Key: fx.priv}); err == nil || !strings.Contains(err.Error(), "Go build information") {
		t.Errorf("a binary without Go build information: %v", err)
	}
}

// A portable build's bundle (libdirtest's stand-in binary and libraries,
// made with cc): format version 2; the libraries are regular members in
// lib/sovereign under the names the loader opens, so that the binary of
// the archive unpacked with tar runs (the first-install steps of
// docs/bundle.md), and install puts them beside the binary it installs,
// replacing an earlier directory whole.
func TestRoundTripWithLibraries(t *testing.T) {
	p := libdirtest.Build(t)
	fx := newFixture(t)
	create := func() []byte {
		var buf bytes.Buffer
		_, err := Create(&buf, CreateOptions{BinaryPath: p.Bin, Build: buildInfoWith(t, fakePortableFlags), Version: "v9.9.9-test",
			Store: fx.store, Models: []string{"tiny-a"}, Key: fx.priv, Created: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	data := create()
	if !bytes.Equal(create(), data) {
		t.Error("two bundles of the same inputs differ")
	}
	c, err := Read(bytes.NewReader(data), fx.pub, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var libs []string
	for _, m := range c.Manifest.Libraries() {
		libs = append(libs, m.Path)
	}
	if want := []string{"lib/sovereign/" + libdirtest.Module, "lib/sovereign/" + libdirtest.Library}; c.Manifest.FormatVersion != 2 || !slices.Equal(libs, want) {
		t.Fatalf("format version %d, libraries %q; want 2, %q", c.Manifest.FormatVersion, libs, want)
	}
	es := entries(t, data)
	doc := string(es[find(es, SBOMName)].body)
	sbomtest.Validate(t, []byte(doc))
	if !strings.Contains(doc, `"name": "lib/sovereign/`+libdirtest.Library+`"`) || !strings.Contains(doc, "shared libraries") {
		t.Errorf("the SBOM does not list the libraries as llama.cpp's shared libraries:\n%s", doc)
	}

	// Unpacked with tar, as it is: the binary finds its libraries.
	unpacked := t.TempDir()
	tarCmd := exec.Command("tar", "-C", unpacked, "-xf", "-")
	tarCmd.Stdin = bytes.NewReader(data)
	if out, err := tarCmd.CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v\n%s", err, out)
	}
	if out, err := exec.Command(filepath.Join(unpacked, Root, BinaryName)).CombinedOutput(); err != nil || string(out) != "sovtest 42\n" {
		t.Errorf("the unpacked bundle's binary: %v\n%s", err, out)
	}

	prefix := filepath.Join(fx.dir, "opt")
	opts := InstallOptions{BinDir: filepath.Join(prefix, "bin"), ModelsDir: filepath.Join(prefix, "data", "models"), ShareDir: filepath.Join(prefix, "share", "sovereign")}
	res, err := Install(bytes.NewReader(data), fx.pub, opts)
	if err != nil {
		t.Fatal(err)
	}
	libDir := filepath.Join(prefix, "lib", "sovereign")
	if res.LibDir != libDir || len(res.Libraries) != 2 {
		t.Errorf("installed libraries %q in %q, want 2 in %s", res.Libraries, res.LibDir, libDir)
	}
	if st, err := os.Stat(libDir); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("%s: %v %v, want a 0755 directory", libDir, st, err)
	}
	for _, name := range []string{libdirtest.Library, libdirtest.Module} {
		st, err := os.Lstat(filepath.Join(libDir, name))
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v %v, want a regular 0644 file", name, st, err)
		}
	}
	run := func() string {
		out, err := exec.Command(res.Binary, filepath.Join(libDir, libdirtest.Module)).CombinedOutput()
		if err != nil {
			t.Fatalf("the installed binary: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run(); out != "sovtest 42\nmodule 43\n" {
		t.Errorf("the installed binary printed %q", out)
	}
	noStaging(t, prefix)

	// An upgrade replaces the directory: nothing of the old one stays.
	stale := filepath.Join(libDir, "libggml-cpu-old.so")
	os.WriteFile(stale, []byte("old"), 0o644)
	if _, err := Install(bytes.NewReader(data), fx.pub, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("a library of the earlier install stayed")
	}
	run()
	noStaging(t, prefix)

	// A tampered library is refused, and a refused first install leaves
	// no library behind.
	i := find(es, "lib/sovereign/"+libdirtest.Library)
	es[i].body = bytes.Clone(es[i].body)
	es[i].body[len(es[i].body)/2] ^= 0x01
	bad := archive(t, es)
	other := filepath.Join(t.TempDir(), "opt")
	_, err = Install(bytes.NewReader(bad), fx.pub, InstallOptions{BinDir: filepath.Join(other, "bin"),
		ModelsDir: filepath.Join(other, "data", "models"), ShareDir: filepath.Join(other, "share")})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "lib/sovereign/"+libdirtest.Library+" is damaged or was changed") {
		t.Errorf("install of a bundle with a tampered library: %v", err)
	}
	assertEmptyInstall(t, other)
	// … and an upgrade refused so leaves the installed libraries.
	if _, err := Install(bytes.NewReader(bad), fx.pub, opts); !errors.Is(err, ErrRefused) {
		t.Errorf("tampered upgrade: %v", err)
	}
	run()
	noStaging(t, prefix)
}

// The manifest's rules for library members: under lib/sovereign, a
// library's plain name, and only from format version 2.
func TestLibraryMembers(t *testing.T) {
	for p, ok := range map[string]bool{
		"lib/sovereign/libllama.so.0": true, "lib/sovereign/libggml-cpu-zen4.so": true,
		"lib/sovereign/x.sh": false, "lib/other/libx.so": false, "bin/libx.so": false, "lib/sovereign/sub/libx.so": false,
		"lib/sovereign/libx.so.0/../../../etc/x": false, "libx.so": false,
	} {
		err := checkMember(Member{Path: p, Type: TypeLibrary, Size: 1})
		if (err == nil) != ok {
			t.Errorf("library member %q: %v", p, err)
		}
	}
	if err := checkMember(Member{Path: "lib/sovereign/libx.so", Type: TypeLibrary, Model: "m"}); err == nil {
		t.Error("a library member with a model")
	}
	manifest := func(version int) []byte {
		b, _ := json.Marshal(Manifest{Format: FormatName, FormatVersion: version, Platform: "linux/amd64", Members: []Member{
			{Path: SBOMName, Type: TypeSBOM}, {Path: BinaryName, Type: TypeBinary}, {Path: "lib/sovereign/libx.so.0", Type: TypeLibrary}}})
		return b
	}
	if _, err := parseManifest(manifest(2)); err != nil {
		t.Errorf("version 2 with a library: %v", err)
	}
	if _, err := parseManifest(manifest(1)); err == nil || !strings.Contains(err.Error(), "need format version 2") {
		t.Errorf("version 1 with a library: %v", err)
	}
	if _, err := parseManifest(manifest(3)); err == nil || !strings.Contains(err.Error(), "format version 3") {
		t.Errorf("version 3: %v", err)
	}
}
