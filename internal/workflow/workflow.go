// Package workflow runs workflows: versioned definitions of steps (model
// calls, retrieval, HTTP calls, transforms, branches, human approvals and
// waits) whose runs are durable — each run is a workflow of the durable
// engine (internal/durable), so a run survives a crash of the server that
// runs it. The states are the brief's: a run is queued, running,
// waiting_approval, then succeeded, failed or cancelled; a step pending,
// running, waiting_approval, succeeded, failed, skipped or cancelled; an
// approval pending, approved, rejected or expired. docs/workflows.md
// describes definitions, runs and approvals.
package workflow

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Run states.
const (
	RunQueued          = "queued"
	RunRunning         = "running"
	RunWaitingApproval = "waiting_approval"
	RunSucceeded       = "succeeded"
	RunFailed          = "failed"
	RunCancelled       = "cancelled"
)

// Step states.
const (
	StepPending         = "pending"
	StepRunning         = "running"
	StepWaitingApproval = "waiting_approval"
	StepSucceeded       = "succeeded"
	StepFailed          = "failed"
	StepSkipped         = "skipped"
	StepCancelled       = "cancelled"
)

// Approval states and decisions.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalRejected = "rejected"
	ApprovalExpired  = "expired"
)

// Errors of the store and the service. They are API errors (apierr), so
// that the HTTP layer needs no mapping of its own: the store and the
// service return them wrapped by apierr.Wrapf with a message naming the
// object ("No workflow 'wf_x'."), and errors.Is(err, ErrNotFound) still
// holds. The sentinels' own messages show only where nothing wrapped them.
var (
	// ErrNotFound: no such workflow, run or approval, or one of another
	// team (the same answer, so that nothing tells other teams' ids).
	ErrNotFound = apierr.New(apierr.NotFound, "No such workflow, run or approval.")
	// ErrConflict: the object is not in a state that allows the change
	// (a decided approval, a definition updated meanwhile).
	ErrConflict = apierr.New(apierr.Conflict, "The object changed meanwhile; read it again.")
)

// notFound is ErrNotFound for the what ("workflow", "workflow run",
// "approval") id. The store words its own the same way (sqlstore), so
// that another team's id and a missing one get the same answer.
func notFound(what, id string) error {
	return apierr.Wrapf(ErrNotFound, "No %s '%s'.", what, id)
}

// Definition is a stored workflow definition at its current version.
type Definition struct {
	ID          string
	TeamID      string
	Name        string
	Description string
	Version     int
	Spec        json.RawMessage
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Run is one run of a definition, at the version it started with.
type Run struct {
	ID           string
	TeamID       string
	WorkflowID   string
	Version      int
	KeyID        string // the key that started it: the steps' calls run as this key
	Status       string
	Input        json.RawMessage
	Output       json.RawMessage // when succeeded
	Error        *RunError
	Spec         json.RawMessage // the definition's steps at Version
	CreatedAt    time.Time
	StartedAt    *time.Time
	EndedAt      *time.Time
	Steps        []StepState
	CurrentStep  string
	Cancellation bool // a cancel was asked
}

// RunError is why a run or a step failed.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Step    string `json:"step,omitempty"`
}

// StepState is one step of a run.
type StepState struct {
	RunID     string
	StepID    string
	Seq       int
	Type      string
	Status    string
	Input     json.RawMessage
	Output    json.RawMessage
	Error     *RunError
	Attempts  int
	StartedAt *time.Time
	EndedAt   *time.Time
}

// Approval is a human decision a run waits for.
type Approval struct {
	ID           string
	TeamID       string
	RunID        string
	WorkflowID   string
	StepID       string
	Status       string
	Instructions string
	Approvers    Approvers
	Comment      string
	DecidedBy    string // key id
	DecidedAt    *time.Time
	ExpiresAt    time.Time
	CreatedAt    time.Time
}

// RunFilter selects runs.
type RunFilter struct {
	TeamID, WorkflowID, Status string
	After                      string // cursor: a run id
	Limit                      int
}

// Store keeps definitions, runs, their steps and approvals.
type Store interface {
	CreateWorkflow(ctx context.Context, d Definition) error
	// GetWorkflow returns a definition at its current version
	// (ErrNotFound, also for a deleted one).
	GetWorkflow(ctx context.Context, id string) (Definition, error)
	ListWorkflows(ctx context.Context, teamID, after string, limit int) ([]Definition, bool, error)
	// UpdateWorkflow stores a new version (d.Version, which must be the
	// stored one plus one: ErrConflict otherwise).
	UpdateWorkflow(ctx context.Context, d Definition) error
	DeleteWorkflow(ctx context.Context, id string) error

	CreateRun(ctx context.Context, r Run) error
	// GetRun returns a run with its steps (ErrNotFound).
	GetRun(ctx context.Context, id string) (Run, error)
	ListRuns(ctx context.Context, f RunFilter) ([]Run, bool, error)
	// SetRunStatus moves a run that is not finished to status (with
	// output or error when it ends); it reports whether it did (a
	// finished run is left as it is).
	SetRunStatus(ctx context.Context, id, status string, output json.RawMessage, rerr *RunError, at time.Time) (bool, error)
	// RequestCancel marks a run's cancellation asked (ErrNotFound).
	RequestCancel(ctx context.Context, id string) error
	// PutStep writes a step's state (insert or replace) and reports
	// whether it did: a step the run's cancellation closed is not written
	// again.
	PutStep(ctx context.Context, s StepState) (bool, error)

	CreateApproval(ctx context.Context, a Approval) error
	GetApproval(ctx context.Context, id string) (Approval, error)
	ListApprovals(ctx context.Context, teamID, status, after string, limit int) ([]Approval, bool, error)
	// DecideApproval moves a pending approval to status; ErrConflict
	// when it is no longer pending (the stored one is returned).
	DecideApproval(ctx context.Context, id, status, comment, keyID string, at time.Time) (Approval, error)
}

// NewID returns a random id with the prefix ("wf_", "run_", "appr_").
func NewID(prefix string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b [22]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b[:])
}

// Terminal reports whether a run state is final.
func Terminal(status string) bool {
	return status == RunSucceeded || status == RunFailed || status == RunCancelled
}
