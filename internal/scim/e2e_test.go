package scim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/app"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/models"
	"github.com/sovereign-ai/sovereign/internal/store"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

// env is the application as `sovereign serve` builds it (app.New) on a
// fresh database, with the group rule ml-research → team research,
// developer, and a key holding the scim scope.
type env struct {
	t     *testing.T
	url   string
	admin string // the bootstrap admin key
	scim  string // a key with only the scim scope
	db    store.Store
}

var rules = []auth.GroupRule{
	{Group: "ml-research", Team: "research", Role: auth.RoleDeveloper},
	{Group: "platform-admins", InstanceAdmin: true},
}

func newEnv(t *testing.T, kind string) *env {
	t.Helper()
	ctx := context.Background()
	dbURL := filepath.Join(t.TempDir(), "sovereign.db")
	if kind == "postgres" {
		dbURL = storetest.PostgresURL(t)
	}
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ms, err := models.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(ctx, config.Config{GroupRules: rules}, app.Options{DB: db, Models: ms, Engine: &engine.Config{Threads: 1}, CatalogRefresh: -1,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), DurableURL: filepath.Join(t.TempDir(), "durable.db")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	e := &env{t: t, url: srv.URL, admin: a.AdminKey, db: db}
	e.scim = e.key(map[string]any{"name": "okta-scim", "scopes": []string{"scim"}})
	return e
}

// eachDB runs f on SQLite and on PostgreSQL.
func eachDB(t *testing.T, f func(t *testing.T, e *env)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) { f(t, newEnv(t, kind)) })
	}
}

type resp struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// do sends body (a string as it is, anything else as JSON) with key.
func (e *env) do(key, method, path string, body any) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/scim+json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := resp{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			e.t.Fatalf("%s %s: %d %s: not a JSON object: %v", method, path, res.StatusCode, raw, err)
		}
	}
	return r
}

// scimDo is do with the SCIM key, expecting status.
func (e *env) scimDo(want int, method, path string, body any) map[string]any {
	e.t.Helper()
	r := e.do(e.scim, method, path, body)
	if r.status != want {
		e.t.Fatalf("%s %s = %d %s; want %d", method, path, r.status, r.raw, want)
	}
	if r.status != http.StatusNoContent && r.header.Get("Content-Type") != "application/scim+json" {
		e.t.Errorf("%s %s: Content-Type %q", method, path, r.header.Get("Content-Type"))
	}
	return r.body
}

// api is do on the API with key, expecting status.
func (e *env) api(key string, want int, method, path string, body any) map[string]any {
	e.t.Helper()
	r := e.do(key, method, path, body)
	if r.status != want {
		e.t.Fatalf("%s %s = %d %s; want %d", method, path, r.status, r.raw, want)
	}
	return r.body
}

// key creates a key as the admin and returns its secret.
func (e *env) key(req map[string]any) string {
	e.t.Helper()
	return e.api(e.admin, http.StatusCreated, "POST", "/v1/keys", req)["key"].(string)
}

// teamID returns the id of the team named name.
func (e *env) teamID(name string) string {
	e.t.Helper()
	for _, tm := range e.api(e.admin, http.StatusOK, "GET", "/v1/teams", nil)["data"].([]any) {
		if m := tm.(map[string]any); m["name"] == name {
			return m["id"].(string)
		}
	}
	e.t.Fatalf("no team %q", name)
	return ""
}

// role returns a user's role in team teamID and its source ("" when not a
// member), as the API shows it to the admin.
func (e *env) role(userID, teamID string) (string, string) {
	e.t.Helper()
	u := e.api(e.admin, http.StatusOK, "GET", "/v1/users/"+userID, nil)
	for _, m := range u["memberships"].([]any) {
		m := m.(map[string]any)
		if m["team_id"] == teamID {
			return m["role"].(string), m["source"].(string)
		}
	}
	return "", ""
}

func filterPath(resource, attr, value string, extra string) string {
	return "/scim/v2/" + resource + "?filter=" + url.QueryEscape(fmt.Sprintf("%s eq %q", attr, value)) + extra
}

func checkMeta(t *testing.T, res map[string]any, resourceType, base string) {
	t.Helper()
	m, _ := res["meta"].(map[string]any)
	if m == nil || m["resourceType"] != resourceType || m["created"] == nil || m["lastModified"] == nil ||
		m["location"] != base+"/"+resourceType+"s/"+res["id"].(string) {
		t.Errorf("meta = %v (want resourceType %s, created, lastModified, location)", m, resourceType)
	}
}

func patchOp(ops ...map[string]any) map[string]any {
	return map[string]any{"schemas": []string{"urn:ietf:params:scim:api:messages:2.0:PatchOp"}, "Operations": ops}
}

// TestOktaAssignAndUnassign replays what Okta sends when a person is
// assigned to the app, pushed in a group, and unassigned, and checks what
// the API then says of them and their keys.
func TestOktaAssignAndUnassign(t *testing.T) {
	eachDB(t, func(t *testing.T, e *env) {
		base := e.url + "/scim/v2"
		// Does the user exist?
		l := e.scimDo(200, "GET", filterPath("Users", "userName", "ada.lovelace@example.com", "&startIndex=1&count=100"), nil)
		if l["totalResults"].(float64) != 0 || len(l["Resources"].([]any)) != 0 || l["schemas"].([]any)[0] != "urn:ietf:params:scim:api:messages:2.0:ListResponse" {
			t.Fatalf("lookup before create: %v", l)
		}
		// Create.
		u := e.scimDo(201, "POST", "/scim/v2/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],
			"userName":"ada.lovelace@example.com","name":{"givenName":"Ada","familyName":"Lovelace"},
			"emails":[{"primary":true,"value":"ada.lovelace@example.com","type":"work"}],"displayName":"Ada Lovelace",
			"locale":"en-US","externalId":"00u1a2b3c4","groups":[],"password":"tEmp0rary!","active":true}`)
		id, _ := u["id"].(string)
		if !strings.HasPrefix(id, "user_") || u["userName"] != "ada.lovelace@example.com" || u["active"] != true || u["externalId"] != "00u1a2b3c4" {
			t.Fatalf("created: %v", u)
		}
		if _, ok := u["password"]; ok {
			t.Error("the password was echoed")
		}
		checkMeta(t, u, "User", base)
		// Read it back.
		got := e.scimDo(200, "GET", "/scim/v2/Users/"+id, nil)
		if got["userName"] != "ada.lovelace@example.com" || got["name"].(map[string]any)["givenName"] != "Ada" {
			t.Fatalf("GET: %v", got)
		}
		checkMeta(t, got, "User", base)
		// Profile push: PUT with a new given name (no displayName).
		put := e.scimDo(200, "PUT", "/scim/v2/Users/"+id, `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"id":"`+id+`",
			"userName":"ada.lovelace@example.com","name":{"givenName":"Augusta","middleName":"Ada","familyName":"Lovelace"},
			"emails":[{"primary":true,"value":"ada.lovelace@example.com","type":"work","display":"ada.lovelace@example.com"}],
			"active":true,"groups":[],"meta":{"resourceType":"User"}}`)
		if put["name"].(map[string]any)["givenName"] != "Augusta" || put["externalId"] != "00u1a2b3c4" {
			t.Fatalf("PUT: %v", put)
		}
		acct := e.api(e.admin, 200, "GET", "/v1/users/"+id, nil)
		if acct["email"] != "ada.lovelace@example.com" || acct["name"] != "Augusta Lovelace" || acct["active"] != true {
			t.Fatalf("the account after PUT: %v", acct)
		}
		// Push group ml-research.
		g := e.scimDo(201, "POST", "/scim/v2/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"ml-research","members":[]}`)
		gid, _ := g["id"].(string)
		if !strings.HasPrefix(gid, "grp_") || g["displayName"] != "ml-research" {
			t.Fatalf("group: %v", g)
		}
		checkMeta(t, g, "Group", base)
		// Add the member: the rule makes them a developer in research.
		g = e.scimDo(200, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "add", "path": "members",
			"value": []any{map[string]any{"value": id, "display": "ada.lovelace@example.com"}}}))
		if ms := g["members"].([]any); len(ms) != 1 || ms[0].(map[string]any)["value"] != id || ms[0].(map[string]any)["display"] != "ada.lovelace@example.com" {
			t.Fatalf("members after add: %v", g["members"])
		}
		research := e.teamID("research")
		if role, src := e.role(id, research); role != "developer" || src != "scim" {
			t.Fatalf("after the group add: role %q source %q in research", role, src)
		}
		// Keys: the user's own, and the team's service account.
		own := e.key(map[string]any{"name": "ada's", "team_id": research, "scopes": []string{"inference", "models:read"}, "owner_user_id": id})
		svc := e.key(map[string]any{"name": "research-app", "team_id": research, "scopes": []string{"models:read"}})
		e.api(own, 200, "GET", "/v1/models", nil)
		me := e.api(own, 200, "GET", "/v1/me", nil)
		if me["user"].(map[string]any)["id"] != id || me["user"].(map[string]any)["email"] != "ada.lovelace@example.com" {
			t.Fatalf("/v1/me with the user's key: %v", me)
		}
		// Remove the member (Okta's filter path): the role goes, and with
		// it the key.
		e.scimDo(200, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "remove", "path": `members[value eq "` + id + `"]`}))
		if role, _ := e.role(id, research); role != "" {
			t.Fatalf("after the group remove: still %q in research", role)
		}
		e.api(own, 401, "GET", "/v1/models", nil)
		e.api(svc, 200, "GET", "/v1/models", nil)
		// Assigned again, the key works again.
		e.scimDo(200, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "add", "path": "members", "value": []any{map[string]any{"value": id}}}))
		e.api(own, 200, "GET", "/v1/models", nil)
		// Okta renames a group by a PATCH without a path.
		g = e.scimDo(200, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "replace", "value": map[string]any{"id": gid, "displayName": "ml-research"}}))
		if g["displayName"] != "ml-research" {
			t.Fatalf("rename to the same name: %v", g)
		}
		// Unassign: Okta deactivates.
		u = e.scimDo(200, "PATCH", "/scim/v2/Users/"+id, patchOp(map[string]any{"op": "replace", "value": map[string]any{"active": false}}))
		if u["active"] != false {
			t.Fatalf("after deactivation: %v", u)
		}
		if acct := e.api(e.admin, 200, "GET", "/v1/users/"+id, nil); acct["active"] != false {
			t.Fatalf("the account after deactivation: %v", acct)
		}
		e.api(own, 401, "GET", "/v1/models", nil)
		e.api(svc, 200, "GET", "/v1/models", nil)
		// Still visible to Okta, inactive.
		if l := e.scimDo(200, "GET", filterPath("Users", "userName", "ADA.LOVELACE@example.com", ""), nil); l["totalResults"].(float64) != 1 ||
			l["Resources"].([]any)[0].(map[string]any)["active"] != false {
			t.Fatalf("lookup after deactivation: %v", l)
		}
	})
}

// TestEntraAssignAndUnassign replays what Microsoft Entra ID sends: its
// capitalised ops, string booleans, members removed by value, and a
// DELETE at the end.
func TestEntraAssignAndUnassign(t *testing.T) {
	eachDB(t, func(t *testing.T, e *env) {
		base := e.url + "/scim/v2"
		l := e.scimDo(200, "GET", filterPath("Users", "userName", "grace.hopper@example.com", ""), nil)
		if l["totalResults"].(float64) != 0 {
			t.Fatalf("lookup before create: %v", l)
		}
		u := e.scimDo(201, "POST", "/scim/v2/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User",
			"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],"externalId":"9f1c6c8e-entra","userName":"grace.hopper@example.com",
			"active":true,"emails":[{"primary":true,"type":"work","value":"grace.hopper@example.com"}],"meta":{"resourceType":"User"},
			"name":{"formatted":"Grace Hopper","familyName":"Hopper","givenName":"Grace"},"roles":[],
			"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"Research","employeeNumber":"1906"}}`)
		id := u["id"].(string)
		checkMeta(t, u, "User", base)
		if acct := e.api(e.admin, 200, "GET", "/v1/users/"+id, nil); acct["name"] != "Grace Hopper" || acct["email"] != "grace.hopper@example.com" {
			t.Fatalf("the account: %v", acct)
		}
		// Entra's updates: capitalised ops, one attribute per op, an
		// extension attribute it keeps sending.
		u = e.scimDo(200, "PATCH", "/scim/v2/Users/"+id, patchOp(
			map[string]any{"op": "Replace", "path": "displayName", "value": "Rear Admiral Grace Hopper"},
			map[string]any{"op": "Replace", "path": "name.givenName", "value": "Grace Brewster"},
			map[string]any{"op": "Replace", "path": "externalId", "value": "9f1c6c8e-entra-2"},
			map[string]any{"op": "Add", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "value": "Navy"},
			map[string]any{"op": "Replace", "path": "active", "value": "True"}))
		if u["displayName"] != "Rear Admiral Grace Hopper" || u["name"].(map[string]any)["givenName"] != "Grace Brewster" || u["externalId"] != "9f1c6c8e-entra-2" || u["active"] != true {
			t.Fatalf("after Replace ops: %v", u)
		}
		if acct := e.api(e.admin, 200, "GET", "/v1/users/"+id, nil); acct["name"] != "Rear Admiral Grace Hopper" {
			t.Fatalf("the account's name: %v", acct["name"])
		}
		if l := e.scimDo(200, "GET", filterPath("Users", "externalId", "9f1c6c8e-entra-2", ""), nil); l["totalResults"].(float64) != 1 {
			t.Fatalf("lookup by externalId: %v", l)
		}
		// The group: looked up, then created.
		l = e.scimDo(200, "GET", filterPath("Groups", "displayName", "ml-research", "&excludedAttributes=members"), nil)
		if l["totalResults"].(float64) != 0 {
			t.Fatalf("group lookup: %v", l)
		}
		g := e.scimDo(201, "POST", "/scim/v2/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],
			"externalId":"5c1d-entra-group","displayName":"ml-research","meta":{"resourceType":"Group"}}`)
		gid := g["id"].(string)
		checkMeta(t, g, "Group", base)
		if l := e.scimDo(200, "GET", filterPath("Groups", "displayName", "ML-Research", "&excludedAttributes=members"), nil); l["totalResults"].(float64) != 1 {
			t.Fatalf("group lookup after create: %v", l)
		} else if _, ok := l["Resources"].([]any)[0].(map[string]any)["members"]; ok {
			t.Error("members listed although excluded")
		}
		e.scimDo(200, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "Add", "path": "members", "value": []any{map[string]any{"$ref": nil, "value": id}}}))
		research := e.teamID("research")
		if role, src := e.role(id, research); role != "developer" || src != "scim" {
			t.Fatalf("after Add: %q %q", role, src)
		}
		e.scimDo(200, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "Remove", "path": "members", "value": []any{map[string]any{"$ref": nil, "value": id}}}))
		if role, _ := e.role(id, research); role != "" {
			t.Fatalf("after Remove: still %q", role)
		}
		if g := e.scimDo(200, "GET", "/scim/v2/Groups/"+gid, nil); len(g["members"].([]any)) != 0 {
			t.Fatalf("members after Remove: %v", g["members"])
		}
		// Back in, with keys.
		e.scimDo(200, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "Add", "path": "members", "value": []any{map[string]any{"value": id}}},
			map[string]any{"op": "Replace", "path": "displayName", "value": "ml-research"}))
		own := e.key(map[string]any{"name": "grace's", "team_id": research, "scopes": []string{"models:read"}, "owner_user_id": id})
		svc := e.key(map[string]any{"name": "research-app", "team_id": research, "scopes": []string{"models:read"}})
		e.api(own, 200, "GET", "/v1/models", nil)
		if u := e.scimDo(200, "GET", "/scim/v2/Users/"+id, nil); len(u["groups"].([]any)) != 1 || u["groups"].([]any)[0].(map[string]any)["display"] != "ml-research" {
			t.Fatalf("the user's groups: %v", u["groups"])
		}
		// Unassign: a string "False", then the DELETE.
		u = e.scimDo(200, "PATCH", "/scim/v2/Users/"+id, patchOp(map[string]any{"op": "Replace", "path": "active", "value": "False"}))
		if u["active"] != false {
			t.Fatalf("after active False: %v", u)
		}
		e.api(own, 401, "GET", "/v1/models", nil)
		e.api(svc, 200, "GET", "/v1/models", nil)
		e.scimDo(204, "DELETE", "/scim/v2/Users/"+id, nil)
		e.scimDo(404, "GET", "/scim/v2/Users/"+id, nil)
		e.scimDo(404, "PATCH", "/scim/v2/Users/"+id, patchOp(map[string]any{"op": "Replace", "path": "active", "value": "True"}))
		e.scimDo(404, "DELETE", "/scim/v2/Users/"+id, nil)
		if l := e.scimDo(200, "GET", filterPath("Users", "userName", "grace.hopper@example.com", ""), nil); l["totalResults"].(float64) != 0 {
			t.Fatalf("lookup after DELETE: %v", l)
		}
		acct := e.api(e.admin, 200, "GET", "/v1/users/"+id, nil)
		if acct["active"] != false || acct["email"] != "grace.hopper@example.com" {
			t.Fatalf("the account after DELETE: %v", acct)
		}
		if role, _ := e.role(id, research); role != "" {
			t.Fatalf("after DELETE: still %q in research", role)
		}
		if g := e.scimDo(200, "GET", "/scim/v2/Groups/"+gid, nil); len(g["members"].([]any)) != 0 {
			t.Fatalf("the deleted user is still a member: %v", g["members"])
		}
		e.api(own, 401, "GET", "/v1/models", nil)
		e.api(svc, 200, "GET", "/v1/models", nil)
		// Assigned again later: the same account comes back.
		u = e.scimDo(201, "POST", "/scim/v2/Users", `{"userName":"grace.hopper@example.com","active":true,"name":{"givenName":"Grace","familyName":"Hopper"}}`)
		if u["id"] != id || u["active"] != true {
			t.Fatalf("re-provisioned: %v (want id %s, active)", u, id)
		}
	})
}

// TestAuth: SCIM needs a key with the scim scope (or admin), answers
// refusals in SCIM's error shape, and the scope grants nothing else.
func TestAuth(t *testing.T) {
	e := newEnv(t, "sqlite")
	inference := e.key(map[string]any{"name": "app", "scopes": []string{"inference", "models:read"}})
	for _, c := range []struct {
		name, key string
		want      int
	}{
		{"no key", "", 401},
		{"a malformed key", "not-a-key", 401},
		{"an unknown key", "sk-sov-" + strings.Repeat("x", 43), 401},
		{"a key without scim", inference, 403},
		{"the scim key", e.scim, 200},
		{"an admin key", e.admin, 200},
	} {
		for _, p := range []string{"/scim/v2/Users", "/scim/v2/ServiceProviderConfig", "/scim/v2/Groups/grp_x"} {
			want := c.want
			if want == 200 && strings.HasSuffix(p, "grp_x") {
				want = 404
			}
			r := e.do(c.key, "GET", p, nil)
			if r.status != want {
				t.Errorf("%s: GET %s = %d %s; want %d", c.name, p, r.status, r.raw, want)
			}
			if r.header.Get("Content-Type") != "application/scim+json" {
				t.Errorf("%s: Content-Type %q", c.name, r.header.Get("Content-Type"))
			}
			if want >= 400 {
				schemas, _ := r.body["schemas"].([]any)
				if len(schemas) != 1 || schemas[0] != "urn:ietf:params:scim:api:messages:2.0:Error" || r.body["status"] != fmt.Sprint(want) || r.body["detail"] == "" {
					t.Errorf("%s: error body %s", c.name, r.raw)
				}
			}
		}
	}
	// The scim scope grants nothing else.
	e.api(e.scim, 403, "GET", "/v1/models", nil)
	e.api(e.scim, 403, "GET", "/v1/users", nil)
	// A scim key cannot be used against itself to widen anything: keys
	// need keys:read.
	e.api(e.scim, 403, "POST", "/v1/keys", map[string]any{"name": "x", "scopes": []string{"admin"}})
}

// TestDiscovery: what Okta and Entra ID read before provisioning.
func TestDiscovery(t *testing.T) {
	e := newEnv(t, "sqlite")
	spc := e.scimDo(200, "GET", "/scim/v2/ServiceProviderConfig", nil)
	sup := func(k string) any { return spc[k].(map[string]any)["supported"] }
	if sup("patch") != true || sup("bulk") != false || sup("filter") != true || sup("etag") != false || sup("changePassword") != false || sup("sort") != false {
		t.Errorf("ServiceProviderConfig: %v", spc)
	}
	if spc["filter"].(map[string]any)["maxResults"].(float64) != 200 {
		t.Errorf("maxResults: %v", spc["filter"])
	}
	if len(spc["authenticationSchemes"].([]any)) != 1 {
		t.Errorf("authenticationSchemes: %v", spc["authenticationSchemes"])
	}
	rts := e.scimDo(200, "GET", "/scim/v2/ResourceTypes", nil)
	if rts["totalResults"].(float64) != 2 {
		t.Errorf("ResourceTypes: %v", rts)
	}
	if u := e.scimDo(200, "GET", "/scim/v2/ResourceTypes/User", nil); u["endpoint"] != "/Users" || u["schema"] != "urn:ietf:params:scim:schemas:core:2.0:User" {
		t.Errorf("ResourceTypes/User: %v", u)
	}
	sch := e.scimDo(200, "GET", "/scim/v2/Schemas", nil)
	if sch["totalResults"].(float64) != 2 {
		t.Errorf("Schemas: %v", sch)
	}
	g := e.scimDo(200, "GET", "/scim/v2/Schemas/urn:ietf:params:scim:schemas:core:2.0:Group", nil)
	if g["name"] != "Group" || len(g["attributes"].([]any)) != 2 {
		t.Errorf("Schemas/Group: %v", g)
	}
	e.scimDo(404, "GET", "/scim/v2/Schemas/urn:nope", nil)
	e.scimDo(501, "POST", "/scim/v2/Bulk", `{}`)
	e.scimDo(501, "GET", "/scim/v2/Me", nil)
	e.scimDo(404, "GET", "/scim/v2/Nope", nil)
	r := e.do(e.scim, "DELETE", "/scim/v2/Users", nil)
	if r.status != 405 || r.header.Get("Allow") != "GET, POST" {
		t.Errorf("DELETE /Users = %d, Allow %q", r.status, r.header.Get("Allow"))
	}
}

// TestUsers: uniqueness, taking over existing accounts, filters, pages,
// and malformed requests.
func TestUsers(t *testing.T) {
	e := newEnv(t, "sqlite")
	create := func(userName string) string {
		t.Helper()
		return e.scimDo(201, "POST", "/scim/v2/Users", map[string]any{"userName": userName, "name": map[string]any{"givenName": "N", "familyName": userName}})["id"].(string)
	}
	a := create("a@example.com")
	// A userName in use, in another case: 409 uniqueness.
	r := e.do(e.scim, "POST", "/scim/v2/Users", map[string]any{"userName": "A@Example.COM"})
	if r.status != 409 || r.body["scimType"] != "uniqueness" {
		t.Errorf("duplicate userName: %d %s", r.status, r.raw)
	}
	// userName that is not an address: emails[primary] is the address.
	u := e.scimDo(201, "POST", "/scim/v2/Users", map[string]any{"userName": "bjensen", "emails": []any{
		map[string]any{"value": "other@example.com", "type": "home"}, map[string]any{"value": "Babs@Example.com", "primary": true}}})
	if u["userName"] != "bjensen" || u["emails"].([]any)[0].(map[string]any)["value"] != "babs@example.com" {
		t.Errorf("userName without an address: %v", u)
	}
	if r := e.do(e.scim, "POST", "/scim/v2/Users", map[string]any{"userName": "nobody"}); r.status != 400 || r.body["scimType"] != "invalidValue" {
		t.Errorf("no address at all: %d %s", r.status, r.raw)
	}
	// Another userName with an address in use by a SCIM user: 409.
	if r := e.do(e.scim, "POST", "/scim/v2/Users", map[string]any{"userName": "babs2", "emails": []any{map[string]any{"value": "babs@example.com"}}}); r.status != 409 {
		t.Errorf("an address in use: %d %s", r.status, r.raw)
	}
	// An account made by the API is taken over by a POST for its address,
	// keeping its id and memberships.
	def := e.teamID("default")
	made := e.api(e.admin, 201, "POST", "/v1/users", map[string]any{"email": "carol@example.com", "name": "Carol",
		"memberships": []any{map[string]any{"team_id": def, "role": "viewer"}}})
	e.scimDo(404, "GET", "/scim/v2/Users/"+made["id"].(string), nil)
	if l := e.scimDo(200, "GET", filterPath("Users", "userName", "carol@example.com", ""), nil); l["totalResults"].(float64) != 0 {
		t.Errorf("an unmanaged account is listed: %v", l)
	}
	claimed := e.scimDo(201, "POST", "/scim/v2/Users", map[string]any{"userName": "carol@example.com", "displayName": "Carol C.", "externalId": "okta-c"})
	if claimed["id"] != made["id"] || claimed["displayName"] != "Carol C." {
		t.Errorf("taking over: %v (want id %v)", claimed, made["id"])
	}
	if role, src := e.role(made["id"].(string), def); role != "viewer" || src != "api" {
		t.Errorf("the taken-over account's membership: %q %q", role, src)
	}
	// Instance administrators made outside SCIM are not taken over.
	e.api(e.admin, 201, "POST", "/v1/users", map[string]any{"email": "root@example.com", "instance_admin": true})
	if r := e.do(e.scim, "POST", "/scim/v2/Users", map[string]any{"userName": "root@example.com", "active": false}); r.status != 409 || r.body["scimType"] != "uniqueness" {
		t.Errorf("taking over an instance administrator: %d %s", r.status, r.raw)
	}
	// Filters.
	for _, c := range []struct {
		filter string
		want   float64
	}{
		{`userName eq "a@example.com"`, 1},
		{`USERNAME eq "A@EXAMPLE.COM"`, 1},
		{`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "bjensen"`, 1},
		{`emails.value eq "babs@example.com"`, 1},
		{`emails eq "BABS@example.com"`, 1},
		{`externalId eq "okta-c"`, 1},
		{`externalId eq "OKTA-C"`, 0},
		{`id eq "` + a + `"`, 1},
		{`userName eq "none@example.com"`, 0},
	} {
		if l := e.scimDo(200, "GET", "/scim/v2/Users?filter="+url.QueryEscape(c.filter), nil); l["totalResults"].(float64) != c.want {
			t.Errorf("filter %s: %v", c.filter, l["totalResults"])
		}
	}
	for _, f := range []string{`userName sw "a"`, `title eq "x"`, `userName eq "a" and active eq true`, `userName pr`, `(userName eq "a")`,
		`userName eq a`, `userName eq true`, `urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "x"`} {
		r := e.do(e.scim, "GET", "/scim/v2/Users?filter="+url.QueryEscape(f), nil)
		if r.status != 400 || r.body["scimType"] != "invalidFilter" {
			t.Errorf("filter %s: %d %s", f, r.status, r.raw)
		}
	}
	// Pages: 3 users (a, bjensen, carol).
	l := e.scimDo(200, "GET", "/scim/v2/Users?startIndex=2&count=2", nil)
	if l["totalResults"].(float64) != 3 || l["startIndex"].(float64) != 2 || l["itemsPerPage"].(float64) != 2 || len(l["Resources"].([]any)) != 2 {
		t.Errorf("page: %v", l)
	}
	if l := e.scimDo(200, "GET", "/scim/v2/Users?count=0", nil); l["totalResults"].(float64) != 3 || len(l["Resources"].([]any)) != 0 {
		t.Errorf("count=0: %v", l)
	}
	if l := e.scimDo(200, "GET", "/scim/v2/Users?startIndex=0&count=100000", nil); l["startIndex"].(float64) != 1 || len(l["Resources"].([]any)) != 3 {
		t.Errorf("startIndex=0, a large count: %v", l)
	}
	if r := e.do(e.scim, "GET", "/scim/v2/Users?count=ten", nil); r.status != 400 {
		t.Errorf("count=ten: %d", r.status)
	}
	// Malformed and oversized bodies.
	for _, body := range []string{`{"userName":`, `[1,2]`, `null`, `{"userName":"x@example.com"} {}`} {
		if r := e.do(e.scim, "POST", "/scim/v2/Users", body); r.status != 400 || r.body["scimType"] != "invalidSyntax" {
			t.Errorf("body %s: %d %s", body, r.status, r.raw)
		}
	}
	big := `{"userName":"big@example.com","displayName":"` + strings.Repeat("x", 1<<20) + `"}`
	if r := e.do(e.scim, "POST", "/scim/v2/Users", big); r.status != 413 {
		t.Errorf("a body over 1 MiB: %d", r.status)
	}
	if r := e.do(e.scim, "POST", "/scim/v2/Users", map[string]any{"userName": "long@example.com", "displayName": strings.Repeat("x", 300)}); r.status != 400 {
		t.Errorf("a long displayName: %d", r.status)
	}
	for _, ops := range []map[string]any{
		patchOp(map[string]any{"op": "frobnicate", "path": "active", "value": true}),
		patchOp(map[string]any{"op": "remove", "path": "userName"}),
		patchOp(map[string]any{"op": "replace", "path": "active", "value": "maybe"}),
		patchOp(map[string]any{"op": "replace", "path": "emails[type eq \"work\".value", "value": "x"}),
		patchOp(map[string]any{"op": "remove"}),
		patchOp(),
	} {
		if r := e.do(e.scim, "PATCH", "/scim/v2/Users/"+a, ops); r.status != 400 {
			t.Errorf("PATCH %v: %d %s", ops, r.status, r.raw)
		}
	}
	// PATCH userName: the address follows; onto a taken one: 409.
	u = e.scimDo(200, "PATCH", "/scim/v2/Users/"+a, patchOp(map[string]any{"op": "Replace", "path": "userName", "value": "a2@example.com"},
		map[string]any{"op": "replace", "value": map[string]any{"name.familyName": "Second", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": map[string]any{"x": 1}}}))
	if u["userName"] != "a2@example.com" || u["name"].(map[string]any)["familyName"] != "Second" {
		t.Errorf("PATCH userName: %v", u)
	}
	if acct := e.api(e.admin, 200, "GET", "/v1/users/"+a, nil); acct["email"] != "a2@example.com" || acct["name"] != "N Second" {
		t.Errorf("the account after PATCH userName: %v", acct)
	}
	if r := e.do(e.scim, "PATCH", "/scim/v2/Users/"+a, patchOp(map[string]any{"op": "replace", "path": "userName", "value": "carol@example.com"})); r.status != 409 {
		t.Errorf("PATCH onto a taken userName: %d %s", r.status, r.raw)
	}
	e.scimDo(404, "PUT", "/scim/v2/Users/user_nope", map[string]any{"userName": "x@example.com"})
}

// TestGroups: rules follow renames and deletes, members must be SCIM
// users, and a PATCH names at most 1,000 members.
func TestGroups(t *testing.T) {
	e := newEnv(t, "sqlite")
	var ids []string
	for _, n := range []string{"a", "b"} {
		ids = append(ids, e.scimDo(201, "POST", "/scim/v2/Users", map[string]any{"userName": n + "@example.com"})["id"].(string))
	}
	g := e.scimDo(201, "POST", "/scim/v2/Groups", map[string]any{"displayName": "ml-research", "externalId": "x1",
		"members": []any{map[string]any{"value": ids[0]}, map[string]any{"value": ids[1]}}})
	gid := g["id"].(string)
	research := e.teamID("research")
	for _, id := range ids {
		if role, _ := e.role(id, research); role != "developer" {
			t.Fatalf("member %s of a created group: %q", id, role)
		}
	}
	if r := e.do(e.scim, "POST", "/scim/v2/Groups", map[string]any{"displayName": "ML-RESEARCH"}); r.status != 409 || r.body["scimType"] != "uniqueness" {
		t.Errorf("duplicate displayName: %d %s", r.status, r.raw)
	}
	if r := e.do(e.scim, "POST", "/scim/v2/Groups", map[string]any{"displayName": "x", "members": []any{map[string]any{"value": "user_nope"}}}); r.status != 400 {
		t.Errorf("an unknown member: %d %s", r.status, r.raw)
	}
	if l := e.scimDo(200, "GET", filterPath("Groups", "externalId", "x1", ""), nil); l["totalResults"].(float64) != 1 || len(l["Resources"].([]any)[0].(map[string]any)["members"].([]any)) != 2 {
		t.Errorf("lookup by externalId: %v", l)
	}
	if r := e.do(e.scim, "GET", "/scim/v2/Groups?filter="+url.QueryEscape(`members eq "x"`), nil); r.status != 400 || r.body["scimType"] != "invalidFilter" {
		t.Errorf("filter on members: %d %s", r.status, r.raw)
	}
	// Rename: the rule no longer matches.
	e.scimDo(200, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "Replace", "path": "displayName", "value": "ml-research-old"}))
	for _, id := range ids {
		if role, _ := e.role(id, research); role != "" {
			t.Fatalf("after the rename, %s is still %q", id, role)
		}
	}
	// PUT back with one member (members absent from a PUT are removed).
	e.scimDo(200, "PUT", "/scim/v2/Groups/"+gid, map[string]any{"displayName": "ml-research", "members": []any{map[string]any{"value": ids[1]}}})
	if r0, _ := e.role(ids[0], research); r0 != "" {
		t.Errorf("a member PUT left out kept %q", r0)
	}
	if r1, _ := e.role(ids[1], research); r1 != "developer" {
		t.Errorf("the member PUT kept: %q", r1)
	}
	// Replace all members; remove all.
	g = e.scimDo(200, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "replace", "path": "members", "value": []any{map[string]any{"value": ids[0]}}}))
	if ms := g["members"].([]any); len(ms) != 1 || ms[0].(map[string]any)["value"] != ids[0] {
		t.Errorf("after replacing members: %v", ms)
	}
	if r1, _ := e.role(ids[1], research); r1 != "" {
		t.Errorf("a replaced member kept %q", r1)
	}
	e.scimDo(200, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "remove", "path": "members"}))
	if r0, _ := e.role(ids[0], research); r0 != "" {
		t.Errorf("after removing every member: %q", r0)
	}
	// Instance administration by a group, and the group's deletion.
	adm := e.scimDo(201, "POST", "/scim/v2/Groups", map[string]any{"displayName": "platform-admins", "members": []any{map[string]any{"value": ids[0]}}})
	if acct := e.api(e.admin, 200, "GET", "/v1/users/"+ids[0], nil); acct["instance_admin"] != true {
		t.Errorf("a platform-admins member is not an instance administrator: %v", acct)
	}
	e.scimDo(204, "DELETE", "/scim/v2/Groups/"+adm["id"].(string), nil)
	if acct := e.api(e.admin, 200, "GET", "/v1/users/"+ids[0], nil); acct["instance_admin"] != false {
		t.Errorf("still an instance administrator after the group's deletion: %v", acct)
	}
	e.scimDo(404, "GET", "/scim/v2/Groups/"+adm["id"].(string), nil)
	// At most 1,000 members named in a PATCH.
	many := make([]any, 1001)
	for i := range many {
		many[i] = map[string]any{"value": fmt.Sprintf("user_%d", i)}
	}
	if r := e.do(e.scim, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "add", "path": "members", "value": many})); r.status != 400 || r.body["scimType"] != "invalidValue" {
		t.Errorf("1,001 members: %d %s", r.status, r.raw)
	}
	if r := e.do(e.scim, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "add", "path": "members", "value": []any{map[string]any{"value": "user_nope"}}})); r.status != 400 {
		t.Errorf("adding an unknown member: %d %s", r.status, r.raw)
	}
	if r := e.do(e.scim, "PATCH", "/scim/v2/Groups/"+gid, patchOp(map[string]any{"op": "remove", "path": "displayName"})); r.status != 400 {
		t.Errorf("removing displayName: %d %s", r.status, r.raw)
	}
	if r := e.do(e.scim, "PATCH", "/scim/v2/Groups/"+gid, `{"Operations":[{"op":"add"`); r.status != 400 || r.body["scimType"] != "invalidSyntax" {
		t.Errorf("malformed JSON: %d %s", r.status, r.raw)
	}
}
