package webhook

import (
	"crypto/sha256"
	"encoding/binary"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultSchedule is the wait after each failed attempt, before jitter:
// after the first 5 s, after the second 30 s, …, then every 3 h until the
// retry window ends (docs/webhooks.md has the table).
var DefaultSchedule = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 3 * time.Hour,
}

// Defaults of the Service's settings.
const (
	DefaultRetryWindow = 24 * time.Hour
	// DefaultDisableAfter consecutive deliveries that failed for good
	// disable a webhook …
	DefaultDisableAfter = 10
	// … and so does a webhook whose every attempt has failed for
	// DefaultDisableFailingFor, at its next delivery that fails for good.
	DefaultDisableFailingFor = 5 * 24 * time.Hour
	// MaxAttempts bounds a delivery's attempts whatever the window: a
	// long window spreads the later ones out.
	MaxAttempts = 24
	// MaxRetryAfter bounds how long a receiver's Retry-After may defer
	// the next attempt.
	MaxRetryAfter = time.Hour
	// Jitter is the spread of each wait: ±20 %.
	Jitter = 0.2
	// DefaultRetention is how long the delivery log keeps an ended
	// delivery.
	DefaultRetention = 30 * 24 * time.Hour
)

// Backoff returns the wait after the attempt-th failed attempt (1-based)
// of delivery id: schedule's entry (its last one once past its end) with
// a jitter of ±Jitter derived from id and attempt — the same on every
// run, so that a workflow replayed after a crash computes the same value,
// yet different across deliveries, so that a burst of failures does not
// come back as a burst.
func Backoff(schedule []time.Duration, id string, attempt int) time.Duration {
	if len(schedule) == 0 {
		schedule = DefaultSchedule
	}
	base := schedule[min(max(attempt, 1), len(schedule))-1]
	h := sha256.Sum256([]byte(id + "/" + strconv.Itoa(attempt)))
	u := float64(binary.BigEndian.Uint64(h[:8])>>11) / float64(1<<53) // [0, 1)
	return time.Duration(float64(base) * (1 - Jitter + 2*Jitter*u))
}

// NextAttempt decides what follows the attempt-th failed attempt of a
// delivery created at created, made at now: the wait before the next
// attempt, or giveUp when the retry window (created + window) has ended or
// MaxAttempts were made. The wait is Backoff's, at least retryAfter (what
// the receiver asked for, bounded by MaxRetryAfter) — past the schedule's
// end, spread out so that the attempts left cover what is left of the
// window — and never past its end: the last attempt is made when the
// window ends.
func NextAttempt(schedule []time.Duration, window time.Duration, id string, attempt int, created, now time.Time, retryAfter time.Duration) (wait time.Duration, giveUp bool) {
	deadline := created.Add(window)
	left := deadline.Sub(now)
	if left <= 0 || attempt >= MaxAttempts {
		return 0, true
	}
	if len(schedule) == 0 {
		schedule = DefaultSchedule
	}
	wait = Backoff(schedule, id, attempt)
	// Past the schedule's end, a window too long for the attempts left
	// spreads them out evenly.
	if even := left / time.Duration(MaxAttempts-attempt); attempt >= len(schedule) && even > wait {
		wait = even
	}
	if retryAfter > 0 {
		wait = max(wait, min(retryAfter, MaxRetryAfter))
	}
	return min(wait, left), false
}

// RetryAfter reads a 429 or 503 answer's Retry-After header (seconds, or
// an HTTP date); 0 when there is none or it cannot be read.
func RetryAfter(status int, h http.Header, now time.Time) time.Duration {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return 0
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(MaxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
