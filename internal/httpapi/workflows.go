package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
	"github.com/sovereign-ai/sovereign/internal/workflow"
)

// The workflow routes (docs/workflows.md): definitions, runs, their
// events, and approvals. A team sees its own objects only: another team's
// id is a 404. The service does the work; these handlers decode and
// render.

// WorkflowJSON is the API's workflow object.
type WorkflowJSON struct {
	ID          string          `json:"id"`
	Object      string          `json:"object"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Version     int             `json:"version"`
	Definition  json.RawMessage `json:"definition"`
	CreatedAt   int64           `json:"created_at"`
	UpdatedAt   int64           `json:"updated_at"`
}

func workflowJSON(d workflow.Definition) WorkflowJSON {
	return WorkflowJSON{ID: d.ID, Object: "workflow", Name: d.Name, Description: d.Description, Version: d.Version,
		Definition: d.Spec, CreatedAt: d.CreatedAt.Unix(), UpdatedAt: d.UpdatedAt.Unix()}
}

// RunJSON is the API's run object.
type RunJSON struct {
	ID          string             `json:"id"`
	Object      string             `json:"object"`
	WorkflowID  string             `json:"workflow_id"`
	Version     int                `json:"version"`
	Status      string             `json:"status"`
	Input       json.RawMessage    `json:"input"`
	Output      json.RawMessage    `json:"output"`
	Error       *workflow.RunError `json:"error"`
	CurrentStep *string            `json:"current_step"`
	Steps       []StepJSON         `json:"steps"`
	CreatedAt   int64              `json:"created_at"`
	StartedAt   *int64             `json:"started_at"`
	EndedAt     *int64             `json:"ended_at"`
	DurationMs  *float64           `json:"duration_ms"`
	KeyID       string             `json:"key_id"`
	Cancel      bool               `json:"cancel_requested"`
}

// StepJSON is a step of a run.
type StepJSON struct {
	ID         string             `json:"id"`
	Type       string             `json:"type"`
	Status     string             `json:"status"`
	Output     json.RawMessage    `json:"output"`
	Error      *workflow.RunError `json:"error"`
	Attempts   int                `json:"attempts"`
	StartedAt  *int64             `json:"started_at"`
	EndedAt    *int64             `json:"ended_at"`
	DurationMs *float64           `json:"duration_ms"`
}

func unixPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	u := t.Unix()
	return &u
}

func msBetween(a, b *time.Time) *float64 {
	if a == nil || b == nil {
		return nil
	}
	ms := float64(b.Sub(*a).Microseconds()) / 1000
	return &ms
}

func runJSON(r workflow.Run) RunJSON {
	out := RunJSON{ID: r.ID, Object: "workflow.run", WorkflowID: r.WorkflowID, Version: r.Version, Status: r.Status,
		Input: r.Input, Output: r.Output, Error: r.Error, Steps: []StepJSON{}, CreatedAt: r.CreatedAt.Unix(),
		StartedAt: unixPtr(r.StartedAt), EndedAt: unixPtr(r.EndedAt), DurationMs: msBetween(r.StartedAt, r.EndedAt), KeyID: r.KeyID, Cancel: r.Cancellation}
	if r.CurrentStep != "" {
		out.CurrentStep = &r.CurrentStep
	}
	for _, st := range r.Steps {
		out.Steps = append(out.Steps, StepJSON{ID: st.StepID, Type: st.Type, Status: st.Status, Output: st.Output, Error: st.Error,
			Attempts: st.Attempts, StartedAt: unixPtr(st.StartedAt), EndedAt: unixPtr(st.EndedAt), DurationMs: msBetween(st.StartedAt, st.EndedAt)})
	}
	return out
}

// ApprovalJSON is the API's approval object.
type ApprovalJSON struct {
	ID           string             `json:"id"`
	Object       string             `json:"object"`
	RunID        string             `json:"run_id"`
	WorkflowID   string             `json:"workflow_id"`
	StepID       string             `json:"step_id"`
	Status       string             `json:"status"`
	Instructions string             `json:"instructions"`
	Approvers    workflow.Approvers `json:"approvers"`
	Comment      string             `json:"comment"`
	DecidedBy    *string            `json:"decided_by"`
	DecidedAt    *int64             `json:"decided_at"`
	ExpiresAt    int64              `json:"expires_at"`
	CreatedAt    int64              `json:"created_at"`
}

func approvalJSON(a workflow.Approval) ApprovalJSON {
	out := ApprovalJSON{ID: a.ID, Object: "workflow.approval", RunID: a.RunID, WorkflowID: a.WorkflowID, StepID: a.StepID, Status: a.Status,
		Instructions: a.Instructions, Approvers: a.Approvers, Comment: a.Comment, DecidedAt: unixPtr(a.DecidedAt),
		ExpiresAt: a.ExpiresAt.Unix(), CreatedAt: a.CreatedAt.Unix()}
	if a.DecidedBy != "" {
		out.DecidedBy = &a.DecidedBy
	}
	return out
}

func (s *Server) workflowsOn() error {
	if s.Workflows == nil {
		return apierr.New(apierr.NotFound, "this server runs no workflows")
	}
	return nil
}

// definition returns the caller's team's workflow named by the path.
func (s *Server) definition(r *http.Request) (workflow.Definition, error) {
	if err := s.workflowsOn(); err != nil {
		return workflow.Definition{}, err
	}
	return s.Workflows.GetWorkflow(r.Context(), caller(r), r.PathValue("id"))
}

// caller is the request's key: the identity every service method checks
// the team of.
func caller(r *http.Request) auth.Key {
	k, _ := KeyFrom(r.Context())
	return k
}

type workflowRequest struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Definition  json.RawMessage `json:"definition"`
}

func (req workflowRequest) check() error {
	if len(req.Definition) == 0 {
		return apierr.Invalid("definition", "'definition' is required: {steps: [...], output?}")
	}
	return nil
}

func (s *Server) createWorkflow(w http.ResponseWriter, r *http.Request) error {
	if err := s.workflowsOn(); err != nil {
		return err
	}
	var req workflowRequest
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	if err := req.check(); err != nil {
		return err
	}
	d, err := s.Workflows.Create(r.Context(), teamOf(r), req.Name, req.Description, req.Definition)
	if err != nil {
		return prefixed(err, "definition.")
	}
	return wire.JSON(w, http.StatusCreated, workflowJSON(d))
}

// prefixed puts a definition's field path under the request's member.
func prefixed(err error, prefix string) error {
	if e := apierr.From(err); e.Code == apierr.InvalidRequest && e.Param != "" && e.Param != "name" && e.Param != "description" {
		return apierr.WithParam(err, prefix+e.Param)
	}
	return err
}

func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	if err := s.workflowsOn(); err != nil {
		return err
	}
	limit := 20
	if err := wire.ListParams(r.URL.Query(), &limit); err != nil {
		return err
	}
	ds, more, err := s.Workflows.ListWorkflows(r.Context(), caller(r), r.URL.Query().Get("after"), limit)
	if err != nil {
		return err
	}
	data := make([]WorkflowJSON, len(ds))
	for i, d := range ds {
		data[i] = workflowJSON(d)
	}
	return wire.JSON(w, http.StatusOK, wire.ListPage(data, more, func(v WorkflowJSON) string { return v.ID }))
}

func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) error {
	d, err := s.definition(r)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, workflowJSON(d))
}

func (s *Server) updateWorkflow(w http.ResponseWriter, r *http.Request) error {
	if err := s.workflowsOn(); err != nil {
		return err
	}
	id := r.PathValue("id")
	var req workflowRequest
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	if err := req.check(); err != nil {
		return err
	}
	d, err := s.Workflows.Update(r.Context(), caller(r), id, req.Name, req.Description, req.Definition)
	if err != nil {
		return prefixed(err, "definition.")
	}
	return wire.JSON(w, http.StatusOK, workflowJSON(d))
}

func (s *Server) deleteWorkflow(w http.ResponseWriter, r *http.Request) error {
	if err := s.workflowsOn(); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := s.Workflows.DeleteWorkflow(r.Context(), caller(r), id); err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"id": id, "object": "workflow.deleted", "deleted": true})
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request) error {
	if err := s.workflowsOn(); err != nil {
		return err
	}
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	run, err := s.Workflows.Start(r.Context(), caller(r), r.PathValue("id"), req.Input)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusCreated, runJSON(run))
}

// run returns the caller's team's run named by the path.
func (s *Server) run(r *http.Request) (workflow.Run, error) {
	if err := s.workflowsOn(); err != nil {
		return workflow.Run{}, err
	}
	return s.Workflows.GetRun(r.Context(), caller(r), r.PathValue("id"))
}

var runStates = []string{workflow.RunQueued, workflow.RunRunning, workflow.RunWaitingApproval, workflow.RunSucceeded, workflow.RunFailed, workflow.RunCancelled}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) error {
	if err := s.workflowsOn(); err != nil {
		return err
	}
	q := r.URL.Query()
	f := workflow.RunFilter{TeamID: teamOf(r), WorkflowID: q.Get("workflow_id"), Status: q.Get("status"), After: q.Get("after"), Limit: 20}
	if err := wire.ListParams(q, &f.Limit); err != nil {
		return err
	}
	if f.Status != "" && !contains(runStates, f.Status) {
		return apierr.Invalid("status", "'status' is one of queued, running, waiting_approval, succeeded, failed, cancelled")
	}
	runs, more, err := s.Workflows.ListRuns(r.Context(), caller(r), f)
	if err != nil {
		return err
	}
	data := make([]RunJSON, len(runs))
	for i, run := range runs {
		data[i] = runJSON(run)
		data[i].Steps = nil // the list shows runs; GET /v1/workflow_runs/{id} their steps
	}
	return wire.JSON(w, http.StatusOK, wire.ListPage(data, more, func(v RunJSON) string { return v.ID }))
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) error {
	run, err := s.run(r)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, runJSON(run))
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) error {
	if err := s.workflowsOn(); err != nil {
		return err
	}
	run, err := s.Workflows.Cancel(r.Context(), caller(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, runJSON(run))
}

// runEvents serves GET /v1/workflow_runs/{id}/events: every event of the
// run from its start (or after Last-Event-ID), then live, ending with the
// run's last.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) error {
	run, err := s.run(r)
	if err != nil {
		return err
	}
	if s.Events == nil {
		return apierr.New(apierr.NotFound, "this server keeps no event log")
	}
	f := events.Filter{Team: run.TeamID, Subject: run.ID}
	id, param := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if id == "" {
		id, param = r.URL.Query().Get("after"), "after"
	}
	if id != "" {
		ev, err := s.Events.Event(r.Context(), id)
		if err != nil || ev.Subject != run.ID {
			return apierr.Invalid(param, "no event '"+id+"' of this run to resume after")
		}
		f.After = ev.Seq
		if runEnded(ev) {
			// Nothing follows a run's last event. 204 is how SSE says
			// "stop reconnecting" (an EventSource reconnects after a
			// stream ends, and would otherwise wait here for ever).
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
	}
	return s.followEvents(w, r, f, runEnded)
}

// runEnded reports whether ev is a run's last event.
func runEnded(ev events.Event) bool {
	return ev.Type == events.WorkflowRunSucceeded || ev.Type == events.WorkflowRunFailed || ev.Type == events.WorkflowRunCancelled
}

// approval returns an approval the caller's team may see.
func (s *Server) approval(r *http.Request) (workflow.Approval, error) {
	if err := s.workflowsOn(); err != nil {
		return workflow.Approval{}, err
	}
	return s.Workflows.GetApproval(r.Context(), caller(r), r.PathValue("id"))
}

var approvalStates = []string{workflow.ApprovalPending, workflow.ApprovalApproved, workflow.ApprovalRejected, workflow.ApprovalExpired}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) error {
	if err := s.workflowsOn(); err != nil {
		return err
	}
	q := r.URL.Query()
	limit := 20
	if err := wire.ListParams(q, &limit); err != nil {
		return err
	}
	status := q.Get("status")
	if status != "" && !contains(approvalStates, status) {
		return apierr.Invalid("status", "'status' is one of pending, approved, rejected, expired")
	}
	as, more, err := s.Workflows.ListApprovals(r.Context(), caller(r), status, q.Get("after"), limit)
	if err != nil {
		return err
	}
	data := make([]ApprovalJSON, len(as))
	for i, a := range as {
		data[i] = approvalJSON(a)
	}
	return wire.JSON(w, http.StatusOK, wire.ListPage(data, more, func(v ApprovalJSON) string { return v.ID }))
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) error {
	a, err := s.approval(r)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, approvalJSON(a))
}

func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request) error {
	if err := s.workflowsOn(); err != nil {
		return err
	}
	var req struct {
		Decision string `json:"decision"`
		Comment  string `json:"comment"`
	}
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	if req.Decision != "approve" && req.Decision != "reject" {
		return apierr.Invalid("decision", "'decision' is approve or reject")
	}
	a, err := s.Workflows.Decide(r.Context(), caller(r), r.PathValue("id"), req.Decision == "approve", req.Comment)
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, approvalJSON(a))
}
