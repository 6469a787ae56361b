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

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/rawjson"
)

var _ inference.Relayer = (*Backend)(nil)

// Relay passes a client's request to a replica as it was sent, but for
// the model name, and returns the answer event by event as the replica
// sends it, with the model name mapped back. The replica is chosen, and
// failed over, as for Complete.
func (b *Backend) Relay(ctx context.Context, req inference.RelayRequest) (inference.Relay, error) {
	model, _ := json.Marshal(b.cfg.UpstreamModel)
	body, err := rawjson.SetValid(req.Body, "model", model)
	if err != nil {
		return nil, apierr.Invalid("", "the request body must be a JSON object")
	}
	if err := b.checkPrompt(ctx, req.Prompt, req.MaxInputTokens); err != nil {
		return nil, err
	}
	c, err := b.send(ctx, req.Path, body)
	if err != nil {
		return nil, err
	}
	r := &relay{b: b, c: c, ctx: ctx, req: req}
	if !req.Stream {
		if err := r.whole(); err != nil {
			return nil, err
		}
		return r, nil
	}
	r.rd = c.streamed()
	return r, nil
}

// relay is an answer being relayed.
type relay struct {
	b   *Backend
	c   *call
	ctx context.Context
	req inference.RelayRequest
	rd  *bufio.Reader

	body   []byte // a whole answer, not yet returned
	text   strings.Builder
	usage  *inference.Usage
	output bool // a whole answer had output
	ended  bool
	err    error
}

// whole reads an answer that is not streamed.
func (r *relay) whole() error {
	data, err := r.c.readAll(r.ctx)
	if err != nil {
		return err
	}
	if !json.Valid(data) {
		e := r.b.badResponse("the answer is not JSON: %s", snippet(data))
		r.c.finish(false, e)
		return e
	}
	r.body = r.mapModel(data)
	r.output = r.read(data)
	r.c.finish(true, nil)
	return nil
}

// Next returns the next event of the answer.
func (r *relay) Next() (inference.RelayEvent, error) {
	if r.body != nil {
		ev := inference.RelayEvent{Data: r.body, Output: r.output}
		r.body, r.ended = nil, true
		return ev, nil
	}
	if r.err != nil {
		return inference.RelayEvent{}, r.err
	}
	if r.ended {
		return inference.RelayEvent{}, io.EOF
	}
	ev, err := r.event()
	switch {
	case err == nil && bytes.Equal(ev.Data, []byte("[DONE]")):
		// The stream's end: what may follow is not the client's.
		r.ended = true
		r.c.finish(true, nil)
	case errors.Is(err, io.EOF):
		r.ended = true
		r.c.finish(true, nil)
	case err != nil:
		r.err = err
	}
	return ev, err
}

// event reads the next server-sent event of a stream.
func (r *relay) event() (inference.RelayEvent, error) {
	var ev inference.RelayEvent
	var data [][]byte
	for {
		line, err := readLine(r.rd)
		if r.c.idle != nil {
			r.c.idle.Reset(r.b.cfg.IdleTimeout)
		}
		if err != nil {
			switch {
			case r.c.stalled():
				return ev, r.failed(&inference.UpstreamError{Model: r.b.cfg.Model, Kind: inference.UpstreamTimeout,
					Message: fmt.Sprintf("model %q: the upstream stalled: no data for %s in the middle of the stream", r.b.cfg.Model, r.b.cfg.IdleTimeout)})
			case r.ctx.Err() != nil:
				r.c.finish(false, nil)
				return ev, r.ctx.Err()
			case errors.Is(err, io.EOF) && len(data) == 0:
				return ev, io.EOF
			case errors.Is(err, io.EOF):
				// The last event lacks its blank line: it is whole.
			default:
				return ev, r.failed(r.b.badResponse("the stream broke off (%v)", err))
			}
		}
		if len(line) == 0 && err == nil {
			if len(data) == 0 {
				ev.Event = ""
				continue // a blank line after comments only
			}
			break
		}
		if err == nil {
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "data":
				data = append(data, value)
			case "event":
				ev.Event = string(value)
			}
			continue
		}
		break
	}
	ev.Data = bytes.Join(data, []byte("\n"))
	if bytes.Equal(ev.Data, []byte("[DONE]")) {
		return ev, nil
	}
	if !json.Valid(ev.Data) {
		return ev, r.failed(r.b.badResponse("a stream chunk is not JSON: %s", snippet(ev.Data)))
	}
	ev.Output = r.read(ev.Data)
	ev.Data = r.mapModel(ev.Data)
	return ev, nil
}

func (r *relay) failed(err error) error {
	r.c.finish(false, err)
	return err
}

// mapModel puts Sovereign's model id where the upstream wrote its own
// name: at the top (chat and text completions, embeddings, a response)
// and in a Responses event's "response".
func (r *relay) mapModel(data []byte) []byte {
	id, _ := json.Marshal(r.b.cfg.Model)
	if sp, err := rawjson.FindValid(data, "model"); err == nil && sp.Found && data[sp.Start] == '"' {
		data = append(append(append([]byte(nil), data[:sp.Start]...), id...), data[sp.End:]...)
	}
	if r.req.Path == "/responses" {
		if sp, err := rawjson.FindValid(data, "response"); err == nil && sp.Found && data[sp.Start] == '{' {
			inner := r.mapInner(data[sp.Start:sp.End], id)
			data = append(append(append([]byte(nil), data[:sp.Start]...), inner...), data[sp.End:]...)
		}
	}
	return data
}

func (r *relay) mapInner(obj, id []byte) []byte {
	if sp, err := rawjson.FindValid(obj, "model"); err == nil && sp.Found && obj[sp.Start] == '"' {
		return append(append(append([]byte(nil), obj[:sp.Start]...), id...), obj[sp.End:]...)
	}
	return obj
}

// relayChunk is what the gateway reads of an answer or chunk: output text
// to count when no usage comes, and the usage (chat, completions and
// embeddings name it one way, the Responses API another).
type relayChunk struct {
	Choices []struct {
		Delta   *relayMessage `json:"delta"`
		Message *relayMessage `json:"message"`
		Text    *string       `json:"text"`
	} `json:"choices"`
	Usage    *relayUsage `json:"usage"`
	Delta    *string     `json:"delta"` // Responses API text and argument deltas
	Response *struct {
		Usage *relayUsage `json:"usage"`
	} `json:"response"`
}

type relayMessage struct {
	Content   *string `json:"content"`
	ToolCalls []struct {
		Function struct {
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type relayUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	InputTokens         int `json:"input_tokens"`
	OutputTokens        int `json:"output_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

// read notes a chunk's output and usage, and reports whether the chunk
// carries output (text or a tool call).
func (r *relay) read(data []byte) (output bool) {
	var ch relayChunk
	if json.Unmarshal(data, &ch) != nil {
		return false
	}
	if u := ch.Usage; u == nil && ch.Response != nil {
		ch.Usage = ch.Response.Usage
	}
	if u := ch.Usage; u != nil {
		r.usage = &inference.Usage{PromptTokens: u.PromptTokens + u.InputTokens, CompletionTokens: u.CompletionTokens + u.OutputTokens}
		if d := u.PromptTokensDetails; d != nil {
			r.usage.CachedTokens = d.CachedTokens
		}
		if d := u.InputTokensDetails; d != nil {
			r.usage.CachedTokens = d.CachedTokens
		}
	}
	add := func(s string) {
		if s != "" {
			output = true
			r.text.WriteString(s)
		}
	}
	for _, c := range ch.Choices {
		for _, m := range []*relayMessage{c.Delta, c.Message} {
			if m == nil {
				continue
			}
			if m.Content != nil {
				add(*m.Content)
			}
			for _, tc := range m.ToolCalls {
				output = true
				add(tc.Function.Arguments)
			}
		}
		if c.Text != nil {
			add(*c.Text)
		}
	}
	if ch.Delta != nil {
		add(*ch.Delta)
	}
	return output
}

// Usage returns the answer's token counts: the upstream's, or counted
// with the model's tokenizer when it reported none.
func (r *relay) Usage() inference.Usage {
	if r.usage != nil {
		return *r.usage
	}
	return inference.Usage{PromptTokens: r.b.count(r.ctx, r.req.Prompt), CompletionTokens: r.b.count(r.ctx, r.text.String())}
}

// Replica is the base URL of the replica that answered.
func (r *relay) Replica() string { return r.c.r.base }

// Close abandons the request if it is unfinished.
func (r *relay) Close() error {
	r.c.finish(false, nil)
	return nil
}
