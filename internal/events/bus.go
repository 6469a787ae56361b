package events

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Store keeps the event log. internal/sqlstore implements it on SQLite
// and PostgreSQL; internal/events/eventstest in memory.
type Store interface {
	// AppendEvents stores evs, in order, in one transaction, and sets
	// each one's Seq. Sequence numbers become visible in increasing
	// order, also with several servers on one database: a reader that
	// has seen Seq n never later finds a new event below n. An event
	// whose ID is stored already is not stored again; its Seq is left 0.
	// Errors: the store failed (nothing was stored).
	AppendEvents(ctx context.Context, evs []Event) error
	// EventsAfter returns f's events with f.After < Seq ≤ through, oldest
	// first, at most f.Limit (≤ 0: a default page) of them, and through:
	// the last returned event's Seq when the page is full, else the head
	// of the log as read at the start. Continue from through.
	EventsAfter(ctx context.Context, f Filter) (evs []Event, through int64, err error)
	// GetEvent returns the stored event id (with Team and Seq). Errors:
	// ErrNotFound.
	GetEvent(ctx context.Context, id string) (Event, error)
	// LastEventSeq returns the largest stored Seq (0: none).
	LastEventSeq(ctx context.Context) (int64, error)
}

// Listener is a Store shared by several servers that can say when another
// one stored events.
type Listener interface {
	// ListenEvents calls wake whenever events may have been stored (also
	// once when it starts listening, for what it may have missed) until
	// ctx ends or listening fails. Errors: listening failed; ctx's error
	// once it ends.
	ListenEvents(ctx context.Context, wake func()) error
}

// Errors.
var (
	// ErrNotFound: no stored event has the id. It is an API error
	// (internal/apierr): the store wraps it naming the event
	// (apierr.Wrapf); Filter.Resume makes it the resume parameter's 400.
	ErrNotFound = apierr.New(apierr.NotFound, "event not found")
	// ErrDuplicate: an event with the id is stored already (Append).
	ErrDuplicate = errors.New("event id already stored")
	// ErrNoStore: the bus keeps no log.
	ErrNoStore = errors.New("the event bus keeps no log")
)

// Config configures a Bus with a log.
type Config struct {
	// Store keeps the log (nil: events only go to in-process
	// subscribers).
	Store Store
	// Buffer is how many published events may wait to be stored (≤ 0:
	// 4096).
	Buffer int
	// OnLost, when set, is told of every event that could not be stored
	// (a full buffer, a closed bus, a store error), for a metric.
	OnLost func(n int)
	// Poll is how often the log's head is read while someone follows it,
	// in case a wake-up was missed (≤ 0: 1 s).
	Poll time.Duration
	Log  *slog.Logger
}

// Bus publishes events: it stores them (with a Store) and fans them out.
type Bus struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
	now  func() time.Time

	store  Store
	onLost func(n int)
	log    *slog.Logger
	poll   time.Duration

	// The writer: queue holds published events until stored; qmu
	// excludes sends while the queue closes.
	queue  chan Event
	qmu    sync.RWMutex
	closed bool
	done   chan struct{}
	// lost counts events not stored; lastWarn (unix ns) spaces the
	// warnings about a full queue.
	lost     atomic.Int64
	lastWarn atomic.Int64

	// changed is closed (and replaced) at every wake-up.
	wmu     sync.Mutex
	changed chan struct{}
	// followers counts the open cursors (the head is polled only while
	// there are some).
	followers atomic.Int64

	stop context.CancelFunc
	bg   sync.WaitGroup
}

// writerBatch bounds one append of queued events.
const writerBatch = 256

// warnEvery is the least time between two warnings about a full queue.
const warnEvery = 10 * time.Second

// NewBus returns a bus without a log: events go to in-process
// subscribers only.
func NewBus() *Bus { return New(Config{}) }

// New returns a bus. With cfg.Store it starts the writer that stores
// published events, the poll of the log's head, and — when the store is a
// Listener — the wake-ups from other servers; Close stops them.
func New(cfg Config) *Bus {
	b := &Bus{subs: map[*Subscription]struct{}{}, now: time.Now, store: cfg.Store, onLost: cfg.OnLost, log: cfg.Log, poll: cfg.Poll,
		changed: make(chan struct{})}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.poll <= 0 {
		b.poll = time.Second
	}
	if b.store == nil {
		return b
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 4096
	}
	b.queue, b.done = make(chan Event, cfg.Buffer), make(chan struct{})
	go b.write()
	ctx, stop := context.WithCancel(context.Background())
	b.stop = stop
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		b.pollHead(ctx)
	}()
	if l, ok := b.store.(Listener); ok {
		b.bg.Add(1)
		go func() {
			defer b.bg.Done()
			b.listen(ctx, l)
		}()
	}
	return b
}

// Close stores the events still queued, then stops the bus's background
// work. Events published afterwards are lost (counted). It may be called
// more than once.
func (b *Bus) Close() {
	if b.store == nil {
		return
	}
	b.qmu.Lock()
	if !b.closed {
		b.closed = true
		close(b.queue)
	}
	b.qmu.Unlock()
	<-b.done
	b.stop()
	b.bg.Wait()
	b.wake()
}

// Stored reports whether the bus keeps a log.
func (b *Bus) Stored() bool { return b.store != nil }

// Lost is how many events could not be stored so far.
func (b *Bus) Lost() int64 { return b.lost.Load() }

// Append stores ev now and hands it to in-process subscribers, for
// callers that must know it is stored (a durable step that retries until
// it is). ID, Object and CreatedAt are filled in when empty; a caller
// that may run twice gives a stable ID. Errors: ErrDuplicate (the stored
// event has the ID: nothing was stored or handed out again), ErrNoStore,
// or the store's error.
func (b *Bus) Append(ctx context.Context, ev Event) (Event, error) {
	if b.store == nil {
		return ev, ErrNoStore
	}
	if ev.ID == "" {
		ev.ID = NewID()
	}
	if ev.Object == "" {
		ev.Object = Object
	}
	if ev.CreatedAt.IsZero() {
		ev.CreatedAt = b.now()
	}
	ev.CreatedAt = ev.CreatedAt.UTC()
	evs := []Event{ev}
	if err := b.store.AppendEvents(ctx, evs); err != nil {
		return ev, err
	}
	if evs[0].Seq == 0 {
		return evs[0], ErrDuplicate
	}
	b.stored(evs)
	return evs[0], nil
}

// enqueue queues ev for the writer; it never blocks.
func (b *Bus) enqueue(ev Event) {
	b.qmu.RLock()
	ok := false
	if !b.closed {
		select {
		case b.queue <- ev:
			ok = true
		default:
		}
	}
	b.qmu.RUnlock()
	if ok {
		return
	}
	b.lose(1)
	now := time.Now().UnixNano()
	last := b.lastWarn.Load()
	if now-last >= int64(warnEvery) && b.lastWarn.CompareAndSwap(last, now) {
		b.log.Warn("events: the queue is full or the bus closed; events were not stored", "type", ev.Type, "lost_total", b.lost.Load())
	}
	b.fanOut(ev)
}

func (b *Bus) lose(n int) {
	b.lost.Add(int64(n))
	if b.onLost != nil {
		b.onLost(n)
	}
}

// write stores queued events, a batch at a time, until the queue closes.
func (b *Bus) write() {
	defer close(b.done)
	batch := make([]Event, 0, writerBatch)
	for ev := range b.queue {
		batch = append(batch[:0], ev)
	fill:
		for len(batch) < writerBatch {
			select {
			case ev, ok := <-b.queue:
				if !ok {
					break fill
				}
				batch = append(batch, ev)
			default:
				break fill
			}
		}
		b.append(batch)
	}
}

// append stores a batch, trying three times; what cannot be stored is
// lost, but still handed to in-process subscribers.
func (b *Bus) append(batch []Event) {
	var err error
	for attempt := range 3 {
		for i := range batch {
			batch[i].Seq = 0
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = b.store.AppendEvents(ctx, batch)
		cancel()
		if err == nil {
			b.stored(batch)
			return
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	b.lose(len(batch))
	b.log.Error("events could not be stored", "events", len(batch), "type", batch[0].Type, "err", err)
	for _, ev := range batch {
		b.fanOut(ev)
	}
}

// stored wakes the followers and hands the events just stored to
// in-process subscribers (but those not stored because their ID was
// taken).
func (b *Bus) stored(evs []Event) {
	b.wake()
	for _, ev := range evs {
		if ev.Seq != 0 {
			b.fanOut(ev)
		}
	}
}

// wake tells every follower to read the log again.
func (b *Bus) wake() {
	b.wmu.Lock()
	close(b.changed)
	b.changed = make(chan struct{})
	b.wmu.Unlock()
}

// Changed returns a channel closed at the next wake-up: when events may
// have been stored. Take it before reading the log, so that a wake-up
// during the read is not missed.
func (b *Bus) Changed() <-chan struct{} {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	return b.changed
}

// pollHead reads the log's head every b.poll while someone follows the
// log, and wakes the followers when it moved: the safety net under the
// wake-ups (one query per server, whatever the number of followers). A
// follower either took its Changed channel before the wake-up, or read
// the log after the head it announces was visible.
func (b *Bus) pollHead(ctx context.Context) {
	t := time.NewTicker(b.poll)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if b.followers.Load() == 0 {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		head, err := b.store.LastEventSeq(qctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				b.log.Warn("events: reading the log's head", "err", err)
			}
			continue
		}
		if head != last {
			last = head
			b.wake()
		}
	}
}

// listen relays a Listener's wake-ups until ctx ends, starting it again
// (after a pause growing to 30 s) when it fails.
func (b *Bus) listen(ctx context.Context, l Listener) {
	pause := time.Second
	for {
		start := time.Now()
		err := l.ListenEvents(ctx, b.wake)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			pause = time.Second
		}
		b.log.Warn("events: listening for other servers' events failed; the log is polled meanwhile", "err", err, "retry_in", pause.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 30*time.Second)
	}
}

// Head returns the largest stored Seq: following from it yields the
// events stored from now on. Errors: ErrNoStore, or the store's error.
func (b *Bus) Head(ctx context.Context) (int64, error) {
	if b.store == nil {
		return 0, ErrNoStore
	}
	return b.store.LastEventSeq(ctx)
}

// Event returns the stored event id. Errors: ErrNotFound, ErrNoStore, or
// the store's error.
func (b *Bus) Event(ctx context.Context, id string) (Event, error) {
	if b.store == nil {
		return Event{}, ErrNoStore
	}
	return b.store.GetEvent(ctx, id)
}
