package openai

import (
	"errors"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

func decodeChat(body string) (inference.CompletionRequest, error) {
	var req ChatRequest
	if err := Decode(strings.NewReader(body), &req); err != nil {
		return inference.CompletionRequest{}, err
	}
	return req.Native()
}

func TestChatRequestErrorsNameTheParam(t *testing.T) {
	cases := []struct {
		body  string
		code  apierr.Code
		param string
	}{
		{`{"model":"m","messages":[`, apierr.InvalidJSON, ""},
		{``, apierr.InvalidJSON, ""},
		{`[1,2]`, apierr.InvalidJSON, ""},
		{`{"model":5,"messages":[]}`, apierr.InvalidRequest, "model"},
		{`{"messages":[{"role":"user","content":"hi"}]}`, apierr.InvalidRequest, "model"},
		{`{"model":"m"}`, apierr.InvalidRequest, "messages"},
		{`{"model":"m","messages":[]}`, apierr.InvalidRequest, "messages"},
		{`{"model":"m","messages":[{"role":"wizard","content":"hi"}]}`, apierr.InvalidRequest, "messages[0].role"},
		{`{"model":"m","messages":[{"role":"user"}]}`, apierr.InvalidRequest, "messages[0].content"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":"hot"}`, apierr.InvalidRequest, "temperature"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":3}`, apierr.InvalidRequest, "temperature"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":0}`, apierr.InvalidRequest, "n"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":17}`, apierr.InvalidRequest, "n"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":0}`, apierr.InvalidRequest, "max_tokens"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["a","b","c","d","e"]}`, apierr.InvalidRequest, "stop"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"logit_bias":{"x":1}}`, apierr.InvalidRequest, "logit_bias"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"top_logprobs":3}`, apierr.InvalidRequest, "top_logprobs"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"xml"}}`, apierr.InvalidRequest, "response_format"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, apierr.InvalidRequest, "stream_options"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}]} {}`, apierr.InvalidJSON, ""},
	}
	for _, c := range cases {
		_, err := decodeChat(c.body)
		var e *apierr.Error
		if !errors.As(err, &e) {
			t.Errorf("%s: got %v, want an API error", c.body, err)
			continue
		}
		if e.Code != c.code || e.Param != c.param || e.Status() != 400 {
			t.Errorf("%s: got code %s param %q status %d, want %s %q 400", c.body, e.Code, e.Param, e.Status(), c.code, c.param)
		}
	}
}

func TestChatRequestTranslation(t *testing.T) {
	r, err := decodeChat(`{"model":"m","messages":[{"role":"developer","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi "},{"type":"text","text":"there"}]}],
		"max_completion_tokens":7,"max_tokens":3,"temperature":0,"seed":-1,"stop":"END","logit_bias":{"12":-100,"5":2},"logprobs":true,"top_logprobs":2,
		"response_format":{"type":"json_object"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if r.Messages[0].Role != "system" || r.Messages[1].Content != "hi there" {
		t.Fatalf("messages %+v", r.Messages)
	}
	if r.MaxTokens != 7 || r.Temperature != 0 || r.Seed == nil || len(r.Stop) != 1 || r.Stop[0] != "END" {
		t.Fatalf("request %+v", r)
	}
	if r.LogitBias[5] != 2 || r.LogitBias[12] != -100 || !r.Logprobs || r.TopLogprobs != 2 || r.Grammar == "" {
		t.Fatalf("request %+v", r)
	}
	d, _ := decodeChat(`{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	if d.Temperature != 1 {
		t.Fatalf("default temperature %v, want OpenAI's 1", d.Temperature)
	}
}

func TestCompletionPromptForms(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"m","prompt":"hello"}`:   "hello",
		`{"model":"m","prompt":["hello"]}`: "hello",
	} {
		var req CompletionRequest
		if err := Decode(strings.NewReader(body), &req); err != nil {
			t.Fatal(err)
		}
		n, err := req.Native()
		if err != nil || n.Prompt != want {
			t.Fatalf("%s: %+v %v", body, n, err)
		}
	}
	var req CompletionRequest
	Decode(strings.NewReader(`{"model":"m","prompt":[1,2,3]}`), &req)
	if n, err := req.Native(); err != nil || len(n.Tokens) != 3 {
		t.Fatalf("token prompt: %+v %v", n, err)
	}
	Decode(strings.NewReader(`{"model":"m","prompt":{"a":1}}`), &req)
	if _, err := req.Native(); err == nil {
		t.Fatal("object prompt accepted")
	}
}

func TestChatStreamChunks(t *testing.T) {
	cs := NewChatStream("m", true, false)
	if f := cs.First(1); f.Choices[0].Delta.Role != "assistant" || *f.Choices[0].Delta.Content != "" || f.Choices[0].Index != 1 {
		t.Fatalf("first chunk %+v", f)
	}
	chunks := cs.Chunks(inference.Event{Text: "hi"}, 1)
	if len(chunks) != 1 || *chunks[0].Choices[0].Delta.Content != "hi" || chunks[0].Choices[0].FinishReason != nil || chunks[0].Choices[0].Index != 1 {
		t.Fatalf("content chunk %+v", chunks)
	}
	chunks = cs.Chunks(inference.Event{Done: true, FinishReason: "length"}, 0)
	if len(chunks) != 1 || *chunks[0].Choices[0].FinishReason != "length" {
		t.Fatalf("final chunks %+v", chunks)
	}
	u := cs.UsageChunk(SumUsage([]*inference.Usage{{PromptTokens: 3, CompletionTokens: 2}, {PromptTokens: 3, CompletionTokens: 4}}))
	if len(u.Choices) != 0 || u.Usage.PromptTokens != 3 || u.Usage.CompletionTokens != 6 || u.Usage.TotalTokens != 9 {
		t.Fatalf("usage chunk %+v", u.Usage)
	}
}

func FuzzDecodeChatRequest(f *testing.F) {
	f.Add(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["a"],"logit_bias":{"1":2}}`)
	f.Add(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}}}`)
	f.Add(`{"model":1}`)
	f.Fuzz(func(t *testing.T, body string) {
		r, err := decodeChat(body)
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status() >= 500 {
				t.Fatalf("decoding %q gave a non-client error %v", body, err)
			}
			return
		}
		if r.Model == "" || len(r.Messages) == 0 {
			t.Fatalf("accepted %q without model or messages", body)
		}
	})
}
