package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/openai"
)

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) error {
	var req openai.ChatRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	native, err := req.Native()
	if err != nil {
		return err
	}
	if _, err := s.model(req.Model, "chat"); err != nil {
		return err
	}
	ctx, cancel := withTimeout(r)
	defer cancel()
	streams, err := s.completeN(ctx, native, req.Choices())
	if err != nil {
		return err
	}
	defer func() {
		for _, st := range streams {
			st.Close()
		}
	}()
	if !req.Stream {
		out, err := openai.CollectChat(streams, req.Model, native.Logprobs)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, out)
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	cs := openai.NewChatStream(req.Model, includeUsage, native.Logprobs)
	events := merge(ctx, streams)
	// Wait for the first event before committing to a 200, so that errors
	// the runner reports at once (bad grammar, overload) get a real status.
	first, ok := <-events
	if !ok {
		return ctx.Err()
	}
	if first.err != nil {
		return first.err
	}
	out := startSSE(w)
	for i := range streams {
		if err := out.send(cs.First(i)); err != nil {
			return err
		}
	}
	usages := make([]*inference.Usage, len(streams))
	for ev := first; ; {
		if ev.err != nil {
			return out.fail(ev.err)
		}
		for _, c := range cs.Chunks(ev.Event, ev.index) {
			if err := out.send(c); err != nil {
				return err // client went away; closing the streams cancels generation
			}
		}
		if ev.Done {
			usages[ev.index] = ev.Usage
		}
		var ok bool
		if ev, ok = <-events; !ok {
			break
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if includeUsage {
		if err := out.send(cs.UsageChunk(openai.SumUsage(usages))); err != nil {
			return err
		}
	}
	return out.done()
}

// completeN starts n generations of req (n choices); with a seed, choice i
// uses seed+i so the choices differ yet stay reproducible.
func (s *Server) completeN(ctx context.Context, req inference.CompletionRequest, n int) ([]inference.Stream, error) {
	streams := make([]inference.Stream, 0, n)
	for i := 0; i < n; i++ {
		r := req
		if req.Seed != nil && i > 0 {
			seed := *req.Seed + uint32(i)
			r.Seed = &seed
		}
		st, err := s.complete(ctx, r)
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

type indexedEvent struct {
	inference.Event
	index int
	err   error
}

// merge interleaves the events of several streams as they arrive; the
// channel closes after every stream has finished or one has failed.
func merge(ctx context.Context, streams []inference.Stream) <-chan indexedEvent {
	out := make(chan indexedEvent)
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
	var req openai.CompletionRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	native, err := req.Native()
	if err != nil {
		return err
	}
	if req.Choices() > 1 {
		return apierr.Invalid("n", "n > 1 is supported on /v1/chat/completions; send one request per completion here")
	}
	if _, err := s.model(req.Model, "completions"); err != nil {
		return err
	}
	ctx, cancel := withTimeout(r)
	defer cancel()
	stream, err := s.complete(ctx, native)
	if err != nil {
		return err
	}
	defer stream.Close()
	if !req.Stream {
		out, err := openai.CollectText(stream, req.Model, native.Logprobs)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, out)
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	ts := openai.NewTextStream(req.Model, includeUsage, native.Logprobs)
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	out := startSSE(w)
	for ev := first; ; {
		for _, c := range ts.Chunks(ev) {
			if err := out.send(c); err != nil {
				return err
			}
		}
		if ev.Done {
			return out.done()
		}
		ev, err = stream.Recv()
		if errors.Is(err, io.EOF) {
			return out.done()
		}
		if err != nil {
			return out.fail(err)
		}
	}
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) error {
	var req openai.EmbeddingRequest
	if err := openai.Decode(r.Body, &req); err != nil {
		return err
	}
	native, err := req.Native()
	if err != nil {
		return err
	}
	if _, err := s.model(req.Model, "embeddings"); err != nil {
		return err
	}
	res, err := s.Backend.Embed(r.Context(), native)
	if err != nil {
		return err
	}
	if s.Metrics != nil {
		s.Metrics.AddTokens(req.Model, res.PromptTokens, 0)
	}
	out, err := req.Response(res)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
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
	if req.Model == "" {
		return apierr.Invalid("model", "'model' is required")
	}
	if _, err := s.model(req.Model, ""); err != nil {
		return err
	}
	add := true
	if req.AddSpecial != nil {
		add = *req.AddSpecial
	}
	res, err := s.Backend.Tokenize(r.Context(), inference.TokenizeRequest{Model: req.Model, Content: req.Input, AddSpecial: add})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, tokenizeResponse{Tokens: res.Tokens, Count: len(res.Tokens)})
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
	if req.Model == "" {
		return apierr.Invalid("model", "'model' is required")
	}
	if _, err := s.model(req.Model, ""); err != nil {
		return err
	}
	res, err := s.Backend.Detokenize(r.Context(), inference.DetokenizeRequest{Model: req.Model, Tokens: req.Tokens})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"text": res.Content})
}

// complete starts a generation whose token usage is counted in metrics.
func (s *Server) complete(ctx context.Context, req inference.CompletionRequest) (inference.Stream, error) {
	st, err := s.Backend.Complete(ctx, req)
	if err != nil || s.Metrics == nil {
		return st, err
	}
	return &meteredStream{Stream: st, s: s, model: req.Model}, nil
}

type meteredStream struct {
	inference.Stream
	s     *Server
	model string
}

func (m *meteredStream) Recv() (inference.Event, error) {
	ev, err := m.Stream.Recv()
	if err == nil && ev.Done && ev.Usage != nil {
		m.s.Metrics.AddTokens(m.model, ev.Usage.PromptTokens, ev.Usage.CompletionTokens)
	}
	return ev, err
}
