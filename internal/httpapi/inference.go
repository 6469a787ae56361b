package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/openai"
)

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) error {
	body, peek, m, err := s.peekModel(w, r, "chat")
	if err != nil {
		return err
	}
	if m.Relay != nil {
		return s.relay(w, r, m, "/chat/completions", body, peek)
	}
	var req openai.ChatRequest
	if err := openai.DecodeRequest(bytes.NewReader(body), &req); err != nil {
		return err
	}
	native, err := chatNative(m, &req)
	if err != nil {
		return err
	}
	req.Model, native.Model, native.Stream = m.ID, m.ID, req.Stream
	ctx, cancel := withTimeout(r)
	defer cancel()
	gen, err := s.generate(ctx, m, []inference.CompletionRequest{native}, req.Choices())
	if err != nil {
		return err
	}
	defer gen.Close()
	streams := gen.Streams
	if !req.Stream {
		out, err := openai.CollectChat(streams, req.Model, native.Logprobs)
		if err != nil {
			return err
		}
		if err := gen.End(); err != nil {
			return err
		}
		if req.Legacy() {
			out.UseFunctionCall()
		}
		return wire.JSON(w, http.StatusOK, out)
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	cs := openai.NewChatStream(req.Model, includeUsage, native.Logprobs)
	cs.Legacy = req.Legacy()
	first, events, err := firstEvent(ctx, streams)
	if err != nil {
		return err
	}
	out := wire.StartSSE(w)
	for i := range streams {
		if err := out.Write(cs.First(i)); err != nil {
			return err
		}
	}
	usages := make([]*inference.Usage, len(streams))
	err = relay(ctx, out, first, events, func(ev indexedEvent) []any {
		if ev.Done {
			usages[ev.index] = ev.Usage
		}
		return anys(cs.Chunks(ev.Event, ev.index))
	})
	if err != nil {
		return err
	}
	if err := gen.End(); err != nil {
		return out.Fail(err)
	}
	if includeUsage {
		if err := out.Send(cs.UsageChunk(openai.SumUsage(usages))); err != nil {
			return err
		}
	}
	return out.Done()
}

// firstEvent merges streams and waits for the first event before the
// handler commits to a 200, so that errors the runner reports at once (bad
// grammar, overload) get a real status.
func firstEvent(ctx context.Context, streams []inference.Stream) (indexedEvent, <-chan indexedEvent, error) {
	events := merge(ctx, streams)
	first, ok := <-events
	if !ok {
		return first, nil, ctx.Err()
	}
	return first, events, first.err
}

// relay writes the chunks render makes of each merged event, from first
// on, until the streams end: chunks already waiting go out in one write,
// and the stream is flushed whenever the next event is not there yet, so
// nothing is held back. It returns the context's error if the request
// ended early.
func relay(ctx context.Context, out *wire.SSE, first indexedEvent, events <-chan indexedEvent, render func(indexedEvent) []any) error {
	for ev := first; ; {
		if ev.err != nil {
			return out.Fail(ev.err)
		}
		for _, c := range render(ev) {
			if err := out.Write(c); err != nil {
				return err // client went away; closing the streams cancels generation
			}
		}
		var ok bool
		select {
		case ev, ok = <-events:
		default:
			if err := out.Flush(); err != nil {
				return err
			}
			ev, ok = <-events
		}
		if !ok {
			break
		}
	}
	return ctx.Err()
}

// generate starts n governed generations of each of reqs (n choices
// of each prompt: prompt k's choices are k*n … k*n+n-1, as OpenAI numbers
// them) for the request's call: the generation service starts them and
// applies the call's output policies to their native events.
func (s *Ops) generate(ctx context.Context, m catalog.Resolved, reqs []inference.CompletionRequest, n int) (*generate.Generation, error) {
	call := info(ctx)
	var started []inference.Stream
	for _, req := range reqs {
		sts, err := s.Gen.Start(ctx, call, m, req, n)
		if err != nil {
			for _, st := range started {
				st.Close()
			}
			return nil, err
		}
		started = append(started, sts...)
	}
	return s.Gen.Output(call, started), nil
}

type indexedEvent struct {
	inference.Event
	index int
	err   error
}

// merge interleaves the events of several streams as they arrive; the
// channel closes after every stream has finished or one has failed.
func merge(ctx context.Context, streams []inference.Stream) <-chan indexedEvent {
	out := make(chan indexedEvent, 16)
	var wg sync.WaitGroup
	for i, st := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ev, err := st.Recv()
				if errors.Is(err, io.EOF) {
					return
				}
				select {
				case out <- indexedEvent{Event: ev, index: i, err: err}:
				case <-ctx.Done():
					return
				}
				if err != nil || ev.Done {
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) error {
	body, peek, m, err := s.peekModel(w, r, "")
	if err != nil {
		return err
	}
	// Completions with sources are Sovereign's own (the extension fields
	// say so); everything else for an upstream model is relayed.
	if m.Relay != nil && !peek.Grounded && !peek.HasMessages {
		if !m.Has("completions") {
			return apierr.Invalid("model", fmt.Sprintf("the model %q does not support completions (it supports: %s)", m.ID, strings.Join(m.Capabilities, ", ")))
		}
		return s.relay(w, r, m, "/completions", body, peek)
	}
	var req openai.CompletionRequest
	if err := openai.DecodeRequest(bytes.NewReader(body), &req); err != nil {
		return err
	}
	if req.Grounded() {
		return s.groundedCompletion(w, r, &req)
	}
	if !m.Has("completions") {
		return apierr.Invalid("model", fmt.Sprintf("the model %q does not support completions (it supports: %s)", m.ID, strings.Join(m.Capabilities, ", ")))
	}
	natives, err := completionNatives(m, &req)
	if err != nil {
		return err
	}
	for i := range natives {
		natives[i].Model, natives[i].Stream = m.ID, req.Stream
	}
	req.Model = m.ID
	ctx, cancel := withTimeout(r)
	defer cancel()
	n := req.Choices()
	gen, err := s.generate(ctx, m, natives, n)
	if err != nil {
		return err
	}
	defer gen.Close()
	streams := gen.Streams
	logprobs := natives[0].Logprobs
	if !req.Stream {
		out, err := openai.CollectTexts(streams, n, req.Model, logprobs)
		if err != nil {
			return err
		}
		if err := gen.End(); err != nil {
			return err
		}
		return wire.JSON(w, http.StatusOK, out)
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	ts := openai.NewTextStream(req.Model, includeUsage, logprobs)
	first, events, err := firstEvent(ctx, streams)
	if err != nil {
		return err
	}
	out := wire.StartSSE(w)
	var total inference.Usage
	err = relay(ctx, out, first, events, func(ev indexedEvent) []any {
		if ev.Done && ev.Usage != nil {
			if ev.index%n == 0 {
				total.PromptTokens += ev.Usage.PromptTokens
				total.CachedTokens += ev.Usage.CachedTokens
			}
			total.CompletionTokens += ev.Usage.CompletionTokens
		}
		return anys(ts.ChoiceChunks(ev.Event, ev.index))
	})
	if err != nil {
		return err
	}
	if err := gen.End(); err != nil {
		return out.Fail(err)
	}
	if includeUsage {
		if err := out.Send(ts.UsageChunk(openai.NewUsage(&total))); err != nil {
			return err
		}
	}
	return out.Done()
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) error {
	body, peek, m, err := s.peekModel(w, r, "embeddings")
	if err != nil {
		return err
	}
	if m.Relay != nil {
		return s.relay(w, r, m, "/embeddings", body, peek)
	}
	var req openai.EmbeddingRequest
	if err := openai.DecodeRequest(bytes.NewReader(body), &req); err != nil {
		return err
	}
	native, err := req.Native()
	if err != nil {
		return err
	}
	req.Model, native.Model = m.ID, m.ID
	start := time.Now()
	b, err := generate.Target(m)
	if err != nil {
		return err
	}
	res, err := b.Embed(r.Context(), native)
	s.Gen.Observe(r.Context(), m.ID, catalog.Observation{Latency: time.Since(start), Failed: err != nil})
	if err != nil {
		return err
	}
	info(r.Context()).NoteUsage(res.PromptTokens, 0, time.Time{})
	s.Gen.AddTokens(req.Model, res.PromptTokens, 0)
	out, err := req.Response(res)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, out)
}

type tokenizeRequest struct {
	Model      string `json:"model"`
	Input      string `json:"input"`
	AddSpecial *bool  `json:"add_special"`
}

type tokenizeResponse struct {
	Tokens []int32 `json:"tokens"`
	Count  int     `json:"count"`
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) error {
	var req tokenizeRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	m, err := s.model(w, r, req.Model, "")
	if err != nil {
		return err
	}
	req.Model = m.ID
	add := true
	if req.AddSpecial != nil {
		add = *req.AddSpecial
	}
	b, err := generate.Target(m)
	if err != nil {
		return err
	}
	res, err := b.Tokenize(r.Context(), inference.TokenizeRequest{Model: req.Model, Content: req.Input, AddSpecial: add})
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, tokenizeResponse{Tokens: res.Tokens, Count: len(res.Tokens)})
}

type detokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int32 `json:"tokens"`
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) error {
	var req detokenizeRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	m, err := s.model(w, r, req.Model, "")
	if err != nil {
		return err
	}
	req.Model = m.ID
	b, err := generate.Target(m)
	if err != nil {
		return err
	}
	res, err := b.Detokenize(r.Context(), inference.DetokenizeRequest{Model: req.Model, Tokens: req.Tokens})
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]string{"text": res.Content})
}
