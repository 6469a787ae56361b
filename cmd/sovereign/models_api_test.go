package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeAPI stands in for a Sovereign server: each function field, when
// set, answers its route with a status and a JSON body; an unset one
// answers 404 with an error envelope, as the server does. It records every
// request.
type fakeAPI struct {
	list    func() (int, any)
	get     func(id string) (int, any)
	create  func(id string, body map[string]any) (int, any)
	patch   func(id string, body map[string]any) (int, any)
	delete  func(id string) (int, any)
	load    func(id string) (int, any)
	unload  func(id string) (int, any)
	compare func(body map[string]any) (int, any)

	mu   sync.Mutex
	reqs []fakeRequest
}

// fakeRequest is one request fakeAPI received.
type fakeRequest struct {
	Method, Path, Auth string
	Body               map[string]any
}

func (f *fakeAPI) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.reqs...)
}

// start serves f until the test ends and returns its URL.
func (f *fakeAPI) start(t *testing.T) string {
	mux := http.NewServeMux()
	route := func(pattern string, h func(r *http.Request, body map[string]any) (int, any, bool)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			var body map[string]any
			json.NewDecoder(r.Body).Decode(&body)
			f.mu.Lock()
			f.reqs = append(f.reqs, fakeRequest{r.Method, r.URL.Path, r.Header.Get("Authorization"), body})
			f.mu.Unlock()
			status, out, ok := h(r, body)
			if !ok {
				status, out = 404, envelope("no such model", "model_not_found")
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(out)
		})
	}
	id := func(r *http.Request) string { return r.PathValue("id") }
	route("GET /v1/models", func(r *http.Request, _ map[string]any) (int, any, bool) {
		if f.list == nil {
			return 0, nil, false
		}
		s, v := f.list()
		return s, v, true
	})
	route("GET /v1/models/{id}", func(r *http.Request, _ map[string]any) (int, any, bool) {
		if f.get == nil {
			return 0, nil, false
		}
		s, v := f.get(id(r))
		return s, v, true
	})
	route("POST /v1/models/{id}", func(r *http.Request, b map[string]any) (int, any, bool) {
		if f.create == nil {
			return 0, nil, false
		}
		s, v := f.create(id(r), b)
		return s, v, true
	})
	route("PATCH /v1/models/{id}", func(r *http.Request, b map[string]any) (int, any, bool) {
		if f.patch == nil {
			return 0, nil, false
		}
		s, v := f.patch(id(r), b)
		return s, v, true
	})
	route("DELETE /v1/models/{id}", func(r *http.Request, _ map[string]any) (int, any, bool) {
		if f.delete == nil {
			return 0, nil, false
		}
		s, v := f.delete(id(r))
		return s, v, true
	})
	route("POST /v1/models/{id}/load", func(r *http.Request, _ map[string]any) (int, any, bool) {
		if f.load == nil {
			return 0, nil, false
		}
		s, v := f.load(id(r))
		return s, v, true
	})
	route("POST /v1/models/{id}/unload", func(r *http.Request, _ map[string]any) (int, any, bool) {
		if f.unload == nil {
			return 0, nil, false
		}
		s, v := f.unload(id(r))
		return s, v, true
	})
	route("POST /v1/models/compare", func(r *http.Request, b map[string]any) (int, any, bool) {
		if f.compare == nil {
			return 0, nil, false
		}
		s, v := f.compare(b)
		return s, v, true
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func envelope(msg, code string) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": code}}
}

// runModels runs `sovereign models ARGS…` and returns its stdout.
func runModels(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := modelsCommand(context.Background(), args, &stdout, &stderr)
	return stdout.String(), err
}

// apiModelJSON is a model object as the server returns it.
func apiModelJSON(id string, extra map[string]any) map[string]any {
	m := map[string]any{
		"id": id, "object": "model", "created": 0, "owned_by": "sovereign", "backend": "local", "source": "installed",
		"family": "llama", "capabilities": []string{"chat", "completions"}, "context_length": 1024, "parameters": 0,
		"quantization": "", "size": 0, "tokenizer": id, "status": "available", "aliases": []string{},
		"limits": map[string]any{"max_input_tokens": 1024},
		"stats":  map[string]any{"window": "1h", "requests": 0, "errors": 0, "latency_p50_ms": 0, "ttft_p50_ms": 0, "decode_tokens_per_second": 0},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestModelsCatalogUsesEnvironmentAndShowsFigures(t *testing.T) {
	f := &fakeAPI{list: func() (int, any) {
		return 200, map[string]any{"object": "list", "data": []any{
			apiModelJSON("gemma", map[string]any{"status": "ready", "aliases": []string{"fast"},
				"stats": map[string]any{"window": "1h", "requests": 12, "errors": 1, "latency_p50_ms": 812.4, "ttft_p50_ms": 40, "decode_tokens_per_second": 61.25}}),
			apiModelJSON("old", map[string]any{"backend": "upstream", "source": "api", "status": "failed", "status_reason": "connection refused",
				"deprecation": map[string]any{"sunset": "2027-01-31T00:00:00Z", "replacement": "gemma"}}),
		}}
	}}
	t.Setenv("SOVEREIGN_URL", f.start(t))
	t.Setenv("SOVEREIGN_API_KEY", "sk-sov-env")
	out, err := runModels(t, "catalog")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ID", "TOK/S", "gemma", "fast", "812ms", "61.2", "old", "upstream", "failed",
		"old is deprecated (sunset 2027-01-31T00:00:00Z; use gemma)", "old failed: connection refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("catalog output lacks %q:\n%s", want, out)
		}
	}
	if r := f.requests(); len(r) != 1 || r[0].Auth != "Bearer sk-sov-env" {
		t.Fatalf("requests %+v, want one with the key from SOVEREIGN_API_KEY", r)
	}
}

func TestModelsFlagsOverrideEnvironment(t *testing.T) {
	f := &fakeAPI{get: func(id string) (int, any) { return 200, apiModelJSON(id, nil) }}
	url := f.start(t)
	t.Setenv("SOVEREIGN_URL", "http://127.0.0.1:1") // wrong on purpose
	t.Setenv("SOVEREIGN_API_KEY", "sk-sov-env")
	out, err := runModels(t, "show", "gemma", "--url", url, "--api-key", "sk-sov-flag")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "{\n  \"aliases\": [],") || !strings.Contains(out, `"id": "gemma"`) {
		t.Fatalf("show does not print indented JSON:\n%s", out)
	}
	if r := f.requests(); r[0].Auth != "Bearer sk-sov-flag" || r[0].Path != "/v1/models/gemma" {
		t.Fatalf("request %+v", r[0])
	}
	// The same flags before the subcommand.
	if _, err := runModels(t, "--url", url, "--api-key", "sk-sov-top", "show", "gemma"); err != nil {
		t.Fatal(err)
	}
	if r := f.requests(); r[1].Auth != "Bearer sk-sov-top" {
		t.Fatalf("request %+v", r[1])
	}
}

func TestModelsAddUpstreamSendsSpec(t *testing.T) {
	f := &fakeAPI{create: func(id string, body map[string]any) (int, any) {
		return 201, apiModelJSON(id, map[string]any{"backend": "upstream", "source": "api", "aliases": body["aliases"],
			"upstream": map[string]any{"model": body["upstream_model"], "api_key_set": true, "replicas": []any{
				map[string]any{"url": body["base_url"], "healthy": false, "breaker": "closed", "inflight": 0},
				map[string]any{"url": "http://b/v1", "healthy": false, "breaker": "closed", "inflight": 0}}}})
	}}
	url := f.start(t)
	t.Setenv("VLLM_TOKEN", "secret-token")
	out, err := runModels(t, "add", "llama", "--url", url, "--base-url", "http://a/v1", "--replica", "http://b/v1", "--replica", "http://c/v1",
		"--upstream-model", "meta/llama", "--api-key-env", "VLLM_TOKEN", "--capabilities", "chat, completions,rerank",
		"--alias", "default", "--alias", "big", "--context-length", "8192")
	if err != nil {
		t.Fatal(err)
	}
	r := f.requests()[0]
	if r.Method != "POST" || r.Path != "/v1/models/llama" {
		t.Fatalf("request %s %s", r.Method, r.Path)
	}
	want := `{"aliases":["default","big"],"api_key":"secret-token","base_url":"http://a/v1","capabilities":["chat","completions","rerank"],"context_length":8192,"replicas":["http://b/v1","http://c/v1"],"upstream_model":"meta/llama"}`
	if got, _ := json.Marshal(r.Body); string(got) != want {
		t.Fatalf("body\n%s\nwant\n%s", got, want)
	}
	for _, s := range []string{"Model llama added (upstream \"meta/llama\" on 2 replica(s); status available)", "Aliases: default, big",
		"curl -s " + url + "/v1/chat/completions", `"model":"llama"`, "sovereign models show llama"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "secret-token") {
		t.Fatal("the API key is printed")
	}
}

func TestModelsAddRefusesBadCombinations(t *testing.T) {
	f := &fakeAPI{}
	url := f.start(t)
	for name, args := range map[string][]string{
		"unset key variable": {"add", "x", "--base-url", "http://a/v1", "--api-key-env", "SOVEREIGN_TEST_UNSET_VARIABLE"},
		"path and base URL":  {"add", "x", "--base-url", "http://a/v1", "--path", "m.gguf"},
		"neither":            {"add", "x"},
		"no id":              {"add", "--base-url", "http://a/v1"},
	} {
		if _, err := runModels(t, append(args, "--url", url)...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if r := f.requests(); len(r) != 0 {
		t.Fatalf("invalid invocations reached the server: %+v", r)
	}
}

func TestModelsAddLocalPathIsAbsolute(t *testing.T) {
	f := &fakeAPI{create: func(id string, body map[string]any) (int, any) {
		return 201, apiModelJSON(id, map[string]any{"source": "api", "capabilities": []string{"embeddings"}})
	}}
	url := f.start(t)
	out, err := runModels(t, "add", "emb", "--path", "models/emb.gguf", "--url", url)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := f.requests()[0].Body["path"].(string)
	if !filepath.IsAbs(p) || !strings.HasSuffix(p, filepath.Join("models", "emb.gguf")) {
		t.Fatalf("path sent: %q", p)
	}
	if !strings.Contains(out, "/v1/embeddings") {
		t.Fatalf("an embedding model's hint is not an embeddings request:\n%s", out)
	}
}

func TestModelsErrorEnvelopeIsShownAndFails(t *testing.T) {
	f := &fakeAPI{create: func(id string, _ map[string]any) (int, any) {
		return 409, envelope("a model or alias named \""+id+"\" exists", "conflict")
	}}
	url := f.start(t)
	_, err := runModels(t, "add", "dup", "--base-url", "http://a/v1", "--url", url)
	if err == nil {
		t.Fatal("a 409 is not an error")
	}
	if msg := err.Error(); !strings.Contains(msg, "409 conflict") || !strings.Contains(msg, `a model or alias named "dup" exists`) {
		t.Fatalf("error %q does not carry the server's envelope", msg)
	}
	// A route the fake leaves unset answers 404 model_not_found.
	if _, err := runModels(t, "show", "nope", "--url", url); err == nil || !strings.Contains(err.Error(), "404 model_not_found: no such model") {
		t.Fatalf("404: %v", err)
	}
}

func TestModelsUnauthorizedAndUnreachableExplainWhatToDo(t *testing.T) {
	f := &fakeAPI{list: func() (int, any) { return 401, envelope("Incorrect API key provided.", "invalid_api_key") }}
	url := f.start(t)
	_, err := runModels(t, "catalog", "--url", url, "--api-key", "sk-sov-wrong")
	if err == nil || !strings.Contains(err.Error(), "Incorrect API key provided.") || !strings.Contains(err.Error(), "SOVEREIGN_API_KEY") {
		t.Fatalf("401: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	_, err = runModels(t, "catalog", "--url", closed)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Sovereign server at "+closed) || !strings.Contains(err.Error(), "SOVEREIGN_URL") {
		t.Fatalf("unreachable server: %v", err)
	}
}

func TestModelsSetKeepsTheOtherLimitAndDeprecates(t *testing.T) {
	var patched []map[string]any
	f := &fakeAPI{
		get: func(id string) (int, any) {
			return 200, apiModelJSON(id, map[string]any{"limits": map[string]any{"max_input_tokens": 100, "max_output_tokens": 5}})
		},
		patch: func(id string, body map[string]any) (int, any) {
			patched = append(patched, body)
			extra := map[string]any{"source": "api"}
			if d, ok := body["deprecation"].(map[string]any); ok {
				extra["deprecation"] = d
			}
			return 200, apiModelJSON(id, extra)
		},
	}
	url := f.start(t)
	if _, err := runModels(t, "set", "tiny", "--max-output-tokens", "7", "--alias", "small", "--url", url); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(patched[0]); string(got) != `{"aliases":["small"],"limits":{"max_input_tokens":100,"max_output_tokens":7}}` {
		t.Fatalf("patch %s", got)
	}
	if _, err := runModels(t, "set", "tiny", "--max-input-tokens", "0", "--max-output-tokens", "0", "--url", url); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(patched[1]); string(got) != `{"limits":null}` {
		t.Fatalf("patch %s", got)
	}
	out, err := runModels(t, "set", "tiny", "--deprecate", "--sunset", "2027-01-31", "--replacement", "gemma", "--url", url)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(patched[2]); string(got) != `{"deprecation":{"replacement":"gemma","sunset":"2027-01-31T00:00:00Z"}}` {
		t.Fatalf("patch %s", got)
	}
	if !strings.Contains(out, "deprecated (sunset 2027-01-31T00:00:00Z; use gemma)") || !strings.Contains(out, "410 model_retired") {
		t.Fatalf("output:\n%s", out)
	}
	if _, err := runModels(t, "set", "tiny", "--undeprecate", "--no-aliases", "--url", url); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(patched[3]); string(got) != `{"aliases":null,"deprecation":null}` {
		t.Fatalf("patch %s", got)
	}
	for name, args := range map[string][]string{
		"nothing":     {"set", "tiny"},
		"bad date":    {"set", "tiny", "--sunset", "next year"},
		"contradicts": {"set", "tiny", "--deprecate", "--undeprecate"},
	} {
		if _, err := runModels(t, append(args, "--url", url)...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if len(patched) != 4 {
		t.Fatalf("%d patches sent, want 4", len(patched))
	}
}

func TestModelsRemoveLoadUnload(t *testing.T) {
	f := &fakeAPI{
		get: func(id string) (int, any) {
			if id == "fast" {
				return 200, apiModelJSON("gemma", nil)
			}
			return 200, apiModelJSON(id, nil)
		},
		delete: func(id string) (int, any) { return 200, map[string]any{"id": id, "object": "model", "deleted": true} },
		load: func(id string) (int, any) {
			if id == "down" {
				return 200, apiModelJSON(id, map[string]any{"status": "failed", "status_reason": "http://a/v1: connection refused"})
			}
			return 200, apiModelJSON(id, map[string]any{"status": "ready"})
		},
		unload: func(id string) (int, any) { return 200, apiModelJSON(id, nil) },
	}
	url := f.start(t)
	out, err := runModels(t, "remove", "gemma", "--url", url)
	if err != nil || !strings.Contains(out, "Removed gemma and its files") {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	if _, err := runModels(t, "remove", "fast", "--url", url); err == nil || !strings.Contains(err.Error(), "alias of gemma") {
		t.Fatalf("removing an alias: %v", err)
	}
	deletes := 0
	for _, r := range f.requests() {
		if r.Method == "DELETE" {
			deletes++
		}
	}
	if deletes != 1 {
		t.Fatalf("%d DELETEs, want 1 (none for the alias)", deletes)
	}
	if out, err := runModels(t, "load", "gemma", "--url", url); err != nil || !strings.Contains(out, "gemma is ready") {
		t.Fatalf("load: %v\n%s", err, out)
	}
	if _, err := runModels(t, "load", "down", "--url", url); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("a failed load: %v", err)
	}
	if out, err := runModels(t, "unload", "gemma", "--url", url); err != nil || !strings.Contains(out, "gemma unloaded") {
		t.Fatalf("unload: %v\n%s", err, out)
	}
}

func TestModelsComparePrintsTableAndOutputs(t *testing.T) {
	var sent map[string]any
	f := &fakeAPI{compare: func(body map[string]any) (int, any) {
		sent = body
		return 200, map[string]any{"object": "model.comparison", "created": 1, "results": []any{
			map[string]any{"model": "gemma", "status": "succeeded", "output": map[string]any{"content": " Paris.", "finish_reason": "stop"},
				"usage":      map[string]any{"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8, "prompt_tokens_details": map[string]any{"cached_tokens": 0}},
				"latency_ms": 96.4, "ttft_ms": 41.0, "tokens_per_second": 57.3},
			map[string]any{"model": "llama", "status": "failed", "latency_ms": 2.0, "ttft_ms": nil, "tokens_per_second": nil,
				"error": envelope("no upstream replica is available", "upstream_unavailable")},
		}}
	}}
	url := f.start(t)
	out, err := runModels(t, "compare", "--model", "gemma", "--model", "fast", "--max-tokens", "16", "What is the capital", "of France?", "--url", url)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 models failed") {
		t.Fatalf("a comparison with a failed model: %v", err)
	}
	if got, _ := json.Marshal(sent); string(got) != `{"max_tokens":16,"messages":[{"content":"What is the capital of France?","role":"user"}],"models":["gemma","fast"]}` {
		t.Fatalf("body %s", got)
	}
	for _, s := range []string{"MODEL", "LATENCY", "TTFT", "gemma", "succeeded", "96ms", "41ms", "57.3", "llama", "failed",
		"--- gemma (finish: stop) ---\nParis.", "--- llama (failed: upstream_unavailable) ---\nno upstream replica is available"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if _, err := runModels(t, "compare", "--model", "gemma", "hi", "--url", url); err == nil {
		t.Fatal("one model: no error")
	}
	if _, err := runModels(t, "compare", "--model", "a", "--model", "b", "--url", url); err == nil {
		t.Fatal("no prompt: no error")
	}
}

func TestModelsListStaysLocal(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SOVEREIGN_URL", "http://127.0.0.1:1") // must not be used
	out, err := runModels(t, "list", "--models-dir", dir)
	if err != nil || !strings.Contains(out, "no models in "+dir) {
		t.Fatalf("list: %v\n%s", err, out)
	}
}
