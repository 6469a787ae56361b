package openai

import (
	"encoding/json"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/citation"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// Response is OpenAI's response object.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []OutputItem       `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
	Store       bool           `json:"store"`
	Temperature float32        `json:"temperature"`
	Text        ResponseText   `json:"text"`
	ToolChoice  any            `json:"tool_choice"`
	Tools       []EchoedTool   `json:"tools"`
	TopP        float32        `json:"top_p"`
	Truncation  string         `json:"truncation"`
	Usage       *ResponseUsage `json:"usage,omitempty"`
	User        *string        `json:"user,omitempty"`
	Metadata    map[string]any `json:"metadata"`
}

// EchoedTool is a function tool as a response repeats it: parameters and
// strict always present (strict is true unless the request said false: the
// arguments are held to the schema by grammar either way).
type EchoedTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// ResponseError is a failed response's error.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponseUsage is a response's token usage.
type ResponseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		// CacheWriteTokens are the prompt tokens not read from the prompt
		// cache, which it now holds.
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// OutputItem is an output message or function call.
type OutputItem struct {
	Type    string
	ID      string
	Status  string
	Content []OutputText // a message's
	// A function call's.
	CallID, Name, Arguments string
}

// MarshalJSON writes the fields of the item's type.
func (o OutputItem) MarshalJSON() ([]byte, error) {
	if o.Type == "function_call" {
		return json.Marshal(struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Status    string `json:"status"`
		}{o.Type, o.ID, o.CallID, o.Name, o.Arguments, o.Status})
	}
	content := o.Content
	if content == nil {
		content = []OutputText{}
	}
	return json.Marshal(struct {
		Type    string       `json:"type"`
		ID      string       `json:"id"`
		Status  string       `json:"status"`
		Role    string       `json:"role"`
		Content []OutputText `json:"content"`
	}{o.Type, o.ID, o.Status, "assistant", content})
}

// OutputText is an output_text content part.
type OutputText struct {
	Type        string         `json:"type"`
	Text        string         `json:"text"`
	Annotations []any          `json:"annotations"`
	Logprobs    []TokenLogprob `json:"logprobs"`
}

// ResponseEvent is one event of a Responses stream; Data holds its fields
// (type and sequence_number included).
type ResponseEvent struct {
	Type string
	Data map[string]any
}

// ResponseBuilder turns native events into a response and its stream
// events.
type ResponseBuilder struct {
	resp     Response
	seq      int
	msg      int // index of the open message in Output, -1 for none
	text     strings.Builder
	calls    map[int]int // native tool-call index → Output index
	open     int         // Output index of the open function call, -1 for none
	logprobs bool
	// itemStatus is a closed item's status: incomplete when the token
	// limit cut the output.
	itemStatus string
}

// NewResponseBuilder starts a response to r from model.
func NewResponseBuilder(r *ResponsesRequest, model string) *ResponseBuilder {
	resp := Response{
		ID: NewID("resp_"), Object: "response", CreatedAt: Now().Unix(), Status: "in_progress", Model: model,
		Output: []OutputItem{}, ParallelToolCalls: r.ParallelToolCalls == nil || *r.ParallelToolCalls,
		Store: r.Store == nil || *r.Store, Temperature: 1, TopP: 1, Truncation: "disabled", Tools: []EchoedTool{},
		Instructions: r.Instructions, MaxOutputTokens: r.MaxOutputTokens, Metadata: r.Metadata, ToolChoice: "auto",
		Text: ResponseText{Format: &ResponseFormatParam{Type: "text"}},
	}
	if r.Temperature != nil {
		resp.Temperature = *r.Temperature
	}
	if r.TopP != nil {
		resp.TopP = *r.TopP
	}
	if r.PreviousResponseID != "" {
		resp.PreviousResponseID = &r.PreviousResponseID
	}
	if r.User != "" {
		resp.User = &r.User
	}
	for _, t := range r.Tools {
		e := EchoedTool{Type: t.Type, Name: t.Name, Parameters: t.Parameters, Strict: t.Strict == nil || *t.Strict}
		if t.Description != "" {
			e.Description = &t.Description
		}
		if len(e.Parameters) == 0 {
			e.Parameters = json.RawMessage("null")
		}
		resp.Tools = append(resp.Tools, e)
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]any{}
	}
	if r.Text != nil && r.Text.Format != nil {
		resp.Text.Format = r.Text.Format
	}
	if len(r.ToolChoice) > 0 && string(r.ToolChoice) != "null" {
		var v any
		json.Unmarshal(r.ToolChoice, &v)
		resp.ToolChoice = v
	}
	return &ResponseBuilder{resp: resp, msg: -1, open: -1, calls: map[int]int{}, logprobs: r.TopLogprobs != nil, itemStatus: "completed"}
}

func (b *ResponseBuilder) event(typ string, fields map[string]any) ResponseEvent {
	fields["type"] = typ
	fields["sequence_number"] = b.seq
	b.seq++
	return ResponseEvent{Type: typ, Data: fields}
}

// snapshot is the response as it stands, for the lifecycle events.
func (b *ResponseBuilder) snapshot() Response {
	r := b.resp
	r.Output = append(make([]OutputItem, 0, len(b.resp.Output)), b.resp.Output...) // [] rather than null when empty
	return r
}

// Start returns the opening events: response.created and
// response.in_progress.
func (b *ResponseBuilder) Start() []ResponseEvent {
	return []ResponseEvent{
		b.event("response.created", map[string]any{"response": b.snapshot()}),
		b.event("response.in_progress", map[string]any{"response": b.snapshot()}),
	}
}

// Add takes one native event and returns the stream events it makes.
func (b *ResponseBuilder) Add(ev inference.Event) []ResponseEvent {
	var out []ResponseEvent
	if ev.Text != "" || (b.logprobs && len(ev.Logprobs) > 0) {
		out = append(out, b.closeCall()...)
		if b.msg < 0 {
			b.msg = len(b.resp.Output)
			item := OutputItem{Type: "message", ID: NewID("msg_"), Status: "in_progress"}
			b.resp.Output = append(b.resp.Output, item)
			out = append(out, b.event("response.output_item.added", map[string]any{"output_index": b.msg, "item": item}))
			part := OutputText{Type: "output_text", Annotations: []any{}, Logprobs: []TokenLogprob{}}
			b.resp.Output[b.msg].Content = []OutputText{part}
			out = append(out, b.event("response.content_part.added", map[string]any{"item_id": item.ID, "output_index": b.msg, "content_index": 0, "part": part}))
		}
		m := &b.resp.Output[b.msg]
		m.Content[0].Text += ev.Text
		lps := []TokenLogprob{}
		if b.logprobs {
			lps = NewLogprobs(ev.Logprobs)
			m.Content[0].Logprobs = append(m.Content[0].Logprobs, lps...)
		}
		out = append(out, b.event("response.output_text.delta", map[string]any{"item_id": m.ID, "output_index": b.msg, "content_index": 0, "delta": ev.Text, "logprobs": lps}))
	}
	for _, d := range ev.ToolCalls {
		i, ok := b.calls[d.Index]
		if !ok {
			out = append(out, b.closeMessage()...)
			out = append(out, b.closeCall()...)
			i = len(b.resp.Output)
			b.calls[d.Index] = i
			item := OutputItem{Type: "function_call", ID: NewID("fc_"), Status: "in_progress", CallID: d.ID, Name: d.Name}
			if item.CallID == "" {
				item.CallID = NewID("call_")
			}
			b.resp.Output = append(b.resp.Output, item)
			b.open = i
			out = append(out, b.event("response.output_item.added", map[string]any{"output_index": i, "item": item}))
		}
		if d.Arguments != "" {
			c := &b.resp.Output[i]
			c.Arguments += d.Arguments
			out = append(out, b.event("response.function_call_arguments.delta", map[string]any{"item_id": c.ID, "output_index": i, "delta": d.Arguments}))
		}
	}
	if ev.Done {
		if ev.FinishReason == inference.FinishLength {
			b.itemStatus = "incomplete"
		}
		out = append(out, b.closeMessage()...)
		out = append(out, b.closeCall()...)
		if u := ev.Usage; u != nil {
			ru := &ResponseUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
			ru.InputTokensDetails.CachedTokens = u.CachedTokens
			ru.InputTokensDetails.CacheWriteTokens = u.PromptTokens - u.CachedTokens
			b.resp.Usage = ru
		}
		typ := "response.completed"
		b.resp.Status = "completed"
		if ev.FinishReason == inference.FinishLength {
			typ, b.resp.Status = "response.incomplete", "incomplete"
			b.resp.IncompleteDetails = &IncompleteDetails{Reason: "max_output_tokens"}
		}
		out = append(out, b.event(typ, map[string]any{"response": b.snapshot()}))
	}
	return out
}

func (b *ResponseBuilder) closeMessage() []ResponseEvent {
	if b.msg < 0 {
		return nil
	}
	m := &b.resp.Output[b.msg]
	m.Status = b.itemStatus
	i := b.msg
	b.msg = -1
	part := m.Content[0]
	return []ResponseEvent{
		b.event("response.output_text.done", map[string]any{"item_id": m.ID, "output_index": i, "content_index": 0, "text": part.Text, "logprobs": part.Logprobs}),
		b.event("response.content_part.done", map[string]any{"item_id": m.ID, "output_index": i, "content_index": 0, "part": part}),
		b.event("response.output_item.done", map[string]any{"output_index": i, "item": *m}),
	}
}

func (b *ResponseBuilder) closeCall() []ResponseEvent {
	if b.open < 0 {
		return nil
	}
	c := &b.resp.Output[b.open]
	c.Status = b.itemStatus
	i := b.open
	b.open = -1
	return []ResponseEvent{
		b.event("response.function_call_arguments.done", map[string]any{"item_id": c.ID, "output_index": i, "name": c.Name, "arguments": c.Arguments}),
		b.event("response.output_item.done", map[string]any{"output_index": i, "item": *c}),
	}
}

// Annotate adds citations to the open message's text as annotations — a
// url_citation for a source with a URL, a file_citation (the document's id
// and title) otherwise; offsets are in characters — and returns their
// response.output_text.annotation.added events. Call it after the last
// text and before the final event.
func (b *ResponseBuilder) Annotate(cits []citation.Citation) []ResponseEvent {
	if b.msg < 0 {
		return nil
	}
	m := &b.resp.Output[b.msg]
	var out []ResponseEvent
	for _, c := range cits {
		for _, src := range c.Sources {
			var a map[string]any
			if src.URL != "" {
				a = map[string]any{"type": "url_citation", "url": src.URL, "title": src.Title, "start_index": c.Start, "end_index": c.End}
			} else {
				a = map[string]any{"type": "file_citation", "file_id": src.DocumentID, "filename": src.Title, "index": c.End}
			}
			i := len(m.Content[0].Annotations)
			m.Content[0].Annotations = append(m.Content[0].Annotations, a)
			out = append(out, b.event("response.output_text.annotation.added", map[string]any{
				"item_id": m.ID, "output_index": b.msg, "content_index": 0, "annotation_index": i, "annotation": a}))
		}
	}
	return out
}

// Fail ends the response as failed.
func (b *ResponseBuilder) Fail(code, message string) ResponseEvent {
	b.resp.Status = "failed"
	b.resp.Error = &ResponseError{Code: code, Message: message}
	return b.event("response.failed", map[string]any{"response": b.snapshot()})
}

// Response is the response built so far (whole once the final event was
// added).
func (b *ResponseBuilder) Response() Response { return b.snapshot() }

// OutputItems are the response's output as input items, to continue the
// conversation from (previous_response_id).
func (b *ResponseBuilder) OutputItems() []InputItem {
	var out []InputItem
	for _, o := range b.resp.Output {
		switch o.Type {
		case "message":
			c, _ := json.Marshal(o.Content)
			out = append(out, InputItem{Type: "message", ID: o.ID, Role: "assistant", Status: o.Status, Content: c})
		case "function_call":
			args := o.Arguments
			out = append(out, InputItem{Type: "function_call", ID: o.ID, CallID: o.CallID, Name: o.Name, Arguments: &args, Status: o.Status})
		}
	}
	return out
}
