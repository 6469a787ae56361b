package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/metrics"
)

// Function-field fakes.

type fakeAuth struct {
	authenticate func(ctx context.Context, secret string) (auth.Key, error)
}

func (f fakeAuth) Authenticate(ctx context.Context, secret string) (auth.Key, error) {
	return f.authenticate(ctx, secret)
}

type fakeBackend struct {
	complete func(ctx context.Context, req inference.CompletionRequest) (inference.Stream, error)
}

func (f fakeBackend) Complete(ctx context.Context, req inference.CompletionRequest) (inference.Stream, error) {
	return f.complete(ctx, req)
}
func (fakeBackend) Embed(context.Context, inference.EmbeddingRequest) (inference.EmbeddingResponse, error) {
	return inference.EmbeddingResponse{Embeddings: [][]float32{{0.6, 0.8}}, PromptTokens: 1}, nil
}
func (fakeBackend) Tokenize(context.Context, inference.TokenizeRequest) (inference.TokenizeResponse, error) {
	return inference.TokenizeResponse{Tokens: []int32{1, 2}}, nil
}
func (fakeBackend) Detokenize(context.Context, inference.DetokenizeRequest) (inference.DetokenizeResponse, error) {
	return inference.DetokenizeResponse{Content: "hi"}, nil
}

type sliceStream struct{ evs []inference.Event }

func (s *sliceStream) Recv() (inference.Event, error) {
	if len(s.evs) == 0 {
		return inference.Event{}, io.EOF
	}
	ev := s.evs[0]
	s.evs = s.evs[1:]
	return ev, nil
}
func (s *sliceStream) Close() error { return nil }

// fakeCatalog knows a chat model and an embedding model; create records
// what it is given.
type fakeCatalog struct {
	create func(ctx context.Context, sp catalog.Spec) (catalog.Model, error)
	// backend serves every model.
	backend inference.Backend
}

var fakeModels = []catalog.Model{
	{ID: "chat", Object: "model", Backend: "local", Capabilities: []string{"chat", "completions"}, Status: "available"},
	{ID: "emb", Object: "model", Backend: "local", Capabilities: []string{"embeddings"}, Status: "available"},
}

func (fakeCatalog) List(context.Context) []catalog.Model { return fakeModels }
func (fakeCatalog) Get(_ context.Context, id string) (catalog.Model, error) {
	for _, m := range fakeModels {
		if m.ID == id {
			return m, nil
		}
	}
	return catalog.Model{}, catalog.ErrNotFound
}
func (c fakeCatalog) Resolve(ctx context.Context, name string) (catalog.Resolved, error) {
	m, err := c.Get(ctx, name)
	return catalog.Resolved{ID: m.ID, Backend: m.Backend, Capabilities: m.Capabilities, Target: c.backend}, err
}
func (c fakeCatalog) Create(ctx context.Context, sp catalog.Spec) (catalog.Model, error) {
	if c.create == nil {
		return catalog.Model{}, catalog.ErrConflict
	}
	return c.create(ctx, sp)
}
func (fakeCatalog) Update(context.Context, string, []byte) (catalog.Model, error) {
	return catalog.Model{}, catalog.ErrReadOnly
}
func (fakeCatalog) Delete(context.Context, string) error { return catalog.ErrNotFound }
func (c fakeCatalog) Load(ctx context.Context, id string) (catalog.Model, error) {
	return c.Get(ctx, id)
}
func (c fakeCatalog) Unload(ctx context.Context, id string) (catalog.Model, error) {
	return c.Get(ctx, id)
}
func (fakeCatalog) Record(string, catalog.Observation) {}

// keys the fake authenticator knows: each secret maps to a key or an error.
var (
	past    = time.Now().Add(-time.Hour)
	fakeKey = map[string]struct {
		key auth.Key
		err error
	}{
		"sk-sov-admin":     {key: auth.Key{ID: "key_admin", TeamID: "team_a", Scopes: []auth.Scope{auth.ScopeAdmin}}},
		"sk-sov-inference": {key: auth.Key{ID: "key_inf", TeamID: "team_a", Scopes: []auth.Scope{auth.ScopeInference}}},
		"sk-sov-models":    {key: auth.Key{ID: "key_models", TeamID: "team_a", Scopes: []auth.Scope{auth.ScopeModelsRead}}},
		"sk-sov-revoked":   {err: auth.ErrRevokedKey},
		"sk-sov-expired":   {err: auth.ErrExpiredKey},
	}
)

func newTestServer(t *testing.T) (*httptest.Server, *metrics.Metrics) {
	m := metrics.New(nil)
	s := &Server{
		Models: fakeCatalog{backend: fakeBackend{complete: func(ctx context.Context, req inference.CompletionRequest) (inference.Stream, error) {
			return &sliceStream{evs: []inference.Event{{Text: "Hel"}, {Text: "lo"}, {Done: true, FinishReason: "stop", Usage: &inference.Usage{PromptTokens: 3, CompletionTokens: 2}}}}, nil
		}}},
		Auth: fakeAuth{authenticate: func(ctx context.Context, secret string) (auth.Key, error) {
			if k, ok := fakeKey[secret]; ok {
				return k.key, k.err
			}
			return auth.Key{}, auth.ErrInvalidKey
		}},
		Metrics: m,
		MaxBody: 1 << 16,
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, m
}

func do(t *testing.T, srv *httptest.Server, method, path, key, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &out)
	return resp, out
}

func errCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// TestAuthMatrix checks every authenticated route against every kind of bad
// credential, and a valid key lacking the route's scope.
func TestAuthMatrix(t *testing.T) {
	srv, _ := newTestServer(t)
	s := &Server{}
	for _, rt := range s.routes() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		path = strings.NewReplacer("/v1/models/{id}", "/v1/models/chat", "{id}", "key_x").Replace(path)
		cases := []struct {
			name, key, code string
			status          int
		}{
			{"no key", "", "missing_api_key", 401},
			{"bad key", "sk-sov-nope", "invalid_api_key", 401},
			{"revoked", "sk-sov-revoked", "invalid_api_key", 401},
			{"expired", "sk-sov-expired", "invalid_api_key", 401},
		}
		// A key without the scope: inference keys lack everything else,
		// models:read keys lack inference.
		switch {
		case rt.scope == anyKey:
			// Every valid key may call it.
		case rt.scope == auth.ScopeInference:
			cases = append(cases, struct {
				name, key, code string
				status          int
			}{"no scope", "sk-sov-models", "permission_denied", 403})
		default:
			cases = append(cases, struct {
				name, key, code string
				status          int
			}{"no scope", "sk-sov-inference", "permission_denied", 403})
		}
		for _, c := range cases {
			resp, body := do(t, srv, method, path, c.key, `{}`)
			if resp.StatusCode != c.status || errCode(body) != c.code {
				t.Errorf("%s %s with %s: got %d %q, want %d %q", method, path, c.name, resp.StatusCode, errCode(body), c.status, c.code)
			}
		}
	}
}

func TestPublicRoutesAndRequestID(t *testing.T) {
	srv, _ := newTestServer(t)
	resp, _ := do(t, srv, "GET", "/healthz", "", "")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("X-Request-Id"), "req_") {
		t.Fatalf("healthz: %d, request id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}
	req, _ := http.NewRequest("GET", srv.URL+"/readyz", nil)
	req.Header.Set("X-Request-Id", "trace-123")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 200 || r2.Header.Get("X-Request-Id") != "trace-123" {
		t.Fatalf("readyz: %d, id %q (incoming id should be kept)", r2.StatusCode, r2.Header.Get("X-Request-Id"))
	}
	resp, body := do(t, srv, "GET", "/v2/models", "sk-sov-admin", "")
	if resp.StatusCode != 404 || errCode(body) != "unsupported_api_version" {
		t.Fatalf("/v2: %d %v", resp.StatusCode, body)
	}
	resp, body = do(t, srv, "GET", "/v1/nothing", "sk-sov-admin", "")
	if resp.StatusCode != 404 || errCode(body) != "not_found" {
		t.Fatalf("unknown route: %d %v", resp.StatusCode, body)
	}
	resp, body = do(t, srv, "DELETE", "/v1/chat/completions", "sk-sov-admin", "")
	if resp.StatusCode != 405 || errCode(body) != "method_not_allowed" || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("wrong method: %d %v allow %q", resp.StatusCode, body, resp.Header.Get("Allow"))
	}
}

func TestBadInputAndMetrics(t *testing.T) {
	srv, _ := newTestServer(t)
	k := "sk-sov-inference"
	cases := []struct {
		body, code, param string
		status            int
	}{
		{`{"model":"chat","messages":[`, "invalid_json", "", 400},
		{`{"model":"chat","messages":[{"role":"user","content":1}]}`, "invalid_request_error", "messages.content", 400},
		{`{"model":"nope","messages":[{"role":"user","content":"x"}]}`, "model_not_found", "model", 404},
		{`{"model":"emb","messages":[{"role":"user","content":"x"}]}`, "invalid_request_error", "model", 400},
		{`{"model":"chat","messages":[{"role":"user","content":"` + strings.Repeat("x", 1<<17) + `"}]}`, "request_too_large", "", 413},
	}
	for _, c := range cases {
		resp, body := do(t, srv, "POST", "/v1/chat/completions", k, c.body)
		e, _ := body["error"].(map[string]any)
		param, _ := e["param"].(string)
		if resp.StatusCode != c.status || errCode(body) != c.code || param != c.param {
			t.Errorf("%.60s: got %d %q param %q, want %d %q %q", c.body, resp.StatusCode, errCode(body), param, c.status, c.code, c.param)
		}
	}
	resp, body := do(t, srv, "POST", "/v1/chat/completions", k, `{"model":"chat","messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 200 || body["object"] != "chat.completion" {
		t.Fatalf("chat: %d %v", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
	mr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(mr.Body)
	mr.Body.Close()
	for _, want := range []string{
		`sovereign_tokens_total{kind="completion",model="chat"} 2`,
		`sovereign_http_requests_total{code="200",method="POST",route="POST /v1/chat/completions"} 1`,
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestPanicBecomes500Envelope(t *testing.T) {
	s := &Server{
		Models: fakeCatalog{backend: fakeBackend{complete: func(context.Context, inference.CompletionRequest) (inference.Stream, error) { panic("boom") }}},
		Auth:   fakeAuth{authenticate: func(context.Context, string) (auth.Key, error) { return fakeKey["sk-sov-admin"].key, nil }},
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, body := do(t, srv, "POST", "/v1/chat/completions", "sk-sov-admin", `{"model":"chat","messages":[{"role":"user","content":"x"}]}`)
	if resp.StatusCode != 500 || errCode(body) != "internal_error" {
		t.Fatalf("panic: %d %v", resp.StatusCode, body)
	}
}

// failingStream yields one event, then fails.
type failingStream struct{ sent bool }

func (f *failingStream) Recv() (inference.Event, error) {
	if !f.sent {
		f.sent = true
		return inference.Event{Text: "partial"}, nil
	}
	return inference.Event{}, &inference.UpstreamError{Kind: inference.UpstreamTimeout, Message: "the upstream stalled"}
}
func (f *failingStream) Close() error { return nil }

// TestStreamFailureIsLoggedAsFailed checks that a stream that breaks after
// its 200 ends with an in-band error event and that the access log says it
// failed.
func TestStreamFailureIsLoggedAsFailed(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{
		Models: fakeCatalog{backend: fakeBackend{complete: func(context.Context, inference.CompletionRequest) (inference.Stream, error) {
			return &failingStream{}, nil
		}}},
		Auth: fakeAuth{authenticate: func(context.Context, string) (auth.Key, error) {
			return auth.Key{ID: "key_inf", Scopes: []auth.Scope{auth.ScopeInference}}, nil
		}},
		Ops: &Ops{Log: slog.New(slog.NewJSONHandler(&logs, nil))},
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, _ := do(t, srv, "POST", "/v1/chat/completions", "sk-sov-x", `{"model":"chat","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" {
			line = m
		}
	}
	if line == nil || line["outcome"] != "failed_after_start" || !strings.Contains(fmt.Sprint(line["error"]), "stalled") || line["level"] != "WARN" {
		t.Fatalf("access log: %s", logs.String())
	}
}

// rerankBackend answers rerank with unsorted results.
type rerankBackend struct{ fakeBackend }

func (rerankBackend) Rerank(_ context.Context, req inference.RerankRequest) (inference.RerankResponse, error) {
	return inference.RerankResponse{Results: []inference.RerankResult{{Index: 0, RelevanceScore: 0.1}, {Index: 2, RelevanceScore: 0.9}, {Index: 1, RelevanceScore: 0.5}}, PromptTokens: 7}, nil
}

func TestRerankSortsAndCuts(t *testing.T) {
	fakeModels = append(fakeModels, catalog.Model{ID: "rr", Backend: "upstream", Capabilities: []string{"rerank"}})
	defer func() { fakeModels = fakeModels[:len(fakeModels)-1] }()
	s := &Server{Models: fakeCatalog{backend: rerankBackend{}}, Auth: fakeAuth{authenticate: func(context.Context, string) (auth.Key, error) {
		return auth.Key{ID: "k", Scopes: []auth.Scope{auth.ScopeInference}}, nil
	}}}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, body := do(t, srv, "POST", "/v1/rerank", "sk-sov-x", `{"model":"rr","query":"q","documents":["a",{"text":"b"},"c"],"top_n":2}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	res := body["results"].([]any)
	if len(res) != 2 || res[0].(map[string]any)["index"] != 2.0 || res[1].(map[string]any)["index"] != 1.0 ||
		res[0].(map[string]any)["document"].(map[string]any)["text"] != "c" || body["usage"].(map[string]any)["prompt_tokens"] != 7.0 {
		t.Fatalf("%v", body)
	}
	// A model without the capability, and a bad document, are 400s.
	if resp, _ := do(t, srv, "POST", "/v1/rerank", "sk-sov-x", `{"model":"chat","query":"q","documents":["a"]}`); resp.StatusCode != 400 {
		t.Fatalf("no capability: %d", resp.StatusCode)
	}
	if resp, body := do(t, srv, "POST", "/v1/rerank", "sk-sov-x", `{"model":"rr","query":"q","documents":[3]}`); resp.StatusCode != 400 || errCode(body) != "invalid_request_error" {
		t.Fatalf("bad document: %d %v", resp.StatusCode, body)
	}
}
