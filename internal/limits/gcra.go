package limits

import "time"

// GCRA is one operation on a GCRA bucket of limit per period, with a
// burst of limit, whose state is tat, its theoretical arrival time (the
// zero time, or any time not after now: a full bucket). It takes n (n > 0),
// reads (n == 0) or refunds (n < 0), and returns the bucket's state after
// (not after now: full, and may be forgotten) with the answer. A take that
// does not fit is refused and changes nothing; with force, it takes what
// is left instead (nothing when less than one is) and is reported not
// allowed unless all of n fitted.
//
// This is the only GCRA on the Go side, and it is
// github.com/go-redis/redis_rate's: the formulas of its AllowN script, and
// of its AllowAtMost for force, which internal/redis's batch script runs
// on Redis, so a deployment behaves the same on one node and on many (a
// test there drives the same operations through all three and requires
// the same answers). Where it departs from the library, it departs as
// that script does: a refund that leaves the bucket full empties it and
// leaves limit remaining (redis_rate leaves such a refund unwritten, so
// the bucket would still be short what was taken), and a forced take
// reports no RetryAfter.
//
// The arithmetic is in seconds, as the script's, but measured from now
// rather than from 2017: the same formulas, without the rounding of adding
// a few seconds to a count of some 3·10⁸.
func GCRA(tat, now time.Time, limit int64, period time.Duration, n int64, force bool) (time.Time, RateResult) {
	if limit <= 0 {
		return tat, RateResult{Allowed: true}
	}
	ei := period.Seconds() / float64(limit) // the emission interval
	burst := ei * float64(limit)
	// t is the TAT's lead over now: max(tat, now) - now.
	t := max(tat.Sub(now).Seconds(), 0)
	at := func(s float64) time.Time { return now.Add(seconds(s)) }
	if force && n > 0 {
		// AllowAtMost: what is left, when less than n.
		left := (burst - t) / ei
		if left < 1 {
			return tat, RateResult{ResetAfter: seconds(t)}
		}
		take, all := float64(n), true
		if left < take {
			take, left, all = left, 0, false
		} else {
			left -= take
		}
		nt := t + ei*take
		return at(nt), RateResult{Allowed: all, Remaining: int64(left), ResetAfter: seconds(nt)}
	}
	// AllowN.
	nt := t + ei*float64(n)
	diff := burst - nt // now - (new TAT - burst)
	if diff < 0 {
		if n <= 0 { // a read or refund is never refused
			return tat, RateResult{Allowed: true, ResetAfter: seconds(t)}
		}
		return tat, RateResult{RetryAfter: seconds(-diff), ResetAfter: seconds(t)}
	}
	if nt <= 0 {
		// Full: after a refund, what the bucket holds is the limit (not
		// the limit and the surplus given back).
		if n < 0 {
			return now, RateResult{Allowed: true, Remaining: limit}
		}
		return tat, RateResult{Allowed: true, Remaining: int64(diff / ei)}
	}
	if n == 0 {
		return tat, RateResult{Allowed: true, Remaining: int64(diff / ei), ResetAfter: seconds(nt)}
	}
	return at(nt), RateResult{Allowed: true, Remaining: int64(diff / ei), ResetAfter: seconds(nt)}
}

// seconds is s seconds as a Duration, to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
