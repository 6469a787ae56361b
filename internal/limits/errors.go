package limits

import (
	"errors"
	"fmt"
	"time"
)

// InvalidError is a rule that cannot be stored; Param names the field.
type InvalidError struct{ Param, Message string }

func (e *InvalidError) Error() string { return e.Message }

// ErrNotFound is a rule that does not exist.
var ErrNotFound = errors.New("limit rule not found")

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

// Unwrap returns the backend's error.
func (e *UnavailableError) Unwrap() error { return e.Err }
