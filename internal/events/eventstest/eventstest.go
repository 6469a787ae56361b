// Package eventstest is an in-memory events.Store for tests of packages
// that publish or follow events.
package eventstest

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/events"
)

// Store is an in-memory event log. Fail, when set, is returned by
// AppendEvents instead of storing. It is safe for concurrent use.
type Store struct {
	mu   sync.Mutex
	evs  []events.Event
	seq  int64
	Fail error
}

var _ events.Store = (*Store)(nil)

// AppendEvents implements events.Store: data is kept as JSON, as a
// database would.
func (s *Store) AppendEvents(_ context.Context, evs []events.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Fail != nil {
		return s.Fail
	}
	stored := make([]events.Event, 0, len(evs))
	seqs := make([]int64, len(evs))
	taken := func(id string) bool {
		has := func(e events.Event) bool { return e.ID == id }
		return slices.ContainsFunc(s.evs, has) || slices.ContainsFunc(stored, has)
	}
	next := s.seq
	for i := range evs {
		data, err := evs[i].DataJSON()
		if err != nil {
			return err
		}
		if taken(evs[i].ID) {
			continue
		}
		next++
		ev := evs[i]
		ev.Data, ev.Seq, seqs[i] = json.RawMessage(data), next, next
		stored = append(stored, ev)
	}
	for i := range evs {
		evs[i].Seq = seqs[i]
	}
	s.seq = next
	s.evs = append(s.evs, stored...)
	return nil
}

// EventsAfter implements events.Store.
func (s *Store) EventsAfter(_ context.Context, f events.Filter) ([]events.Event, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit := f.Limit
	if limit <= 0 {
		limit = events.PageSize
	}
	out := []events.Event{}
	for _, ev := range s.evs {
		if ev.Seq <= f.After || (!f.AllTeams && ev.Team != "" && ev.Team != f.Team) || (len(f.Types) > 0 && !slices.Contains(f.Types, ev.Type)) ||
			slices.Contains(f.ExceptTypes, ev.Type) || (f.Subject != "" && ev.Subject != f.Subject) {
			continue
		}
		out = append(out, ev)
		if len(out) == limit {
			return out, ev.Seq, nil
		}
	}
	return out, max(s.seq, f.After), nil
}

// GetEvent implements events.Store.
func (s *Store) GetEvent(_ context.Context, id string) (events.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range s.evs {
		if ev.ID == id {
			return ev, nil
		}
	}
	return events.Event{}, apierr.Wrapf(events.ErrNotFound, "no event %q", id)
}

// LastEventSeq implements events.Store.
func (s *Store) LastEventSeq(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq, nil
}

// All returns every stored event, in order.
func (s *Store) All() []events.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.evs)
}
