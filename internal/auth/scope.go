package auth

import (
	"fmt"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Scope names one permission a key carries. A request is allowed when the
// key holds the scope its route requires, or holds ScopeAdmin.
type Scope string

// The scopes Sovereign knows. Routes name the one they require; see
// docs/auth.md for the table of routes and scopes.
const (
	// ScopeInference allows the inference endpoints: chat completions,
	// completions, embeddings, rerank, tokenize and detokenize.
	ScopeInference Scope = "inference"
	// ScopeModelsRead allows listing and retrieving models.
	ScopeModelsRead Scope = "models:read"
	// ScopeModelsWrite allows changing the model catalogue (pull, remove).
	ScopeModelsWrite Scope = "models:write"
	// ScopeKeysRead allows listing the keys of the caller's own team
	// (metadata only; secrets are never readable).
	ScopeKeysRead Scope = "keys:read"
	// ScopeRecordsRead allows reading the caller's team's records: the
	// request log.
	ScopeRecordsRead Scope = "records:read"
	// ScopeWorkflows allows defining and running the team's workflows,
	// reading their runs and events, and deciding their approvals when
	// an approval names no approvers.
	ScopeWorkflows Scope = "workflows"
	// ScopeApprovals is for approvers: an approval step that names it
	// among its approvers' scopes may be decided by keys holding it.
	ScopeApprovals Scope = "approvals"
	// ScopeWebhooks allows managing the team's webhooks, their secrets
	// and deliveries (subscribing to audit.triggered also needs
	// ScopeRecordsRead).
	ScopeWebhooks Scope = "webhooks"
	// ScopeConsole allows signing in to the web console (/console). It
	// grants no API access of its own: every console page still needs the
	// scopes of the API calls it makes, so a console-only key signs in
	// and sees nothing it could not read through the API.
	ScopeConsole Scope = "console"
	// ScopeSCIM is an identity provider's provisioning token: /scim/v2
	// (users and groups) and nothing else (docs/scim.md).
	ScopeSCIM Scope = "scim"
	// ScopeAdmin allows everything, for every team: creating, rotating and
	// revoking keys, managing teams, and every other scope.
	ScopeAdmin Scope = "admin"
)

// ValidScopes lists every scope in a stable order (the order docs and
// help texts show them in).
var ValidScopes = []Scope{ScopeInference, ScopeModelsRead, ScopeModelsWrite, ScopeKeysRead, ScopeRecordsRead, ScopeWorkflows, ScopeApprovals, ScopeWebhooks, ScopeConsole, ScopeSCIM, ScopeAdmin}

// Valid reports whether s is one of ValidScopes.
func (s Scope) Valid() bool {
	for _, v := range ValidScopes {
		if s == v {
			return true
		}
	}
	return false
}

// String returns the scope's name.
func (s Scope) String() string { return string(s) }

// ParseScopes parses a list of scope names separated by commas and/or
// white space ("inference,models:read" or "inference models:read"),
// dropping duplicates and keeping the first-seen order. It returns a 400
// naming "scopes" (apierr.Invalid) for an unknown name or an empty list.
func ParseScopes(s string) ([]Scope, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	return NormalizeScopes(fields)
}

// NormalizeScopes validates a list of scope names (as a JSON request
// carries them), drops duplicates and keeps the first-seen order. It
// returns a 400 naming "scopes" (apierr.Invalid) for an unknown or empty
// name, or for an empty list; its message starts "invalid scopes: ", the
// words the API has always answered with.
func NormalizeScopes(names []string) ([]Scope, error) {
	out := make([]Scope, 0, len(names))
	seen := make(map[Scope]bool, len(names))
	for _, n := range names {
		sc := Scope(strings.TrimSpace(n))
		if !sc.Valid() {
			return nil, apierr.Invalid("scopes", fmt.Sprintf("invalid scopes: unknown scope %q (valid: %s)", n, validList()))
		}
		if !seen[sc] {
			seen[sc] = true
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, apierr.Invalid("scopes", "invalid scopes: at least one scope is required (valid: "+validList()+")")
	}
	return out, nil
}

func validList() string {
	s := make([]string, len(ValidScopes))
	for i, v := range ValidScopes {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// HasScope reports whether key carries scope. ScopeAdmin implies every
// scope. It looks only at the scope list: whether the key is revoked or
// expired is Authenticate's business.
//
// A key a user owns holds a scope only while its owner may too: an
// instance administrator every scope, a team member their role's
// (RoleScopes), checked here at every request, so that a role taken
// away applies to the keys at once.
func HasScope(key Key, scope Scope) bool {
	if key.OwnerUserID != "" {
		o := key.Owner
		if o == nil || !o.Active {
			return false
		}
		if !o.InstanceAdmin && (scope == ScopeAdmin || !holds(roleScopes[o.Role], scope)) {
			return false
		}
	}
	return holds(key.Scopes, scope)
}

func holds(scopes []Scope, scope Scope) bool {
	for _, s := range scopes {
		// workflows includes approvals: who runs a team's workflows may
		// see and decide its approvals.
		if s == scope || s == ScopeAdmin || (s == ScopeWorkflows && scope == ScopeApprovals) {
			return true
		}
	}
	return false
}

// JoinScopes renders scopes as one space-separated string, the form the
// stores keep them in (as OAuth 2 writes scope lists).
func JoinScopes(scopes []Scope) string {
	s := make([]string, len(scopes))
	for i, v := range scopes {
		s[i] = string(v)
	}
	return strings.Join(s, " ")
}

// SplitScopes parses the stored form written by JoinScopes. It does not
// validate names, so a key written by a newer version keeps its scopes.
func SplitScopes(s string) []Scope {
	f := strings.Fields(s)
	out := make([]Scope, len(f))
	for i, v := range f {
		out[i] = Scope(v)
	}
	return out
}
