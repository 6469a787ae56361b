// Package limits enforces rate limits and quotas: requests per minute,
// tokens per minute, concurrent requests, tokens per day and a monthly token
// budget, each set per key, per team and per model. Every rule that applies
// to a request is checked — a key's, its team's and the model's — so a key
// with a team can never bypass the team's budget.
//
// Rates are GCRA buckets (a limit per minute with a burst of the same
// size); daily and monthly budgets are fixed windows in UTC; concurrency is
// a set of leases. Where the state lives is a Backend: in memory on one
// node (Memory), or Redis for several (internal/redis), so that any number
// of replicas share one limit.
//
// Tokens are reserved when a request is admitted, from its prompt and its
// output limit, and settled to the real usage when it ends: a refund when
// it used less, a further charge when it used more.
package limits

import (
	"math"
	"time"
)

// Request is what admission needs to know of a request.
type Request struct {
	ID, KeyID, TeamID, Model string
	// Tokens is the reservation: the prompt's estimated tokens plus the
	// output limit.
	Tokens int64
}

// Window is one limit's state for the x-ratelimit headers and GET
// /v1/limits.
type Window struct {
	Scope, Subject, Dimension string
	Limit, Remaining          int64
	// Reset is how long until the limit is back to its full allowance.
	Reset time.Duration
}

// Status is the most restrictive request and token windows of an
// admission (nil: no such limit applies).
type Status struct {
	Requests, Tokens *Window
}

// Estimate is a request's token reservation: its prompt, counted as one
// token per three bytes (more than most tokenizers make, so that the
// settlement is mostly a refund), plus its output limit.
func Estimate(promptBytes int, outputTokens int) int64 {
	return int64(math.Ceil(float64(promptBytes)/3)) + int64(max(outputTokens, 0))
}
