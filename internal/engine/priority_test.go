package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/inference"
)

// mPath is model m's file (never opened: its runner is ready already).
const mPath = "/nonexistent/m.gguf"

// readyManager returns a manager whose model "m" has a ready runner (no
// process: acquire and release only count), and a clock tests move.
func readyManager(t *testing.T, slots, maxQueue int) (*Manager, *proc, func(time.Duration)) {
	t.Helper()
	var mu sync.Mutex
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	m := New(Config{Slots: slots, MaxQueue: maxQueue, KeepAlive: -1, InteractiveWindow: 10 * time.Second,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	t.Cleanup(func() {
		m.mu.Lock()
		m.runners = map[string]*proc{} // no process to kill
		m.mu.Unlock()
		m.Close()
	})
	p := &proc{id: "m", ready: make(chan struct{}), exitedCh: make(chan struct{})}
	close(p.ready)
	m.runners["m"] = p
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	return m, p, advance
}

var background = inference.WithPriority(context.Background(), inference.PriorityBackground)

// acquireAsync starts acquire in a goroutine; the channel gets its result.
func acquireAsync(m *Manager, ctx context.Context) chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := m.acquire(ctx, "m", mPath)
		ch <- err
	}()
	return ch
}

func waiting(t *testing.T, ch chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("acquire returned (%v), want it to wait", err)
	case <-time.After(100 * time.Millisecond):
	}
}

func entered(t *testing.T, ch chan error) {
	t.Helper()
	select {
	case err := <-ch:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("acquire still waits")
	}
}

func TestBackgroundTakesOnlyFreeSlots(t *testing.T) {
	m, p, _ := readyManager(t, 2, -1)
	for range 2 {
		if _, err := m.acquire(background, "m", mPath); err != nil {
			t.Fatal(err)
		}
	}
	// Both slots busy and no queue: a background request waits, where an
	// interactive one would be refused.
	third := acquireAsync(m, background)
	waiting(t, third)
	if _, err := m.acquire(context.Background(), "m", mPath); err == nil {
		t.Fatal("an interactive request beyond slots+queue was admitted")
	}
	m.release(p)
	entered(t, third)
	if p.inflight != 2 {
		t.Fatalf("inflight %d", p.inflight)
	}
}

func TestInteractiveGoesFirst(t *testing.T) {
	m, p, advance := readyManager(t, 2, 4)
	for range 2 {
		if _, err := m.acquire(background, "m", mPath); err != nil {
			t.Fatal(err)
		}
	}
	advance(time.Minute)
	// An interactive request arrives with both slots busy: it queues in the
	// runner (counted in flight). A waiting background request must not
	// take the slot the next release frees: the interactive one has it.
	if _, err := m.acquire(context.Background(), "m", mPath); err != nil {
		t.Fatal(err)
	}
	bg := acquireAsync(m, background)
	waiting(t, bg)
	m.release(p) // a background line ends; the queued interactive request runs
	waiting(t, bg)
	// While interactive requests come, one slot stays theirs: with the
	// interactive request running and one slot free, background waits.
	m.release(p) // the other background line ends
	if p.inflight != 1 {
		t.Fatalf("inflight %d, want the interactive request alone", p.inflight)
	}
	waiting(t, bg)
	// Once no interactive request came for the window, background takes
	// the free slot.
	advance(11 * time.Second)
	entered(t, bg)
}

func TestBackgroundWaitEndsWithContext(t *testing.T) {
	m, _, _ := readyManager(t, 1, -1)
	if _, err := m.acquire(context.Background(), "m", mPath); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(background)
	ch := acquireAsync(m, ctx)
	waiting(t, ch)
	cancel()
	select {
	case err := <-ch:
		if err != context.Canceled {
			t.Fatalf("err %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a cancelled background request still waits")
	}
}
