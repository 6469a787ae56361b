package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/storetest"
)

// longDocument is a text that takes the embedding model a few seconds to
// ingest on a small machine: long enough to kill the server in the middle.
func longDocument() string {
	var b strings.Builder
	for i := 0; b.Len() < 120_000; i++ {
		fmt.Fprintf(&b, "Paragraph %d. The quarry keeper counted %d granite blocks before the flood of year %d, "+
			"and wrote the figure in the ledger kept under the chapel floor.\n\n", i, i*7+3, 1700+i%300)
	}
	return b.String()
}

// ingestUntilMidway uploads longDocument through r and returns the
// document's id once its ingestion is under way (progress above 0, not
// ready yet).
func ingestUntilMidway(t *testing.T, r *replica, key, col string) string {
	t.Helper()
	doc := r.must(key, "POST", "/v1/collections/"+col+"/documents", map[string]any{"title": "ledger", "text": longDocument()}, 202)["id"].(string)
	for deadline := time.Now().Add(60 * time.Second); ; {
		d := r.must(key, "GET", "/v1/collections/"+col+"/documents/"+doc, nil, 200)
		if p, _ := d["progress"].(float64); p > 0 && d["status"] == "processing" {
			t.Logf("stopping the server with the document at %.0f%%", p*100)
			return doc
		}
		if d["status"] != "processing" || time.Now().After(deadline) {
			t.Fatalf("the document never got under way: %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReady waits until the document is ready on r and checks its chunks
// were stored once: the collection holds exactly the document's chunks.
func waitReady(t *testing.T, r *replica, key, col, doc string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); ; {
		d := r.must(key, "GET", "/v1/collections/"+col+"/documents/"+doc, nil, 200)
		if d["status"] == "ready" {
			c := r.must(key, "GET", "/v1/collections/"+col, nil, 200)
			if c["chunk_count"] != d["chunk_count"] || d["chunk_count"].(float64) < 10 {
				t.Fatalf("collection %v chunks, document %v: stored more than once, or not at all", c["chunk_count"], d["chunk_count"])
			}
			hits := r.must(key, "POST", "/v1/collections/"+col+"/search", map[string]any{"query": "granite blocks in the ledger under the chapel floor"}, 200)["data"].([]any)
			if len(hits) == 0 {
				t.Fatal("the ingested document is not found by search")
			}
			return
		}
		if d["status"] == "failed" || time.Now().After(deadline) {
			t.Fatalf("document after the crash: %v", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestIngestionSurvivesStop: a server killed with SIGKILL, or stopped
// with SIGTERM (an orchestrator's rolling upgrade), in the middle of a
// document's ingestion finishes it when it starts again (SQLite).
func TestIngestionSurvivesStop(t *testing.T) {
	for _, c := range []struct {
		name string
		stop func(*replica)
	}{{"SIGKILL", (*replica).kill}, {"SIGTERM", (*replica).term}} {
		t.Run(c.name, func(t *testing.T) {
			dbURL := filepath.Join(t.TempDir(), "sovereign.db")
			modelsDir := defaultStore(t).Dir()
			admin := "sk-sov-" + strings.Repeat("Cr4shT35", 5)
			a := startReplica(t, dbURL, "", modelsDir, admin)
			col := a.must(admin, "POST", "/v1/collections", map[string]any{"name": "crash"}, 201)["id"].(string)
			doc := ingestUntilMidway(t, a, admin, col)
			c.stop(a)

			b := startReplica(t, dbURL, "", modelsDir, admin)
			waitReady(t, b, admin, col, doc, 3*time.Minute)
		})
	}
}

// TestIngestionTakenOver: two servers on one PostgreSQL; the one
// ingesting a document is killed; the other finishes the ingestion once
// the dead one's heartbeat is stale.
func TestIngestionTakenOver(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	modelsDir := defaultStore(t).Dir()
	admin := "sk-sov-" + strings.Repeat("T4k30v3r", 5)
	a := startReplica(t, dbURL, "", modelsDir, admin)
	col := a.must(admin, "POST", "/v1/collections", map[string]any{"name": "takeover"}, 201)["id"].(string)
	doc := ingestUntilMidway(t, a, admin, col)
	// B starts after A took the document, so A is the one running it.
	b := startReplica(t, dbURL, "", modelsDir, admin)
	a.kill()
	killed := time.Now()
	waitReady(t, b, admin, col, doc, 3*time.Minute)
	t.Logf("B finished the document %v after A was killed", time.Since(killed).Round(100*time.Millisecond))
}
