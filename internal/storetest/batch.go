package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/batch"
)

// testBatches holds files, batches and their lines to batch.Store's
// contract: file content stored in pieces and read back in order, lists
// per team with cursors (files both ways, purposes; batches newest first),
// status transitions only from the statuses named, lines stored once
// however often they are added, finished once however often (and however
// concurrently) they are finished, with the counts that go with them, and
// result lines in input order.
func testBatches(t *testing.T, ks auth.KeyStore) {
	s, ok := ks.(batch.Store)
	if !ok {
		t.Fatalf("%T does not implement batch.Store", ks)
	}
	ctx := context.Background()

	// Files.
	file := func(id, team, purpose string, i int) batch.File {
		return batch.File{ID: id, TeamID: team, Filename: id + ".jsonl", Purpose: purpose, Status: batch.FileUploading, CreatedAt: at(time.Duration(i) * time.Second)}
	}
	for i, id := range []string{"file-a1", "file-a2", "file-b1", "file-a3"} {
		team := "team_a"
		if id == "file-b1" {
			team = "team_b"
		}
		if err := s.CreateFile(ctx, file(id, team, batch.PurposeBatch, i)); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, "CreateFile twice", s.CreateFile(ctx, file("file-a1", "team_a", batch.PurposeBatch, 0)), batch.ErrConflict)
	content := bytes.Repeat([]byte("0123456789abcdef"), 100_000) // 1.6 MB, binary-safe
	content[5] = 0
	parts := [][]byte{content[:1<<20], content[1<<20:]}
	for i, p := range parts {
		if err := s.AddFilePart(ctx, "file-a1", i+1, p); err != nil {
			t.Fatal(err)
		}
	}
	// Still uploading: not listed.
	if fs, _, err := s.ListFiles(ctx, batch.FileFilter{TeamID: "team_a"}); err != nil || len(fs) != 0 {
		t.Fatalf("files while uploading: %v %v", fs, err)
	}
	for _, id := range []string{"file-a1", "file-a2", "file-b1", "file-a3"} {
		if err := s.FinishFile(ctx, id, int64(len(content)), 7); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, "FinishFile unknown", s.FinishFile(ctx, "file-zz", 1, 1), batch.ErrNotFound)
	f, err := s.GetFile(ctx, "file-a1")
	if err != nil || f.Status != batch.FileProcessed || f.Bytes != int64(len(content)) || f.Lines != 7 || f.TeamID != "team_a" ||
		!f.CreatedAt.Equal(at(0)) || f.CreatedAt.Location() != time.UTC || f.Purpose != batch.PurposeBatch || f.Filename != "file-a1.jsonl" {
		t.Fatalf("GetFile: %+v %v", f, err)
	}
	_, err = s.GetFile(ctx, "file-zz")
	wantErr(t, "GetFile unknown", err, batch.ErrNotFound)
	var got []byte
	for after := 0; ; after++ {
		ps, err := s.FileParts(ctx, "file-a1", after, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 0 {
			break
		}
		got = append(got, ps[0]...)
	}
	if !bytes.Equal(got, content) {
		t.Fatalf("content read back: %d bytes, want %d, equal %v", len(got), len(content), bytes.Equal(got, content))
	}
	ids := func(fs []batch.File) string {
		var out []string
		for _, f := range fs {
			out = append(out, f.ID)
		}
		return fmt.Sprint(out)
	}
	fs, more, err := s.ListFiles(ctx, batch.FileFilter{TeamID: "team_a", Limit: 2})
	if err != nil || ids(fs) != "[file-a3 file-a2]" || !more {
		t.Fatalf("files page 1: %s %v %v", ids(fs), more, err)
	}
	fs, more, err = s.ListFiles(ctx, batch.FileFilter{TeamID: "team_a", Limit: 2, After: "file-a2"})
	if err != nil || ids(fs) != "[file-a1]" || more {
		t.Fatalf("files page 2: %s %v %v", ids(fs), more, err)
	}
	fs, _, err = s.ListFiles(ctx, batch.FileFilter{TeamID: "team_a", Ascending: true, After: "file-a1"})
	if err != nil || ids(fs) != "[file-a2 file-a3]" {
		t.Fatalf("files ascending: %s %v", ids(fs), err)
	}
	if fs, _, err = s.ListFiles(ctx, batch.FileFilter{TeamID: "team_a", Purpose: batch.PurposeBatchOutput}); err != nil || len(fs) != 0 {
		t.Fatalf("files by purpose: %s %v", ids(fs), err)
	}
	if err := s.DeleteFile(ctx, "file-a1"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "DeleteFile twice", s.DeleteFile(ctx, "file-a1"), batch.ErrNotFound)
	if ps, err := s.FileParts(ctx, "file-a1", 0, 10); err != nil || len(ps) != 0 {
		t.Fatalf("parts of a deleted file: %d %v", len(ps), err)
	}
	// An interrupted upload is purged, a recent one kept.
	for i, id := range []string{"file-old", "file-new"} {
		if err := s.CreateFile(ctx, file(id, "team_a", batch.PurposeBatch, 100*i)); err != nil {
			t.Fatal(err)
		}
		if err := s.AddFilePart(ctx, id, 1, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.PurgeUploads(ctx, at(50*time.Second)); err != nil || n != 1 {
		t.Fatalf("PurgeUploads: %d %v", n, err)
	}
	if _, err := s.GetFile(ctx, "file-old"); !errors.Is(err, batch.ErrNotFound) {
		t.Fatalf("purged upload: %v", err)
	}
	if _, err := s.GetFile(ctx, "file-new"); err != nil {
		t.Fatalf("recent upload: %v", err)
	}

	// Batches.
	mk := func(id, team string, i int) batch.Batch {
		return batch.Batch{ID: id, TeamID: team, KeyID: "key_" + team, Endpoint: "/v1/chat/completions", InputFileID: "file-a2", CompletionWindow: "24h",
			Status: batch.StatusValidating, Metadata: map[string]string{"run": id}, CreatedAt: at(time.Duration(i) * time.Minute),
			ExpiresAt: at(time.Duration(i)*time.Minute + 24*time.Hour)}
	}
	for i, id := range []string{"batch_1", "batch_2", "batch_x", "batch_3"} {
		team := "team_a"
		if id == "batch_x" {
			team = "team_b"
		}
		if err := s.CreateBatch(ctx, mk(id, team, i)); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, "CreateBatch twice", s.CreateBatch(ctx, mk("batch_1", "team_a", 0)), batch.ErrConflict)
	b, err := s.GetBatch(ctx, "batch_1")
	if err != nil || b.Status != batch.StatusValidating || b.KeyID != "key_team_a" || b.Metadata["run"] != "batch_1" || !b.ExpiresAt.Equal(at(24*time.Hour)) ||
		b.InProgressAt != nil || b.Errors != nil || b.OutputFileID != "" {
		t.Fatalf("GetBatch: %+v %v", b, err)
	}
	_, err = s.GetBatch(ctx, "batch_zz")
	wantErr(t, "GetBatch unknown", err, batch.ErrNotFound)
	bids := func(bs []batch.Batch) string {
		var out []string
		for _, b := range bs {
			out = append(out, b.ID)
		}
		return fmt.Sprint(out)
	}
	bs, more, err := s.ListBatches(ctx, "team_a", "", 2)
	if err != nil || bids(bs) != "[batch_3 batch_2]" || !more {
		t.Fatalf("batches page 1: %s %v %v", bids(bs), more, err)
	}
	bs, more, err = s.ListBatches(ctx, "team_a", "batch_2", 2)
	if err != nil || bids(bs) != "[batch_1]" || more {
		t.Fatalf("batches page 2: %s %v %v", bids(bs), more, err)
	}

	// Transitions happen only from the statuses named.
	total := 5
	ok, err = s.TransitionBatch(ctx, "batch_1", batch.Transition{From: []string{batch.StatusInProgress}, To: batch.StatusFinalizing, At: at(time.Hour)})
	if err != nil || ok {
		t.Fatalf("transition from the wrong status: %v %v", ok, err)
	}
	ok, err = s.TransitionBatch(ctx, "batch_1", batch.Transition{From: []string{batch.StatusValidating}, To: batch.StatusInProgress, At: at(time.Hour),
		Total: &total, Model: "gemma3-270m"})
	if err != nil || !ok {
		t.Fatalf("transition: %v %v", ok, err)
	}
	_, err = s.TransitionBatch(ctx, "batch_zz", batch.Transition{From: []string{batch.StatusValidating}, To: batch.StatusFailed})
	wantErr(t, "transition unknown", err, batch.ErrNotFound)
	line := 3
	if _, err := s.TransitionBatch(ctx, "batch_2", batch.Transition{From: []string{batch.StatusValidating}, To: batch.StatusFailed, At: at(time.Hour),
		Errors: []batch.LineError{{Code: "invalid_url", Message: "wrong url", Param: ptr("url"), Line: &line}}}); err != nil {
		t.Fatal(err)
	}
	if b, err := s.GetBatch(ctx, "batch_2"); err != nil || b.Status != batch.StatusFailed || len(b.Errors) != 1 || *b.Errors[0].Line != 3 ||
		*b.Errors[0].Param != "url" || b.FailedAt == nil || !b.FailedAt.Equal(at(time.Hour)) {
		t.Fatalf("failed batch: %+v %v", b, err)
	}
	if open, err := s.OpenBatches(ctx); err != nil || fmt.Sprint(open) != "[batch_1 batch_x batch_3]" {
		t.Fatalf("open batches: %v %v", open, err)
	}

	// Lines: stored once, finished once.
	var items []batch.Item
	for i := range total {
		items = append(items, batch.Item{Index: i, Line: 2*i + 1, CustomID: fmt.Sprintf("req-%d", i), Body: json.RawMessage(fmt.Sprintf(`{"model":"m","n":%d,"s":"é\n"}`, i))})
	}
	if err := s.AddItems(ctx, "batch_1", items[:3]); err != nil {
		t.Fatal(err)
	}
	changed := append([]batch.Item{}, items...)
	changed[0].CustomID = "changed"
	if err := s.AddItems(ctx, "batch_1", changed); err != nil { // again, with more
		t.Fatal(err)
	}
	pending, err := s.PendingItems(ctx, "batch_1", -1, 10)
	if err != nil || len(pending) != total || pending[0].CustomID != "req-0" || pending[4].Line != 9 || string(pending[2].Body) != string(items[2].Body) {
		t.Fatalf("pending: %+v %v", pending, err)
	}
	if p, err := s.PendingItems(ctx, "batch_1", 2, 1); err != nil || len(p) != 1 || p[0].Index != 3 {
		t.Fatalf("pending after 2: %+v %v", p, err)
	}
	res := func(i int, status, kind string) batch.Result {
		return batch.Result{Index: i, Status: status, Kind: kind, Line: fmt.Sprintf(`{"id":"r%d","é":true}`, i), InputTokens: 10, OutputTokens: 3}
	}
	// Four workers finish line 0 at once: it is recorded once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	recorded := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := s.FinishItems(ctx, "batch_1", []batch.Result{res(0, batch.LineCompleted, batch.KindOutput)})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			recorded += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if recorded != 1 {
		t.Fatalf("line 0 recorded %d times", recorded)
	}
	n, err := s.FinishItems(ctx, "batch_1", []batch.Result{res(0, batch.LineFailed, batch.KindError), res(1, batch.LineFailed, batch.KindError),
		res(3, batch.LineCompleted, batch.KindOutput)})
	if err != nil || n != 2 {
		t.Fatalf("FinishItems: %d %v", n, err)
	}
	if p, err := s.PendingItems(ctx, "batch_1", -1, 10); err != nil || len(p) != 2 || p[0].Index != 2 || p[1].Index != 4 {
		t.Fatalf("pending after finishing: %+v %v", p, err)
	}
	b, err = s.GetBatch(ctx, "batch_1")
	lineLen := int64(len(res(0, "", "").Line) + 1)
	if err != nil || b.Total != 5 || b.Completed != 2 || b.Failed != 1 || b.OutputLines != 2 || b.ErrorLines != 1 ||
		b.OutputBytes != 2*lineLen || b.ErrorBytes != lineLen || b.InputTokens != 30 || b.OutputTokens != 9 || b.Model != "gemma3-270m" ||
		b.InProgressAt == nil || !b.InProgressAt.Equal(at(time.Hour)) {
		t.Fatalf("counts: %+v %v", b, err)
	}
	lines, last, err := s.ResultLines(ctx, "batch_1", batch.KindOutput, -1, 10)
	if err != nil || fmt.Sprint(lines) != `[{"id":"r0","é":true} {"id":"r3","é":true}]` || last != 3 {
		t.Fatalf("output lines: %v %d %v", lines, last, err)
	}
	if lines, _, err := s.ResultLines(ctx, "batch_1", batch.KindOutput, 0, 10); err != nil || len(lines) != 1 {
		t.Fatalf("output lines after 0: %v %v", lines, err)
	}
	if lines, _, err := s.ResultLines(ctx, "batch_1", batch.KindError, -1, 10); err != nil || len(lines) != 1 {
		t.Fatalf("error lines: %v %v", lines, err)
	}
	// A result file names its batch and kind.
	of := batch.File{ID: batch.OutputFileID("batch_1"), TeamID: "team_a", Filename: "out.jsonl", Purpose: batch.PurposeBatchOutput, Status: batch.FileProcessed,
		Bytes: b.OutputBytes, Lines: 2, BatchID: "batch_1", Kind: batch.KindOutput, CreatedAt: at(2 * time.Hour)}
	if err := s.CreateFile(ctx, of); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetFile(ctx, of.ID); err != nil || got.BatchID != "batch_1" || got.Kind != batch.KindOutput {
		t.Fatalf("result file: %+v %v", got, err)
	}
	ok, err = s.TransitionBatch(ctx, "batch_1", batch.Transition{From: []string{batch.StatusInProgress}, To: batch.StatusCompleted, At: at(2 * time.Hour),
		OutputFileID: of.ID})
	if err != nil || !ok {
		t.Fatalf("complete: %v %v", ok, err)
	}
	if b, err := s.GetBatch(ctx, "batch_1"); err != nil || b.OutputFileID != of.ID || b.ErrorFileID != "" || b.CompletedAt == nil || b.Total != 5 {
		t.Fatalf("completed batch: %+v %v", b, err)
	}
}
