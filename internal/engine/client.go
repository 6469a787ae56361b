package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/grammar"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/runnerproto"
)

var _ inference.Backend = (*Model)(nil)

// Model is one local model as the catalog routes to it: its id and its
// GGUF file, so that a request reaches its runner without the engine
// looking the model up by name again (and the engine needs no catalog).
type Model struct {
	m        *Manager
	id, path string
}

// Bind is the backend of the local model id, whose GGUF file is path.
func (m *Manager) Bind(id, path string) inference.Backend { return &Model{m: m, id: id, path: path} }

// Complete starts a completion on the model's runner, loading it first when
// needed. The stream holds a queue place until it is closed.
func (b *Model) Complete(ctx context.Context, req inference.CompletionRequest) (inference.Stream, error) {
	m := b.m
	if len(req.JSONSchema) > 0 && req.Grammar == "" {
		// JSON schema → grammar happens here, for local models only.
		g, err := grammar.FromJSONSchema(req.JSONSchema)
		if err != nil {
			return nil, apierr.Invalid("response_format", err.Error())
		}
		req.Grammar = g
	}
	req.Priority = inference.PriorityFrom(ctx)
	p, err := m.acquire(ctx, b.id, b.path)
	if err != nil {
		return nil, err
	}
	resp, err := m.post(ctx, p, "/completion", req)
	if err != nil {
		m.release(p)
		return nil, err
	}
	rd := bufio.NewReaderSize(resp.Body, 64<<10)
	return &stream{m: m, p: p, ctx: ctx, body: resp.Body, rd: rd}, nil
}

// Embed computes embeddings on the model's runner.
func (b *Model) Embed(ctx context.Context, req inference.EmbeddingRequest) (inference.EmbeddingResponse, error) {
	var out inference.EmbeddingResponse
	err := b.m.call(ctx, b.id, b.path, "/embedding", req, &out)
	return out, err
}

// Tokenize tokenizes with the model's vocabulary.
func (b *Model) Tokenize(ctx context.Context, req inference.TokenizeRequest) (inference.TokenizeResponse, error) {
	var out inference.TokenizeResponse
	err := b.m.call(ctx, b.id, b.path, "/tokenize", req, &out)
	return out, err
}

// Detokenize turns tokens back into text with the model's vocabulary.
func (b *Model) Detokenize(ctx context.Context, req inference.DetokenizeRequest) (inference.DetokenizeResponse, error) {
	var out inference.DetokenizeResponse
	err := b.m.call(ctx, b.id, b.path, "/detokenize", req, &out)
	return out, err
}

func (m *Manager) call(ctx context.Context, id, file, path string, in, out any) error {
	p, err := m.acquire(ctx, id, file)
	if err != nil {
		return err
	}
	defer m.release(p)
	resp, err := m.post(ctx, p, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return m.crashed(p, err)
	}
	return nil
}

// post sends a request to the runner and turns its error responses into
// inference errors.
func (m *Manager) post(ctx context.Context, p *proc, path string, in any) (*http.Response, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.addr+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, m.crashed(p, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	var eb runnerproto.ErrorBody
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&eb); err != nil {
		return nil, fmt.Errorf("runner for %s answered %s", p.id, resp.Status)
	}
	switch eb.Error.Code {
	case runnerproto.CodeInvalid:
		return nil, apierr.Invalid(eb.Error.Param, eb.Error.Message)
	case runnerproto.CodeOverloaded:
		return nil, &inference.OverloadedError{Model: p.id, RetryAfter: time.Second}
	case runnerproto.CodeLoading:
		return nil, &inference.LoadingError{Model: p.id, RetryAfter: time.Second}
	case runnerproto.CodeUnsupported:
		return nil, apierr.Invalid("model", fmt.Sprintf("model %s: %s", p.id, eb.Error.Message))
	default:
		return nil, fmt.Errorf("runner for %s: %s", p.id, eb.Error.Message)
	}
}

// crashed explains a broken connection to a runner: when the process has
// exited it reports the crash with its stderr lines.
func (m *Manager) crashed(p *proc, err error) error {
	select {
	case <-p.exitedCh:
	case <-time.After(200 * time.Millisecond):
		return fmt.Errorf("%w: model %s: %v", inference.ErrBackendCrashed, p.id, err)
	}
	return fmt.Errorf("%w: model %s: %s", inference.ErrBackendCrashed, p.id, p.describeExit(nil))
}

// stream reads NDJSON events from a runner.
type stream struct {
	m    *Manager
	p    *proc
	ctx  context.Context
	body io.ReadCloser
	rd   *bufio.Reader
	done bool
	once sync.Once
}

// Recv returns the next event, io.EOF after the final one, or an error when
// the runner reports one or goes away mid-stream.
func (s *stream) Recv() (inference.Event, error) {
	if s.done {
		return inference.Event{}, io.EOF
	}
	line, err := s.rd.ReadBytes('\n')
	if err != nil {
		s.done = true
		if s.ctx.Err() != nil {
			return inference.Event{}, s.ctx.Err()
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return inference.Event{}, s.m.crashed(s.p, err)
	}
	var ev inference.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		s.done = true
		return inference.Event{}, fmt.Errorf("runner for %s sent a malformed event: %w", s.p.id, err)
	}
	if ev.Error != "" {
		s.done = true
		if s.ctx.Err() != nil {
			return inference.Event{}, s.ctx.Err() // "request cancelled": the caller's own
		}
		return inference.Event{}, &inference.GenerationError{Model: s.p.id, Message: ev.Error}
	}
	if ev.Done {
		s.done = true
	}
	return ev, nil
}

// Close ends the request; an unfinished generation is cancelled on the
// runner, which frees the slot at its next step.
func (s *stream) Close() error {
	s.once.Do(func() {
		s.body.Close()
		s.m.release(s.p)
	})
	return nil
}

var _ inference.Reranker = (*Model)(nil)

// Rerank scores documents against a query on the model's runner: with rank
// pooling for a cross-encoder, from the yes/no answer logits for a chat
// model. Results are in input order. Bad inputs are apierr.Invalid errors;
// a model that cannot rerank is one naming the model.
func (b *Model) Rerank(ctx context.Context, req inference.RerankRequest) (inference.RerankResponse, error) {
	var out inference.RerankResponse
	err := b.m.call(ctx, b.id, b.path, "/rerank", req, &out)
	if err == nil && len(out.Results) != len(req.Documents) {
		err = fmt.Errorf("runner for %s returned %d rerank results for %d documents", req.Model, len(out.Results), len(req.Documents))
	}
	return out, err
}
