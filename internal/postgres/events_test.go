package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/postgres"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

// openTwo opens two stores ("servers") on one fresh schema.
func openTwo(t *testing.T) (*postgres.Store, *postgres.Store) {
	t.Helper()
	url := storetest.PostgresURL(t)
	var out [2]*postgres.Store
	for i := range out {
		s, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out[i] = s
	}
	return out[0], out[1]
}

// TestEventSeqVisibleInOrder appends from two servers at once while a
// reader follows the log by sequence number, moving past each page (and
// to the head when a page is short): it must end up with every event
// exactly once. A number that became visible before a smaller one would
// make the reader skip the smaller one for good.
func TestEventSeqVisibleInOrder(t *testing.T) {
	a, b := openTwo(t)
	ctx := context.Background()
	const writers, each = 6, 40
	var wg sync.WaitGroup
	for w := range writers {
		s := a
		if w%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ev := events.Event{ID: fmt.Sprintf("evt_w%d_%03d", w, i), Object: events.Object, Type: events.ModelReady,
					CreatedAt: time.Now(), Data: map[string]int{"w": w, "i": i}}
				if i%3 == 0 {
					ev.Team = "team_x"
				}
				if err := s.AppendEvents(ctx, []events.Event{ev}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	seen := map[string]bool{}
	var after int64
	read := func(s *postgres.Store) {
		evs, through, err := s.EventsAfter(ctx, events.Filter{AllTeams: true, After: after, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Seq <= after || seen[ev.ID] {
				t.Fatalf("%s (seq %d) again or out of order after %d", ev.ID, ev.Seq, after)
			}
			seen[ev.ID], after = true, ev.Seq
		}
		after = max(after, through)
	}
	for n := 0; ; n++ {
		select {
		case <-done:
			read(a)
			for len(seen) < writers*each {
				before := len(seen)
				read(b)
				if len(seen) == before {
					break
				}
			}
			if len(seen) != writers*each {
				t.Fatalf("the reader saw %d of %d events: numbers became visible out of order", len(seen), writers*each)
			}
			t.Logf("%d events, read in %d passes", len(seen), n)
			return
		default:
			if n%2 == 0 {
				read(a)
			} else {
				read(b)
			}
		}
	}
}

// TestEventsReachOtherServer checks the wake-up across servers: a
// follower on one bus learns of events published through the other at
// once (PostgreSQL NOTIFY), long before its poll (an hour here) would.
func TestEventsReachOtherServer(t *testing.T) {
	a, b := openTwo(t)
	busA := events.New(events.Config{Store: a, Poll: time.Hour})
	defer busA.Close()
	busB := events.New(events.Config{Store: b, Poll: time.Hour})
	defer busB.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cur := busA.Follow(events.Filter{Team: "team_1"})
	defer cur.Close()
	time.Sleep(300 * time.Millisecond) // A's listener starts
	for round := range 3 {
		changed := cur.Changed()
		if evs, _, err := cur.Next(ctx); err != nil || len(evs) != 0 {
			t.Fatalf("round %d: %v %v", round, evs, err)
		}
		start := time.Now()
		busB.PublishTeam("team_2", events.AuditTriggered, nil) // another team's: not seen
		mine := busB.PublishTeam("team_1", events.AuditTriggered, map[string]int{"round": round})
		busB.Publish(events.ModelReady, map[string]string{"model": "m"}) // the deployment's: seen
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: no wake-up on A within 5 s of events stored through B", round)
		}
		var got []events.Event
		for len(got) < 2 {
			changed := cur.Changed()
			more, _, err := cur.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, more...)
			if len(got) < 2 {
				select {
				case <-changed:
				case <-time.After(5 * time.Second):
					t.Fatalf("round %d: A has %d of 2 events", round, len(got))
				}
			}
		}
		if len(got) != 2 || got[0].ID != mine.ID || got[0].Team != "team_1" || got[1].Type != events.ModelReady {
			t.Fatalf("round %d: %+v", round, got)
		}
		t.Logf("round %d: on A %v after B published", round, time.Since(start).Round(time.Millisecond))
	}
}
