package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// ToolParam is one entry of a chat request's tools.
type ToolParam struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

// ToolCallParam is a tool call of an assistant message, as sent back in
// the conversation, and as answered (ToolCall).
type ToolCallParam struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// toolName is what OpenAI accepts as a function name.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// tools validates the tool fields of a chat request into out.
func (r *ChatRequest) tools(out *inference.CompletionRequest) error {
	names := map[string]bool{}
	for i, t := range r.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return apierr.Invalid(param+".type", fmt.Sprintf("tool type %q is not supported; only \"function\" is", t.Type))
		}
		if t.Function == nil {
			return apierr.Invalid(param+".function", "a function tool needs 'function'")
		}
		f := t.Function
		if !toolName.MatchString(f.Name) {
			return apierr.Invalid(param+".function.name", "a function name is 1 to 64 letters, digits, underscores or dashes")
		}
		if names[f.Name] {
			return apierr.Invalid(param+".function.name", fmt.Sprintf("two tools are named %q", f.Name))
		}
		names[f.Name] = true
		params := bytes.TrimSpace(f.Parameters)
		if len(params) == 0 || bytes.Equal(params, []byte("null")) {
			params = []byte(`{"type":"object","properties":{}}`)
		} else if params[0] != '{' {
			return apierr.Invalid(param+".function.parameters", "'parameters' must be a JSON Schema object")
		}
		out.Tools = append(out.Tools, inference.Tool{Name: f.Name, Description: f.Description, Parameters: json.RawMessage(params)})
	}
	out.ParallelToolCalls = r.ParallelToolCalls == nil || *r.ParallelToolCalls
	choice := bytes.TrimSpace(r.ToolChoice)
	if len(choice) == 0 || bytes.Equal(choice, []byte("null")) {
		if len(out.Tools) > 0 {
			out.ToolChoice = inference.ToolChoiceAuto
		}
		return nil
	}
	if len(out.Tools) == 0 {
		return apierr.Invalid("tool_choice", "'tool_choice' is only allowed when 'tools' are given")
	}
	var s string
	if json.Unmarshal(choice, &s) == nil {
		switch s {
		case inference.ToolChoiceAuto, inference.ToolChoiceNone, inference.ToolChoiceRequired:
			out.ToolChoice = s
			return nil
		}
		return apierr.Invalid("tool_choice", fmt.Sprintf("invalid tool_choice %q: expected none, auto, required or {\"type\": \"function\", \"function\": {\"name\": …}}", s))
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(choice, &named); err != nil || named.Type != "function" {
		return apierr.Invalid("tool_choice", "'tool_choice' must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": …}}")
	}
	if !names[named.Function.Name] {
		return apierr.Invalid("tool_choice.function.name", fmt.Sprintf("no tool is named %q", named.Function.Name))
	}
	out.ToolChoice, out.ToolName = inference.ToolChoiceRequired, named.Function.Name
	return nil
}

// toolMessage validates the tool fields of message i.
func toolMessage(i int, m Message, out *inference.Message) error {
	if len(m.ToolCalls) > 0 && m.Role != "assistant" {
		return apierr.Invalid(fmt.Sprintf("messages[%d].tool_calls", i), "only assistant messages carry 'tool_calls'")
	}
	for k, c := range m.ToolCalls {
		param := fmt.Sprintf("messages[%d].tool_calls[%d]", i, k)
		if c.Type != "" && c.Type != "function" {
			return apierr.Invalid(param+".type", fmt.Sprintf("tool call type %q is not supported; only \"function\" is", c.Type))
		}
		if c.Function.Name == "" {
			return apierr.Invalid(param+".function.name", "a tool call needs the function's name")
		}
		if c.Function.Arguments != "" && !json.Valid([]byte(c.Function.Arguments)) {
			return apierr.Invalid(param+".function.arguments", "'arguments' must be JSON text")
		}
		out.ToolCalls = append(out.ToolCalls, inference.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	if m.Role == "tool" {
		if m.ToolCallID == "" {
			return apierr.Invalid(fmt.Sprintf("messages[%d].tool_call_id", i), "a tool message needs 'tool_call_id', the id of the call it answers")
		}
		out.ToolCallID = m.ToolCallID
	}
	out.Name = m.Name
	return nil
}
