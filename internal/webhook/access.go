package webhook

import (
	"context"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// The service's methods take the caller and check its team themselves:
// another team's webhook or delivery is ErrNotFound, with the same message
// as one that does not exist ("No webhook 'wh_x'.", as the store words
// it).

// GetWebhook returns the caller's team's webhook id.
func (s *Service) GetWebhook(ctx context.Context, caller auth.Key, id string) (Webhook, error) {
	w, err := s.Store.GetWebhook(ctx, id)
	if err == nil && w.TeamID != caller.TeamID {
		return Webhook{}, notFound("webhook", id)
	}
	return w, err
}

// ListWebhooks lists the caller's team's webhooks, a page after the id
// after.
func (s *Service) ListWebhooks(ctx context.Context, caller auth.Key, after string, limit int) ([]Webhook, bool, error) {
	return s.Store.ListWebhooks(ctx, caller.TeamID, after, limit)
}

// GetDelivery returns the caller's team's webhook webhookID and its
// delivery deliveryID (a delivery of another webhook is ErrNotFound).
func (s *Service) GetDelivery(ctx context.Context, caller auth.Key, webhookID, deliveryID string) (Webhook, Delivery, error) {
	w, err := s.GetWebhook(ctx, caller, webhookID)
	if err != nil {
		return w, Delivery{}, err
	}
	d, err := s.Store.GetWebhookDelivery(ctx, deliveryID)
	if err == nil && d.WebhookID != w.ID {
		return w, Delivery{}, notFound("delivery", deliveryID)
	}
	return w, d, err
}

// DeliveryAttempts returns a delivery (as GetDelivery) and its attempts,
// first first.
func (s *Service) DeliveryAttempts(ctx context.Context, caller auth.Key, webhookID, deliveryID string) (Delivery, []Attempt, error) {
	_, d, err := s.GetDelivery(ctx, caller, webhookID, deliveryID)
	if err != nil {
		return d, nil, err
	}
	as, err := s.Store.WebhookDeliveryAttempts(ctx, d.ID)
	return d, as, err
}
