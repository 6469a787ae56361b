package engine

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/inference"
)

// TestRunnerErrorEventIsAGenerationError: an error the runner reports in
// the middle of a generation is an *inference.GenerationError with its
// message (the API shows it as a 502, or as the stream's error event),
// not an untyped error that becomes a hidden 500; while the caller's own
// context is cancelled it is the context's error.
func TestRunnerErrorEventIsAGenerationError(t *testing.T) {
	body := `{"text":"Once"}` + "\n" + `{"error":"decode failed: no KV slot"}` + "\n"
	s := &stream{p: &proc{id: "tiny"}, ctx: context.Background(), body: io.NopCloser(strings.NewReader(body)), rd: bufio.NewReader(strings.NewReader(body))}
	if ev, err := s.Recv(); err != nil || ev.Text != "Once" {
		t.Fatalf("first event: %+v, %v", ev, err)
	}
	_, err := s.Recv()
	var ge *inference.GenerationError
	if !errors.As(err, &ge) || ge.Model != "tiny" || ge.Message != "decode failed: no KV slot" {
		t.Fatalf("runner error: %#v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s = &stream{p: &proc{id: "tiny"}, ctx: ctx, rd: bufio.NewReader(strings.NewReader(`{"error":"request cancelled"}` + "\n"))}
	if _, err := s.Recv(); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
