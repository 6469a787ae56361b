package app

import (
	"context"
	"net/http"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/answers"
	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/generate"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/openai"
	"github.com/sovereign-ai/sovereign/internal/outbound"
	"github.com/sovereign-ai/sovereign/internal/sources"
	"github.com/sovereign-ai/sovereign/internal/workflow"
)

// stepCalls runs workflow steps' model and search calls through the
// generation and sources services as the run's key, with typed requests:
// governed and recorded like the same call over HTTP (its route, the
// run's key, the run as the end user), without encoding a request or
// decoding an answer.
type stepCalls struct {
	gen     *generate.Service
	sources *sources.Service
	answers *answers.Service
}

// Search runs a retrieve step's search of one collection, recorded as
// POST /v1/collections/{id}/search.
func (c stepCalls) Search(ctx context.Context, keyID, user, collectionID, query string, topK int, mode string) ([]sources.Result, error) {
	return runAs(ctx, c.gen, keyID, user, "POST /v1/collections/{id}/search", func(call *generate.Call) ([]sources.Result, error) {
		return c.search(ctx, call, collectionID, query, topK, mode)
	})
}

// runAs runs do as the run's key (keyID) and end user on route: the key
// must still be active and hold inference (generate.Service.As), and the
// call is settled and recorded whatever do returns.
func runAs[T any](ctx context.Context, gen *generate.Service, keyID, user, route string, do func(*generate.Call) (T, error)) (T, error) {
	call, err := gen.As(ctx, keyID, route, auth.ScopeInference)
	var out T
	if err == nil {
		call.SetUser(user)
		out, err = do(call)
	}
	gen.Finish(ctx, call, err)
	return out, err
}

func (c stepCalls) search(ctx context.Context, call *generate.Call, collectionID, query string, topK int, mode string) ([]sources.Result, error) {
	key, _ := call.Key()
	col, err := c.sources.Collection(ctx, key.TeamID, collectionID)
	if err != nil {
		return nil, err
	}
	hits, err := c.sources.Search(ctx, []sources.Collection{col}, query, sources.SearchOptions{TopK: topK, Mode: mode})
	if err != nil {
		return nil, err
	}
	out := make([]sources.Result, len(hits))
	for i, h := range hits {
		out[i] = h.Result()
	}
	return out, nil
}

// Chat runs a chat step, recorded as POST /v1/chat/completions.
func (c stepCalls) Chat(ctx context.Context, keyID, user, model string, req inference.CompletionRequest) (workflow.ChatAnswer, error) {
	ans, err := runAs(ctx, c.gen, keyID, user, "POST /v1/chat/completions", func(call *generate.Call) (generate.Answer, error) {
		return c.gen.Chat(ctx, call, model, req)
	})
	if err != nil {
		return workflow.ChatAnswer{}, err
	}
	return workflow.ChatAnswer{Model: ans.Model, Text: ans.Text, FinishReason: ans.FinishReason,
		PromptTokens: ans.Usage.PromptTokens, CompletionTokens: ans.Usage.CompletionTokens}, nil
}

// Rerank runs a workflow rerank step through the generation service as
// the run's key, recorded as POST /v1/rerank.
func (c stepCalls) Rerank(ctx context.Context, keyID, user, model, query string, docs []string, topN int) ([]workflow.Ranked, error) {
	return runAs(ctx, c.gen, keyID, user, "POST /v1/rerank", func(call *generate.Call) ([]workflow.Ranked, error) {
		return c.rerank(ctx, call, model, query, docs, topN)
	})
}

func (c stepCalls) rerank(ctx context.Context, call *generate.Call, model, query string, docs []string, topN int) ([]workflow.Ranked, error) {
	if model == "" {
		return nil, apierr.Invalid("model", "'model' is required")
	}
	m, err := c.gen.Resolve(ctx, call, model, "rerank")
	if err != nil {
		return nil, err
	}
	ranked, _, err := c.gen.Rerank(ctx, call, m, query, docs, topN)
	if err != nil {
		return nil, err
	}
	out := make([]workflow.Ranked, len(ranked.Results))
	for i, x := range ranked.Results {
		out[i] = workflow.Ranked{Index: x.Index, RelevanceScore: x.RelevanceScore, Document: workflow.RankedText{Text: ranked.Documents[x.Index]}}
	}
	return out, nil
}

// AnswerWithSources runs a workflow answer_with_sources step through the
// generation service as the run's key, recorded as POST /v1/completions:
// the question is admitted (input policies, limits), answered from the
// team's collections with citations (the answers service), governed by
// the output policies, and its citations are stored as source links.
func (c stepCalls) AnswerWithSources(ctx context.Context, keyID, user string, q workflow.Question) (workflow.Cited, error) {
	return runAs(ctx, c.gen, keyID, user, "POST /v1/completions", func(call *generate.Call) (workflow.Cited, error) {
		return c.answer(ctx, call, q)
	})
}

func (c stepCalls) answer(ctx context.Context, call *generate.Call, q workflow.Question) (workflow.Cited, error) {
	// As POST /v1/completions reads the same request: OpenAI's default
	// temperature, the model's output limit unless the step sets them.
	req := inference.CompletionRequest{Messages: []inference.Message{{Role: "user", Content: q.Text}}, MaxTokens: q.MaxTokens}
	req.Temperature = 1
	if q.Temperature != nil {
		req.Temperature = float32(*q.Temperature)
	}
	m, req, err := c.gen.AdmitChat(ctx, call, q.Model, req)
	if err != nil {
		return workflow.Cited{}, err
	}
	key, _ := call.Key()
	ans, err := c.answers.Prepare(ctx, answers.Request{TeamID: key.TeamID, KeyID: key.ID, Chat: req, Cite: true, Family: m.Family,
		Grounded: true, Param: "sources", Collections: q.Collections, Search: sources.SearchOptions{TopK: answers.DefaultTopK}})
	if err != nil {
		return workflow.Cited{}, err
	}
	req = ans.Chat
	req.Model, req.Stream = m.ID, false
	g, err := c.gen.Answer(ctx, call, m, ans, req)
	if err != nil {
		return workflow.Cited{}, err
	}
	defer g.Close()
	whole, err := generate.Whole(g, m.ID)
	if err != nil {
		return workflow.Cited{}, err
	}
	cits, unsupported, err := ans.Finish(ctx, openai.NewID("chatcmpl-"), m.ID)
	if err != nil {
		return workflow.Cited{}, err
	}
	g.RedactCitations(cits, unsupported)
	return workflow.Cited{Text: whole.Text, Citations: cits}, nil
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
