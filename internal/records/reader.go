package records

import (
	"context"
	"errors"
	"fmt"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
)

// Reader serves the request log to API callers. Its methods take the
// caller and scope what it reads themselves: a key reads its own team's
// records, an admin key every team's (narrowed to one team on request);
// another team's record is ErrNotFound, exactly as one that does not
// exist.
type Reader struct {
	Store Store
}

// ErrOtherTeams is a filter naming another team, by a key that is not an
// admin's: a 400 naming team_id.
var ErrOtherTeams = apierr.Invalid("team_id", "only an admin key reads other teams' records")

// scope fits f to what caller may read: its team's records; an admin's,
// every team's unless f names one.
func scope(caller auth.Key, f Filter) (Filter, error) {
	admin := auth.HasScope(caller, auth.ScopeAdmin)
	switch {
	case f.TeamID == "" && admin:
		f.AllTeams = true
	case f.TeamID == "":
		f.TeamID, f.AllTeams = caller.TeamID, false
	case !admin && f.TeamID != caller.TeamID:
		return f, ErrOtherTeams
	default:
		f.AllTeams = false
	}
	return f, nil
}

// List returns the records matching f that caller may read, newest first,
// and whether more follow. Errors: ErrOtherTeams; a 400 naming "after"
// (wrapping ErrNotFound) for a cursor that is not one of those records:
// the request is wrong, not a record missing.
func (r Reader) List(ctx context.Context, caller auth.Key, f Filter) ([]Record, bool, error) {
	f, err := scope(caller, f)
	if err != nil {
		return nil, false, err
	}
	list, more, err := r.Store.ListRecords(ctx, f)
	if errors.Is(err, ErrNotFound) {
		return nil, false, &apierr.Error{Code: apierr.InvalidRequest, Param: "after", Message: fmt.Sprintf("no record %q to continue after", f.After), Err: err}
	}
	return list, more, err
}

// Get returns the record id if caller may read it. Errors: ErrNotFound,
// wrapped as `no record "id"` (another team's too).
func (r Reader) Get(ctx context.Context, caller auth.Key, id string) (Record, error) {
	return r.Store.GetRecord(ctx, caller.TeamID, id, auth.HasScope(caller, auth.ScopeAdmin))
}

// Usage sums the records matching f that caller may read, grouped by
// group.
func (r Reader) Usage(ctx context.Context, caller auth.Key, f Filter, group string) ([]UsageRow, error) {
	f, err := scope(caller, f)
	if err != nil {
		return nil, err
	}
	return r.Store.Usage(ctx, f, group)
}

// Prove returns the inclusion proof of the record id, which caller may
// read, in the tree of every record stored now, or in checkpoint c's
// (nil: now). Errors: as Get's for the record; a 400 naming "checkpoint"
// (wrapping ErrNotFound) for a record outside checkpoint c.
func (r Reader) Prove(ctx context.Context, caller auth.Key, id string, c *StoredCheckpoint) (Record, Inclusion, error) {
	rec, err := r.Get(ctx, caller, id)
	if err != nil {
		return rec, Inclusion{}, err
	}
	var in Inclusion
	if c == nil {
		in, err = Prove(ctx, r.Store, rec.Seq)
		return rec, in, err
	}
	in, err = ProveIn(ctx, r.Store, *c, rec.Seq)
	if errors.Is(err, ErrNotFound) {
		// The record exists: the checkpoint asked for is the wrong one.
		err = &apierr.Error{Code: apierr.InvalidRequest, Param: "checkpoint", Err: err,
			Message: fmt.Sprintf("record %d is not in checkpoint %d (records %d–%d)", rec.Seq, c.ID, c.FirstSeq, c.LastSeq)}
	}
	return rec, in, err
}

// ErrNoCheckpoints says the store keeps no checkpoints: a 404 for the
// list of checkpoints.
var ErrNoCheckpoints = apierr.New(apierr.NotFound, "this server keeps no checkpoints")

// Checkpoints lists the stored checkpoints of the whole log, newest
// first: any caller may read them (roots reveal nothing of any team's
// records).
func (r Reader) Checkpoints(ctx context.Context, limit int) ([]StoredCheckpoint, error) {
	cs, ok := r.Store.(CheckpointStore)
	if !ok {
		return nil, ErrNoCheckpoints
	}
	return cs.ListCheckpoints(ctx, limit)
}

// Checkpoint returns the stored checkpoint id, which a caller names to be
// proven against. Errors: a 400 naming "checkpoint", wrapping
// ErrNoCheckpoints or ErrNotFound: the parameter is wrong, whichever.
func (r Reader) Checkpoint(ctx context.Context, id int64) (StoredCheckpoint, error) {
	cs, ok := r.Store.(CheckpointStore)
	if !ok {
		return StoredCheckpoint{}, &apierr.Error{Code: apierr.InvalidRequest, Param: "checkpoint", Err: ErrNoCheckpoints,
			Message: "'checkpoint' must be a checkpoint id (GET /v1/logs/checkpoints)"}
	}
	c, err := cs.GetCheckpoint(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return c, &apierr.Error{Code: apierr.InvalidRequest, Param: "checkpoint", Message: fmt.Sprintf("no checkpoint %d", id), Err: err}
	}
	return c, err
}
