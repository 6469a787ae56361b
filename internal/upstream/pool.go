// Package upstream is the backend for models served by another
// OpenAI-compatible server: vLLM, llama-server, Ollama, TGI or another
// Sovereign. A Backend holds one or more replicas of one upstream model; it
// balances requests across them (fewest in flight, round robin among
// equals), checks their health, retries a request on another replica when
// the connection could not be made (nothing was sent yet) or the replica
// answered 502 or 503, and stops sending to a failing replica for a
// cool-down (a circuit breaker: closed → open → half-open → closed).
// Streams are relayed event by event as the upstream sends them; usage comes
// from the upstream or, when it sends none, from the model's tokenizer.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// Config describes one upstream model.
type Config struct {
	// Model is the Sovereign model id (used in errors and events).
	Model string
	// UpstreamModel is the model name the upstream knows (default Model).
	UpstreamModel string
	// Replicas are the base URLs of the replicas, each ending where the
	// OpenAI paths start (http://host:8000/v1).
	Replicas []string
	// APIKey, when set, is sent as Authorization: Bearer to every replica.
	APIKey string
	// Dial, when set, makes every connection to a replica (requests and
	// health checks), bounded by ConnectTimeout: the outbound rules'
	// dialer, so that a replica's address is checked when it is dialled
	// (no proxy is used then).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// ConnectTimeout bounds connecting to a replica (default 3s).
	ConnectTimeout time.Duration
	// FirstByteTimeout bounds the wait for the response headers (default
	// 60s: a busy upstream may queue the request).
	FirstByteTimeout time.Duration
	// IdleTimeout bounds the silence between two reads of a streamed
	// response before it is abandoned as stalled (default 30s).
	IdleTimeout time.Duration
	// Timeout bounds a whole request (default 10m).
	Timeout time.Duration
	// HealthInterval is how often replicas are checked (default 10s;
	// negative disables checks).
	HealthInterval time.Duration
	// FailureThreshold is how many consecutive failed requests open a
	// replica's breaker (default 3); a refused connection opens it at once.
	FailureThreshold int
	// Cooldown is how long an open breaker keeps a replica out before one
	// trial request is let through (default 10s).
	Cooldown time.Duration
	// Tokenizer, when set, tokenizes for this model: for /v1/tokenize and to
	// count usage when the upstream reports none. TokenizerModel is the
	// model id to send it.
	Tokenizer      Tokenizer
	TokenizerModel string
	Events         events.Publisher
	Log            *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Tokenizer is the part of a backend that tokenizes.
type Tokenizer interface {
	Tokenize(ctx context.Context, req inference.TokenizeRequest) (inference.TokenizeResponse, error)
	Detokenize(ctx context.Context, req inference.DetokenizeRequest) (inference.DetokenizeResponse, error)
}

// Breaker states of a replica.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// Model states reported by Status.
const (
	StateAvailable = "available"
	StateReady     = "ready"
	StateFailed    = "failed"
)

// ReplicaStatus describes one replica.
type ReplicaStatus struct {
	URL       string `json:"url"`
	Healthy   bool   `json:"healthy"`
	Breaker   string `json:"breaker"`
	Inflight  int    `json:"inflight"`
	LastError string `json:"last_error,omitempty"`
}

// Status describes the backend: ready when a replica is healthy, failed
// when none is, available before anything is known.
type Status struct {
	State    string          `json:"state"`
	Reason   string          `json:"reason,omitempty"`
	Replicas []ReplicaStatus `json:"replicas"`
}

type replica struct {
	base     string
	inflight atomic.Int64

	mu        sync.Mutex
	known     bool // a check or request has said something
	healthy   bool
	breaker   string
	openUntil time.Time
	trial     bool // a half-open trial request is in flight
	failures  int
	lastErr   string
}

// Backend serves one upstream model from its replicas. It implements
// inference.Backend and inference.Reranker.
type Backend struct {
	cfg    Config
	client *http.Client
	reps   []*replica
	rr     atomic.Uint64

	mu       sync.Mutex
	state    string
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

var (
	_ inference.Backend  = (*Backend)(nil)
	_ inference.Reranker = (*Backend)(nil)
)

// New returns a Backend for cfg. Call Start to begin health checks and
// Close to stop them. It returns an error for a config without replicas
// or with a malformed URL.
func New(cfg Config) (*Backend, error) {
	if len(cfg.Replicas) == 0 {
		return nil, fmt.Errorf("upstream model %q: no base_url or replicas", cfg.Model)
	}
	if cfg.UpstreamModel == "" {
		cfg.UpstreamModel = cfg.Model
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.ConnectTimeout, 3*time.Second)
	def(&cfg.FirstByteTimeout, 60*time.Second)
	def(&cfg.IdleTimeout, 30*time.Second)
	def(&cfg.Timeout, 10*time.Minute)
	def(&cfg.HealthInterval, 10*time.Second)
	def(&cfg.Cooldown, 10*time.Second)
	if cfg.FailureThreshold <= 0 {
		cfg.FailureThreshold = 3
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
	b := &Backend{cfg: cfg, state: StateAvailable, stop: make(chan struct{})}
	for _, u := range cfg.Replicas {
		u = strings.TrimRight(u, "/")
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("upstream model %q: replica URL %q must start with http:// or https://", cfg.Model, u)
		}
		b.reps = append(b.reps, &replica{base: u, breaker: BreakerClosed})
	}
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	dial, proxy := dialer.DialContext, http.ProxyFromEnvironment
	if cfg.Dial != nil {
		// Through a proxy the address checked would be the proxy's.
		proxy = nil
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
			defer cancel()
			return cfg.Dial(ctx, network, addr)
		}
	}
	b.client = &http.Client{Transport: &http.Transport{
		Proxy:                 proxy,
		DialContext:           dial,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.ConnectTimeout,
		ResponseHeaderTimeout: cfg.FirstByteTimeout,
		ForceAttemptHTTP2:     true,
	}}
	return b, nil
}

// Start begins periodic health checks (the first one at once).
func (b *Backend) Start() {
	if b.cfg.HealthInterval < 0 {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := time.NewTicker(b.cfg.HealthInterval)
		defer t.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), b.cfg.ConnectTimeout+b.cfg.FirstByteTimeout)
			go func() {
				select {
				case <-b.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			b.Check(ctx)
			cancel()
			select {
			case <-b.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// Close stops health checks and closes idle connections.
func (b *Backend) Close() {
	b.stopOnce.Do(func() { close(b.stop) })
	b.wg.Wait()
	b.client.CloseIdleConnections()
}

// Check asks every replica for GET /models now, updates their health and
// returns the resulting status.
func (b *Backend) Check(ctx context.Context) Status {
	var wg sync.WaitGroup
	for _, r := range b.reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := b.probe(ctx, r)
			if ctx.Err() != nil && err != nil {
				return // stopping; say nothing
			}
			r.mu.Lock()
			r.known = true
			if err == nil {
				r.healthy, r.breaker, r.failures, r.lastErr = true, BreakerClosed, 0, ""
			} else {
				r.healthy = false
				r.lastErr = err.Error()
				if r.breaker == BreakerClosed {
					r.breaker, r.openUntil = BreakerOpen, b.cfg.Now().Add(b.cfg.Cooldown)
				}
			}
			r.mu.Unlock()
		}()
	}
	wg.Wait()
	b.transition()
	return b.Status()
}

func (b *Backend) probe(ctx context.Context, r *replica) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/models", nil)
	if err != nil {
		return err
	}
	b.authorize(req)
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	defer resp.Body.Close()
	drain(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health check: GET %s/models answered HTTP %d", r.base, resp.StatusCode)
	}
	return nil
}

// Status reports the model's state and its replicas.
func (b *Backend) Status() Status {
	st := Status{}
	var reasons []string
	anyHealthy, allKnown := false, true
	for _, r := range b.reps {
		r.mu.Lock()
		rs := ReplicaStatus{URL: r.base, Healthy: r.known && r.healthy, Breaker: r.breaker, Inflight: int(r.inflight.Load()), LastError: r.lastErr}
		if r.breaker == BreakerOpen && !b.cfg.Now().Before(r.openUntil) {
			rs.Breaker = BreakerHalfOpen
		}
		if !r.known {
			allKnown = false
		}
		if r.known && r.healthy {
			anyHealthy = true
		}
		if r.lastErr != "" {
			reasons = append(reasons, r.base+": "+r.lastErr)
		}
		r.mu.Unlock()
		st.Replicas = append(st.Replicas, rs)
	}
	switch {
	case anyHealthy:
		st.State = StateReady
	case allKnown:
		st.State = StateFailed
		st.Reason = strings.Join(reasons, "; ")
	default:
		st.State = StateAvailable
	}
	return st
}

// transition publishes model.ready / model.failed when the overall state
// changes.
func (b *Backend) transition() {
	st := b.Status()
	b.mu.Lock()
	prev := b.state
	b.state = st.State
	b.mu.Unlock()
	if prev == st.State {
		return
	}
	switch st.State {
	case StateReady:
		healthy := 0
		for _, r := range st.Replicas {
			if r.Healthy {
				healthy++
			}
		}
		b.cfg.Events.Publish(events.ModelReady, map[string]any{"model": b.cfg.Model, "backend": "upstream", "healthy_replicas": healthy, "replicas": len(st.Replicas)})
	case StateFailed:
		b.cfg.Log.Warn("every replica of an upstream model is down", "model", b.cfg.Model, "reason", st.Reason)
		b.cfg.Events.Publish(events.ModelFailed, map[string]any{"model": b.cfg.Model, "backend": "upstream", "reason": st.Reason, "phase": "serving"})
	}
}

// Reset forgets what is known of the replicas' health (an unload): the
// model reads "available" until the next check or request.
func (b *Backend) Reset() {
	for _, r := range b.reps {
		r.mu.Lock()
		r.known, r.healthy, r.breaker, r.failures, r.lastErr, r.trial = false, false, BreakerClosed, 0, "", false
		r.mu.Unlock()
	}
	b.mu.Lock()
	b.state = StateAvailable
	b.mu.Unlock()
}

// pick chooses the replica for the next attempt, skipping tried ones and
// those whose breaker is open: the fewest requests in flight wins, and
// round robin breaks ties. It returns nil when none may be tried.
func (b *Backend) pick(tried []bool) *replica {
	now := b.cfg.Now()
	start := int(b.rr.Add(1))
	var best *replica
	var bestLoad int64
	n := len(b.reps)
	for k := 0; k < n; k++ {
		i := (start + k) % n
		if tried[i] {
			continue
		}
		r := b.reps[i]
		r.mu.Lock()
		ok := r.breaker == BreakerClosed || (r.breaker == BreakerOpen && !now.Before(r.openUntil)) || (r.breaker == BreakerHalfOpen && !r.trial)
		r.mu.Unlock()
		if !ok {
			continue
		}
		if l := r.inflight.Load(); best == nil || l < bestLoad {
			best, bestLoad = r, l
		}
	}
	if best == nil {
		return nil
	}
	best.mu.Lock()
	if best.breaker != BreakerClosed {
		// The cool-down is over: this request is the half-open trial.
		best.breaker, best.trial = BreakerHalfOpen, true
	}
	best.mu.Unlock()
	return best
}

func (b *Backend) index(r *replica) int {
	for i, x := range b.reps {
		if x == r {
			return i
		}
	}
	return -1
}

// succeeded closes r's breaker.
func (b *Backend) succeeded(r *replica) {
	r.mu.Lock()
	changed := !r.known || !r.healthy
	r.known, r.healthy, r.breaker, r.trial, r.failures, r.lastErr = true, true, BreakerClosed, false, 0, ""
	r.mu.Unlock()
	if changed {
		b.transition()
	}
}

// failed counts a failure of r; hard failures (refused connections) and
// failed half-open trials open the breaker at once.
func (b *Backend) failed(r *replica, err error, hard bool) {
	r.mu.Lock()
	r.known = true
	r.failures++
	r.lastErr = err.Error()
	opened := false
	if hard || r.breaker == BreakerHalfOpen || r.failures >= b.cfg.FailureThreshold {
		if r.breaker != BreakerOpen {
			opened = true
		}
		r.healthy = false
		r.breaker, r.openUntil, r.trial = BreakerOpen, b.cfg.Now().Add(b.cfg.Cooldown), false
	}
	r.mu.Unlock()
	if opened {
		b.cfg.Log.Warn("upstream replica taken out of rotation", "model", b.cfg.Model, "replica", r.base, "err", err, "cooldown", b.cfg.Cooldown.String())
		b.transition()
	}
}

// release ends an attempt that neither succeeded nor failed (the client
// went away), freeing a half-open trial.
func (b *Backend) release(r *replica) {
	r.mu.Lock()
	if r.trial {
		r.trial = false
	}
	r.mu.Unlock()
}

// isConnectError reports whether err happened before the request was sent:
// the connection could not be made.
func isConnectError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

func (b *Backend) unavailable(lastErr error) error {
	msg := fmt.Sprintf("model %q: no upstream replica is available", b.cfg.Model)
	if lastErr != nil {
		msg += " (last error: " + lastErr.Error() + ")"
	} else {
		msg += fmt.Sprintf(" (all %d are out of rotation after failures; retrying in at most %s)", len(b.reps), b.cfg.Cooldown)
	}
	return &inference.UpstreamError{Model: b.cfg.Model, Kind: inference.UpstreamUnavailable, Message: msg, RetryAfter: b.cfg.Cooldown}
}
