package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/inference"
)

// FuzzStreamParser feeds arbitrary upstream stream bodies to the SSE
// parser: it must never panic, and must end with a final event or an
// error, never both, never neither.
func FuzzStreamParser(f *testing.F) {
	f.Add("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\n")
	f.Add("data: {\"error\":{\"message\":\"boom\"}}\n\n")
	f.Add("data: {not json\n\n")
	f.Add(": comment\nevent: x\ndata:{\"choices\":[{\"text\":\"t\",\"logprobs\":{\"tokens\":[\"t\"],\"token_logprobs\":[-1]}}]}\r\n\r\ndata:[DONE]")
	f.Add("")
	f.Fuzz(func(t *testing.T, body string) {
		b, err := New(Config{Model: "m", Replicas: []string{"http://127.0.0.1:1/v1"}, HealthInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		r := b.reps[0]
		r.inflight.Add(1)
		_, cancel := context.WithCancel(context.Background())
		c := &call{b: b, r: r, resp: &http.Response{Body: io.NopCloser(strings.NewReader(body))}, cancel: cancel}
		s := &stream{b: b, c: c, ctx: context.Background(), req: inference.CompletionRequest{Prompt: "p", Stream: true}, rd: bufio.NewReader(c.resp.Body)}
		done := false
		for i := 0; i < 100000; i++ {
			ev, err := s.Recv()
			if errors.Is(err, io.EOF) {
				if !done {
					t.Fatalf("EOF without a final event for %q", body)
				}
				return
			}
			if err != nil {
				if done {
					t.Fatalf("an error after the final event for %q", body)
				}
				return
			}
			if done {
				t.Fatalf("an event after the final one for %q", body)
			}
			if ev.Done {
				if ev.Usage == nil {
					t.Fatalf("final event without usage for %q", body)
				}
				done = true
			}
		}
		t.Fatalf("no end for %q", body)
	})
}
