package generate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// Target is the backend of a resolved model.
func Target(m catalog.Resolved) (inference.Backend, error) {
	if m.Target == nil {
		return nil, fmt.Errorf("%w: %q (no local engine)", inference.ErrModelNotFound, m.ID)
	}
	return m.Target, nil
}

// Start begins n generations of req on the route m (n choices; with a
// seed, choice i uses seed+i so the choices differ yet stay
// reproducible). Each stream notes its usage on the call, counts tokens
// in the metrics, and the first adds its latency, time to first token and
// decode speed to the model's live figures. The caller closes them.
func (s *Service) Start(ctx context.Context, c *Call, m catalog.Resolved, req inference.CompletionRequest, n int) ([]inference.Stream, error) {
	streams := make([]inference.Stream, 0, n)
	for i := 0; i < n; i++ {
		r := req
		if req.Seed != nil && i > 0 {
			seed := *req.Seed + uint32(i)
			r.Seed = &seed
		}
		st, err := s.start(ctx, c, m, r, i == 0)
		if err != nil {
			for _, o := range streams {
				o.Close()
			}
			return nil, err
		}
		streams = append(streams, st)
	}
	return streams, nil
}

// start starts one generation; with record, its outcome goes to the
// model's live figures (one stream per call records).
func (s *Service) start(ctx context.Context, c *Call, m catalog.Resolved, req inference.CompletionRequest, record bool) (inference.Stream, error) {
	b, err := Target(m)
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	st, err := b.Complete(ctx, req)
	if err != nil {
		if record {
			s.Observe(ctx, req.Model, catalog.Observation{Latency: time.Since(begin), Failed: true})
		}
		return nil, err
	}
	if rp, ok := st.(interface{ Replica() string }); ok {
		c.NoteReplica(rp.Replica()) // an upstream's
	}
	return &observedStream{Stream: st, s: s, c: c, ctx: ctx, model: req.Model, start: begin, record: record}, nil
}

// AddTokens counts a call's tokens in the metrics (when there are any).
func (s *Service) AddTokens(model string, prompt, completion int) {
	if s.Metrics != nil {
		s.Metrics.AddTokens(model, prompt, completion)
	}
}

// Observe adds an observation to the model's figures and metrics, unless
// the caller went away (which says nothing about the model).
func (s *Service) Observe(ctx context.Context, model string, o catalog.Observation) {
	if o.Failed && ctx.Err() != nil {
		return
	}
	s.Models.Record(model, o)
	if s.Metrics != nil {
		s.Metrics.ObserveModel(model, o.Failed)
	}
}

// observedStream measures a generation as its events pass.
type observedStream struct {
	inference.Stream
	mu     sync.Mutex
	s      *Service
	c      *Call
	ctx    context.Context
	model  string
	record bool
	start  time.Time
	first  time.Time
	last   time.Time
	tokens int
	failed bool
	done   bool
	closed bool
}

func (o *observedStream) Recv() (inference.Event, error) {
	ev, err := o.Stream.Recv()
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err != nil && !errors.Is(err, io.EOF):
		o.failed = true
	case err == nil:
		now := time.Now()
		if ev.Text != "" && o.first.IsZero() {
			o.first = now
		}
		if ev.Done {
			o.done, o.last = true, now
			if ev.Usage != nil {
				o.tokens = ev.Usage.CompletionTokens
				if o.s.Metrics != nil {
					o.s.Metrics.AddTokens(o.model, ev.Usage.PromptTokens, ev.Usage.CompletionTokens)
				}
				// The choices of one call share its prompt: counted once.
				prompt := 0
				if o.record {
					prompt = ev.Usage.PromptTokens
				}
				o.c.NoteUsage(prompt, ev.Usage.CompletionTokens, o.first)
			}
		}
	}
	return ev, err
}

func (o *observedStream) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		if o.record && (o.done || o.failed) {
			obs := catalog.Observation{Latency: time.Since(o.start), Failed: o.failed}
			if !o.first.IsZero() {
				obs.TTFT = o.first.Sub(o.start)
				obs.CompletionTokens, obs.Decode = o.tokens, o.last.Sub(o.first)
			}
			o.s.Observe(o.ctx, o.model, obs)
		}
	}
	return o.Stream.Close()
}

// Generation is a call's answer as native events, with the call's output
// stage applied to them: each choice's text is redacted as it streams
// (a pii.StreamRedactor holds back the tail that could still become a
// match, so a match split across events is never partly passed on; the
// held-back text comes with the choice's last event), the text as passed
// on is kept for the record when the team keeps its outputs, and End
// evaluates the whole answer. Tool-call arguments and logprobs are not
// text to redact.
type Generation struct {
	// Streams are the choices' governed streams, in choice order.
	Streams []inference.Stream

	s  *Service
	c  *Call
	op *outputPolicy

	mu    sync.Mutex
	texts *answerTexts // nil: nothing to apply
	ended bool
}

// Output applies the call's output stage to the native streams the
// caller renders (choice i is streams[i]). With no output rule and no
// capture the streams pass through as they are.
func (s *Service) Output(c *Call, streams []inference.Stream) *Generation {
	c.mu.Lock()
	op, capture := c.output, c.capture
	c.mu.Unlock()
	g := &Generation{s: s, c: c, op: op}
	if op == nil && !capture {
		g.Streams = streams
		return g
	}
	g.texts = newAnswerTexts(op, capture)
	g.Streams = make([]inference.Stream, len(streams))
	for i, st := range streams {
		g.Streams[i] = &governedStream{Stream: st, g: g, index: i}
	}
	return g
}

// Redact applies the output redact rules to text that goes with the
// answer outside its streams (a cited sentence, an unsupported span).
func (g *Generation) Redact(text string) string { return g.op.Redact(text) }

// Close closes the streams.
func (g *Generation) Close() {
	for _, st := range g.Streams {
		st.Close()
	}
}

// End evaluates the whole answer once its streams have ended: flags are
// recorded, a deny is returned as the 403 policy_violation (a caller that
// has streamed the answer sends it as the stream's error event in place of
// its end), and the answer as passed on goes to the record.
func (g *Generation) End() error {
	if g.texts == nil {
		return nil
	}
	g.mu.Lock()
	if g.ended {
		g.mu.Unlock()
		return nil
	}
	g.ended = true
	all, sent := g.texts.whole()
	g.mu.Unlock()
	g.c.Keep(sent)
	if out := g.s.evaluate(g.op, all); out.Deny != nil {
		return Denied(out.Deny)
	}
	return nil
}

// text passes choice idx's next piece of text (final: its last) through
// its redactor and returns what may be passed on.
func (g *Generation) text(idx int, s string, final bool) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.texts.add(idx, s, final)
}

// governedStream is one choice of a Generation.
type governedStream struct {
	inference.Stream
	g     *Generation
	index int
}

func (s *governedStream) Recv() (inference.Event, error) {
	ev, err := s.Stream.Recv()
	if err != nil {
		return ev, err
	}
	if ev.Text != "" || ev.Done {
		ev.Text = s.g.text(s.index, ev.Text, ev.Done)
	}
	return ev, nil
}
