package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/webhook"
)

// The webhooks, webhook_subscriptions, webhook_deliveries and
// webhook_delivery_attempts tables: the store side of webhook.Store, and
// the outbox written with the events (outbox, used by AppendEvents).

var _ webhook.Store = (*Store)(nil)

// whNotFound is webhook.ErrNotFound for the what ("webhook", "delivery")
// id, in the words the API shows: the store is where a missing id is
// found, and the service words another team's id the same way
// (webhook's notFound), so that the two cannot be told apart.
func whNotFound(what, id string) error {
	return apierr.Wrapf(webhook.ErrNotFound, "No %s '%s'.", what, id)
}

// outbox writes the deliveries of the events AppendEvents stores, on its
// transaction. It remembers, for the batch, which webhooks subscribe to
// each (team, type), so that a batch of like events asks once.
type outbox struct {
	s    *Store
	tx   *sql.Tx
	subs map[[2]string][]subscriber
}

type subscriber struct{ id, team string }

func (s *Store) newOutbox(tx *sql.Tx) *outbox { return &outbox{s: s, tx: tx} }

// add stores one pending delivery of ev for every enabled webhook
// subscribed to its type: of ev's team, or of every team when ev is about
// the deployment (no team).
func (o *outbox) add(ctx context.Context, ev events.Event) error {
	key := [2]string{ev.Team, ev.Type}
	subs, ok := o.subs[key]
	if !ok {
		q := `SELECT DISTINCT w.id, w.team_id FROM webhook_subscriptions s JOIN webhooks w ON w.id = s.webhook_id
			WHERE s.event_type IN (?, '*') AND w.enabled = TRUE`
		args := []any{ev.Type}
		if ev.Team != "" {
			q += ` AND w.team_id = ?`
			args = append(args, ev.Team)
		}
		rows, err := o.tx.QueryContext(ctx, o.s.rebind(q+` ORDER BY w.id`), args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var sub subscriber
			if err := rows.Scan(&sub.id, &sub.team); err != nil {
				rows.Close()
				return err
			}
			subs = append(subs, sub)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if o.subs == nil {
			o.subs = map[[2]string][]subscriber{}
		}
		o.subs[key] = subs
	}
	for _, sub := range subs {
		if _, err := o.tx.ExecContext(ctx, o.s.rebind(`INSERT INTO webhook_deliveries
			(id, webhook_id, team_id, event_id, event_type, message_id, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
			webhook.DeliveryID(sub.id, ev.ID), sub.id, sub.team, ev.ID, ev.Type, webhook.MessageID(sub.id, ev.ID),
			webhook.StatusPending, o.s.timeValue(ev.CreatedAt)); err != nil {
			return err
		}
	}
	return nil
}

// whTx runs fn in a transaction, keeping the webhook package's errors
// as they are.
func (s *Store) whTx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("%s: %w", what, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		if errors.Is(err, webhook.ErrNotFound) || errors.Is(err, webhook.ErrConflict) {
			return err
		}
		return s.errorf("%s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("%s: %w", what, err)
	}
	return nil
}

// subscribe replaces a webhook's subscription rows.
func (s *Store) subscribe(ctx context.Context, tx *sql.Tx, id string, types []string) error {
	if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM webhook_subscriptions WHERE webhook_id = ?`), id); err != nil {
		return err
	}
	for _, t := range types {
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO webhook_subscriptions (event_type, webhook_id) VALUES (?, ?)`), t, id); err != nil {
			return err
		}
	}
	return nil
}

func eventsJSON(types []string) string {
	if types == nil {
		types = []string{}
	}
	b, _ := json.Marshal(types)
	return string(b)
}

// CreateWebhook stores a webhook and its subscriptions.
func (s *Store) CreateWebhook(ctx context.Context, w webhook.Webhook) error {
	return s.whTx(ctx, "create webhook", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO webhooks (id, team_id, url, description, events, secret, enabled, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), w.ID, w.TeamID, w.URL, w.Description, eventsJSON(w.Events), w.Secret, w.Enabled,
			s.timeValue(w.CreatedAt), s.timeValue(w.UpdatedAt)); err != nil {
			return s.classify(err)
		}
		return s.subscribe(ctx, tx, w.ID, w.Events)
	})
}

const webhookColumns = `id, team_id, url, description, events, secret, previous_secret, previous_secret_until, enabled,
	disabled_reason, disabled_at, disabled_by, consecutive_failures, failing_since, created_at, updated_at`

func (s *Store) scanWebhook(sc scanner) (webhook.Webhook, error) {
	var w webhook.Webhook
	var evs string
	var until, disabledAt, failing, created, updated TimeScanner
	if err := sc.Scan(&w.ID, &w.TeamID, &w.URL, &w.Description, &evs, &w.Secret, &w.PreviousSecret, &until, &w.Enabled,
		&w.DisabledReason, &disabledAt, &w.DisabledBy, &w.ConsecutiveFailures, &failing, &created, &updated); err != nil {
		return w, err
	}
	if err := json.Unmarshal([]byte(evs), &w.Events); err != nil {
		return w, s.errorf("webhook %s: bad stored events: %w", w.ID, err)
	}
	var err error
	if w.PreviousSecretUntil, err = s.timeOf(until); err != nil {
		return w, err
	}
	if w.DisabledAt, err = s.timeOf(disabledAt); err != nil {
		return w, err
	}
	if w.FailingSince, err = s.timeOf(failing); err != nil {
		return w, err
	}
	if w.CreatedAt, err = s.requiredTime(created); err != nil {
		return w, err
	}
	w.UpdatedAt, err = s.requiredTime(updated)
	return w, err
}

func (s *Store) getWebhook(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string) (webhook.Webhook, error) {
	w, err := s.scanWebhook(q.QueryRowContext(ctx, s.rebind(`SELECT `+webhookColumns+` FROM webhooks WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return w, whNotFound("webhook", id)
	}
	return w, err
}

// GetWebhook returns a webhook.
func (s *Store) GetWebhook(ctx context.Context, id string) (webhook.Webhook, error) {
	w, err := s.getWebhook(ctx, s.db, id)
	if err != nil && !errors.Is(err, webhook.ErrNotFound) {
		return w, s.errorf("get webhook: %w", err)
	}
	return w, err
}

// ListWebhooks returns a team's webhooks, newest first.
func (s *Store) ListWebhooks(ctx context.Context, teamID, after string, limit int) ([]webhook.Webhook, bool, error) {
	var c conds
	c.add("team_id = ?", teamID)
	s.after(&c, "webhooks", after)
	limit = pageSize(limit)
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+webhookColumns+` FROM webhooks`+c.sql()+` ORDER BY created_at DESC, id DESC LIMIT ?`), append(c.args, limit+1)...)
	if err != nil {
		return nil, false, s.errorf("list webhooks: %w", err)
	}
	defer rows.Close()
	out := []webhook.Webhook{}
	for rows.Next() {
		w, err := s.scanWebhook(rows)
		if err != nil {
			return nil, false, s.errorf("list webhooks: %w", err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.errorf("list webhooks: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// CountWebhooks counts a team's webhooks.
func (s *Store) CountWebhooks(ctx context.Context, teamID string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, s.rebind(`SELECT COUNT(*) FROM webhooks WHERE team_id = ?`), teamID).Scan(&n); err != nil {
		return 0, s.errorf("count webhooks: %w", err)
	}
	return n, nil
}

// UpdateWebhook applies p.
func (s *Store) UpdateWebhook(ctx context.Context, id string, p webhook.Patch, at time.Time) (webhook.Webhook, error) {
	var out webhook.Webhook
	err := s.whTx(ctx, "update webhook", func(tx *sql.Tx) error {
		sets := []string{"updated_at = ?"}
		args := []any{s.timeValue(at)}
		set := func(col string, v any) { sets, args = append(sets, col+" = ?"), append(args, v) }
		if p.URL != nil {
			set("url", *p.URL)
		}
		if p.Description != nil {
			set("description", *p.Description)
		}
		if p.Events != nil {
			set("events", eventsJSON(p.Events))
		}
		if p.Enabled != nil {
			set("enabled", *p.Enabled)
			if *p.Enabled {
				set("disabled_reason", "")
				set("disabled_at", nil)
				set("disabled_by", "")
			} else {
				set("disabled_reason", p.DisabledReason)
				sets = append(sets, "disabled_at = COALESCE(disabled_at, ?)")
				args = append(args, s.timeValue(at))
			}
		}
		if p.ResetFailures {
			set("consecutive_failures", 0)
			set("failing_since", nil)
		}
		res, err := tx.ExecContext(ctx, s.rebind(`UPDATE webhooks SET `+strings.Join(sets, ", ")+` WHERE id = ?`), append(args, id)...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return whNotFound("webhook", id)
		}
		if p.Events != nil {
			if err := s.subscribe(ctx, tx, id, p.Events); err != nil {
				return err
			}
		}
		out, err = s.getWebhook(ctx, tx, id)
		return err
	})
	return out, err
}

// RotateWebhookSecret sets a webhook's secrets.
func (s *Store) RotateWebhookSecret(ctx context.Context, id, secret, previous string, previousUntil *time.Time, at time.Time) (webhook.Webhook, error) {
	var out webhook.Webhook
	err := s.whTx(ctx, "rotate webhook secret", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rebind(`UPDATE webhooks SET secret = ?, previous_secret = ?, previous_secret_until = ?, updated_at = ? WHERE id = ?`),
			secret, previous, s.timePtrValue(previousUntil), s.timeValue(at), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return whNotFound("webhook", id)
		}
		out, err = s.getWebhook(ctx, tx, id)
		return err
	})
	return out, err
}

// DeleteWebhook deletes a webhook, its subscriptions, deliveries and
// their attempts.
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	return s.whTx(ctx, "delete webhook", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM webhooks WHERE id = ?`), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return whNotFound("webhook", id)
		}
		for _, q := range []string{
			`DELETE FROM webhook_subscriptions WHERE webhook_id = ?`,
			`DELETE FROM webhook_delivery_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = ?)`,
			`DELETE FROM webhook_deliveries WHERE webhook_id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, s.rebind(q), id); err != nil {
				return err
			}
		}
		return nil
	})
}

// DisableWebhook disables an enabled webhook.
func (s *Store) DisableWebhook(ctx context.Context, id, reason, by string, at time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE webhooks SET enabled = FALSE, disabled_reason = ?, disabled_at = ?, disabled_by = ?, updated_at = ?
		WHERE id = ? AND enabled = TRUE`), reason, s.timeValue(at), by, s.timeValue(at), id)
	if err != nil {
		return false, s.errorf("disable webhook: %w", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

const deliveryColumns = `id, webhook_id, team_id, event_id, event_type, message_id, status, dispatched, attempts,
	last_attempt_at, last_status, last_error, next_attempt_at, redelivery_of, created_at, ended_at`

func (s *Store) scanDelivery(sc scanner) (webhook.Delivery, error) {
	var d webhook.Delivery
	var last, next, created, ended TimeScanner
	if err := sc.Scan(&d.ID, &d.WebhookID, &d.TeamID, &d.EventID, &d.EventType, &d.MessageID, &d.Status, &d.Dispatched, &d.Attempts,
		&last, &d.LastStatus, &d.LastError, &next, &d.RedeliveryOf, &created, &ended); err != nil {
		return d, err
	}
	var err error
	if d.LastAttemptAt, err = s.timeOf(last); err != nil {
		return d, err
	}
	if d.NextAttemptAt, err = s.timeOf(next); err != nil {
		return d, err
	}
	if d.EndedAt, err = s.timeOf(ended); err != nil {
		return d, err
	}
	d.CreatedAt, err = s.requiredTime(created)
	return d, err
}

// CreateWebhookDelivery stores a delivery.
func (s *Store) CreateWebhookDelivery(ctx context.Context, d webhook.Delivery) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO webhook_deliveries
		(id, webhook_id, team_id, event_id, event_type, message_id, status, dispatched, redelivery_of, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		d.ID, d.WebhookID, d.TeamID, d.EventID, d.EventType, d.MessageID, d.Status, d.Dispatched, d.RedeliveryOf, s.timeValue(d.CreatedAt))
	if err != nil {
		return s.errorf("create webhook delivery: %w", s.classify(err))
	}
	return nil
}

// GetWebhookDelivery returns a delivery.
func (s *Store) GetWebhookDelivery(ctx context.Context, id string) (webhook.Delivery, error) {
	d, err := s.scanDelivery(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, whNotFound("delivery", id)
	}
	if err != nil {
		return d, s.errorf("get webhook delivery: %w", err)
	}
	return d, nil
}

// ListWebhookDeliveries returns a webhook's deliveries, newest first.
func (s *Store) ListWebhookDeliveries(ctx context.Context, f webhook.DeliveryFilter) ([]webhook.Delivery, bool, error) {
	var c conds
	c.add("webhook_id = ?", f.WebhookID)
	c.equal([2]string{"status", f.Status})
	s.after(&c, "webhook_deliveries", f.After)
	limit := pageSize(f.Limit)
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+deliveryColumns+` FROM webhook_deliveries`+c.sql()+` ORDER BY created_at DESC, id DESC LIMIT ?`), append(c.args, limit+1)...)
	if err != nil {
		return nil, false, s.errorf("list webhook deliveries: %w", err)
	}
	defer rows.Close()
	out := []webhook.Delivery{}
	for rows.Next() {
		d, err := s.scanDelivery(rows)
		if err != nil {
			return nil, false, s.errorf("list webhook deliveries: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.errorf("list webhook deliveries: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// WebhookDeliveryAttempts returns a delivery's attempts in order.
func (s *Store) WebhookDeliveryAttempts(ctx context.Context, deliveryID string) ([]webhook.Attempt, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT delivery_id, attempt, started_at, duration_us, status_code, response_body, error
		FROM webhook_delivery_attempts WHERE delivery_id = ? ORDER BY attempt`), deliveryID)
	if err != nil {
		return nil, s.errorf("webhook delivery attempts: %w", err)
	}
	defer rows.Close()
	out := []webhook.Attempt{}
	for rows.Next() {
		var a webhook.Attempt
		var started TimeScanner
		var us int64
		if err := rows.Scan(&a.DeliveryID, &a.N, &started, &us, &a.StatusCode, &a.ResponseBody, &a.Error); err != nil {
			return nil, s.errorf("webhook delivery attempts: %w", err)
		}
		if a.StartedAt, err = s.requiredTime(started); err != nil {
			return nil, err
		}
		a.Duration = time.Duration(us) * time.Microsecond
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("webhook delivery attempts: %w", err)
	}
	return out, nil
}

// UndispatchedWebhookDeliveries returns deliveries whose workflow was not
// started, oldest first (the partial index holds only those).
func (s *Store) UndispatchedWebhookDeliveries(ctx context.Context, limit int) ([]webhook.Delivery, error) {
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE dispatched = FALSE ORDER BY created_at, id LIMIT ?`), limit)
	if err != nil {
		return nil, s.errorf("undispatched webhook deliveries: %w", err)
	}
	defer rows.Close()
	var out []webhook.Delivery
	for rows.Next() {
		d, err := s.scanDelivery(rows)
		if err != nil {
			return nil, s.errorf("undispatched webhook deliveries: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("undispatched webhook deliveries: %w", err)
	}
	return out, nil
}

// MarkWebhookDeliveriesDispatched marks deliveries started.
func (s *Store) MarkWebhookDeliveriesDispatched(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	var c conds
	c.in("id IN", ids)
	if _, err := s.db.ExecContext(ctx, s.rebind(`UPDATE webhook_deliveries SET dispatched = TRUE`+c.sql()), c.args...); err != nil {
		return s.errorf("mark webhook deliveries dispatched: %w", err)
	}
	return nil
}

// RecordWebhookAttempt stores an attempt and its consequences in one
// transaction.
func (s *Store) RecordWebhookAttempt(ctx context.Context, a webhook.Attempt, u webhook.AttemptUpdate) error {
	return s.whTx(ctx, "record webhook attempt", func(tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT 1 FROM webhook_deliveries WHERE id = ?`), a.DeliveryID).Scan(&exists); errors.Is(err, sql.ErrNoRows) {
			return nil // deleted with its webhook meanwhile: nothing to record
		} else if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO webhook_delivery_attempts
			(delivery_id, attempt, started_at, duration_us, status_code, response_body, error) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (delivery_id, attempt) DO UPDATE SET started_at = excluded.started_at, duration_us = excluded.duration_us,
			status_code = excluded.status_code, response_body = excluded.response_body, error = excluded.error`),
			a.DeliveryID, a.N, s.timeValue(a.StartedAt), a.Duration.Microseconds(), a.StatusCode, a.ResponseBody, a.Error); err != nil {
			return err
		}
		var ended any
		if webhook.Terminal(u.Status) {
			ended = s.timeValue(a.StartedAt.Add(a.Duration))
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE webhook_deliveries SET status = ?, attempts = ?, last_attempt_at = ?, last_status = ?, last_error = ?,
			next_attempt_at = ?, ended_at = ? WHERE id = ? AND status IN (?, ?)`),
			u.Status, a.N, s.timeValue(a.StartedAt), a.StatusCode, a.Error, s.timePtrValue(u.NextAttemptAt), ended, a.DeliveryID,
			webhook.StatusPending, webhook.StatusDelivering); err != nil {
			return err
		}
		var err error
		if u.Status == webhook.StatusSucceeded {
			_, err = tx.ExecContext(ctx, s.rebind(`UPDATE webhooks SET consecutive_failures = 0, failing_since = NULL WHERE id = ?`), u.WebhookID)
		} else {
			_, err = tx.ExecContext(ctx, s.rebind(`UPDATE webhooks SET failing_since = COALESCE(failing_since, ?) WHERE id = ?`), s.timeValue(a.StartedAt), u.WebhookID)
		}
		return err
	})
}

// endDelivery moves a delivery that has not ended to failed; reason, when
// set, becomes its last error.
func (s *Store) endDelivery(ctx context.Context, tx *sql.Tx, id, reason string, at time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, s.rebind(`UPDATE webhook_deliveries SET status = ?, ended_at = ?, next_attempt_at = NULL,
		last_error = CASE WHEN ? = '' THEN last_error ELSE ? END WHERE id = ? AND status IN (?, ?)`),
		webhook.StatusFailed, s.timeValue(at), reason, reason, id, webhook.StatusPending, webhook.StatusDelivering)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// EndWebhookDelivery ends a delivery as failed without counting it.
func (s *Store) EndWebhookDelivery(ctx context.Context, id, reason string, at time.Time) (bool, error) {
	var moved bool
	err := s.whTx(ctx, "end webhook delivery", func(tx *sql.Tx) error {
		var err error
		moved, err = s.endDelivery(ctx, tx, id, reason, at)
		return err
	})
	return moved, err
}

// FailWebhookDelivery ends a delivery as failed and counts it against its
// webhook.
func (s *Store) FailWebhookDelivery(ctx context.Context, id, reason string, at time.Time) (webhook.Webhook, bool, error) {
	var w webhook.Webhook
	var moved bool
	err := s.whTx(ctx, "fail webhook delivery", func(tx *sql.Tx) error {
		var whID string
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT webhook_id FROM webhook_deliveries WHERE id = ?`), id).Scan(&whID); errors.Is(err, sql.ErrNoRows) {
			return whNotFound("delivery", id)
		} else if err != nil {
			return err
		}
		var err error
		if moved, err = s.endDelivery(ctx, tx, id, reason, at); err != nil {
			return err
		}
		if moved {
			if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE webhooks SET consecutive_failures = consecutive_failures + 1 WHERE id = ?`), whID); err != nil {
				return err
			}
		}
		w, err = s.getWebhook(ctx, tx, whID)
		return err
	})
	return w, moved, err
}

// PurgeWebhookDeliveries deletes the deliveries that ended before before,
// with their attempts, and returns how many.
func (s *Store) PurgeWebhookDeliveries(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.whTx(ctx, "purge webhook deliveries", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM webhook_delivery_attempts WHERE delivery_id IN
			(SELECT id FROM webhook_deliveries WHERE ended_at < ?)`), s.timeValue(before)); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM webhook_deliveries WHERE ended_at < ?`), s.timeValue(before))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n, err
}
