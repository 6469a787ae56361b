package sources_test

import (
	"context"
	"sync"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// appended records the events a service stores, refusing an id twice as
// events.Bus.Append does.
type appended struct {
	mu  sync.Mutex
	evs []events.Event
}

func (a *appended) Append(_ context.Context, ev events.Event) (events.Event, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range a.evs {
		if e.ID == ev.ID {
			return ev, events.ErrDuplicate
		}
	}
	a.evs = append(a.evs, ev)
	return ev, nil
}

// A document's ingestion ends with document.ready or document.failed,
// with the collection's team and the document as data; processing it
// again (a run resumed after a crash) says it once.
func TestIngestionPublishesItsEnd(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		fail bool
		typ  string
	}{{false, events.DocumentReady}, {true, events.DocumentFailed}} {
		svc, c := newService(t, hashEmbedder{fail: tc.fail})
		pub := &appended{}
		svc.Events = pub
		d, err := svc.Ingest(ctx, c, sources.Document{Title: "t", Format: "text", Text: "One. Two."})
		if err != nil {
			t.Fatal(err)
		}
		svc.Wait()
		if err := svc.ProcessDocument(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		if len(pub.evs) != 1 {
			t.Fatalf("%d events: %+v", len(pub.evs), pub.evs)
		}
		ev := pub.evs[0]
		data := ev.Data.(map[string]any)
		if ev.Type != tc.typ || ev.Team != c.TeamID || data["id"] != d.ID || data["object"] != "document" || data["collection_id"] != c.ID ||
			data["text"] != nil || (tc.fail != (data["error"] != nil)) {
			t.Fatalf("event %+v", ev)
		}
	}
}
