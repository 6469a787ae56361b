package httpapi

import (
	"net/http"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/webhook"
)

// The webhook routes (docs/webhooks.md). A webhook belongs to the team of
// the key that created it (an admin key's too) and only that team's keys
// see it: another team's webhook is a 404. The service does the work;
// these handlers decode and render.

// DeliveryJSON is the API's webhook delivery object.
type DeliveryJSON struct {
	ID             string  `json:"id"`
	Object         string  `json:"object"`
	WebhookID      string  `json:"webhook_id"`
	MessageID      string  `json:"message_id"`
	EventID        string  `json:"event_id"`
	EventType      string  `json:"event_type"`
	Status         string  `json:"status"`
	AttemptCount   int     `json:"attempt_count"`
	LastAttemptAt  *int64  `json:"last_attempt_at"`
	LastStatusCode *int    `json:"last_status_code"`
	LastError      *string `json:"last_error"`
	NextAttemptAt  *int64  `json:"next_attempt_at"`
	RedeliveryOf   *string `json:"redelivery_of"`
	CreatedAt      int64   `json:"created_at"`
	EndedAt        *int64  `json:"ended_at"`
	// Attempts are listed by GET …/deliveries/{delivery_id} only.
	Attempts *[]AttemptJSON `json:"attempts,omitempty"`
}

// AttemptJSON is one attempt of a delivery.
type AttemptJSON struct {
	Attempt      int     `json:"attempt"`
	StartedAt    int64   `json:"started_at"`
	DurationMs   float64 `json:"duration_ms"`
	StatusCode   *int    `json:"status_code"`
	ResponseBody string  `json:"response_body"`
	Error        *string `json:"error"`
}

func deliveryJSON(d webhook.Delivery) DeliveryJSON {
	out := DeliveryJSON{ID: d.ID, Object: "webhook.delivery", WebhookID: d.WebhookID, MessageID: d.MessageID, EventID: d.EventID,
		EventType: d.EventType, Status: d.Status, AttemptCount: d.Attempts, LastAttemptAt: unixPtr(d.LastAttemptAt),
		NextAttemptAt: unixPtr(d.NextAttemptAt), CreatedAt: d.CreatedAt.Unix(), EndedAt: unixPtr(d.EndedAt)}
	if d.LastStatus != 0 {
		out.LastStatusCode = &d.LastStatus
	}
	if d.LastError != "" {
		out.LastError = &d.LastError
	}
	if d.RedeliveryOf != "" {
		out.RedeliveryOf = &d.RedeliveryOf
	}
	return out
}

func attemptJSON(a webhook.Attempt) AttemptJSON {
	out := AttemptJSON{Attempt: a.N, StartedAt: a.StartedAt.Unix(), DurationMs: float64(a.Duration.Microseconds()) / 1000, ResponseBody: a.ResponseBody}
	if a.StatusCode != 0 {
		out.StatusCode = &a.StatusCode
	}
	if a.Error != "" {
		out.Error = &a.Error
	}
	return out
}

func (s *Server) webhooksOn() error {
	if s.Webhooks == nil {
		return apierr.New(apierr.NotFound, "this server delivers no webhooks")
	}
	return nil
}

// webhookOf returns the caller's team's webhook named by the path.
func (s *Server) webhookOf(r *http.Request) (webhook.Webhook, error) {
	if err := s.webhooksOn(); err != nil {
		return webhook.Webhook{}, err
	}
	return s.Webhooks.GetWebhook(r.Context(), caller(r), r.PathValue("id"))
}

// mayAudit reports whether the caller may subscribe to audit.triggered.
func mayAudit(r *http.Request) bool {
	k, _ := KeyFrom(r.Context())
	return auth.HasScope(k, auth.ScopeRecordsRead)
}

type createWebhookRequest struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := s.webhooksOn(); err != nil {
		return err
	}
	var req createWebhookRequest
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	wh, err := s.Webhooks.Create(r.Context(), webhook.CreateParams{TeamID: teamOf(r), URL: req.URL, Events: req.Events,
		Description: req.Description, Audit: mayAudit(r)})
	if err != nil {
		return err
	}
	v := webhook.ViewOf(wh)
	v.Secret = wh.Secret
	return wire.JSON(w, http.StatusCreated, v)
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	if err := s.webhooksOn(); err != nil {
		return err
	}
	limit := 20
	if err := wire.ListParams(r.URL.Query(), &limit); err != nil {
		return err
	}
	ws, more, err := s.Webhooks.ListWebhooks(r.Context(), caller(r), r.URL.Query().Get("after"), limit)
	if err != nil {
		return err
	}
	data := make([]webhook.View, len(ws))
	for i, wh := range ws {
		data[i] = webhook.ViewOf(wh)
	}
	return wire.JSON(w, http.StatusOK, wire.ListPage(data, more, func(v webhook.View) string { return v.ID }))
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	wh, err := s.webhookOf(r)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, webhook.ViewOf(wh))
}

type updateWebhookRequest struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Description *string   `json:"description"`
	Enabled     *bool     `json:"enabled"`
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := s.webhooksOn(); err != nil {
		return err
	}
	var req updateWebhookRequest
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	wh, err := s.Webhooks.Update(r.Context(), caller(r), r.PathValue("id"), webhook.UpdateParams{URL: req.URL, Events: req.Events, Description: req.Description,
		Enabled: req.Enabled, Audit: mayAudit(r)})
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, webhook.ViewOf(wh))
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := s.webhooksOn(); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := s.Webhooks.Delete(r.Context(), caller(r), id); err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"id": id, "object": "webhook", "deleted": true})
}

type rotateSecretRequest struct {
	GracePeriodSeconds *int64 `json:"grace_period_seconds"`
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	if err := s.webhooksOn(); err != nil {
		return err
	}
	var req rotateSecretRequest
	if r.ContentLength != 0 {
		if err := wire.DecodeStrict(r.Body, &req); err != nil {
			return err
		}
	}
	grace := webhook.DefaultGracePeriod
	if req.GracePeriodSeconds != nil {
		if *req.GracePeriodSeconds < 0 || *req.GracePeriodSeconds > int64(webhook.MaxGracePeriod/time.Second) {
			return apierr.Invalid("grace_period_seconds", "'grace_period_seconds' is from 0 to 604800 (7 days)")
		}
		grace = time.Duration(*req.GracePeriodSeconds) * time.Second
	}
	wh, err := s.Webhooks.Rotate(r.Context(), caller(r), r.PathValue("id"), grace)
	if err != nil {
		return err
	}
	v := webhook.ViewOf(wh)
	v.Secret = wh.Secret
	return wire.JSON(w, http.StatusOK, v)
}

func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	if err := s.webhooksOn(); err != nil {
		return err
	}
	q := r.URL.Query()
	limit := 20
	if err := wire.ListParams(q, &limit); err != nil {
		return err
	}
	ds, more, err := s.Webhooks.ListDeliveries(r.Context(), caller(r), webhook.DeliveryFilter{WebhookID: r.PathValue("id"), Status: q.Get("status"), After: q.Get("after"), Limit: limit})
	if err != nil {
		return err
	}
	data := make([]DeliveryJSON, len(ds))
	for i, d := range ds {
		data[i] = deliveryJSON(d)
	}
	return wire.JSON(w, http.StatusOK, wire.ListPage(data, more, func(v DeliveryJSON) string { return v.ID }))
}

func (s *Server) getWebhookDelivery(w http.ResponseWriter, r *http.Request) error {
	if err := s.webhooksOn(); err != nil {
		return err
	}
	d, as, err := s.Webhooks.DeliveryAttempts(r.Context(), caller(r), r.PathValue("id"), r.PathValue("delivery_id"))
	if err != nil {
		return err
	}
	out := deliveryJSON(d)
	list := make([]AttemptJSON, len(as))
	for i, a := range as {
		list[i] = attemptJSON(a)
	}
	out.Attempts = &list
	return wire.JSON(w, http.StatusOK, out)
}

func (s *Server) redeliverWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := s.webhooksOn(); err != nil {
		return err
	}
	nd, err := s.Webhooks.Redeliver(r.Context(), caller(r), r.PathValue("id"), r.PathValue("delivery_id"))
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusAccepted, deliveryJSON(nd))
}
