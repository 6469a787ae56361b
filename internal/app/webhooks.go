package app

import (
	"context"
	"log/slog"

	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/outbound"
	"github.com/sovereign-ai/sovereign/internal/webhook"
)

// newWebhooks builds the webhook service on the durable engine e: it
// registers the delivery workflow (e has not launched yet); the API
// serves it on the /v1/webhooks routes. The returned function starts this server's
// dispatcher once the engine runs; Close stops it.
func (a *App) newWebhooks(cfg config.Config, e *durable.Engine, log *slog.Logger) (start func(), err error) {
	// Deliveries go through the SSRF-checked client (private, loopback
	// and link-local targets refused unless the operator allows them,
	// checked on every redirect), 10 s per attempt, the first KiB of the
	// answer kept for the delivery log.
	client, err := outbound.New(outbound.Config{Allow: cfg.OutboundAllow, AllowPrivate: cfg.OutboundAllowPrivate,
		Timeout: outbound.DefaultTimeout, MaxResponseBytes: webhook.MaxResponseBody})
	if err != nil {
		return nil, err
	}
	svc := &webhook.Service{Store: a.DB, Events: a.Bus, Engine: e, Client: client, Wake: a.Bus.Changed,
		RetryWindow: cfg.WebhookRetryWindow, Log: log}
	svc.Register(e)
	a.Webhooks = svc
	return func() {
		// Closers run in reverse: the dispatcher stops before the engine
		// and the database close.
		a.background(context.Background(), svc.Run)
	}, nil
}
