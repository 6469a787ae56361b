package events

import "testing"

func TestPublishFansOutAndDropsWhenFull(t *testing.T) {
	b := NewBus()
	a := b.Subscribe(4)
	small := b.Subscribe(1)
	defer a.Close()
	b.Publish(ModelReady, map[string]string{"model": "m"})
	ev2 := b.Publish(ModelUnloaded, nil)
	got := <-a.C
	if got.Type != ModelReady || got.Object != "event" || len(got.ID) < 8 || got.ID[:4] != "evt_" {
		t.Fatalf("unexpected first event %+v", got)
	}
	if (<-a.C).ID != ev2.ID {
		t.Fatal("second event not delivered in order")
	}
	if small.Dropped() != 1 {
		t.Fatalf("dropped = %d, want 1", small.Dropped())
	}
	small.Close()
	if _, ok := <-small.C; !ok {
		// drained the one buffered event first
	}
	b.Publish(ModelFailed, nil) // must not panic after Close
}
