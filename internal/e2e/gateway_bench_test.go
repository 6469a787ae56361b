package e2e

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/upstream/upstreamtest"
)

// BenchmarkGatewayChat measures one non-streamed chat request through the
// whole API (auth on SQLite, catalog, upstream client, metrics) to a mock
// upstream, sequentially. bench/gateway compares the same path with other
// gateways; this is for profiling (-cpuprofile).
func BenchmarkGatewayChat(b *testing.B) {
	for _, stream := range []bool{false, true} {
		name := "whole"
		if stream {
			name = "stream"
		}
		b.Run(name, func(b *testing.B) {
			up := upstreamtest.New(b, "a")
			e := newEnvSpecs(b, tinyStore(b), engine.Config{}, []catalog.Spec{upstreamSpec("remote", up.BaseURL())})
			body := []byte(`{"model":"remote","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`)
			if stream {
				body = []byte(`{"model":"remote","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}`)
			}
			benchChat(b, e, body, func(*http.Response) bool { return true })
		})
	}
}

// BenchmarkGatewayChatGoverned is BenchmarkGatewayChat's non-streamed
// request with bench/gateway's governance set up on one server (limits on
// the key, its team and the model, in memory here; the three policies, PII
// detection included): with -benchmem, what governance allocates per
// request beside the plain path (the Redis adapter's own share is
// internal/redis's BenchmarkAdmitSettleThreeScopes).
func BenchmarkGatewayChatGoverned(b *testing.B) {
	up := upstreamtest.New(b, "a")
	e := newEnvSpecs(b, tinyStore(b), engine.Config{}, []catalog.Spec{upstreamSpec("remote", up.BaseURL())})
	keys := e.json("GET", "/v1/keys", nil, 200)["data"].([]any)
	k := keys[0].(map[string]any)
	keyID, teamID := k["id"].(string), k["team_id"].(string)
	every := map[string]any{"requests_per_minute": 1e8, "tokens_per_minute": 1e8, "concurrent_requests": 1e5}
	e.json("PUT", "/v1/limits/rules/key/"+keyID, every, 200)
	e.json("PUT", "/v1/limits/rules/model/remote", every, 200)
	e.json("PUT", "/v1/limits/rules/team/"+teamID, map[string]any{"requests_per_minute": 1e8, "tokens_per_minute": 1e8,
		"concurrent_requests": 1e5, "tokens_per_day": 1e12}, 200)
	for _, p := range []map[string]any{
		{"name": "bench-pii", "scope": "deployment", "when": `"card" in pii || "iban" in pii`, "action": "flag"},
		{"name": "bench-model-allowlist", "scope": "team", "scope_id": teamID, "when": `!(model in ["remote"])`, "action": "deny"},
		{"name": "bench-max-tokens", "scope": "key", "scope_id": keyID, "when": `max_tokens > 100000`, "action": "deny"},
	} {
		body := map[string]any{"name": p["name"], "scope": p["scope"], "enabled": true,
			"rules": []map[string]any{{"name": "r", "stage": "input", "when": p["when"], "action": p["action"]}}}
		if id, ok := p["scope_id"]; ok {
			body["scope_id"] = id
		}
		e.json("POST", "/v1/policies", body, 201)
	}
	body := []byte(`{"model":"remote","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`)
	benchChat(b, e, body, func(r *http.Response) bool { return r.Header.Get("X-Ratelimit-Limit-Requests") != "" })
}

// benchChat posts body to e's chat completions b.N times, one at a time,
// reading each answer whole; an answer that is not a 200 or fails ok stops
// the benchmark.
func benchChat(b *testing.B, e *env, body []byte, ok func(*http.Response) bool) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest(http.MethodPost, e.url+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.key)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !ok(resp) {
			b.Fatal(resp.StatusCode, resp.Header)
		}
	}
}
