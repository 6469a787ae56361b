package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/records"
	"github.com/sovereign-ai/sovereign/internal/store"
)

// TestAuditVerifyReportsGaps: `sovereign audit verify` on a chain with a
// gap marker says the chain is intact and lists the gap (count, time
// span, replica, reasons) and exits 0; with --strict it exits 1.
func TestAuditVerifyReportsGaps(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	rs := []records.Record{
		{ID: "req_1", Time: at, Route: "POST /v1/chat/completions", Status: 200},
		{ID: "gap_1", Time: at, Route: records.GapRoute, ErrorCode: records.GapErrorCode, Replica: "node-a:8080", LatencyMs: 2500,
			Output: `{"lost":7,"first":"2026-05-01T12:00:00Z","last":"2026-05-01T12:00:02.5Z","replica":"node-a:8080","reasons":{"buffer_full":2,"spool_full":5}}`},
		{ID: "req_2", Time: at.Add(3 * time.Second), Route: "POST /v1/embeddings", Status: 200},
	}
	if err := db.AppendRecords(ctx, rs); err != nil {
		t.Fatal(err)
	}
	db.Close()
	t.Setenv("SOVEREIGN_CONFIG", "")
	var out, errOut bytes.Buffer
	if err := auditCommand(ctx, []string{"verify", "--database-url", path}, &out, &errOut); err != nil {
		t.Fatalf("audit verify: %v\n%s%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{
		"Gaps: the servers declared 7 lost records in 1 gap markers:",
		`record 2 (gap_1): 7 lost on replica "node-a:8080", calls started 2026-05-01T12:00:00Z – 2026-05-01T12:00:02.5Z (buffer_full 2, spool_full 5)`,
		"OK: 3 records",
		"Chain intact, 7 records known lost in 1 gaps",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("audit verify:\n%s", out.String())
	out.Reset()
	err = auditCommand(ctx, []string{"verify", "--strict", "--database-url", path}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "7 records known lost in 1 gaps") {
		t.Fatalf("audit verify --strict: %v\n%s", err, out.String())
	}
}
