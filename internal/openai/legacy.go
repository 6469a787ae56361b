package openai

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// OpenAI's legacy function calling (before tools): a request's functions
// and function_call, an assistant message's function_call and the
// "function" role. Each translates exactly into tools: a function is a
// function tool, function_call "none", "auto" or {"name": …} is that
// tool_choice, and a legacy answer is one call (parallel_tool_calls
// false). A request that uses functions gets its answer in the legacy
// shape, as OpenAI gave it: message.function_call instead of tool_calls,
// finish_reason "function_call" instead of "tool_calls", and
// delta.function_call in a stream.

// FunctionParam is one entry of a request's legacy functions.
type FunctionParam struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// FunctionCall is a legacy call: an assistant message's function_call, in
// a request or in an answer.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// FinishFunctionCall is the legacy finish reason of an answer that calls
// a function.
const FinishFunctionCall = "function_call"

// Legacy reports whether r uses the legacy functions, so that its answer
// takes the legacy shape.
func (r *ChatRequest) Legacy() bool {
	return len(r.Functions) > 0 || present(r.FunctionCall)
}

func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// legacyFunctions turns functions and function_call into tools and
// tool_choice.
func (r *ChatRequest) legacyFunctions() error {
	if !r.Legacy() {
		return nil
	}
	if len(r.Tools) > 0 || present(r.ToolChoice) {
		param := "functions"
		if len(r.Functions) == 0 {
			param = "function_call"
		}
		return apierr.Invalid(param, "send either the legacy 'functions' and 'function_call' or 'tools' and 'tool_choice', not both")
	}
	if r.ParallelToolCalls != nil && *r.ParallelToolCalls {
		return apierr.Invalid("parallel_tool_calls", "legacy 'functions' make one call; send 'tools' for parallel calls")
	}
	for _, f := range r.Functions {
		t := ToolParam{Type: "function"}
		t.Function = &struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		}{Name: f.Name, Description: f.Description, Parameters: f.Parameters}
		r.Tools = append(r.Tools, t)
	}
	if present(r.FunctionCall) {
		var s string
		if json.Unmarshal(r.FunctionCall, &s) == nil {
			if s != inference.ToolChoiceNone && s != inference.ToolChoiceAuto {
				return apierr.Invalid("function_call", fmt.Sprintf("invalid function_call %q: expected none, auto or {\"name\": …}", s))
			}
			r.ToolChoice, _ = json.Marshal(s)
		} else {
			var named struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(r.FunctionCall, &named) != nil || named.Name == "" {
				return apierr.Invalid("function_call", "'function_call' must be none, auto or {\"name\": …}")
			}
			r.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
		}
	}
	if len(r.Functions) == 0 {
		return apierr.Invalid("function_call", "'function_call' is only allowed when 'functions' are given")
	}
	no := false
	r.ParallelToolCalls = &no
	return nil
}

// legacyMessage rewrites message i in place from its legacy form: an
// assistant's function_call becomes a tool call with an id of its own, and
// a "function" message the "tool" message answering the last call of
// that function (calls maps function names to those ids).
func legacyMessage(i int, m *Message, calls map[string]string) error {
	switch {
	case m.FunctionCall != nil:
		if m.Role != "assistant" {
			return apierr.Invalid(fmt.Sprintf("messages[%d].function_call", i), "only assistant messages carry 'function_call'")
		}
		if len(m.ToolCalls) > 0 {
			return apierr.Invalid(fmt.Sprintf("messages[%d].function_call", i), "send either 'function_call' or 'tool_calls', not both")
		}
		id := fmt.Sprintf("call_fn%d", i)
		c := ToolCallParam{ID: id, Type: "function"}
		c.Function.Name, c.Function.Arguments = m.FunctionCall.Name, m.FunctionCall.Arguments
		m.ToolCalls, m.FunctionCall = []ToolCallParam{c}, nil
		calls[c.Function.Name] = id
	case m.Role == "function":
		if m.Name == "" {
			return apierr.Invalid(fmt.Sprintf("messages[%d].name", i), "a function message needs 'name', the function whose result it is")
		}
		id, ok := calls[m.Name]
		if !ok {
			return apierr.Invalid(fmt.Sprintf("messages[%d].name", i), fmt.Sprintf("no earlier assistant message calls the function %q", m.Name))
		}
		m.Role, m.ToolCallID = "tool", id
	}
	return nil
}

// UseFunctionCall puts the answer in the legacy shape: each choice's
// first tool call as its function_call (a legacy request asks for one),
// and finish_reason "function_call" for "tool_calls".
func (c *ChatCompletion) UseFunctionCall() {
	for i := range c.Choices {
		ch := &c.Choices[i]
		if len(ch.Message.ToolCalls) > 0 {
			tc := ch.Message.ToolCalls[0]
			ch.Message.FunctionCall = &FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}
			ch.Message.ToolCalls = nil
		}
		if ch.FinishReason == inference.FinishToolCalls {
			ch.FinishReason = FinishFunctionCall
		}
	}
}
