package upstream_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/upstream"
	"github.com/sovereign-ai/sovereign/internal/upstream/upstreamtest"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newBackend(t *testing.T, urls []string, mod func(*upstream.Config)) *upstream.Backend {
	t.Helper()
	cfg := upstream.Config{Model: "m", UpstreamModel: "mock", Replicas: urls, HealthInterval: -1, IdleTimeout: 300 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	b, err := upstream.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

var chat = inference.CompletionRequest{Messages: []inference.Message{{Role: "user", Content: "hi"}}, MaxTokens: 8}

// collect runs a completion and returns its text and final event.
func collect(t *testing.T, b *upstream.Backend, req inference.CompletionRequest) (string, inference.Event, error) {
	t.Helper()
	st, err := b.Complete(context.Background(), req)
	if err != nil {
		return "", inference.Event{}, err
	}
	defer st.Close()
	var sb strings.Builder
	for {
		ev, err := st.Recv()
		if errors.Is(err, io.EOF) {
			t.Fatal("stream ended without a final event")
		}
		if err != nil {
			return sb.String(), ev, err
		}
		sb.WriteString(ev.Text)
		if ev.Done {
			return sb.String(), ev, nil
		}
	}
}

func kind(err error) string {
	var ue *inference.UpstreamError
	if errors.As(err, &ue) {
		return ue.Kind
	}
	return ""
}

func TestStreamAndWhole(t *testing.T) {
	a := upstreamtest.New(t, "a")
	b := newBackend(t, []string{a.BaseURL()}, nil)
	for _, stream := range []bool{true, false} {
		req := chat
		req.Stream = stream
		text, last, err := collect(t, b, req)
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		if text != a.Reply() || last.FinishReason != "stop" || last.Usage == nil || last.Usage.CompletionTokens != 4 || last.Usage.PromptTokens != 5 {
			t.Fatalf("stream=%v: %q %+v %+v", stream, text, last, last.Usage)
		}
		body := a.LastBody()
		if body["model"] != "mock" || (stream && body["stream"] != true) || (!stream && body["stream"] != nil) {
			t.Fatalf("stream=%v: upstream got %v", stream, body)
		}
		if stream {
			if opts, _ := body["stream_options"].(map[string]any); opts["include_usage"] != true {
				t.Fatalf("include_usage not asked: %v", body)
			}
		}
	}
	// A text completion goes to /completions.
	text, _, err := collect(t, b, inference.CompletionRequest{Prompt: "Once", Stream: true})
	if err != nil || text != a.Reply() {
		t.Fatalf("completion: %q %v", text, err)
	}
	if _, ok := a.LastBody()["prompt"]; !ok {
		t.Fatalf("completion body: %v", a.LastBody())
	}
}

func TestBalancesAcrossReplicas(t *testing.T) {
	a, c := upstreamtest.New(t, "a"), upstreamtest.New(t, "c")
	b := newBackend(t, []string{a.BaseURL(), c.BaseURL()}, nil)
	for i := 0; i < 20; i++ {
		if _, _, err := collect(t, b, chat); err != nil {
			t.Fatal(err)
		}
	}
	if a.Requests.Load() < 5 || c.Requests.Load() < 5 {
		t.Fatalf("unbalanced: a=%d c=%d", a.Requests.Load(), c.Requests.Load())
	}
}

func TestOneReplicaDownFailsOver(t *testing.T) {
	a, c := upstreamtest.New(t, "a"), upstreamtest.New(t, "c")
	bus := events.NewBus()
	b := newBackend(t, []string{a.BaseURL(), c.BaseURL()}, func(cfg *upstream.Config) { cfg.Events = bus })
	a.Down()
	for i := 0; i < 10; i++ {
		text, _, err := collect(t, b, chat)
		if err != nil || !strings.Contains(text, "from c") {
			t.Fatalf("request %d: %q %v", i, text, err)
		}
	}
	st := b.Status()
	if st.State != upstream.StateReady || st.Replicas[0].Breaker != upstream.BreakerOpen || st.Replicas[0].Healthy || !st.Replicas[1].Healthy {
		t.Fatalf("status: %+v", st)
	}
	// A replica answering 503 is skipped the same way.
	d := upstreamtest.New(t, "d")
	d.SetMode(upstreamtest.Unavailable)
	b2 := newBackend(t, []string{d.BaseURL(), c.BaseURL()}, nil)
	for i := 0; i < 4; i++ {
		if text, _, err := collect(t, b2, chat); err != nil || !strings.Contains(text, "from c") {
			t.Fatalf("503 failover %d: %q %v", i, text, err)
		}
	}
}

func TestAllDownIsUnavailableAtOnce(t *testing.T) {
	b := newBackend(t, []string{upstreamtest.RefusedURL(t), upstreamtest.RefusedURL(t)}, func(cfg *upstream.Config) {
		cfg.FirstByteTimeout, cfg.Timeout = time.Minute, time.Minute
	})
	_, err := b.Complete(context.Background(), chat)
	if kind(err) != inference.UpstreamUnavailable {
		t.Fatalf("first: %v", err)
	}
	// Both breakers are open now: the next request is refused without
	// trying, and the status says failed.
	_, err = b.Complete(context.Background(), chat)
	var ue *inference.UpstreamError
	if !errors.As(err, &ue) || ue.Kind != inference.UpstreamUnavailable || ue.RetryAfter <= 0 {
		t.Fatalf("second: %v", err)
	}
	if st := b.Status(); st.State != upstream.StateFailed || st.Reason == "" {
		t.Fatalf("status: %+v", st)
	}
}

func TestMalformedStream(t *testing.T) {
	a := upstreamtest.New(t, "a")
	a.SetMode(upstreamtest.Malformed)
	b := newBackend(t, []string{a.BaseURL()}, nil)
	req := chat
	req.Stream = true
	text, _, err := collect(t, b, req)
	if kind(err) != inference.UpstreamBadResponse || text != "reply" {
		t.Fatalf("got %q, %v", text, err)
	}
}

func TestStallMidStream(t *testing.T) {
	a := upstreamtest.New(t, "a")
	a.SetMode(upstreamtest.Stall)
	b := newBackend(t, []string{a.BaseURL()}, nil)
	req := chat
	req.Stream = true
	text, _, err := collect(t, b, req)
	if kind(err) != inference.UpstreamTimeout || text != "reply" || !strings.Contains(err.Error(), "stalled") {
		t.Fatalf("got %q, %v", text, err)
	}
}

func TestRateLimitPassesRetryAfter(t *testing.T) {
	a := upstreamtest.New(t, "a")
	a.SetMode(upstreamtest.RateLimited)
	b := newBackend(t, []string{a.BaseURL()}, nil)
	_, err := b.Complete(context.Background(), chat)
	var ue *inference.UpstreamError
	if !errors.As(err, &ue) || ue.Kind != inference.UpstreamRateLimited || ue.RetryAfter != 7*time.Second || ue.Status != 429 {
		t.Fatalf("got %v", err)
	}
	// A 429 is the caller's limit, not a broken replica.
	if st := b.Status(); st.Replicas[0].Breaker != upstream.BreakerClosed {
		t.Fatalf("status: %+v", st)
	}
}

func TestCircuitBreakerOpensAndRecovers(t *testing.T) {
	a := upstreamtest.New(t, "a")
	a.SetMode(upstreamtest.Fail)
	clk := &clock{t: time.Unix(1e9, 0)}
	b := newBackend(t, []string{a.BaseURL()}, func(cfg *upstream.Config) { cfg.Now, cfg.Cooldown, cfg.FailureThreshold = clk.Now, 10*time.Second, 3 })
	for i := 0; i < 3; i++ {
		if _, err := b.Complete(context.Background(), chat); kind(err) != inference.UpstreamBadResponse {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	if got := a.Requests.Load(); got != 3 {
		t.Fatalf("requests: %d", got)
	}
	// Open: refused without reaching the replica.
	if _, err := b.Complete(context.Background(), chat); kind(err) != inference.UpstreamUnavailable || a.Requests.Load() != 3 {
		t.Fatalf("open breaker: %v, requests %d", err, a.Requests.Load())
	}
	// After the cool-down one trial goes through; it succeeds and closes
	// the breaker.
	a.SetMode(upstreamtest.OK)
	clk.Add(11 * time.Second)
	if st := b.Status(); st.Replicas[0].Breaker != upstream.BreakerHalfOpen {
		t.Fatalf("status after cool-down: %+v", st)
	}
	if _, _, err := collect(t, b, chat); err != nil {
		t.Fatal(err)
	}
	if st := b.Status(); st.Replicas[0].Breaker != upstream.BreakerClosed || st.State != upstream.StateReady {
		t.Fatalf("status after trial: %+v", st)
	}
}

type fakeTokenizer struct{}

func (fakeTokenizer) Tokenize(_ context.Context, req inference.TokenizeRequest) (inference.TokenizeResponse, error) {
	return inference.TokenizeResponse{Tokens: make([]int32, len(strings.Fields(req.Content)))}, nil
}
func (fakeTokenizer) Detokenize(context.Context, inference.DetokenizeRequest) (inference.DetokenizeResponse, error) {
	return inference.DetokenizeResponse{}, nil
}

func TestUsageCountedWhenUpstreamOmitsIt(t *testing.T) {
	a := upstreamtest.New(t, "a")
	a.SetMode(upstreamtest.NoUsage)
	req := chat
	req.Stream = true
	// With a tokenizer: counted (the fake counts words).
	b := newBackend(t, []string{a.BaseURL()}, func(cfg *upstream.Config) { cfg.Tokenizer = fakeTokenizer{} })
	_, last, err := collect(t, b, req)
	if err != nil || last.Usage.CompletionTokens != 4 || last.Usage.PromptTokens != 1 {
		t.Fatalf("counted: %+v %v", last.Usage, err)
	}
	// Without: estimated at four bytes a token.
	b = newBackend(t, []string{a.BaseURL()}, nil)
	_, last, err = collect(t, b, req)
	if err != nil || last.Usage.CompletionTokens != (len(a.Reply())+3)/4 {
		t.Fatalf("estimated: %+v %v", last.Usage, err)
	}
}

func TestHealthChecksPublishEvents(t *testing.T) {
	a := upstreamtest.New(t, "a")
	bus := events.NewBus()
	sub := bus.Subscribe(16)
	defer sub.Close()
	b := newBackend(t, []string{a.BaseURL()}, func(cfg *upstream.Config) { cfg.Events = bus })
	next := func() events.Event {
		select {
		case ev := <-sub.C:
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
		return events.Event{}
	}
	if st := b.Check(context.Background()); st.State != upstream.StateReady {
		t.Fatalf("check: %+v", st)
	}
	if ev := next(); ev.Type != events.ModelReady {
		t.Fatalf("event: %+v", ev)
	}
	a.SetMode(upstreamtest.Unavailable)
	if st := b.Check(context.Background()); st.State != upstream.StateFailed {
		t.Fatalf("check: %+v", st)
	}
	if ev := next(); ev.Type != events.ModelFailed {
		t.Fatalf("event: %+v", ev)
	}
	a.SetMode(upstreamtest.OK)
	b.Check(context.Background())
	if ev := next(); ev.Type != events.ModelReady {
		t.Fatalf("event: %+v", ev)
	}
}

func TestEmbedAndRerank(t *testing.T) {
	a := upstreamtest.New(t, "a")
	b := newBackend(t, []string{a.BaseURL()}, nil)
	res, err := b.Embed(context.Background(), inference.EmbeddingRequest{Input: []string{"ab", "abcd"}})
	if err != nil || len(res.Embeddings) != 2 || res.PromptTokens != 6 {
		t.Fatalf("%+v %v", res, err)
	}
	for _, v := range res.Embeddings {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		if s < 0.999 || s > 1.001 {
			t.Fatalf("not normalised: %v", v)
		}
	}
	rr, err := b.Rerank(context.Background(), inference.RerankRequest{Query: "red apple", Documents: []string{"a blue car", "a red apple", "red wine"}})
	if err != nil || len(rr.Results) != 3 || rr.Results[0].Index != 1 || rr.Results[0].RelevanceScore != 1 {
		t.Fatalf("%+v %v", rr, err)
	}
}

func TestClientErrorsPassThrough(t *testing.T) {
	a := upstreamtest.New(t, "a")
	a.Key = "secret"
	b := newBackend(t, []string{a.BaseURL()}, nil)
	_, err := b.Complete(context.Background(), chat)
	var ue *inference.UpstreamError
	if !errors.As(err, &ue) || ue.Status != 401 || !strings.Contains(ue.Message, "api_key") {
		t.Fatalf("no key: %v", err)
	}
	b = newBackend(t, []string{a.BaseURL()}, func(cfg *upstream.Config) { cfg.APIKey = "secret" })
	if _, _, err := collect(t, b, chat); err != nil {
		t.Fatalf("with key: %v", err)
	}
}
