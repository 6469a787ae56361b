package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/storetest"
)

// An orderly shutdown (SIGTERM, what every orchestrator sends in a rolling
// upgrade) hands the background work back: the work in flight stays
// resumable, and the next start, or another server, finishes it (issue
// 27). TestIngestionSurvivesStop and TestBatchSurvivesStop stop a server
// with SIGTERM as well as SIGKILL; these are the cases of their own.

// TestIngestionHandedOverOnSIGTERM: of two servers on one PostgreSQL, the
// one ingesting a document is stopped; the other finishes the document,
// without waiting for a heartbeat to go stale (the stopped server said it
// stopped).
func TestIngestionHandedOverOnSIGTERM(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	modelsDir := defaultStore(t).Dir()
	admin := "sk-sov-" + strings.Repeat("H4nd0v3r", 5)
	a := startReplica(t, dbURL, "", modelsDir, admin, "SOVEREIGN_INSTANCE_ID=term-a")
	col := a.must(admin, "POST", "/v1/collections", map[string]any{"name": "handover"}, 201)["id"].(string)
	doc := ingestUntilMidway(t, a, admin, col)
	b := startReplica(t, dbURL, "", modelsDir, admin, "SOVEREIGN_INSTANCE_ID=term-b")
	a.term()
	stopped := time.Now()
	waitReady(t, b, admin, col, doc, 3*time.Minute)
	t.Logf("B finished the document %v after A stopped", time.Since(stopped).Round(100*time.Millisecond))
}

// TestWebhookBackoffSurvivesSIGTERM: a delivery waiting for its retry when
// the server is stopped is retried after the next start and delivered
// once (SQLite; PostgreSQL on the suite's second run).
func TestWebhookBackoffSurvivesSIGTERM(t *testing.T) {
	modelsDir := defaultStore(t).Dir()
	rc := startPyReceiver(t)
	cfg := serverConfig(t)
	dbURL := filepath.Join(t.TempDir(), "sovereign.db")
	if os.Getenv("SOVEREIGN_TEST_DB") == "postgres" {
		dbURL = storetest.PostgresURL(t)
	}
	admin := "sk-sov-" + strings.Repeat("W3bT3rmz", 5)
	srv := startReplica(t, dbURL, "", modelsDir, admin, "SOVEREIGN_CONFIG="+cfg)
	wh := srv.must(admin, "POST", "/v1/webhooks", map[string]any{"url": rc.base + "/t", "events": []string{"workflow.run.succeeded"}}, 201)
	rc.configure(map[string]any{"/t": map[string]any{"secrets": []string{wh["secret"].(string)}, "fail_first": 1, "fail_types": []string{"workflow.run.succeeded"}}})
	wf := srv.must(admin, "POST", "/v1/workflows", map[string]any{"name": "term", "definition": map[string]any{
		"steps": []any{map[string]any{"id": "hello", "type": "transform", "template": "hello"}}}}, 201)["id"].(string)
	run := srv.must(admin, "POST", "/v1/workflows/"+wf+"/runs", map[string]any{"input": map[string]any{}}, 201)["id"].(string)
	waitRun(t, srv, admin, run, time.Minute, "succeeded")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if st := rc.state()["/t"]; len(st.Attempts) == 1 && len(st.Processed) == 0 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the first attempt never came: %+v", st)
		}
	}
	srv.term()
	t.Log("stopped the server with the delivery waiting for its retry; starting it again")
	srv = startReplica(t, dbURL, "", modelsDir, admin, "SOVEREIGN_CONFIG="+cfg)
	var st recvPath
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if st = rc.state()["/t"]; received(st)["workflow.run.succeeded:"+run] != "" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the delivery never arrived after the restart: %+v", st)
		}
	}
	if len(st.Processed) != 1 || st.Rejected != 0 {
		t.Fatalf("receiver: %+v", st)
	}
	ds := srv.must(admin, "GET", "/v1/webhooks/"+wh["id"].(string)+"/deliveries", nil, 200)["data"].([]any)
	if len(ds) != 1 {
		t.Fatalf("deliveries: %v", ds)
	}
	d := srv.must(admin, "GET", "/v1/webhooks/"+wh["id"].(string)+"/deliveries/"+ds[0].(map[string]any)["id"].(string), nil, 200)
	if a := d["attempts"].([]any); d["status"] != "succeeded" || len(a) != 2 || a[0].(map[string]any)["status_code"] != 500.0 {
		t.Fatalf("delivery: %v", d)
	}
}
