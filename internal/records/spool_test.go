package records

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

func rec(i int) Record {
	return Record{ID: fmt.Sprintf("req_%04d", i), Time: time.Date(2026, 1, 2, 3, 4, 5, i*1000, time.UTC), Route: "POST /v1/chat/completions",
		Status: 200, PromptTokens: i, LatencyMs: float64(i) / 3}
}

func recs(from, to int) []Record {
	var out []Record
	for i := from; i < to; i++ {
		out = append(out, rec(i))
	}
	return out
}

func ids(rs []Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func openSpool(t *testing.T, dir string, limit int64) *Spool {
	t.Helper()
	s, cut, err := OpenSpool(dir, limit)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cut {
		t.Logf("cut: %s", c)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// segments lists the spool's segment files, oldest first.
func segments(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+segSuffix))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(m)
	return m
}

// peekAll reads the whole spool without taking it.
func peekAll(t *testing.T, s *Spool) []Record {
	t.Helper()
	rs, dropped, err := s.Peek(1 << 30)
	if err != nil || dropped != 0 {
		t.Fatalf("peek: %d dropped, %v", dropped, err)
	}
	return rs
}

// TestSpoolKeepsRecordsAcrossReopen: what is appended is read back in
// order, whole (every field), after a reopen too; Advance takes records
// from the front, deleting segments it empties, and the files go once
// nothing is left.
func TestSpoolKeepsRecordsAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, 128<<10) // 16 KiB segments: several
	ttft := 12.25
	first := rec(0)
	first.TTFTMs, first.Prompt, first.Output, first.User = &ttft, "héllo", "wörld", "u"
	first.Seq, first.PrevHash, first.Hash = 9, "aa", "bb" // not kept: the store chains it
	if n, err := s.Append([]Record{first}); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	for i := 1; i < 200; i += 20 {
		if n, err := s.Append(recs(i, i+20)); n != 20 || err != nil {
			t.Fatal(n, err)
		}
	}
	if len(segments(t, dir)) < 3 {
		t.Fatalf("want several segments, have %v", segments(t, dir))
	}
	s.Close()
	s = openSpool(t, dir, 128<<10)
	got := peekAll(t, s)
	if s.Len() != 201 || len(got) != 201 {
		t.Fatalf("after reopen: %d records, read %d", s.Len(), len(got))
	}
	g := got[0]
	if g.ID != first.ID || !g.Time.Equal(first.Time) || *g.TTFTMs != ttft || g.Prompt != "héllo" || g.Output != "wörld" || g.Seq != 0 || g.Hash != "" || g.PrevHash != "" ||
		g.ComputeHash("x") != first.ComputeHash("x") {
		t.Fatalf("first record read back: %+v", g)
	}
	if !slices.Equal(ids(got[1:]), ids(recs(1, 201))) {
		t.Fatalf("order: %v", ids(got))
	}
	// Take some from the front: the rest is what is read.
	if err := s.Advance(77); err != nil {
		t.Fatal(err)
	}
	if rest := peekAll(t, s); s.Len() != 124 || !slices.Equal(ids(rest), ids(recs(77, 201))) {
		t.Fatalf("after advancing 77: %d %v", s.Len(), ids(rest))
	}
	// Appends after a reopen go on behind.
	s.Close()
	s = openSpool(t, dir, 128<<10)
	// A reopen reads the front segment from its start again (the writer
	// skips what the store holds): the records not taken, and perhaps a
	// few before them, in order.
	again := peekAll(t, s)
	if s.Len() < 124 || s.Len() >= 201 || !slices.Equal(ids(again[len(again)-124:]), ids(recs(77, 201))) ||
		!slices.Equal(ids(again), ids(recs(201-len(again), 201))) {
		t.Fatalf("after a reopen: %d %v", s.Len(), ids(again))
	}
	before := s.Len()
	s.Append(recs(500, 503))
	all := peekAll(t, s)
	if s.Len() != before+3 || !slices.Equal(ids(all[len(all)-3:]), ids(recs(500, 503))) {
		t.Fatalf("append after reopen: %v", ids(all))
	}
	bytesBefore := s.Bytes()
	if err := s.Advance(s.Len()); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 0 || s.Bytes() != 0 || len(segments(t, dir)) != 0 || bytesBefore == 0 {
		t.Fatalf("emptied: %d records, %d bytes, %v", s.Len(), s.Bytes(), segments(t, dir))
	}
	if n, err := s.Append(recs(600, 601)); n != 1 || err != nil || s.Len() != 1 {
		t.Fatalf("append to an emptied spool: %d %v", n, err)
	}
}

// TestSpoolCutsTornWrites: a segment cut mid-frame (a crash during the
// write), a flipped checksum byte, a flipped payload byte, a length
// beyond the file and a segment torn in its header are cut on open,
// never read as records: what comes before them is kept, in order.
func TestSpoolCutsTornWrites(t *testing.T) {
	// One segment of 5 frames; frame i starts at offs[i].
	build := func(t *testing.T) (string, []int64, int64) {
		dir := t.TempDir()
		s := openSpool(t, dir, 1<<20)
		for i := range 5 {
			s.Append(recs(i, i+1))
		}
		s.Close()
		seg := segments(t, dir)[0]
		data, _ := os.ReadFile(seg)
		var offs []int64
		off := int64(len(spoolMagic))
		for off < int64(len(data)) {
			offs = append(offs, off)
			_, size, ok := readFrame(data[off:])
			if !ok {
				t.Fatal("a fresh frame does not verify")
			}
			off += int64(size)
		}
		if len(offs) != 5 {
			t.Fatalf("%d frames", len(offs))
		}
		return dir, offs, int64(len(data))
	}
	flip := func(t *testing.T, path string, at int64) {
		data, _ := os.ReadFile(path)
		data[at] ^= 0x40
		os.WriteFile(path, data, 0o600)
	}
	for _, c := range []struct {
		name string
		harm func(t *testing.T, seg string, offs []int64, size int64)
		keep int
	}{
		{"cut mid-payload", func(t *testing.T, seg string, offs []int64, size int64) { os.Truncate(seg, offs[4]+frameHead+3) }, 4},
		{"cut mid-header", func(t *testing.T, seg string, offs []int64, size int64) { os.Truncate(seg, offs[3]+5) }, 3},
		{"cut one byte short", func(t *testing.T, seg string, offs []int64, size int64) { os.Truncate(seg, size-1) }, 4},
		{"flipped checksum", func(t *testing.T, seg string, offs []int64, size int64) { flip(t, seg, offs[2]+5) }, 2},
		{"flipped payload", func(t *testing.T, seg string, offs []int64, size int64) { flip(t, seg, offs[1]+frameHead+10) }, 1},
		{"flipped length", func(t *testing.T, seg string, offs []int64, size int64) { flip(t, seg, offs[0]+3) }, 0},
		{"garbage appended", func(t *testing.T, seg string, offs []int64, size int64) {
			f, _ := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
			f.Write(bytes.Repeat([]byte{0xff}, 100))
			f.Close()
		}, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, offs, size := build(t)
			seg := segments(t, dir)[0]
			c.harm(t, seg, offs, size)
			s, cut, err := OpenSpool(dir, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := peekAll(t, s)
			if s.Len() != c.keep || !slices.Equal(ids(got), ids(recs(0, c.keep))) {
				t.Fatalf("kept %d %v, want %d", s.Len(), ids(got), c.keep)
			}
			if c.keep < 5 || c.name == "garbage appended" {
				if len(cut) != 1 {
					t.Fatalf("cut: %v", cut)
				}
			}
			if c.keep > 0 {
				if fi, err := os.Stat(seg); err != nil || fi.Size() != offs[c.keep-1]+int64(len(mustEncode(t, rec(c.keep-1))))+frameHead {
					t.Fatalf("segment not cut after the last good frame: %v %v", fi.Size(), err)
				}
			} else if _, err := os.Stat(seg); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a segment with no good frame is removed: %v", err)
			}
			// Appends go on after the cut.
			s.Append(recs(9, 10))
			if got := peekAll(t, s); !slices.Equal(ids(got), append(ids(recs(0, c.keep)), "req_0009")) {
				t.Fatalf("after an append: %v", ids(got))
			}
		})
	}
	t.Run("torn segment header", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d%s", 7, segSuffix)), []byte(spoolMagic[:3]), 0o600)
		s := openSpool(t, dir, 1<<20)
		if s.Len() != 0 || len(segments(t, dir)) != 0 {
			t.Fatalf("a torn header: %d records, %v", s.Len(), segments(t, dir))
		}
		s.Append(recs(0, 1))
		if segs := segments(t, dir); len(segs) != 1 || !strings.HasSuffix(segs[0], "00000000000000000008.spool") {
			t.Fatalf("segments after a torn one: %v", segs)
		}
	})
	t.Run("not a segment", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d%s", 1, segSuffix)), []byte("something else entirely"), 0o600)
		if _, _, err := OpenSpool(dir, 1<<20); err == nil || !strings.Contains(err.Error(), "not a spool segment") {
			t.Fatalf("a foreign file: %v", err)
		}
	})
	t.Run("damage found by a read", func(t *testing.T) {
		// A frame that verified on open and was damaged since: Peek drops
		// its segment's records from it on and says how many.
		dir, offs, _ := build(t)
		s := openSpool(t, dir, 1<<20)
		s.Append(recs(5, 7)) // a second segment: appends after a reopen start one
		flip(t, segments(t, dir)[0], offs[3]+frameHead+2)
		rs, dropped, err := s.Peek(100)
		if err != nil || dropped != 2 || !slices.Equal(ids(rs), ids(append(recs(0, 3), recs(5, 7)...))) || s.Len() != 5 {
			t.Fatalf("peek over damage: %v dropped %d, %v, len %d", ids(rs), dropped, err, s.Len())
		}
	})
}

func mustEncode(t *testing.T, r Record) []byte {
	b, err := encodeSpooled(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSpoolIsBounded: an append takes the records that fit, from the
// first, and ErrSpoolFull for the rest; the files never exceed the bound.
func TestSpoolIsBounded(t *testing.T) {
	dir := t.TempDir()
	const limit = 16 << 10
	s := openSpool(t, dir, limit)
	total := 0
	for i := 0; ; i += 10 {
		n, err := s.Append(recs(i, i+10))
		total += n
		if err != nil {
			if !errors.Is(err, ErrSpoolFull) || n == 10 {
				t.Fatalf("append %d: %d %v", i, n, err)
			}
			break
		}
	}
	var size int64
	for _, seg := range segments(t, dir) {
		fi, _ := os.Stat(seg)
		size += fi.Size()
	}
	if size != s.Bytes() || size > limit || size < limit-1024 || s.Len() != total {
		t.Fatalf("%d bytes on disk, %d counted, %d records (%d)", size, s.Bytes(), s.Len(), total)
	}
	if n, err := s.Append(recs(9000, 9001)); n != 0 || !errors.Is(err, ErrSpoolFull) {
		t.Fatalf("append to a full spool: %d %v", n, err)
	}
	// Taking records frees room once a segment empties.
	s.Advance(s.Len() / 2)
	if n, err := s.Append(recs(9000, 9001)); n != 1 || err != nil {
		t.Fatalf("append after taking half: %d %v", n, err)
	}
	if _, _, err := OpenSpool(dir, limit); err == nil {
		t.Fatal("a second server opened the same spool")
	}
}

// flakyStore is a memStore that fails appends while down (committing
// first when commitThenFail: an append that times out after its commit),
// and finds records by id (the stores' RecordFinder; byID false: only
// GetRecord, an id's newest).
type flakyStore struct {
	memStore
	down           atomic.Bool
	commitThenFail atomic.Bool
	byID           bool
	appends        atomic.Int64
	failAppend     func(rs []Record) error // refuses some records for themselves
}

var errDown = errors.New("connection refused")

func (f *flakyStore) AppendRecords(ctx context.Context, rs []Record) error {
	f.appends.Add(1)
	if f.down.Load() {
		return errDown
	}
	if f.failAppend != nil {
		if err := f.failAppend(rs); err != nil {
			return err
		}
	}
	err := f.memStore.AppendRecords(ctx, rs)
	if err == nil && f.commitThenFail.Load() {
		return context.DeadlineExceeded
	}
	return err
}

func (f *flakyStore) GetRecord(_ context.Context, _, id string, _ bool) (Record, error) {
	if f.down.Load() {
		return Record{}, errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.recs) - 1; i >= 0; i-- {
		if f.recs[i].ID == id {
			return f.recs[i], nil
		}
	}
	return Record{}, ErrNotFound
}

// finder is a flakyStore with RecordsByID.
type finder struct{ *flakyStore }

func (f finder) RecordsByID(_ context.Context, ids []string) ([]Record, error) {
	if f.down.Load() {
		return nil, errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Record
	for _, r := range f.recs {
		if slices.Contains(ids, r.ID) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *flakyStore) stored() (calls []string, gaps []Gap) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.recs {
		if g, ok := ParseGap(r); ok {
			gaps = append(gaps, g)
		} else {
			calls = append(calls, r.ID)
		}
	}
	return calls, gaps
}

// spoolCounts is Counters and SpoolCounters.
type spoolCounts struct {
	counts
	mu2            sync.Mutex
	lost           map[string]int
	replayed       int
	spooled        int
	spooledBytes   int64
	spooledChanges int
}

func (c *spoolCounts) RecordsLost(reason string, n int) {
	c.mu2.Lock()
	defer c.mu2.Unlock()
	if c.lost == nil {
		c.lost = map[string]int{}
	}
	c.lost[reason] += n
}
func (c *spoolCounts) RecordsReplayed(n int) { c.mu2.Lock(); c.replayed += n; c.mu2.Unlock() }
func (c *spoolCounts) RecordsSpooled(n int, b int64) {
	c.mu2.Lock()
	c.spooled, c.spooledBytes = n, b
	c.spooledChanges++
	c.mu2.Unlock()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// logAll logs rs in bursts, pausing so that the writer takes several
// batches.
func logAll(w *Writer, rs []Record) {
	for i, r := range rs {
		w.Log(r)
		if i%37 == 36 {
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// TestWriterSpoolsThroughAnOutage: the store fails, then recovers; every
// record ends up stored exactly once, in the order it was logged (those
// logged during the outage behind the spool, and those logged after it
// too), with no gap; commits the store reported as failures are not
// stored twice; the metrics saw it.
func TestWriterSpoolsThroughAnOutage(t *testing.T) {
	for _, c := range []struct {
		name     string
		byID     bool
		commitOK bool
	}{{"RecordsByID", true, false}, {"GetRecord", false, false}, {"commits reported as failures", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			fs := &flakyStore{byID: c.byID}
			var st Store = fs
			if c.byID {
				st = finder{fs}
			}
			cnt := &spoolCounts{}
			w, err := OpenWriter(st, WriterConfig{Counters: cnt, SpoolDir: t.TempDir(), SpoolBytes: 1 << 20, ReplayEvery: 20 * time.Millisecond, Instance: "test:1"})
			if err != nil {
				t.Fatal(err)
			}
			logAll(w, recs(0, 100))
			waitFor(t, "the first records stored", func() bool { calls, _ := fs.stored(); return len(calls) == 100 })
			if c.commitOK {
				fs.commitThenFail.Store(true) // appends commit, then say they failed
			} else {
				fs.down.Store(true)
			}
			logAll(w, recs(100, 700))
			waitFor(t, "records spooled", func() bool { n, _ := w.Spooled(); return n > 0 || c.commitOK })
			if w.Accepting() != nil {
				t.Fatalf("refusing with an empty spool: %v", w.Accepting())
			}
			fs.down.Store(false)
			fs.commitThenFail.Store(false)
			logAll(w, recs(700, 1000))
			waitFor(t, "the spool replayed", func() bool { calls, _ := fs.stored(); return len(calls) == 1000 })
			w.Close()
			calls, gaps := fs.stored()
			if !slices.Equal(calls, ids(recs(0, 1000))) || len(gaps) != 0 {
				t.Fatalf("stored %d records (%d gaps), in order: %v", len(calls), len(gaps), slices.Equal(calls, ids(recs(0, 1000))))
			}
			if n, br, err := Verify(context.Background(), fs); err != nil || br != nil || n != 1000 {
				t.Fatalf("verify: %d %v %v", n, br, err)
			}
			if w.Dropped.Load() != 0 || w.Failed.Load() != 0 || cnt.failed != 0 || cnt.spooled != 0 || cnt.spooledBytes != 0 {
				t.Fatalf("lost %d/%d, spool gauge %d records %d bytes", w.Dropped.Load(), w.Failed.Load(), cnt.spooled, cnt.spooledBytes)
			}
			if !c.commitOK && (w.Replayed.Load() == 0 || cnt.replayed != int(w.Replayed.Load()) || cnt.spooledChanges == 0) {
				t.Fatalf("replayed %d (counted %d)", w.Replayed.Load(), cnt.replayed)
			}
		})
	}
}

// TestWriterReplaysWhatAPreviousRunSpooled: a writer closed while the
// store is down leaves its records spooled (fsynced); the next one,
// started with the store back, replays them before its own — also when
// the previous one had stored part of a replay without taking it from the
// spool (a crash between the store's commit and the spool's advance):
// nothing twice, nothing lost.
func TestWriterReplaysWhatAPreviousRunSpooled(t *testing.T) {
	dir := t.TempDir()
	fs := &flakyStore{}
	fs.down.Store(true)
	w, err := OpenWriter(finder{fs}, WriterConfig{SpoolDir: dir, SpoolBytes: 1 << 20, ReplayEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	logAll(w, recs(0, 300))
	w.Close()
	if calls, _ := fs.stored(); len(calls) != 0 {
		t.Fatalf("stored while down: %d", len(calls))
	}
	// A crash mid-replay: the first 40 stored, the spool not advanced.
	s := openSpool(t, dir, 1<<20)
	if s.Len() != 300 {
		t.Fatalf("spooled %d", s.Len())
	}
	first, _, _ := s.Peek(40)
	fs.down.Store(false)
	fs.memStore.AppendRecords(context.Background(), first)
	s.Close()
	// A client reused an id the spool holds, with another call: it is not
	// the spooled record, which is stored all the same.
	other := rec(50)
	other.Status = 404
	fs.memStore.AppendRecords(context.Background(), []Record{other})

	w, err = OpenWriter(finder{fs}, WriterConfig{SpoolDir: dir, SpoolBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	logAll(w, recs(300, 320))
	waitFor(t, "the replay", func() bool { calls, _ := fs.stored(); return len(calls) == 321 })
	w.Close()
	calls, _ := fs.stored()
	want := append(append(ids(recs(0, 40)), "req_0050"), ids(recs(40, 320))...)
	if !slices.Equal(calls, want) {
		t.Fatalf("stored %v", calls)
	}
	if left := segments(t, dir); len(left) != 0 {
		t.Fatalf("the spool's files after the replay: %v", left)
	}
}

// TestWriterWhenTheSpoolIsFull: with the store down and the spool full,
// "drop" loses records (counted spool_full) and never refuses; "refuse"
// refuses calls (503 request_log_unavailable, Retry-After) before the
// spool is quite full, and the records of the calls still running fit.
// Once the store is back, every spooled record is stored in order, the
// refusal ends, and a gap marker records what was lost.
func TestWriterWhenTheSpoolIsFull(t *testing.T) {
	for _, mode := range []string{SpoolFullDrop, SpoolFullRefuse} {
		t.Run(mode, func(t *testing.T) {
			fs := &flakyStore{}
			fs.down.Store(true)
			cnt := &spoolCounts{}
			w, err := OpenWriter(finder{fs}, WriterConfig{Counters: cnt, SpoolDir: t.TempDir(), SpoolBytes: 32 << 10, SpoolFull: mode,
				ReplayEvery: 10 * time.Millisecond, Instance: "host:8080"})
			if err != nil {
				t.Fatal(err)
			}
			// Log as a server would (a refused call's record is logged
			// too), a few records at a time, each few taken by the writer
			// before the next.
			refused, logged := 0, 0
			lostAtRefusal := int64(-1)
			for i := 0; i < 400; i++ {
				if err := w.Accepting(); err != nil {
					e := apierr.From(err)
					if mode == SpoolFullDrop || e.Code != apierr.RequestLogUnavailable || e.Status() != 503 || e.RetryAfter <= 0 {
						t.Fatalf("refusal: %v %d %s", e.Code, e.Status(), e.RetryAfter)
					}
					if refused == 0 {
						lostAtRefusal = w.SpoolFull.Load()
					}
					refused++
				}
				w.Log(rec(i))
				logged++
				if i%5 == 4 {
					waitFor(t, "the writer", func() bool {
						n, _ := w.Spooled()
						return int64(n)+w.SpoolFull.Load() == int64(logged)
					})
				}
			}
			lost := w.SpoolFull.Load()
			cnt.mu2.Lock()
			counted := cnt.lost[LostSpoolFull]
			cnt.mu2.Unlock()
			if lost == 0 || counted != int(lost) {
				t.Fatalf("%s: %d lost (counted %d)", mode, lost, counted)
			}
			switch mode {
			case SpoolFullDrop:
				if refused != 0 {
					t.Fatalf("drop: %d refused", refused)
				}
			case SpoolFullRefuse:
				// Refused before the first record was lost: the calls
				// under way had room.
				if refused == 0 || lostAtRefusal != 0 {
					t.Fatalf("refuse: %d refused, %d lost when the first was", refused, lostAtRefusal)
				}
			}
			spooled, size := w.Spooled()
			if size > 32<<10 {
				t.Fatalf("%d bytes spooled", size)
			}
			fs.down.Store(false)
			waitFor(t, "the replay", func() bool { n, _ := w.Spooled(); return w.Accepting() == nil && n == 0 })
			w.Log(rec(1000))
			w.Close()
			calls, gaps := fs.stored()
			if len(calls) != spooled+1 || !slices.IsSorted(calls) {
				t.Fatalf("stored %d of %d spooled, in order: %v", len(calls), spooled, slices.IsSorted(calls))
			}
			var marked int64
			for _, g := range gaps {
				marked += g.Lost
				if g.Replica != "host:8080" || g.Reasons[LostSpoolFull] != g.Lost || g.First.After(g.Last) {
					t.Fatalf("gap: %+v", g)
				}
			}
			if marked != lost {
				t.Fatalf("gap markers record %d lost, %d were", marked, lost)
			}
			rep, err := VerifyReport(context.Background(), fs)
			if err != nil || rep.Break != nil || rep.Lost != lost || rep.GapCount != len(gaps) {
				t.Fatalf("verify: %+v %v", rep, err)
			}
		})
	}
}

// TestWriterDropsARecordTheStoreRefusesForItself: a record the store
// refuses whatever the moment (PostgreSQL refuses a NUL in text) does not
// hold the log in the spool: the replay narrows down to it, sees the
// store take the next record, and drops it, counted and marked.
func TestWriterDropsARecordTheStoreRefusesForItself(t *testing.T) {
	fs := &flakyStore{failAppend: func(rs []Record) error {
		for _, r := range rs {
			if r.User == "\x00" {
				return errors.New("invalid byte sequence for encoding UTF8: 0x00")
			}
		}
		return nil
	}}
	w, err := OpenWriter(finder{fs}, WriterConfig{SpoolDir: t.TempDir(), SpoolBytes: 1 << 20, ReplayEvery: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	all := recs(0, 40)
	all[17].User = "\x00"
	for _, r := range all {
		w.Log(r)
	}
	waitFor(t, "the other records stored", func() bool { calls, _ := fs.stored(); return len(calls) == 39 })
	w.Log(rec(40))
	w.Close()
	calls, gaps := fs.stored()
	want := slices.Delete(ids(recs(0, 41)), 17, 18)
	if !slices.Equal(calls, want) || len(gaps) != 1 || gaps[0].Lost != 1 || gaps[0].Reasons[LostStoreError] != 1 || w.Failed.Load() != 1 {
		t.Fatalf("stored %v, gaps %+v, failed %d", calls, gaps, w.Failed.Load())
	}
}

// TestWriterWithoutSpoolMarksWhatTheStoreRefused: with no spool, a batch
// the store refuses is lost as before (store_error), and the next records
// stored carry a gap marker for it.
func TestWriterWithoutSpoolMarksWhatTheStoreRefused(t *testing.T) {
	fs := &flakyStore{}
	c := &counts{}
	w := NewWriter(fs, 0, c, nil)
	fs.down.Store(true)
	w.Log(rec(0))
	w.Log(rec(1))
	waitFor(t, "the batch refused", func() bool { return w.Failed.Load() == 2 })
	if w.Accepting() != nil {
		t.Fatal("a writer without a spool refuses")
	}
	fs.down.Store(false)
	w.Log(rec(2))
	w.Close()
	calls, gaps := fs.stored()
	if !slices.Equal(calls, []string{"req_0002"}) || len(gaps) != 1 || gaps[0].Lost != 2 || gaps[0].Reasons[LostStoreError] != 2 ||
		!gaps[0].First.Equal(rec(0).Time) || !gaps[0].Last.Equal(rec(1).Time) || c.failed != 2 {
		t.Fatalf("stored %v, gaps %+v, counted %d", calls, gaps, c.failed)
	}
	// The marker is a record like any: listed by GET /v1/logs as such.
	var m Record
	fs.ChainRecords(context.Background(), 0, func(r Record) bool { m = r; return !r.IsGap() })
	if m.Route != GapRoute || m.ErrorCode != GapErrorCode || m.Status != 0 || !strings.HasPrefix(m.ID, "gap_") || m.LatencyMs != 1e-3 ||
		m.TeamID != "" || m.Hash != m.ComputeHash(m.PrevHash) {
		t.Fatalf("marker: %+v", m)
	}
}

// FuzzSpoolRead feeds arbitrary bytes to the spool's frame reader, as a
// segment's body and as a file on disk: it never panics, never reads a
// frame that does not verify, cuts exactly at the first bad frame (what
// it keeps reads back the same, and a frame appended after it is found),
// and a spool opened on the file holds what the reader found.
func FuzzSpoolRead(f *testing.F) {
	var valid []byte
	for i := range 3 {
		p, _ := encodeSpooled(rec(i))
		valid = appendFrame(valid, p)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-3])
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Add(appendFrame(nil, []byte(`{"id":"x"}`)))
	f.Add(appendFrame(nil, []byte(`not json`)))
	extra, _ := encodeSpooled(rec(99))
	f.Fuzz(func(t *testing.T, data []byte) {
		isRecord := func(p []byte) bool {
			var r Record
			return json.Unmarshal(p, &r) == nil
		}
		n, good := scanFrames(data, isRecord)
		if good < 0 || good > int64(len(data)) || (n == 0) != (good == 0) {
			t.Fatalf("%d frames in %d of %d bytes", n, good, len(data))
		}
		// Each frame kept verifies on its own.
		for off := int64(0); off < good; {
			p, size, ok := readFrame(data[off:])
			if !ok || !isRecord(p) {
				t.Fatalf("a kept frame at %d does not verify", off)
			}
			off += int64(size)
		}
		if n2, good2 := scanFrames(data[:good], isRecord); n2 != n || good2 != good {
			t.Fatalf("the kept prefix reads as %d/%d, not %d/%d", n2, good2, n, good)
		}
		more := appendFrame(slices.Clone(data[:good]), extra)
		if n3, good3 := scanFrames(more, isRecord); n3 != n+1 || good3 != int64(len(more)) {
			t.Fatalf("a frame appended after the kept prefix: %d/%d", n3, good3)
		}
		// The same bytes as a segment on disk.
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d%s", 1, segSuffix)), append([]byte(spoolMagic), data...), 0o600)
		s, _, err := OpenSpool(dir, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rs, dropped, err := s.Peek(n + 1)
		if s.Len() != n || len(rs) != n || dropped != 0 || err != nil {
			t.Fatalf("spool: %d records, read %d, dropped %d, %v; the reader found %d", s.Len(), len(rs), dropped, err, n)
		}
	})
}

// TestWriterSpoolsItsLastGapMarkerAtClose: a writer closed while the
// store is down and its spool full spools the marker of what it lost
// (past the bound: a few hundred bytes), so that the next start, with
// the store back, puts the loss into the chain.
func TestWriterSpoolsItsLastGapMarkerAtClose(t *testing.T) {
	dir := t.TempDir()
	fs := &flakyStore{}
	fs.down.Store(true)
	w, err := OpenWriter(finder{fs}, WriterConfig{SpoolDir: dir, SpoolBytes: 8 << 10, SpoolFull: SpoolFullDrop, ReplayEvery: time.Hour, Instance: "a:1"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		w.Log(rec(i))
		if i%10 == 9 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	w.Close()
	lost := w.SpoolFull.Load()
	spooled, _ := w.Spooled()
	if lost == 0 {
		t.Fatal("nothing lost")
	}
	fs.down.Store(false)
	w, err = OpenWriter(finder{fs}, WriterConfig{SpoolDir: dir, SpoolBytes: 8 << 10, Instance: "a:2"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the replay", func() bool { n, _ := w.Spooled(); return n == 0 })
	w.Close()
	calls, gaps := fs.stored()
	var marked int64
	for _, g := range gaps {
		marked += g.Lost
		if g.Replica != "a:1" {
			t.Errorf("gap from %q", g.Replica)
		}
	}
	if marked != lost || len(calls)+len(gaps) != spooled || int64(len(calls))+lost != 100 || !slices.IsSorted(calls) {
		t.Fatalf("%d stored, %d spooled, %d lost, %d marked in %d gaps", len(calls), spooled, lost, marked, len(gaps))
	}
}

// TestWriterReplayIsIdempotent: replays whose appends commit but report a
// failure (a timeout after the commit) are not stored twice: the next try
// reads back what the store holds first. A batch spooled behind the spool
// (never sent) is replayed without that read.
func TestWriterReplayIsIdempotent(t *testing.T) {
	fs := &flakyStore{}
	fs.down.Store(true)
	w, err := OpenWriter(finder{fs}, WriterConfig{SpoolDir: t.TempDir(), SpoolBytes: 1 << 20, ReplayEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	logAll(w, recs(0, 600))
	waitFor(t, "records spooled", func() bool { n, _ := w.Spooled(); return n == 600 })
	fs.commitThenFail.Store(true)
	fs.down.Store(false)
	waitFor(t, "a replay committed", func() bool { calls, _ := fs.stored(); return len(calls) > 0 })
	time.Sleep(50 * time.Millisecond) // a few more tries, each committing
	fs.commitThenFail.Store(false)
	waitFor(t, "the replay", func() bool { n, _ := w.Spooled(); return n == 0 })
	logAll(w, recs(600, 700))
	w.Close()
	calls, gaps := fs.stored()
	if !slices.Equal(calls, ids(recs(0, 700))) || len(gaps) != 0 {
		t.Fatalf("stored %d records, %d gaps; in order once: %v", len(calls), len(gaps), slices.Equal(calls, ids(recs(0, 700))))
	}
}
