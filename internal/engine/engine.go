// Package engine runs local models: it starts one `sovereign runner` child
// process per loaded model on a loopback port, waits for its health, routes
// requests to it over the runner protocol, caps queued requests per model,
// unloads idle models, limits how many are loaded, restarts a runner that
// crashed, and reports a model that cannot load as failed with the runner's
// last stderr lines. A runner that dies takes down only its own requests.
//
// The Manager implements inference.Backend for models in its Catalog.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// Config configures a Manager.
type Config struct {
	// Exe is the sovereign binary started as `Exe runner …` (default: this
	// process's executable).
	Exe        string
	Slots      int           // parallel sequences per runner (default 4)
	CtxPerSlot int           // context tokens per sequence (default 4096)
	Batch      int           // tokens per decode step (default 512)
	Threads    int           // CPU threads per runner (0: one per core)
	MaxQueue   int           // requests waiting beyond the slots before 503 (default 16)
	KeepAlive  time.Duration // idle time before a model is unloaded (default 5m; <0 never)
	MaxLoaded  int           // most models loaded at once (default 2)
	// Deterministic starts runners with --deterministic: a request's
	// output does not depend on the other requests in the batch.
	Deterministic bool
	// InteractiveWindow is how long after an interactive request one slot
	// of its model stays out of background work's reach, so that the next
	// interactive request finds it free (default 10s; <0: background work
	// may take every slot). See acquire.
	InteractiveWindow time.Duration
	// LoadTimeout bounds how long a runner may take to become healthy
	// (default 2m).
	LoadTimeout time.Duration
	// FailureTTL is how long a failed load is remembered before the next
	// request tries again (default 30s); a changed model file retries at once.
	FailureTTL time.Duration
	Events     events.Publisher
	Log        *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// State of a model in the manager.
const (
	StateLoading = "loading"
	StateReady   = "ready"
	StateFailed  = "failed"
)

// ModelStatus describes a model the manager knows about.
type ModelStatus struct {
	ID       string    `json:"id"`
	State    string    `json:"state"`
	Reason   string    `json:"reason,omitempty"`
	PID      int       `json:"pid,omitempty"`
	Addr     string    `json:"addr,omitempty"`
	Inflight int       `json:"inflight"`
	LastUsed time.Time `json:"last_used"`
}

// Manager owns the runner processes.
type Manager struct {
	cfg    Config
	client *http.Client

	mu      sync.Mutex
	runners map[string]*proc
	failed  map[string]failure
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

type failure struct {
	err    error
	reason string
	at     time.Time
	mtime  time.Time
	size   int64
}

// New returns a Manager and starts its idle reaper.
func New(cfg Config) *Manager {
	if cfg.Exe == "" {
		cfg.Exe, _ = os.Executable()
	}
	if cfg.Slots <= 0 {
		cfg.Slots = 4
	}
	if cfg.CtxPerSlot <= 0 {
		cfg.CtxPerSlot = 4096
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 512
	}
	if cfg.MaxQueue < 0 {
		cfg.MaxQueue = 0
	} else if cfg.MaxQueue == 0 {
		cfg.MaxQueue = 16
	}
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = 5 * time.Minute
	}
	if cfg.MaxLoaded <= 0 {
		cfg.MaxLoaded = 2
	}
	if cfg.LoadTimeout <= 0 {
		cfg.LoadTimeout = 2 * time.Minute
	}
	if cfg.FailureTTL <= 0 {
		cfg.FailureTTL = 30 * time.Second
	}
	if cfg.InteractiveWindow == 0 {
		cfg.InteractiveWindow = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Events == nil {
		cfg.Events = events.NewBus()
	}
	m := &Manager{
		cfg:     cfg,
		client:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}},
		runners: map[string]*proc{},
		failed:  map[string]failure{},
		stop:    make(chan struct{}),
	}
	if cfg.KeepAlive > 0 {
		m.wg.Add(1)
		go m.reap()
	}
	return m
}

// Close stops every runner.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	close(m.stop)
	rs := make([]*proc, 0, len(m.runners))
	for _, p := range m.runners {
		rs = append(rs, p)
	}
	m.runners = map[string]*proc{}
	m.mu.Unlock()
	for _, p := range rs {
		p.kill()
	}
	m.wg.Wait()
}

// Status lists loaded, loading and failed models, sorted by id.
func (m *Manager) Status() []ModelStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ModelStatus
	for id, p := range m.runners {
		st := ModelStatus{ID: id, State: p.state(), PID: p.pid(), Addr: p.addr, Inflight: p.inflight, LastUsed: p.lastUsed}
		out = append(out, st)
	}
	for id, f := range m.failed {
		if _, ok := m.runners[id]; !ok {
			out = append(out, ModelStatus{ID: id, State: StateFailed, Reason: f.reason, LastUsed: f.at})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Load starts the runner of id, whose GGUF file is path, when it is not
// running and waits until it is ready (or failed to load: the error says
// why).
func (m *Manager) Load(ctx context.Context, id, path string) error {
	p, err := m.acquire(ctx, id, path)
	if err != nil {
		return err
	}
	m.release(p)
	return nil
}

// State returns the state of id (StateLoading, StateReady, StateFailed,
// or "" when it is not loaded) and, for a failure, the reason.
func (m *Manager) State(id string) (state, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.runners[id]; ok {
		return p.state(), ""
	}
	if f, ok := m.failed[id]; ok {
		return StateFailed, f.reason
	}
	return "", ""
}

// Unload stops the runner of id, if any.
func (m *Manager) Unload(id string) bool {
	m.mu.Lock()
	p, ok := m.runners[id]
	if ok {
		delete(m.runners, id)
	}
	m.mu.Unlock()
	if ok {
		p.kill()
		m.cfg.Events.Publish(events.ModelUnloaded, map[string]any{"model": id, "reason": "requested"})
	}
	return ok
}

// acquire returns a ready runner for id (its GGUF file: path) with one
// more in-flight request counted, starting it when needed. The caller must call release.
//
// A request of background priority (inference.PriorityBackground: batch
// lines) enters a ready runner only while one of its slots is free — two
// while an interactive request came within InteractiveWindow — and
// otherwise waits here, outside the runner's queue and outside the
// in-flight count: interactive requests waiting in the runner's queue get
// the next free slot first, background work never makes an interactive
// request overloaded (503), and is never refused for a full queue itself.
func (m *Manager) acquire(ctx context.Context, id, path string) (*proc, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: %q (no model file)", inference.ErrModelNotFound, id)
	}
	background := inference.PriorityFrom(ctx) == inference.PriorityBackground
	retried := false
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, errors.New("engine is shutting down")
		}
		p, ok := m.runners[id]
		if !ok {
			if f, bad := m.failed[id]; bad && m.failureStillValid(f, path) {
				m.mu.Unlock()
				return nil, f.err
			}
			if err := m.makeRoomLocked(id); err != nil {
				m.mu.Unlock()
				return nil, err
			}
			p = m.startLocked(id, path)
		}
		if background && p.state() == StateReady && !m.backgroundMayEnterLocked(p) {
			if p.freed == nil {
				p.freed = make(chan struct{})
			}
			freed := p.freed
			m.mu.Unlock()
			// A slot freed, or the interactive window may have closed.
			t := time.NewTimer(250 * time.Millisecond)
			select {
			case <-freed:
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
			t.Stop()
			continue
		}
		if p.inflight >= m.cfg.Slots+m.cfg.MaxQueue {
			m.mu.Unlock()
			return nil, &inference.OverloadedError{Model: id, RetryAfter: time.Second}
		}
		p.inflight++
		p.lastUsed = m.cfg.Now()
		if !background {
			p.lastInteractive = p.lastUsed
		}
		m.mu.Unlock()

		select {
		case <-p.ready:
		case <-ctx.Done():
			m.release(p)
			return nil, ctx.Err()
		}
		if p.loadErr == nil {
			return p, nil
		}
		m.release(p)
		if !retried && errors.Is(p.loadErr, errRunnerGone) {
			retried = true
			continue // it died before becoming ready for this caller; start again once
		}
		return nil, p.loadErr
	}
}

// backgroundMayEnterLocked reports whether a background request may take
// one of p's slots now: one is free, and, while interactive requests came
// within InteractiveWindow, another stays free for them.
func (m *Manager) backgroundMayEnterLocked(p *proc) bool {
	free := m.cfg.Slots - p.inflight
	if free > 1 || free == 1 && m.cfg.Slots == 1 {
		return true
	}
	if free < 1 {
		return false
	}
	w := m.cfg.InteractiveWindow
	return w < 0 || p.lastInteractive.IsZero() || m.cfg.Now().Sub(p.lastInteractive) >= w
}

func (m *Manager) release(p *proc) {
	m.mu.Lock()
	p.inflight--
	p.lastUsed = m.cfg.Now()
	if p.freed != nil {
		// Wake the background requests waiting for a slot.
		close(p.freed)
		p.freed = nil
	}
	m.mu.Unlock()
}

func (m *Manager) failureStillValid(f failure, path string) bool {
	if m.cfg.Now().Sub(f.at) > m.cfg.FailureTTL {
		return false
	}
	st, err := os.Stat(path)
	if err != nil {
		return true
	}
	return st.ModTime().Equal(f.mtime) && st.Size() == f.size
}

// makeRoomLocked unloads the least recently used idle model when the limit
// of loaded models is reached.
func (m *Manager) makeRoomLocked(id string) error {
	if len(m.runners) < m.cfg.MaxLoaded {
		return nil
	}
	var victim *proc
	for _, p := range m.runners {
		if p.inflight == 0 && (victim == nil || p.lastUsed.Before(victim.lastUsed)) {
			victim = p
		}
	}
	if victim == nil {
		return &inference.OverloadedError{Model: id, RetryAfter: 5 * time.Second}
	}
	delete(m.runners, victim.id)
	go func() {
		victim.kill()
		m.cfg.Events.Publish(events.ModelUnloaded, map[string]any{"model": victim.id, "reason": "max_loaded_models"})
	}()
	return nil
}

func (m *Manager) reap() {
	defer m.wg.Done()
	interval := m.cfg.KeepAlive / 4
	if interval > 10*time.Second {
		interval = 10 * time.Second
	}
	if interval < 10*time.Millisecond {
		interval = 10 * time.Millisecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		var idle []*proc
		m.mu.Lock()
		now := m.cfg.Now()
		for id, p := range m.runners {
			if p.inflight == 0 && p.state() == StateReady && now.Sub(p.lastUsed) >= m.cfg.KeepAlive {
				delete(m.runners, id)
				idle = append(idle, p)
			}
		}
		m.mu.Unlock()
		for _, p := range idle {
			p.kill()
			m.cfg.Log.Info("model unloaded after keep-alive", "model", p.id)
			m.cfg.Events.Publish(events.ModelUnloaded, map[string]any{"model": p.id, "reason": "idle"})
		}
	}
}

// exited is called by a runner's monitor when its process ends.
func (m *Manager) exited(p *proc, wasReady bool, err error) {
	m.mu.Lock()
	if cur, ok := m.runners[p.id]; ok && cur == p {
		delete(m.runners, p.id)
	} else {
		// Unloaded on purpose.
		m.mu.Unlock()
		return
	}
	reason := "runner exited"
	if wasReady {
		reason = p.describeExit(err)
	} else if err != nil {
		reason = err.Error()
	}
	if !wasReady {
		f := failure{err: err, reason: reason, at: m.cfg.Now()}
		if f.err == nil {
			f.err = fmt.Errorf("%w: model %q: %s", inference.ErrModelFailed, p.id, reason)
		}
		if st, e := os.Stat(p.path); e == nil {
			f.mtime, f.size = st.ModTime(), st.Size()
		}
		m.failed[p.id] = f
	}
	m.mu.Unlock()
	if wasReady {
		m.cfg.Log.Error("model runner crashed", "model", p.id, "reason", reason)
		m.cfg.Events.Publish(events.ModelFailed, map[string]any{"model": p.id, "reason": reason, "phase": "serving"})
	} else {
		m.cfg.Log.Error("model failed to load", "model", p.id, "reason", reason)
		m.cfg.Events.Publish(events.ModelFailed, map[string]any{"model": p.id, "reason": reason, "phase": "loading"})
	}
}

func (m *Manager) becameReady(p *proc) {
	m.mu.Lock()
	delete(m.failed, p.id)
	m.mu.Unlock()
	m.cfg.Events.Publish(events.ModelReady, map[string]any{"model": p.id, "pid": p.pid(), "load_ms": p.loadTime.Milliseconds()})
}

func newToken() string {
	var b [24]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
