package limits

import (
	"fmt"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// ErrNotFound is a rule that does not exist.
var ErrNotFound = apierr.New(apierr.NotFound, "limit rule not found")

// ExceededError is a request over a limit: 429 rate_limit_exceeded, or
// quota_exceeded for a daily or monthly budget.
type ExceededError struct {
	Scope, Subject, Dimension string
	Limit                     int64
	Requested                 int64
	// RetryAfter is when the request would fit (0: it never will, being
	// larger than the limit).
	RetryAfter time.Duration
}

// Quota reports whether the exceeded limit is a budget (a day's or a
// month's tokens) rather than a rate.
func (e *ExceededError) Quota() bool {
	return e.Dimension == TokensPerDay || e.Dimension == TokensPerMonth
}

// APIError is a 429: rate_limit_exceeded with the wait, or
// quota_exceeded for a budget.
func (e *ExceededError) APIError() *apierr.Error {
	code := apierr.RateLimitExceeded
	if e.Quota() {
		code = apierr.QuotaExceeded
	}
	return &apierr.Error{Code: code, Message: e.Error(), RetryAfter: e.RetryAfter}
}

func (e *ExceededError) Error() string {
	what := fmt.Sprintf("the %s %s's limit of %d %s", e.Scope, e.Subject, e.Limit, label(e.Dimension))
	if e.RetryAfter <= 0 {
		return fmt.Sprintf("this request needs %d, more than %s allows at all; lower max_tokens or the input", e.Requested, what)
	}
	return fmt.Sprintf("%s is reached; retry after %s", what, e.RetryAfter.Round(time.Millisecond))
}

func label(dimension string) string {
	switch dimension {
	case RequestsPerMinute:
		return "requests per minute"
	case TokensPerMinute:
		return "tokens per minute"
	case ConcurrentRequests:
		return "concurrent requests"
	case TokensPerDay:
		return "tokens per day (UTC)"
	case TokensPerMonth:
		return "tokens per month (UTC)"
	}
	return dimension
}

// UnavailableError is a failing backend under fail-closed.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string {
	return "rate limits cannot be checked right now (their store is unavailable); retry shortly"
}

// APIError is a 503 limits_unavailable, worth a retry in a second.
func (e *UnavailableError) APIError() *apierr.Error {
	return &apierr.Error{Code: apierr.LimitsUnavailable, Message: e.Error(), RetryAfter: time.Second}
}

// Unwrap returns the backend's error.
func (e *UnavailableError) Unwrap() error { return e.Err }
