package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/upstream/upstreamtest"
)

func dur(d time.Duration) catalog.Duration { return catalog.Duration(d) }

// upstreamSpec configures an upstream model over the given base URLs, with
// health checks off (the tests drive them) and a short stall timeout.
func upstreamSpec(id string, urls ...string) catalog.Spec {
	off := dur(-1)
	return catalog.Spec{ID: id, Backend: catalog.BackendUpstream, BaseURL: urls[0], Replicas: urls[1:], UpstreamModel: "mock",
		Capabilities: []string{"chat", "completions", "embeddings", "rerank"}, HealthCheckInterval: &off,
		Timeouts: &catalog.Timeouts{Idle: dur(500 * time.Millisecond), FirstByte: dur(30 * time.Second)}}
}

// sseEvents reads an SSE body: the JSON data lines, up to [DONE].
func sseEvents(t *testing.T, body io.Reader) (chunks []map[string]any, done bool) {
	t.Helper()
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return chunks, true
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("SSE data is not JSON: %q", data)
		}
		chunks = append(chunks, m)
	}
	return chunks, false
}

// streamText joins the content deltas of chat chunks and returns the
// in-band error code, if any.
func streamText(chunks []map[string]any) (text, errCode string) {
	for _, c := range chunks {
		if e, ok := c["error"].(map[string]any); ok {
			code, _ := e["code"].(string)
			return text, code
		}
		choices, _ := c["choices"].([]any)
		for _, ch := range choices {
			delta, _ := ch.(map[string]any)["delta"].(map[string]any)
			s, _ := delta["content"].(string)
			text += s
		}
	}
	return text, ""
}

// chatRaw sends a chat request and returns the response unread.
func (e *env) chatRaw(model, content string, extra map[string]any) *http.Response {
	e.t.Helper()
	body := map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": content}}, "temperature": 0, "max_tokens": 16}
	for k, v := range extra {
		body[k] = v
	}
	return e.post(context.Background(), "/v1/chat/completions", body)
}

func (e *env) modelInfo(id string) catalog.Model {
	e.t.Helper()
	resp := e.get("/v1/models/" + id)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		e.t.Fatalf("GET /v1/models/%s: %d", id, resp.StatusCode)
	}
	var m catalog.Model
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

func TestUpstreamReplicaDownTrafficGoesToOthers(t *testing.T) {
	a, b := upstreamtest.New(t, "a"), upstreamtest.New(t, "b")
	dead := upstreamtest.RefusedURL(t)
	e := newEnvSpecs(t, tinyStore(t), engine.Config{}, []catalog.Spec{upstreamSpec("remote", dead, a.BaseURL(), b.BaseURL())})
	for i := 0; i < 12; i++ {
		var out chatResponse
		var resp *http.Response
		if i%2 == 1 {
			resp = e.chatRaw("remote", "hi", map[string]any{"stream": true})
		} else {
			out, resp = e.chat("remote", "hi", nil)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %+v", i, resp.StatusCode, readError(t, resp))
		}
		if i%2 == 1 {
			chunks, done := sseEvents(t, resp.Body)
			resp.Body.Close()
			text, code := streamText(chunks)
			if !done || code != "" || !strings.HasPrefix(text, "reply from ") {
				t.Fatalf("stream %d: %q %q done=%v", i, text, code, done)
			}
		} else if !strings.HasPrefix(out.Choices[0].Message.Content, "reply from ") || out.Usage.CompletionTokens != 4 {
			t.Fatalf("request %d: %+v", i, out)
		}
	}
	if a.Requests.Load() == 0 || b.Requests.Load() == 0 {
		t.Fatalf("traffic not spread: a=%d b=%d", a.Requests.Load(), b.Requests.Load())
	}
	m := e.modelInfo("remote")
	if m.Backend != "upstream" || m.Status != "ready" || m.Upstream == nil || len(m.Upstream.Replicas) != 3 {
		t.Fatalf("model: %+v", m)
	}
	if r := m.Upstream.Replicas[0]; r.Healthy || r.Breaker != "open" || r.LastError == "" {
		t.Fatalf("dead replica: %+v", r)
	}
	// A request is counted when its handler returns, which can be just
	// after the client has read the last byte.
	for deadline := time.Now().Add(2 * time.Second); m.Stats.Requests < 12 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		m = e.modelInfo("remote")
	}
	if m.Stats.Requests != 12 || m.Stats.Errors != 0 || m.Stats.LatencyP50Ms <= 0 {
		t.Fatalf("stats: %+v", m.Stats)
	}
}

func TestUpstreamAllDownIs503Quickly(t *testing.T) {
	e := newEnvSpecs(t, tinyStore(t), engine.Config{}, []catalog.Spec{upstreamSpec("remote", upstreamtest.RefusedURL(t), upstreamtest.RefusedURL(t))})
	for i := 0; i < 2; i++ {
		start := time.Now()
		_, resp := e.chat("remote", "hi", nil)
		took := time.Since(start)
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if env := readError(t, resp); env.Error.Code != "upstream_unavailable" || env.Error.Type != "server_error" {
			t.Fatalf("envelope: %+v", env)
		}
		// Refused connections fail at once; nothing waits for a timeout
		// (the first-byte timeout is 30 s).
		if took > 5*time.Second {
			t.Fatalf("took %s", took)
		}
	}
	if m := e.modelInfo("remote"); m.Status != "failed" || m.StatusReason == "" || m.Stats.Errors != 2 {
		t.Fatalf("model: %+v", m)
	}
}

func TestUpstreamBrokenStreamsFailCleanlyAndAreRecorded(t *testing.T) {
	for _, tc := range []struct {
		mode upstreamtest.Mode
		code string
	}{{upstreamtest.Malformed, "upstream_error"}, {upstreamtest.Stall, "upstream_timeout"}} {
		a := upstreamtest.New(t, "a")
		a.SetMode(tc.mode)
		e := newEnvSpecs(t, tinyStore(t), engine.Config{}, []catalog.Spec{upstreamSpec("remote", a.BaseURL())})
		resp := e.chatRaw("remote", "hi", map[string]any{"stream": true})
		if resp.StatusCode != 200 {
			t.Fatalf("%v: status %d", tc.mode, resp.StatusCode)
		}
		chunks, done := sseEvents(t, resp.Body)
		resp.Body.Close()
		text, code := streamText(chunks)
		if done || code != tc.code || text != "reply" {
			t.Fatalf("mode %v: text %q, code %q, done %v", tc.mode, text, code, done)
		}
		if m := e.modelInfo("remote"); m.Stats.Requests != 1 || m.Stats.Errors != 1 {
			t.Fatalf("mode %v: stats %+v", tc.mode, m.Stats)
		}
		// Non-streamed, the same failure is a plain error response.
		_, resp = e.chat("remote", "hi", nil)
		if tc.mode == upstreamtest.Malformed {
			// The mock only breaks streams; a whole answer is fine.
			if resp.StatusCode != 200 {
				t.Fatalf("non-streamed: %d", resp.StatusCode)
			}
			resp.Body.Close()
		}
		metrics := e.get("/metrics")
		b, _ := io.ReadAll(metrics.Body)
		metrics.Body.Close()
		if metrics.StatusCode == 200 && !strings.Contains(string(b), `sovereign_model_requests_total{model="remote",outcome="error"} 1`) {
			t.Fatalf("metrics lack the failure:\n%s", grepLines(string(b), "sovereign_model_requests_total"))
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestUpstream429PassesRetryAfter(t *testing.T) {
	a := upstreamtest.New(t, "a")
	a.SetMode(upstreamtest.RateLimited)
	e := newEnvSpecs(t, tinyStore(t), engine.Config{}, []catalog.Spec{upstreamSpec("remote", a.BaseURL())})
	for _, stream := range []bool{false, true} {
		resp := e.chatRaw("remote", "hi", map[string]any{"stream": stream})
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
			t.Fatalf("stream=%v: %d Retry-After %q", stream, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if env := readError(t, resp); env.Error.Code != "rate_limit_exceeded" || !strings.Contains(env.Error.Message, "Rate limit reached") {
			t.Fatalf("envelope: %+v", env)
		}
	}
}

// TestSovereignChainsToSovereign puts one server in front of another: the
// front's upstream model is the back's local model.
func TestSovereignChainsToSovereign(t *testing.T) {
	back := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	spec := catalog.Spec{ID: "chained", BaseURL: back.url + "/v1", APIKey: back.key, UpstreamModel: "tiny", Tokenizer: "",
		Capabilities: []string{"chat", "completions", "embeddings"}}
	front := newEnvSpecs(t, tinyStore(t), engine.Config{}, []catalog.Spec{spec})

	direct, resp := back.chat("tiny", "hello there", map[string]any{"max_tokens": 12})
	if resp.StatusCode != 200 {
		t.Fatalf("direct: %d", resp.StatusCode)
	}
	via, resp := front.chat("chained", "hello there", map[string]any{"max_tokens": 12})
	if resp.StatusCode != 200 {
		t.Fatalf("chained: %d %+v", resp.StatusCode, readError(t, resp))
	}
	if via.Choices[0].Message.Content != direct.Choices[0].Message.Content || via.Usage != direct.Usage {
		t.Fatalf("chained answer differs:\n%+v\n%+v", via, direct)
	}
	// Streaming through both, with usage.
	resp = front.chatRaw("chained", "hello there", map[string]any{"max_tokens": 12, "stream": true, "stream_options": map[string]any{"include_usage": true}})
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	chunks, done := sseEvents(t, resp.Body)
	resp.Body.Close()
	text, code := streamText(chunks)
	if !done || code != "" || text != direct.Choices[0].Message.Content || len(chunks) < 3 {
		t.Fatalf("stream: %q (want %q), code %q, done %v, %d chunks", text, direct.Choices[0].Message.Content, code, done, len(chunks))
	}
	last := chunks[len(chunks)-1]
	if u, _ := last["usage"].(map[string]any); u == nil || int(u["completion_tokens"].(float64)) != direct.Usage.CompletionTokens {
		t.Fatalf("usage chunk: %v", last)
	}
	// The back's errors come through as the same envelope: the tiny chat
	// model has no embeddings, which only the back knows.
	resp = front.post(context.Background(), "/v1/embeddings", map[string]any{"model": "chained", "input": []string{"a", "b"}})
	if env := readError(t, resp); resp.StatusCode != 400 || !strings.Contains(env.Error.Message, "does not support embeddings") {
		t.Fatalf("embeddings: %d %+v", resp.StatusCode, env)
	}
	_, resp = front.chat("chained", "hi", map[string]any{"temperature": 5})
	if resp.StatusCode != 400 {
		t.Fatalf("bad request through the chain: %d", resp.StatusCode)
	}
	if env := readError(t, resp); env.Error.Code != "invalid_request_error" {
		t.Fatalf("%+v", env)
	}
}

type compareResponse struct {
	Object  string `json:"object"`
	Results []struct {
		Model  string `json:"model"`
		Status string `json:"status"`
		Output *struct {
			Content string `json:"content"`
		} `json:"output"`
		Usage *struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
		LatencyMs       float64  `json:"latency_ms"`
		TTFTMs          *float64 `json:"ttft_ms"`
		TokensPerSecond *float64 `json:"tokens_per_second"`
		Error           *envelope
	} `json:"results"`
}

func TestCompareLocalAndUpstreamModels(t *testing.T) {
	a := upstreamtest.New(t, "a")
	specs := []catalog.Spec{upstreamSpec("remote", a.BaseURL()), upstreamSpec("dead", upstreamtest.RefusedURL(t))}
	e := newEnvSpecs(t, tinyStore(t, "tiny"), engine.Config{}, specs)
	body := map[string]any{"models": []string{"tiny", "remote", "dead", "nope"}, "messages": []map[string]string{{"role": "user", "content": "hello"}}, "max_tokens": 8, "temperature": 0}
	resp := e.post(context.Background(), "/v1/models/compare", body)
	if resp.StatusCode != 200 {
		t.Fatalf("compare: %d %+v", resp.StatusCode, readError(t, resp))
	}
	var out compareResponse
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if out.Object != "model.comparison" || len(out.Results) != 4 {
		t.Fatalf("%+v", out)
	}
	for i, want := range []string{"succeeded", "succeeded", "failed", "failed"} {
		r := out.Results[i]
		if r.Status != want {
			t.Fatalf("result %d: %+v", i, r)
		}
		if want == "succeeded" && (r.Output == nil || r.Output.Content == "" || r.Usage == nil || r.Usage.CompletionTokens == 0 || r.TTFTMs == nil || r.LatencyMs < *r.TTFTMs) {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if out.Results[1].Output.Content != a.Reply() || out.Results[1].TokensPerSecond == nil {
		t.Fatalf("upstream result: %+v", out.Results[1])
	}
	if out.Results[2].Error == nil || out.Results[2].Error.Error.Code != "upstream_unavailable" || out.Results[3].Error.Error.Code != "model_not_found" {
		t.Fatalf("errors: %+v %+v", out.Results[2].Error, out.Results[3].Error)
	}
	// Bad requests are refused as a whole.
	resp = e.post(context.Background(), "/v1/models/compare", map[string]any{"models": []string{"tiny"}, "messages": []map[string]string{{"role": "user", "content": "x"}}})
	if env := readError(t, resp); resp.StatusCode != 400 || *env.Error.Param != "models" {
		t.Fatalf("one model: %d %+v", resp.StatusCode, env)
	}
}

func TestModelAdminAliasesLimitsDeprecation(t *testing.T) {
	a := upstreamtest.New(t, "a")
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	patch := func(id string, body any) *http.Response {
		return e.request(e.key, http.MethodPatch, "/v1/models/"+id, body)
	}
	// Create an upstream model through the API.
	resp := e.request(e.key, http.MethodPost, "/v1/models/remote", map[string]any{"base_url": a.BaseURL(), "upstream_model": "mock", "api_key": "sk-upstream", "aliases": []string{"fast"}})
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %+v", resp.StatusCode, readError(t, resp))
	}
	var created catalog.Model
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if created.Backend != "upstream" || created.Source != "api" || !created.Upstream.APIKey || created.Aliases[0] != "fast" {
		t.Fatalf("created: %+v", created)
	}
	// The alias resolves; the response names the model itself.
	resp = e.post(context.Background(), "/v1/chat/completions", map[string]any{"model": "fast", "messages": []map[string]string{{"role": "user", "content": "x"}}})
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != 200 || out["model"] != "remote" {
		t.Fatalf("alias: %d %v", resp.StatusCode, out)
	}
	// Conflicts: the id exists; an alias equal to another model's id.
	if resp := e.request(e.key, http.MethodPost, "/v1/models/remote", map[string]any{"base_url": a.BaseURL()}); resp.StatusCode != 409 {
		t.Fatalf("duplicate: %d", resp.StatusCode)
	}
	if resp := patch("remote", map[string]any{"aliases": []string{"tiny"}}); resp.StatusCode != 409 {
		t.Fatalf("alias on an id: %d", resp.StatusCode)
	}
	// Bad specs name the field.
	resp = e.request(e.key, http.MethodPost, "/v1/models/x2", map[string]any{"base_url": "ftp://nowhere"})
	if env := readError(t, resp); resp.StatusCode != 400 || env.Error.Param == nil || *env.Error.Param != "base_url" {
		t.Fatalf("bad url: %d %+v", resp.StatusCode, env)
	}
	// A models:write key cannot point the server at an internal address
	// the operator has not listed (loopback is listed in these tests), nor
	// at a cloud metadata endpoint; the replica's field is named.
	for _, body := range []map[string]any{
		{"base_url": "http://10.0.0.7:8000/v1"},
		{"base_url": "http://169.254.169.254/latest"},
		{"base_url": a.BaseURL(), "replicas": []string{"http://192.168.1.20:8000/v1"}},
	} {
		resp = e.request(e.key, http.MethodPost, "/v1/models/internal", body)
		env := readError(t, resp)
		if resp.StatusCode != 400 || env.Error.Param == nil || !strings.Contains(env.Error.Message, "upstream_allow") {
			t.Fatalf("an internal upstream %v: %d %+v", body, resp.StatusCode, env)
		}
	}
	if resp := patch("remote", map[string]any{"base_url": "http://10.0.0.7:8000/v1"}); resp.StatusCode != 400 {
		t.Fatalf("patched to an internal upstream: %d", resp.StatusCode)
	}
	resp = e.request(e.key, http.MethodPost, "/v1/models/x3", map[string]any{"base_url": a.BaseURL(), "colour": "red"})
	if env := readError(t, resp); resp.StatusCode != 400 || env.Error.Param == nil || *env.Error.Param != "colour" {
		t.Fatalf("unknown field: %d %+v", resp.StatusCode, env)
	}

	// Limits on the installed local model.
	resp = patch("tiny", map[string]any{"limits": map[string]any{"max_output_tokens": 4}, "aliases": []string{"default"}})
	if resp.StatusCode != 200 {
		t.Fatalf("patch tiny: %d %+v", resp.StatusCode, readError(t, resp))
	}
	resp.Body.Close()
	if _, resp := e.chat("default", "hi", map[string]any{"max_tokens": 5}); resp.StatusCode != 400 {
		t.Fatalf("over the output limit: %d", resp.StatusCode)
	}
	if out, resp := e.chat("default", "hi", map[string]any{"max_tokens": nil}); resp.StatusCode != 200 || out.Usage.CompletionTokens > 4 {
		t.Fatalf("default output limit: %d %+v", resp.StatusCode, out.Usage)
	}

	// Deprecation: headers while it serves, 410 after the sunset.
	sunset := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	resp = patch("remote", map[string]any{"deprecation": map[string]any{"sunset": sunset, "replacement": "tiny"}})
	if resp.StatusCode != 200 {
		t.Fatalf("deprecate: %d %+v", resp.StatusCode, readError(t, resp))
	}
	resp.Body.Close()
	_, resp = e.chat("remote", "hi", nil)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Deprecation"), "@") || resp.Header.Get("Sunset") != sunset.Format(http.TimeFormat) ||
		resp.Header.Get("Link") != `</v1/models/tiny>; rel="successor-version"` {
		t.Fatalf("deprecation headers: %d %v", resp.StatusCode, resp.Header)
	}
	resp = patch("remote", map[string]any{"deprecation": map[string]any{"deprecated_at": time.Now().Add(-2 * time.Hour), "sunset": time.Now().Add(-time.Hour)}})
	resp.Body.Close()
	_, resp = e.chat("remote", "hi", nil)
	if env := readError(t, resp); resp.StatusCode != 410 || env.Error.Code != "model_retired" {
		t.Fatalf("after sunset: %d %+v", resp.StatusCode, env)
	}
	// Clearing the deprecation (null) brings it back.
	resp = patch("remote", map[string]any{"deprecation": nil})
	resp.Body.Close()
	if _, resp := e.chat("remote", "hi", nil); resp.StatusCode != 200 || resp.Header.Get("Deprecation") != "" {
		t.Fatalf("undeprecated: %d %v", resp.StatusCode, resp.Header)
	}

	// Delete: gone from the catalog and from routing.
	if resp := e.request(e.key, http.MethodDelete, "/v1/models/remote", nil); resp.StatusCode != 200 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if _, resp := e.chat("fast", "hi", nil); resp.StatusCode != 404 {
		t.Fatalf("deleted alias: %d", resp.StatusCode)
	}
	// Scopes: models:write is needed.
	if resp := e.request(e.keyWith(t, "inference,models:read"), http.MethodPost, "/v1/models/x4", map[string]any{"base_url": a.BaseURL()}); resp.StatusCode != 403 {
		t.Fatalf("without models:write: %d", resp.StatusCode)
	}
}

func TestLoadAndUnloadPublishEvents(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	resp := e.request(e.key, http.MethodPost, "/v1/models/tiny/load", nil)
	var m catalog.Model
	json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if resp.StatusCode != 200 || m.Status != "ready" {
		t.Fatalf("load: %d %+v", resp.StatusCode, m)
	}
	e.waitEvent(events.ModelReady, "tiny", 10*time.Second)
	resp = e.request(e.key, http.MethodPost, "/v1/models/tiny/unload", nil)
	json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if resp.StatusCode != 200 || m.Status != "available" {
		t.Fatalf("unload: %d %+v", resp.StatusCode, m)
	}
	e.waitEvent(events.ModelUnloaded, "tiny", 10*time.Second)
	if resp := e.request(e.key, http.MethodPost, "/v1/models/nope/load", nil); resp.StatusCode != 404 {
		t.Fatalf("unknown: %d", resp.StatusCode)
	}
}

// keyWith creates a key with the comma-separated scopes through the API.
func (e *env) keyWith(t *testing.T, scopes string) string {
	t.Helper()
	resp := e.request(e.key, http.MethodPost, "/v1/keys", map[string]any{"name": "scoped", "scopes": strings.Split(scopes, ",")})
	defer resp.Body.Close()
	var k map[string]any
	json.NewDecoder(resp.Body).Decode(&k)
	secret, _ := k["key"].(string)
	if resp.StatusCode != 201 || secret == "" {
		t.Fatalf("create key: %d %v", resp.StatusCode, k)
	}
	return secret
}

// TestUpstreamToolsAreRefusedNotDropped: an upstream model does not take
// tools yet (no tools capability), so tools, and tool turns in the history,
// are a 400 naming the field instead of reaching the upstream without them.
// TestUpstreamToolsNeedTheCapability: tools sent to an upstream model
// declared without the tools capability are refused naming 'tools', not
// dropped, and nothing reaches the upstream.
func TestUpstreamToolsNeedTheCapability(t *testing.T) {
	up := upstreamtest.New(t, "a")
	e := newEnvSpecs(t, tinyStore(t), engine.Config{}, []catalog.Spec{upstreamSpec("remote", up.BaseURL())})
	tools := []map[string]any{{"type": "function", "function": map[string]any{"name": "f"}}}
	_, resp := e.chat("remote", "hi", map[string]any{"tools": tools})
	env := readError(t, resp)
	if resp.StatusCode != 400 || env.Error.Param == nil || *env.Error.Param != "tools" || !strings.Contains(env.Error.Message, "remote") {
		t.Errorf("%d %+v, want 400 on tools naming the model", resp.StatusCode, env)
	}
	if n := up.Requests.Load(); n != 0 {
		t.Fatalf("%d requests reached the upstream", n)
	}
}

// gatewayRequest is a chat request as a client might format it, with
// everything Sovereign does not act on: tools, tool history, an image
// part, audio output, reasoning_effort, metadata and vendor extensions, in
// an order and layout of the client's own.
const gatewayRequest = `{
  "vendor_top": {"nested": [1, 2.50, 3e2], "x": null},
  "messages": [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": [
      {"type": "text", "text": "What is in this picture, and the weather?"},
      {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}
    ]},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": -3}"}
  ],
  "model":   "gw",
  "tools": [{"type": "function", "function": {"name": "weather", "description": "Weather now", "strict": true,
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}}}],
  "tool_choice": {"type": "function", "function": {"name": "weather"}},
  "parallel_tool_calls": false,
  "reasoning_effort": "low",
  "audio": {"voice": "alloy", "format": "wav"},
  "modalities": ["text", "audio"],
  "metadata": {"trace": "t-1"},
  "chat_template_kwargs": {"enable_thinking": false},
  "guided_json": {"type": "object"},
  "max_tokens": 64,
  "stream": STREAM
}`

// TestGatewayIsLossless: for an upstream model the request reaches the
// upstream byte for byte as the client sent it but for the model name,
// and the upstream's answer — tool_calls, reasoning_content, annotations,
// fields nobody knows — reaches the client byte for byte but for the model
// name, streamed and not; usage is still counted.
func TestGatewayIsLossless(t *testing.T) {
	up := upstreamtest.New(t, "g")
	spec := upstreamSpec("gw", up.BaseURL())
	spec.UpstreamModel = "org/big-model"
	spec.Capabilities = []string{"chat", "completions", "embeddings", "tools", "vision", "audio"}
	e := newEnvSpecs(t, tinyStore(t), engine.Config{}, []catalog.Spec{spec})

	const answer = `{"id":"chatcmpl-9","object":"chat.completion","created":7,"model":"org/big-model","system_fingerprint":"fp_up",` +
		`"choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,"message":{"role":"assistant","content":null,"refusal":null,` +
		`"reasoning_content":"The user wants weather.","annotations":[{"type":"url_citation","url_citation":{"url":"https://x.test","title":"X","start_index":0,"end_index":1}}],` +
		`"tool_calls":[{"id":"call_up","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]},"vendor_choice":{"k":1}}],` +
		`"usage":{"prompt_tokens":31,"completion_tokens":9,"total_tokens":40,"completion_tokens_details":{"reasoning_tokens":5}},"vendor_answer":[true]}`
	up.SetScript(&upstreamtest.Script{Body: answer})
	req := strings.Replace(gatewayRequest, "STREAM", "false", 1)
	resp := e.post(context.Background(), "/v1/chat/completions", []byte(req))
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("relayed chat: %d %s", resp.StatusCode, got)
	}
	if want := strings.Replace(req, `"model":   "gw"`, `"model":   "org/big-model"`, 1); string(up.LastRawBody()) != want {
		t.Fatalf("the upstream got\n%s\nwant\n%s", up.LastRawBody(), want)
	}
	if want := strings.Replace(answer, `"model":"org/big-model"`, `"model":"gw"`, 1); string(got) != want {
		t.Fatalf("the client got\n%s\nwant\n%s", got, want)
	}
	if m := e.modelInfo("gw"); m.Stats.Requests != 1 || m.Stats.Errors != 0 {
		t.Fatalf("the relayed request was not recorded: %+v", m.Stats)
	}

	events := []string{
		`data: {"id":"c","object":"chat.completion.chunk","created":7,"model":"org/big-model","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Hm."},"finish_reason":null}],"x_chunk":1}`,
		`: a comment line`,
		`data: {"id":"c","object":"chat.completion.chunk","created":7,"model":"org/big-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_up","type":"function","function":{"name":"weather","arguments":""}}]},"finish_reason":null}]}`,
		`data: {"id":"c","object":"chat.completion.chunk","created":7,"model":"org/big-model","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Oslo\"}"}}]},"finish_reason":null}]}`,
		`data: {"id":"c","object":"chat.completion.chunk","created":7,"model":"org/big-model","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":31,"completion_tokens":9,"total_tokens":40}}`,
		`data: [DONE]`,
	}
	up.SetScript(&upstreamtest.Script{Events: events})
	req = strings.Replace(gatewayRequest, "STREAM", "true", 1)
	resp = e.post(context.Background(), "/v1/chat/completions", []byte(req))
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("relayed stream: %d %s", resp.StatusCode, got)
	}
	if want := strings.Replace(req, `"model":   "gw"`, `"model":   "org/big-model"`, 1); string(up.LastRawBody()) != want {
		t.Fatalf("the upstream got\n%s\nwant\n%s", up.LastRawBody(), want)
	}
	var want strings.Builder
	for _, ev := range events {
		if strings.HasPrefix(ev, ":") {
			continue // comments are the upstream's keep-alives, not data
		}
		want.WriteString(strings.Replace(ev, `"model":"org/big-model"`, `"model":"gw"`, 1) + "\n\n")
	}
	if string(got) != want.String() {
		t.Fatalf("the client got\n%s\nwant\n%s", got, want.String())
	}
}

// TestSchemasAreCompiledOnlyForLocalModels: a JSON schema Sovereign's
// converter cannot take is a 400 naming response_format for a local model,
// and reaches an upstream untouched (relayed chat and the comparison
// route, which goes through the native path).
func TestSchemasAreCompiledOnlyForLocalModels(t *testing.T) {
	up := upstreamtest.New(t, "s")
	e := newEnvSpecs(t, tinyStore(t, "tiny"), engine.Config{}, []catalog.Spec{upstreamSpec("remote", up.BaseURL())})
	format := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": "decimal"}}}
	_, resp := e.chat("tiny", "hi", map[string]any{"response_format": format})
	if env := readError(t, resp); resp.StatusCode != 400 || env.Error.Param == nil || *env.Error.Param != "response_format" {
		t.Fatalf("local model: %d %+v", resp.StatusCode, env)
	}
	out, resp := e.chat("remote", "hi", map[string]any{"response_format": format})
	if resp.StatusCode != 200 || out.Choices[0].Message.Content != up.Reply() {
		t.Fatalf("upstream model: %d %+v", resp.StatusCode, out)
	}
	want, _ := json.Marshal(format)
	if got, _ := json.Marshal(up.LastBody()["response_format"]); string(got) != string(want) {
		t.Fatalf("the upstream got response_format %s, want %s", got, want)
	}
	cmp := e.post(context.Background(), "/v1/models/compare", map[string]any{"models": []string{"remote", "tiny"}, "messages": []map[string]any{{"role": "user", "content": "hi"}}, "response_format": format})
	var res struct {
		Results []struct {
			Model, Status string
			Error         *envelope
		} `json:"results"`
	}
	json.NewDecoder(cmp.Body).Decode(&res)
	cmp.Body.Close()
	if cmp.StatusCode != 200 || len(res.Results) != 2 || res.Results[0].Status != "succeeded" || res.Results[1].Status != "failed" ||
		res.Results[1].Error == nil || res.Results[1].Error.Error.Param == nil || *res.Results[1].Error.Error.Param != "response_format" {
		t.Fatalf("compare: %d %+v", cmp.StatusCode, res)
	}
	if got, _ := json.Marshal(up.LastBody()["response_format"]); string(got) != string(want) {
		t.Fatalf("compare: the upstream got response_format %s, want %s", got, want)
	}
}

// TestGatewayRelaysEmbeddingsAndCompletions: the other inference routes
// relay too — an embeddings field Sovereign does not know (dimensions,
// encoding_format) and a completions vendor field reach the upstream.
func TestGatewayRelaysEmbeddingsAndCompletions(t *testing.T) {
	up := upstreamtest.New(t, "g")
	e := newEnvSpecs(t, tinyStore(t), engine.Config{}, []catalog.Spec{upstreamSpec("gw", up.BaseURL())})
	for _, c := range []struct{ path, body string }{
		{"/v1/embeddings", `{"model":"gw","input":["a","bb"],"dimensions":2,"encoding_format":"float","vendor":{"a":1}}`},
		{"/v1/completions", `{"model":"gw","prompt":"Once","max_tokens":4,"min_tokens":2,"vendor":{"a":1}}`},
	} {
		resp := e.post(context.Background(), c.path, []byte(c.body))
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(got), `"model":"gw"`) {
			t.Fatalf("%s: %d %s", c.path, resp.StatusCode, got)
		}
		if want := strings.Replace(c.body, `"model":"gw"`, `"model":"mock"`, 1); string(up.LastRawBody()) != want {
			t.Fatalf("%s: the upstream got %s, want %s", c.path, up.LastRawBody(), want)
		}
		// The request log names the model, its backend and the replica.
		id := resp.Header.Get("X-Request-Id")
		var rec map[string]any
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			r := e.request(e.key, "GET", "/v1/logs/"+id, nil)
			json.NewDecoder(r.Body).Decode(&rec)
			r.Body.Close()
			if r.StatusCode == 200 {
				break
			}
		}
		if rec["model"] != "gw" || rec["backend"] != "upstream" || rec["replica"] != up.BaseURL() || rec["prompt_tokens"].(float64) == 0 {
			t.Fatalf("%s: record %v", c.path, rec)
		}
	}
}

// TestImagePartsReachVisionUpstreams: content parts other than text go to
// an upstream declared with the vision capability exactly as sent (text
// parts included), and are refused with a 400 naming the model by an
// upstream without it and by a local model, instead of being dropped.
func TestImagePartsReachVisionUpstreams(t *testing.T) {
	up := upstreamtest.New(t, "v")
	vision := upstreamSpec("seeing", up.BaseURL())
	vision.Capabilities = []string{"chat", "completions", "vision"}
	e := newEnvSpecs(t, tinyStore(t, "tiny"), engine.Config{}, []catalog.Spec{vision, upstreamSpec("blind", up.BaseURL())})
	parts := []map[string]any{
		{"type": "text", "text": "What is in this picture?"},
		{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
	}
	body := func(model string) map[string]any {
		return map[string]any{"model": model, "max_tokens": 8, "messages": []map[string]any{{"role": "user", "content": parts}}}
	}
	resp := e.post(context.Background(), "/v1/chat/completions", body("seeing"))
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("vision upstream: %d", resp.StatusCode)
	}
	got, _ := json.Marshal(up.LastBody()["messages"].([]any)[0].(map[string]any)["content"])
	want, _ := json.Marshal(parts)
	if string(got) != string(want) {
		t.Fatalf("the upstream got content %s, want %s", got, want)
	}
	n := up.Requests.Load()
	for _, model := range []string{"blind", "tiny"} {
		resp := e.post(context.Background(), "/v1/chat/completions", body(model))
		env := readError(t, resp)
		if resp.StatusCode != 400 || env.Error.Param == nil || *env.Error.Param != "messages[0].content" || !strings.Contains(env.Error.Message, model) {
			t.Fatalf("%s: %d %+v", model, resp.StatusCode, env)
		}
	}
	if up.Requests.Load() != n {
		t.Fatal("a refused request reached the upstream")
	}
}
