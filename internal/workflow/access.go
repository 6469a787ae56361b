package workflow

import (
	"context"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// The service's reads take the caller and check its team themselves:
// another team's workflow, run or approval is ErrNotFound, with the same
// message as one that does not exist ("No workflow 'wf_x'.", as the store
// words it): an API answers 404 either way, and says nothing of what
// other teams have.

// GetWorkflow returns the caller's team's workflow id.
func (s *Service) GetWorkflow(ctx context.Context, caller auth.Key, id string) (Definition, error) {
	d, err := s.Store.GetWorkflow(ctx, id)
	if err == nil && d.TeamID != caller.TeamID {
		return Definition{}, notFound("workflow", id)
	}
	return d, err
}

// ListWorkflows lists the caller's team's workflows, a page after the id
// after.
func (s *Service) ListWorkflows(ctx context.Context, caller auth.Key, after string, limit int) ([]Definition, bool, error) {
	return s.Store.ListWorkflows(ctx, caller.TeamID, after, limit)
}

// DeleteWorkflow deletes the caller's team's workflow id.
func (s *Service) DeleteWorkflow(ctx context.Context, caller auth.Key, id string) error {
	if _, err := s.GetWorkflow(ctx, caller, id); err != nil {
		return err
	}
	return s.Store.DeleteWorkflow(ctx, id)
}

// GetRun returns the caller's team's run id, with its steps.
func (s *Service) GetRun(ctx context.Context, caller auth.Key, id string) (Run, error) {
	r, err := s.Store.GetRun(ctx, id)
	if err == nil && r.TeamID != caller.TeamID {
		return Run{}, notFound("workflow run", id)
	}
	return r, err
}

// ListRuns lists the caller's team's runs that match f (whatever team f
// names).
func (s *Service) ListRuns(ctx context.Context, caller auth.Key, f RunFilter) ([]Run, bool, error) {
	f.TeamID = caller.TeamID
	return s.Store.ListRuns(ctx, f)
}

// GetApproval returns the approval id if the caller may see it (CanSee).
func (s *Service) GetApproval(ctx context.Context, caller auth.Key, id string) (Approval, error) {
	a, err := s.Store.GetApproval(ctx, id)
	if err == nil && !CanSee(a, caller) {
		return Approval{}, notFound("approval", id)
	}
	return a, err
}

// ListApprovals lists the caller's team's approvals in status ("": any).
func (s *Service) ListApprovals(ctx context.Context, caller auth.Key, status, after string, limit int) ([]Approval, bool, error) {
	return s.Store.ListApprovals(ctx, caller.TeamID, status, after, limit)
}
