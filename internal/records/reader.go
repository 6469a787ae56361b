package records

import (
	"context"
	"errors"

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
// admin's.
var ErrOtherTeams = errors.New("only an admin key reads other teams' records")

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
// and whether more follow. Errors: ErrOtherTeams; ErrNotFound for a
// cursor that is not one of those records.
func (r Reader) List(ctx context.Context, caller auth.Key, f Filter) ([]Record, bool, error) {
	f, err := scope(caller, f)
	if err != nil {
		return nil, false, err
	}
	return r.Store.ListRecords(ctx, f)
}

// Get returns the record id if caller may read it.
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
// (nil: now).
func (r Reader) Prove(ctx context.Context, caller auth.Key, id string, c *StoredCheckpoint) (Record, Inclusion, error) {
	rec, err := r.Get(ctx, caller, id)
	if err != nil {
		return rec, Inclusion{}, err
	}
	var in Inclusion
	if c != nil {
		in, err = ProveIn(ctx, r.Store, *c, rec.Seq)
	} else {
		in, err = Prove(ctx, r.Store, rec.Seq)
	}
	return rec, in, err
}

// ErrNoCheckpoints says the store keeps no checkpoints.
var ErrNoCheckpoints = errors.New("this server keeps no checkpoints")

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

// Checkpoint returns the stored checkpoint id.
func (r Reader) Checkpoint(ctx context.Context, id int64) (StoredCheckpoint, error) {
	cs, ok := r.Store.(CheckpointStore)
	if !ok {
		return StoredCheckpoint{}, ErrNoCheckpoints
	}
	return cs.GetCheckpoint(ctx, id)
}
