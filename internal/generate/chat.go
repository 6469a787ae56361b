package generate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// partCapability is the capability a content part type needs.
var partCapability = map[string]string{"image_url": "vision", "file": "vision", "input_audio": "audio"}

// Fit makes a native request fit its model, or refuses it with a 400
// naming the member: tools without the tools capability, content parts
// other than text without the vision or audio capability (declared for
// upstream models; local models read text), and an output limit above the
// model's are refused rather than dropped; a missing output limit becomes
// the model's, and the model's input limit travels to the backend, which
// counts the prompt.
func Fit(m catalog.Resolved, req *inference.CompletionRequest) error {
	if len(req.Tools) > 0 && !m.Has("tools") {
		return apierr.Invalid("tools", fmt.Sprintf("the model %q does not take tools (it supports: %s)", m.ID, strings.Join(m.Capabilities, ", ")))
	}
	for i, msg := range req.Messages {
		for _, k := range msg.PartKinds {
			if capability := partCapability[k]; !m.Has(capability) {
				return apierr.Invalid(fmt.Sprintf("messages[%d].content", i), fmt.Sprintf("the model %q does not take %s parts (it has no %s capability; it supports: %s)",
					m.ID, k, capability, strings.Join(m.Capabilities, ", ")))
			}
		}
	}
	if l := m.Limits.MaxOutputTokens; l > 0 {
		if req.MaxTokens > l {
			return apierr.Invalid("max_tokens", fmt.Sprintf("max_tokens is %d but the model %q allows at most %d output tokens", req.MaxTokens, m.ID, l))
		}
		if req.MaxTokens == 0 {
			req.MaxTokens = l
		}
	}
	req.MaxInputTokens = m.Limits.MaxInputTokens
	return nil
}

// MessagesText is the text of a native request's messages (what input
// policies read and the token reservation counts).
func MessagesText(ms []inference.Message) string {
	n := 0
	for _, m := range ms {
		n += len(m.Content) + 1
	}
	b := make([]byte, 0, n)
	for _, m := range ms {
		b = append(append(b, m.Content...), '\n')
	}
	return string(b)
}

// RedactMessages is msgs with redact (an input policy's, from Admit)
// applied to each message's text; msgs itself when redact is nil. The
// caller's slice is not changed.
func RedactMessages(msgs []inference.Message, redact func(string) string) []inference.Message {
	if redact == nil {
		return msgs
	}
	out := make([]inference.Message, len(msgs))
	for i, msg := range msgs {
		msg.Content = redact(msg.Content)
		out[i] = msg
	}
	return out
}

// Answer is a whole chat answer.
type Answer struct {
	// Model is the model's id (the name asked for resolved).
	Model        string
	Text         string
	ToolCalls    []inference.ToolCall
	FinishReason string
	Usage        inference.Usage
}

// Chat runs one chat completion of the model named model for a typed
// caller (a workflow step): the whole pipeline — resolution, fitting,
// input policies and their redaction, limits, generation, output policies
// — with no HTTP in between, and returns the answer whole. The caller
// ends the call with Finish.
func (s *Service) Chat(ctx context.Context, c *Call, model string, req inference.CompletionRequest) (Answer, error) {
	m, req, err := s.AdmitChat(ctx, c, model, req)
	if err != nil {
		return Answer{}, err
	}
	req.Model, req.Stream = m.ID, false
	sts, err := s.Start(ctx, c, m, req, 1)
	if err != nil {
		return Answer{}, err
	}
	g := s.Output(c, sts)
	defer g.Close()
	return Whole(g, m.ID)
}

// AdmitChat readies a typed caller's chat request for the model named
// model: it resolves the model (capability chat), fits the request to it,
// admits it (input policies, limits, the output's reservation) and applies
// an input policy's redaction to its messages. Chat, and the workflow
// steps that answer with sources, start from it.
func (s *Service) AdmitChat(ctx context.Context, c *Call, model string, req inference.CompletionRequest) (catalog.Resolved, inference.CompletionRequest, error) {
	m, err := s.Resolve(ctx, c, model, "chat")
	if err != nil {
		return m, req, err
	}
	if err := Fit(m, &req); err != nil {
		return m, req, err
	}
	redact, _, err := s.Admit(ctx, c, m, Gate{Text: MessagesText(req.Messages), MaxTokens: req.MaxTokens, Output: true})
	if err != nil {
		return m, req, err
	}
	req.Messages = RedactMessages(req.Messages, redact)
	return m, req, nil
}

// Whole reads a generation's first stream to its end and returns the
// answer whole (text, tool calls, finish reason, usage), after the output
// policies' verdict on all of it (End). The caller closes g.
func Whole(g *Generation, model string) (Answer, error) {
	out := Answer{Model: model}
	var text strings.Builder
	calls := map[int]*inference.ToolCall{}
	for {
		ev, err := g.Streams[0].Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Answer{}, err
		}
		text.WriteString(ev.Text)
		for _, d := range ev.ToolCalls {
			tc := calls[d.Index]
			if tc == nil {
				tc = &inference.ToolCall{}
				calls[d.Index] = tc
			}
			if d.ID != "" {
				tc.ID = d.ID
			}
			tc.Name += d.Name
			tc.Arguments += d.Arguments
		}
		if ev.Done {
			out.FinishReason = ev.FinishReason
			if ev.Usage != nil {
				out.Usage = *ev.Usage
			}
			break
		}
	}
	if err := g.End(); err != nil {
		return Answer{}, err
	}
	out.Text = text.String()
	for i := 0; i < len(calls); i++ {
		if tc := calls[i]; tc != nil {
			out.ToolCalls = append(out.ToolCalls, *tc)
		}
	}
	return out, nil
}
