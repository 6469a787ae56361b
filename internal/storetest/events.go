package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/events"
)

// testEvents holds the event log to events.Store's contract: sequence
// numbers in append order, team visibility (a team sees its own events
// and the deployment's), type filters, pages whose "through" lets a
// reader skip other teams' events, lookups, and ids stored once.
func testEvents(t *testing.T, ks auth.KeyStore) {
	s, ok := ks.(events.Store)
	if !ok {
		t.Fatalf("%T does not implement events.Store", ks)
	}
	ctx := context.Background()
	if head, err := s.LastEventSeq(ctx); err != nil || head != 0 {
		t.Fatalf("empty log's head: %d %v", head, err)
	}
	if evs, through, err := s.EventsAfter(ctx, events.Filter{Team: "team_a"}); err != nil || len(evs) != 0 || through != 0 {
		t.Fatalf("empty log: %v %d %v", evs, through, err)
	}
	ev := func(i int, team, typ string) events.Event {
		return events.Event{ID: fmt.Sprintf("evt_%03d", i), Object: events.Object, Type: typ, CreatedAt: at(time.Duration(i) * time.Second),
			Team: team, Data: map[string]any{"n": i, "text": "a\nb <&>"}}
	}
	// 0: deployment, 1: team_a, 2: team_b, 3: deployment, 4: team_a, …
	var batch []events.Event
	for i := range 12 {
		team := []string{"", "team_a", "team_b"}[i%3]
		typ := events.ModelReady
		if team != "" {
			typ = events.AuditTriggered
		}
		e := ev(i, team, typ)
		if i%4 == 0 {
			e.Subject = fmt.Sprintf("run_%d", i)
		}
		batch = append(batch, e)
	}
	if err := s.AppendEvents(ctx, batch[:5]); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvents(ctx, batch[5:]); err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		if batch[i].Seq == 0 || (i > 0 && batch[i].Seq <= batch[i-1].Seq) {
			t.Fatalf("seq %d: %d after %d", i, batch[i].Seq, batch[max(i-1, 0)].Seq)
		}
	}
	head, err := s.LastEventSeq(ctx)
	if err != nil || head != batch[11].Seq {
		t.Fatalf("head %d %v, want %d", head, err, batch[11].Seq)
	}

	// A team sees its own events and the deployment's, in order.
	got, through, err := s.EventsAfter(ctx, events.Filter{Team: "team_a"})
	if err != nil || through != head || len(got) != 8 {
		t.Fatalf("team_a: %d events through %d, %v", len(got), through, err)
	}
	for _, e := range got {
		if e.Team == "team_b" {
			t.Fatalf("team_a sees team_b's %s", e.ID)
		}
	}
	first := got[1] // evt_001
	var data map[string]any
	if err := json.Unmarshal(first.Data.(json.RawMessage), &data); err != nil || data["n"] != 1.0 || data["text"] != "a\nb <&>" {
		t.Fatalf("data %s: %v", first.Data, err)
	}
	if first.ID != "evt_001" || first.Object != events.Object || first.Type != events.AuditTriggered || first.Team != "team_a" || first.Subject != "" ||
		!first.CreatedAt.Equal(at(time.Second)) || first.CreatedAt.Location() != time.UTC || first.Seq != batch[1].Seq {
		t.Fatalf("event %+v", first)
	}
	if all, _, err := s.EventsAfter(ctx, events.Filter{AllTeams: true, Limit: 100}); err != nil || len(all) != 12 {
		t.Fatalf("every team: %d %v", len(all), err)
	}
	// Types.
	got, _, err = s.EventsAfter(ctx, events.Filter{Team: "team_b", Types: []string{events.ModelReady, events.BatchCompleted}})
	if err != nil || len(got) != 4 || got[0].ID != "evt_000" || got[3].ID != "evt_009" {
		t.Fatalf("types: %v %v", got, err)
	}
	got, _, err = s.EventsAfter(ctx, events.Filter{Team: "team_a", ExceptTypes: []string{events.AuditTriggered}})
	if err != nil || len(got) != 4 || got[0].ID != "evt_000" || got[3].ID != "evt_009" {
		t.Fatalf("except types: %v %v", got, err)
	}
	// Subjects: one object's events.
	got, _, err = s.EventsAfter(ctx, events.Filter{Team: "team_a", Subject: "run_4"})
	if err != nil || len(got) != 1 || got[0].ID != "evt_004" || got[0].Subject != "run_4" {
		t.Fatalf("subject: %v %v", got, err)
	}
	// Pages: a full page ends at its last event; the last page at the
	// head, also when none of the events there were the reader's.
	got, through, err = s.EventsAfter(ctx, events.Filter{Team: "team_a", Limit: 3})
	if err != nil || len(got) != 3 || through != got[2].Seq || got[2].ID != "evt_003" {
		t.Fatalf("page 1: %v through %d %v", got, through, err)
	}
	got, through, err = s.EventsAfter(ctx, events.Filter{Team: "team_a", After: through, Limit: 100})
	if err != nil || len(got) != 5 || got[0].ID != "evt_004" || through != head {
		t.Fatalf("page 2: %v through %d %v", got, through, err)
	}
	got, through, err = s.EventsAfter(ctx, events.Filter{Team: "team_b", Types: []string{events.BatchFailed}})
	if err != nil || len(got) != 0 || through != head {
		t.Fatalf("nothing of the reader's: %v through %d %v", got, through, err)
	}
	if got, through, err = s.EventsAfter(ctx, events.Filter{Team: "team_a", After: head}); err != nil || len(got) != 0 || through != head {
		t.Fatalf("after the head: %v %d %v", got, through, err)
	}

	// Lookups.
	e, err := s.GetEvent(ctx, "evt_002")
	if err != nil || e.Seq != batch[2].Seq || e.Team != "team_b" || e.Type != events.AuditTriggered {
		t.Fatalf("get: %+v %v", e, err)
	}
	if e, err := s.GetEvent(ctx, "evt_000"); err != nil || e.Team != "" {
		t.Fatalf("get a deployment event: %+v %v", e, err)
	}
	_, err = s.GetEvent(ctx, "evt_nope")
	wantErr(t, "an unknown event", err, events.ErrNotFound)

	// An id is stored once: a second append of it is skipped, not an
	// error, and the others in its batch are stored.
	again := []events.Event{ev(1, "team_a", events.AuditTriggered), ev(100, "", events.ModelUnloaded)}
	if err := s.AppendEvents(ctx, again); err != nil {
		t.Fatal(err)
	}
	if again[0].Seq != 0 || again[1].Seq <= head {
		t.Fatalf("duplicate: seqs %d %d (head was %d)", again[0].Seq, again[1].Seq, head)
	}
	if e, _ := s.GetEvent(ctx, "evt_001"); e.Seq != batch[1].Seq {
		t.Fatalf("the duplicate moved the stored event: %d", e.Seq)
	}
	// Data that is not JSON is refused, and nothing of the batch stored.
	bad := []events.Event{ev(200, "", events.ModelReady), {ID: "evt_bad", Type: events.ModelReady, CreatedAt: at(0), Data: func() {}}}
	if err := s.AppendEvents(ctx, bad); err == nil {
		t.Fatal("data that is not JSON was stored")
	}
	if _, err := s.GetEvent(ctx, "evt_200"); err == nil {
		t.Fatal("part of a failed batch was stored")
	}

	// Concurrent appends (many connections): every event stored once, with
	// distinct numbers, in each batch's order.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				b := []events.Event{ev(1000+g*100+2*i, "team_c", events.DocumentReady), ev(1000+g*100+2*i+1, "team_c", events.DocumentFailed)}
				if err := s.AppendEvents(ctx, b); err != nil {
					t.Error(err)
					return
				}
				if b[1].Seq <= b[0].Seq {
					t.Errorf("batch out of order: %d %d", b[0].Seq, b[1].Seq)
				}
			}
		}()
	}
	wg.Wait()
	got, _, err = s.EventsAfter(ctx, events.Filter{Team: "team_c", Types: []string{events.DocumentReady, events.DocumentFailed}, Limit: 1000})
	if err != nil || len(got) != 80 {
		t.Fatalf("concurrent appends: %d stored, %v", len(got), err)
	}
}
