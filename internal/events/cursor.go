package events

import (
	"context"
	"errors"
	"fmt"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Filter selects events of the log.
type Filter struct {
	// Team selects the team's events and the deployment's (those without
	// a team). AllTeams selects every event.
	Team     string
	AllTeams bool
	// Types, when not empty, keeps only events of these types;
	// ExceptTypes leaves out events of these.
	Types       []string
	ExceptTypes []string
	// Subject, when set, keeps only the events about that object.
	Subject string
	// After selects events with a larger Seq.
	After int64
	// Limit bounds a page (≤ 0: PageSize).
	Limit int
}

// PageSize is a page of the log when Filter.Limit is not set.
const PageSize = 100

// Getter reads one stored event (a Bus does).
type Getter interface {
	// Event returns the stored event id. Errors: ErrNotFound.
	Event(ctx context.Context, id string) (Event, error)
}

// Resume returns f set to continue after the stored event id (f.After is
// its Seq), as a client that reconnects asks with the last id it got.
// Errors: a 400 naming param (where the client sent the id:
// Last-Event-ID or after), wrapping ErrNotFound, when no stored event has
// the id or the event is another team's than f follows (one the client
// cannot have been sent, and must not learn exists); or log's error.
func (f Filter) Resume(ctx context.Context, log Getter, id, param string) (Filter, error) {
	ev, err := log.Event(ctx, id)
	if err == nil && !f.AllTeams && ev.Team != "" && ev.Team != f.Team {
		err = ErrNotFound
	}
	if errors.Is(err, ErrNotFound) {
		return f, &apierr.Error{Code: apierr.InvalidRequest, Param: param, Message: fmt.Sprintf("no event %q to resume after", id), Err: err}
	}
	if err != nil {
		return f, err
	}
	f.After = ev.Seq
	return f, nil
}

// Cursor follows the log from a position, a page at a time. Use it from
// one goroutine; Close it when done.
type Cursor struct {
	b      *Bus
	f      Filter
	closed bool
}

// Follow returns a cursor over f's events after f.After (a Seq: 0 is the
// start of the log, Head is now). While cursors are open, the bus reads
// the log's head every Config.Poll in case a wake-up was missed.
func (b *Bus) Follow(f Filter) *Cursor {
	if f.Limit <= 0 {
		f.Limit = PageSize
	}
	b.followers.Add(1)
	return &Cursor{b: b, f: f}
}

// Changed returns a channel closed when events may have been stored since.
// Take it before Next, and wait on it when Next returned no more.
func (c *Cursor) Changed() <-chan struct{} { return c.b.Changed() }

// Next returns the next page of events and moves past it; more says that
// another page may follow at once (the page was full). Errors: ErrNoStore,
// or the store's error (the cursor stays where it was).
func (c *Cursor) Next(ctx context.Context) (evs []Event, more bool, err error) {
	if c.b.store == nil {
		return nil, false, ErrNoStore
	}
	evs, through, err := c.b.store.EventsAfter(ctx, c.f)
	if err != nil {
		return nil, false, err
	}
	if through > c.f.After {
		c.f.After = through
	}
	return evs, len(evs) >= c.f.Limit, nil
}

// After is the Seq the cursor is at: the next page starts after it.
func (c *Cursor) After() int64 { return c.f.After }

// Close releases the cursor.
func (c *Cursor) Close() {
	if !c.closed {
		c.closed = true
		c.b.followers.Add(-1)
	}
}
