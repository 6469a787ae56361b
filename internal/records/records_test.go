package records

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/testonly"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
)

// memStore is a Store in memory; block, when set, holds appends until it
// is closed.
type memStore struct {
	mu    sync.Mutex
	recs  []Record
	block chan struct{}
}

func (m *memStore) AppendRecords(ctx context.Context, rs []Record) error {
	if m.block != nil {
		<-m.block
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := ""
	if n := len(m.recs); n > 0 {
		prev = m.recs[n-1].Hash
	}
	for _, r := range rs {
		r.Normalize()
		r.Seq, r.PrevHash, r.Hash = int64(len(m.recs)+1), prev, r.ComputeHash(prev)
		prev = r.Hash
		m.recs = append(m.recs, r)
	}
	return nil
}

func (m *memStore) ListRecords(context.Context, Filter) ([]Record, bool, error) {
	return nil, false, nil
}
func (m *memStore) GetRecord(context.Context, string, string, bool) (Record, error) {
	return Record{}, ErrNotFound
}
func (m *memStore) Usage(context.Context, Filter, string) ([]UsageRow, error) { return nil, nil }
func (m *memStore) Purge(context.Context, time.Time) (int64, error)           { return 0, nil }
func (m *memStore) Anchor(context.Context) (Anchor, error)                    { return Anchor{}, nil }
func (m *memStore) ChainRecords(ctx context.Context, from int64, fn func(Record) bool) error {
	m.mu.Lock()
	recs := append([]Record(nil), m.recs...)
	m.mu.Unlock()
	for _, r := range recs {
		if r.Seq >= from && !fn(r) {
			return nil
		}
	}
	return nil
}

type counts struct {
	mu              sync.Mutex
	dropped, failed int
}

func (c *counts) RecordsDropped(n int) { c.mu.Lock(); c.dropped += n; c.mu.Unlock() }
func (c *counts) RecordsFailed(n int)  { c.mu.Lock(); c.failed += n; c.mu.Unlock() }

// TestWriterNeverBlocksAndCountsWhatItDrops: with the store stuck, Log
// returns at once; what does not fit the buffer is counted (and marked in
// the chain by a gap marker), the rest is stored once the store moves, and
// Close waits for it.
func TestWriterNeverBlocksAndCountsWhatItDrops(t *testing.T) {
	st := &memStore{block: make(chan struct{})}
	c := &counts{}
	w := NewWriter(st, 4, c, nil)
	start := time.Now()
	for i := range 50 {
		w.Log(Record{ID: string(rune('a' + i%26)), Time: time.Now(), Status: 200})
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("Log blocked for %s", d)
	}
	close(st.block)
	w.Close()
	w.Log(Record{ID: "late"}) // after Close: counted, not a panic
	stored, marked := 0, int64(0)
	for _, r := range st.recs {
		if g, ok := ParseGap(r); ok {
			marked += g.Lost
		} else {
			stored++
		}
	}
	if int(w.Dropped.Load()) != 50+1-stored || c.dropped != 50+1-stored || stored < 4 || stored > 9 { // the buffer (4), plus what the writer took before it blocked
		t.Fatalf("stored %d, dropped %d (counted %d)", stored, w.Dropped.Load(), c.dropped)
	}
	// The losses before Close are marked in the chain; the one after it
	// cannot be.
	if marked != w.Dropped.Load()-1 {
		t.Fatalf("gap markers record %d lost records, want %d", marked, w.Dropped.Load()-1)
	}
	if n, br, err := Verify(context.Background(), st); err != nil || br != nil || n != len(st.recs) {
		t.Fatalf("verify: %d %v %v", n, br, err)
	}
}

// TestVerifyNamesTheFirstBreak changes one record's field, then another's
// link, and checks the break each time.
func TestVerifyNamesTheFirstBreak(t *testing.T) {
	st := &memStore{}
	var batch []Record
	for i := range 5 {
		batch = append(batch, Record{ID: string(rune('a' + i)), Time: time.Now(), Status: 200, PromptTokens: i})
	}
	st.AppendRecords(context.Background(), batch)
	st.recs[2].PromptTokens = 99
	if _, br, _ := Verify(context.Background(), st); br == nil || br.Seq != 3 {
		t.Fatalf("changed field: %+v", br)
	}
	st.recs[2].PromptTokens = 2
	st.recs = append(st.recs[:1], st.recs[2:]...)
	if _, br, _ := Verify(context.Background(), st); br == nil || br.Seq != 3 {
		t.Fatalf("removed record: %+v", br)
	}
}

// TestInclusionProofs proves every record of logs of several sizes and
// checks each proof with the library's verifier; a proof for another leaf
// or a changed root fails.
func TestInclusionProofs(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 8, 13} {
		st := &memStore{}
		var batch []Record
		for i := range n {
			batch = append(batch, Record{ID: string(rune('a' + i)), Time: time.Now(), Status: 200, PromptTokens: i})
		}
		st.AppendRecords(context.Background(), batch)
		// The library's reference tree over the same leaves.
		ref := testonly.New(Hasher)
		for _, r := range st.recs {
			h, _ := hex.DecodeString(r.Hash)
			ref.AppendData(h)
		}
		for _, r := range st.recs {
			in, err := Prove(context.Background(), st, r.Seq)
			if in.Root != hex.EncodeToString(ref.Hash()) {
				t.Fatalf("n=%d: root %s, reference %x", n, in.Root, ref.Hash())
			}
			if err != nil || in.TreeSize != uint64(n) {
				t.Fatalf("n=%d seq %d: %+v %v", n, r.Seq, in, err)
			}
			if err := VerifyInclusion(in); err != nil {
				t.Fatalf("n=%d seq %d: %v", n, r.Seq, err)
			}
			if n > 1 {
				bad := in
				bad.LeafIndex = (in.LeafIndex + 1) % uint64(n)
				if VerifyInclusion(bad) == nil {
					t.Fatalf("n=%d: a proof verified for the wrong leaf", n)
				}
			}
		}
	}
	if _, err := Prove(context.Background(), &memStore{}, 5); err != ErrNotFound {
		t.Fatalf("no such record: %v", err)
	}
}

// TestPurgerPurgesWhatElseRecordsKeep: the retention also purges the other
// records it is given (policy decisions), with the same cut.
func TestPurgerPurgesWhatElseRecordsKeep(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cut := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(context.Background())
	p := &Purger{Store: purgeOnly{}, Retention: time.Hour, Every: time.Hour, Log: slog.Default(), Now: func() time.Time { return now },
		Also: []Purge{{What: "decisions", Purge: func(_ context.Context, before time.Time) (int64, error) {
			cut <- before
			cancel()
			return 1, nil
		}}}}
	p.Run(ctx)
	if got := <-cut; !got.Equal(now.Add(-time.Hour)) {
		t.Fatalf("decisions purged before %v, want %v", got, now.Add(-time.Hour))
	}
}

// purgeOnly is a Store whose purge removes nothing.
type purgeOnly struct{ Store }

func (purgeOnly) Purge(context.Context, time.Time) (int64, error) { return 0, nil }

// TestReaderScopesToTheCallersTeam: a key reads its own team's records
// whatever team the filter names; an admin key reads every team's, or the
// one it names; another team's record is not found.
func TestReaderScopesToTheCallersTeam(t *testing.T) {
	member := auth.Key{ID: "key_m", TeamID: "team_a", Scopes: []auth.Scope{auth.ScopeRecordsRead}}
	admin := auth.Key{ID: "key_x", TeamID: "team_x", Scopes: []auth.Scope{auth.ScopeAdmin}}
	for _, c := range []struct {
		key      auth.Key
		in       Filter
		team     string
		allTeams bool
		err      error
	}{
		{member, Filter{}, "team_a", false, nil},
		{member, Filter{TeamID: "team_a"}, "team_a", false, nil},
		{member, Filter{TeamID: "team_b"}, "", false, ErrOtherTeams},
		{member, Filter{AllTeams: true}, "team_a", false, nil},
		{admin, Filter{}, "", true, nil},
		{admin, Filter{TeamID: "team_b"}, "team_b", false, nil},
	} {
		got, err := scope(c.key, c.in)
		if !errors.Is(err, c.err) || err == nil && (got.TeamID != c.team || got.AllTeams != c.allTeams) {
			t.Errorf("%s with %+v: %+v %v", c.key.ID, c.in, got, err)
		}
	}
}

// apiStore answers as the SQL store does: an unknown cursor or record is
// ErrNotFound wrapped naming it, and it keeps no checkpoint but
// checkpoint 1 (records 1–2).
type apiStore struct{ memStore }

func (s *apiStore) ListRecords(_ context.Context, f Filter) ([]Record, bool, error) {
	return nil, false, apierr.Wrapf(ErrNotFound, "no record %q", f.After)
}
func (s *apiStore) GetRecord(_ context.Context, _, id string, _ bool) (Record, error) {
	if id != "req_5" {
		return Record{}, apierr.Wrapf(ErrNotFound, "no record %q", id)
	}
	return Record{ID: id, Seq: 5}, nil
}
func (s *apiStore) AddCheckpoint(context.Context, *StoredCheckpoint) error { return nil }
func (s *apiStore) ListCheckpoints(context.Context, int) ([]StoredCheckpoint, error) {
	return nil, nil
}
func (s *apiStore) GetCheckpoint(_ context.Context, id int64) (StoredCheckpoint, error) {
	if id != 1 {
		return StoredCheckpoint{}, apierr.Wrapf(ErrNotFound, "no checkpoint %d", id)
	}
	return StoredCheckpoint{ID: 1, FirstSeq: 1, LastSeq: 2}, nil
}

// TestReaderErrorsForClients: the reader's errors are the API's, with the
// parameter at fault where a missing record means a bad request (a cursor,
// a checkpoint) rather than a missing resource.
func TestReaderErrorsForClients(t *testing.T) {
	ctx := context.Background()
	member := auth.Key{ID: "key_m", TeamID: "team_a", Scopes: []auth.Scope{auth.ScopeRecordsRead}}
	r := Reader{Store: &apiStore{}}
	want := func(what string, err error, status int, param, msg string) {
		t.Helper()
		e := apierr.From(err)
		if e.Status() != status || e.Param != param || e.Message != msg {
			t.Errorf("%s: %d %q %q, want %d %q %q", what, e.Status(), e.Param, e.Message, status, param, msg)
		}
	}
	_, _, err := r.List(ctx, member, Filter{After: "req_x"})
	want("unknown cursor", err, 400, "after", `no record "req_x" to continue after`)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown cursor: %v, want ErrNotFound", err)
	}
	_, _, err = r.List(ctx, member, Filter{TeamID: "team_b"})
	want("another team", err, 400, "team_id", "only an admin key reads other teams' records")
	_, err = r.Get(ctx, member, "req_x")
	want("unknown record", err, 404, "", `no record "req_x"`)
	_, err = r.Checkpoint(ctx, 9)
	want("unknown checkpoint", err, 400, "checkpoint", "no checkpoint 9")
	c, err := r.Checkpoint(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = r.Prove(ctx, member, "req_5", &c)
	want("outside the checkpoint", err, 400, "checkpoint", "record 5 is not in checkpoint 1 (records 1–2)")
	_, _, err = r.Prove(ctx, member, "req_x", &c)
	want("proof of an unknown record", err, 404, "", `no record "req_x"`)

	// A store without checkpoints: the list is missing, and a checkpoint
	// named is the parameter's fault.
	plain := Reader{Store: &memStore{}}
	_, err = plain.Checkpoints(ctx, 10)
	want("no checkpoints", err, 404, "", "this server keeps no checkpoints")
	_, err = plain.Checkpoint(ctx, 1)
	want("a checkpoint without checkpoints", err, 400, "checkpoint", "'checkpoint' must be a checkpoint id (GET /v1/logs/checkpoints)")
	if !errors.Is(err, ErrNoCheckpoints) {
		t.Errorf("a checkpoint without checkpoints: %v, want ErrNoCheckpoints", err)
	}
}
