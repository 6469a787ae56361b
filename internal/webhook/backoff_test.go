package webhook

import (
	"net/http"
	"testing"
	"time"
)

func TestBackoffSchedule(t *testing.T) {
	for attempt := 1; attempt <= 10; attempt++ {
		base := DefaultSchedule[min(attempt, len(DefaultSchedule))-1]
		seen := map[time.Duration]bool{}
		for i := range 200 {
			id := "whd_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			d := Backoff(nil, id, attempt)
			if d != Backoff(nil, id, attempt) {
				t.Fatal("the wait is not the same on every run")
			}
			lo, hi := time.Duration(float64(base)*(1-Jitter)), time.Duration(float64(base)*(1+Jitter))
			if d < lo || d > hi {
				t.Fatalf("attempt %d: %v outside [%v, %v]", attempt, d, lo, hi)
			}
			seen[d] = true
		}
		if len(seen) < 150 {
			t.Fatalf("attempt %d: only %d distinct waits over 200 deliveries: no jitter", attempt, len(seen))
		}
	}
	if Backoff(nil, "x", 1) > 6*time.Second || Backoff(nil, "x", 2) < 24*time.Second || Backoff(nil, "x", 30) < 144*time.Minute {
		t.Fatal("the schedule is not 5 s, 30 s, …, 3 h")
	}
}

// With the default 24 h window a delivery that is never answered makes
// about 14 attempts, the last one when the window ends.
func TestAttemptsOverTheWindow(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := created
	n := 1
	var waits []time.Duration
	for ; ; n++ {
		wait, giveUp := NextAttempt(nil, DefaultRetryWindow, "whd_x", n, created, now, 0)
		if giveUp {
			break
		}
		waits = append(waits, wait)
		now = now.Add(wait)
	}
	if n < 12 || n > 16 {
		t.Fatalf("%d attempts: %v", n, waits)
	}
	if !now.Equal(created.Add(DefaultRetryWindow)) {
		t.Fatalf("the last attempt at %v, want the end of the window", now.Sub(created))
	}
	// A 30-day window spreads the later attempts out: no more than
	// MaxAttempts.
	now, n = created, 1
	for ; ; n++ {
		wait, giveUp := NextAttempt(nil, 30*24*time.Hour, "whd_x", n, created, now, 0)
		if giveUp {
			break
		}
		now = now.Add(wait)
	}
	if n > MaxAttempts || now.Before(created.Add(29*24*time.Hour)) {
		t.Fatalf("30-day window: %d attempts over %v", n, now.Sub(created))
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := http.Header{"Retry-After": {"120"}}
	if got := RetryAfter(429, h, now); got != 2*time.Minute {
		t.Fatalf("429: %v", got)
	}
	if got := RetryAfter(500, h, now); got != 0 {
		t.Fatalf("500: %v", got)
	}
	if got := RetryAfter(503, http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, now); got != 90*time.Second {
		t.Fatalf("date: %v", got)
	}
	if got := RetryAfter(503, http.Header{"Retry-After": {"999999"}}, now); got != MaxRetryAfter {
		t.Fatalf("bounded: %v", got)
	}
	if got := RetryAfter(503, http.Header{"Retry-After": {"soon"}}, now); got != 0 {
		t.Fatalf("unreadable: %v", got)
	}
	// The first wait is 5 s; a Retry-After of 2 min defers it…
	created := now
	if wait, _ := NextAttempt(nil, DefaultRetryWindow, "whd_x", 1, created, now, 2*time.Minute); wait != 2*time.Minute {
		t.Fatalf("wait %v", wait)
	}
	// … but never past the window.
	if wait, _ := NextAttempt(nil, time.Minute, "whd_x", 1, created, now, 2*time.Minute); wait != time.Minute {
		t.Fatalf("wait %v", wait)
	}
}
