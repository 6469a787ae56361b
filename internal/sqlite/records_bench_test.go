package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/records"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
)

// BenchmarkAppendRecords appends request records in batches of 64, as the
// log writer does under load; ns/op is per record.
func BenchmarkAppendRecords(b *testing.B) {
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "b.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := make([]records.Record, 64)
	b.ResetTimer()
	for i := 0; i < b.N; i += len(batch) {
		for j := range batch {
			batch[j] = records.Record{ID: "req_0123456789abcdef01234567", Time: time.Now(), TeamID: "team_x", KeyID: "key_y",
				Method: "POST", Route: "POST /v1/chat/completions", Model: "mock", Backend: "upstream", Status: 200, LatencyMs: 0.3, ClientIP: "127.0.0.1"}
		}
		if err := s.AppendRecords(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
}
