package catalog

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/gguf/testmodel"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/models"
)

// memSpecs is an in-memory SpecStore.
type memSpecs struct {
	mu sync.Mutex
	m  map[string]StoredSpec
}

func (s *memSpecs) ListModelSpecs(context.Context) ([]StoredSpec, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []StoredSpec
	for _, id := range sortedKeys(s.m) {
		out = append(out, s.m[id])
	}
	return out, nil
}
func (s *memSpecs) PutModelSpec(_ context.Context, sp StoredSpec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]StoredSpec{}
	}
	s.m[sp.ID] = sp
	return nil
}
func (s *memSpecs) DeleteModelSpec(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[id]; !ok {
		return ErrNotFound
	}
	delete(s.m, id)
	return nil
}

// fileEngine is a Local that binds each model to its file and runs
// nothing: what a route carries to the engine.
type fileEngine struct{}

type boundFile struct {
	inference.Backend
	id, path string
}

func (fileEngine) Bind(id, path string) inference.Backend     { return boundFile{id: id, path: path} }
func (fileEngine) Load(context.Context, string, string) error { return nil }
func (fileEngine) Unload(string) bool                         { return false }
func (fileEngine) State(string) (string, string)              { return "", "" }

// fileOf is the GGUF file the route of name carries to the engine.
func fileOf(t *testing.T, c *Catalog, name string) string {
	t.Helper()
	r, err := c.Resolve(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := r.Target.(boundFile)
	if !ok || b.id != r.ID {
		t.Fatalf("%s: the route's target is %#v", name, r.Target)
	}
	return b.path
}

func newCatalog(t *testing.T, configured []Spec) (*Catalog, *models.Store, *memSpecs) {
	t.Helper()
	store, err := models.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := testmodel.Write(src, testmodel.Options{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pull(context.Background(), "file://"+src, models.PullOptions{ID: "tiny"}); err != nil {
		t.Fatal(err)
	}
	specs := &memSpecs{}
	c, err := New(context.Background(), Config{Installed: store, Specs: specs, Configured: configured, Refresh: -1, Local: fileEngine{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, store, specs
}

func TestSpecNormalize(t *testing.T) {
	for _, tc := range []struct {
		spec  Spec
		field string
	}{
		{Spec{ID: "ok", BaseURL: "http://h:1/v1"}, ""},
		{Spec{ID: "../x", BaseURL: "http://h/v1"}, "id"},
		{Spec{ID: "compare", BaseURL: "http://h/v1"}, "id"},
		{Spec{ID: "u", BaseURL: "ftp://h/v1"}, "base_url"},
		{Spec{ID: "u", BaseURL: "http://user:pw@h/v1"}, "base_url"},
		{Spec{ID: "u", Backend: "upstream"}, "base_url"},
		{Spec{ID: "u", Backend: "local", APIKey: "x"}, "api_key"},
		{Spec{ID: "u", Backend: "gpu"}, "backend"},
		{Spec{ID: "u", BaseURL: "http://h/v1", Capabilities: []string{"vision"}}, "capabilities"},
		{Spec{ID: "u", BaseURL: "http://h/v1", Capabilities: []string{"chat", "telepathy"}}, "capabilities"},
		{Spec{ID: "u", BaseURL: "http://h/v1", Capabilities: []string{"rerank"}, RerankMethod: "magic"}, "rerank_method"},
		{Spec{ID: "u", BaseURL: "http://h/v1", Aliases: []string{"u"}}, "aliases"},
		{Spec{ID: "u", BaseURL: "http://h/v1", Limits: &Limits{MaxOutputTokens: -1}}, "limits"},
	} {
		err := tc.spec.Normalize()
		var se *apierr.Error
		if tc.field == "" && err != nil || tc.field != "" && (!errors.As(err, &se) || se.Param != tc.field) {
			t.Errorf("%+v: got %v, want field %q", tc.spec, err, tc.field)
		}
	}
	s := Spec{ID: "u", Replicas: []string{"http://a/v1", "http://b/v1"}}
	if err := s.Normalize(); err != nil || s.Backend != BackendUpstream || len(s.Capabilities) != 2 || len(s.URLs()) != 2 {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestPatchMergesAndClears(t *testing.T) {
	s := Spec{ID: "u", BaseURL: "http://a/v1", Aliases: []string{"fast"}, Limits: &Limits{MaxOutputTokens: 5}}
	if err := s.Patch([]byte(`{"aliases": null, "limits": {"max_input_tokens": 9}, "upstream_model": "m"}`)); err != nil {
		t.Fatal(err)
	}
	if s.Aliases != nil || s.Limits.MaxInputTokens != 9 || s.Limits.MaxOutputTokens != 5 || s.UpstreamModel != "m" || s.BaseURL != "http://a/v1" {
		t.Fatalf("%+v", s)
	}
	if err := s.Patch([]byte(`{"limits": {"max_output_tokens": null}}`)); err != nil || s.Limits.MaxOutputTokens != 0 || s.Limits.MaxInputTokens != 9 {
		t.Fatalf("nested clear: %+v %v", s.Limits, err)
	}
	var se *apierr.Error
	err := s.Patch([]byte(`{"id": "other"}`))
	if !errors.As(err, &se) || se.Param != "id" {
		t.Fatalf("id change: %v", err)
	}
	// To a client, a 400 naming the field.
	wantAPI(t, "id change", err, apierr.InvalidRequest, "id", "a model's id cannot be changed")
	if err := s.Patch([]byte(`{"context_length": "big"}`)); !errors.As(err, &se) || se.Param != "context_length" {
		t.Fatalf("type: %v", err)
	}
}

func TestCatalogSourcesAliasesAndConflicts(t *testing.T) {
	ctx := context.Background()
	configured := []Spec{{ID: "up", BaseURL: "http://127.0.0.1:1/v1", Aliases: []string{"fast"}, HealthCheckInterval: ptr(Duration(-1))}}
	c, _, specs := newCatalog(t, configured)
	list := c.List(ctx)
	if len(list) != 2 || list[0].ID != "tiny" || list[0].Source != SourceInstalled || list[1].Source != SourceConfig {
		t.Fatalf("list: %+v", list)
	}
	if r, err := c.Resolve(ctx, "fast"); err != nil || r.ID != "up" || r.Backend != BackendUpstream {
		t.Fatalf("alias: %+v %v", r, err)
	}
	_, err := c.Resolve(ctx, "nope")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	// The errors are the client's answers, naming the model.
	wantAPI(t, "unknown", err, apierr.ModelNotFound, "model", `the model "nope" does not exist; GET /v1/models lists the models`)
	// Configured models are read-only; installed ones gain a stored spec.
	_, err = c.Update(ctx, "up", []byte(`{"aliases": []}`))
	if !errors.Is(err, ErrReadOnly) {
		t.Fatalf("update configured: %v", err)
	}
	wantAPI(t, "update configured", err, apierr.Conflict, "", `model is defined in the configuration file: "up"; change it there and restart`)
	if err := c.Delete(ctx, "up"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("delete configured: %v", err)
	}
	m, err := c.Update(ctx, "tiny", []byte(`{"aliases": ["default"], "limits": {"max_output_tokens": 8}}`))
	if err != nil || m.Source != SourceAPI || m.Family == "" || m.Limits.MaxOutputTokens != 8 || m.Limits.MaxInputTokens == 0 {
		t.Fatalf("update installed: %+v %v", m, err)
	}
	if _, ok := specs.m["tiny"]; !ok {
		t.Fatal("not stored")
	}
	// Names must stay unique across ids and aliases.
	if _, err := c.Create(ctx, Spec{ID: "default", BaseURL: "http://h/v1"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("id = alias: %v", err)
	} else {
		wantAPI(t, "id = alias", err, apierr.Conflict, "", `a model or alias named "default" exists`)
	}
	if _, err := c.Create(ctx, Spec{ID: "x", BaseURL: "http://h/v1", Aliases: []string{"fast"}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("alias taken: %v", err)
	} else {
		wantAPI(t, "alias taken", err, apierr.Conflict, "", `alias "fast" belongs to "up"`)
	}
	if _, err := c.Create(ctx, Spec{ID: "x", BaseURL: "http://h/v1", Aliases: []string{"tiny"}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("alias = id: %v", err)
	}
	// Deprecation gets its date when set.
	m, err = c.Create(ctx, Spec{ID: "old", BaseURL: "http://h/v1", Deprecation: &Deprecation{Replacement: "up"}, HealthCheckInterval: ptr(Duration(-1))})
	if err != nil || m.Deprecation == nil || m.Deprecation.DeprecatedAt == nil {
		t.Fatalf("deprecated: %+v %v", m, err)
	}
	if err := c.Delete(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

// wantAPI checks the API error a client gets for err.
func wantAPI(t *testing.T, what string, err error, code apierr.Code, param, message string) {
	t.Helper()
	if e := apierr.From(err); e.Code != code || e.Param != param || e.Message != message {
		t.Errorf("%s: %s %q %q, want %s %q %q", what, e.Code, e.Param, e.Message, code, param, message)
	}
}

// An installed model's manifest aliases (the default chat model is pulled
// as "default") resolve to it, yield to any explicit alias without a
// conflict, and come back when the explicit one goes.
func TestPulledAliases(t *testing.T) {
	ctx := context.Background()
	// A configured upstream claiming "default" beats the installed model's
	// manifest alias, at start, without an error.
	configured := []Spec{{ID: "up", BaseURL: "http://127.0.0.1:1/v1", Aliases: []string{"default"}, HealthCheckInterval: ptr(Duration(-1))}}
	c, store, _ := newCatalog(t, configured)
	if _, err := store.SetAliases("tiny", []string{"default", "small", "up", "compare"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Resolve(ctx, "default"); err != nil || r.ID != "up" {
		t.Fatalf("default: %+v, %v; want the configured model", r, err)
	}
	if m, err := c.Get(ctx, "small"); err != nil || m.ID != "tiny" || !slices.Equal(m.Aliases, []string{"small"}) {
		t.Fatalf("small: %+v, %v; want tiny with the alias shown (and not the taken or invalid ones)", m, err)
	}

	c, store, _ = newCatalog(t, nil)
	if _, err := store.SetAliases("tiny", []string{"default"}); err != nil {
		t.Fatal(err)
	}
	c.Refresh(ctx)
	if r, err := c.Resolve(ctx, "default"); err != nil || r.ID != "tiny" || r.Backend != BackendLocal {
		t.Fatalf("default: %+v, %v", r, err)
	}
	if p := fileOf(t, c, "default"); p != store.Path("tiny") {
		t.Fatalf("model file by alias: %q", p)
	}
	// A PATCH of other settings keeps it (and does not store it).
	m, err := c.Update(ctx, "tiny", []byte(`{"limits": {"max_output_tokens": 8}}`))
	if err != nil || !slices.Equal(m.Aliases, []string{"default"}) {
		t.Fatalf("after PATCH: %+v, %v", m, err)
	}
	// A model created through the API may take the name over.
	m, err = c.Create(ctx, Spec{ID: "big", BaseURL: "http://127.0.0.1:1/v1", Aliases: []string{"default"}, HealthCheckInterval: ptr(Duration(-1))})
	if err != nil || !slices.Equal(m.Aliases, []string{"default"}) {
		t.Fatalf("create with the pulled alias: %+v, %v", m, err)
	}
	if r, _ := c.Resolve(ctx, "default"); r.ID != "big" {
		t.Fatalf("default resolves to %q, want big", r.ID)
	}
	if m, _ := c.Get(ctx, "tiny"); len(m.Aliases) != 0 {
		t.Fatalf("tiny still shows %v", m.Aliases)
	}
	// Removing it gives the name back.
	if err := c.Delete(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Resolve(ctx, "default"); err != nil || r.ID != "tiny" {
		t.Fatalf("after delete: %+v, %v", r, err)
	}
}

func TestConfiguredConflictsAreStartupErrors(t *testing.T) {
	store, _ := models.Open(t.TempDir())
	for _, specs := range [][]Spec{
		{{ID: "a", BaseURL: "http://h/v1"}, {ID: "a", BaseURL: "http://h/v1"}},
		{{ID: "a", BaseURL: "http://h/v1", Aliases: []string{"x"}}, {ID: "b", BaseURL: "http://h/v1", Aliases: []string{"x"}}},
		{{ID: "a", Path: "/nonexistent.gguf"}},
		{{ID: "a", BaseURL: "http://h/v1", APIKeyEnv: "SOVEREIGN_TEST_UNSET_VARIABLE"}},
	} {
		c, err := New(context.Background(), Config{Installed: store, Configured: specs, Refresh: -1, Getenv: func(string) string { return "" }})
		if err == nil {
			c.Close()
			t.Errorf("%+v: no error", specs)
		}
	}
}

func TestBadStoredSpecIsSkippedAndDeletable(t *testing.T) {
	ctx := context.Background()
	c, store, specs := newCatalog(t, nil)
	if _, err := c.Create(ctx, Spec{ID: "ghost"}); err == nil {
		t.Fatal("a local model that is not installed and has no path was accepted")
	}
	if _, err := c.Update(ctx, "tiny", []byte(`{"limits": {"max_output_tokens": 5}}`)); err != nil {
		t.Fatal(err)
	}
	// The GGUF goes away behind the catalog's back (sovereign models rm);
	// a good stored spec after it must still load.
	specs.PutModelSpec(ctx, StoredSpec{ID: "zz", Spec: []byte(`{"id":"zz","base_url":"http://127.0.0.1:1/v1","health_check_interval":"off"}`)})
	if err := store.Remove("tiny"); err != nil {
		t.Fatal(err)
	}
	c2, err := New(ctx, Config{Installed: store, Specs: specs, Refresh: -1})
	if err != nil {
		t.Fatalf("a bad stored spec stops the server: %v", err)
	}
	defer c2.Close()
	if _, err := c2.Get(ctx, "zz"); err != nil {
		t.Fatalf("the spec after the bad one: %v", err)
	}
	if _, err := c2.Get(ctx, "tiny"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("tiny: %v", err)
	}
	if err := c2.Delete(ctx, "tiny"); err != nil {
		t.Fatalf("deleting the skipped spec: %v", err)
	}
	if _, ok := specs.m["tiny"]; ok {
		t.Fatal("still stored")
	}
}

func TestLocalModelFromPath(t *testing.T) {
	src := filepath.Join(t.TempDir(), "other.gguf")
	if err := testmodel.Write(src, testmodel.Options{Seed: 2}); err != nil {
		t.Fatal(err)
	}
	c, _, _ := newCatalog(t, []Spec{{ID: "other", Path: src, ContextLength: 77}})
	m, err := c.Get(context.Background(), "other")
	if err != nil || m.Backend != BackendLocal || m.ContextLength != 77 || m.Parameters == 0 || len(m.Capabilities) == 0 {
		t.Fatalf("%+v %v", m, err)
	}
	if p := fileOf(t, c, "other"); p != src {
		t.Fatalf("file %q", p)
	}
	if !slices.Contains(m.Capabilities, "rerank") || m.RerankMethod != "query-likelihood" {
		t.Errorf("a local chat model reranks by query-likelihood: capabilities %v, rerank_method %q", m.Capabilities, m.RerankMethod)
	}
}

func TestRerankMethodFollowsCapabilities(t *testing.T) {
	src := filepath.Join(t.TempDir(), "other.gguf")
	if err := testmodel.Write(src, testmodel.Options{Seed: 2}); err != nil {
		t.Fatal(err)
	}
	c, _, _ := newCatalog(t, []Spec{
		{ID: "chat-only", Path: src, Capabilities: []string{"chat"}},
		{ID: "up", BaseURL: "http://127.0.0.1:1/v1", Capabilities: []string{"chat"}},
		{ID: "up-rr", BaseURL: "http://127.0.0.1:1/v1", Capabilities: []string{"rerank"}, RerankMethod: "cross-encoder"},
	})
	for id, want := range map[string]string{"chat-only": "", "up": "", "up-rr": "cross-encoder"} {
		m, err := c.Get(context.Background(), id)
		if err != nil || m.RerankMethod != want {
			t.Errorf("%s: rerank_method %q (err %v), want %q", id, m.RerankMethod, err, want)
		}
	}
}

func TestStatsWindow(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := NewStats()
	s.Now = func() time.Time { return now }
	for i, ms := range []int{10, 20, 30} {
		s.Record("m", Observation{Latency: time.Duration(ms) * time.Millisecond, TTFT: time.Duration(i+1) * time.Millisecond, CompletionTokens: 11, Decode: time.Second})
	}
	s.Record("m", Observation{Failed: true})
	f := s.Get("m")
	if f.Requests != 4 || f.Errors != 1 || f.LatencyP50Ms != 20 || f.TTFTP50Ms != 2 || f.DecodeTokensPerSecond != 10 {
		t.Fatalf("%+v", f)
	}
	now = now.Add(61 * time.Minute)
	if f := s.Get("m"); f.Requests != 0 {
		t.Fatalf("after an hour: %+v", f)
	}
	if !strings.Contains(Describe([]string{"a", "b"}), "a, b") {
		t.Fatal("describe")
	}
}

func ptr[T any](v T) *T { return &v }

// guardFunc is a Guard from functions.
type guardFunc struct {
	validate func(string) error
	dial     func(network, addr string) (net.Conn, error)
}

func (g guardFunc) ValidateURL(_ context.Context, u string) error { return g.validate(u) }
func (g guardFunc) DialContext(_ context.Context, network, addr string) (net.Conn, error) {
	return g.dial(network, addr)
}

// TestGuardHoldsUpstreams: a model created or patched through the API
// must name replicas the guard allows (the refusal names the field), and
// the replicas it allows are dialled through the guard.
func TestGuardHoldsUpstreams(t *testing.T) {
	c, _, _ := newCatalog(t, nil)
	var dialled []string
	c.cfg.Guard = guardFunc{
		validate: func(u string) error {
			if strings.Contains(u, "10.0.0.7") {
				return errors.New("10.0.0.7 is a private address")
			}
			return nil
		},
		dial: func(_, addr string) (net.Conn, error) {
			dialled = append(dialled, addr)
			return nil, errors.New("refused in the test")
		},
	}
	ctx := context.Background()
	var se *apierr.Error
	if _, err := c.Create(ctx, Spec{ID: "x", BaseURL: "http://public.example/v1", Replicas: []string{"http://10.0.0.7:8000/v1"}}); !errors.As(err, &se) || se.Param != "replicas" || !strings.Contains(se.Message, "upstream_allow") {
		t.Fatalf("an internal replica: %v", err)
	}
	if _, err := c.Create(ctx, Spec{ID: "y", BaseURL: "http://public.example/v1", HealthCheckInterval: ptr(Duration(-1))}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Update(ctx, "y", []byte(`{"base_url": "http://10.0.0.7:8000/v1"}`)); !errors.As(err, &se) || se.Param != "base_url" {
		t.Fatalf("patched to an internal replica: %v", err)
	}
	r, err := c.Resolve(ctx, "y")
	if err != nil || r.Target == nil {
		t.Fatal(r, err)
	}
	r.Target.Embed(ctx, inference.EmbeddingRequest{Model: "y", Input: []string{"a"}})
	if len(dialled) == 0 || dialled[0] != "public.example:80" {
		t.Fatalf("dialled %v, want the replica through the guard", dialled)
	}
}
