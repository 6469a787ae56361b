package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/openai"
	"github.com/sovereign-ai/sovereign/internal/rawjson"
)

// The gateway: a request for a model served by an upstream is not
// translated into Sovereign's native model (which would drop what it does
// not know) but passed on as the client sent it, with only the model name
// mapped, and the upstream's answer comes back the same way. Sovereign
// acts on what the Peek reads — the model, stream, output limit, content
// kinds and tools against the model's capabilities — and counts usage
// from the answer; every other byte is the client's or the upstream's.

// peekModel reads a request's body and resolves its model.
func (s *Server) peekModel(w http.ResponseWriter, r *http.Request, capability string) ([]byte, openai.Peek, catalog.Resolved, error) {
	body, err := openai.ReadBody(r.Body)
	if err != nil {
		return nil, openai.Peek{}, catalog.Resolved{}, err
	}
	p, err := openai.PeekRequest(body)
	if err != nil {
		return nil, p, catalog.Resolved{}, err
	}
	if p.User != "" {
		info(r.Context()).SetUser(p.User)
	}
	m, err := s.model(w, r, p.Model, capability)
	if err != nil {
		return body, p, m, err
	}
	redact, err := s.admit(r.Context(), w.Header(), m, peekGate(p, capability != "embeddings"))
	if err != nil || redact == nil {
		return body, p, m, err
	}
	// A policy redacts the request's text before any backend sees it.
	if body, err = redactJSON(body, redact); err != nil {
		return body, p, m, err
	}
	p, err = openai.PeekRequest(body)
	return body, p, m, err
}

// relayKindCapability is the capability each content part type needs
// (chat's and the Responses API's names).
var relayKindCapability = map[string]string{
	"image_url": "vision", "file": "vision", "input_image": "vision", "input_file": "vision",
	"input_audio": "audio",
}

// relayCheck refuses what the upstream model cannot take (tools, content
// parts) rather than let it be dropped.
func relayCheck(m catalog.Resolved, p openai.Peek) error {
	if len(p.Tools) > 0 && !m.Has("tools") {
		return apierr.Invalid("tools", fmt.Sprintf("the model %q does not take tools (it supports: %s)", m.ID, strings.Join(m.Capabilities, ", ")))
	}
	for i, k := range p.PartKinds {
		if c, ok := relayKindCapability[k]; ok && !m.Has(c) {
			return apierr.Invalid(p.PartParams[i], fmt.Sprintf("the model %q does not take %s parts (it has no %s capability; it supports: %s)",
				m.ID, k, c, strings.Join(m.Capabilities, ", ")))
		}
	}
	return nil
}

// relay serves an inference request for an upstream model.
func (s *Server) relay(w http.ResponseWriter, r *http.Request, m catalog.Resolved, path string, body []byte, p openai.Peek) error {
	if err := relayCheck(m, p); err != nil {
		return err
	}
	body, err := relayLimits(m, path, body, p)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(r)
	defer cancel()
	call := info(ctx)
	if !p.Stream {
		answer, err := s.relayWhole(ctx, call, m, path, body, p)
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.WriteHeader(http.StatusOK)
		_, err = w.Write(answer)
		return err
	}
	start := time.Now()
	rl, err := m.Relay.Relay(ctx, inference.RelayRequest{Path: path, Body: body, Stream: true, Prompt: p.Prompt, MaxInputTokens: m.Limits.MaxInputTokens})
	if err != nil {
		s.Gen.Observe(ctx, m.ID, catalog.Observation{Latency: time.Since(start), Failed: true})
		return err
	}
	defer rl.Close()
	call.NoteReplica(rl.Replica())
	ev, err := rl.Next()
	if err != nil {
		s.Gen.Observe(ctx, m.ID, catalog.Observation{Latency: time.Since(start), Failed: true})
		return err
	}
	// The output stage (nil: none applies, the bytes pass unparsed).
	gov := s.Gen.Relayed(call)
	var denied error // the output stage's deny
	var first, last time.Time
	out := wire.StartSSE(w)
	for {
		now := time.Now()
		if ev.Output {
			if first.IsZero() {
				first = now
			}
			last = now
		}
		evs := []inference.RelayEvent{ev}
		if gov != nil && denied == nil {
			if evs, denied = gov.Event(ev); denied != nil {
				out.Fail(denied) // in place of the stream's end
			}
		}
		if denied != nil {
			evs = nil // the rest is read for its usage, not sent
		}
		for _, e := range evs {
			if err := out.Raw(e.Event, e.Data); err != nil {
				return err // the client went away; closing the relay cancels upstream
			}
		}
		if ev, err = rl.Next(); err != nil {
			break
		}
	}
	if !errors.Is(err, io.EOF) {
		if ctx.Err() == nil {
			s.Gen.Observe(ctx, m.ID, catalog.Observation{Latency: time.Since(start), Failed: true})
		}
		return out.Fail(err)
	}
	s.relayUsed(ctx, call, m, rl, start, first, last)
	return denied
}

// relayWhole relays a request whose answer is not streamed and returns
// the answer, counted and governed (a deny is the error; the answer is
// then not given).
func (s *Ops) relayWhole(ctx context.Context, call *generate.Call, m catalog.Resolved, path string, body []byte, p openai.Peek) ([]byte, error) {
	start := time.Now()
	rl, err := m.Relay.Relay(ctx, inference.RelayRequest{Path: path, Body: body, Prompt: p.Prompt, MaxInputTokens: m.Limits.MaxInputTokens})
	if err != nil {
		s.Gen.Observe(ctx, m.ID, catalog.Observation{Latency: time.Since(start), Failed: true})
		return nil, err
	}
	defer rl.Close()
	call.NoteReplica(rl.Replica())
	ev, err := rl.Next()
	if err == nil {
		_, err = rl.Next()
	}
	if !errors.Is(err, io.EOF) {
		if ctx.Err() == nil {
			s.Gen.Observe(ctx, m.ID, catalog.Observation{Latency: time.Since(start), Failed: true})
		}
		return nil, err
	}
	var first time.Time
	if ev.Output {
		first = time.Now()
	}
	s.relayUsed(ctx, call, m, rl, start, first, first)
	if gov := s.Gen.Relayed(call); gov != nil {
		return gov.Whole(ev.Data)
	}
	return ev.Data, nil
}

// relayUsed counts a relayed answer's usage, on the call and in the
// metrics, and adds it to the model's live figures.
func (s *Ops) relayUsed(ctx context.Context, call *generate.Call, m catalog.Resolved, rl inference.Relay, start, first, last time.Time) {
	u := rl.Usage()
	call.NoteUsage(u.PromptTokens, u.CompletionTokens, first)
	s.Gen.AddTokens(m.ID, u.PromptTokens, u.CompletionTokens)
	obs := catalog.Observation{Latency: time.Since(start)}
	if !first.IsZero() {
		obs.TTFT, obs.CompletionTokens, obs.Decode = first.Sub(start), u.CompletionTokens, last.Sub(first)
	}
	s.Gen.Observe(ctx, m.ID, obs)
}

// relayLimits applies the model's output limit to a relayed request: a
// larger one is refused, a missing one is added (the only change the
// gateway makes to a body besides the model name).
func relayLimits(m catalog.Resolved, path string, body []byte, p openai.Peek) ([]byte, error) {
	l := m.Limits.MaxOutputTokens
	if l <= 0 || path == "/embeddings" {
		return body, nil
	}
	n, field := p.MaxOutput()
	if field != "" {
		if n > l {
			return nil, apierr.Invalid(field, fmt.Sprintf("%s is %d but the model %q allows at most %d output tokens", field, n, m.ID, l))
		}
		return body, nil
	}
	field = "max_tokens"
	if path == "/responses" {
		field = "max_output_tokens"
	}
	return rawjson.SetValid(body, field, []byte(strconv.Itoa(l)))
}
