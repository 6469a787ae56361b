package policy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/policy"
)

type memAppender struct {
	mu    sync.Mutex
	got   []policy.Decision
	gate  chan struct{} // when set, appends wait for it
	fails atomic.Int64  // appends to fail
}

func (m *memAppender) AppendDecisions(ctx context.Context, ds []policy.Decision) error {
	if m.gate != nil {
		<-m.gate
	}
	if m.fails.Load() > 0 {
		m.fails.Add(-1)
		return errors.New("database down")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, ds...)
	return nil
}

func decisions(n int) []policy.Decision {
	ds := make([]policy.Decision, n)
	for i := range ds {
		ds[i] = policy.Decision{ID: fmt.Sprintf("pdec_%03d", i), Action: policy.ActionFlag}
	}
	return ds
}

func TestWriter(t *testing.T) {
	m := &memAppender{}
	var lost atomic.Int64
	w := policy.NewWriter(m, 16, func(n int) { lost.Add(int64(n)) }, slog.New(slog.DiscardHandler))
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, d := range decisions(10) {
				w.Log(d)
			}
		}()
	}
	wg.Wait()
	w.Log()
	w.Close()
	if n := int64(len(m.got)) + lost.Load(); n != 100 || w.Lost() != lost.Load() {
		t.Fatalf("stored %d + lost %d != 100", len(m.got), lost.Load())
	}
	// After Close, decisions are lost, not a panic.
	w.Log(decisions(2)...)
	w.Close()
	if w.Lost() != lost.Load() || lost.Load() < 2 {
		t.Fatalf("lost after close: %d %d", w.Lost(), lost.Load())
	}
}

func TestWriterFull(t *testing.T) {
	m := &memAppender{gate: make(chan struct{})}
	var lost atomic.Int64
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	w := policy.NewWriter(m, 4, func(n int) { lost.Add(int64(n)) }, log)
	// The writer takes what is queued and blocks on the store; the buffer
	// fills up; the rest are lost, and logged once.
	sent := 1
	w.Log(decisions(1)...)
	for w.Lost() == 0 {
		w.Log(decisions(1)...)
		sent++
	}
	w.Log(decisions(20)...)
	sent += 20
	close(m.gate)
	w.Close()
	if int64(len(m.got))+lost.Load() != int64(sent) || lost.Load() < 1 || w.Lost() != lost.Load() {
		t.Fatalf("sent %d, stored %d, lost %d", sent, len(m.got), lost.Load())
	}
	if n := strings.Count(logs.String(), "buffer is full"); n != 1 {
		t.Fatalf("%d warnings:\n%s", n, logs.String())
	}
}

func TestWriterStoreErrors(t *testing.T) {
	m := &memAppender{}
	m.fails.Store(3)
	var logs bytes.Buffer
	w := policy.NewWriter(m, 8, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	w.Log(decisions(1)...)
	w.Close()
	if w.Lost() != 1 || len(m.got) != 0 || !strings.Contains(logs.String(), "database down") {
		t.Fatalf("lost %d, stored %d, log %s", w.Lost(), len(m.got), logs.String())
	}
}
