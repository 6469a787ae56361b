package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/outbound"
)

// Limits on what a team registers.
const (
	MaxPerTeam        = 50
	MaxURLLen         = 2048
	MaxDescriptionLen = 1024
	// MaxGracePeriod bounds a rotation's grace period.
	MaxGracePeriod = 7 * 24 * time.Hour
	// DefaultGracePeriod is how long the previous secret keeps signing
	// after a rotation that names no grace period.
	DefaultGracePeriod = 24 * time.Hour
	// MaxResponseBody is how much of a receiver's answer an attempt
	// records.
	MaxResponseBody = 1024
)

// Engine is the durable engine as the service uses it.
type Engine interface {
	Start(ctx context.Context, queue, name, id string, input any) error
}

// EventLog reads the stored events deliveries carry and stores the
// service's own (events.Bus).
type EventLog interface {
	Event(ctx context.Context, id string) (events.Event, error)
	Append(ctx context.Context, ev events.Event) (events.Event, error)
}

// Client sends the deliveries: internal/outbound's client, which refuses
// private, loopback and link-local targets (after DNS resolution and on
// every redirect) unless the operator allows them, and bounds the time and
// the answer's size.
type Client interface {
	DoTruncated(req *http.Request) (*outbound.Response, error)
	ValidateURL(ctx context.Context, rawURL string) error
}

// Service manages webhooks and delivers events to them.
type Service struct {
	Store  Store
	Events EventLog
	Engine Engine
	Client Client
	// Wake, when set, returns a channel closed when events may have been
	// stored (events.Bus.Changed): the dispatcher looks for new
	// deliveries then, and every Poll anyway.
	Wake func() <-chan struct{}
	// Poll is how often the dispatcher looks for deliveries without a
	// wake-up (default 1 s).
	Poll time.Duration
	// RetryWindow is how long a delivery is retried (default 24 h).
	RetryWindow time.Duration
	// Schedule is the wait after each failed attempt (default
	// DefaultSchedule); Backoff adds the jitter.
	Schedule []time.Duration
	// DisableAfter consecutive deliveries that failed for good disable a
	// webhook (default DefaultDisableAfter); so does a webhook failing
	// every attempt for DisableFailingFor (default
	// DefaultDisableFailingFor), at its next delivery that fails.
	DisableAfter      int
	DisableFailingFor time.Duration
	// MaxConcurrent bounds the attempts in flight on this server
	// (default 32).
	MaxConcurrent int
	// Retention is how long the log keeps a delivery after it ended
	// (default DefaultRetention); the dispatcher purges older ones
	// hourly.
	Retention time.Duration
	Log       *slog.Logger
	Now       func() time.Time

	semOnce sync.Once
	sem     chan struct{}
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

func (s *Service) retryWindow() time.Duration {
	if s.RetryWindow > 0 {
		return s.RetryWindow
	}
	return DefaultRetryWindow
}

func (s *Service) disableAfter() int {
	if s.DisableAfter > 0 {
		return s.DisableAfter
	}
	return DefaultDisableAfter
}

func (s *Service) disableFailingFor() time.Duration {
	if s.DisableFailingFor > 0 {
		return s.DisableFailingFor
	}
	return DefaultDisableFailingFor
}

// CreateParams are a new webhook's fields.
type CreateParams struct {
	TeamID      string
	URL         string
	Events      []string
	Description string
	// Audit says the caller may subscribe to audit.triggered (its key
	// holds records:read): those events repeat policy decisions.
	Audit bool
}

// Create validates and stores a new webhook, enabled, with a new secret
// (returned in the webhook: the caller shows it once). Errors (apierr):
// invalid_request_error naming the field, permission_denied (audit events
// without the scope), conflict (the team has MaxPerTeam webhooks), the
// store's.
func (s *Service) Create(ctx context.Context, p CreateParams) (Webhook, error) {
	if err := s.checkURL(ctx, p.URL); err != nil {
		return Webhook{}, err
	}
	evs, err := normalizeEvents(p.Events, p.Audit)
	if err != nil {
		return Webhook{}, err
	}
	if err := checkDescription(p.Description); err != nil {
		return Webhook{}, err
	}
	n, err := s.Store.CountWebhooks(ctx, p.TeamID)
	if err != nil {
		return Webhook{}, err
	}
	if n >= MaxPerTeam {
		return Webhook{}, apierr.Errorf(apierr.Conflict, "the team has %d webhooks, the most allowed; delete one first", n)
	}
	now := s.now()
	w := Webhook{ID: NewID("wh_"), TeamID: p.TeamID, URL: p.URL, Description: p.Description, Events: evs, Secret: NewSecret(),
		Enabled: true, CreatedAt: now, UpdatedAt: now}
	return w, s.Store.CreateWebhook(ctx, w)
}

// UpdateParams change a webhook; nil fields stay.
type UpdateParams struct {
	URL         *string
	Description *string
	Events      *[]string
	Enabled     *bool
	Audit       bool // as in CreateParams
}

// Update changes the caller's team's webhook id. Enabling a disabled webhook clears its failure
// counters; disabling it stops its deliveries at their next attempt.
// Errors: as Create's, and ErrNotFound.
func (s *Service) Update(ctx context.Context, caller auth.Key, id string, p UpdateParams) (Webhook, error) {
	w, err := s.GetWebhook(ctx, caller, id)
	if err != nil {
		return w, err
	}
	var patch Patch
	if p.URL != nil {
		if err := s.checkURL(ctx, *p.URL); err != nil {
			return Webhook{}, err
		}
		patch.URL = p.URL
	}
	if p.Events != nil {
		evs, err := normalizeEvents(*p.Events, p.Audit)
		if err != nil {
			return Webhook{}, err
		}
		patch.Events = evs
	}
	if p.Description != nil {
		if err := checkDescription(*p.Description); err != nil {
			return Webhook{}, err
		}
		patch.Description = p.Description
	}
	if p.Enabled != nil {
		patch.Enabled = p.Enabled
		if *p.Enabled {
			patch.ResetFailures = !w.Enabled
		} else {
			patch.DisabledReason = "disabled through the API"
			if !w.Enabled {
				patch.DisabledReason = w.DisabledReason
			}
		}
	}
	return s.Store.UpdateWebhook(ctx, w.ID, patch, s.now())
}

// Rotate gives the caller's team's webhook id a new secret and returns it with the new secret; the old
// one keeps signing (a second signature) for grace (0: it stops at once).
// A rotation during another's grace period drops the oldest secret.
// Errors: invalid_request_error (grace out of range), ErrNotFound.
func (s *Service) Rotate(ctx context.Context, caller auth.Key, id string, grace time.Duration) (Webhook, error) {
	w, err := s.GetWebhook(ctx, caller, id)
	if err != nil {
		return w, err
	}
	if grace < 0 || grace > MaxGracePeriod {
		return Webhook{}, invalid("grace_period_seconds", "'grace_period_seconds' is from 0 to %d (%s)", int(MaxGracePeriod/time.Second), MaxGracePeriod)
	}
	now := s.now()
	var until *time.Time
	previous := ""
	if grace > 0 {
		t := now.Add(grace)
		until, previous = &t, w.Secret
	}
	return s.Store.RotateWebhookSecret(ctx, w.ID, NewSecret(), previous, until, now)
}

// Delete deletes the caller's team's webhook id with its deliveries; the deliveries under way stop at
// their next attempt.
func (s *Service) Delete(ctx context.Context, caller auth.Key, id string) error {
	if _, err := s.GetWebhook(ctx, caller, id); err != nil {
		return err
	}
	return s.Store.DeleteWebhook(ctx, id)
}

// Redeliver delivers the event of the delivery deliveryID of the caller's
// team's webhook webhookID again: a new delivery with the same
// message id (webhook-id), so that a receiver that processed it already
// can tell, and a retry window of its own. Errors: conflict (the webhook
// is disabled, the event is gone), ErrNotFound, the store's.
func (s *Service) Redeliver(ctx context.Context, caller auth.Key, webhookID, deliveryID string) (Delivery, error) {
	w, d, err := s.GetDelivery(ctx, caller, webhookID, deliveryID)
	if err != nil {
		return d, err
	}
	if !w.Enabled {
		return Delivery{}, apierr.New(apierr.Conflict, "the webhook is disabled; enable it (PATCH enabled: true) before redelivering")
	}
	if _, err := s.Events.Event(ctx, d.EventID); errors.Is(err, events.ErrNotFound) {
		return Delivery{}, apierr.Errorf(apierr.Conflict, "the event %s is no longer stored", d.EventID)
	} else if err != nil {
		return Delivery{}, err
	}
	nd := Delivery{ID: NewID("whd_"), WebhookID: w.ID, TeamID: w.TeamID, EventID: d.EventID, EventType: d.EventType,
		MessageID: MessageID(w.ID, d.EventID), Status: StatusPending, RedeliveryOf: d.ID, CreatedAt: s.now()}
	if err := s.Store.CreateWebhookDelivery(ctx, nd); err != nil {
		return Delivery{}, err
	}
	// Start it now rather than at the dispatcher's next pass; if this
	// fails the dispatcher starts it.
	if s.Engine != nil && s.Engine.Start(ctx, "", deliverWorkflow, WorkflowID(nd.ID), nd.ID) == nil {
		if err := s.Store.MarkWebhookDeliveriesDispatched(ctx, []string{nd.ID}); err == nil {
			nd.Dispatched = true
		}
	}
	return nd, nil
}

// checkURL validates a webhook's URL: its form, and its destination
// against the outbound policy now (a name that does not resolve yet is
// accepted: deliveries fail until it does, and every attempt is checked
// again).
func (s *Service) checkURL(ctx context.Context, raw string) error {
	switch {
	case strings.TrimSpace(raw) == "":
		return invalid("url", "'url' is required: the http or https URL events are POSTed to")
	case len(raw) > MaxURLLen:
		return invalid("url", "'url' is at most %d characters", MaxURLLen)
	}
	if _, err := outbound.ParseURL(raw); err != nil {
		return invalid("url", "%s", strings.TrimPrefix(err.Error(), "outbound: "))
	}
	if s.Client == nil {
		return nil
	}
	if err := s.Client.ValidateURL(ctx, raw); err != nil && outbound.Refused(err) {
		return invalid("url", "'url' is refused: %s", strings.TrimPrefix(err.Error(), "outbound: "))
	}
	return nil
}

func checkDescription(d string) error {
	if len(d) > MaxDescriptionLen {
		return invalid("description", "'description' is at most %d characters", MaxDescriptionLen)
	}
	return nil
}

// normalizeEvents validates a subscription: known types or "*", without
// duplicates ("*" alone when present). audit.triggered — also through
// "*" — needs audit.
func normalizeEvents(list []string, audit bool) ([]string, error) {
	if len(list) == 0 {
		return nil, invalid("events", "'events' lists the event types to deliver, or [\"*\"] for all of them; the types are %s", strings.Join(events.Types, ", "))
	}
	var out []string
	all := false
	for i, t := range list {
		t = strings.TrimSpace(t)
		switch {
		case t == AllEvents:
			all = true
		case !events.Known(t):
			return nil, invalid(fmt.Sprintf("events[%d]", i), "unknown event type %q; the types are %s, or \"*\" for all", t, strings.Join(events.Types, ", "))
		case t == events.AuditTriggered && !audit:
			return nil, forbidden("events", "audit.triggered events repeat policy decisions: subscribing to them needs the 'records:read' scope")
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if all {
		if !audit {
			return nil, forbidden("events", "\"*\" includes audit.triggered events, which repeat policy decisions and need the 'records:read' scope; list the types to deliver instead")
		}
		return []string{AllEvents}, nil
	}
	return out, nil
}

// forbidden is a request the caller's key may not make: a 403 naming
// param.
func forbidden(param, msg string) error {
	return &apierr.Error{Code: apierr.PermissionDenied, Param: param, Message: msg}
}

// ListDeliveries returns the deliveries of the caller's team's webhook
// f.WebhookID, newest first.
func (s *Service) ListDeliveries(ctx context.Context, caller auth.Key, f DeliveryFilter) ([]Delivery, bool, error) {
	if _, err := s.GetWebhook(ctx, caller, f.WebhookID); err != nil {
		return nil, false, err
	}
	switch f.Status {
	case "", StatusPending, StatusDelivering, StatusSucceeded, StatusFailed:
	default:
		return nil, false, invalid("status", "'status' is one of pending, delivering, succeeded, failed")
	}
	return s.Store.ListWebhookDeliveries(ctx, f)
}
