package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/sovereign-ai/sovereign/internal/app"
	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// webhookOperations are the Webhooks tag's operations, checked live by
// TestOpenAPIWebhooksMatch.
var webhookOperations = []string{
	"createWebhook", "listWebhooks", "retrieveWebhook", "updateWebhook", "deleteWebhook", "rotateWebhookSecret",
	"listWebhookDeliveries", "retrieveWebhookDelivery", "redeliverWebhookDelivery",
}

func init() { pendingLiveChecks = append(pendingLiveChecks, webhookOperations...) }

// newEnvConfig is newEnv with a configuration of the test's (the
// application's settings beyond the engine's).
func newEnvConfig(t *testing.T, cfg config.Config) *env {
	t.Helper()
	kind := os.Getenv("SOVEREIGN_TEST_DB")
	if kind == "" {
		kind = "sqlite"
	}
	store := tinyStore(t, "tiny")
	ec := engine.Config{Exe: testutil.Binary(t), Threads: 2, CtxPerSlot: 512}
	a, err := app.New(context.Background(), cfg, app.Options{DB: openDatabase(t, kind), Models: store, Engine: &ec, CatalogRefresh: -1,
		DurableURL: filepath.Join(t.TempDir(), "durable.db")})
	if err != nil {
		t.Fatal(err)
	}
	sub := a.Bus.Subscribe(256)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		srv.Close()
		a.Close()
		sub.Close()
	})
	return &env{t: t, url: srv.URL, key: a.AdminKey, mgr: a.Engine, cat: a.Catalog, sub: sub, store: store}
}

// TestOpenAPIWebhooksMatch checks every webhook route live against the
// document — create, list, retrieve, change, rotate, the delivery log of a
// model.ready delivered to a receiver that verifies its signature with the
// Standard Webhooks library, redelivery, delete — and their errors.
func TestOpenAPIWebhooksMatch(t *testing.T) {
	doc := loadSpec(t)
	e := newEnvConfig(t, config.Config{OutboundAllow: []string{"127.0.0.1"}})
	c := newSpecChecker(t, doc, e)

	var mu sync.Mutex
	var secrets []string
	got := map[string]int{} // webhook-id → messages
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		for _, s := range secrets {
			wh, _ := standardwebhooks.NewWebhook(s)
			if err := wh.Verify(body, r.Header); err != nil {
				t.Errorf("signature: %v", err)
				w.WriteHeader(400)
				return
			}
		}
		got[r.Header.Get("webhook-id")]++
	}))
	t.Cleanup(recv.Close)

	x := c.call("POST", "/v1/webhooks", map[string]any{"url": recv.URL + "/hook", "events": []string{"model.ready"}, "description": "spec"})
	expectStatus(t, x, 201)
	wh := x.json(t)
	id, _ := wh["id"].(string)
	mu.Lock()
	secrets = []string{wh["secret"].(string)}
	mu.Unlock()

	// Errors: a refused target, an unknown event type, an unknown field,
	// "*" without records:read, another team's webhook, a missing one.
	e1 := expectError(t, c.call("POST", "/v1/webhooks", map[string]any{"url": "http://10.0.0.1/hook", "events": []string{"model.ready"}}), 400, "invalid_request_error")
	if e1["param"] != "url" || !strings.Contains(e1["message"].(string), "refusing 10.0.0.1 (private)") {
		t.Fatalf("refused target: %v", e1)
	}
	if e := expectError(t, c.call("POST", "/v1/webhooks", map[string]any{"url": recv.URL, "events": []string{"model.exploded"}}), 400, "invalid_request_error"); e["param"] != "events[0]" {
		t.Fatalf("unknown type: %v", e)
	}
	if e := expectError(t, c.callRaw("POST", "/v1/webhooks", []byte(`{"url":"`+recv.URL+`","events":["model.ready"],"secret":"mine"}`)), 400, "invalid_request_error"); e["param"] != "secret" {
		t.Fatalf("unknown field: %v", e)
	}
	hooksOnly := specScopedKey(t, e, "webhooks")
	saved := c.key
	c.key = hooksOnly
	expectError(t, c.call("POST", "/v1/webhooks", map[string]any{"url": recv.URL, "events": []string{"*"}}), 403, "permission_denied")
	c.key = teamKeyWith(t, e, "elsewhere", "webhooks")
	expectError(t, c.call("GET", "/v1/webhooks/"+id, nil), 404, "not_found")
	c.key = saved
	expectError(t, c.call("GET", "/v1/webhooks/wh_missing", nil), 404, "not_found")

	expectStatus(t, c.call("GET", "/v1/webhooks?limit=10", nil), 200)
	if r := c.call("GET", "/v1/webhooks/"+id, nil); r.resp.StatusCode != 200 || r.json(t)["secret"] != nil {
		t.Fatalf("retrieve: %d %s", r.resp.StatusCode, r.body)
	}
	expectStatus(t, c.call("PATCH", "/v1/webhooks/"+id, map[string]any{"description": "changed", "events": []string{"model.ready", "model.unloaded"}}), 200)

	// A model.ready, delivered and logged.
	expectStatus(t, c.call("POST", "/v1/models/tiny/load", nil), 200)
	var delivery map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		x := c.call("GET", "/v1/webhooks/"+id+"/deliveries?status=succeeded", nil)
		expectStatus(t, x, 200)
		if data := x.json(t)["data"].([]any); len(data) > 0 {
			delivery = data[0].(map[string]any)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no delivery succeeded")
		}
	}
	x = c.call("GET", "/v1/webhooks/"+id+"/deliveries/"+delivery["id"].(string), nil)
	expectStatus(t, x, 200)
	if as := x.json(t)["attempts"].([]any); len(as) != 1 || as[0].(map[string]any)["status_code"] != 200.0 {
		t.Fatalf("attempts %s", x.body)
	}
	expectStatus(t, c.call("POST", "/v1/webhooks/"+id+"/deliveries/"+delivery["id"].(string)+"/redeliver", nil), 202)
	msg := delivery["message_id"].(string)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		n := got[msg]
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the message arrived %d times, want 2 (the delivery and the redelivery)", n)
		}
	}
	expectError(t, c.call("GET", "/v1/webhooks/"+id+"/deliveries/whd_missing", nil), 404, "not_found")
	expectError(t, c.callRaw("GET", "/v1/webhooks/"+id+"/deliveries?status=lost", nil), 400, "invalid_request_error")

	// Rotation, with and without a body.
	x = c.call("POST", "/v1/webhooks/"+id+"/rotate_secret", map[string]any{"grace_period_seconds": 60})
	expectStatus(t, x, 200)
	if r := x.json(t); r["secret"] == wh["secret"] || r["previous_secret_expires_at"] == nil {
		t.Fatalf("rotated %s", x.body)
	}
	expectStatus(t, c.call("POST", "/v1/webhooks/"+id+"/rotate_secret", nil), 200)
	expectError(t, c.callRaw("POST", "/v1/webhooks/"+id+"/rotate_secret", []byte(`{"grace_period_seconds": 1209600}`)), 400, "invalid_request_error")

	// A disabled webhook is not redelivered.
	x = c.call("PATCH", "/v1/webhooks/"+id, map[string]any{"enabled": false})
	expectStatus(t, x, 200)
	if r := x.json(t); r["enabled"] != false || r["disabled_reason"] != "disabled through the API" {
		t.Fatalf("disabled %s", x.body)
	}
	expectError(t, c.call("POST", "/v1/webhooks/"+id+"/deliveries/"+delivery["id"].(string)+"/redeliver", nil), 409, "conflict")

	expectStatus(t, c.call("DELETE", "/v1/webhooks/"+id, nil), 200)
	expectError(t, c.call("DELETE", "/v1/webhooks/"+id, nil), 404, "not_found")

	if missing := c.uncovered(operationsExcept(c.doc, webhookOperations...)...); len(missing) > 0 {
		t.Errorf("not exercised: %v", missing)
	}
}

// teamKeyWith creates a team and a key of it with scopes.
func teamKeyWith(t *testing.T, e *env, name string, scopes ...string) string {
	t.Helper()
	team := e.json("POST", "/v1/teams", map[string]any{"name": name}, 201)
	return e.json("POST", "/v1/keys", map[string]any{"name": name, "team_id": team["id"], "scopes": scopes}, 201)["key"].(string)
}
