package catalog

import (
	"context"
	"fmt"

	"github.com/sovereign-ai/sovereign/internal/inference"
)

var (
	_ inference.Backend  = (*Catalog)(nil)
	_ inference.Reranker = (*Catalog)(nil)
)

// backend resolves a model name to its backend and its id.
func (c *Catalog) backend(ctx context.Context, name string) (inference.Backend, string, error) {
	e, err := c.lookup(ctx, name)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %q", inference.ErrModelNotFound, name)
	}
	if e.remote != nil {
		return e.remote, e.spec.ID, nil
	}
	if c.cfg.Local == nil {
		return nil, "", fmt.Errorf("%w: %q (no local engine)", inference.ErrModelNotFound, name)
	}
	return c.cfg.Local.Bind(e.spec.ID, e.path), e.spec.ID, nil
}

// Complete routes a generation to the model's backend.
func (c *Catalog) Complete(ctx context.Context, req inference.CompletionRequest) (inference.Stream, error) {
	b, id, err := c.backend(ctx, req.Model)
	if err != nil {
		return nil, err
	}
	req.Model = id
	return b.Complete(ctx, req)
}

// Embed routes an embedding request to the model's backend.
func (c *Catalog) Embed(ctx context.Context, req inference.EmbeddingRequest) (inference.EmbeddingResponse, error) {
	b, id, err := c.backend(ctx, req.Model)
	if err != nil {
		return inference.EmbeddingResponse{}, err
	}
	req.Model = id
	return b.Embed(ctx, req)
}

// Tokenize routes to the model's backend.
func (c *Catalog) Tokenize(ctx context.Context, req inference.TokenizeRequest) (inference.TokenizeResponse, error) {
	b, id, err := c.backend(ctx, req.Model)
	if err != nil {
		return inference.TokenizeResponse{}, err
	}
	req.Model = id
	return b.Tokenize(ctx, req)
}

// Detokenize routes to the model's backend.
func (c *Catalog) Detokenize(ctx context.Context, req inference.DetokenizeRequest) (inference.DetokenizeResponse, error) {
	b, id, err := c.backend(ctx, req.Model)
	if err != nil {
		return inference.DetokenizeResponse{}, err
	}
	req.Model = id
	return b.Detokenize(ctx, req)
}

// Rerank routes to the model's backend, when it can rerank.
func (c *Catalog) Rerank(ctx context.Context, req inference.RerankRequest) (inference.RerankResponse, error) {
	b, id, err := c.backend(ctx, req.Model)
	if err != nil {
		return inference.RerankResponse{}, err
	}
	r, ok := b.(inference.Reranker)
	if !ok {
		return inference.RerankResponse{}, fmt.Errorf("%w: model %q cannot rerank on this server", inference.ErrUnsupported, id)
	}
	req.Model = id
	return r.Rerank(ctx, req)
}
