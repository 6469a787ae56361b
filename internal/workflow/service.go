package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// Event types of runs besides the brief's: every state change of a run
// and of its steps, for the run's live stream.
const (
	EventRunUpdated  = events.WorkflowRunUpdated
	EventStepUpdated = events.WorkflowStepUpdated
)

// Engine is the durable engine as the service uses it.
type Engine interface {
	Start(ctx context.Context, queue, name, id string, input any) error
	Send(ctx context.Context, id, topic string, msg any, key string) error
	Cancel(ctx context.Context, id string) error
}

// Chatter runs chat steps' model calls through the generation service as
// a key: a typed request, the whole answer back, no HTTP round trip (so no
// encoding and decoding between the step and the model). Its errors are
// API errors (apierr): a step retries only what apierr calls retryable.
type Chatter interface {
	Chat(ctx context.Context, keyID, user, model string, req inference.CompletionRequest) (ChatAnswer, error)
}

// ChatAnswer is a chat step's answer.
type ChatAnswer struct {
	Model, Text, FinishReason      string
	PromptTokens, CompletionTokens int
}

// Fetcher makes the http steps' outbound calls (internal/outbound: private
// targets refused). Refused reports whether a URL is refused by policy
// now (nil when allowed, or when it cannot be told yet, e.g. DNS fails),
// so that a definition naming a private target is a 400 when saved.
type Fetcher interface {
	Fetch(ctx context.Context, method, url string, header map[string]string, body string) (status int, respHeader map[string]string, resp []byte, err error)
	Refused(ctx context.Context, url string) error
}

// Publisher stores events (events.Bus.Append: an event whose id is
// stored already is not stored again, so a step that runs twice does not
// publish twice).
type Publisher interface {
	Append(ctx context.Context, ev events.Event) (events.Event, error)
}

// Service defines, runs and decides workflows.
type Service struct {
	Store   Store
	Engine  Engine
	Chatter Chatter
	// Searcher runs retrieve steps, Reranker rerank steps, Answerer
	// answer_with_sources steps.
	Searcher Searcher
	Reranker Reranker
	Answerer Answerer
	Fetcher  Fetcher
	Events   Publisher
	Log      *slog.Logger
	Now      func() time.Time
}

// durableRun is the run's workflow in the durable engine. Runs start at
// once on the server that accepted them, not through a queue: a run
// mostly waits (for models, approvals, timers), and a queue's polling
// would add its interval to every run's start. A run resumed after a
// crash goes through the engine's own recovery queue.
const durableRun = "workflow.run"

// RunWorkflowID is the durable engine's id of a run.
func RunWorkflowID(runID string) string { return "run:" + runID }

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

// Register registers the run workflow on the engine (before it
// launches).
func (s *Service) Register(e *durable.Engine) {
	durable.Register(e, durableRun, s.execute)
	e.Resumable(durableRun, s.unfinished)
}

// unfinished reports whether the run of the workflow id has not ended:
// the engine resumes such a workflow should a shutdown have cancelled it.
// Cancel marks a run cancelled before it cancels its workflow, so a
// user's cancel is never undone.
func (s *Service) unfinished(ctx context.Context, workflowID string) (bool, error) {
	r, err := s.Store.GetRun(ctx, strings.TrimPrefix(workflowID, RunWorkflowID("")))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil && !Terminal(r.Status), err
}

// Create stores a new definition (version 1) after validating it.
func (s *Service) Create(ctx context.Context, teamID, name, description string, spec json.RawMessage) (Definition, error) {
	if err := s.check(ctx, name, description, spec); err != nil {
		return Definition{}, err
	}
	now := s.now()
	d := Definition{ID: NewID("wf_"), TeamID: teamID, Name: name, Description: description, Version: 1, Spec: spec, CreatedAt: now, UpdatedAt: now}
	return d, s.Store.CreateWorkflow(ctx, d)
}

// Update stores a new version of the caller's team's definition id. Runs
// keep the version they started with.
func (s *Service) Update(ctx context.Context, caller auth.Key, id, name, description string, spec json.RawMessage) (Definition, error) {
	d, err := s.GetWorkflow(ctx, caller, id)
	if err != nil {
		return d, err
	}
	if err := s.check(ctx, name, description, spec); err != nil {
		return Definition{}, err
	}
	d.Name, d.Description, d.Spec, d.Version, d.UpdatedAt = name, description, spec, d.Version+1, s.now()
	return d, s.Store.UpdateWorkflow(ctx, d)
}

// check validates a definition: its name, its spec, and the http steps'
// literal URLs against the outbound policy.
func (s *Service) check(ctx context.Context, name, description string, spec json.RawMessage) error {
	if err := checkName(name, description); err != nil {
		return err
	}
	sp, err := ParseSpec(spec)
	if err != nil {
		return err
	}
	for i, st := range sp.Steps {
		if st.Type == StepHTTP && !strings.Contains(st.URL, "{{") && s.Fetcher != nil {
			if err := s.Fetcher.Refused(ctx, st.URL); err != nil {
				return invalid(fmt.Sprintf("steps[%d].url", i), "%s", err)
			}
		}
	}
	return nil
}

func checkName(name, description string) error {
	if strings.TrimSpace(name) == "" || len(name) > MaxNameLen {
		return invalid("name", "name is 1 to %d characters", MaxNameLen)
	}
	if len(description) > 4096 {
		return invalid("description", "description is at most 4096 characters")
	}
	return nil
}

// Start creates a run of the caller's team's workflow id at its current
// version with input, as the caller's key, and starts it on the durable
// engine.
func (s *Service) Start(ctx context.Context, key auth.Key, id string, input json.RawMessage) (Run, error) {
	d, err := s.GetWorkflow(ctx, key, id)
	if err != nil {
		return Run{}, err
	}
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	var probe any
	if json.Unmarshal(input, &probe) != nil {
		return Run{}, invalid("input", "input must be JSON")
	}
	r := Run{ID: NewID("run_"), TeamID: d.TeamID, WorkflowID: d.ID, Version: d.Version, KeyID: key.ID, Status: RunQueued,
		Input: input, Spec: d.Spec, CreatedAt: s.now()}
	if err := s.Store.CreateRun(ctx, r); err != nil {
		return Run{}, err
	}
	sp, _ := ParseSpec(d.Spec)
	for i, st := range sp.Steps {
		s.Store.PutStep(ctx, StepState{RunID: r.ID, StepID: st.ID, Seq: i, Type: st.Type, Status: StepPending})
	}
	s.publish(ctx, r, EventRunUpdated, "queued", map[string]any{"run_id": r.ID, "workflow_id": r.WorkflowID, "status": RunQueued})
	if err := s.Engine.Start(ctx, "", durableRun, RunWorkflowID(r.ID), r.ID); err != nil {
		// The run is stored, queued: ResumeRuns starts it at the next
		// start of a server.
		s.log().Warn("workflow run not started; it will be at the next start", "run", r.ID, "err", err)
	}
	return s.Store.GetRun(ctx, r.ID)
}

// ResumeRuns starts every queued run whose durable workflow may not
// exist (a crash between storing the run and starting it); the workflow
// id makes it harmless for the others.
func (s *Service) ResumeRuns(ctx context.Context) error {
	after := ""
	for {
		runs, more, err := s.Store.ListRuns(ctx, RunFilter{Status: RunQueued, After: after, Limit: 100})
		if err != nil {
			return err
		}
		for _, r := range runs {
			if err := s.Engine.Start(ctx, "", durableRun, RunWorkflowID(r.ID), r.ID); err != nil {
				return err
			}
			after = r.ID
		}
		if !more {
			return nil
		}
	}
}

// Cancel cancels the caller's team's run id if it has not finished: its
// pending steps and approvals end, the durable workflow stops after its
// running step.
func (s *Service) Cancel(ctx context.Context, caller auth.Key, id string) (Run, error) {
	r, err := s.GetRun(ctx, caller, id)
	if err != nil {
		return r, err
	}
	if Terminal(r.Status) {
		return r, apierr.New(apierr.Conflict, "the run has ended ("+r.Status+")")
	}
	if err := s.Store.RequestCancel(ctx, r.ID); err != nil {
		return r, err
	}
	now := s.now()
	ok, err := s.Store.SetRunStatus(ctx, r.ID, RunCancelled, nil, &RunError{Code: "cancelled", Message: "the run was cancelled"}, now)
	if err != nil {
		return r, err
	}
	if err := s.Engine.Cancel(ctx, RunWorkflowID(r.ID)); err != nil {
		s.log().Warn("cancelling a run's durable workflow", "run", r.ID, "err", err)
	}
	if ok {
		for _, st := range r.Steps {
			if st.Status == StepPending || st.Status == StepRunning || st.Status == StepWaitingApproval {
				wasRunningWait := st.Type == StepWait && st.Status == StepRunning
				st.Status, st.EndedAt = StepCancelled, &now
				s.Store.PutStep(ctx, st)
				if wasRunningWait {
					// Wake the wait: the engine's cancel does not cut it.
					if err := s.Engine.Send(ctx, RunWorkflowID(r.ID), "wake:"+st.StepID, true, r.ID+":"+st.StepID+":cancelled"); err != nil {
						s.log().Warn("waking a cancelled run's wait", "run", r.ID, "err", err)
					}
				}
				s.publish(ctx, r, EventStepUpdated, st.StepID+":cancelled", stepData(r, st))
			}
		}
		approvals, _, _ := s.Store.ListApprovals(ctx, r.TeamID, ApprovalPending, "", 1000)
		for _, a := range approvals {
			if a.RunID == r.ID {
				got, err := s.Store.DecideApproval(ctx, a.ID, ApprovalExpired, "the run was cancelled", "", now)
				if err != nil || got.DecidedAt == nil {
					continue
				}
				// Wake the run's wait for this decision: the engine's
				// cancel does not interrupt a wait, which would hold
				// the cancelled run until the approval's timeout. Woken,
				// it stops at its next step.
				msg := decision{Status: got.Status, Comment: got.Comment, DecidedAt: *got.DecidedAt}
				if err := s.Engine.Send(ctx, RunWorkflowID(r.ID), "approval:"+got.StepID, msg, got.ID+":cancelled"); err != nil {
					s.log().Warn("waking a cancelled run's approval wait", "run", r.ID, "err", err)
				}
			}
		}
		s.publish(ctx, r, events.WorkflowRunCancelled, "cancelled", map[string]any{"run_id": r.ID, "workflow_id": r.WorkflowID, "status": RunCancelled})
	}
	return s.Store.GetRun(ctx, r.ID)
}

// CanSee reports whether key may see an approval: keys of the run's team,
// and of a team its approvers name.
func CanSee(a Approval, key auth.Key) bool {
	return key.TeamID == a.TeamID || slices.Contains(a.Approvers.Teams, key.TeamID)
}

// MayDecide reports whether key is one of an approval's approvers.
func MayDecide(a Approval, key auth.Key) bool {
	ap := a.Approvers
	if len(ap.Scopes) == 0 && len(ap.Teams) == 0 && len(ap.KeyIDs) == 0 {
		return key.TeamID == a.TeamID && auth.HasScope(key, auth.ScopeWorkflows)
	}
	if slices.Contains(ap.KeyIDs, key.ID) || slices.Contains(ap.Teams, key.TeamID) {
		return true
	}
	// Named scopes are held as such (or through admin): workflows, which
	// lets a key reach the approval routes, does not make it an approver
	// where the approval names "approvals".
	for _, sc := range ap.Scopes {
		if key.TeamID == a.TeamID && (slices.Contains(key.Scopes, auth.Scope(sc)) || slices.Contains(key.Scopes, auth.ScopeAdmin)) {
			return true
		}
	}
	return false
}

// decision is the message an approval's run receives.
type decision struct {
	Status    string    `json:"status"`
	Comment   string    `json:"comment,omitempty"`
	DecidedBy string    `json:"decided_by,omitempty"`
	DecidedAt time.Time `json:"decided_at"`
}

// Decide records a decision (approve or reject) by key on the pending
// approval id (one key may see: its run's team's, or a team its approvers
// name; others are ErrNotFound) and hands it to the waiting run. A key
// outside the approvers gets a permission_denied error; a decided
// approval a conflict — unless it is the same decision repeated, which is
// delivered again (a retried request).
func (s *Service) Decide(ctx context.Context, key auth.Key, id string, approve bool, comment string) (Approval, error) {
	a, err := s.GetApproval(ctx, key, id)
	if err != nil {
		return a, err
	}
	if !MayDecide(a, key) {
		return a, apierr.New(apierr.PermissionDenied, "this API key is not one of the approval's approvers")
	}
	if len(comment) > 4096 {
		return a, invalid("comment", "comment is at most 4096 characters")
	}
	status := ApprovalRejected
	if approve {
		status = ApprovalApproved
	}
	got, err := s.Store.DecideApproval(ctx, a.ID, status, comment, key.ID, s.now())
	if errors.Is(err, ErrConflict) {
		if got.Status != status || got.DecidedBy != key.ID {
			return got, apierr.New(apierr.Conflict, "the approval is "+got.Status+" already")
		}
	} else if err != nil {
		return a, err
	}
	msg := decision{Status: got.Status, Comment: got.Comment, DecidedBy: got.DecidedBy, DecidedAt: *got.DecidedAt}
	if err := s.Engine.Send(ctx, RunWorkflowID(got.RunID), "approval:"+got.StepID, msg, got.ID); err != nil {
		return got, fmt.Errorf("handing the decision to the run: %w", err)
	}
	return got, nil
}

// publish stores an event of run r; key makes its id stable, so a step
// that runs again does not publish it twice.
func (s *Service) publish(ctx context.Context, r Run, typ, key string, data map[string]any) {
	if s.Events == nil {
		return
	}
	h := sha256.Sum256([]byte(r.ID + "\x00" + typ + "\x00" + key))
	ev := events.Event{ID: "evt_" + hex.EncodeToString(h[:12]), Type: typ, Team: r.TeamID, Subject: r.ID, Data: data}
	if _, err := s.Events.Append(ctx, ev); err != nil && !errors.Is(err, events.ErrDuplicate) {
		s.log().Warn("workflow event not stored", "run", r.ID, "type", typ, "err", err)
	}
}

func stepData(r Run, st StepState) map[string]any {
	d := map[string]any{"run_id": r.ID, "workflow_id": r.WorkflowID, "step_id": st.StepID, "type": st.Type, "status": st.Status, "attempts": st.Attempts}
	if st.Error != nil {
		d["error"] = st.Error
	}
	return d
}
