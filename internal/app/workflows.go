package app

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/httpapi"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/outbound"
	"github.com/sovereign-ai/sovereign/internal/workflow"
)

// caller makes workflow steps' API calls in-process through the API
// (httpapi.Server.Invoke): limits, policies and the request log apply.
type caller struct{ api *httpapi.Server }

func (c caller) Call(ctx context.Context, keyID, method, path string, body any) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	v, err := c.api.Invoke(ctx, keyID, method, path, b)
	if err != nil {
		return 0, nil, err
	}
	return v.Status, v.Body, nil
}

// chatter runs workflow chat steps through the generation service as the
// run's key, with typed requests: governed and recorded like the same
// call over HTTP (route POST /v1/chat/completions), without encoding the
// request or decoding the answer.
type chatter struct{ gen *generate.Service }

func (c chatter) Chat(ctx context.Context, keyID, user, model string, req inference.CompletionRequest) (workflow.ChatAnswer, error) {
	call, err := c.gen.As(ctx, keyID, "POST /v1/chat/completions", auth.ScopeInference)
	var ans generate.Answer
	if err == nil {
		call.SetUser(user)
		ans, err = c.gen.Chat(ctx, call, model, req)
	}
	c.gen.Finish(ctx, call, err)
	if err != nil {
		return workflow.ChatAnswer{}, err
	}
	return workflow.ChatAnswer{Model: ans.Model, Text: ans.Text, FinishReason: ans.FinishReason,
		PromptTokens: ans.Usage.PromptTokens, CompletionTokens: ans.Usage.CompletionTokens}, nil
}

// fetcher makes http steps' outbound calls through internal/outbound:
// private, loopback and link-local targets are refused unless the
// operator allows them (outbound_allow, outbound_allow_private).
type fetcher struct{ c *outbound.Client }

func newFetcher(cfg config.Config) (fetcher, error) {
	c, err := outbound.New(outbound.Config{Allow: cfg.OutboundAllow, AllowPrivate: cfg.OutboundAllowPrivate})
	return fetcher{c}, err
}

func (f fetcher) Refused(ctx context.Context, url string) error {
	if err := f.c.ValidateURL(ctx, url); outbound.Refused(err) {
		return err
	}
	return nil
}

func (f fetcher) Fetch(ctx context.Context, method, url string, header map[string]string, body string) (int, map[string]string, []byte, error) {
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if rd != nil {
		req, err = http.NewRequestWithContext(ctx, method, url, rd)
	}
	if err != nil {
		return 0, nil, nil, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := f.c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	h := map[string]string{}
	for k := range resp.Header {
		h[strings.ToLower(k)] = resp.Header.Get(k)
	}
	return resp.StatusCode, h, resp.Body, nil
}
