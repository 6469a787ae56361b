package openai

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

func TestDecodeRequestFields(t *testing.T) {
	base := `"model":"m","messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct {
		extra string
		param string // "" when accepted
	}{
		{``, ""},
		{`,"temperature":0.5,"top_k":4,"tools":[],"user":"u","stream":true,"stream_options":{"include_usage":true}`, ""},
		{`,"metadata":{"a":"b"},"service_tier":"auto","safety_identifier":"x","prompt_cache_key":"k"`, ""},
		{`,"store":false`, ""},
		{`,"modalities":["text"]`, ""},
		{`,"store":true`, "store"},
		{`,"modalities":["text","audio"]`, "modalities"},
		{`,"audio":{"voice":"alloy","format":"wav"}`, "audio"},
		{`,"prediction":{"type":"content","content":"x"}`, "prediction"},
		{`,"web_search_options":{}`, "web_search_options"},
		{`,"functions":[]`, ""},
		{`,"function_call":"auto"`, "function_call"},
		{`,"functions":[{"name":"f"}],"tools":[{"type":"function","function":{"name":"g"}}]`, "functions"},
		{`,"reasoning_effort":"low"`, "reasoning_effort"},
		{`,"frobnicate":1`, "frobnicate"},
	} {
		var req ChatRequest
		err := DecodeRequest(strings.NewReader("{"+base+c.extra+"}"), &req)
		if err == nil {
			_, err = req.Native() // the legacy fields are checked there
		}
		var ae *apierr.Error
		switch {
		case c.param == "" && err != nil:
			t.Errorf("%s: %v", c.extra, err)
		case c.param != "" && (!errors.As(err, &ae) || ae.Param != c.param):
			t.Errorf("%s: %v, want a 400 on %s", c.extra, err, c.param)
		}
	}
	var emb EmbeddingRequest
	if err := DecodeRequest(strings.NewReader(`{"model":"e","input":"x","encoding_format":"float","dimensions":8,"user":"u"}`), &emb); err != nil {
		t.Fatal(err)
	}
	var comp CompletionRequest
	if err := DecodeRequest(strings.NewReader(`{"model":"m","prompt":"x","suffix":"y","echo":true}`), &comp); err != nil {
		t.Fatal(err)
	}
	if err := DecodeRequest(strings.NewReader(`{"model":"m","prompt":"x","best_of":2}`), &comp); err == nil {
		t.Fatal("best_of accepted")
	}
}

func TestEmbeddingTokenIDsSayWhy(t *testing.T) {
	for _, input := range []string{`[1, 2, 3]`, `[[1, 2], [3]]`} {
		r := EmbeddingRequest{Model: "e", Input: []byte(input)}
		_, err := r.Native()
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Param != "input" || !strings.Contains(ae.Message, "check_embedding_ctx_length=False") {
			t.Errorf("%s: %v", input, err)
		}
	}
	r := EmbeddingRequest{Model: "e", Input: []byte(`{"a":1}`)}
	if _, err := r.Native(); err == nil || strings.Contains(err.Error(), "token ids") {
		t.Errorf("an object: %v", err)
	}
}

func TestCompletionSeveralPrompts(t *testing.T) {
	for _, c := range []struct {
		prompt string
		n      int
		want   []string // prompt text, or "#k" for k token ids
		param  string
	}{
		{`"hi"`, 1, []string{"hi"}, ""},
		{`["hi"]`, 1, []string{"hi"}, ""},
		{`["a", "b"]`, 1, []string{"a", "b"}, ""},
		{`[1, 2, 3]`, 1, []string{"#3"}, ""},
		{`[[1, 2, 3], [4]]`, 1, []string{"#3", "#1"}, ""},
		{`[["x"], [4]]`, 1, nil, "prompt"},
		{`["a", ""]`, 1, nil, ""},
		{`[]`, 1, nil, "prompt"},
	} {
		r := CompletionRequest{Model: "m", Prompt: []byte(c.prompt)}
		got, err := r.NativeAll()
		if c.param != "" {
			var ae *apierr.Error
			if !errors.As(err, &ae) || !strings.HasPrefix(ae.Param, c.param) {
				t.Errorf("%s: %v, want a 400 on %s", c.prompt, err, c.param)
			}
			continue
		}
		if c.want == nil {
			continue
		}
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%s: %d requests, %v", c.prompt, len(got), err)
			continue
		}
		for i, w := range c.want {
			if w[0] == '#' {
				if strings.TrimPrefix(w, "#") != strconv.Itoa(len(got[i].Tokens)) {
					t.Errorf("%s[%d]: %d tokens, want %s", c.prompt, i, len(got[i].Tokens), w)
				}
			} else if got[i].Prompt != w {
				t.Errorf("%s[%d]: %q", c.prompt, i, got[i].Prompt)
			}
		}
	}
	n := 40
	r := CompletionRequest{Model: "m", Prompt: []byte(`["a", "b"]`), Sampling: Sampling{N: &n}}
	if _, err := r.NativeAll(); err == nil {
		t.Error("2 prompts x n=40 accepted")
	}
}
