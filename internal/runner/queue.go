package runner

import (
	"context"
	"sync"

	"github.com/sovereign-ai/sovereign/internal/inference"
)

// eventQueue is an unbounded single-consumer queue of events, so the
// engine loop never blocks on a slow client.
type eventQueue struct {
	mu     sync.Mutex
	events []inference.Event
	signal chan struct{}
}

func newEventQueue() *eventQueue { return &eventQueue{signal: make(chan struct{}, 1)} }

func (q *eventQueue) push(ev inference.Event) {
	q.mu.Lock()
	q.events = append(q.events, ev)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// next returns all queued events, waiting until there is at least one or
// ctx ends.
func (q *eventQueue) next(ctx context.Context) ([]inference.Event, error) {
	for {
		q.mu.Lock()
		evs := q.events
		q.events = nil
		q.mu.Unlock()
		if len(evs) > 0 {
			return evs, nil
		}
		select {
		case <-q.signal:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
