package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/events"
)

// deliverWorkflow is the durable workflow of one delivery. Deliveries
// start at once, not through a queue: a delivery mostly sleeps between
// attempts, and a queue's slot would stay taken while it does.
const deliverWorkflow = "webhook.deliver"

// dispatchBatch bounds the deliveries one dispatcher pass starts.
const dispatchBatch = 100

// storeRetry retries a step whose store calls failed.
var storeRetry = durable.StepOptions{Retries: 8, Backoff: time.Second, MaxBackoff: 30 * time.Second}

// Register registers the delivery workflow on the engine (before it
// launches).
func (s *Service) Register(e *durable.Engine) {
	durable.Register(e, deliverWorkflow, s.deliver)
	e.Resumable(deliverWorkflow, s.pending)
}

// pending reports whether the delivery of the workflow id has not ended:
// the engine resumes such a workflow should a shutdown have cancelled it.
func (s *Service) pending(ctx context.Context, workflowID string) (bool, error) {
	d, err := s.Store.GetWebhookDelivery(ctx, strings.TrimPrefix(workflowID, WorkflowID("")))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil && !Terminal(d.Status), err
}

// outcome is what an attempt step decided (stored by the engine: a
// workflow resumed after a crash replays it rather than deciding again).
type outcome struct {
	// Done: delivered, or nothing left to do (the delivery or its
	// webhook was deleted, the delivery had ended).
	Done bool `json:"done"`
	// Stop ends the delivery as failed with this reason, without counting
	// it against the webhook (disabled, event gone).
	Stop string `json:"stop,omitempty"`
	// GiveUp: the retry window ended; the delivery failed.
	GiveUp bool `json:"give_up,omitempty"`
	// Wait is the time until the next attempt.
	Wait time.Duration `json:"wait,omitempty"`
}

// deliver is the workflow of the delivery id: attempts until one is
// answered 2xx or the retry window ends, durable sleeps in between. Every
// decision is made inside a step and stored with it, so the code between
// steps replays the same way after a crash.
func (s *Service) deliver(ctx durable.Context, id string) error {
	for n := 1; ; n++ {
		out, err := durable.Step(ctx, fmt.Sprintf("attempt:%d", n), func(c context.Context) (outcome, error) {
			return s.attempt(c, id, n)
		}, storeRetry)
		if err != nil {
			return err
		}
		switch {
		case out.Done:
			return nil
		case out.Stop != "":
			_, err := durable.Step(ctx, "stop", func(c context.Context) (bool, error) {
				return s.Store.EndWebhookDelivery(c, id, out.Stop, s.now())
			}, storeRetry)
			return err
		case out.GiveUp:
			return s.fail(ctx, id)
		}
		if err := durable.Sleep(ctx, out.Wait); err != nil {
			return err
		}
	}
}

// fail ends a delivery whose window ran out, counts it against its
// webhook, disables the webhook when the rules say so, and announces it.
func (s *Service) fail(ctx durable.Context, id string) error {
	disabled, err := durable.Step(ctx, "fail", func(c context.Context) (bool, error) {
		now := s.now()
		w, _, err := s.Store.FailWebhookDelivery(c, id, "", now)
		if errors.Is(err, ErrNotFound) {
			return false, nil // deleted meanwhile
		}
		if err != nil {
			return false, err
		}
		if w.Enabled {
			reason := ""
			switch {
			case w.ConsecutiveFailures >= s.disableAfter():
				reason = fmt.Sprintf("%d consecutive deliveries failed", w.ConsecutiveFailures)
			case w.FailingSince != nil && now.Sub(*w.FailingSince) >= s.disableFailingFor():
				reason = fmt.Sprintf("every attempt failed since %s", w.FailingSince.Format(time.RFC3339))
			}
			if reason != "" {
				if _, err := s.Store.DisableWebhook(c, w.ID, reason, id, now); err != nil {
					return false, err
				}
				s.log().Warn("webhook disabled after repeated failed deliveries", "webhook", w.ID, "team", w.TeamID, "reason", reason)
			}
		}
		// A step run again after a crash finds the webhook disabled by
		// this delivery: it still announces it (the event's id makes the
		// announcement once).
		if w, err = s.Store.GetWebhook(c, w.ID); err != nil {
			return false, err
		}
		return !w.Enabled && w.DisabledBy == id, nil
	}, storeRetry)
	if err != nil || !disabled {
		return err
	}
	_, err = durable.Step(ctx, "announce", func(c context.Context) (bool, error) {
		d, err := s.Store.GetWebhookDelivery(c, id)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		w, err := s.Store.GetWebhook(c, d.WebhookID)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		ev := events.Event{ID: "evt_" + derived(12, events.WebhookDisabled, w.ID, id), Type: events.WebhookDisabled,
			Team: w.TeamID, Subject: w.ID, Data: ViewOf(w)}
		if _, err := s.Events.Append(c, ev); err != nil && !errors.Is(err, events.ErrDuplicate) {
			return false, err
		}
		return true, nil
	}, storeRetry)
	return err
}

// attempt makes the n-th attempt of delivery id: it signs the event with
// a fresh timestamp, POSTs it, records what came back, and decides what
// follows. It is safe to run again (the receiver may then get the message
// twice, with the same webhook-id). It returns an error only when the
// store fails.
func (s *Service) attempt(ctx context.Context, id string, n int) (outcome, error) {
	d, err := s.Store.GetWebhookDelivery(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return outcome{Done: true}, nil // deleted with its webhook
	}
	if err != nil {
		return outcome{}, err
	}
	if Terminal(d.Status) {
		return outcome{Done: true}, nil
	}
	w, err := s.Store.GetWebhook(ctx, d.WebhookID)
	if errors.Is(err, ErrNotFound) {
		return outcome{Done: true}, nil
	}
	if err != nil {
		return outcome{}, err
	}
	if !w.Enabled {
		return outcome{Stop: "the webhook is disabled"}, nil
	}
	ev, err := s.Events.Event(ctx, d.EventID)
	if errors.Is(err, events.ErrNotFound) {
		return outcome{Stop: "the event is no longer stored"}, nil
	}
	if err != nil {
		return outcome{}, err
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return outcome{Stop: "the event cannot be encoded: " + err.Error()}, nil
	}
	if err := s.acquire(ctx); err != nil {
		return outcome{}, err
	}
	start := s.now()
	a := Attempt{DeliveryID: id, N: n, StartedAt: start}
	status, header, answer, postErr := s.post(ctx, w, d.MessageID, start, body)
	s.release()
	a.Duration = s.now().Sub(start)
	a.StatusCode, a.ResponseBody = status, answer
	switch {
	case postErr != nil:
		a.Error = postErr.Error()
	case status < 200 || status > 299:
		a.Error = fmt.Sprintf("the receiver answered HTTP %d", status)
	}
	if ctx.Err() != nil {
		// This server is stopping: the attempt is made again when the
		// workflow resumes.
		return outcome{}, ctx.Err()
	}
	u := AttemptUpdate{WebhookID: w.ID, Status: StatusDelivering}
	out := outcome{}
	if a.Error == "" {
		u.Status, out.Done = StatusSucceeded, true
	} else {
		now := s.now()
		wait, giveUp := NextAttempt(s.Schedule, s.retryWindow(), id, n, d.CreatedAt, now, RetryAfter(status, header, now))
		out.GiveUp, out.Wait = giveUp, wait
		if !giveUp {
			next := now.Add(wait)
			u.NextAttemptAt = &next
		}
	}
	if err := s.Store.RecordWebhookAttempt(ctx, a, u); err != nil {
		return outcome{}, err
	}
	return out, nil
}

// post sends one signed message and returns the answer's status, headers
// and the start of its body, or the error that kept it from coming.
func (s *Service) post(ctx context.Context, w Webhook, msgID string, now time.Time, body []byte) (int, http.Header, string, error) {
	h, err := Headers(w.Secrets(now), msgID, now, body)
	if err != nil {
		return 0, nil, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	req.Header = h
	resp, err := s.Client.DoTruncated(req)
	if err != nil {
		return 0, nil, "", err
	}
	return resp.StatusCode, resp.Header, clip(resp.Body, MaxResponseBody), nil
}

// clip returns b's first n bytes as text a database keeps: valid UTF-8,
// no NUL.
func clip(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
		// Drop a character cut in two.
		for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
			if utf8.RuneStart(b[i]) {
				if !utf8.FullRune(b[i:]) {
					b = b[:i]
				}
				break
			}
		}
	}
	return strings.ReplaceAll(strings.ToValidUTF8(string(b), "\uFFFD"), "\x00", "\uFFFD")
}

func (s *Service) acquire(ctx context.Context) error {
	s.semOnce.Do(func() {
		n := s.MaxConcurrent
		if n <= 0 {
			n = 32
		}
		s.sem = make(chan struct{}, n)
	})
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Service) release() { <-s.sem }

// Run is this server's dispatcher, until ctx ends: it starts the durable
// workflow of every delivery not started yet — at a wake-up (events were
// stored) and every Poll — a bounded batch at a time, and marks them
// started. Starting is idempotent by the workflow's id, so servers
// sharing the database may all do it.
func (s *Service) Run(ctx context.Context) {
	poll := s.Poll
	if poll <= 0 {
		poll = time.Second
	}
	timer := time.NewTimer(poll)
	defer timer.Stop()
	var purged time.Time
	for {
		if time.Since(purged) >= time.Hour {
			purged = time.Now()
			s.purge(ctx)
		}
		var wake <-chan struct{}
		if s.Wake != nil {
			wake = s.Wake()
		}
		if s.Dispatch(ctx) >= dispatchBatch {
			continue // more are waiting
		}
		timer.Reset(poll)
		select {
		case <-ctx.Done():
			return
		case <-wake:
			// A burst of events wakes the dispatcher once.
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		case <-timer.C:
		}
	}
}

// purge deletes the deliveries that ended more than Retention ago.
func (s *Service) purge(ctx context.Context) {
	keep := s.Retention
	if keep <= 0 {
		keep = DefaultRetention
	}
	n, err := s.Store.PurgeWebhookDeliveries(ctx, s.now().Add(-keep))
	switch {
	case err != nil && ctx.Err() == nil:
		s.log().Warn("webhooks: purging the delivery log", "err", err)
	case n > 0:
		s.log().Info("webhooks: purged old deliveries", "deliveries", n, "older_than", keep.String())
	}
}

// Dispatch starts the workflows of up to one batch of deliveries not
// started yet and returns how many it started.
func (s *Service) Dispatch(ctx context.Context) int {
	ds, err := s.Store.UndispatchedWebhookDeliveries(ctx, dispatchBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.log().Warn("webhooks: reading the outbox", "err", err)
		}
		return 0
	}
	started := make([]string, 0, len(ds))
	for _, d := range ds {
		if err := s.Engine.Start(ctx, "", deliverWorkflow, WorkflowID(d.ID), d.ID); err != nil {
			if ctx.Err() == nil {
				s.log().Warn("webhooks: starting a delivery", "delivery", d.ID, "err", err)
			}
			break
		}
		started = append(started, d.ID)
	}
	if len(started) > 0 {
		if err := s.Store.MarkWebhookDeliveriesDispatched(ctx, started); err != nil && ctx.Err() == nil {
			s.log().Warn("webhooks: marking deliveries started", "err", err)
		}
	}
	return len(started)
}

// View is the API's webhook object (and webhook.disabled's data). It
// never carries a secret but in the answers of create and rotate.
type View struct {
	ID          string   `json:"id"`
	Object      string   `json:"object"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
	Enabled     bool     `json:"enabled"`
	// DisabledReason and DisabledAt are set while it is disabled.
	DisabledReason *string `json:"disabled_reason"`
	DisabledAt     *int64  `json:"disabled_at"`
	// ConsecutiveFailures counts the deliveries that failed for good
	// since the last successful attempt.
	ConsecutiveFailures int `json:"consecutive_failures"`
	// PreviousSecretExpiresAt is the end of a rotation's grace period,
	// while the previous secret still signs.
	PreviousSecretExpiresAt *int64 `json:"previous_secret_expires_at"`
	TeamID                  string `json:"team_id"`
	CreatedAt               int64  `json:"created_at"`
	UpdatedAt               int64  `json:"updated_at"`
	// Secret is only in the answers of create and rotate_secret.
	Secret string `json:"secret,omitempty"`
}

// ViewOf is w's API object, without its secret.
func ViewOf(w Webhook) View {
	v := View{ID: w.ID, Object: "webhook", URL: w.URL, Events: w.Events, Description: w.Description, Enabled: w.Enabled,
		ConsecutiveFailures: w.ConsecutiveFailures, TeamID: w.TeamID, CreatedAt: w.CreatedAt.Unix(), UpdatedAt: w.UpdatedAt.Unix()}
	if v.Events == nil {
		v.Events = []string{}
	}
	if !w.Enabled {
		r := w.DisabledReason
		v.DisabledReason = &r
		if w.DisabledAt != nil {
			t := w.DisabledAt.Unix()
			v.DisabledAt = &t
		}
	}
	if w.PreviousSecret != "" && w.PreviousSecretUntil != nil && time.Now().Before(*w.PreviousSecretUntil) {
		t := w.PreviousSecretUntil.Unix()
		v.PreviousSecretExpiresAt = &t
	}
	return v
}
