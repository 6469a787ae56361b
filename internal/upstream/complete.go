package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/inference"
)

// wireRequest is the body sent to /chat/completions or /completions.
type wireRequest struct {
	Model             string             `json:"model"`
	Messages          []wireMessage      `json:"messages,omitempty"`
	Prompt            any                `json:"prompt,omitempty"`
	MaxTokens         int                `json:"max_tokens,omitempty"`
	Temperature       float32            `json:"temperature"`
	TopP              float32            `json:"top_p,omitempty"`
	TopK              int                `json:"top_k,omitempty"`
	MinP              float32            `json:"min_p,omitempty"`
	RepeatPenalty     float32            `json:"repeat_penalty,omitempty"`
	PresencePenalty   float32            `json:"presence_penalty,omitempty"`
	FrequencyPenalty  float32            `json:"frequency_penalty,omitempty"`
	Seed              *uint32            `json:"seed,omitempty"`
	LogitBias         map[string]float32 `json:"logit_bias,omitempty"`
	Stop              []string           `json:"stop,omitempty"`
	Logprobs          any                `json:"logprobs,omitempty"`
	TopLogprobs       int                `json:"top_logprobs,omitempty"`
	ResponseFormat    json.RawMessage    `json:"response_format,omitempty"`
	Stream            bool               `json:"stream,omitempty"`
	StreamOptions     *streamOptions     `json:"stream_options,omitempty"`
	Tools             []wireTool         `json:"tools,omitempty"`
	ToolChoice        any                `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool              `json:"parallel_tool_calls,omitempty"`
}

// wireTool is a function tool in OpenAI's chat shape.
type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// wireMessage is a chat message in OpenAI's shape: tool calls as
// {id, type, function: {name, arguments}}.
type wireMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// wireMessages converts native messages to OpenAI's chat shape.
func wireMessages(msgs []inference.Message) []wireMessage {
	out := make([]wireMessage, len(msgs))
	for i, m := range msgs {
		w := wireMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		if len(m.Parts) > 0 {
			w.Content = m.Parts
		} else if m.Content == "" && len(m.ToolCalls) > 0 {
			w.Content = nil
		}
		for _, c := range m.ToolCalls {
			tc := wireToolCall{ID: c.ID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = c.Name, c.Arguments
			w.ToolCalls = append(w.ToolCalls, tc)
		}
		out[i] = w
	}
	return out
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

func (b *Backend) wire(req inference.CompletionRequest) (path string, w wireRequest, err error) {
	w = wireRequest{
		Model: b.cfg.UpstreamModel, MaxTokens: req.MaxTokens, Temperature: req.Temperature, TopP: req.TopP,
		TopK: req.TopK, MinP: req.MinP, RepeatPenalty: req.RepeatPenalty, PresencePenalty: req.PresencePenalty,
		FrequencyPenalty: req.FrequencyPenalty, Seed: req.Seed, Stop: req.Stop, ResponseFormat: req.ResponseFormat,
		Stream: req.Stream,
	}
	if len(req.LogitBias) > 0 {
		w.LogitBias = make(map[string]float32, len(req.LogitBias))
		for k, v := range req.LogitBias {
			w.LogitBias[fmt.Sprint(k)] = v
		}
	}
	if req.Stream {
		w.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	for _, t := range req.Tools {
		wt := wireTool{Type: "function"}
		wt.Function.Name, wt.Function.Description, wt.Function.Parameters = t.Name, t.Description, t.Parameters
		w.Tools = append(w.Tools, wt)
	}
	if len(req.Tools) > 0 {
		switch {
		case req.ToolName != "":
			w.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": req.ToolName}}
		case req.ToolChoice != "":
			w.ToolChoice = req.ToolChoice
		}
		parallel := req.ParallelToolCalls
		w.ParallelToolCalls = &parallel
	}
	if req.Grammar != "" && len(req.ResponseFormat) == 0 {
		return "", w, fmt.Errorf("%w: model %q is served by an upstream, which takes response_format rather than a grammar", inference.ErrUnsupported, b.cfg.Model)
	}
	switch {
	case len(req.Messages) > 0:
		path, w.Messages = "/chat/completions", wireMessages(req.Messages)
		if req.Logprobs {
			w.Logprobs, w.TopLogprobs = true, req.TopLogprobs
		}
	case len(req.Tokens) > 0:
		path, w.Prompt = "/completions", req.Tokens
	default:
		path, w.Prompt = "/completions", req.Prompt
	}
	if path == "/completions" && req.Logprobs {
		w.Logprobs = req.TopLogprobs
	}
	return path, w, nil
}

// Complete sends the request to a replica. With req.Stream the upstream
// streams and each of its chunks becomes an event as it arrives;
// otherwise the whole answer is fetched at once.
func (b *Backend) Complete(ctx context.Context, req inference.CompletionRequest) (inference.Stream, error) {
	path, w, err := b.wire(req)
	if err != nil {
		return nil, err
	}
	if err := b.checkPrompt(ctx, (&stream{req: req}).promptText(), req.MaxInputTokens); err != nil {
		return nil, err
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	c, err := b.send(ctx, path, body)
	if err != nil {
		return nil, err
	}
	s := &stream{b: b, c: c, ctx: ctx, req: req, chat: path == "/chat/completions"}
	if !req.Stream {
		if err := s.whole(); err != nil {
			return nil, err
		}
		return s, nil
	}
	s.rd = c.streamed()
	return s, nil
}

// chunk is an upstream response or stream chunk (chat or text).
type chunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Content   *string         `json:"content"`
			ToolCalls []chunkToolCall `json:"tool_calls"`
		} `json:"delta"`
		Message *struct {
			Content   *string         `json:"content"`
			ToolCalls []chunkToolCall `json:"tool_calls"`
		} `json:"message"`
		Text         *string         `json:"text"`
		FinishReason *string         `json:"finish_reason"`
		Logprobs     json.RawMessage `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// chunkToolCall is a tool call of an answer, or a piece of one in a
// stream chunk (index, then id and name first, arguments in pieces).
type chunkToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// stream turns an upstream answer into native events.
type stream struct {
	b    *Backend
	c    *call
	ctx  context.Context
	req  inference.CompletionRequest
	chat bool
	rd   *bufio.Reader

	pending []inference.Event // decoded, not yet returned
	text    strings.Builder   // the output, to count usage when the upstream gives none
	finish  string
	usage   *inference.Usage
	ended   bool
	err     error
}

// Recv returns the next event; io.EOF after the final one.
func (s *stream) Recv() (inference.Event, error) {
	for len(s.pending) == 0 {
		if s.err != nil {
			return inference.Event{}, s.err
		}
		if s.ended {
			return inference.Event{}, io.EOF
		}
		s.next()
	}
	ev := s.pending[0]
	s.pending = s.pending[1:]
	return ev, nil
}

// Replica is the base URL of the replica that answered.
func (s *stream) Replica() string { return s.c.r.base }

// Close abandons the request if it is unfinished.
func (s *stream) Close() error {
	s.c.finish(false, nil)
	return nil
}

func (s *stream) fail(err error) {
	s.err = err
	s.c.finish(false, err)
}

// whole reads a non-streamed answer.
func (s *stream) whole() error {
	data, err := s.c.readAll(s.ctx)
	if err != nil {
		return err
	}
	var ch chunk
	if err := json.Unmarshal(data, &ch); err != nil || len(ch.Choices) == 0 {
		e := s.b.badResponse("the answer is not a completion: %s", snippet(data))
		s.c.finish(false, e)
		return e
	}
	s.add(&ch)
	if s.finish == "" {
		s.finish = inference.FinishStop
	}
	s.end()
	s.c.finish(true, nil)
	return nil
}

// next reads stream lines until it has events, the end, or an error.
func (s *stream) next() {
	for {
		line, err := readLine(s.rd)
		if s.c.idle != nil {
			s.c.idle.Reset(s.b.cfg.IdleTimeout)
		}
		if err != nil {
			switch {
			case s.c.stalled():
				s.fail(&inference.UpstreamError{Model: s.b.cfg.Model, Kind: inference.UpstreamTimeout,
					Message: fmt.Sprintf("model %q: the upstream stalled: no data for %s in the middle of the stream", s.b.cfg.Model, s.b.cfg.IdleTimeout)})
			case s.ctx.Err() != nil:
				s.err = s.ctx.Err()
				s.c.finish(false, nil)
			case errors.Is(err, io.EOF) && s.finish != "":
				s.end() // no [DONE], but the answer was complete
				s.c.finish(true, nil)
			default:
				s.fail(s.b.badResponse("the stream ended before it was complete (%v)", err))
			}
			return
		}
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // blank lines, comments, event: and id: fields
		}
		data = bytes.TrimSpace(data)
		if bytes.Equal(data, []byte("[DONE]")) {
			if s.finish == "" {
				s.finish = inference.FinishStop
			}
			s.end()
			s.c.finish(true, nil)
			return
		}
		var ch chunk
		if err := json.Unmarshal(data, &ch); err != nil {
			s.fail(s.b.badResponse("a stream chunk is not JSON: %s", snippet(data)))
			return
		}
		if len(ch.Error) > 0 && !bytes.Equal(ch.Error, []byte("null")) {
			msg, _ := envelopeMessage([]byte(`{"error":` + string(ch.Error) + `}`))
			if msg == "" {
				msg = snippet(ch.Error)
			}
			s.fail(&inference.UpstreamError{Model: s.b.cfg.Model, Kind: inference.UpstreamBadResponse,
				Message: fmt.Sprintf("model %q: the upstream failed mid-stream: %s", s.b.cfg.Model, msg)})
			return
		}
		s.add(&ch)
		if len(s.pending) > 0 {
			return
		}
	}
}

// add turns a chunk into pending events and records finish and usage.
func (s *stream) add(ch *chunk) {
	if u := ch.Usage; u != nil {
		s.usage = &inference.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
		if u.PromptTokensDetails != nil {
			s.usage.CachedTokens = u.PromptTokensDetails.CachedTokens
		}
	}
	for _, c := range ch.Choices {
		var text *string
		var calls []chunkToolCall
		switch {
		case c.Delta != nil:
			text, calls = c.Delta.Content, c.Delta.ToolCalls
		case c.Message != nil:
			text, calls = c.Message.Content, c.Message.ToolCalls
		default:
			text = c.Text
		}
		if len(calls) > 0 {
			ev := inference.Event{}
			for k, tc := range calls {
				idx := k
				if tc.Index != nil {
					idx = *tc.Index
				}
				ev.ToolCalls = append(ev.ToolCalls, inference.ToolCallDelta{Index: idx, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
				s.text.WriteString(tc.Function.Arguments)
			}
			s.pending = append(s.pending, ev)
		}
		lp := s.logprobs(c.Logprobs)
		if (text != nil && *text != "") || len(lp) > 0 {
			ev := inference.Event{Logprobs: lp}
			if text != nil {
				ev.Text = *text
				s.text.WriteString(*text)
			}
			s.pending = append(s.pending, ev)
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			s.finish = *c.FinishReason
		}
	}
}

// end queues the final event, counting usage when the upstream sent none.
func (s *stream) end() {
	s.ended = true
	u := s.usage
	if u == nil {
		u = &inference.Usage{PromptTokens: s.b.count(s.ctx, s.promptText()), CompletionTokens: s.b.count(s.ctx, s.text.String())}
	}
	s.pending = append(s.pending, inference.Event{Done: true, FinishReason: s.finish, Usage: u})
}

func (s *stream) promptText() string {
	if len(s.req.Messages) == 0 {
		return s.req.Prompt
	}
	var sb strings.Builder
	for _, m := range s.req.Messages {
		sb.WriteString(m.Content)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// logprobs decodes OpenAI chat logprobs ({content:[{token, logprob, bytes,
// top_logprobs}]}) or text-completion logprobs ({tokens, token_logprobs}).
func (s *stream) logprobs(raw json.RawMessage) []inference.TokenLogprob {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var chat struct {
		Content []struct {
			Token       string  `json:"token"`
			Logprob     float32 `json:"logprob"`
			Bytes       []int   `json:"bytes"`
			TopLogprobs []struct {
				Token   string  `json:"token"`
				Logprob float32 `json:"logprob"`
				Bytes   []int   `json:"bytes"`
			} `json:"top_logprobs"`
		} `json:"content"`
		Tokens        []string  `json:"tokens"`
		TokenLogprobs []float32 `json:"token_logprobs"`
	}
	if json.Unmarshal(raw, &chat) != nil {
		return nil
	}
	var out []inference.TokenLogprob
	for _, c := range chat.Content {
		t := inference.TokenLogprob{Token: c.Token, Bytes: toBytes(c.Bytes, c.Token), Logprob: c.Logprob}
		for _, tp := range c.TopLogprobs {
			t.Top = append(t.Top, inference.TokenLogprob{Token: tp.Token, Bytes: toBytes(tp.Bytes, tp.Token), Logprob: tp.Logprob})
		}
		out = append(out, t)
	}
	for i, tok := range chat.Tokens {
		t := inference.TokenLogprob{Token: tok, Bytes: []byte(tok)}
		if i < len(chat.TokenLogprobs) {
			t.Logprob = chat.TokenLogprobs[i]
		}
		out = append(out, t)
	}
	return out
}

func toBytes(b []int, tok string) []byte {
	if b == nil {
		return []byte(tok)
	}
	out := make([]byte, len(b))
	for i, v := range b {
		out[i] = byte(v)
	}
	return out
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "(empty)"
	}
	return fmt.Sprintf("%q", s)
}
