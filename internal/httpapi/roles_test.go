package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/metrics"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// TestRoleMatrix walks every route with keys people own, for each role:
// a key that holds every scope (admin included) still acts with at most
// its owner's role in its team, so a route is refused (403, over HTTP)
// exactly where the role lacks the route's scope, and allowed where it
// has it; an instance administrator's key may call everything; a
// deactivated owner's key nothing.
func TestRoleMatrix(t *testing.T) {
	every := append([]auth.Scope(nil), auth.ValidScopes...)
	owned := func(o auth.Owner) auth.Key {
		return auth.Key{ID: "key_owned", TeamID: "team_a", Scopes: every, Kind: auth.KindUser, OwnerUserID: "user_1", Owner: &o}
	}
	cases := map[string]struct {
		key   auth.Key
		allow func(auth.Scope) bool
	}{
		"instance admin":     {owned(auth.Owner{UserID: "user_1", Active: true, InstanceAdmin: true}), func(auth.Scope) bool { return true }},
		"deactivated":        {owned(auth.Owner{UserID: "user_1", Active: false, Role: auth.RoleOwner}), func(auth.Scope) bool { return false }},
		"no longer a member": {owned(auth.Owner{UserID: "user_1", Active: true}), func(auth.Scope) bool { return false }},
	}
	for _, r := range auth.Roles {
		cases[string(r)] = struct {
			key   auth.Key
			allow func(auth.Scope) bool
		}{owned(auth.Owner{UserID: "user_1", Active: true, Role: r}), func(sc auth.Scope) bool {
			return sc != auth.ScopeAdmin && sc != auth.ScopeModelsWrite && sc != auth.ScopeSCIM && slices.Contains(auth.RoleScopes(r), sc) ||
				// workflows includes approvals, as for any key
				sc == auth.ScopeApprovals && slices.Contains(auth.RoleScopes(r), auth.ScopeWorkflows)
		}}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newKeyServer(t, tc.key)
			s := &Server{}
			allowed, refused := 0, 0
			for _, rt := range s.routes() {
				if rt.scope == anyKey {
					continue
				}
				want := tc.allow(rt.scope)
				req, _ := http.NewRequest("GET", "/", nil)
				_, err := authorize(req, tc.key, rt.scope)
				if (err == nil) != want {
					t.Errorf("%s (scope %s): allowed=%v, want %v", rt.pattern, rt.scope, err == nil, want)
				}
				if want {
					allowed++
					continue
				}
				refused++
				method, path, _ := strings.Cut(rt.pattern, " ")
				path = strings.NewReplacer("{id}", "x1", "{user_id}", "user_x", "{scope}", "key", "{subject...}", "k", "{doc}", "d1", "{delivery_id}", "d1").Replace(path)
				resp, body := do(t, srv, method, path, "sk-sov-owned", `{}`)
				if resp.StatusCode != http.StatusForbidden || errCode(body) != "permission_denied" {
					t.Errorf("%s %s: %d %v, want 403 permission_denied", method, path, resp.StatusCode, body)
				}
			}
			t.Logf("%s: %d routes allowed, %d refused", name, allowed, refused)
		})
	}
}

// newKeyServer is newTestServer's API whose only key, "sk-sov-owned", is k.
func newKeyServer(t *testing.T, k auth.Key) *httptest.Server {
	s := &Server{
		Models: fakeCatalog{},
		Auth: fakeAuth{authenticate: func(ctx context.Context, secret string) (auth.Key, error) {
			if secret == "sk-sov-owned" {
				return k, nil
			}
			return auth.Key{}, auth.ErrInvalidKey
		}},
		Metrics: metrics.New(nil),
		MaxBody: 1 << 16,
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}
