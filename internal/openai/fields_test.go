package openai

import (
	"errors"
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
		{`,"temperature":0.5,"top_k":4,"tools":[],"user":"u","stream_options":{"include_usage":true}`, ""},
		{`,"metadata":{"a":"b"},"service_tier":"auto","safety_identifier":"x","prompt_cache_key":"k"`, ""},
		{`,"store":false`, ""},
		{`,"modalities":["text"]`, ""},
		{`,"store":true`, "store"},
		{`,"modalities":["text","audio"]`, "modalities"},
		{`,"audio":{"voice":"alloy","format":"wav"}`, "audio"},
		{`,"prediction":{"type":"content","content":"x"}`, "prediction"},
		{`,"web_search_options":{}`, "web_search_options"},
		{`,"functions":[]`, "functions"},
		{`,"reasoning_effort":"low"`, "reasoning_effort"},
		{`,"frobnicate":1`, "frobnicate"},
	} {
		var req ChatRequest
		err := DecodeRequest(strings.NewReader("{"+base+c.extra+"}"), &req)
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
	if err := DecodeRequest(strings.NewReader(`{"model":"m","prompt":"x","suffix":"y"}`), &comp); err == nil {
		t.Fatal("suffix accepted")
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
