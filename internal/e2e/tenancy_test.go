package e2e

import (
	"encoding/json"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// deploymentWide are the documented routes with a path parameter whose
// object belongs to no team: models, limit rules and policies are the
// deployment's (admin keys administer them; other keys read models).
var deploymentWide = map[string]string{
	"/v1/models/{id}":                    "models are the deployment's",
	"/v1/models/{id}/load":               "models are the deployment's",
	"/v1/models/{id}/unload":             "models are the deployment's",
	"/v1/limits/rules/{scope}/{subject}": "limit rules are the deployment's (admin)",
	"/v1/policies/{id}":                  "policies are the deployment's (admin)",
}

// TestAnotherTeamsIDsAre404: every documented route that names an object
// by id, called by a key of another team holding every scope but admin,
// answers 404 (or 403 where the route is admin's alone) — for GET and for
// every change — and the object is unchanged for its own team afterwards.
// The routes come from docs/openapi.yaml, so a new route without an
// object here fails the test until it has one.
func TestAnotherTeamsIDsAre404(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 512})
	allScopes := []string{"inference", "models:read", "models:write", "keys:read", "records:read", "workflows", "approvals", "webhooks", "console"}
	teamA, keyA := teamWithKey(t, e, "owners", allScopes...)
	teamB, keyB := teamWithKey(t, e, "strangers", allScopes...)
	// And a person of team B: a developer's own key.
	devB := e.json("POST", "/v1/users", map[string]any{"email": "stranger@example.com",
		"memberships": []map[string]any{{"team_id": teamB, "role": "developer"}}}, 201)["id"].(string)
	personKeyB := e.json("POST", "/v1/keys", map[string]any{"name": "stranger's", "team_id": teamB, "owner_user_id": devB,
		"scopes": []string{"inference", "models:read", "keys:read", "records:read", "workflows", "approvals", "webhooks", "console"}}, 201)["key"].(string)

	// Team A's objects, one of each kind.
	ids := map[string]string{}
	ids["team"] = teamA
	keys := e.jsonWith(keyA, "GET", "/v1/keys", nil, 200)["data"].([]any)
	ids["key"] = keys[0].(map[string]any)["id"].(string)
	wf := e.jsonWith(keyA, "POST", "/v1/workflows", map[string]any{"name": "w", "definition": map[string]any{"steps": []any{
		map[string]any{"id": "ok", "type": "approval", "instructions": "ok?", "timeout": "1h"}}}}, 201)
	ids["workflow"] = wf["id"].(string)
	hook := e.jsonWith(keyA, "POST", "/v1/webhooks", map[string]any{"url": "https://hooks.example.invalid/in", "events": []string{"*"}}, 201)
	ids["webhook"] = hook["id"].(string)
	run := e.jsonWith(keyA, "POST", "/v1/workflows/"+ids["workflow"]+"/runs", map[string]any{"input": map[string]any{}}, 201)
	ids["run"] = run["id"].(string)
	for deadline := time.Now().Add(30 * time.Second); ids["approval"] == "" || ids["delivery"] == ""; time.Sleep(50 * time.Millisecond) {
		if as := e.jsonWith(keyA, "GET", "/v1/approvals?status=pending", nil, 200)["data"].([]any); len(as) > 0 {
			ids["approval"] = as[0].(map[string]any)["id"].(string)
		}
		if ds := e.jsonWith(keyA, "GET", "/v1/webhooks/"+ids["webhook"]+"/deliveries", nil, 200)["data"].([]any); len(ds) > 0 {
			ids["delivery"] = ds[0].(map[string]any)["id"].(string)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no approval or delivery: %v", ids)
		}
	}
	// A member of team A (users are administered by admins alone).
	ids["user"] = e.json("POST", "/v1/users", map[string]any{"email": "member@example.com",
		"memberships": []map[string]any{{"team_id": teamA, "role": "viewer"}}}, 201)["id"].(string)
	ids["invitation"] = e.json("POST", "/v1/invitations", map[string]any{"email": "invitee@example.com", "team_id": teamA, "role": "viewer"}, 201)["id"].(string)
	ids["collection"] = e.jsonWith(keyA, "POST", "/v1/collections", map[string]any{"name": "c"}, 201)["id"].(string)
	ids["document"] = e.jsonWith(keyA, "POST", "/v1/collections/"+ids["collection"]+"/documents", map[string]any{"title": "d", "text": "Some text."}, 202)["id"].(string)
	ids["response"] = e.jsonWith(keyA, "POST", "/v1/responses", map[string]any{"model": "gemma3-270m", "input": "hi", "max_output_tokens": 2}, 200)["id"].(string)
	ids["file"] = e.uploadJSONL(keyA, batchLine("q", "gemma3-270m", "hi", "")+"\n")
	ids["batch"] = e.jsonWith(keyA, "POST", "/v1/batches", map[string]any{"input_file_id": ids["file"], "endpoint": "/v1/chat/completions", "completion_window": "24h"}, 200)["id"].(string)
	e.json("POST", "/v1/policies", map[string]any{"name": "note", "scope": "team", "scope_id": teamA, "enabled": true,
		"rules": []map[string]any{{"name": "every", "stage": "input", "when": "true", "action": "flag"}}}, 201)
	chat := e.request(keyA, "POST", "/v1/chat/completions", map[string]any{"model": "gemma3-270m", "messages": []map[string]any{{"role": "user", "content": "hi"}}, "max_tokens": 2})
	io.Copy(io.Discard, chat.Body)
	chat.Body.Close()
	ids["log"] = chat.Header.Get("X-Request-Id")
	for deadline := time.Now().Add(10 * time.Second); ids["decision"] == ""; time.Sleep(50 * time.Millisecond) {
		if ds := e.jsonWith(keyA, "GET", "/v1/policy_decisions", nil, 200)["data"].([]any); len(ds) > 0 {
			ids["decision"] = ds[0].(map[string]any)["id"].(string)
		}
		if time.Now().After(deadline) {
			t.Fatal("no policy decision")
		}
	}

	// What each path parameter names, by the route's prefix.
	objectOf := func(path, param string) string {
		switch {
		case param == "delivery_id":
			return "delivery"
		case param == "doc":
			return "document"
		case param == "user_id" || strings.HasPrefix(path, "/v1/users/"):
			return "user"
		case strings.HasPrefix(path, "/v1/invitations/"):
			return "invitation"
		case strings.HasPrefix(path, "/v1/workflows/"):
			return "workflow"
		case strings.HasPrefix(path, "/v1/workflow_runs/"):
			return "run"
		case strings.HasPrefix(path, "/v1/approvals/"):
			return "approval"
		case strings.HasPrefix(path, "/v1/webhooks/"):
			return "webhook"
		case strings.HasPrefix(path, "/v1/collections/"):
			return "collection"
		case strings.HasPrefix(path, "/v1/responses/"):
			return "response"
		case strings.HasPrefix(path, "/v1/files/"):
			return "file"
		case strings.HasPrefix(path, "/v1/batches/"):
			return "batch"
		case strings.HasPrefix(path, "/v1/logs/"):
			return "log"
		case strings.HasPrefix(path, "/v1/policy_decisions/"):
			return "decision"
		case strings.HasPrefix(path, "/v1/keys/"):
			return "key"
		case strings.HasPrefix(path, "/v1/teams/"):
			return "team"
		}
		return ""
	}
	// Bodies a change needs to get past validation (a body the route
	// refuses would answer 400 before the object is looked up).
	bodies := map[string]any{
		"POST /v1/workflows/{id}/runs":                              map[string]any{"input": map[string]any{}},
		"PATCH /v1/workflows/{id}":                                  map[string]any{"name": "x", "definition": map[string]any{"steps": []any{map[string]any{"id": "t", "type": "transform", "template": "x"}}}},
		"PUT /v1/workflows/{id}":                                    map[string]any{"name": "x", "definition": map[string]any{"steps": []any{map[string]any{"id": "t", "type": "transform", "template": "x"}}}},
		"POST /v1/approvals/{id}":                                   map[string]any{"decision": "approve"},
		"PATCH /v1/webhooks/{id}":                                   map[string]any{"description": "x"},
		"POST /v1/webhooks/{id}/rotate_secret":                      map[string]any{},
		"POST /v1/collections/{id}/documents":                       map[string]any{"text": "x"},
		"POST /v1/collections/{id}/search":                          map[string]any{"query": "x"},
		"PATCH /v1/teams/{id}":                                      map[string]any{"capture": true},
		"PATCH /v1/keys/{id}":                                       map[string]any{"name": "x"},
		"PATCH /v1/collections/{id}":                                map[string]any{"name": "x"},
		"POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver": map[string]any{},
	}

	doc := loadSpec(t)
	var routes []string
	for path, item := range doc.Paths.Map() {
		if !strings.Contains(path, "{") {
			continue
		}
		if _, ok := deploymentWide[path]; ok {
			continue
		}
		for method := range item.Operations() {
			routes = append(routes, method+" "+path)
		}
	}
	sort.Strings(routes) // GETs before the changes of the same path
	sort.SliceStable(routes, func(i, j int) bool {
		return strings.HasPrefix(routes[i], "GET ") && !strings.HasPrefix(routes[j], "GET ")
	})
	for _, stranger := range []struct{ who, key string }{{"another team's key", keyB}, {"a developer of another team", personKeyB}} {
		for _, route := range routes {
			method, path, _ := strings.Cut(route, " ")
			url := path
			for _, seg := range strings.Split(path, "/") {
				if !strings.HasPrefix(seg, "{") {
					continue
				}
				param := strings.Trim(seg, "{}")
				obj := objectOf(path, param)
				id := ids[obj]
				if id == "" {
					t.Fatalf("%s: no object of team A for {%s} (%q): add one to this test", route, param, obj)
				}
				url = strings.Replace(url, seg, id, 1)
			}
			resp := e.request(stranger.key, method, url, bodies[route])
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var env struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			json.Unmarshal(raw, &env)
			t.Logf("%s as %s: %d", route, stranger.who, resp.StatusCode)
			switch {
			case resp.StatusCode == 404:
			case resp.StatusCode == 403 && env.Error.Code == "permission_denied" && strings.Contains(string(raw), "'admin' scope"):
				// The route is admin's alone: the key never reaches the object.
			default:
				t.Errorf("%s as %s: %d %s", route, stranger.who, resp.StatusCode, raw)
			}
		}
	}

	// Nothing changed for team A.
	for _, path := range []string{"/v1/workflows/" + ids["workflow"], "/v1/workflow_runs/" + ids["run"], "/v1/approvals/" + ids["approval"],
		"/v1/webhooks/" + ids["webhook"], "/v1/webhooks/" + ids["webhook"] + "/deliveries/" + ids["delivery"], "/v1/collections/" + ids["collection"],
		"/v1/responses/" + ids["response"], "/v1/files/" + ids["file"], "/v1/batches/" + ids["batch"], "/v1/logs/" + ids["log"]} {
		if got := e.jsonWith(keyA, "GET", path, nil, 200); got["id"] == nil {
			t.Errorf("%s for its own team: %v", path, got)
		}
	}
	if a := e.jsonWith(keyA, "GET", "/v1/approvals/"+ids["approval"], nil, 200); a["status"] != "pending" {
		t.Errorf("another team decided the approval: %v", a)
	}
	if r := e.jsonWith(keyA, "GET", "/v1/workflow_runs/"+ids["run"], nil, 200); r["status"] == "cancelled" {
		t.Errorf("another team cancelled the run: %v", r)
	}
	if h := e.jsonWith(keyA, "GET", "/v1/webhooks/"+ids["webhook"], nil, 200); h["description"] == "x" {
		t.Errorf("another team changed the webhook: %v", h)
	}
}
