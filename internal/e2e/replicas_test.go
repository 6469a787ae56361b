package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/limits/limitstest"
	"github.com/sovereign-ai/sovereign/internal/storetest"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// replica is one `sovereign serve` process.
type replica struct {
	t    *testing.T
	base string
	logs *bytes.Buffer
	cmd  *exec.Cmd
}

// kill ends the server with SIGKILL, as a crash would: nothing of its own
// shutdown runs.
func (r *replica) kill() {
	r.cmd.Process.Kill()
	r.cmd.Wait()
}

// term stops the server with SIGTERM, as an orchestrator does in a rolling
// upgrade, and waits for its orderly shutdown to end: exit status 0.
func (r *replica) term() {
	r.t.Helper()
	r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			r.t.Fatalf("the server's shutdown: %v\n%s", err, tail(r.logs.String(), 3000))
		}
	case <-time.After(60 * time.Second):
		r.cmd.Process.Kill()
		r.t.Fatalf("the server still ran 60 s after SIGTERM\n%s", tail(r.logs.String(), 3000))
	}
}

// startReplica runs `sovereign serve` on the shared database and Redis.
func startReplica(t *testing.T, dbURL, redisURL, modelsDir, key string, env ...string) *replica {
	t.Helper()
	addr := freeAddr(t)
	// The mock upstreams the tests register listen on loopback (a test's
	// own SOVEREIGN_CONFIG, later in env, replaces this one).
	cfg := filepath.Join(t.TempDir(), "replica.yaml")
	if err := os.WriteFile(cfg, []byte("upstream_allow: [127.0.0.1, \"::1\", localhost]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testutil.Binary(t), "serve")
	cmd.Env = append(append(os.Environ(),
		"SOVEREIGN_ADDR="+addr, "SOVEREIGN_DATA_DIR="+t.TempDir(), "SOVEREIGN_MODELS_DIR="+modelsDir,
		"SOVEREIGN_DATABASE_URL="+dbURL, "SOVEREIGN_REDIS_URL="+redisURL, "SOVEREIGN_BOOTSTRAP_KEY="+key,
		"SOVEREIGN_THREADS=1", "SOVEREIGN_CTX=512", "SOVEREIGN_SLOTS=2", "SOVEREIGN_CONFIG="+cfg), env...)
	logs := &bytes.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("replica %s log:\n%s", addr, tail(logs.String(), 3000))
		}
	})
	r := &replica{t: t, base: "http://" + addr, logs: logs, cmd: cmd}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(r.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica never became ready: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// do sends a JSON request and returns the response with its body read.
func (r *replica) do(key, method, path string, body any) (*http.Response, map[string]any) {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, r.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return resp, out
}

func (r *replica) must(key, method, path string, body any, status int) map[string]any {
	r.t.Helper()
	resp, out := r.do(key, method, path, body)
	if resp.StatusCode != status {
		r.t.Fatalf("%s %s on %s: %d %v, want %d", method, path, r.base, resp.StatusCode, out, status)
	}
	return out
}

// TestTwoServersAreOne runs two `sovereign serve` processes on one
// PostgreSQL and one Redis: a team's limit is one limit across both (the
// headers count down across them, the next request is refused on either,
// and waiting Retry-After is enough), and a document ingested through one
// is found by vector search through the other within 2 s.
func TestTwoServersAreOne(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	redisURL := limitstest.RequireRedis(t)
	modelsDir := defaultStore(t).Dir()
	admin := "sk-sov-" + strings.Repeat("R3pl1ca5", 5)
	a := startReplica(t, dbURL, redisURL, modelsDir, admin)
	b := startReplica(t, dbURL, redisURL, modelsDir, admin)

	team := a.must(admin, "POST", "/v1/teams", map[string]any{"name": "shared"}, 201)
	key := a.must(admin, "POST", "/v1/keys", map[string]any{"name": "k", "team_id": team["id"], "scopes": []string{"inference"}}, 201)["key"].(string)
	const rpm = 12
	a.must(admin, "PUT", "/v1/limits/rules/team/"+team["id"].(string), map[string]any{"requests_per_minute": rpm}, 200)
	// B reads rules every 2 s.
	for deadline := time.Now().Add(5 * time.Second); ; {
		resp, _ := b.do(admin, "GET", "/v1/limits/rules/team/"+team["id"].(string), nil)
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("replica B never saw the rule set through A")
		}
		time.Sleep(100 * time.Millisecond)
	}

	embed := map[string]any{"model": "all-minilm-l6-v2", "input": "a shared limit"}
	for i := 0; i < rpm; i++ {
		r := a
		if i%2 == 1 {
			r = b
		}
		resp, out := r.do(key, "POST", "/v1/embeddings", embed)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %v", i, resp.StatusCode, out)
		}
		if got := resp.Header.Get("X-Ratelimit-Remaining-Requests"); got != strconv.Itoa(rpm-1-i) {
			t.Fatalf("request %d on %s: remaining %q, want %d (one count across both servers)", i, r.base, got, rpm-1-i)
		}
		if resp.Header.Get("X-Ratelimit-Limit-Requests") != strconv.Itoa(rpm) {
			t.Fatalf("limit header %q", resp.Header.Get("X-Ratelimit-Limit-Requests"))
		}
	}
	var retry int
	for _, r := range []*replica{a, b} {
		resp, out := r.do(key, "POST", "/v1/embeddings", embed)
		if resp.StatusCode != 429 || errCode(out) != "rate_limit_exceeded" {
			t.Fatalf("over the limit on %s: %d %v", r.base, resp.StatusCode, out)
		}
		retry, _ = strconv.Atoi(resp.Header.Get("Retry-After"))
		if retry < 1 || retry > 60/rpm {
			t.Fatalf("Retry-After %q, want 1..%d", resp.Header.Get("Retry-After"), 60/rpm)
		}
	}
	time.Sleep(time.Duration(retry) * time.Second)
	if resp, out := b.do(key, "POST", "/v1/embeddings", embed); resp.StatusCode != 200 {
		t.Fatalf("after waiting Retry-After: %d %v", resp.StatusCode, out)
	}
	lim := b.must(key, "GET", "/v1/limits", nil, 200)["data"].([]any)
	if len(lim) != 1 || lim[0].(map[string]any)["name"] != "requests_per_minute" || lim[0].(map[string]any)["remaining"].(float64) != 0 {
		t.Fatalf("GET /v1/limits on B: %v", lim)
	}

	// Vector search on B finds a document just ingested through A.
	col := a.must(key, "POST", "/v1/collections", map[string]any{"name": "replicated"}, 201)["id"].(string)
	doc := a.must(key, "POST", "/v1/collections/"+col+"/documents", map[string]any{"title": "zorblat",
		"text": "The zorblat engine runs on purple coolant harvested from moon lakes."}, 202)["id"].(string)
	for deadline := time.Now().Add(60 * time.Second); ; {
		d := a.must(key, "GET", "/v1/collections/"+col+"/documents/"+doc, nil, 200)
		if d["status"] == "ready" {
			break
		}
		if d["status"] == "failed" || time.Now().After(deadline) {
			t.Fatalf("document: %v", d)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ready := time.Now()
	for {
		hits := b.must(key, "POST", "/v1/collections/"+col+"/search", map[string]any{"query": "What fuel does the zorblat engine use?", "mode": "vector"}, 200)["data"].([]any)
		if len(hits) > 0 && hits[0].(map[string]any)["document_id"] == doc {
			t.Logf("found through B %v after the document was ready on A", time.Since(ready).Round(time.Millisecond))
			break
		}
		if time.Since(ready) > 2*time.Second {
			t.Fatalf("replica B's vector search does not find the document 2 s after it was ready on A: %v", hits)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
