package sqlite_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/records"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
)

// BenchmarkAppendRecords appends request records in batches of 64, as the
// log writer does under load; ns/op is per record. The ids are the
// server's own (time-ordered, generate.NewID) or random ones (as a client's
// x-request-id can be): each random id lands on its own page of the id
// index, which the append must write.
func BenchmarkAppendRecords(b *testing.B) {
	for _, ids := range []struct {
		name string
		id   func() string
	}{{"ordered-ids", generate.NewID}, {"random-ids", func() string {
		var r [12]byte
		rand.Read(r[:])
		return "req_" + hex.EncodeToString(r[:])
	}}} {
		b.Run(ids.name, func(b *testing.B) {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "b.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			batch := make([]records.Record, 64)
			b.ResetTimer()
			for i := 0; i < b.N; i += len(batch) {
				for j := range batch {
					batch[j] = records.Record{ID: ids.id(), Time: time.Now(), TeamID: "team_x", KeyID: "key_y",
						Method: "POST", Route: "POST /v1/chat/completions", Model: "mock", Backend: "upstream", Status: 200, LatencyMs: 0.3, ClientIP: "127.0.0.1"}
				}
				if err := s.AppendRecords(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
