package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/batch"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/openai"
	"github.com/sovereign-ai/sovereign/internal/rawjson"
)

// RunLine runs one Batch API line as the key keyID (batch.Run): a chat
// completion, a completion or an embedding request goes to the generation
// service with its body decoded once into its typed request, and the
// answer is rendered once, for the output file — no in-process HTTP round
// trip. An upstream model's line is relayed as written (its body scanned
// once, as over HTTP). The line is governed and recorded like the same
// request over HTTP (route POST endpoint, end user the body's "user" or
// else user). Lines for the Responses API and answers with sources run the
// same way, on the request types of their routes. err is for a line that
// could not be run at all: the key cannot be read, or is revoked or
// expired.
func (s *Ops) RunLine(ctx context.Context, keyID, endpoint, user string, body []byte) (batch.Answer, error) {
	call, err := s.Gen.As(ctx, keyID, "POST "+endpoint, auth.ScopeInference)
	if err != nil && apierr.From(err).Code != apierr.PermissionDenied {
		return batch.Answer{}, err
	}
	call.SetUser(lineUser(body, user))
	ctx = context.WithValue(context.WithValue(ctx, requestIDCtx, call.ID), infoCtx, call)
	if k, ok := call.Key(); ok {
		ctx = context.WithValue(ctx, keyCtx, k)
	}
	ctx, cancel := context.WithTimeout(ctx, streamTimeout)
	defer cancel()
	var ans batch.Answer
	if err == nil {
		ans, err = s.line(ctx, call, endpoint, body)
	}
	ans.RequestID, ans.Status = call.ID, http.StatusOK
	if err != nil {
		e := apierr.From(err)
		ans = batch.Answer{RequestID: call.ID, Status: e.Status(), RetryAfter: e.RetryAfter}
		ans.Body, _ = json.Marshal(e.Envelope())
		if e.Status() >= 500 && e.Status() != http.StatusServiceUnavailable {
			s.Log.Error("batch line failed", "endpoint", endpoint, "code", e.Code, "err", e.Err)
		}
	}
	s.Gen.Finish(ctx, call, err)
	return ans, nil
}

// errNotRelayed says a line for an upstream model is Sovereign's own to
// run (an answer with sources; a Responses API request for an upstream
// without "responses"), as over HTTP.
var errNotRelayed = errors.New("httpapi: not relayed")

// line runs a line's request.
func (s *Ops) line(ctx context.Context, call *generate.Call, endpoint string, body []byte) (batch.Answer, error) {
	name, err := modelOf(body)
	if err != nil {
		return batch.Answer{}, err
	}
	capability := map[string]string{"/v1/chat/completions": "chat", "/v1/embeddings": "embeddings", "/v1/responses": "chat"}[endpoint]
	m, err := s.Gen.Resolve(ctx, call, name, capability)
	if err != nil {
		return batch.Answer{}, err
	}
	if m.Relay != nil {
		ans, err := s.relayLine(ctx, call, m, strings.TrimPrefix(endpoint, "/v1"), body)
		if !errors.Is(err, errNotRelayed) {
			return ans, err
		}
	}
	switch endpoint {
	case "/v1/chat/completions":
		return s.chatLine(ctx, call, m, body)
	case "/v1/completions":
		return s.completionLine(ctx, call, m, body)
	case "/v1/responses":
		return s.responseLine(ctx, call, m, body)
	}
	return s.embeddingLine(ctx, call, m, body)
}

// modelOf reads a line's "model" (a line is a JSON object: its file was
// checked when it was uploaded) without decoding the rest.
func modelOf(body []byte) (string, error) {
	sp, err := rawjson.FindValid(body, "model")
	if err != nil || !sp.Found {
		return "", apierr.Invalid("model", "'model' is required")
	}
	var name string
	if json.Unmarshal(body[sp.Start:sp.End], &name) != nil {
		return "", apierr.Invalid("model", "'model' must be a string")
	}
	return name, nil
}

// lineUser is the line's end user: its own "user", else its batch's (read
// like modelOf, so that a line refused before it is decoded is still its
// batch's in the request log).
func lineUser(body []byte, batch string) string {
	if sp, err := rawjson.FindValid(body, "user"); err == nil && sp.Found {
		var own string
		if json.Unmarshal(body[sp.Start:sp.End], &own) == nil && own != "" {
			return own
		}
	}
	return batch
}

// notStreamed refuses a streamed line: a line's answer is a whole answer
// in the output file.
func notStreamed(stream bool) error {
	if stream {
		return apierr.Invalid("stream", "a batch line is answered whole: 'stream' must be false")
	}
	return nil
}

// admitLine admits a decoded line and, when an input policy redacts its
// text, decodes the line again from its redacted body into v (as over
// HTTP, every string of the request but its structural members is
// redacted; only a line whose text a policy redacts is decoded twice).
func (s *Ops) admitLine(ctx context.Context, call *generate.Call, m catalog.Resolved, g generate.Gate, body []byte, v any) (redacted bool, err error) {
	redact, _, err := s.Gen.Admit(ctx, call, m, g)
	if err != nil || redact == nil {
		return false, err
	}
	body, err = redactJSON(body, redact)
	if err != nil {
		return false, err
	}
	return true, openai.DecodeRequest(bytes.NewReader(body), v)
}

// answered is a line's rendered answer and the call's usage.
func answered(call *generate.Call, v any) (batch.Answer, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return batch.Answer{}, err
	}
	in, out := call.Usage()
	return batch.Answer{Body: b, InputTokens: in, OutputTokens: out}, nil
}

func (s *Ops) chatLine(ctx context.Context, call *generate.Call, m catalog.Resolved, body []byte) (batch.Answer, error) {
	var req openai.ChatRequest
	if err := openai.DecodeRequest(bytes.NewReader(body), &req); err != nil {
		return batch.Answer{}, err
	}
	if err := notStreamed(req.Stream); err != nil {
		return batch.Answer{}, err
	}
	native, err := chatNative(m, &req)
	if err != nil {
		return batch.Answer{}, err
	}
	if redacted, err := s.admitLine(ctx, call, m, generate.Gate{Text: generate.MessagesText(native.Messages), MaxTokens: native.MaxTokens, Output: true}, body, &req); err != nil {
		return batch.Answer{}, err
	} else if redacted {
		if native, err = chatNative(m, &req); err != nil {
			return batch.Answer{}, err
		}
	}
	native.Model, req.Model = m.ID, m.ID
	gen, err := s.generate(ctx, m, []inference.CompletionRequest{native}, req.Choices())
	if err != nil {
		return batch.Answer{}, err
	}
	defer gen.Close()
	out, err := openai.CollectChat(gen.Streams, m.ID, native.Logprobs)
	if err != nil {
		return batch.Answer{}, err
	}
	if err := gen.End(); err != nil {
		return batch.Answer{}, err
	}
	if req.Legacy() {
		out.UseFunctionCall()
	}
	return answered(call, out)
}

// chatNative is a decoded chat request as the model will run it (over
// HTTP and in a batch line alike).
func chatNative(m catalog.Resolved, req *openai.ChatRequest) (inference.CompletionRequest, error) {
	native, err := req.Native()
	if err != nil {
		return native, err
	}
	if err := generate.Fit(m, &native); err != nil {
		if req.Legacy() && apierr.From(err).Param == "tools" {
			return native, apierr.WithParam(err, "functions") // what the client sent
		}
		return native, err
	}
	return native, nil
}

func (s *Ops) completionLine(ctx context.Context, call *generate.Call, m catalog.Resolved, body []byte) (batch.Answer, error) {
	var req openai.CompletionRequest
	if err := openai.DecodeRequest(bytes.NewReader(body), &req); err != nil {
		return batch.Answer{}, err
	}
	if req.Grounded() {
		return s.groundedLine(ctx, call, m, body, &req)
	}
	if !m.Has("completions") {
		return batch.Answer{}, apierr.Invalid("model", "the model "+m.ID+" does not support completions (it supports: "+strings.Join(m.Capabilities, ", ")+")")
	}
	if err := notStreamed(req.Stream); err != nil {
		return batch.Answer{}, err
	}
	natives, err := completionNatives(m, &req)
	if err != nil {
		return batch.Answer{}, err
	}
	var text strings.Builder
	for _, n := range natives {
		text.WriteString(n.Prompt)
		text.WriteByte('\n')
	}
	maxTokens := 0
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	if redacted, err := s.admitLine(ctx, call, m, generate.Gate{Text: text.String(), MaxTokens: maxTokens, Output: true}, body, &req); err != nil {
		return batch.Answer{}, err
	} else if redacted {
		if natives, err = completionNatives(m, &req); err != nil {
			return batch.Answer{}, err
		}
	}
	for i := range natives {
		natives[i].Model = m.ID
	}
	n := req.Choices()
	gen, err := s.generate(ctx, m, natives, n)
	if err != nil {
		return batch.Answer{}, err
	}
	defer gen.Close()
	out, err := openai.CollectTexts(gen.Streams, n, m.ID, natives[0].Logprobs)
	if err != nil {
		return batch.Answer{}, err
	}
	if err := gen.End(); err != nil {
		return batch.Answer{}, err
	}
	return answered(call, out)
}

// completionNatives are a decoded completion request's generations, one
// per prompt, as the model will run them (over HTTP and in a batch line
// alike).
func completionNatives(m catalog.Resolved, req *openai.CompletionRequest) ([]inference.CompletionRequest, error) {
	natives, err := req.NativeAll()
	if err != nil {
		return nil, err
	}
	for i := range natives {
		if err := generate.Fit(m, &natives[i]); err != nil {
			return nil, err
		}
	}
	return natives, nil
}

func (s *Ops) embeddingLine(ctx context.Context, call *generate.Call, m catalog.Resolved, body []byte) (batch.Answer, error) {
	var req openai.EmbeddingRequest
	if err := openai.DecodeRequest(bytes.NewReader(body), &req); err != nil {
		return batch.Answer{}, err
	}
	native, err := req.Native()
	if err != nil {
		return batch.Answer{}, err
	}
	if redacted, err := s.admitLine(ctx, call, m, generate.Gate{Text: strings.Join(native.Input, "\n")}, body, &req); err != nil {
		return batch.Answer{}, err
	} else if redacted {
		if native, err = req.Native(); err != nil {
			return batch.Answer{}, err
		}
	}
	b, err := generate.Target(m)
	if err != nil {
		return batch.Answer{}, err
	}
	req.Model, native.Model = m.ID, m.ID
	start := time.Now()
	res, err := b.Embed(ctx, native)
	s.Gen.Observe(ctx, m.ID, catalog.Observation{Latency: time.Since(start), Failed: err != nil})
	if err != nil {
		return batch.Answer{}, err
	}
	call.NoteUsage(res.PromptTokens, 0, time.Time{})
	s.Gen.AddTokens(m.ID, res.PromptTokens, 0)
	out, err := req.Response(res)
	if err != nil {
		return batch.Answer{}, err
	}
	return answered(call, out)
}

// relayLine relays a line to its upstream model as written (scanned once
// for what the gateway acts on, as over HTTP) and returns the upstream's
// answer, governed.
func (s *Ops) relayLine(ctx context.Context, call *generate.Call, m catalog.Resolved, path string, body []byte) (batch.Answer, error) {
	p, err := openai.PeekRequest(body)
	if err != nil {
		return batch.Answer{}, err
	}
	switch {
	case path == "/completions" && (p.Grounded || p.HasMessages), path == "/responses" && (p.Grounded || !m.Has("responses")):
		return batch.Answer{}, errNotRelayed
	case path == "/completions" && !m.Has("completions"):
		return batch.Answer{}, apierr.Invalid("model", "the model "+m.ID+" does not support completions (it supports: "+strings.Join(m.Capabilities, ", ")+")")
	}
	if err := notStreamed(p.Stream); err != nil {
		return batch.Answer{}, err
	}
	if err := relayCheck(m, p); err != nil {
		return batch.Answer{}, err
	}
	redact, _, err := s.Gen.Admit(ctx, call, m, peekGate(p, path != "/embeddings"))
	if err != nil {
		return batch.Answer{}, err
	}
	if redact != nil {
		if body, err = redactJSON(body, redact); err != nil {
			return batch.Answer{}, err
		}
		if p, err = openai.PeekRequest(body); err != nil {
			return batch.Answer{}, err
		}
	}
	if body, err = relayLimits(m, path, body, p); err != nil {
		return batch.Answer{}, err
	}
	answer, err := s.relayWhole(ctx, call, m, path, body, p)
	if err != nil {
		return batch.Answer{}, err
	}
	in, out := call.Usage()
	return batch.Answer{Body: answer, InputTokens: in, OutputTokens: out}, nil
}

// responseLine runs a Responses API line: the same response as POST
// /v1/responses gives when it does not stream, stored when the line asks
// (the default), like one over HTTP.
func (s *Ops) responseLine(ctx context.Context, call *generate.Call, m catalog.Resolved, body []byte) (batch.Answer, error) {
	var req openai.ResponsesRequest
	if err := openai.DecodeRequest(bytes.NewReader(body), &req); err != nil {
		return batch.Answer{}, err
	}
	if err := notStreamed(req.Stream); err != nil {
		return batch.Answer{}, err
	}
	// Admitted on the line's own input, as over HTTP (a previous
	// response's conversation is not the request's text).
	items, err := req.Items()
	if err != nil {
		return batch.Answer{}, err
	}
	native, err := req.Native(nil, items)
	if err != nil {
		return batch.Answer{}, err
	}
	g := generate.Gate{Text: generate.MessagesText(native.Messages), MaxTokens: native.MaxTokens, Output: true}
	if _, err := s.admitLine(ctx, call, m, g, body, &req); err != nil {
		return batch.Answer{}, err
	}
	t, err := s.startTurn(ctx, nil, m, &req)
	if err != nil {
		return batch.Answer{}, err
	}
	defer t.gen.Close()
	resp, err := t.whole(ctx)
	if err != nil {
		return batch.Answer{}, err
	}
	return answered(call, resp)
}

// groundedLine runs a completion line with sources: the same answer as
// POST /v1/completions with "citations" or "sources" gives when it does
// not stream, its citations stored as source links.
func (s *Ops) groundedLine(ctx context.Context, call *generate.Call, m catalog.Resolved, body []byte, req *openai.CompletionRequest) (batch.Answer, error) {
	if err := notStreamed(req.Stream); err != nil {
		return batch.Answer{}, err
	}
	native, err := groundedNative(m, req)
	if err != nil {
		return batch.Answer{}, err
	}
	if redacted, err := s.admitLine(ctx, call, m, generate.Gate{Text: generate.MessagesText(native.Messages), MaxTokens: native.MaxTokens, Output: true}, body, req); err != nil {
		return batch.Answer{}, err
	} else if redacted {
		if native, err = groundedNative(m, req); err != nil {
			return batch.Answer{}, err
		}
	}
	ans, gen, err := s.startAnswer(ctx, nil, m, native, req.Citations, req.Sources, false)
	if err != nil {
		return batch.Answer{}, err
	}
	defer gen.Close()
	resp, err := s.groundedWhole(ctx, gen, m, ans, req.Messages == nil, req.Citations.Cite())
	if err != nil {
		return batch.Answer{}, err
	}
	return answered(call, resp)
}
