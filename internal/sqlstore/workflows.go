package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/workflow"
)

// The workflows, workflow_versions, workflow_runs, workflow_run_steps and
// approvals tables: the store side of workflow.Store.

var _ workflow.Store = (*Store)(nil)

// wfNotFound is workflow.ErrNotFound for the what ("workflow", "workflow
// run", "approval") id, in the words the API shows: the store is where a
// missing id is found, and the service words another team's id the same
// way (workflow's notFound), so that the two cannot be told apart.
func wfNotFound(what, id string) error {
	return apierr.Wrapf(workflow.ErrNotFound, "No %s '%s'.", what, id)
}

// CreateWorkflow stores a definition at version 1.
func (s *Store) CreateWorkflow(ctx context.Context, d workflow.Definition) error {
	return s.inTx(ctx, "create workflow", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO workflows (id, team_id, name, description, version, spec, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), d.ID, d.TeamID, d.Name, d.Description, d.Version, string(d.Spec),
			s.timeValue(d.CreatedAt), s.timeValue(d.UpdatedAt)); err != nil {
			return s.classify(err)
		}
		_, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO workflow_versions (workflow_id, version, spec, created_at) VALUES (?, ?, ?, ?)`),
			d.ID, d.Version, string(d.Spec), s.timeValue(d.UpdatedAt))
		return err
	})
}

// inTx runs fn in a transaction.
func (s *Store) inTx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.errorf("%s: %w", what, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		if errors.Is(err, workflow.ErrNotFound) || errors.Is(err, workflow.ErrConflict) {
			return err
		}
		return s.errorf("%s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return s.errorf("%s: %w", what, err)
	}
	return nil
}

const workflowColumns = `id, team_id, name, description, version, spec, created_at, updated_at`

func (s *Store) scanWorkflow(sc scanner) (workflow.Definition, error) {
	var d workflow.Definition
	var spec string
	var created, updated TimeScanner
	if err := sc.Scan(&d.ID, &d.TeamID, &d.Name, &d.Description, &d.Version, &spec, &created, &updated); err != nil {
		return d, err
	}
	d.Spec = json.RawMessage(spec)
	c, err := s.requiredTime(created)
	if err != nil {
		return d, err
	}
	u, err := s.requiredTime(updated)
	if err != nil {
		return d, err
	}
	d.CreatedAt, d.UpdatedAt = c, u
	return d, nil
}

// GetWorkflow returns a definition that is not deleted.
func (s *Store) GetWorkflow(ctx context.Context, id string) (workflow.Definition, error) {
	d, err := s.scanWorkflow(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+workflowColumns+` FROM workflows WHERE id = ? AND deleted_at IS NULL`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, wfNotFound("workflow", id)
	}
	if err != nil {
		return d, s.errorf("get workflow: %w", err)
	}
	return d, nil
}

// ListWorkflows returns a team's definitions, newest first, after the
// cursor id.
func (s *Store) ListWorkflows(ctx context.Context, teamID, after string, limit int) ([]workflow.Definition, bool, error) {
	var c conds
	c.add("team_id = ?", teamID)
	c.add("deleted_at IS NULL")
	s.after(&c, "workflows", after)
	limit = pageSize(limit)
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+workflowColumns+` FROM workflows`+c.sql()+` ORDER BY created_at DESC, id DESC LIMIT ?`), append(c.args, limit+1)...)
	if err != nil {
		return nil, false, s.errorf("list workflows: %w", err)
	}
	defer rows.Close()
	out := []workflow.Definition{}
	for rows.Next() {
		d, err := s.scanWorkflow(rows)
		if err != nil {
			return nil, false, s.errorf("list workflows: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.errorf("list workflows: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// after adds the keyset condition "after the row id" for a listing in
// (created_at DESC, id DESC) order.
func (s *Store) after(c *conds, table, id string) {
	if id == "" {
		return
	}
	c.add(`(created_at < (SELECT created_at FROM `+table+` WHERE id = ?) OR (created_at = (SELECT created_at FROM `+table+` WHERE id = ?) AND id < ?))`, id, id, id)
}

// UpdateWorkflow stores d as the next version.
func (s *Store) UpdateWorkflow(ctx context.Context, d workflow.Definition) error {
	return s.inTx(ctx, "update workflow", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rebind(`UPDATE workflows SET name = ?, description = ?, version = ?, spec = ?, updated_at = ?
			WHERE id = ? AND version = ? AND deleted_at IS NULL`), d.Name, d.Description, d.Version, string(d.Spec), s.timeValue(d.UpdatedAt), d.ID, d.Version-1)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// Another update (or a delete) came first.
			return apierr.Wrapf(workflow.ErrConflict, "The workflow changed meanwhile; read it again.")
		}
		_, err = tx.ExecContext(ctx, s.rebind(`INSERT INTO workflow_versions (workflow_id, version, spec, created_at) VALUES (?, ?, ?, ?)`),
			d.ID, d.Version, string(d.Spec), s.timeValue(d.UpdatedAt))
		return err
	})
}

// DeleteWorkflow marks a definition deleted; its runs stay.
func (s *Store) DeleteWorkflow(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE workflows SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL`), s.timeValue(time.Now()), id)
	if err != nil {
		return s.errorf("delete workflow: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return wfNotFound("workflow", id)
	}
	return nil
}

// CreateRun stores a run.
func (s *Store) CreateRun(ctx context.Context, r workflow.Run) error {
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO workflow_runs (id, team_id, workflow_id, version, key_id, status, input, spec, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`), r.ID, r.TeamID, r.WorkflowID, r.Version, r.KeyID, r.Status, string(r.Input), string(r.Spec), s.timeValue(r.CreatedAt))
	if err != nil {
		return s.errorf("create run: %w", s.classify(err))
	}
	return nil
}

const runColumns = `id, team_id, workflow_id, version, key_id, status, input, output, error, spec, cancel_requested, created_at, started_at, ended_at`

func (s *Store) scanRun(sc scanner) (workflow.Run, error) {
	var r workflow.Run
	var input, spec string
	var output, rerr sql.NullString
	var created, started, ended TimeScanner
	if err := sc.Scan(&r.ID, &r.TeamID, &r.WorkflowID, &r.Version, &r.KeyID, &r.Status, &input, &output, &rerr, &spec, &r.Cancellation, &created, &started, &ended); err != nil {
		return r, err
	}
	r.Input, r.Spec = json.RawMessage(input), json.RawMessage(spec)
	if output.Valid {
		r.Output = json.RawMessage(output.String)
	}
	if rerr.Valid {
		r.Error = &workflow.RunError{}
		json.Unmarshal([]byte(rerr.String), r.Error)
	}
	c, err := s.requiredTime(created)
	if err != nil {
		return r, err
	}
	r.CreatedAt = c
	if r.StartedAt, err = s.timeOf(started); err != nil {
		return r, err
	}
	if r.EndedAt, err = s.timeOf(ended); err != nil {
		return r, err
	}
	return r, nil
}

// GetRun returns a run with its steps in order.
func (s *Store) GetRun(ctx context.Context, id string) (workflow.Run, error) {
	r, err := s.scanRun(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+runColumns+` FROM workflow_runs WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, wfNotFound("workflow run", id)
	}
	if err != nil {
		return r, s.errorf("get run: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT run_id, step_id, seq, type, status, output, error, attempts, started_at, ended_at
		FROM workflow_run_steps WHERE run_id = ? ORDER BY seq`), id)
	if err != nil {
		return r, s.errorf("get run: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st workflow.StepState
		var output, serr sql.NullString
		var started, ended TimeScanner
		if err := rows.Scan(&st.RunID, &st.StepID, &st.Seq, &st.Type, &st.Status, &output, &serr, &st.Attempts, &started, &ended); err != nil {
			return r, s.errorf("get run: %w", err)
		}
		if output.Valid {
			st.Output = json.RawMessage(output.String)
		}
		if serr.Valid {
			st.Error = &workflow.RunError{}
			json.Unmarshal([]byte(serr.String), st.Error)
		}
		if st.StartedAt, err = s.timeOf(started); err != nil {
			return r, err
		}
		if st.EndedAt, err = s.timeOf(ended); err != nil {
			return r, err
		}
		if st.Status == workflow.StepRunning || st.Status == workflow.StepWaitingApproval {
			r.CurrentStep = st.StepID
		}
		r.Steps = append(r.Steps, st)
	}
	return r, rows.Err()
}

// ListRuns returns runs, newest first.
func (s *Store) ListRuns(ctx context.Context, f workflow.RunFilter) ([]workflow.Run, bool, error) {
	var c conds
	c.equal([2]string{"team_id", f.TeamID}, [2]string{"workflow_id", f.WorkflowID}, [2]string{"status", f.Status})
	s.after(&c, "workflow_runs", f.After)
	limit := pageSize(f.Limit)
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+runColumns+` FROM workflow_runs`+c.sql()+` ORDER BY created_at DESC, id DESC LIMIT ?`), append(c.args, limit+1)...)
	if err != nil {
		return nil, false, s.errorf("list runs: %w", err)
	}
	defer rows.Close()
	out := []workflow.Run{}
	for rows.Next() {
		r, err := s.scanRun(rows)
		if err != nil {
			return nil, false, s.errorf("list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.errorf("list runs: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// SetRunStatus moves a run that has not ended.
func (s *Store) SetRunStatus(ctx context.Context, id, status string, output json.RawMessage, rerr *workflow.RunError, at time.Time) (bool, error) {
	sets := []string{"status = ?"}
	args := []any{status}
	switch {
	case workflow.Terminal(status):
		sets = append(sets, "ended_at = ?")
		args = append(args, s.timeValue(at))
		if output != nil {
			sets, args = append(sets, "output = ?"), append(args, string(output))
		}
		if rerr != nil {
			b, _ := json.Marshal(rerr)
			sets, args = append(sets, "error = ?"), append(args, string(b))
		}
	case status == workflow.RunRunning:
		sets = append(sets, "started_at = COALESCE(started_at, ?)")
		args = append(args, s.timeValue(at))
	}
	args = append(args, id, workflow.RunSucceeded, workflow.RunFailed, workflow.RunCancelled)
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE workflow_runs SET `+strings.Join(sets, ", ")+` WHERE id = ? AND status NOT IN (?, ?, ?)`), args...)
	if err != nil {
		return false, s.errorf("set run status: %w", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// RequestCancel marks a run's cancellation asked.
func (s *Store) RequestCancel(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE workflow_runs SET cancel_requested = ? WHERE id = ?`), true, id)
	if err != nil {
		return s.errorf("cancel run: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return wfNotFound("workflow run", id)
	}
	return nil
}

// PutStep inserts or replaces a step's state. A step of a run that has
// ended is not changed back to running (a late write of a step the run's
// cancellation already closed).
func (s *Store) PutStep(ctx context.Context, st workflow.StepState) (bool, error) {
	var output, serr any
	if st.Output != nil {
		output = string(st.Output)
	}
	if st.Error != nil {
		b, _ := json.Marshal(st.Error)
		serr = string(b)
	}
	res, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO workflow_run_steps (run_id, step_id, seq, type, status, output, error, attempts, started_at, ended_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, step_id) DO UPDATE SET status = excluded.status, output = excluded.output, error = excluded.error,
			attempts = excluded.attempts, started_at = excluded.started_at, ended_at = excluded.ended_at
		WHERE workflow_run_steps.status <> ?`),
		st.RunID, st.StepID, st.Seq, st.Type, st.Status, output, serr, st.Attempts, s.timePtrValue(st.StartedAt), s.timePtrValue(st.EndedAt),
		workflow.StepCancelled)
	if err != nil {
		return false, s.errorf("put step: %w", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// CreateApproval stores an approval; one stored already (a step that ran
// again) is left as it is.
func (s *Store) CreateApproval(ctx context.Context, a workflow.Approval) error {
	ap, _ := json.Marshal(a.Approvers)
	_, err := s.db.ExecContext(ctx, s.rebind(`INSERT INTO approvals (id, team_id, run_id, workflow_id, step_id, status, instructions, approvers, expires_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		a.ID, a.TeamID, a.RunID, a.WorkflowID, a.StepID, a.Status, a.Instructions, string(ap), s.timeValue(a.ExpiresAt), s.timeValue(a.CreatedAt))
	if err != nil {
		return s.errorf("create approval: %w", err)
	}
	return nil
}

const approvalColumns = `id, team_id, run_id, workflow_id, step_id, status, instructions, approvers, comment, decided_by, decided_at, expires_at, created_at`

func (s *Store) scanApproval(sc scanner) (workflow.Approval, error) {
	var a workflow.Approval
	var ap string
	var decided, expires, created TimeScanner
	if err := sc.Scan(&a.ID, &a.TeamID, &a.RunID, &a.WorkflowID, &a.StepID, &a.Status, &a.Instructions, &ap, &a.Comment, &a.DecidedBy, &decided, &expires, &created); err != nil {
		return a, err
	}
	json.Unmarshal([]byte(ap), &a.Approvers)
	var err error
	if a.DecidedAt, err = s.timeOf(decided); err != nil {
		return a, err
	}
	if a.ExpiresAt, err = s.requiredTime(expires); err != nil {
		return a, err
	}
	a.CreatedAt, err = s.requiredTime(created)
	return a, err
}

// GetApproval returns an approval.
func (s *Store) GetApproval(ctx context.Context, id string) (workflow.Approval, error) {
	a, err := s.scanApproval(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+approvalColumns+` FROM approvals WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, wfNotFound("approval", id)
	}
	if err != nil {
		return a, s.errorf("get approval: %w", err)
	}
	return a, nil
}

// ListApprovals returns the approvals a team sees — its own and those
// naming it among their approvers' teams — newest first.
func (s *Store) ListApprovals(ctx context.Context, teamID, status, after string, limit int) ([]workflow.Approval, bool, error) {
	var c conds
	c.add("(team_id = ? OR approvers LIKE ?)", teamID, `%"`+teamID+`"%`)
	c.equal([2]string{"status", status})
	s.after(&c, "approvals", after)
	limit = pageSize(limit)
	rows, err := s.db.QueryContext(ctx, s.rebind(`SELECT `+approvalColumns+` FROM approvals`+c.sql()+` ORDER BY created_at DESC, id DESC LIMIT ?`), append(c.args, limit+1)...)
	if err != nil {
		return nil, false, s.errorf("list approvals: %w", err)
	}
	defer rows.Close()
	out := []workflow.Approval{}
	for rows.Next() {
		a, err := s.scanApproval(rows)
		if err != nil {
			return nil, false, s.errorf("list approvals: %w", err)
		}
		// The LIKE is a prefilter: the team must be among the
		// approvers' teams, not merely appear in the JSON.
		if a.TeamID == teamID || slices.Contains(a.Approvers.Teams, teamID) {
			out = append(out, a)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.errorf("list approvals: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// DecideApproval moves a pending approval to status.
func (s *Store) DecideApproval(ctx context.Context, id, status, comment, keyID string, at time.Time) (workflow.Approval, error) {
	res, err := s.db.ExecContext(ctx, s.rebind(`UPDATE approvals SET status = ?, comment = ?, decided_by = ?, decided_at = ? WHERE id = ? AND status = ?`),
		status, comment, keyID, s.timeValue(at), id, workflow.ApprovalPending)
	if err != nil {
		return workflow.Approval{}, s.errorf("decide approval: %w", err)
	}
	n, _ := res.RowsAffected()
	a, err := s.GetApproval(ctx, id)
	if err != nil {
		return a, err
	}
	if n == 0 {
		// Decided already (or expired): the service tells a repeated
		// decision from a different one.
		return a, apierr.Wrapf(workflow.ErrConflict, "The approval changed meanwhile; read it again.")
	}
	return a, nil
}

var _ = auth.ErrConflict
