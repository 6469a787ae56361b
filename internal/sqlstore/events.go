package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/events"
)

// The events table: the store side of events.Store, the log behind
// GET /v1/events and the webhooks.

var _ events.Store = (*Store)(nil)

const eventColumns = `seq, id, type, team_id, subject, created_at, data`

// AppendEvents implements events.Store: it stores evs in one transaction
// under the dialect's event lock (PostgreSQL: a transaction advisory
// lock, taken before the sequence hands out a number and released after
// the commit is visible, so that numbers become visible in increasing
// order across servers; SQLite: its write transactions are serialized
// already), and sets each stored event's Seq once committed. An event
// whose id is taken is skipped (Seq 0). Errors: an event's data cannot be
// encoded, or the database failed (nothing was stored).
func (s *Store) AppendEvents(ctx context.Context, evs []events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	data := make([][]byte, len(evs))
	for i, ev := range evs {
		d, err := ev.DataJSON()
		if err != nil {
			return s.errorf("append events: %w", err)
		}
		data[i] = d
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("append events: %w", err)
	}
	defer tx.Rollback()
	if s.d.EventLock != "" {
		if _, err := tx.ExecContext(ctx, s.d.EventLock); err != nil {
			return s.errorf("append events: locking the log: %w", err)
		}
	}
	ins, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO events (id, type, team_id, subject, created_at, data)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING seq`))
	if err != nil {
		return s.errorf("append events: %w", err)
	}
	defer ins.Close()
	seqs := make([]int64, len(evs))
	stored := 0
	ob := s.newOutbox(tx)
	for i := range evs {
		if seqs[i], err = s.appendEvent(ctx, tx, ins, ob, evs[i], data[i]); err != nil {
			return s.errorf("append events: %w", err)
		}
		if seqs[i] != 0 {
			stored++
		}
	}
	if stored > 0 && s.d.EventNotify != "" {
		if _, err := tx.ExecContext(ctx, s.d.EventNotify); err != nil {
			return s.errorf("append events: notifying: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("append events: %w", err)
	}
	for i := range evs {
		evs[i].Seq = seqs[i]
	}
	return nil
}

// appendEvent inserts one event in tx (under the event lock) and returns
// its seq, or 0 when its id is taken. What must be stored if and only if
// the event is — the webhook outbox's deliveries of it — is written here,
// after the insert and in the same transaction, so that an event is never
// stored without its deliveries nor a delivery without its event.
func (s *Store) appendEvent(ctx context.Context, tx *sql.Tx, ins *sql.Stmt, ob *outbox, ev events.Event, data []byte) (int64, error) {
	var team any
	if ev.Team != "" {
		team = ev.Team
	}
	var seq int64
	err := ins.QueryRowContext(ctx, ev.ID, ev.Type, team, ev.Subject, s.timeValue(ev.CreatedAt), string(data)).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil // the id is taken: stored already
	}
	if err != nil {
		return 0, err
	}
	// The webhook outbox: one delivery per subscribed webhook (webhooks.go).
	if err := ob.add(ctx, ev); err != nil {
		return 0, err
	}
	return seq, nil
}

func (s *Store) scanEvent(sc scanner) (events.Event, error) {
	ev := events.Event{Object: events.Object}
	var team sql.NullString
	var created TimeScanner
	var data string
	if err := sc.Scan(&ev.Seq, &ev.ID, &ev.Type, &team, &ev.Subject, &created, &data); err != nil {
		return ev, err
	}
	t, err := s.requiredTime(created)
	if err != nil {
		return ev, err
	}
	ev.CreatedAt, ev.Team, ev.Data = t, team.String, json.RawMessage(data)
	return ev, nil
}

// EventsAfter implements events.Store. It reads the log's head first and
// then the page below it: every event up to the head is visible by then
// (see AppendEvents), so a reader may move its position to the head even
// when no event there was its own, and the next read scans only what is
// new.
func (s *Store) EventsAfter(ctx context.Context, f events.Filter) ([]events.Event, int64, error) {
	head, err := s.LastEventSeq(ctx)
	if err != nil {
		return nil, f.After, err
	}
	out := []events.Event{}
	if head <= f.After {
		return out, f.After, nil
	}
	limit := f.Limit
	if limit <= 0 {
		limit = events.PageSize
	}
	var c conds
	c.add("seq > ?", f.After)
	c.add("seq <= ?", head)
	if !f.AllTeams {
		c.add("(team_id = ? OR team_id IS NULL)", f.Team)
	}
	if f.Subject != "" {
		c.add("subject = ?", f.Subject)
	}
	c.in("type IN", f.Types)
	c.in("type NOT IN", f.ExceptTypes)
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+eventColumns+` FROM events`+c.sql()+` ORDER BY seq LIMIT ?`), append(c.args, limit)...)
	if err != nil {
		return nil, f.After, s.errorf("events after: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		ev, err := s.scanEvent(rows)
		if err != nil {
			return nil, f.After, s.errorf("events after: %w", err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, f.After, s.errorf("events after: %w", err)
	}
	if len(out) >= limit {
		return out, out[len(out)-1].Seq, nil
	}
	return out, head, nil
}

// GetEvent implements events.Store. Errors: events.ErrNotFound.
func (s *Store) GetEvent(ctx context.Context, id string) (events.Event, error) {
	ev, err := s.scanEvent(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+eventColumns+` FROM events WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		// Not a storage failure: no s.errorf prefix, whose backend name
		// must not reach clients.
		return ev, apierr.Wrapf(events.ErrNotFound, "no event %q", id)
	}
	if err != nil {
		return ev, s.errorf("get event: %w", err)
	}
	return ev, nil
}

// LastEventSeq implements events.Store.
func (s *Store) LastEventSeq(ctx context.Context) (int64, error) {
	var head int64
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&head); err != nil {
		return 0, s.errorf("last event: %w", err)
	}
	return head, nil
}

// in adds "<op> (?, …)" over vs, when there are some (op is e.g.
// "type IN").
func (c *conds) in(op string, vs []string) {
	if len(vs) == 0 {
		return
	}
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = v
	}
	c.add(op+" ("+strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ")+")", args...)
}
