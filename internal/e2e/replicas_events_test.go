package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/storetest"
)

// follower is an open GET /v1/events on one server.
type follower struct {
	t   *testing.T
	evs chan map[string]any
}

// follow opens GET /v1/events+query on base with key (and Last-Event-ID
// when lastID is set); the stream closes when the test ends.
func follow(t *testing.T, base, key, query, lastID string) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/events"+query, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("GET /v1/events%s on %s: %d", query, base, resp.StatusCode)
	}
	f := &follower{t: t, evs: make(chan map[string]any, 64)}
	go func() {
		defer close(f.evs)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev map[string]any
				if json.Unmarshal([]byte(data), &ev) == nil {
					f.evs <- ev
				}
			}
		}
	}()
	return f
}

// next returns the next event within d.
func (f *follower) next(d time.Duration, what string) map[string]any {
	f.t.Helper()
	select {
	case ev, ok := <-f.evs:
		if !ok {
			f.t.Fatalf("%s: the stream ended", what)
		}
		return ev
	case <-time.After(d):
		f.t.Fatalf("%s: no event within %v", what, d)
	}
	return nil
}

// TestEventsAcrossReplicas runs two `sovereign serve` processes on one
// PostgreSQL: an audit.triggered raised on A (a policy flag) reaches a
// GET /v1/events subscriber connected to B within a moment (LISTEN/NOTIFY),
// another team's subscriber on B never sees it, and a reconnect to A with
// Last-Event-ID picks up after it.
func TestEventsAcrossReplicas(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	modelsDir := tinyStore(t, "tiny").Dir()
	admin := "sk-sov-" + strings.Repeat("Ev3ntRep", 5)
	a := startReplica(t, dbURL, "", modelsDir, admin)
	b := startReplica(t, dbURL, "", modelsDir, admin)

	keyOf := func(name string) (team, key string) {
		tm := a.must(admin, "POST", "/v1/teams", map[string]any{"name": name}, 201)
		k := a.must(admin, "POST", "/v1/keys", map[string]any{"name": name, "team_id": tm["id"], "scopes": []string{"inference", "records:read"}}, 201)
		return tm["id"].(string), k["key"].(string)
	}
	teamA, keyA := keyOf("watched")
	_, keyB := keyOf("bystanders")
	a.must(admin, "POST", "/v1/policies", map[string]any{"name": "watch", "scope": "team", "scope_id": teamA, "enabled": true,
		"rules": []map[string]any{{"name": "flag-all", "stage": "input", "when": "true", "action": "flag", "reason": "watched team"}}}, 201)

	audits := follow(t, b.base, keyA, "?types=audit.triggered", "")
	others := follow(t, b.base, keyB, "", "")
	start := time.Now()
	if resp, out := a.do(keyA, "POST", "/v1/chat/completions", map[string]any{"model": "tiny", "max_tokens": 2,
		"messages": []map[string]any{{"role": "user", "content": "hello"}}}); resp.StatusCode != 200 {
		t.Fatalf("chat on A: %d %v", resp.StatusCode, out)
	}
	ev := audits.next(10*time.Second, "audit.triggered on B")
	data, _ := ev["data"].(map[string]any)
	if ev["type"] != "audit.triggered" || data["team_id"] != teamA || data["rule"] != "flag-all" || data["action"] != "flag" {
		t.Fatalf("on B: %v", ev)
	}
	t.Logf("audit.triggered raised on A reached B's stream %v after the request began", time.Since(start).Round(time.Millisecond))

	// Team B's stream on B sees the model loading on A (a deployment
	// event), never team A's audit.
	for {
		o := others.next(30*time.Second, "model.ready for team B")
		if o["type"] == "audit.triggered" {
			t.Fatalf("team B saw team A's audit: %v", o)
		}
		if o["type"] == "model.ready" {
			break
		}
	}

	// A reconnect with the audit's id, on the other server, goes on after
	// it: the model's events, not the audit again.
	resumed := follow(t, a.base, keyA, "", ev["id"].(string))
	next := resumed.next(10*time.Second, "replay on A")
	if next["id"] == ev["id"] || next["type"] != "model.ready" {
		t.Fatalf("after %s on A: %v", ev["id"], next)
	}
}
