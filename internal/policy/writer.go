package policy

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Writer stores decisions off the request path. Decisions are rare (only
// matches that are not plain allows), so it is simpler than the request
// log's writer: a bounded buffer drained by one goroutine, which appends
// whatever is queued in one transaction, without lingering for a batch.
type Writer struct {
	store  DecisionAppender
	onLost func(n int)
	log    *slog.Logger
	ch     chan Decision
	done   chan struct{}
	mu     sync.RWMutex // closing the channel excludes sends
	closed bool
	// lost counts decisions dropped (full buffer, closed writer) or not
	// stored (store errors); lastWarn is when a full buffer was last
	// logged (unix nanoseconds), so that a flood is logged once in a
	// while, not once per decision.
	lost     atomic.Int64
	lastWarn atomic.Int64
}

// WriterBatch bounds one append.
const WriterBatch = 256

// warnEvery is the least time between two warnings about a full buffer.
const warnEvery = 10 * time.Second

// NewWriter starts a writer with a buffer of buffer decisions (≤ 0:
// 4096). onLost, if not nil, is told of every decision lost (to a full
// buffer or a store error), for a metric; log (nil: slog.Default) gets a
// warning when the buffer is full, at most every 10 s, and an error when
// decisions cannot be stored.
func NewWriter(store DecisionAppender, buffer int, onLost func(n int), log *slog.Logger) *Writer {
	if buffer <= 0 {
		buffer = 4096
	}
	if log == nil {
		log = slog.Default()
	}
	w := &Writer{store: store, onLost: onLost, log: log, ch: make(chan Decision, buffer), done: make(chan struct{})}
	go w.loop()
	return w
}

// Log queues decisions; it never blocks. Decisions that find the buffer
// full (or the writer closed) are lost, counted and logged.
func (w *Writer) Log(ds ...Decision) {
	if len(ds) == 0 {
		return
	}
	w.mu.RLock()
	dropped := 0
	if w.closed {
		dropped = len(ds)
	} else {
		for i, d := range ds {
			select {
			case w.ch <- d:
			default:
				dropped = len(ds) - i
			}
			if dropped > 0 {
				break
			}
		}
	}
	w.mu.RUnlock()
	if dropped > 0 {
		w.lose(dropped)
		now := time.Now().UnixNano()
		last := w.lastWarn.Load()
		if now-last >= int64(warnEvery) && w.lastWarn.CompareAndSwap(last, now) {
			w.log.Warn("policy decisions: the buffer is full or the writer closed; decisions were not stored",
				"lost", dropped, "lost_total", w.lost.Load())
		}
	}
}

// Lost is how many decisions were lost so far.
func (w *Writer) Lost() int64 { return w.lost.Load() }

func (w *Writer) lose(n int) {
	w.lost.Add(int64(n))
	if w.onLost != nil {
		w.onLost(n)
	}
}

func (w *Writer) loop() {
	defer close(w.done)
	batch := make([]Decision, 0, WriterBatch)
	for d := range w.ch {
		batch = append(batch[:0], d)
	fill:
		for len(batch) < WriterBatch {
			select {
			case d, ok := <-w.ch:
				if !ok {
					break fill
				}
				batch = append(batch, d)
			default:
				break fill
			}
		}
		w.append(batch)
	}
}

func (w *Writer) append(batch []Decision) {
	var err error
	for attempt := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = w.store.AppendDecisions(ctx, batch)
		cancel()
		if err == nil {
			return
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	w.lose(len(batch))
	w.log.Error("policy decisions could not be stored", "decisions", len(batch), "err", err)
}

// Close stops taking decisions and waits until the queued ones are stored.
func (w *Writer) Close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
	w.mu.Unlock()
	<-w.done
}
