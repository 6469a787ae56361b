// Package webhook delivers the event log to the endpoints teams register:
// signed the Standard Webhooks way, at least once, from a durable outbox.
//
// A webhook belongs to a team and subscribes to event types (or "*"). When
// an event is stored, the store writes in the same transaction one
// delivery — the outbox row — for every enabled webhook of the event's
// team (every team's, for an event about the deployment) subscribed to its
// type: an event is never stored without its deliveries. Each server's
// dispatcher (Service.Run) starts the durable workflow of every delivery
// not yet started; the workflow makes the attempts, each a durable step
// that signs and POSTs the event and records what the receiver answered,
// with exponential backoff and jitter in between (durable sleeps) until
// one succeeds or the retry window ends. A webhook whose deliveries keep
// failing is disabled, and a webhook.disabled event says so.
//
// docs/webhooks.md is the user's side: the API, the headers, how to verify
// them, the retry schedule, auto-disable, rotation and the SSRF guard.
package webhook

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Delivery states.
const (
	// StatusPending: stored, no attempt made yet.
	StatusPending = "pending"
	// StatusDelivering: attempted at least once without success; the
	// next attempt is at NextAttemptAt (or under way).
	StatusDelivering = "delivering"
	// StatusSucceeded: an attempt got a 2xx answer.
	StatusSucceeded = "succeeded"
	// StatusFailed: the retry window ended without a 2xx answer, or the
	// delivery was stopped (its webhook disabled, its event gone).
	StatusFailed = "failed"
)

// Terminal reports whether a delivery state is final.
func Terminal(status string) bool { return status == StatusSucceeded || status == StatusFailed }

// AllEvents subscribes a webhook to every event type.
const AllEvents = "*"

// SecretPrefix starts every signing secret (the Standard Webhooks format:
// "whsec_" and the base64 of the key).
const SecretPrefix = "whsec_"

// secretBytes is the size of a signing key: HMAC-SHA256's block of
// entropy (the specification asks for 24 to 64 bytes).
const secretBytes = 32

// Errors of the store and the service. They are API errors (apierr), so
// that the HTTP layer needs no mapping of its own: the store and the
// service return them wrapped by apierr.Wrapf with a message naming the
// object ("No webhook 'wh_x'."), and errors.Is(err, ErrNotFound) still
// holds. The sentinels' own messages show only where nothing wrapped them.
var (
	// ErrNotFound: no such webhook or delivery, or one of another team
	// (the same answer, so that nothing tells other teams' ids).
	ErrNotFound = apierr.New(apierr.NotFound, "No such webhook or delivery.")
	// ErrConflict: the webhook is not in a state that allows the change.
	ErrConflict = apierr.New(apierr.Conflict, "The webhook changed meanwhile; read it again.")
)

// notFound is ErrNotFound for the what ("webhook", "delivery") id. The
// store words its own the same way (sqlstore), so that another team's id
// and a missing one get the same answer.
func notFound(what, id string) error {
	return apierr.Wrapf(ErrNotFound, "No %s '%s'.", what, id)
}

// invalid is a request field the service refuses: a 400 naming param.
func invalid(param, format string, a ...any) error {
	return apierr.Invalid(param, fmt.Sprintf(format, a...))
}

// Webhook is a team's endpoint.
type Webhook struct {
	ID          string
	TeamID      string
	URL         string
	Description string
	// Events are the subscribed types, or ["*"].
	Events []string
	// Secret signs every delivery. PreviousSecret, until
	// PreviousSecretUntil, signs them too (a rotation's grace period).
	Secret              string
	PreviousSecret      string
	PreviousSecretUntil *time.Time
	Enabled             bool
	// DisabledReason says why the webhook is disabled ("" when enabled);
	// DisabledBy is the delivery whose failure disabled it ("" when
	// disabled through the API).
	DisabledReason string
	DisabledAt     *time.Time
	DisabledBy     string
	// ConsecutiveFailures counts the deliveries that failed for good
	// since the last successful attempt; FailingSince is the first failed
	// attempt since then (nil: the last attempt succeeded, or none was
	// made).
	ConsecutiveFailures int
	FailingSince        *time.Time
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// Secrets returns the secrets that sign a message sent at now: the
// current one, then the previous one during a rotation's grace period.
func (w Webhook) Secrets(now time.Time) []string {
	out := []string{w.Secret}
	if w.PreviousSecret != "" && w.PreviousSecretUntil != nil && now.Before(*w.PreviousSecretUntil) {
		out = append(out, w.PreviousSecret)
	}
	return out
}

// Delivery is one delivery of an event to a webhook: the outbox row, then
// the log of its attempts' outcome.
type Delivery struct {
	ID        string
	WebhookID string
	TeamID    string // the webhook's team
	EventID   string
	EventType string
	// MessageID is the webhook-id header: one per (webhook, event), the
	// same across retries and redeliveries, for receivers to dedupe.
	MessageID     string
	Status        string
	Dispatched    bool // its durable workflow was started
	Attempts      int
	LastAttemptAt *time.Time
	LastStatus    int // the last answer's HTTP status (0: none)
	LastError     string
	NextAttemptAt *time.Time
	// RedeliveryOf is the delivery this one repeats ("" for the
	// delivery the event itself made).
	RedeliveryOf string
	CreatedAt    time.Time
	EndedAt      *time.Time
}

// Attempt is one POST of a delivery.
type Attempt struct {
	DeliveryID string
	N          int // 1, 2, …
	StartedAt  time.Time
	Duration   time.Duration
	StatusCode int // 0: no answer
	// ResponseBody is the start of the answer's body (MaxResponseBody
	// bytes at most, as valid UTF-8).
	ResponseBody string
	Error        string
}

// AttemptUpdate is what an attempt changes in its delivery and webhook.
type AttemptUpdate struct {
	WebhookID string
	// Status is the delivery's state after the attempt: StatusSucceeded
	// or StatusDelivering.
	Status        string
	NextAttemptAt *time.Time
}

// Patch changes a webhook; nil fields stay.
type Patch struct {
	URL         *string
	Description *string
	Events      []string // nil: unchanged
	Enabled     *bool
	// DisabledReason is stored with Enabled false.
	DisabledReason string
	// ResetFailures clears the failure counters (re-enabling does).
	ResetFailures bool
}

// DeliveryFilter selects a webhook's deliveries, newest first.
type DeliveryFilter struct {
	WebhookID string
	Status    string // "": any
	After     string // cursor: a delivery id
	Limit     int
}

// Store keeps webhooks, their deliveries and the attempts. The outbox
// side — deliveries written with the events — is the event store's
// (internal/sqlstore, AppendEvents).
type Store interface {
	CreateWebhook(ctx context.Context, w Webhook) error
	// GetWebhook returns a webhook (ErrNotFound).
	GetWebhook(ctx context.Context, id string) (Webhook, error)
	// ListWebhooks returns a team's webhooks, newest first, after the
	// cursor id, and whether there are more.
	ListWebhooks(ctx context.Context, teamID, after string, limit int) ([]Webhook, bool, error)
	CountWebhooks(ctx context.Context, teamID string) (int, error)
	// UpdateWebhook applies p and returns the webhook (ErrNotFound).
	UpdateWebhook(ctx context.Context, id string, p Patch, at time.Time) (Webhook, error)
	// RotateWebhookSecret sets the secrets (ErrNotFound).
	RotateWebhookSecret(ctx context.Context, id, secret, previous string, previousUntil *time.Time, at time.Time) (Webhook, error)
	// DeleteWebhook deletes a webhook with its deliveries and their
	// attempts (ErrNotFound).
	DeleteWebhook(ctx context.Context, id string) error
	// DisableWebhook disables an enabled webhook, recording why and the
	// delivery that caused it; it reports whether it did.
	DisableWebhook(ctx context.Context, id, reason, by string, at time.Time) (bool, error)

	// CreateWebhookDelivery stores a delivery (a redelivery; the event's
	// own deliveries are written with the event).
	CreateWebhookDelivery(ctx context.Context, d Delivery) error
	// GetWebhookDelivery returns a delivery (ErrNotFound).
	GetWebhookDelivery(ctx context.Context, id string) (Delivery, error)
	ListWebhookDeliveries(ctx context.Context, f DeliveryFilter) ([]Delivery, bool, error)
	// WebhookDeliveryAttempts returns a delivery's attempts, first first.
	WebhookDeliveryAttempts(ctx context.Context, deliveryID string) ([]Attempt, error)
	// UndispatchedWebhookDeliveries returns up to limit deliveries whose
	// workflow was not started yet, oldest first.
	UndispatchedWebhookDeliveries(ctx context.Context, limit int) ([]Delivery, error)
	MarkWebhookDeliveriesDispatched(ctx context.Context, ids []string) error
	// RecordWebhookAttempt stores an attempt (replacing one of the same
	// number: a step run again after a crash) and, in the same
	// transaction, its delivery's new state and the webhook's failure
	// counters: a success clears them, a failure starts FailingSince.
	// A delivery that ended meanwhile is left as it is.
	RecordWebhookAttempt(ctx context.Context, a Attempt, u AttemptUpdate) error
	// EndWebhookDelivery moves a delivery that has not ended to failed
	// with reason, without counting it against its webhook (it was
	// stopped, not refused); it reports whether it did.
	EndWebhookDelivery(ctx context.Context, id, reason string, at time.Time) (bool, error)
	// FailWebhookDelivery moves a delivery that has not ended to failed
	// and counts it in its webhook's ConsecutiveFailures, in one
	// transaction; it returns the webhook as it is then and whether this
	// call moved the delivery (false: it had ended already).
	FailWebhookDelivery(ctx context.Context, id, reason string, at time.Time) (Webhook, bool, error)
	// PurgeWebhookDeliveries deletes the deliveries that ended before
	// before, with their attempts, and returns how many.
	PurgeWebhookDeliveries(ctx context.Context, before time.Time) (int64, error)
}

// NewSecret returns a random signing secret, "whsec_" and the base64 of
// 32 random bytes.
func NewSecret() string {
	var b [secretBytes]byte
	rand.Read(b[:])
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}

// NewID returns a random id with the prefix ("wh_", "whd_").
func NewID(prefix string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b [22]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b[:])
}

// derived hashes parts into a hex string of n bytes.
func derived(n int, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:n])
}

// MessageID is the webhook-id of the event's messages to the webhook:
// "msg_" and 32 hex characters derived from both ids, so that every
// delivery of the event to the webhook — retries, redeliveries — carries
// the same one.
func MessageID(webhookID, eventID string) string { return "msg_" + derived(16, webhookID, eventID) }

// DeliveryID is the id of the delivery an event makes to a webhook when
// it is stored (redeliveries get random ids).
func DeliveryID(webhookID, eventID string) string {
	return "whd_" + derived(12, "delivery", webhookID, eventID)
}

// WorkflowID is the durable engine's id of a delivery's workflow.
func WorkflowID(deliveryID string) string { return "delivery:" + deliveryID }
