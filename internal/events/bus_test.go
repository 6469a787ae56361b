package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/events/eventstest"
)

var quiet = slog.New(slog.DiscardHandler)

func TestEventJSON(t *testing.T) {
	ev := events.Event{ID: "evt_1", Object: events.Object, Type: events.ModelReady, CreatedAt: time.Unix(1767225600, 5e8), Team: "team_a", Seq: 9,
		Data: map[string]any{"model": "m"}}
	b, err := json.Marshal(ev)
	if err != nil || string(b) != `{"id":"evt_1","object":"event","type":"model.ready","created_at":1767225600,"data":{"model":"m"}}` {
		t.Fatalf("%s %v", b, err)
	}
	ev.Data = nil
	if b, _ = json.Marshal(ev); string(b) != `{"id":"evt_1","object":"event","type":"model.ready","created_at":1767225600,"data":{}}` {
		t.Fatalf("nil data: %s", b)
	}
	var back events.Event
	if err := json.Unmarshal(b, &back); err != nil || back.ID != "evt_1" || back.CreatedAt.Unix() != 1767225600 || string(back.Data.(json.RawMessage)) != "{}" {
		t.Fatalf("%+v %v", back, err)
	}
	for _, typ := range events.Types {
		if !events.Known(typ) {
			t.Fatal(typ)
		}
	}
	if events.Known("model.exploded") || len(events.Types) != 17 {
		t.Fatal("unknown type known, or a type missing")
	}
}

// recv waits for one event from a subscription.
func recv(t *testing.T, s *events.Subscription) events.Event {
	t.Helper()
	select {
	case ev := <-s.C:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
	return events.Event{}
}

func TestStoredBeforeHandedOut(t *testing.T) {
	st := &eventstest.Store{}
	b := events.New(events.Config{Store: st})
	defer b.Close()
	sub := b.Subscribe(8)
	defer sub.Close()
	pub := b.PublishTeam("team_a", events.AuditTriggered, map[string]string{"rule": "r"})
	b.Publish(events.ModelReady, nil)
	got := recv(t, sub)
	if got.ID != pub.ID || got.Seq == 0 || got.Team != "team_a" {
		t.Fatalf("handed out %+v", got)
	}
	// It was stored before it was handed out.
	stored, err := st.GetEvent(context.Background(), got.ID)
	if err != nil || stored.Seq != got.Seq || stored.Team != "team_a" {
		t.Fatalf("stored %+v %v", stored, err)
	}
	if second := recv(t, sub); second.Type != events.ModelReady || second.Seq <= got.Seq || second.Team != "" {
		t.Fatalf("second %+v", second)
	}
}

func TestLostEventsAreCounted(t *testing.T) {
	st := &eventstest.Store{Fail: errors.New("disk on fire")}
	var lost atomic.Int64
	b := events.New(events.Config{Store: st, OnLost: func(n int) { lost.Add(int64(n)) }, Log: quiet})
	sub := b.Subscribe(8)
	b.Publish(events.ModelFailed, nil)
	// Not stored, but still handed to in-process subscribers.
	if ev := recv(t, sub); ev.Type != events.ModelFailed || ev.Seq != 0 {
		t.Fatalf("%+v", ev)
	}
	if lost.Load() != 1 || b.Lost() != 1 {
		t.Fatalf("lost %d / %d", lost.Load(), b.Lost())
	}
	b.Close()
	b.Close() // twice is fine
	b.Publish(events.ModelFailed, nil)
	if lost.Load() != 2 {
		t.Fatalf("after Close: lost %d", lost.Load())
	}
}

// blockingStore holds appends until release is closed.
type blockingStore struct {
	*eventstest.Store
	release chan struct{}
}

func (s blockingStore) AppendEvents(ctx context.Context, evs []events.Event) error {
	<-s.release
	return s.Store.AppendEvents(ctx, evs)
}

func TestPublishNeverBlocks(t *testing.T) {
	st := blockingStore{&eventstest.Store{}, make(chan struct{})}
	var lost atomic.Int64
	b := events.New(events.Config{Store: st, Buffer: 4, OnLost: func(n int) { lost.Add(int64(n)) }, Log: quiet})
	start := time.Now()
	for range 50 {
		b.Publish(events.ModelReady, nil)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("publishing to a stuck store took %v", d)
	}
	if n := lost.Load(); n == 0 {
		t.Fatal("nothing lost: the queue holds 4, the stuck writer one batch")
	}
	close(st.release)
	b.Close() // stores what was queued
	if n := len(st.All()); int64(n)+lost.Load() != 50 {
		t.Fatalf("stored %d + lost %d != 50", n, lost.Load())
	}
}

func TestAppendIsSynchronousAndOnce(t *testing.T) {
	st := &eventstest.Store{}
	b := events.New(events.Config{Store: st})
	defer b.Close()
	ctx := context.Background()
	ev, err := b.Append(ctx, events.Event{ID: "evt_run1_done", Type: events.WorkflowRunSucceeded, Team: "team_a", Data: map[string]string{"id": "run1"}})
	if err != nil || ev.Seq == 0 || ev.Object != events.Object || ev.CreatedAt.IsZero() {
		t.Fatalf("%+v %v", ev, err)
	}
	if _, err := b.Append(ctx, events.Event{ID: "evt_run1_done", Type: events.WorkflowRunSucceeded, Team: "team_a"}); !errors.Is(err, events.ErrDuplicate) {
		t.Fatalf("second append: %v", err)
	}
	if n := len(st.All()); n != 1 {
		t.Fatalf("stored %d", n)
	}
	if _, err := events.NewBus().Append(ctx, events.Event{Type: events.ModelReady}); !errors.Is(err, events.ErrNoStore) {
		t.Fatalf("without a store: %v", err)
	}
}

// waitChanged waits for a wake-up.
func waitChanged(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatalf("no wake-up: %s", what)
	}
}

func TestCursorReadsPagesAfterWakeUps(t *testing.T) {
	st := &eventstest.Store{}
	b := events.New(events.Config{Store: st, Poll: time.Hour})
	defer b.Close()
	ctx := context.Background()
	b.Append(ctx, events.Event{Type: events.ModelReady}) // before the cursor: not seen
	head, err := b.Head(ctx)
	if err != nil || head != 1 {
		t.Fatalf("head %d %v", head, err)
	}
	cur := b.Follow(events.Filter{Team: "team_a", After: head})
	defer cur.Close()
	changed := cur.Changed()
	if evs, more, err := cur.Next(ctx); err != nil || len(evs) != 0 || more {
		t.Fatalf("%v %v %v", evs, more, err)
	}
	for i := range 250 {
		team := "team_a"
		if i%2 == 1 {
			team = "team_b"
		}
		b.PublishTeam(team, events.AuditTriggered, map[string]int{"i": i})
	}
	waitChanged(t, changed, "publish")
	var got []events.Event
	for len(got) < 125 {
		changed := cur.Changed()
		evs, more, err := cur.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > events.PageSize {
			t.Fatalf("a page of %d", len(evs))
		}
		got = append(got, evs...)
		if !more && len(got) < 125 {
			waitChanged(t, changed, "the rest")
		}
	}
	for i, ev := range got {
		var d map[string]int
		json.Unmarshal(ev.Data.(json.RawMessage), &d)
		if ev.Team != "team_a" || d["i"] != 2*i {
			t.Fatalf("event %d: %+v %v", i, ev, d)
		}
	}
	if evs, more, _ := cur.Next(ctx); len(evs) != 0 || more || cur.After() != 251 {
		t.Fatalf("caught up: %d %v at %d", len(evs), more, cur.After())
	}
}

// TestPollWakesFollowers: a second bus on the same store stands for
// another server that sends no notices; the poll of the head wakes this
// one's followers.
func TestPollWakesFollowers(t *testing.T) {
	st := &eventstest.Store{}
	here := events.New(events.Config{Store: st, Poll: 20 * time.Millisecond})
	defer here.Close()
	there := events.New(events.Config{Store: st, Poll: time.Hour})
	defer there.Close()
	ctx := context.Background()
	cur := here.Follow(events.Filter{AllTeams: true})
	defer cur.Close()
	changed := cur.Changed()
	cur.Next(ctx)
	if _, err := there.Append(ctx, events.Event{Type: events.DocumentReady, Team: "team_z"}); err != nil {
		t.Fatal(err)
	}
	waitChanged(t, changed, "another server's event")
	if evs, _, err := cur.Next(ctx); err != nil || len(evs) != 1 || evs[0].Team != "team_z" {
		t.Fatalf("%v %v", evs, err)
	}
}

// TestResume: a client resumes after an event it could have been sent;
// an unknown id, or another team's event, is a 400 naming where the id
// came from, exactly alike.
func TestResume(t *testing.T) {
	b := events.New(events.Config{Store: &eventstest.Store{}})
	defer b.Close()
	ctx := context.Background()
	mine, err := b.Append(ctx, events.Event{Type: events.ModelReady, Team: "team_a"})
	if err != nil {
		t.Fatal(err)
	}
	theirs, _ := b.Append(ctx, events.Event{Type: events.ModelReady, Team: "team_b"})
	deployment, _ := b.Append(ctx, events.Event{Type: events.ModelReady})
	f := events.Filter{Team: "team_a"}
	for _, ev := range []events.Event{mine, deployment} {
		if got, err := f.Resume(ctx, b, ev.ID, "after"); err != nil || got.After != ev.Seq {
			t.Fatalf("resume after %s: %+v %v", ev.ID, got, err)
		}
	}
	for _, id := range []string{theirs.ID, "evt_nope"} {
		_, err := f.Resume(ctx, b, id, "Last-Event-ID")
		e := apierr.From(err)
		if !errors.Is(err, events.ErrNotFound) || e.Status() != 400 || e.Param != "Last-Event-ID" || e.Message != `no event "`+id+`" to resume after` {
			t.Fatalf("resume after %s: %+v", id, e)
		}
	}
	if got, err := (events.Filter{AllTeams: true}).Resume(ctx, b, theirs.ID, "after"); err != nil || got.After != theirs.Seq {
		t.Fatalf("an admin resumes after any team's: %+v %v", got, err)
	}
}
