package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// maxResponse bounds a non-streamed upstream response (embeddings of a
// large batch are the biggest).
const maxResponse = 256 << 20

func (b *Backend) authorize(req *http.Request) {
	if b.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+b.cfg.APIKey)
	}
}

// call is one request in flight on one replica.
type call struct {
	b      *Backend
	r      *replica
	resp   *http.Response
	cancel context.CancelFunc
	idle   *time.Timer
	mu     sync.Mutex
	stall  bool
	done   bool
}

// send posts body to path on a replica, moving to the next replica when
// the connection cannot be made or the replica answers 502 or 503 (both
// before the request could have been served). Non-2xx answers become
// errors. The returned call must be finished.
func (b *Backend) send(ctx context.Context, path string, body []byte) (*call, error) {
	tried := make([]bool, len(b.reps))
	var lastErr error
	for {
		r := b.pick(tried)
		if r == nil {
			return nil, b.unavailable(lastErr)
		}
		tried[b.index(r)] = true
		cctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
		req, err := http.NewRequestWithContext(cctx, http.MethodPost, r.base+path, bytes.NewReader(body))
		if err != nil {
			cancel()
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		b.authorize(req)
		r.inflight.Add(1)
		resp, err := b.client.Do(req)
		if err != nil {
			r.inflight.Add(-1)
			cancel()
			if ctx.Err() != nil {
				b.release(r)
				return nil, ctx.Err()
			}
			if isConnectError(err) {
				b.failed(r, err, true)
				lastErr = err
				continue
			}
			b.failed(r, err, false)
			if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
				return nil, &inference.UpstreamError{Model: b.cfg.Model, Kind: inference.UpstreamTimeout,
					Message: fmt.Sprintf("model %q: the upstream did not answer within %s", b.cfg.Model, b.cfg.FirstByteTimeout)}
			}
			return nil, &inference.UpstreamError{Model: b.cfg.Model, Kind: inference.UpstreamBadResponse,
				Message: fmt.Sprintf("model %q: the upstream request failed: %v", b.cfg.Model, err)}
		}
		if resp.StatusCode/100 == 2 {
			return &call{b: b, r: r, resp: resp, cancel: cancel}, nil
		}
		uerr := b.statusError(resp)
		resp.Body.Close()
		r.inflight.Add(-1)
		cancel()
		switch resp.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable:
			// The replica (or the proxy in front of it) did not take the
			// request: another replica may. A 504 is not retried: the
			// request may have been served.
			b.failed(r, uerr, false)
			lastErr = uerr
			continue
		}
		if resp.StatusCode >= 500 {
			b.failed(r, uerr, false)
		} else {
			b.succeeded(r) // it answered; the request was the problem
		}
		return nil, uerr
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// finish ends the call: ok says whether it completed properly.
func (c *call) finish(ok bool, err error) {
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return
	}
	c.done = true
	c.mu.Unlock()
	if c.idle != nil {
		c.idle.Stop()
	}
	c.resp.Body.Close()
	c.cancel()
	c.r.inflight.Add(-1)
	switch {
	case ok:
		c.b.succeeded(c.r)
	case err != nil:
		c.b.failed(c.r, err, false)
	default:
		c.b.release(c.r)
	}
}

// readAll reads a whole answer (bounded by maxResponse); on failure the
// call is finished.
func (c *call) readAll(ctx context.Context) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(c.resp.Body, maxResponse))
	if err == nil {
		return data, nil
	}
	if ctx.Err() != nil {
		c.finish(false, nil)
		return nil, ctx.Err()
	}
	e := c.b.badResponse("reading the answer: %v", err)
	c.finish(false, e)
	return nil, e
}

// checkPrompt refuses a prompt longer than max tokens (0: no limit).
// Without a tokenizer the upstream enforces its own context.
func (b *Backend) checkPrompt(ctx context.Context, prompt string, max int) error {
	if max <= 0 || b.cfg.Tokenizer == nil {
		return nil
	}
	if n := b.count(ctx, prompt); n > max {
		return apierr.Invalid("messages", fmt.Sprintf(
			"the prompt has %d tokens but this model accepts at most %d input tokens", n, max))
	}
	return nil
}

// streamed prepares a streamed answer for reading: buffered, and
// watched for stalls.
func (c *call) streamed() *bufio.Reader {
	c.watch()
	return bufio.NewReaderSize(c.resp.Body, 32<<10)
}

// watch arms the idle timer: a read that waits longer than IdleTimeout
// aborts the request as stalled.
func (c *call) watch() {
	c.idle = time.AfterFunc(c.b.cfg.IdleTimeout, func() {
		c.mu.Lock()
		c.stall = true
		c.mu.Unlock()
		c.cancel()
	})
}

func (c *call) stalled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stall
}

// statusError turns a non-2xx upstream answer into an error, keeping the
// upstream's message.
func (b *Backend) statusError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg, param := envelopeMessage(body)
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests:
		return &inference.UpstreamError{Model: b.cfg.Model, Kind: inference.UpstreamRateLimited, Status: code,
			Message: fmt.Sprintf("model %q: the upstream is rate limiting: %s", b.cfg.Model, msg), RetryAfter: retryAfter(resp.Header.Get("Retry-After"), b.cfg.Now())}
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return &inference.UpstreamError{Model: b.cfg.Model, Kind: inference.UpstreamBadResponse, Status: code,
			Message: fmt.Sprintf("model %q: the upstream refused Sovereign's credentials (HTTP %d); check the model's api_key", b.cfg.Model, code)}
	case code == http.StatusNotFound:
		return &inference.UpstreamError{Model: b.cfg.Model, Kind: inference.UpstreamBadResponse, Status: code,
			Message: fmt.Sprintf("model %q: the upstream answered 404 (does it serve model %q at this path?): %s", b.cfg.Model, b.cfg.UpstreamModel, msg)}
	case code == http.StatusGatewayTimeout:
		return &inference.UpstreamError{Model: b.cfg.Model, Kind: inference.UpstreamTimeout, Status: code,
			Message: fmt.Sprintf("model %q: the upstream timed out: %s", b.cfg.Model, msg)}
	case code >= 400 && code < 500:
		return apierr.Invalid(param, msg)
	}
	return &inference.UpstreamError{Model: b.cfg.Model, Kind: inference.UpstreamBadResponse, Status: resp.StatusCode,
		Message: fmt.Sprintf("model %q: the upstream failed (HTTP %d): %s", b.cfg.Model, resp.StatusCode, msg)}
}

// envelopeMessage extracts message and param from an OpenAI error body.
func envelopeMessage(body []byte) (msg, param string) {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || len(env.Error) == 0 {
		return "", ""
	}
	var e struct {
		Message string  `json:"message"`
		Param   *string `json:"param"`
	}
	if json.Unmarshal(env.Error, &e) == nil && e.Message != "" {
		if e.Param != nil {
			param = *e.Param
		}
		return e.Message, param
	}
	var s string
	if json.Unmarshal(env.Error, &s) == nil {
		return s, ""
	}
	return "", ""
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 && n < 1e6 {
		return time.Duration(math.Ceil(n)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

func drain(r io.Reader) { io.Copy(io.Discard, io.LimitReader(r, 1<<20)) }

// postJSON sends in and decodes the whole answer into out.
func (b *Backend) postJSON(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	c, err := b.send(ctx, path, body)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(c.resp.Body, maxResponse))
	if err != nil {
		c.finish(false, err)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return b.badResponse("reading the answer: %v", err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		e := b.badResponse("the answer is not the expected JSON: %v", err)
		c.finish(false, e)
		return e
	}
	c.finish(true, nil)
	return nil
}

func (b *Backend) badResponse(format string, args ...any) error {
	return &inference.UpstreamError{Model: b.cfg.Model, Kind: inference.UpstreamBadResponse,
		Message: fmt.Sprintf("model %q: the upstream's response is unusable: ", b.cfg.Model) + fmt.Sprintf(format, args...)}
}

// Embed asks the upstream for embeddings and L2-normalises them.
func (b *Backend) Embed(ctx context.Context, req inference.EmbeddingRequest) (inference.EmbeddingResponse, error) {
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	in := map[string]any{"model": b.cfg.UpstreamModel, "input": req.Input, "encoding_format": "float"}
	if err := b.postJSON(ctx, "/embeddings", in, &out); err != nil {
		return inference.EmbeddingResponse{}, err
	}
	if len(out.Data) != len(req.Input) {
		return inference.EmbeddingResponse{}, b.badResponse("%d embeddings for %d inputs", len(out.Data), len(req.Input))
	}
	res := inference.EmbeddingResponse{Embeddings: make([][]float32, len(req.Input)), PromptTokens: out.Usage.PromptTokens}
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(req.Input) || res.Embeddings[d.Index] != nil {
			return inference.EmbeddingResponse{}, b.badResponse("embedding index %d is out of place", d.Index)
		}
		res.Embeddings[d.Index] = normalize(d.Embedding)
	}
	if res.PromptTokens == 0 {
		res.PromptTokens = b.count(ctx, strings.Join(req.Input, "\n"))
	}
	return res, nil
}

func normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// Rerank asks the upstream's /rerank (Cohere/Jina shape, as vLLM,
// llama-server and Sovereign serve it).
func (b *Backend) Rerank(ctx context.Context, req inference.RerankRequest) (inference.RerankResponse, error) {
	var out struct {
		Results []inference.RerankResult `json:"results"`
		Usage   struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	in := map[string]any{"model": b.cfg.UpstreamModel, "query": req.Query, "documents": req.Documents, "return_documents": false}
	if req.TopN > 0 {
		in["top_n"] = req.TopN
	}
	if err := b.postJSON(ctx, "/rerank", in, &out); err != nil {
		return inference.RerankResponse{}, err
	}
	for _, r := range out.Results {
		if r.Index < 0 || r.Index >= len(req.Documents) {
			return inference.RerankResponse{}, b.badResponse("rerank index %d is out of range", r.Index)
		}
	}
	res := inference.RerankResponse{Results: out.Results, PromptTokens: out.Usage.PromptTokens}
	if res.PromptTokens == 0 {
		res.PromptTokens = out.Usage.TotalTokens
	}
	return res, nil
}

// Tokenize uses the model's configured tokenizer.
func (b *Backend) Tokenize(ctx context.Context, req inference.TokenizeRequest) (inference.TokenizeResponse, error) {
	if b.cfg.Tokenizer == nil {
		return inference.TokenizeResponse{}, b.noTokenizer()
	}
	req.Model = b.cfg.TokenizerModel
	return b.cfg.Tokenizer.Tokenize(ctx, req)
}

// Detokenize uses the model's configured tokenizer.
func (b *Backend) Detokenize(ctx context.Context, req inference.DetokenizeRequest) (inference.DetokenizeResponse, error) {
	if b.cfg.Tokenizer == nil {
		return inference.DetokenizeResponse{}, b.noTokenizer()
	}
	req.Model = b.cfg.TokenizerModel
	return b.cfg.Tokenizer.Detokenize(ctx, req)
}

func (b *Backend) noTokenizer() error {
	return fmt.Errorf("%w: model %q is served by an upstream and has no tokenizer configured (set its 'tokenizer' to a local model with the same vocabulary)", inference.ErrUnsupported, b.cfg.Model)
}

// count is the number of tokens of text by the configured tokenizer, or
// an estimate of one token per four bytes without one.
func (b *Backend) count(ctx context.Context, text string) int {
	if text == "" {
		return 0
	}
	if b.cfg.Tokenizer != nil {
		res, err := b.cfg.Tokenizer.Tokenize(context.WithoutCancel(ctx), inference.TokenizeRequest{Model: b.cfg.TokenizerModel, Content: text})
		if err == nil {
			return len(res.Tokens)
		}
		b.cfg.Log.Warn("counting upstream usage with the tokenizer failed; estimating", "model", b.cfg.Model, "err", err)
	}
	return (len(text) + 3) / 4
}

// readLine reads one line of an SSE stream, without its line ending.
func readLine(rd *bufio.Reader) ([]byte, error) {
	line, err := rd.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A long line: collect it whole.
		buf := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = rd.ReadSlice('\n')
			buf = append(buf, line...)
			if len(buf) > 16<<20 {
				return nil, errors.New("an SSE line is longer than 16 MiB")
			}
		}
		line = buf
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}
