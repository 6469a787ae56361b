package limits

import (
	"context"
	"sync/atomic"
	"time"
)

// Ticket is an admitted request's reservation, settled once it ends.
type Ticket struct {
	s        *Service
	reserved int64
	// taken lists what was taken, to settle.
	taken   []taken
	leaseID string
	settled atomic.Bool
}

// taken is one thing an admission took: from a per-minute bucket, a
// budget or a set of leases (by dimension).
type taken struct {
	dimension string
	key       string
	limit     int64
	n         int64
	end       time.Time // budgets: when the window ends
}

// take is what the backend is asked to take tk: a lease, or n from a
// budget or a per-minute bucket unless that would pass its limit.
func (tk *taken) take(leaseID string, lease time.Duration) Op {
	switch tk.dimension {
	case ConcurrentRequests:
		return Op{Lease: true, Key: tk.key, ID: leaseID, Max: tk.limit, TTL: lease}
	case TokensPerDay, TokensPerMonth:
		return Op{Key: tk.key, Max: tk.limit, N: tk.n, End: tk.end}
	default:
		return Op{Rate: true, Key: tk.key, Max: tk.limit, N: tk.n, Period: time.Minute}
	}
}

// adjust is what the backend is asked to change once tk is taken: add n
// (negative: give back) to its budget, whatever the limit, or to its
// bucket as far as the bucket holds (a forced take when n > 0: what does
// not fit, settlement counts as unsettled), or release its lease.
func (tk *taken) adjust(n int64, leaseID string) Op {
	switch tk.dimension {
	case ConcurrentRequests:
		return Op{Lease: true, Release: true, Key: tk.key, ID: leaseID}
	case TokensPerDay, TokensPerMonth:
		return Op{Key: tk.key, Max: tk.limit, N: n, Force: true, End: tk.end}
	default:
		return Op{Rate: true, Key: tk.key, Max: tk.limit, Period: time.Minute, N: n, Force: n > 0}
	}
}

// Reserved is the tokens the request reserved.
func (t *Ticket) Reserved() int64 { return t.reserved }

// Settle ends the request: its concurrency leases are released and the
// token reservation becomes the real usage (a refund when it used less, a
// further charge when more). It is safe to call more than once; only the
// first call counts.
func (t *Ticket) Settle(ctx context.Context, used int64) {
	if t == nil || !t.settled.CompareAndSwap(false, true) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	b := t.s.cfg.Backend
	delta := used - t.reserved
	// One batch: per-minute token refunds or charges, budgets, leases.
	sc := scratchPool.Get().(*scratch)
	opv := sc.opv[:0]
	for i := range t.taken {
		// The lease goes; the token windows take the difference between
		// the usage and the reservation; a request is a request.
		switch tk := &t.taken[i]; tk.dimension {
		case ConcurrentRequests:
			opv = append(opv, tk.adjust(0, t.leaseID))
		case TokensPerMinute, TokensPerDay, TokensPerMonth:
			if delta != 0 {
				opv = append(opv, tk.adjust(delta, t.leaseID))
			}
		}
	}
	ops := sc.ops[:0]
	for i := range opv {
		ops = append(ops, &opv[i])
	}
	sc.opv, sc.ops = opv, ops
	// done counts a charge past the reservation the backend could not
	// take, then gives the scratch back: the operations are not used
	// after it.
	done := func() {
		for _, op := range ops {
			if op.Rate && op.Force && op.N > 0 && op.Err == nil && !op.OK && t.s.cfg.Metrics != nil {
				t.s.cfg.Metrics.LimitsUnsettled(delta)
			}
		}
		sc.release()
	}
	if d, ok := b.(Deferrer); ok {
		d.Defer(ops, done)
		return
	}
	runOps(ctx, b, ops)
	done()
}
