package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// OpenAI's Responses API (POST /v1/responses) over the native model: a
// request becomes the chat request it means (input items → messages,
// flat function tools → chat tools, text.format → response_format) and is
// validated by the chat rules; native events become output items and the
// Responses stream's events.

// ResponsesRequest is the body of POST /v1/responses.
type ResponsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Tools              []ResponseTool  `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	Text               *ResponseText   `json:"text"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Temperature        *float32        `json:"temperature"`
	TopP               *float32        `json:"top_p"`
	TopLogprobs        *int            `json:"top_logprobs"`
	Stream             bool            `json:"stream"`
	Store              *bool           `json:"store"`
	PreviousResponseID string          `json:"previous_response_id"`
	Metadata           map[string]any  `json:"metadata"`
	User               string          `json:"user"`
	Truncation         string          `json:"truncation"`
	// Citations and Sources answer from sources, as on /v1/completions
	// (Sovereign's extension): citations come back as the output text's
	// annotations.
	Citations *CitationsParam `json:"citations"`
	Sources   *SourcesParam   `json:"sources"`
}

// Cite reports whether the request asks for citations.
func (r *ResponsesRequest) Cite() bool { return r.Citations.Cite() }

// ResponseTool is a Responses tool: function tools are flat
// ({type, name, description, parameters, strict}).
type ResponseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ResponseText is the text field: the output format.
type ResponseText struct {
	Format *ResponseFormatParam `json:"format"`
}

// ResponseFormatParam is text.format: text, json_object or json_schema
// (flat: {type, name, schema, strict, description}).
type ResponseFormatParam struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// InputItem is one item of a response's input, as stored and listed by
// GET /v1/responses/{id}/input_items.
type InputItem struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Role    string          `json:"role,omitempty"`
	Status  string          `json:"status,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`
	CallID  string          `json:"call_id,omitempty"`
	Name    string          `json:"name,omitempty"`
	// Arguments is a function call's; Output a function call output's.
	Arguments *string `json:"arguments,omitempty"`
	Output    *string `json:"output,omitempty"`
}

// rawItem is an input item as a client sends it.
type rawItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// Items validates r's input into input items (a string is one user
// message).
func (r *ResponsesRequest) Items() ([]InputItem, error) {
	in := bytes.TrimSpace(r.Input)
	if len(in) == 0 || bytes.Equal(in, []byte("null")) {
		return nil, apierr.Invalid("input", "'input' is required: a string or an array of input items")
	}
	if in[0] == '"' {
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return nil, apierr.Invalid("input", "'input' is not a valid string")
		}
		c, _ := json.Marshal([]map[string]string{{"type": "input_text", "text": s}})
		return []InputItem{{Type: "message", ID: NewID("msg_"), Role: "user", Status: "completed", Content: c}}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(in, &raws); err != nil {
		return nil, apierr.Invalid("input", "'input' must be a string or an array of input items")
	}
	if len(raws) == 0 {
		return nil, apierr.Invalid("input", "'input' must not be an empty array")
	}
	out := make([]InputItem, 0, len(raws))
	for i, raw := range raws {
		param := fmt.Sprintf("input[%d]", i)
		var it rawItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, apierr.Invalid(param, "an input item must be an object with a 'type' or a 'role'")
		}
		id := it.ID
		switch it.Type {
		case "message", "":
			if it.Role == "" {
				return nil, apierr.Invalid(param+".role", "a message needs a 'role' (user, assistant, system or developer)")
			}
			if !map[string]bool{"user": true, "assistant": true, "system": true, "developer": true}[it.Role] {
				return nil, apierr.Invalid(param+".role", fmt.Sprintf("invalid role %q: expected user, assistant, system or developer", it.Role))
			}
			content, err := itemContent(it.Content, it.Role, param+".content")
			if err != nil {
				return nil, err
			}
			if id == "" {
				id = NewID("msg_")
			}
			out = append(out, InputItem{Type: "message", ID: id, Role: it.Role, Status: "completed", Content: content})
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, apierr.Invalid(param, "a function_call item needs 'call_id' and 'name'")
			}
			args := ""
			if it.Arguments != nil {
				args = *it.Arguments
			}
			if args != "" && !json.Valid([]byte(args)) {
				return nil, apierr.Invalid(param+".arguments", "'arguments' must be JSON text")
			}
			if id == "" {
				id = NewID("fc_")
			}
			out = append(out, InputItem{Type: "function_call", ID: id, CallID: it.CallID, Name: it.Name, Arguments: &args, Status: "completed"})
		case "function_call_output":
			if it.CallID == "" {
				return nil, apierr.Invalid(param+".call_id", "a function_call_output item needs 'call_id', the id of the call it answers")
			}
			output, err := callOutput(it.Output)
			if err != nil {
				return nil, apierr.Invalid(param+".output", err.Error())
			}
			if id == "" {
				id = NewID("fco_")
			}
			out = append(out, InputItem{Type: "function_call_output", ID: id, CallID: it.CallID, Output: &output, Status: "completed"})
		default:
			return nil, apierr.Invalid(param+".type", fmt.Sprintf("input item type %q is not supported; use message, function_call or function_call_output", it.Type))
		}
	}
	return out, nil
}

// callOutput is a function call's output: a string, or text parts
// joined (other parts cannot reach a text model).
func callOutput(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("'output' must be a string or an array of input_text parts")
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type != "input_text" {
			return "", fmt.Errorf("function call output part type %q is not supported; send text", p.Type)
		}
		sb.WriteString(p.Text)
	}
	return sb.String(), nil
}

// itemContent normalises a message's content to an array of parts:
// input_text (output_text for the assistant), input_image, input_file.
func itemContent(raw json.RawMessage, role, param string) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	textType := "input_text"
	if role == "assistant" {
		textType = "output_text"
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, apierr.Invalid(param, "'content' is not a valid string")
		}
		part := map[string]any{"type": textType, "text": s}
		if role == "assistant" {
			part["annotations"] = []any{}
		}
		return json.Marshal([]any{part})
	}
	var parts []map[string]any
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, apierr.Invalid(param, "'content' must be a string or an array of content parts")
	}
	for k, p := range parts {
		switch p["type"] {
		case "input_text", "output_text", "refusal":
			if _, ok := p["text"].(string); !ok && p["type"] != "refusal" {
				return nil, apierr.Invalid(fmt.Sprintf("%s[%d].text", param, k), "a text part needs 'text', a string")
			}
		case "input_image", "input_file", "input_audio":
		default:
			return nil, apierr.Invalid(fmt.Sprintf("%s[%d].type", param, k), fmt.Sprintf("content part type %v is not supported; use input_text, input_image, input_file or input_audio", p["type"]))
		}
	}
	return raw, nil
}

// messages turns input items into chat messages: text parts join into the
// content, image and file parts become chat parts (for models that take
// them), consecutive function calls one assistant message with tool calls,
// and a function call output a tool message.
func messages(items []InputItem) []Message {
	var out []Message
	for _, it := range items {
		switch it.Type {
		case "message":
			var parts []map[string]any
			json.Unmarshal(it.Content, &parts)
			c := &Content{}
			var chatParts []map[string]any
			var sb strings.Builder
			for _, p := range parts {
				switch p["type"] {
				case "input_text", "output_text":
					s, _ := p["text"].(string)
					sb.WriteString(s)
					chatParts = append(chatParts, map[string]any{"type": "text", "text": s})
				case "input_image":
					c.Kinds = appendKind(c.Kinds, "image_url")
					chatParts = append(chatParts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": p["image_url"], "detail": p["detail"]}})
				case "input_file":
					c.Kinds = appendKind(c.Kinds, "file")
					chatParts = append(chatParts, map[string]any{"type": "file", "file": map[string]any{"file_data": p["file_data"], "file_id": p["file_id"], "filename": p["filename"]}})
				case "input_audio":
					c.Kinds = appendKind(c.Kinds, "input_audio")
					chatParts = append(chatParts, map[string]any{"type": "input_audio", "input_audio": p["input_audio"]})
				}
			}
			c.Text = sb.String()
			if len(c.Kinds) > 0 {
				c.Parts, _ = json.Marshal(chatParts)
			}
			out = append(out, Message{Role: it.Role, Content: c})
		case "function_call":
			call := ToolCallParam{ID: it.CallID, Type: "function"}
			call.Function.Name, call.Function.Arguments = it.Name, *it.Arguments
			if n := len(out); n > 0 && out[n-1].Role == "assistant" && (len(out[n-1].ToolCalls) > 0 || out[n-1].Content == nil || out[n-1].Content.Text == "") {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
				continue
			}
			out = append(out, Message{Role: "assistant", ToolCalls: []ToolCallParam{call}})
		case "function_call_output":
			out = append(out, Message{Role: "tool", ToolCallID: it.CallID, Content: &Content{Text: *it.Output}})
		}
	}
	return out
}

func appendKind(kinds []string, k string) []string {
	for _, x := range kinds {
		if x == k {
			return kinds
		}
	}
	return append(kinds, k)
}

// ChatRequest is the chat request r means, given the conversation so far
// (the items of the response it continues) and its own input items.
func (r *ResponsesRequest) ChatRequest(history, items []InputItem) (ChatRequest, error) {
	out := ChatRequest{Model: r.Model, ParallelToolCalls: r.ParallelToolCalls, TopLogprobs: r.TopLogprobs}
	out.Temperature, out.TopP, out.MaxTokens, out.Stream, out.User = r.Temperature, r.TopP, r.MaxOutputTokens, r.Stream, r.User
	if r.TopLogprobs != nil {
		out.Logprobs = true
	}
	if r.Instructions != nil && *r.Instructions != "" {
		out.Messages = append(out.Messages, Message{Role: "developer", Content: &Content{Text: *r.Instructions}})
	}
	out.Messages = append(out.Messages, messages(append(append([]InputItem(nil), history...), items...))...)
	for i, t := range r.Tools {
		if t.Type != "function" {
			return out, apierr.Invalid(fmt.Sprintf("tools[%d].type", i), fmt.Sprintf("tool type %q is not supported; only \"function\" is", t.Type))
		}
		tp := ToolParam{Type: "function"}
		tp.Function = &struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		}{t.Name, t.Description, t.Parameters, t.Strict}
		out.Tools = append(out.Tools, tp)
	}
	if choice := bytes.TrimSpace(r.ToolChoice); len(choice) > 0 && choice[0] == '{' {
		var named struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal(choice, &named); err != nil || named.Type != "function" {
			return out, apierr.Invalid("tool_choice", "'tool_choice' must be none, auto, required or {\"type\": \"function\", \"name\": …}")
		}
		out.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
	} else {
		out.ToolChoice = r.ToolChoice
	}
	if r.Text != nil && r.Text.Format != nil {
		f := r.Text.Format
		rf := &ResponseFormat{Type: f.Type}
		switch f.Type {
		case "text", "json_object":
		case "json_schema":
			if len(f.Schema) == 0 {
				return out, apierr.Invalid("text.format.schema", "a json_schema format needs 'schema'")
			}
			rf.JSONSchema = &struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
				Strict bool            `json:"strict"`
			}{Name: f.Name, Schema: f.Schema, Strict: f.Strict != nil && *f.Strict}
		default:
			return out, apierr.Invalid("text.format.type", fmt.Sprintf("text format %q is unknown: use text, json_object or json_schema", f.Type))
		}
		out.ResponseFormat = rf
	}
	return out, nil
}

// ResponseParam renames a chat validation error's param to the Responses
// field it came from (tools[0].function.name → tools[0].name,
// response_format → text.format, max_tokens → max_output_tokens).
func ResponseParam(err error) error {
	if err == nil {
		return nil
	}
	e := apierr.From(err)
	if e.Param == "" {
		return err
	}
	p := e.Param
	switch {
	case strings.HasPrefix(p, "tools[") && strings.Contains(p, ".function."):
		p = strings.Replace(p, ".function.", ".", 1)
	case strings.HasPrefix(p, "tool_choice.function."):
		p = strings.Replace(p, "tool_choice.function.", "tool_choice.", 1)
	case strings.HasPrefix(p, "response_format"):
		p = "text.format" + strings.TrimPrefix(strings.TrimPrefix(p, "response_format"), ".json_schema")
	case p == "max_tokens":
		p = "max_output_tokens"
	case strings.HasPrefix(p, "messages"):
		p = "input"
	}
	c := *e
	c.Param = p
	c.Message = strings.ReplaceAll(c.Message, "max_tokens", "max_output_tokens")
	return &c
}

// Native is the native request of r.
func (r *ResponsesRequest) Native(history, items []InputItem) (inference.CompletionRequest, error) {
	if r.Truncation != "" && r.Truncation != "disabled" {
		return inference.CompletionRequest{}, apierr.Invalid("truncation", "only \"disabled\" truncation is served: a conversation longer than the context is an error, not cut")
	}
	chat, err := r.ChatRequest(history, items)
	if err != nil {
		return inference.CompletionRequest{}, err
	}
	native, err := chat.Native()
	return native, ResponseParam(err)
}
