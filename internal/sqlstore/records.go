package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/records"
)

// The request_logs table: the store side of records.Store. A missing
// record or checkpoint is records.ErrNotFound wrapped with a message a
// client may read (apierr.Wrapf), without the s.errorf prefix: it is an
// answer about the data, not a storage failure, and the backend's name
// must not reach clients.

var _ records.Store = (*Store)(nil)

const recordColumns = `seq, id, time, team_id, key_id, method, route, model, backend, replica, status, error_code,
	latency_ms, ttft_ms, prompt_tokens, completion_tokens, client_ip, user_name, user_id, prompt, output, prev_hash, hash`

// recordFields is the number of columns an append writes (all but seq);
// recordPlaceholders is one row of them.
const recordFields = 22

var recordPlaceholders = "(" + strings.Repeat("?, ", recordFields-1) + "?)"

// AppendRecords chains and stores records in one transaction. The chain
// head is read under the dialect's chain lock (PostgreSQL: a transaction
// advisory lock, so servers sharing the database append one at a time;
// SQLite: its write transactions are serialized already).
func (s *Store) AppendRecords(ctx context.Context, rs []records.Record) error {
	if len(rs) == 0 {
		return nil
	}
	if s.d.LocalFile {
		ctx = context.WithoutCancel(ctx)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("append records: %w", err)
	}
	defer tx.Rollback()
	if s.d.ChainLock != "" {
		if _, err := tx.ExecContext(ctx, s.d.ChainLock); err != nil {
			return s.errorf("append records: locking the chain: %w", err)
		}
	}
	prev := ""
	err = tx.QueryRowContext(ctx, `SELECT hash FROM request_logs ORDER BY seq DESC LIMIT 1`).Scan(&prev)
	if errors.Is(err, sql.ErrNoRows) {
		// Empty: the chain goes on from the last record retention removed.
		err = tx.QueryRowContext(ctx, `SELECT hash FROM request_log_anchor WHERE id = 1`).Scan(&prev)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
	}
	if err != nil {
		return s.errorf("append records: reading the chain head: %w", err)
	}
	// One statement for the whole batch: a statement per row cost most of
	// the writer's CPU, which a busy server's requests share (bench/gateway,
	// bench/README.md "Where the tail comes from").
	var q strings.Builder
	q.WriteString(`INSERT INTO request_logs (` + strings.TrimPrefix(recordColumns, "seq, ") + `) VALUES `)
	args := make([]any, 0, len(rs)*recordFields)
	for i := range rs {
		r := &rs[i]
		r.Normalize()
		r.PrevHash = prev
		r.Hash = r.ComputeHash(prev)
		prev = r.Hash
		var ttft any
		if r.TTFTMs != nil {
			ttft = *r.TTFTMs
		}
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString(recordPlaceholders)
		args = append(args, r.ID, s.timeValue(r.Time), r.TeamID, r.KeyID, r.Method, r.Route, r.Model, r.Backend, r.Replica,
			r.Status, r.ErrorCode, r.LatencyMs, ttft, r.PromptTokens, r.CompletionTokens, r.ClientIP, r.User, r.UserID, r.Prompt, r.Output, r.PrevHash, r.Hash)
	}
	q.WriteString(` RETURNING seq`)
	rows, err := tx.QueryContext(ctx, s.rebind(q.String()), args...)
	if err != nil {
		return s.errorf("append records: %w", err)
	}
	seqs := make([]int64, 0, len(rs))
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			return s.errorf("append records: %w", err)
		}
		seqs = append(seqs, seq)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.errorf("append records: %w", err)
	}
	if len(seqs) != len(rs) {
		return s.errorf("append records: %d rows stored for %d records", len(seqs), len(rs))
	}
	// The rows take their numbers in the order they are listed (under the
	// chain lock nothing else inserts between them); RETURNING need not
	// give them back in that order.
	slices.Sort(seqs)
	for i := range rs {
		rs[i].Seq = seqs[i]
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("append records: %w", err)
	}
	return nil
}

func (s *Store) scanRecord(sc interface{ Scan(...any) error }) (records.Record, error) {
	var r records.Record
	var t TimeScanner
	var ttft sql.NullFloat64
	if err := sc.Scan(&r.Seq, &r.ID, &t, &r.TeamID, &r.KeyID, &r.Method, &r.Route, &r.Model, &r.Backend, &r.Replica, &r.Status, &r.ErrorCode,
		&r.LatencyMs, &ttft, &r.PromptTokens, &r.CompletionTokens, &r.ClientIP, &r.User, &r.UserID, &r.Prompt, &r.Output, &r.PrevHash, &r.Hash); err != nil {
		return r, err
	}
	if ttft.Valid {
		r.TTFTMs = &ttft.Float64
	}
	var err error
	r.Time, err = s.requiredTime(t)
	return r, err
}

// ListRecords returns records matching f, newest first. Errors:
// records.ErrNotFound for a cursor that is not one of the team's records.
func (s *Store) ListRecords(ctx context.Context, f records.Filter) ([]records.Record, bool, error) {
	var c conds
	if !f.AllTeams {
		c.add("team_id = ?", f.TeamID)
	}
	if f.After != "" {
		q := `SELECT seq FROM request_logs WHERE id = ?`
		cargs := []any{f.After}
		if !f.AllTeams {
			q, cargs = q+` AND team_id = ?`, append(cargs, f.TeamID)
		}
		var seq int64
		err := s.db.QueryRowContext(ctx, s.rebind(q+` ORDER BY seq DESC LIMIT 1`), cargs...).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, apierr.Wrapf(records.ErrNotFound, "no record %q", f.After)
		}
		if err != nil {
			return nil, false, s.errorf("list records: %w", err)
		}
		c.add("seq < ?", seq)
	}
	if f.BeforeSeq > 0 {
		c.add("seq < ?", f.BeforeSeq)
	}
	c.equal([2]string{"model", f.Model}, [2]string{"key_id", f.KeyID}, [2]string{"route", f.Route}, [2]string{"user_name", f.User})
	switch {
	case f.Status >= 100:
		c.add("status = ?", f.Status)
	case f.Status > 0:
		c.add("status >= ? AND status < ?", f.Status*100, f.Status*100+100)
	}
	c.within(s, "time", f.Since, f.Until)
	limit := pageSize(f.Limit)
	q := `SELECT ` + recordColumns + ` FROM request_logs` + c.sql()
	rows, err := s.db.QueryContext(ctx, s.rebind(q+` ORDER BY seq DESC LIMIT ?`), append(c.args, limit+1)...)
	if err != nil {
		return nil, false, s.errorf("list records: %w", err)
	}
	defer rows.Close()
	out := []records.Record{}
	for rows.Next() {
		r, err := s.scanRecord(rows)
		if err != nil {
			return nil, false, s.errorf("list records: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.errorf("list records: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// GetRecord returns the newest record with the request id id, of the team
// (of any team with all). Errors: records.ErrNotFound.
func (s *Store) GetRecord(ctx context.Context, teamID, id string, all bool) (records.Record, error) {
	q, args := `SELECT `+recordColumns+` FROM request_logs WHERE id = ?`, []any{id}
	if !all {
		q, args = q+` AND team_id = ?`, append(args, teamID)
	}
	r, err := s.scanRecord(s.db.QueryRowContext(ctx, s.rebind(q+` ORDER BY seq DESC LIMIT 1`), args...))
	if errors.Is(err, sql.ErrNoRows) {
		return r, apierr.Wrapf(records.ErrNotFound, "no record %q", id)
	}
	if err != nil {
		return r, s.errorf("get record: %w", err)
	}
	return r, nil
}

// ChainRecords calls fn with every record from seq from on, in chain
// order, reading in pages so a long chain is not held in memory.
func (s *Store) ChainRecords(ctx context.Context, from int64, fn func(records.Record) bool) error {
	const page = 1000
	for {
		rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+recordColumns+` FROM request_logs WHERE seq >= ? ORDER BY seq LIMIT ?`), from, page)
		if err != nil {
			return s.errorf("chain records: %w", err)
		}
		n := 0
		stop := false
		for rows.Next() {
			r, err := s.scanRecord(rows)
			if err != nil {
				rows.Close()
				return s.errorf("chain records: %w", err)
			}
			n++
			from = r.Seq + 1
			if !fn(r) {
				stop = true
				break
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return s.errorf("chain records: %w", err)
		}
		if stop || n < page {
			return nil
		}
	}
}

// Usage sums the records matching f's team and time range by group (gap
// markers, which are no calls, aside).
func (s *Store) Usage(ctx context.Context, f records.Filter, groupBy string) ([]records.UsageRow, error) {
	col := map[string]string{records.ByModel: "model", records.ByKey: "key_id", records.ByTeam: "team_id", records.ByUser: "user_name", records.ByDay: s.d.DayExpr}[groupBy]
	if col == "" {
		return nil, s.errorf("usage: unknown grouping %q", groupBy)
	}
	var c conds
	if !f.AllTeams {
		c.add("team_id = ?", f.TeamID)
	}
	// A gap marker is no call (records.GapRoute).
	c.add("route <> ?", records.GapRoute)
	c.within(s, "time", f.Since, f.Until)
	q := `SELECT ` + col + `, COUNT(*), SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), SUM(prompt_tokens), SUM(completion_tokens) FROM request_logs` +
		c.sql() + ` GROUP BY 1 ORDER BY SUM(prompt_tokens) + SUM(completion_tokens) DESC, 1`
	rows, err := s.db.QueryContext(ctx, s.rebind(q), c.args...)
	if err != nil {
		return nil, s.errorf("usage: %w", err)
	}
	defer rows.Close()
	out := []records.UsageRow{}
	for rows.Next() {
		var u records.UsageRow
		if err := rows.Scan(&u.Group, &u.Requests, &u.Errors, &u.PromptTokens, &u.CompletionTokens); err != nil {
			return nil, s.errorf("usage: %w", err)
		}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("usage: %w", err)
	}
	return out, nil
}

// Purge removes the records older than before from the start of the
// chain, and moves the anchor to the last one removed, in one transaction
// under the chain lock.
func (s *Store) Purge(ctx context.Context, before time.Time) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, s.errorf("purge records: %w", err)
	}
	defer tx.Rollback()
	if s.d.ChainLock != "" {
		if _, err := tx.ExecContext(ctx, s.d.ChainLock); err != nil {
			return 0, s.errorf("purge records: locking the chain: %w", err)
		}
	}
	// The records to remove are a prefix of the chain: up to the first
	// record that is not old enough.
	var limit sql.NullInt64
	err = tx.QueryRowContext(ctx, s.rebind(`SELECT MIN(seq) FROM request_logs WHERE time >= ?`), s.timeValue(before)).Scan(&limit)
	if err != nil {
		return 0, s.errorf("purge records: %w", err)
	}
	q := `SELECT seq, hash FROM request_logs`
	var args []any
	if limit.Valid {
		q, args = q+` WHERE seq < ?`, append(args, limit.Int64)
	}
	var last int64
	var hash string
	err = tx.QueryRowContext(ctx, s.rebind(q+` ORDER BY seq DESC LIMIT 1`), args...).Scan(&last, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, s.errorf("purge records: %w", err)
	}
	res, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM request_logs WHERE seq <= ?`), last)
	if err != nil {
		return 0, s.errorf("purge records: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO request_log_anchor (id, seq, hash, purged) VALUES (1, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, purged = request_log_anchor.purged + excluded.purged`), last, hash, n); err != nil {
		return 0, s.errorf("purge records: keeping the anchor: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, s.errorf("purge records: %w", err)
	}
	return n, nil
}

// Anchor returns the chain's anchor (zero before any purge).
func (s *Store) Anchor(ctx context.Context) (records.Anchor, error) {
	var a records.Anchor
	err := s.db.QueryRowContext(ctx, `SELECT seq, hash, purged FROM request_log_anchor WHERE id = 1`).Scan(&a.Seq, &a.Hash, &a.Purged)
	if errors.Is(err, sql.ErrNoRows) {
		return records.Anchor{}, nil
	}
	if err != nil {
		return a, s.errorf("anchor: %w", err)
	}
	return a, nil
}

// AddCheckpoint implements records.CheckpointStore.
func (s *Store) AddCheckpoint(ctx context.Context, c *records.StoredCheckpoint) error {
	err := s.db.QueryRowContext(ctx, s.rebind(`INSERT INTO log_checkpoints (created_at, first_seq, last_seq, size, root)
		VALUES (?, ?, ?, ?, ?) RETURNING id`), s.timeValue(c.CreatedAt), c.FirstSeq, c.LastSeq, int64(c.Size), c.Root).Scan(&c.ID)
	if err != nil {
		return s.errorf("add checkpoint: %w", err)
	}
	return nil
}

const checkpointColumns = `id, created_at, first_seq, last_seq, size, root`

func (s *Store) scanCheckpoint(sc interface{ Scan(...any) error }) (records.StoredCheckpoint, error) {
	var c records.StoredCheckpoint
	var t TimeScanner
	var size int64
	if err := sc.Scan(&c.ID, &t, &c.FirstSeq, &c.LastSeq, &size, &c.Root); err != nil {
		return c, err
	}
	c.Size = uint64(size)
	var err error
	c.CreatedAt, err = s.requiredTime(t)
	return c, err
}

// ListCheckpoints implements records.CheckpointStore.
func (s *Store) ListCheckpoints(ctx context.Context, limit int) ([]records.StoredCheckpoint, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+checkpointColumns+` FROM log_checkpoints ORDER BY id DESC LIMIT ?`), limit)
	if err != nil {
		return nil, s.errorf("list checkpoints: %w", err)
	}
	defer rows.Close()
	var out []records.StoredCheckpoint
	for rows.Next() {
		c, err := s.scanCheckpoint(rows)
		if err != nil {
			return nil, s.errorf("list checkpoints: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// GetCheckpoint implements records.CheckpointStore.
func (s *Store) GetCheckpoint(ctx context.Context, id int64) (records.StoredCheckpoint, error) {
	c, err := s.scanCheckpoint(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+checkpointColumns+` FROM log_checkpoints WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, apierr.Wrapf(records.ErrNotFound, "no checkpoint %d", id)
	}
	if err != nil {
		return c, s.errorf("get checkpoint: %w", err)
	}
	return c, nil
}
