package models

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// tinyGGUF describes a minimal model for tests.
type tinyGGUF struct {
	arch     string
	ctx      uint32
	embd     uint32
	fileType uint32
	pooling  int // -1: no pooling_type key
	template string
	seed     byte // varies the weights so files differ
}

func llamaGGUF() tinyGGUF {
	return tinyGGUF{arch: "llama", ctx: 128, embd: 8, fileType: 15, pooling: -1, template: "{{ messages }}"}
}

func bertGGUF() tinyGGUF {
	return tinyGGUF{arch: "bert", ctx: 512, embd: 8, fileType: 1, pooling: 1}
}

// bytes encodes a valid GGUF v3 file with one F32 tensor of embd×4 values.
func (g tinyGGUF) bytes() []byte {
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	str := func(s string) { le(uint64(len(s))); b.WriteString(s) }
	type kv struct {
		key string
		val any
	}
	kvs := []kv{
		{"general.architecture", g.arch},
		{"general.name", "tiny " + g.arch},
		{"general.file_type", g.fileType},
		{g.arch + ".context_length", g.ctx},
		{g.arch + ".embedding_length", g.embd},
		{g.arch + ".block_count", uint32(1)},
	}
	if g.pooling >= 0 {
		kvs = append(kvs, kv{g.arch + ".pooling_type", uint32(g.pooling)})
	}
	if g.template != "" {
		kvs = append(kvs, kv{"tokenizer.chat_template", g.template})
	}
	b.WriteString("GGUF")
	le(uint32(3))
	le(uint64(1)) // tensors
	le(uint64(len(kvs)))
	for _, e := range kvs {
		str(e.key)
		switch v := e.val.(type) {
		case string:
			le(uint32(8))
			str(v)
		case uint32:
			le(uint32(4))
			le(v)
		}
	}
	// tensor info: name, n_dims, dims, type, offset
	str("token_embd.weight")
	le(uint32(2))
	le(uint64(g.embd))
	le(uint64(4))
	le(uint32(0)) // F32
	le(uint64(0))
	for b.Len()%32 != 0 {
		b.WriteByte(0)
	}
	for i := 0; i < int(g.embd)*4; i++ {
		le(math.Float32frombits(uint32(i)*2654435761 ^ uint32(g.seed)))
	}
	return b.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func writeFile(t *testing.T, p string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// makeZip builds a zip (a wheel) from name → content, in sorted order.
func makeZip(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(files[n])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// wheelFiles returns the dist-info files of a wheel for pkg==ver.
func wheelFiles(pkg, ver string, requires ...string) map[string][]byte {
	mod := strings.ReplaceAll(pkg, "-", "_")
	var meta strings.Builder
	fmt.Fprintf(&meta, "Metadata-Version: 2.4\nName: %s\nVersion: %s\n", pkg, ver)
	for _, r := range requires {
		fmt.Fprintf(&meta, "Requires-Dist: %s\n", r)
	}
	meta.WriteString("\n# " + pkg + "\n\nRequires-Dist: " + pkg + "-part9==" + ver + " (in the description, not a header)\n")
	return map[string][]byte{
		mod + "/__init__.py":                              []byte(""),
		mod + "-" + ver + ".dist-info/METADATA":           []byte(meta.String()),
		mod + "-" + ver + ".dist-info/WHEEL":              []byte("Wheel-Version: 1.0\n"),
		mod + "-" + ver + ".dist-info/top_level.txt":      []byte(mod + "\n"),
		mod + "-" + ver + ".dist-info/RECORD":             []byte(""),
		mod + "-" + ver + ".dist-info/entry_points.txt":   nil,
		mod + "-" + ver + ".dist-info/licenses/README.md": []byte("test"),
	}
}

// fakePyPI is an httptest package index serving the JSON API and wheels.
type fakePyPI struct {
	t   *testing.T
	srv *httptest.Server
	mu  sync.Mutex
	// pkgs: normalised name → version → wheel bytes
	pkgs map[string]map[string][]byte
	// badDigest: names whose advertised sha256 is wrong
	badDigest map[string]bool
	// noReleases: names whose project document lists no releases (forces
	// the per-version document)
	noReleases map[string]bool
	// requests records every path asked for.
	requests []string
	// cut: wheel file name → bytes of the body served before the
	// connection is dropped (once: the entry is removed when used).
	cut map[string]int
	// ignoreRange makes the server answer range requests with the whole
	// file (200), as servers without range support do.
	ignoreRange bool
	// served counts the body bytes sent per wheel file name; ranges
	// records the Range headers received, in order.
	served map[string]int
	ranges []string
}

func newFakePyPI(t *testing.T) *fakePyPI {
	f := &fakePyPI{t: t, pkgs: map[string]map[string][]byte{}, badDigest: map[string]bool{}, noReleases: map[string]bool{},
		cut: map[string]int{}, served: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePyPI) add(pkg, ver string, files map[string][]byte, extra map[string][]byte) {
	all := map[string][]byte{}
	for k, v := range files {
		all[k] = v
	}
	for k, v := range extra {
		all[k] = v
	}
	n := normalizePkg(pkg)
	if f.pkgs[n] == nil {
		f.pkgs[n] = map[string][]byte{}
	}
	f.pkgs[n][ver] = makeZip(f.t, all)
}

func wheelName(pkg, ver string) string {
	return strings.ReplaceAll(pkg, "-", "_") + "-" + ver + "-py3-none-any.whl"
}

func (f *fakePyPI) fileEntry(pkg, ver string) map[string]any {
	data := f.pkgs[normalizePkg(pkg)][ver]
	digest := sha(data)
	if f.badDigest[normalizePkg(pkg)] {
		digest = strings.Repeat("0", 64)
	}
	return map[string]any{
		"filename":    wheelName(pkg, ver),
		"url":         "/files/" + normalizePkg(pkg) + "/" + wheelName(pkg, ver), // relative: must be resolved
		"packagetype": "bdist_wheel",
		"size":        len(data),
		"digests":     map[string]string{"sha256": digest, "md5": "x"},
	}
}

func (f *fakePyPI) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func (f *fakePyPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.URL.Path)
	f.mu.Unlock()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "files":
		vers := f.pkgs[parts[1]]
		for v, data := range vers {
			if wheelName(parts[1], v) == parts[2] || strings.HasSuffix(parts[2], "-"+v+"-py3-none-any.whl") {
				f.serveFile(w, r, parts[2], data)
				return
			}
		}
		http.NotFound(w, r)
	case parts[0] == "pypi" && (len(parts) == 3 || len(parts) == 4) && parts[len(parts)-1] == "json":
		name := normalizePkg(parts[1])
		vers, ok := f.pkgs[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		var latest string
		for v := range vers {
			if v > latest {
				latest = v
			}
		}
		ver := latest
		if len(parts) == 4 {
			ver = parts[2]
			if _, ok := vers[ver]; !ok {
				http.NotFound(w, r)
				return
			}
		}
		doc := map[string]any{
			"info": map[string]any{"name": parts[1], "version": ver},
			"urls": []any{
				map[string]any{"filename": parts[1] + "-" + ver + ".tar.gz", "url": "/files/none", "packagetype": "sdist"},
				f.fileEntry(name, ver),
			},
		}
		if len(parts) == 3 && !f.noReleases[name] {
			rel := map[string]any{}
			for v := range vers {
				rel[v] = []any{f.fileEntry(name, v)}
			}
			doc["releases"] = rel
		}
		json.NewEncoder(w).Encode(doc)
	default:
		http.NotFound(w, r)
	}
}

// serveFile sends a wheel, honouring "Range: bytes=N-" (unless
// ignoreRange) and dropping the connection where cut says.
func (f *fakePyPI) serveFile(w http.ResponseWriter, r *http.Request, name string, data []byte) {
	f.mu.Lock()
	cut, hasCut := f.cut[name]
	delete(f.cut, name)
	rg := r.Header.Get("Range")
	f.ranges = append(f.ranges, rg)
	ignore := f.ignoreRange
	f.mu.Unlock()
	start := 0
	if rg != "" && !ignore {
		if _, err := fmt.Sscanf(rg, "bytes=%d-", &start); err != nil || start >= len(data) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(data)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(data)-1, len(data)))
		w.Header().Set("Content-Length", fmt.Sprint(len(data)-start))
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	}
	body := data[start:]
	if hasCut && cut < len(body) {
		body = body[:cut]
	} else {
		hasCut = false
	}
	n, _ := w.Write(body)
	f.mu.Lock()
	f.served[name] += n
	f.mu.Unlock()
	if hasCut {
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drops the connection mid-body
	}
}

// bytesServed returns the body bytes sent of a wheel so far.
func (f *fakePyPI) bytesServed(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.served[name]
}

// closedURL returns an http URL on which nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u
}

// storeEntries lists everything in the models directory, hidden or not.
func storeEntries(t *testing.T, s *Store) []string {
	t.Helper()
	es, err := os.ReadDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "models"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
