package openai

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

const legacyFunction = `{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}`

// TestLegacyFunctionsAreTools: functions and function_call translate into
// tools and tool_choice (one call), and a legacy conversation (an
// assistant's function_call, a "function" message) into tool turns.
func TestLegacyFunctionsAreTools(t *testing.T) {
	for _, c := range []struct {
		call     string
		choice   string
		toolName string
	}{
		{``, inference.ToolChoiceAuto, ""},
		{`,"function_call":"auto"`, inference.ToolChoiceAuto, ""},
		{`,"function_call":"none"`, inference.ToolChoiceNone, ""},
		{`,"function_call":{"name":"get_weather"}`, inference.ToolChoiceRequired, "get_weather"},
	} {
		body := `{"model":"m","messages":[{"role":"user","content":"Weather?"},` +
			`{"role":"assistant","content":null,"function_call":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}},` +
			`{"role":"function","name":"get_weather","content":"{\"temp\":20}"}],"functions":[` + legacyFunction + `]` + c.call + `}`
		var req ChatRequest
		if err := DecodeRequest(strings.NewReader(body), &req); err != nil {
			t.Fatal(err)
		}
		n, err := req.Native()
		if err != nil {
			t.Fatalf("%s: %v", c.call, err)
		}
		if !req.Legacy() || len(n.Tools) != 1 || n.Tools[0].Name != "get_weather" || n.ToolChoice != c.choice || n.ToolName != c.toolName || n.ParallelToolCalls {
			t.Fatalf("%s: %+v", c.call, n)
		}
		a, f := n.Messages[1], n.Messages[2]
		if len(a.ToolCalls) != 1 || a.ToolCalls[0].Name != "get_weather" || a.ToolCalls[0].Arguments != `{"city":"Rome"}` ||
			f.Role != "tool" || f.ToolCallID != a.ToolCalls[0].ID || a.ToolCalls[0].ID == "" {
			t.Fatalf("%s: history %+v", c.call, n.Messages)
		}
		// The request itself is left as sent (Native may run again).
		if len(req.Tools) != 0 || len(req.Messages[1].ToolCalls) != 0 {
			t.Fatalf("%s: the request was changed: %+v", c.call, req)
		}
	}
	for _, c := range []struct {
		body, param string
	}{
		{`"messages":[{"role":"user","content":"x"}],"function_call":"auto"`, "function_call"},
		{`"messages":[{"role":"user","content":"x"}],"functions":[` + legacyFunction + `],"function_call":"required"`, "function_call"},
		{`"messages":[{"role":"user","content":"x"}],"functions":[` + legacyFunction + `],"function_call":{"name":"nope"}`, "tool_choice.function.name"},
		{`"messages":[{"role":"user","content":"x"}],"functions":[` + legacyFunction + `],"tool_choice":"auto"`, "functions"},
		{`"messages":[{"role":"user","content":"x"}],"functions":[` + legacyFunction + `],"parallel_tool_calls":true`, "parallel_tool_calls"},
		{`"messages":[{"role":"function","name":"get_weather","content":"x"}]`, "messages[0].name"},
		{`"messages":[{"role":"function","content":"x"}]`, "messages[0].name"},
		{`"messages":[{"role":"user","content":"x","function_call":{"name":"f","arguments":"{}"}}]`, "messages[0].function_call"},
	} {
		var req ChatRequest
		err := DecodeRequest(strings.NewReader(`{"model":"m",`+c.body+`}`), &req)
		if err == nil {
			_, err = req.Native()
		}
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Param != c.param {
			t.Errorf("%s: %v, want a 400 on %s", c.body, err, c.param)
		}
	}
}

// TestLegacyAnswerShape: an answer to a legacy request carries
// function_call (content null) and finish_reason "function_call", whole
// and streamed; one cut short keeps "length".
func TestLegacyAnswerShape(t *testing.T) {
	out := ChatCompletion{Choices: []ChatChoice{
		{Message: AssistantMessage{Role: "assistant", ToolCalls: addToolCalls(nil, []inference.ToolCallDelta{{Index: 0, ID: "call_1", Name: "f", Arguments: `{"a":1}`}})}, FinishReason: "tool_calls"},
		{Message: AssistantMessage{Role: "assistant", ToolCalls: addToolCalls(nil, []inference.ToolCallDelta{{Index: 0, ID: "call_2", Name: "f", Arguments: `{"a`}})}, FinishReason: "length"},
	}}
	out.UseFunctionCall()
	b, _ := json.Marshal(out)
	var got struct {
		Choices []struct {
			Message      map[string]any `json:"message"`
			FinishReason string         `json:"finish_reason"`
		} `json:"choices"`
	}
	json.Unmarshal(b, &got)
	for i, want := range []struct{ args, finish string }{{`{"a":1}`, "function_call"}, {`{"a`, "length"}} {
		m := got.Choices[i].Message
		fc, _ := m["function_call"].(map[string]any)
		content, hasContent := m["content"]
		if _, has := m["tool_calls"]; has || fc["name"] != "f" || fc["arguments"] != want.args || !hasContent || content != nil || got.Choices[i].FinishReason != want.finish {
			t.Errorf("choice %d: %s", i, b)
		}
	}
	cs := &ChatStream{Legacy: true}
	var deltas []string
	for _, ev := range []inference.Event{
		{ToolCalls: []inference.ToolCallDelta{{Index: 0, ID: "call_1", Name: "f", Arguments: `{"a"`}}},
		{ToolCalls: []inference.ToolCallDelta{{Index: 0, Arguments: `:1}`}}},
		{Done: true, FinishReason: "tool_calls"},
	} {
		for _, ch := range cs.Chunks(ev, 0) {
			b, _ := json.Marshal(ch.Choices[0])
			deltas = append(deltas, string(b))
		}
	}
	want := []string{
		`{"index":0,"delta":{"function_call":{"name":"f","arguments":"{\"a\""}},"logprobs":null,"finish_reason":null}`,
		`{"index":0,"delta":{"function_call":{"arguments":":1}"}},"logprobs":null,"finish_reason":null}`,
		`{"index":0,"delta":{},"logprobs":null,"finish_reason":"function_call"}`,
	}
	if strings.Join(deltas, "\n") != strings.Join(want, "\n") {
		t.Fatalf("legacy stream:\n%s", strings.Join(deltas, "\n"))
	}
}

// TestCompletionSuffixAndEcho: suffix, echo and max_tokens 0 with echo
// reach the native request; combinations that cannot be answered
// exactly are 400s naming the field.
func TestCompletionSuffixAndEcho(t *testing.T) {
	zero, one := 0, 1
	r := CompletionRequest{Model: "m", Prompt: []byte(`"def f():"`), Suffix: new(string), Echo: true, Logprobs: &one}
	*r.Suffix = "\n"
	if _, err := r.Native(); err == nil {
		t.Fatal("echo with logprobs and a suffix accepted")
	}
	r.Logprobs = nil
	n, err := r.Native()
	if err != nil || n.Suffix != "\n" || !n.Echo || n.PromptOnly {
		t.Fatalf("%+v %v", n, err)
	}
	*r.Suffix = ""
	r.MaxTokens, r.Logprobs = &zero, &one
	if n, err = r.Native(); err != nil || n.Suffix != "" || !n.PromptOnly || n.MaxTokens != 0 || !n.Logprobs {
		t.Fatalf("echo, max_tokens 0: %+v %v", n, err)
	}
	r.Echo = false
	var ae *apierr.Error
	if _, err = r.Native(); !errors.As(err, &ae) || ae.Param != "max_tokens" {
		t.Fatalf("max_tokens 0 without echo: %v", err)
	}
	// An echoed prompt's first token has no logprob: null, as OpenAI
	// writes it.
	b, _ := json.Marshal(textLogprobs([]inference.TokenLogprob{{Token: "The", NoLogprob: true}, {Token: " sky", Logprob: -1, Top: []inference.TokenLogprob{{Token: " sky", Logprob: -1}}}}, new(int)))
	if string(b) != `{"tokens":["The"," sky"],"token_logprobs":[null,-1],"top_logprobs":[null,{" sky":-1}],"text_offset":[0,3]}` {
		t.Fatalf("echo logprobs: %s", b)
	}
}
