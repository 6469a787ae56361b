package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/openai"
)

// compareRequest is POST /v1/models/compare: a chat completion request
// with "models" (2 to 5) instead of "model".
type compareRequest struct {
	Models []string `json:"models"`
	openai.ChatRequest
}

// CompareResult is one model's part of a comparison.
type CompareResult struct {
	Model  string `json:"model"`
	Status string `json:"status"` // succeeded | failed
	Output *struct {
		Content      string `json:"content"`
		FinishReason string `json:"finish_reason"`
	} `json:"output,omitempty"`
	Usage           *openai.Usage    `json:"usage,omitempty"`
	LatencyMs       float64          `json:"latency_ms"`
	TTFTMs          *float64         `json:"ttft_ms"`
	TokensPerSecond *float64         `json:"tokens_per_second"`
	Error           *apierr.Envelope `json:"error,omitempty"`
}

const (
	minCompare = 2
	maxCompare = 5
)

// compareModels runs one chat request on several models at once and
// reports, per model, the output, usage, latency, time to first token and
// decode speed, or the error; one model failing does not fail the others.
func (s *Server) compareModels(w http.ResponseWriter, r *http.Request) error {
	var req compareRequest
	if err := openai.DecodeRequest(r.Body, &req); err != nil {
		return err
	}
	if len(req.Models) < minCompare || len(req.Models) > maxCompare {
		return apierr.Invalid("models", fmt.Sprintf("'models' must list %d to %d models", minCompare, maxCompare))
	}
	if req.Model != "" {
		return apierr.Invalid("model", "send 'models' (a list) to compare, not 'model'")
	}
	if req.Stream {
		return apierr.Invalid("stream", "a comparison is not streamed; it reports each model's time to first token instead")
	}
	if req.Choices() != 1 {
		return apierr.Invalid("n", "a comparison makes one completion per model")
	}
	req.Model = req.Models[0]
	native, err := req.Native()
	if err != nil {
		return err
	}
	if len(native.Tools) > 0 {
		// The comparison reports text answers; calls would be lost.
		return apierr.Invalid("tools", "a comparison compares text answers; send tools to /v1/chat/completions")
	}
	ctx, cancel := withTimeout(r)
	defer cancel()
	results := make([]CompareResult, len(req.Models))
	var wg sync.WaitGroup
	for i, name := range req.Models {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.compareOne(ctx, name, native)
		}()
	}
	wg.Wait()
	if err := r.Context().Err(); err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "model.comparison", "created": time.Now().Unix(), "results": results})
}

func (s *Server) compareOne(ctx context.Context, name string, native inference.CompletionRequest) CompareResult {
	res := CompareResult{Model: name, Status: "failed"}
	start := time.Now()
	fail := func(err error) CompareResult {
		res.LatencyMs = ms(time.Since(start))
		env := apierr.From(err).Envelope()
		res.Error = &env
		return res
	}
	m, err := s.Models.Resolve(ctx, name)
	if err != nil {
		return fail(err)
	}
	res.Model = m.ID
	if d := m.Deprecation; d != nil && d.Sunset != nil && !time.Now().Before(*d.Sunset) {
		return fail(apierr.New(apierr.ModelRetired, fmt.Sprintf("the model %q was retired on %s", m.ID, d.Sunset.UTC().Format(time.RFC3339))))
	}
	if !m.Has("chat") {
		return fail(apierr.Invalid("models", fmt.Sprintf("the model %q does not support chat", m.ID)))
	}
	if err := generate.Fit(m, &native); err != nil {
		return fail(err)
	}
	// Each model's run is a call of its own under the limits and the
	// output policies (a deny fails that model's result), its usage the
	// comparison's.
	call := info(ctx).Fork()
	defer info(ctx).Join(call)
	redact, _, err := s.Gen.Admit(ctx, call, m, generate.Gate{Text: generate.MessagesText(native.Messages), MaxTokens: native.MaxTokens, Output: true})
	if err != nil {
		return fail(err)
	}
	native.Messages = generate.RedactMessages(native.Messages, redact)
	native.Model, native.Stream = m.ID, true
	sts, err := s.Gen.Start(ctx, call, m, native, 1)
	if err != nil {
		return fail(err)
	}
	gen := s.Gen.Output(call, sts)
	defer gen.Close()
	st := gen.Streams[0]
	var text strings.Builder
	var first, last time.Time
	var usage *inference.Usage
	finish := ""
	for {
		ev, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(err)
		}
		if ev.Text != "" {
			if first.IsZero() {
				first = time.Now()
			}
			text.WriteString(ev.Text)
		}
		if ev.Done {
			last, usage, finish = time.Now(), ev.Usage, ev.FinishReason
			break
		}
	}
	if err := gen.End(); err != nil {
		return fail(err)
	}
	res.Status = "succeeded"
	res.LatencyMs = ms(time.Since(start))
	res.Output = &struct {
		Content      string `json:"content"`
		FinishReason string `json:"finish_reason"`
	}{text.String(), finish}
	res.Usage = openai.NewUsage(usage)
	if !first.IsZero() {
		t := ms(first.Sub(start))
		res.TTFTMs = &t
		if usage != nil && usage.CompletionTokens > 1 && last.After(first) {
			tps := math.Round(float64(usage.CompletionTokens-1)/last.Sub(first).Seconds()*10) / 10
			res.TokensPerSecond = &tps
		}
	}
	return res
}

func ms(d time.Duration) float64 { return math.Round(d.Seconds()*1e5) / 100 }
