package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/policy"
)

// The policies and policy_decisions tables: the store side of
// policy.Store.

var _ policy.Store = (*Store)(nil)

// CreatePolicy stores p. Errors: auth.ErrConflict (policy.ErrConflict)
// for a name or id already taken, worded for the client.
func (s *Store) CreatePolicy(ctx context.Context, p policy.Policy) error {
	body, err := policyBody(p)
	if err != nil {
		return s.errorf("create policy: %w", err)
	}
	_, err = s.db.ExecContext(ctx, s.rebind(`INSERT INTO policies (id, name, body, scope, scope_id, enabled, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), p.ID, p.Name, body, p.Scope, p.ScopeID, p.Enabled,
		s.timeValue(time.Unix(p.CreatedAt, 0)), s.timeValue(time.Unix(p.UpdatedAt, 0)))
	if err != nil {
		return s.errorf("create policy: %w", policyConflict(s.classify(err)))
	}
	return nil
}

// policyConflict words a unique violation (policy.ErrConflict) as the
// client sees it: a policy's id is generated, so what is taken is its
// name. Other errors pass as they are.
func policyConflict(err error) error {
	if !errors.Is(err, policy.ErrConflict) {
		return err
	}
	return &apierr.Error{Code: apierr.Conflict, Message: "a policy with this name exists", Err: err}
}

// policyBody is the JSON kept in the body column.
func policyBody(p policy.Policy) (string, error) {
	p.Object = policy.ObjectPolicy
	b, err := json.Marshal(p)
	return string(b), err
}

const policyColumns = `id, name, body, scope, scope_id, enabled, created_at, updated_at`

// scanPolicy decodes a row of policyColumns. The columns, not the body,
// are authoritative for what they hold.
func (s *Store) scanPolicy(sc scanner) (policy.Policy, error) {
	var p policy.Policy
	var id, name, body, scope, scopeID string
	var enabled bool
	var created, updated TimeScanner
	if err := sc.Scan(&id, &name, &body, &scope, &scopeID, &enabled, &created, &updated); err != nil {
		return p, err
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return p, s.errorf("policy %q: bad stored body: %w", id, err)
	}
	p.ID, p.Object, p.Name, p.Scope, p.ScopeID, p.Enabled = id, policy.ObjectPolicy, name, scope, scopeID, enabled
	c, err := s.requiredTime(created)
	if err != nil {
		return p, err
	}
	u, err := s.requiredTime(updated)
	if err != nil {
		return p, err
	}
	p.CreatedAt, p.UpdatedAt = c.Unix(), u.Unix()
	if p.Rules == nil {
		p.Rules = []policy.Rule{}
	}
	return p, nil
}

// GetPolicy returns policy id. Errors: policy.ErrNotFound (whose own
// message, "no such policy", is the client's).
func (s *Store) GetPolicy(ctx context.Context, id string) (policy.Policy, error) {
	p, err := s.scanPolicy(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+policyColumns+` FROM policies WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, s.errorf("policy %q: %w", id, policy.ErrNotFound)
	}
	if err != nil {
		return p, s.errorf("get policy: %w", err)
	}
	return p, nil
}

// ListPolicies returns every policy, oldest first, then by name.
func (s *Store) ListPolicies(ctx context.Context) ([]policy.Policy, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+policyColumns+` FROM policies ORDER BY created_at, name`)
	if err != nil {
		return nil, s.errorf("list policies: %w", err)
	}
	defer rows.Close()
	out := []policy.Policy{}
	for rows.Next() {
		p, err := s.scanPolicy(rows)
		if err != nil {
			return nil, s.errorf("list policies: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("list policies: %w", err)
	}
	return out, nil
}

// UpdatePolicy replaces policy p.ID, keeping its creation time. Errors:
// policy.ErrNotFound; auth.ErrConflict for a name another policy has.
func (s *Store) UpdatePolicy(ctx context.Context, p policy.Policy) error {
	body, err := policyBody(p)
	if err != nil {
		return s.errorf("update policy: %w", err)
	}
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE policies SET name = ?, body = ?, scope = ?, scope_id = ?, enabled = ?, updated_at = ?
		WHERE id = ?`), p.Name, body, p.Scope, p.ScopeID, p.Enabled, s.timeValue(time.Unix(p.UpdatedAt, 0)), p.ID)
	if err != nil {
		return s.errorf("update policy: %w", policyConflict(s.classify(err)))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.errorf("policy %q: %w", p.ID, policy.ErrNotFound)
	}
	return nil
}

// DeletePolicy removes policy id (its decisions stay). Errors:
// policy.ErrNotFound.
func (s *Store) DeletePolicy(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM policies WHERE id = ?`), id)
	if err != nil {
		return s.errorf("delete policy: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.errorf("policy %q: %w", id, policy.ErrNotFound)
	}
	return nil
}

const decisionColumns = `id, created_at, request_id, team_id, key_id, model, route, policy_id, policy_name, rule, stage, action, reason, spans`

// AppendDecisions stores ds in one transaction. Errors: auth.ErrConflict
// for an id already stored.
func (s *Store) AppendDecisions(ctx context.Context, ds []policy.Decision) error {
	if len(ds) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("append decisions: %w", err)
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, s.rebind(`INSERT INTO policy_decisions (`+decisionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`))
	if err != nil {
		return s.errorf("append decisions: %w", err)
	}
	defer stmt.Close()
	for _, d := range ds {
		spans := d.Spans
		if spans == nil {
			spans = []policy.Span{}
		}
		js, err := json.Marshal(spans)
		if err != nil {
			return s.errorf("append decisions: %w", err)
		}
		if _, err := stmt.ExecContext(ctx, d.ID, s.timeValue(time.Unix(d.CreatedAt, 0)), d.RequestID, d.TeamID, d.KeyID, d.Model, d.Route,
			d.PolicyID, d.Policy, d.Rule, d.Stage, d.Action, d.Reason, string(js)); err != nil {
			return s.errorf("append decisions: %w", s.classify(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("append decisions: %w", err)
	}
	return nil
}

func (s *Store) scanDecision(sc scanner) (policy.Decision, error) {
	d := policy.Decision{Object: policy.ObjectDecision}
	var created TimeScanner
	var spans string
	if err := sc.Scan(&d.ID, &created, &d.RequestID, &d.TeamID, &d.KeyID, &d.Model, &d.Route, &d.PolicyID, &d.Policy, &d.Rule,
		&d.Stage, &d.Action, &d.Reason, &spans); err != nil {
		return d, err
	}
	t, err := s.requiredTime(created)
	if err != nil {
		return d, err
	}
	d.CreatedAt = t.Unix()
	if err := json.Unmarshal([]byte(spans), &d.Spans); err != nil {
		return d, s.errorf("decision %q: bad stored spans: %w", d.ID, err)
	}
	if d.Spans == nil {
		d.Spans = []policy.Span{}
	}
	return d, nil
}

// ListDecisions returns the decisions matching f, newest first (by time,
// then id), and whether more follow. Errors: policy.ErrNotFound for a
// cursor that is not one of the decisions f can see, inside the 400 that
// names the request's "after" (a bad cursor is the request's fault, not a
// missing resource).
func (s *Store) ListDecisions(ctx context.Context, f policy.DecisionFilter) ([]policy.Decision, bool, error) {
	var c conds
	if !f.AllTeams {
		c.add("team_id = ?", f.TeamID)
	}
	if f.After != "" {
		q, cargs := `SELECT created_at FROM policy_decisions WHERE id = ?`, []any{f.After}
		if !f.AllTeams {
			q, cargs = q+` AND team_id = ?`, append(cargs, f.TeamID)
		}
		var at TimeScanner
		err := s.db.QueryRowContext(ctx, s.rebind(q), cargs...).Scan(&at)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, s.errorf("decision %q: %w", f.After, &apierr.Error{Code: apierr.InvalidRequest, Param: "after",
				Message: "'after' is not a policy decision id in this list", Err: policy.ErrNotFound})
		}
		if err != nil {
			return nil, false, s.errorf("list decisions: %w", err)
		}
		t, err := s.requiredTime(at)
		if err != nil {
			return nil, false, err
		}
		// The cursor's own time value, as stored, keeps the comparison
		// exact in both dialects.
		tv := s.timeValue(t)
		c.add("(created_at < ? OR (created_at = ? AND id < ?))", tv, tv, f.After)
	}
	c.equal([2]string{"policy_id", f.PolicyID}, [2]string{"rule", f.Rule}, [2]string{"action", f.Action},
		[2]string{"key_id", f.KeyID}, [2]string{"request_id", f.RequestID}, [2]string{"model", f.Model})
	c.within(s, "created_at", f.Since, f.Until)
	limit := pageSize(f.Limit)
	q := `SELECT ` + decisionColumns + ` FROM policy_decisions` + c.sql()
	rows, err := s.db.QueryContext(ctx, s.rebind(q+` ORDER BY created_at DESC, id DESC LIMIT ?`), append(c.args, limit+1)...)
	if err != nil {
		return nil, false, s.errorf("list decisions: %w", err)
	}
	defer rows.Close()
	out := []policy.Decision{}
	for rows.Next() {
		d, err := s.scanDecision(rows)
		if err != nil {
			return nil, false, s.errorf("list decisions: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.errorf("list decisions: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// GetDecision returns the team's decision id (any team's with all).
// Errors: policy.ErrNotFound.
func (s *Store) GetDecision(ctx context.Context, teamID, id string, all bool) (policy.Decision, error) {
	q, args := `SELECT `+decisionColumns+` FROM policy_decisions WHERE id = ?`, []any{id}
	if !all {
		q, args = q+` AND team_id = ?`, append(args, teamID)
	}
	d, err := s.scanDecision(s.db.QueryRowContext(ctx, s.rebind(q), args...))
	if errors.Is(err, sql.ErrNoRows) {
		return d, s.errorf("decision %q: %w", id, apierr.Wrapf(policy.ErrNotFound, "no such policy decision"))
	}
	if err != nil {
		return d, s.errorf("get decision: %w", err)
	}
	return d, nil
}

// PurgeDecisions implements policy.Store: it removes the decisions made
// before before and returns how many.
func (s *Store) PurgeDecisions(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.rebind(`DELETE FROM policy_decisions WHERE created_at < ?`), s.timeValue(before))
	if err != nil {
		return 0, s.errorf("purge decisions: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
