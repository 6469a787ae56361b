// Package events is Sovereign's in-process event bus. Services publish
// lifecycle events (model.ready, model.failed, …); subscribers such as the
// webhook outbox and the live event stream receive them. Delivery to
// subscribers is non-blocking: a subscriber whose buffer is full misses
// events and is told so by its Dropped count.
package events

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// Event types.
const (
	ModelReady    = "model.ready"
	ModelFailed   = "model.failed"
	ModelUnloaded = "model.unloaded"
)

// Event is one published event, shaped like the API's event object.
type Event struct {
	ID        string    `json:"id"`
	Object    string    `json:"object"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	Data      any       `json:"data"`
}

// Publisher publishes events; consumers depend on this, not on Bus.
type Publisher interface {
	Publish(typ string, data any) Event
}

// Bus fans events out to subscribers.
type Bus struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
	now  func() time.Time
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{subs: map[*Subscription]struct{}{}, now: time.Now} }

// Subscription receives events on C until Close.
type Subscription struct {
	C       <-chan Event
	c       chan Event
	bus     *Bus
	mu      sync.Mutex
	dropped int
}

// Subscribe returns a subscription with a buffer of n events.
func (b *Bus) Subscribe(n int) *Subscription {
	c := make(chan Event, n)
	s := &Subscription{C: c, c: c, bus: b}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Close stops delivery and closes C.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	if _, ok := s.bus.subs[s]; ok {
		delete(s.bus.subs, s)
		close(s.c)
	}
	s.bus.mu.Unlock()
}

// Dropped is the number of events this subscriber missed because its
// buffer was full.
func (s *Subscription) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Publish sends an event of type typ with data to every subscriber and
// returns it.
func (b *Bus) Publish(typ string, data any) Event {
	ev := Event{ID: NewID(), Object: "event", Type: typ, CreatedAt: b.now().UTC(), Data: data}
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.c <- ev:
		default:
			s.mu.Lock()
			s.dropped++
			s.mu.Unlock()
		}
	}
	return ev
}

// NewID returns a random event id "evt_…".
func NewID() string {
	var b [12]byte
	rand.Read(b[:])
	return "evt_" + hex.EncodeToString(b[:])
}
