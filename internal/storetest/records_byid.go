package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/records"
)

// testRecordsByID: the request log's writer finds every record of given
// ids (of any team, an id's older records too, in chain order) before it
// replays spooled records; a gap marker is stored and verified like any
// record, and usage does not count it.
func testRecordsByID(t *testing.T, ks auth.KeyStore) {
	s, ok := ks.(interface {
		records.Store
		records.RecordFinder
	})
	if !ok {
		t.Fatalf("%T does not implement records.RecordFinder", ks)
	}
	ctx := context.Background()
	var batch []records.Record
	for i := range 6 {
		batch = append(batch, records.Record{ID: fmt.Sprintf("req_%d", i%4), Time: at(time.Duration(i) * time.Second), TeamID: fmt.Sprintf("team_%d", i%2),
			Route: "POST /v1/embeddings", Status: 200, PromptTokens: i})
	}
	gap := records.Record{ID: "gap_1", Time: at(0), Route: records.GapRoute, ErrorCode: records.GapErrorCode, Replica: "host:8080", LatencyMs: 1000,
		Output: `{"lost":3,"first":"2025-03-14T15:09:26.535897Z","last":"2025-03-14T15:09:27.535897Z","replica":"host:8080","reasons":{"buffer_full":3}}`}
	batch = append(batch, gap)
	if err := s.AppendRecords(ctx, batch); err != nil {
		t.Fatal(err)
	}
	got, err := s.RecordsByID(ctx, []string{"req_0", "req_3", "nope"})
	if err != nil || len(got) != 3 || got[0].ID != "req_0" || got[0].PromptTokens != 0 || got[1].ID != "req_3" || got[2].ID != "req_0" || got[2].PromptTokens != 4 {
		t.Fatalf("records by id: %+v %v", got, err)
	}
	for _, r := range got {
		if r.Hash != r.ComputeHash(r.PrevHash) {
			t.Fatalf("record %d read back does not hash to its hash", r.Seq)
		}
	}
	if none, err := s.RecordsByID(ctx, []string{"nope"}); err != nil || len(none) != 0 {
		t.Fatalf("no such id: %+v %v", none, err)
	}
	rep, err := records.VerifyReport(ctx, s)
	if err != nil || rep.Break != nil || rep.Records != 7 || rep.GapCount != 1 || rep.Lost != 3 || rep.Gaps[0].Replica != "host:8080" || rep.Gaps[0].Reasons[records.LostBufferFull] != 3 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	usage, err := s.Usage(ctx, records.Filter{AllTeams: true}, records.ByTeam)
	if err != nil || len(usage) != 2 || usage[0].Requests+usage[1].Requests != 6 {
		t.Fatalf("usage counts the gap marker: %+v %v", usage, err)
	}
}
