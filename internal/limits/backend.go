package limits

import (
	"context"
	"time"
)

// RateResult is a GCRA bucket's answer.
type RateResult struct {
	Allowed bool
	// Remaining is what may still be taken now.
	Remaining int64
	// RetryAfter is how long until the refused amount would fit; ResetAfter
	// how long until the bucket is full again.
	RetryAfter, ResetAfter time.Duration
}

// Backend holds the limits' state. Each call is one atomic operation (one
// round trip for Redis).
type Backend interface {
	// Rate takes n from the GCRA bucket key, which refills limit per
	// period with a burst of limit; a negative n refunds. Refused (nothing
	// taken) when n does not fit; with force (settling a request that used
	// more than it reserved), what the bucket holds of n is taken, and the
	// answer is not allowed unless all of it was. Every backend answers
	// as the function GCRA does.
	Rate(ctx context.Context, key string, limit int64, period time.Duration, n int64, force bool) (RateResult, error)
	// Quota adds n to the counter key, which expires at end, unless that
	// would take it above max (n > 0 without force: refused, nothing
	// added). It returns the counter's value after.
	Quota(ctx context.Context, key string, max, n int64, force bool, end time.Time) (allowed bool, used int64, err error)
	// Acquire takes a lease named id in the set key when fewer than max
	// are held (expired leases do not count); it returns how many are held
	// after.
	Acquire(ctx context.Context, key, id string, max int64, lease time.Duration) (ok bool, held int64, err error)
	// Release ends the lease id.
	Release(ctx context.Context, key, id string) error
	// Held is how many leases of key are held.
	Held(ctx context.Context, key string) (int64, error)
}

// Op is one operation of a batch: Rate's (Rate: limit Max per Period),
// Quota's (the default), Acquire's (Lease) or Release's (Lease and
// Release).
type Op struct {
	Rate, Lease, Release bool
	Key, ID              string
	Max, N               int64
	Force                bool
	Period               time.Duration
	End                  time.Time
	TTL                  time.Duration
	// OK, Value (a rate's remaining, a budget's use after, or the leases
	// held after), Retry and Reset (rates) and Err are the results.
	OK           bool
	Value        int64
	Retry, Reset time.Duration
	Err          error
}

// Batcher is a Backend that runs several operations, in order, in one
// round trip (Redis: one script call). Each operation answers as it would
// through Rate, Quota, Acquire and Release; a batch need not be atomic as
// a whole, and admission does not rely on it (it gives back what a refused
// request took).
type Batcher interface {
	Batch(ctx context.Context, ops []*Op)
}

// Deferrer is a Batcher that may hold a settlement's operations back and
// run them at the head of its next batch — usually the next request's
// admission, so that a request costs one round trip, not two — or shortly
// after when no batch comes. Every read of the state runs what is held
// first. done runs once the operations have.
type Deferrer interface {
	Batcher
	Defer(ops []*Op, done func())
	// Sync returns once every settlement deferred before it was called
	// has reached the backend; it reports whether any had not.
	Sync(ctx context.Context) bool
}

// runOps runs ops on b: batched when it can, one by one otherwise.
func runOps(ctx context.Context, b Backend, ops []*Op) {
	if len(ops) == 0 {
		return
	}
	if bb, ok := b.(Batcher); ok {
		bb.Batch(ctx, ops)
		return
	}
	for _, op := range ops {
		RunOp(ctx, b, op)
	}
}

// RunOp runs one operation through the Backend's own methods (what a
// Batcher falls back to).
func RunOp(ctx context.Context, b Backend, op *Op) {
	switch {
	case op.Rate:
		var res RateResult
		res, op.Err = b.Rate(ctx, op.Key, op.Max, op.Period, op.N, op.Force)
		op.OK, op.Value, op.Retry, op.Reset = res.Allowed, res.Remaining, res.RetryAfter, res.ResetAfter
	case op.Release:
		op.OK, op.Err = true, b.Release(ctx, op.Key, op.ID)
	case op.Lease:
		op.OK, op.Value, op.Err = b.Acquire(ctx, op.Key, op.ID, op.Max, op.TTL)
	default:
		op.OK, op.Value, op.Err = b.Quota(ctx, op.Key, op.Max, op.N, op.Force, op.End)
	}
}
