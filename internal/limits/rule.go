package limits

import (
	"context"
	"fmt"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Scopes a rule applies to.
const (
	ScopeKey   = "key"
	ScopeTeam  = "team"
	ScopeModel = "model"
)

// Dimensions a rule limits.
const (
	RequestsPerMinute  = "requests_per_minute"
	TokensPerMinute    = "tokens_per_minute"
	ConcurrentRequests = "concurrent_requests"
	TokensPerDay       = "tokens_per_day"
	TokensPerMonth     = "tokens_per_month"
)

// Rule is the limits of one key, team or model. A zero (or absent) value
// is no limit in that dimension.
type Rule struct {
	Object             string `json:"object" yaml:"-"`
	Scope              string `json:"scope" yaml:"scope"`
	Subject            string `json:"subject" yaml:"subject"`
	RequestsPerMinute  int64  `json:"requests_per_minute,omitempty" yaml:"requests_per_minute"`
	TokensPerMinute    int64  `json:"tokens_per_minute,omitempty" yaml:"tokens_per_minute"`
	ConcurrentRequests int64  `json:"concurrent_requests,omitempty" yaml:"concurrent_requests"`
	TokensPerDay       int64  `json:"tokens_per_day,omitempty" yaml:"tokens_per_day"`
	TokensPerMonth     int64  `json:"tokens_per_month,omitempty" yaml:"tokens_per_month"`
	// Source is "config" for rules from the configuration file and "api"
	// for rules set through the admin API (which take precedence).
	Source    string `json:"source" yaml:"-"`
	UpdatedAt int64  `json:"updated_at,omitempty" yaml:"-"`
}

// Validate checks a rule's scope, subject and values; the error names the
// field.
func (r Rule) Validate() error {
	switch r.Scope {
	case ScopeKey, ScopeTeam, ScopeModel:
	default:
		return apierr.Invalid("scope", fmt.Sprintf("scope must be key, team or model, not %q", r.Scope))
	}
	if r.Subject == "" || len(r.Subject) > 256 {
		return apierr.Invalid("subject", "subject (the key id, team id or model id) must be 1 to 256 characters")
	}
	for _, d := range r.dims() {
		if d.v < 0 {
			return apierr.Invalid(d.name, d.name+" must be zero (no limit) or positive")
		}
	}
	return nil
}

type dim struct {
	name string
	v    int64
}

func (r Rule) dims() []dim {
	return []dim{{RequestsPerMinute, r.RequestsPerMinute}, {TokensPerMinute, r.TokensPerMinute},
		{ConcurrentRequests, r.ConcurrentRequests}, {TokensPerDay, r.TokensPerDay}, {TokensPerMonth, r.TokensPerMonth}}
}

// Store keeps the rules set through the API.
type Store interface {
	PutLimitRule(ctx context.Context, r Rule) error
	DeleteLimitRule(ctx context.Context, scope, subject string) error
	ListLimitRules(ctx context.Context) ([]Rule, error)
}
