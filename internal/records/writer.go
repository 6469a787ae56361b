package records

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Counters is what a Writer reports to metrics.
type Counters interface {
	// RecordsDropped counts records lost to a full buffer.
	RecordsDropped(n int)
	// RecordsFailed counts records lost to store errors (with no spool,
	// or a spool that could not be written).
	RecordsFailed(n int)
}

// SpoolCounters is what a Writer with a spool also reports, when its
// Counters implement it.
type SpoolCounters interface {
	// RecordsLost counts records lost for another reason: LostSpoolFull,
	// LostSpoolDamaged.
	RecordsLost(reason string, n int)
	// RecordsReplayed counts spooled records the store took.
	RecordsReplayed(n int)
	// RecordsSpooled is what the spool holds now.
	RecordsSpooled(records int, bytes int64)
}

// RecordFinder is a Store that reads every record with given request
// ids at once (a cheaper check of what a replay already stored than
// GetRecord, which gives only an id's newest record).
type RecordFinder interface {
	RecordsByID(ctx context.Context, ids []string) ([]Record, error)
}

// When the spool is full: refuse inference (fail closed) or drop records
// (fail open, counted and marked).
const (
	SpoolFullRefuse = "refuse"
	SpoolFullDrop   = "drop"
)

// WriterConfig configures OpenWriter.
type WriterConfig struct {
	// Size is the buffer, in records (0: 8192).
	Size     int
	Counters Counters
	Log      *slog.Logger
	// SpoolDir, when set, is where records the store cannot take wait
	// until it can (see Spool); SpoolBytes bounds it (0:
	// DefaultSpoolBytes). Without it, a batch the store refuses is lost.
	SpoolDir   string
	SpoolBytes int64
	// SpoolFull is what happens when the spool is full: SpoolFullRefuse
	// (the default) makes Accepting refuse inference; SpoolFullDrop loses
	// records, counted and marked.
	SpoolFull string
	// Instance names this server in the gap markers it writes.
	Instance string
	// ReplayEvery is how long the writer waits after a replay the store
	// failed before the next (0: 1 s).
	ReplayEvery time.Duration
}

// Writer appends records in the background: a bounded buffer that Log
// fills without blocking, and one goroutine that stores it in batches.
//
// When the store fails an append (after a few quick retries), the batch
// goes to the spool, and so does every later batch while the spool holds
// anything, so that the chain keeps the order records were served in; the
// same goroutine replays the spool to the store, oldest first, once a
// second while it fails and at once while it succeeds. Records lost all
// the same (a full buffer, a full spool with SpoolFullDrop) are counted
// and marked in the chain by a gap marker (gap.go) with the next records
// stored.
type Writer struct {
	store    Store
	counters Counters
	spoolC   SpoolCounters // nil unless counters implement it
	log      *slog.Logger
	size     int
	spool    *Spool // nil: none
	failOpen bool
	instance string
	every    time.Duration

	mu     sync.Mutex
	buf    []Record // queued, at most size
	spare  []Record // the last batch's array, for the next
	closed bool
	gap    pendingGap // lost records no marker records yet
	// wake carries one signal: the first record of a batch, a full batch,
	// or Close. A record that finds others queued wakes nobody: under load
	// the writer wakes once a batch, not once a record (each wake-up was a
	// scheduler round trip on the request's path).
	wake chan struct{}
	done chan struct{}

	// The writer goroutine's own state.
	nextReplay time.Time // when the spool is replayed next
	replaySize int       // records per replayed batch (0: Batch)
	// unsure is how many records at the spool's front the store may
	// hold already: sent in an append that failed (a timeout after the
	// commit), or, after a restart, the front segment's (a crash between
	// a replay's commit and the spool's advance). Replay reads back what
	// the store holds only for those: a client that sends the same
	// request id on every call makes that read long.
	unsure     int
	keepFailed bool          // the last batch could be neither stored nor spooled
	outage     bool          // records are being spooled (logged once)
	lostLog    time.Time     // when a loss was last logged
	lostQuiet  int           // records lost since, not logged yet
	storeTook  time.Duration // how long the last storeBatch took

	// refusing is the error Accepting returns (nil: records are kept).
	refusing atomic.Pointer[apierr.Error]
	// spooledRecords and spooledBytes are what the spool holds, for
	// Spooled (the spool itself is the writer goroutine's).
	spooledRecords, spooledBytes atomic.Int64

	// Dropped, Failed and SpoolFull count records lost to a full buffer,
	// to store errors, and to a full spool; Replayed counts spooled
	// records the store took.
	Dropped, Failed, SpoolFull, Replayed atomic.Int64
}

// Batch bounds one append.
const Batch = 256

// NewWriter starts a writer with a buffer of size records and no spool: a
// batch the store refuses (three times) is lost, counted and marked.
func NewWriter(store Store, size int, counters Counters, log *slog.Logger) *Writer {
	w, _ := OpenWriter(store, WriterConfig{Size: size, Counters: counters, Log: log})
	return w
}

// OpenWriter opens the spool (when cfg names one) and starts a writer; a
// spool a previous run left is replayed first.
func OpenWriter(store Store, cfg WriterConfig) (*Writer, error) {
	if cfg.Size <= 0 {
		cfg.Size = 8192
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.ReplayEvery <= 0 {
		cfg.ReplayEvery = time.Second
	}
	switch cfg.SpoolFull {
	case "", SpoolFullRefuse:
	case SpoolFullDrop:
	default:
		return nil, fmt.Errorf("request log: spool full mode %q: want %s or %s", cfg.SpoolFull, SpoolFullRefuse, SpoolFullDrop)
	}
	w := &Writer{store: store, counters: cfg.Counters, log: cfg.Log, size: cfg.Size, failOpen: cfg.SpoolFull == SpoolFullDrop,
		instance: cfg.Instance, every: cfg.ReplayEvery, wake: make(chan struct{}, 1), done: make(chan struct{})}
	w.spoolC, _ = cfg.Counters.(SpoolCounters)
	if cfg.SpoolDir != "" {
		s, cut, err := OpenSpool(cfg.SpoolDir, cfg.SpoolBytes)
		if err != nil {
			return nil, err
		}
		for _, c := range cut {
			w.log.Error("request log spool: a segment did not verify to its end", "cut", c)
		}
		w.spool = s
		w.unsure = s.frontLeft()
		if s.Len() > 0 {
			w.outage = true
			w.log.Warn("request log: records a previous run spooled are being replayed", "records", s.Len(), "bytes", s.Bytes())
		}
		w.gauge()
		w.admission()
	}
	go w.loop()
	return w, nil
}

// Log queues a record; it never blocks. A record that finds the buffer
// full (or the writer closed) is counted as dropped (and marked in the
// chain, unless the writer is closed).
func (w *Writer) Log(r Record) {
	w.mu.Lock()
	if w.closed || len(w.buf) >= w.size {
		if !w.closed {
			w.gap.add(LostBufferFull, 1, r.Time, r.Time)
		}
		w.mu.Unlock()
		w.drop(1)
		return
	}
	w.buf = append(w.buf, r)
	n := len(w.buf)
	w.mu.Unlock()
	if n == 1 || n == Batch {
		w.signal()
	}
}

// RefusalRetryAfter is what a refusal for a full spool tells clients to
// wait: the spool empties only as fast as the database, once back, takes
// it.
const RefusalRetryAfter = 5 * time.Second

// errUnavailable is the refusal while records cannot be kept.
var errUnavailable = &apierr.Error{Code: apierr.RequestLogUnavailable, RetryAfter: RefusalRetryAfter,
	Message: "the request log cannot keep records right now (the database does not take them and the local spool is full), so inference is refused; retry later"}

// Accepting says whether calls may start: nil while records are kept
// (stored, or spooled), and a 503 request_log_unavailable (an
// *apierr.Error with a Retry-After) while they cannot be and the spool's
// mode is SpoolFullRefuse. The refusal starts before the spool is quite
// full (at 15/16 of its bound), so that the records of the calls still
// running, and of the calls refused, fit in what is left.
func (w *Writer) Accepting() error {
	if e := w.refusing.Load(); e != nil {
		c := *e // a copy: callers may change the error they get
		return &c
	}
	return nil
}

func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default: // a signal is pending already
	}
}

func (w *Writer) drop(n int) {
	w.Dropped.Add(int64(n))
	if w.counters != nil {
		w.counters.RecordsDropped(n)
	}
}

// Linger is how long the writer waits for more records after the first
// of a batch: an append costs a transaction, so under load records are
// stored in batches (a fraction of a millisecond of CPU per record saved,
// measured by bench/gateway) and appear in the log this much later.
const Linger = 10 * time.Millisecond

// Replay budgets: how long one turn of the loop replays before it takes
// the buffer again (records queue meanwhile), and how long Close gives
// the spool before it leaves the rest for the next start.
const (
	replayTurn  = 200 * time.Millisecond
	replayClose = 5 * time.Second
	// storeTimeout bounds one append or lookup: a database that hangs
	// rather than refuses must not hold the writer (the buffer fills).
	storeTimeout = 5 * time.Second
)

func (w *Writer) loop() {
	defer close(w.done)
	linger := time.NewTimer(Linger)
	linger.Stop()
	replay := time.NewTimer(time.Hour)
	replay.Stop()
	for {
		var tick <-chan time.Time
		if w.spooled() {
			replay.Reset(max(time.Until(w.nextReplay), 0))
			tick = replay.C
		}
		woke := false
		select {
		case <-w.wake:
			woke = true
			replay.Stop()
		case <-tick:
		}
		w.mu.Lock()
		closed := w.closed
		w.mu.Unlock()
		if woke && !closed {
			// Linger for more records, unless a batch fills (or Close
			// comes) first.
			linger.Reset(Linger)
			select {
			case <-linger.C:
			case <-w.wake:
				linger.Stop()
			}
		}
		w.mu.Lock()
		batch, closed := w.buf, w.closed
		w.buf, w.spare = w.spare[:0], nil
		keep := batch
		if !w.gap.empty() {
			// The loss goes into the chain where it was noticed.
			keep = append([]Record{w.gap.marker(w.instance)}, batch...)
			w.gap = pendingGap{}
		}
		w.mu.Unlock()
		w.keep(keep)
		if w.spooled() && (closed || !time.Now().Before(w.nextReplay)) {
			budget := replayTurn
			if closed {
				budget = replayClose
			}
			w.replay(budget)
		}
		w.mu.Lock()
		w.spare = batch[:0]
		w.mu.Unlock()
		if closed {
			w.finish()
			return
		}
	}
}

func (w *Writer) spooled() bool { return w.spool != nil && w.spool.Len() > 0 }

// keep stores rs, or spools them (from the first batch the store refused
// on, or all of them while the spool holds records: the chain keeps the
// order they were served in).
func (w *Writer) keep(rs []Record) {
	if len(rs) == 0 {
		return
	}
	if w.spooled() {
		w.toSpool(rs, nil)
		return
	}
	for len(rs) > 0 {
		n := min(len(rs), Batch)
		err := w.storeBatch(rs[:n])
		switch {
		case err == nil:
			w.keepFailed = false
		case w.spool != nil:
			// This batch was sent, the later ones not: the store may hold
			// it (the spool was empty: it is the spool's front).
			w.unsure = n
			w.toSpool(rs, err)
			return
		default:
			w.lose(LostStoreError, rs[:n], err)
		}
		rs = rs[n:]
	}
	w.admission()
}

// storeBatch appends batch, retrying twice (quickly: what does not go in
// goes to the spool). An append that failed may have committed all the
// same (a timeout after the commit): a retry first drops the records the
// store holds already.
func (w *Writer) storeBatch(batch []Record) error {
	start := time.Now()
	var err error
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		if attempt > 0 {
			var rest []Record
			if rest, err = w.unstored(ctx, batch); err == nil {
				if len(rest) == 0 {
					cancel()
					return nil
				}
				err = w.store.AppendRecords(ctx, rest)
			}
		} else {
			err = w.store.AppendRecords(ctx, batch)
		}
		cancel()
		if err == nil || attempt == 2 || time.Since(start) > storeTimeout {
			w.storeTook = time.Since(start)
			return err
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
}

// unstored returns the records of rs the store does not hold: a record
// is held when a stored record has its id and the same fields (request
// ids are the clients' to choose, so an id alone does not say).
func (w *Writer) unstored(ctx context.Context, rs []Record) ([]Record, error) {
	seen := map[string]bool{}
	var ids []string
	for _, r := range rs {
		if !seen[r.ID] {
			seen[r.ID] = true
			ids = append(ids, r.ID)
		}
	}
	var stored []Record
	if f, ok := w.store.(RecordFinder); ok {
		var err error
		if stored, err = f.RecordsByID(ctx, ids); err != nil {
			return nil, err
		}
	} else {
		for _, id := range ids {
			r, err := w.store.GetRecord(ctx, "", id, true)
			switch {
			case err == nil:
				stored = append(stored, r)
			case !errors.Is(err, ErrNotFound):
				return nil, err
			}
		}
	}
	if len(stored) == 0 {
		return rs, nil
	}
	held := make(map[string]bool, len(stored))
	for _, r := range stored {
		held[contentHash(r)] = true
	}
	out := make([]Record, 0, len(rs))
	for _, r := range rs {
		if !held[contentHash(r)] {
			out = append(out, r)
		}
	}
	return out, nil
}

// contentHash identifies a record by its fields alone (not its place in
// the chain).
func contentHash(r Record) string {
	r.Normalize()
	return r.ID + "\x00" + r.ComputeHash("")
}

// toSpool spools rs (cause: the store's error, when the store just
// refused them); what does not fit is lost.
func (w *Writer) toSpool(rs []Record, cause error) {
	if cause != nil {
		// The store has just failed (and was retried): replay a turn later.
		w.nextReplay = time.Now().Add(w.every)
	}
	n, err := w.spool.Append(rs)
	if n > 0 {
		w.keepFailed = false
		if !w.outage {
			w.outage = true
			w.log.Warn("request log: the store refuses records; they are spooled until it takes them", "err", cause, "tried_ms", w.storeTook.Milliseconds(), "spool", w.spool.dir)
		}
	}
	if n < len(rs) {
		reason := LostSpoolFull
		if !errors.Is(err, ErrSpoolFull) {
			reason = LostStoreError
		}
		if cause != nil && n == 0 {
			err = fmt.Errorf("%w (the store: %v)", err, cause)
		}
		w.lose(reason, rs[n:], err)
	}
	w.gauge()
	w.admission()
}

// lose counts the records rs as lost for reason and keeps them for the
// next gap marker (the markers among them give back their gaps).
func (w *Writer) lose(reason string, rs []Record, err error) {
	w.mu.Lock()
	n := w.gap.addRecords(reason, rs)
	w.mu.Unlock()
	w.count(reason, n)
	w.keepFailed = true
	w.lostQuiet += n
	// One line per 10 s of losses, not one per batch.
	if time.Since(w.lostLog) >= 10*time.Second {
		w.log.Error("request log: records lost; a gap marker will record them in the chain", "records", w.lostQuiet, "reason", reason, "err", err)
		w.lostLog, w.lostQuiet = time.Now(), 0
	}
}

func (w *Writer) count(reason string, n int) {
	if n == 0 {
		return
	}
	switch reason {
	case LostStoreError:
		w.Failed.Add(int64(n))
		if w.counters != nil {
			w.counters.RecordsFailed(n)
		}
		return
	case LostSpoolFull:
		w.SpoolFull.Add(int64(n))
	}
	if w.spoolC != nil {
		w.spoolC.RecordsLost(reason, n)
	}
}

// replay stores spooled records, oldest first, a batch at a time, for
// about budget: each batch leaves the spool once the store holds it, less
// the records a previous try stored already. A failure waits for the next
// turn (ReplayEvery), and halves the batch: a record the store refuses
// for itself (PostgreSQL refuses a NUL character in text) is found by
// halving down to one record, and when the store then takes the record
// after it alone, the refused one is dropped (counted store_error and
// marked), so that one record cannot hold the whole log in the spool.
func (w *Writer) replay(budget time.Duration) {
	deadline := time.Now().Add(budget)
	defer func() {
		w.gauge()
		w.admission()
	}()
	for w.spool.Len() > 0 {
		size := w.replaySize
		if size <= 0 {
			size = Batch
		}
		rs, dropped, err := w.spool.Peek(size)
		if dropped > 0 {
			w.mu.Lock()
			w.gap.add(LostSpoolDamaged, int64(dropped), time.Time{}, time.Time{})
			w.mu.Unlock()
			w.count(LostSpoolDamaged, dropped)
			w.log.Error("request log spool: spooled records no longer verify on disk; dropped (a gap marker will record them)", "records", dropped)
		}
		if err == nil && len(rs) == 0 {
			if err = w.spool.Advance(0); err == nil { // what damage emptied
				break
			}
		}
		n := len(rs)
		var stored int
		if err == nil {
			var sent bool
			if stored, sent, err = w.replayBatch(rs, w.unsure > 0); err != nil && sent {
				w.unsure = max(w.unsure, n)
			}
		}
		if err != nil && size == 1 {
			// One record refused: the store may refuse it for itself.
			if next, ok := w.refusedAlone(err); ok {
				n, stored, err = 2, next, nil
			}
		}
		if err == nil {
			if err = w.spool.Advance(n); err != nil {
				w.unsure = max(w.unsure, n) // stored, and still spooled
			} else {
				w.unsure = max(w.unsure-n, 0)
			}
		}
		if err != nil {
			w.replaySize = max(size/2, 1)
			w.nextReplay = time.Now().Add(w.every)
			if time.Since(w.lostLog) >= 10*time.Second {
				w.lostLog = time.Now()
				w.log.Warn("request log: replaying the spool failed; retrying", "spooled", w.spool.Len(), "err", err)
			}
			return
		}
		w.replaySize = Batch
		w.keepFailed = false
		w.Replayed.Add(int64(stored))
		if w.spoolC != nil {
			w.spoolC.RecordsReplayed(stored)
		}
		if time.Now().After(deadline) {
			break
		}
	}
	w.nextReplay = time.Time{} // go on at once while there is more
	if w.spool.Len() == 0 && w.outage {
		w.outage = false
		w.log.Info("request log: the spool is replayed: every spooled record is stored")
	}
}

// replayBatch stores the records of rs (those the store does not hold
// yet, with check), and says how many it stored and whether it sent them
// (an append that fails may have committed).
func (w *Writer) replayBatch(rs []Record, check bool) (stored int, sent bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	todo := rs
	if check {
		if todo, err = w.unstored(ctx, rs); err != nil {
			return 0, false, err
		}
	}
	if len(todo) > 0 {
		err = w.store.AppendRecords(ctx, todo)
	}
	return len(todo), len(todo) > 0, err
}

// refusedAlone tries the record after the spool's first, which the store
// just refused (refusal): when the store takes it, the first is refused
// for itself, and is lost (counted and marked); ok then says that the
// spool's first two records are done with, the next stored.
func (w *Writer) refusedAlone(refusal error) (stored int, ok bool) {
	two, _, err := w.spool.Peek(2)
	if err != nil || len(two) < 2 {
		return 0, false
	}
	var sent bool
	if stored, sent, err = w.replayBatch(two[1:], w.unsure > 1); err != nil {
		if sent {
			w.unsure = max(w.unsure, 2)
		}
		return 0, false
	}
	w.lose(LostStoreError, two[:1], fmt.Errorf("the store refuses this record (and takes the next): %w", refusal))
	return stored, true
}

// gauge reports what the spool holds.
func (w *Writer) gauge() {
	if w.spool == nil {
		return
	}
	w.spooledRecords.Store(int64(w.spool.Len()))
	w.spooledBytes.Store(w.spool.Bytes())
	if w.spoolC != nil {
		w.spoolC.RecordsSpooled(w.spool.Len(), w.spool.Bytes())
	}
}

// Spooled is what the spool holds now: records not yet stored, and its
// size on disk.
func (w *Writer) Spooled() (records int, bytes int64) {
	return int(w.spooledRecords.Load()), w.spooledBytes.Load()
}

// admission decides whether Accepting refuses calls: with a spool whose
// mode is SpoolFullRefuse, while it is nearly full (what is left is for
// the records of calls under way and of calls refused) or the last batch
// could not be kept at all.
func (w *Writer) admission() {
	if w.spool == nil || w.failOpen {
		return
	}
	if w.keepFailed || w.spool.Bytes() > w.spool.Limit()-w.spool.Limit()/16 {
		w.refusing.Store(errUnavailable)
	} else {
		w.refusing.Store(nil)
	}
}

// finish ends the writer after its last batch: a loss not yet marked
// (its marker could be neither stored nor spooled: the spool was full)
// is spooled past the spool's bound, a few hundred bytes, rather than
// forgotten with the process; the spool's files are closed (what it holds
// waits for the next start).
func (w *Writer) finish() {
	w.mu.Lock()
	g := w.gap
	w.gap = pendingGap{}
	w.mu.Unlock()
	if !g.empty() && w.spool != nil {
		if n, err := w.spool.AppendOver([]Record{g.marker(w.instance)}, 64<<10); n == 1 {
			g = pendingGap{}
			w.gauge()
		} else {
			w.log.Error("request log: spooling the last gap marker", "err", err)
		}
	}
	if !g.empty() {
		w.log.Error("request log: records lost at shutdown, with no marker in the chain", "records", g.Lost, "reasons", g.Reasons)
	}
	if w.spool != nil {
		if n := w.spool.Len(); n > 0 {
			w.log.Warn("request log: records stay spooled for the next start", "records", n, "spool", w.spool.dir)
		}
		w.spool.Close()
	}
}

// Close stops taking records and waits until the queued ones are stored
// (or spooled, when the store fails: fsynced, for the next start).
func (w *Writer) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.signal()
	<-w.done
}
