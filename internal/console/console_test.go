package console_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/app"
	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/console"
	"github.com/sovereign-ai/sovereign/internal/console/session"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/models"
	"github.com/sovereign-ai/sovereign/internal/store"
)

// env is the application as `sovereign serve` builds it (app.New), on a
// fresh SQLite database with no models, served over HTTP or HTTPS.
type env struct {
	t     *testing.T
	url   string
	admin string
	db    store.Store
	tls   bool
}

func newEnv(t *testing.T, useTLS bool) *env {
	// These tests sign in with keys: the break-glass path, on.
	return newEnvConfig(t, useTLS, config.Config{ConsoleKeySignIn: true})
}

// newEnvConfig is newEnv with cfg.
func newEnvConfig(t *testing.T, useTLS bool, cfg config.Config) *env {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "sovereign.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ms, err := models.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(ctx, cfg, app.Options{DB: db, Models: ms, Engine: &engine.Config{Threads: 1}, CatalogRefresh: -1,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), DurableURL: filepath.Join(t.TempDir(), "durable.db")})
	if err != nil {
		t.Fatal(err)
	}
	var srv *httptest.Server
	if useTLS {
		srv = httptest.NewTLSServer(a.Handler())
	} else {
		srv = httptest.NewServer(a.Handler())
	}
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	return &env{t: t, url: srv.URL, admin: a.AdminKey, db: db, tls: useTLS}
}

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	e    *env
	c    *http.Client
	csrf string
}

func (e *env) browser() *browser {
	jar := newJar()
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	return &browser{e: e, c: &http.Client{Jar: jar, Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type resp struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, header map[string]string) resp {
	b.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.e.url+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, string(data)}
}

func (b *browser) get(path string) resp { return b.do("GET", path, nil, nil) }

func (b *browser) post(path string, form url.Values) resp {
	if form == nil {
		form = url.Values{}
	}
	return b.do("POST", path, form, nil)
}

var csrfInput = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

func csrfOf(t *testing.T, html string) string {
	t.Helper()
	m := csrfInput.FindStringSubmatch(html)
	if m == nil {
		t.Fatalf("no csrf_token in the page:\n%s", html)
	}
	return m[1]
}

// signIn signs in with key and returns the sign-in answer.
func (b *browser) signIn(key string) resp {
	b.e.t.Helper()
	page := b.get("/console/signin")
	if page.status != 200 {
		b.e.t.Fatalf("sign-in page: %d", page.status)
	}
	r := b.post("/console/signin", url.Values{"csrf_token": {csrfOf(b.e.t, page.body)}, "api_key": {key}, "next": {"/console/keys"}})
	if r.status == http.StatusSeeOther {
		home := b.get("/console/")
		if home.status != 200 {
			b.e.t.Fatalf("after sign-in, /console/: %d %s", home.status, home.body)
		}
		b.csrf = csrfOf(b.e.t, home.body)
	}
	return r
}

// api calls the HTTP API with a bearer key.
func (e *env) api(key, method, path string, body any) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

// key creates a key through the API as the admin and returns its id and
// secret.
func (e *env) key(name, team string, scopes ...string) (string, string) {
	e.t.Helper()
	body := map[string]any{"name": name, "scopes": scopes}
	if team != "" {
		body["team_id"] = team
	}
	st, k := e.api(e.admin, "POST", "/v1/keys", body)
	if st != 201 {
		e.t.Fatalf("create key: %d %v", st, k)
	}
	return k["id"].(string), k["key"].(string)
}

func sessionCookie(t *testing.T, h http.Header) *http.Cookie {
	t.Helper()
	for _, line := range h.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err == nil && c.Name == console.CookieName && c.Value != "" {
			return c
		}
	}
	t.Fatalf("no session cookie in %q", h.Values("Set-Cookie"))
	return nil
}

func TestSignInAndCookieFlags(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		name := "http"
		if useTLS {
			name = "https"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, useTLS)
			b := e.browser()
			r := b.get("/console/keys")
			if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/console/signin?next=") {
				t.Fatalf("signed out: %d %q, want a redirect to sign-in", r.status, r.header.Get("Location"))
			}
			r = b.signIn(e.admin)
			if r.status != http.StatusSeeOther || r.header.Get("Location") != "/console/keys" {
				t.Fatalf("sign-in: %d %q %s", r.status, r.header.Get("Location"), r.body)
			}
			c := sessionCookie(t, r.header)
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/console" || c.Secure != useTLS {
				t.Fatalf("cookie flags: %+v (HttpOnly, SameSite=Strict, Path=/console, Secure=%v wanted)", c, useTLS)
			}
			// Only the id's hash is stored.
			s, err := e.db.GetConsoleSession(context.Background(), session.Hash(c.Value))
			if err != nil || s.KeyID == "" || s.CSRF == "" {
				t.Fatalf("stored session: %+v %v", s, err)
			}
			if _, err := e.db.GetConsoleSession(context.Background(), []byte(c.Value)); err == nil {
				t.Fatal("the session id itself was stored")
			}
			for _, p := range []string{"/console/", "/console/keys", "/console/models", "/console/playground", "/console/compare", "/console/logs"} {
				if r := b.get(p); r.status != 200 {
					t.Errorf("GET %s: %d %s", p, r.status, r.body)
				} else if r.header.Get("Cache-Control") != "no-store" || !strings.Contains(r.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
					t.Errorf("GET %s: headers %v", p, r.header)
				}
			}
			if r := b.get("/console/static/console.css"); r.status != 200 || !strings.Contains(r.body, "prefers-color-scheme") {
				t.Errorf("stylesheet: %d", r.status)
			}
			// The API is still served beside the console.
			if st, _ := e.api(e.admin, "GET", "/v1/models", nil); st != 200 {
				t.Errorf("/v1/models: %d", st)
			}
		})
	}
}

func TestSignInRefusals(t *testing.T) {
	e := newEnv(t, false)
	_, inferenceOnly := e.key("app", "", "inference")
	_, consoleOnly := e.key("viewer", "", "console")
	b := e.browser()
	if r := b.signIn(inferenceOnly); r.status != http.StatusForbidden || !strings.Contains(r.body, "console") {
		t.Errorf("a key without console: %d", r.status)
	}
	if r := b.signIn("sk-sov-not-a-real-key-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"); r.status != http.StatusUnauthorized {
		t.Errorf("an unknown key: %d", r.status)
	}
	// The sign-in form needs its own CSRF token.
	if r := b.post("/console/signin", url.Values{"api_key": {e.admin}}); r.status != http.StatusForbidden {
		t.Errorf("sign-in without its token: %d", r.status)
	}
	if r := b.signIn(consoleOnly); r.status != http.StatusSeeOther {
		t.Fatalf("a console key: %d %s", r.status, r.body)
	}
	// Signed in, but every page still needs its API scopes.
	if r := b.get("/console/keys"); r.status != http.StatusForbidden || !strings.Contains(r.body, "keys:read") {
		t.Errorf("keys page for a console-only key: %d", r.status)
	}
	if r := b.get("/console/models"); r.status != http.StatusForbidden {
		t.Errorf("models page for a console-only key: %d", r.status)
	}
	// A next= outside the console is ignored, however it is spelt; one
	// inside it is kept, dot segments resolved.
	for next, want := range map[string]string{
		"//evil.example/":                  "/console/",
		"/console/../../evil":              "/console/",
		"/console/%2e%2e/%2e%2e/evil":      "/console/",
		"/console/./../evil":               "/console/",
		"https://evil.example/console/":    "/console/",
		"/console/\\evil.example":          "/console/",
		"/console/api/keys":                "/console/",
		"/console/models/../keys?after=k1": "/console/keys?after=k1",
		"/console/logs":                    "/console/logs",
	} {
		page := b.get("/console/signin")
		r := b.post("/console/signin", url.Values{"csrf_token": {csrfOf(t, page.body)}, "api_key": {consoleOnly}, "next": {next}})
		if r.header.Get("Location") != want {
			t.Errorf("next=%q: redirected to %q, want %q", next, r.header.Get("Location"), want)
		}
	}
}

func TestCSRF(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	if r := b.signIn(e.admin); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", r.status)
	}
	form := url.Values{"name": {"made in the console"}, "scopes": {"models:read"}}
	if r := b.post("/console/keys", form); r.status != http.StatusForbidden {
		t.Fatalf("create key without the CSRF token: %d", r.status)
	}
	form.Set("csrf_token", "wrong")
	if r := b.post("/console/keys", form); r.status != http.StatusForbidden {
		t.Fatalf("create key with a wrong CSRF token: %d", r.status)
	}
	form.Set("csrf_token", b.csrf)
	if r := b.do("POST", "/console/keys", form, map[string]string{"Origin": "https://evil.example"}); r.status != http.StatusForbidden {
		t.Fatalf("create key from another origin: %d", r.status)
	}
	r := b.post("/console/keys", form)
	if r.status != http.StatusCreated {
		t.Fatalf("create key: %d %s", r.status, r.body)
	}
	secret := regexp.MustCompile(`value="(sk-sov-[A-Za-z0-9]+)"`).FindStringSubmatch(r.body)
	if secret == nil {
		t.Fatalf("no secret shown:\n%s", r.body)
	}
	// The secret shown works against the API, with its scopes.
	if st, _ := e.api(secret[1], "GET", "/v1/models", nil); st != 200 {
		t.Errorf("the new key on /v1/models: %d", st)
	}
	if st, _ := e.api(secret[1], "GET", "/v1/keys", nil); st != 403 {
		t.Errorf("the new key on /v1/keys: %d, want 403", st)
	}
	// The secret is never shown again.
	if r := b.get("/console/keys"); strings.Contains(r.body, secret[1]) {
		t.Error("the keys page shows the secret again")
	}
	// The JS pass-through: a non-GET needs the header.
	chat := url.Values{}
	if r := b.do("POST", "/console/api/keys", chat, nil); r.status != http.StatusForbidden || !strings.Contains(r.body, "csrf") {
		t.Errorf("pass-through POST without the header: %d %s", r.status, r.body)
	}
	if r := b.get("/console/api/keys"); r.status != 200 || !strings.Contains(r.body, `"object":"list"`) {
		t.Errorf("pass-through GET: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/console/api/teams", nil, map[string]string{console.CSRFHeader: b.csrf, "Content-Type": "application/json"})
	if r.status != http.StatusBadRequest { // reached the API: an empty body is its 400
		t.Errorf("pass-through POST with the header: %d %s", r.status, r.body)
	}
	// Signed out, the pass-through is 401 (no redirect for JS).
	if r := e.browser().get("/console/api/keys"); r.status != http.StatusUnauthorized {
		t.Errorf("pass-through signed out: %d", r.status)
	}
}

func TestKeysRevokeRotateTeams(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	b.signIn(e.admin)
	r := b.post("/console/teams", url.Values{"csrf_token": {b.csrf}, "name": {"blue"}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("create team: %d %s", r.status, r.body)
	}
	id, secret := e.key("victim", "", "models:read")
	r = b.post("/console/keys/"+id+"/rotate", url.Values{"csrf_token": {b.csrf}, "grace_hours": {"1"}})
	if r.status != http.StatusCreated || !strings.Contains(r.body, "Key rotated") {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	newSecret := regexp.MustCompile(`value="(sk-sov-[A-Za-z0-9]+)"`).FindStringSubmatch(r.body)[1]
	if st, _ := e.api(newSecret, "GET", "/v1/models", nil); st != 200 {
		t.Errorf("rotated key: %d", st)
	}
	if st, _ := e.api(secret, "GET", "/v1/models", nil); st != 200 {
		t.Errorf("old key within its 1 h grace: %d", st)
	}
	id2, secret2 := e.key("to revoke", "", "models:read")
	if r := b.post("/console/keys/"+id2+"/revoke", url.Values{"csrf_token": {b.csrf}}); r.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if st, _ := e.api(secret2, "GET", "/v1/models", nil); st != 401 {
		t.Errorf("revoked key: %d", st)
	}
	if r := b.get("/console/keys"); !strings.Contains(r.body, "blue") || !strings.Contains(r.body, "revoked") {
		t.Errorf("keys page lacks the team or the revoked key")
	}
}

func TestSignOutAndRevokedKey(t *testing.T) {
	e := newEnv(t, false)
	_, sec := e.key("operator", "", "console", "keys:read")
	b := e.browser()
	r := b.signIn(sec)
	c := sessionCookie(t, r.header)
	if r := b.post("/console/signout", url.Values{"csrf_token": {b.csrf}}); r.status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", r.status)
	}
	if _, err := e.db.GetConsoleSession(context.Background(), session.Hash(c.Value)); err == nil {
		t.Fatal("the session outlived sign-out")
	}
	if r := b.get("/console/keys"); r.status != http.StatusSeeOther {
		t.Fatalf("after sign-out: %d", r.status)
	}
	// Revoking the key ends its sessions.
	id, sec2 := e.key("operator2", "", "console", "keys:read")
	b2 := e.browser()
	b2.signIn(sec2)
	if st, _ := e.api(e.admin, "DELETE", "/v1/keys/"+id, nil); st != 200 {
		t.Fatalf("revoke: %d", st)
	}
	time.Sleep(10 * time.Millisecond)
	if r := b2.get("/console/keys"); r.status != http.StatusSeeOther {
		t.Fatalf("a revoked key's session: %d", r.status)
	}
}

func TestSessionExpiry(t *testing.T) {
	e := newEnvConfig(t, false, config.Config{ConsoleSessionIdle: time.Second, ConsoleKeySignIn: true})
	b := e.browser()
	b.signIn(e.admin)
	if r := b.get("/console/keys"); r.status != 200 {
		t.Fatalf("fresh session: %d", r.status)
	}
	time.Sleep(1100 * time.Millisecond)
	if r := b.get("/console/keys"); r.status != http.StatusSeeOther {
		t.Fatalf("idle session: %d, want a redirect to sign-in", r.status)
	}
}

func TestTeamIsolation(t *testing.T) {
	e := newEnv(t, false)
	st, team := e.api(e.admin, "POST", "/v1/teams", map[string]any{"name": "other"})
	if st != 201 {
		t.Fatalf("team: %d", st)
	}
	teamB := team["id"].(string)
	aID, aSecret := e.key("team a secret project", "", "inference", "models:read", "records:read")
	// Team A makes a request that lands in its request log.
	e.api(aSecret, "GET", "/v1/models", nil)
	bID, bSecret := e.key("team b operator", teamB, "console", "keys:read", "records:read", "models:read")
	b := e.browser()
	if r := b.signIn(bSecret); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", r.status)
	}
	r := b.get("/console/keys")
	if r.status != 200 || !strings.Contains(r.body, bID) {
		t.Fatalf("team B's keys page: %d", r.status)
	}
	if strings.Contains(r.body, aID) || strings.Contains(r.body, "team a secret project") {
		t.Error("team B's console shows team A's key")
	}
	if r := b.get("/console/keys?team_id=" + url.QueryEscape("team_x")); r.status != http.StatusForbidden {
		t.Errorf("another team's keys: %d", r.status)
	}
	if r := b.get("/console/api/keys/" + aID); r.status != http.StatusNotFound {
		t.Errorf("team A's key through the pass-through: %d", r.status)
	}
	time.Sleep(300 * time.Millisecond) // the request log is written asynchronously
	r = b.get("/console/logs")
	if r.status != 200 || strings.Contains(r.body, aID) {
		t.Errorf("team B's logs: %d, shows team A's key: %v", r.status, strings.Contains(r.body, aID))
	}
	// Admin-only actions are refused to B (the API says so).
	if r := b.post("/console/teams", url.Values{"csrf_token": {b.csrf}, "name": {"sneaky"}}); r.status != http.StatusForbidden {
		t.Errorf("team B creating a team: %d", r.status)
	}
	if r := b.post("/console/keys/"+aID+"/revoke", url.Values{"csrf_token": {b.csrf}}); r.status != http.StatusForbidden {
		t.Errorf("team B revoking team A's key: %d", r.status)
	}
	// The admin's console sees team A's request in the logs.
	adm := e.browser()
	adm.signIn(e.admin)
	if r := adm.get("/console/logs"); !strings.Contains(r.body, aID) {
		t.Errorf("the admin's logs lack team A's request")
	}
}

func newJar() http.CookieJar {
	j, _ := cookiejar.New(nil)
	return j
}

func TestRecordsWorkflowsWebhooksPages(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	b.signIn(e.admin)
	for _, p := range []string{"/console/usage", "/console/usage?group_by=day", "/console/decisions", "/console/source_links", "/console/audit",
		"/console/sources", "/console/workflows", "/console/runs", "/console/approvals", "/console/webhooks"} {
		if r := b.get(p); r.status != 200 {
			t.Errorf("GET %s: %d %s", p, r.status, r.body)
		}
	}
	// A pending approval, decided from the console.
	st, wf := e.api(e.admin, "POST", "/v1/workflows", map[string]any{"name": "needs a yes", "definition": map[string]any{
		"steps": []any{map[string]any{"id": "review", "type": "approval", "approvers": map[string]any{"scopes": []string{"approvals"}}, "instructions": "Say yes"}}}})
	if st != 201 {
		t.Fatalf("workflow: %d %v", st, wf)
	}
	st, run := e.api(e.admin, "POST", "/v1/workflows/"+wf["id"].(string)+"/runs", map[string]any{"input": map[string]any{}})
	if st != 201 && st != 202 {
		t.Fatalf("run: %d %v", st, run)
	}
	var approval string
	for i := 0; i < 100 && approval == ""; i++ {
		_, list := e.api(e.admin, "GET", "/v1/approvals?status=pending", nil)
		if data, _ := list["data"].([]any); len(data) > 0 {
			approval = data[0].(map[string]any)["id"].(string)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if approval == "" {
		t.Fatal("no pending approval")
	}
	if r := b.get("/console/approvals?status=pending"); !strings.Contains(r.body, approval) || !strings.Contains(r.body, "Say yes") {
		t.Fatalf("approvals page lacks the pending approval")
	}
	if r := b.post("/console/approvals/"+approval, url.Values{"decision": {"approve"}, "comment": {"fine"}}); r.status != http.StatusForbidden {
		t.Fatalf("deciding without the CSRF token: %d", r.status)
	}
	r := b.post("/console/approvals/"+approval, url.Values{"csrf_token": {b.csrf}, "decision": {"approve"}, "comment": {"fine"}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	runID := run["id"].(string)
	for i := 0; ; i++ {
		_, got := e.api(e.admin, "GET", "/v1/workflow_runs/"+runID, nil)
		if got["status"] == "succeeded" {
			break
		}
		if i == 100 {
			t.Fatalf("run after approval: %v", got["status"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := b.get("/console/runs/" + runID); r.status != 200 || !strings.Contains(r.body, `data-step="review"`) || !strings.Contains(r.body, "succeeded") {
		t.Errorf("run page: %d %s", r.status, r.body)
	}
	if r := b.get("/console/runs"); !strings.Contains(r.body, runID) || !strings.Contains(r.body, "succeeded") {
		t.Errorf("runs page lacks the succeeded run")
	}
}

func TestSourcesPages(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	b.signIn(e.admin)
	if r := b.post("/console/sources", url.Values{"name": {"notes"}}); r.status != http.StatusForbidden {
		t.Fatalf("create collection without CSRF: %d", r.status)
	}
	// This application has no embedding model: the API's refusal is shown
	// with its status (the success path runs in tests/console with the
	// default models).
	r := b.post("/console/sources", url.Values{"csrf_token": {b.csrf}, "name": {"notes"}, "description": {"field notes"}})
	if r.status < 400 || r.status >= 500 || !strings.Contains(r.body, "embedding model") {
		t.Fatalf("create collection without an embedding model: %d %s", r.status, r.body)
	}
	if r := b.get("/console/sources/col_missing"); r.status != http.StatusNotFound {
		t.Errorf("a missing collection: %d", r.status)
	}
}

var secretInput = regexp.MustCompile(`id="new-secret"[^>]*value="([^"]+)"`)

func TestWebhooksConsole(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	b.signIn(e.admin)
	form := url.Values{"url": {"https://hooks.example.com/sovereign"}, "description": {"ops"}, "events": {"workflow.run.succeeded", "document.ready"}}
	if r := b.post("/console/webhooks", form); r.status != http.StatusForbidden {
		t.Fatalf("create without CSRF: %d", r.status)
	}
	form.Set("csrf_token", b.csrf)
	r := b.post("/console/webhooks", form)
	m := secretInput.FindStringSubmatch(r.body)
	if r.status != http.StatusCreated || m == nil || !strings.HasPrefix(m[1], "whsec_") {
		t.Fatalf("create: %d, secret %v\n%s", r.status, m, r.body)
	}
	secret := m[1]
	_, list := e.api(e.admin, "GET", "/v1/webhooks", nil)
	data, _ := list["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("webhooks after create: %v", list)
	}
	wh := data[0].(map[string]any)
	id := wh["id"].(string)
	if wh["description"] != "ops" || len(wh["events"].([]any)) != 2 {
		t.Errorf("created webhook: %v", wh)
	}
	// Shown once: neither the list nor the webhook's page shows it again.
	for _, p := range []string{"/console/webhooks", "/console/webhooks/" + id} {
		if r := b.get(p); r.status != 200 || strings.Contains(r.body, secret) || !strings.Contains(r.body, "hooks.example.com") {
			t.Errorf("GET %s: %d, shows the secret: %v", p, r.status, strings.Contains(r.body, secret))
		}
	}
	// A refusal names its field and keeps what was typed.
	r = b.post("/console/webhooks", url.Values{"csrf_token": {b.csrf}, "url": {"ftp://nope.example.com/"}, "events": {"document.ready"}})
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "url: ") || !strings.Contains(r.body, "ftp://nope.example.com/") {
		t.Errorf("invalid url: %d %s", r.status, r.body)
	}
	// Edit: another URL, one event type, disabled.
	edit := url.Values{"url": {"https://hooks.example.com/v2"}, "events": {"document.ready"}, "description": {"ops v2"}}
	if r := b.post("/console/webhooks/"+id, edit); r.status != http.StatusForbidden {
		t.Errorf("edit without CSRF: %d", r.status)
	}
	edit.Set("csrf_token", b.csrf)
	if r := b.post("/console/webhooks/"+id, edit); r.status != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", r.status, r.body)
	}
	_, got := e.api(e.admin, "GET", "/v1/webhooks/"+id, nil)
	if got["url"] != "https://hooks.example.com/v2" || got["enabled"] != false || got["description"] != "ops v2" || len(got["events"].([]any)) != 1 {
		t.Errorf("after edit: %v", got)
	}
	// Rotate: a new secret shown once, the old one in its grace period.
	if r := b.post("/console/webhooks/"+id+"/rotate", url.Values{"grace_hours": {"1"}}); r.status != http.StatusForbidden {
		t.Errorf("rotate without CSRF: %d", r.status)
	}
	r = b.post("/console/webhooks/"+id+"/rotate", url.Values{"csrf_token": {b.csrf}, "grace_hours": {"1"}})
	m = secretInput.FindStringSubmatch(r.body)
	if r.status != 200 || m == nil || m[1] == secret || !strings.HasPrefix(m[1], "whsec_") {
		t.Fatalf("rotate: %d %v", r.status, m)
	}
	if _, got := e.api(e.admin, "GET", "/v1/webhooks/"+id, nil); got["previous_secret_expires_at"] == nil {
		t.Errorf("after rotate: %v", got)
	}
	// Delete.
	if r := b.post("/console/webhooks/"+id+"/delete", url.Values{}); r.status != http.StatusForbidden {
		t.Errorf("delete without CSRF: %d", r.status)
	}
	if r := b.post("/console/webhooks/"+id+"/delete", url.Values{"csrf_token": {b.csrf}}); r.status != http.StatusSeeOther {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if st, _ := e.api(e.admin, "GET", "/v1/webhooks/"+id, nil); st != http.StatusNotFound {
		t.Errorf("after delete: %d", st)
	}
}

func TestWorkflowsConsole(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	b.signIn(e.admin)
	if r := b.get("/console/workflows"); r.status != 200 || !strings.Contains(r.body, `&#34;type&#34;: &#34;transform&#34;`) {
		t.Fatalf("workflows page: %d", r.status)
	}
	def := `{"steps": [{"id": "greet", "type": "transform", "template": "Hello, {{ input.name }}!"}], "output": {"greeting": "{{ steps.greet.output.text }}"}}`
	form := url.Values{"name": {"greeter"}, "description": {"says hello"}, "definition": {def}}
	if r := b.post("/console/workflows", form); r.status != http.StatusForbidden {
		t.Fatalf("create without CSRF: %d", r.status)
	}
	form.Set("csrf_token", b.csrf)
	// Not JSON: refused here, naming the field, with the text kept.
	bad := url.Values{"csrf_token": {b.csrf}, "name": {"broken"}, "definition": {`{"steps": [`}}
	if r := b.post("/console/workflows", bad); r.status != http.StatusBadRequest || !strings.Contains(r.body, "<code>definition</code>") ||
		!strings.Contains(r.body, `{&#34;steps&#34;: [`) {
		t.Errorf("not JSON: %d %s", r.status, r.body)
	}
	// The API's validation error, with the field it names.
	bad.Set("definition", `{"steps": [{"id": "greet", "type": "transform", "template": "x", "timeout": "1s"}]}`)
	if r := b.post("/console/workflows", bad); r.status != http.StatusBadRequest || !strings.Contains(r.body, "<code>definition.steps[0]") ||
		!strings.Contains(r.body, `aria-invalid="true"`) {
		t.Errorf("invalid definition: %d %s", r.status, r.body)
	}
	r := b.post("/console/workflows", form)
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/console/workflows/wf_") {
		t.Fatalf("create: %d %q %s", r.status, r.header.Get("Location"), r.body)
	}
	page := strings.SplitN(r.header.Get("Location"), "?", 2)[0]
	id := strings.TrimPrefix(page, "/console/workflows/")
	if r := b.get(page); r.status != 200 || !strings.Contains(r.body, "greeter") || !strings.Contains(r.body, "Start run") {
		t.Fatalf("workflow page: %d %s", r.status, r.body)
	}
	// Edit (PUT): a new version.
	edit := url.Values{"csrf_token": {b.csrf}, "name": {"greeter 2"}, "definition": {def}}
	if r := b.post(page, edit); r.status != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", r.status, r.body)
	}
	if _, got := e.api(e.admin, "GET", "/v1/workflows/"+id, nil); got["name"] != "greeter 2" || got["version"] != float64(2) {
		t.Errorf("after edit: %v", got)
	}
	// Start a run: it lands on the run's page and succeeds.
	if r := b.post(page+"/runs", url.Values{"input": {`{"name": "Ada"}`}}); r.status != http.StatusForbidden {
		t.Errorf("start without CSRF: %d", r.status)
	}
	if r := b.post(page+"/runs", url.Values{"csrf_token": {b.csrf}, "input": {`{"name": `}}); r.status != http.StatusBadRequest || !strings.Contains(r.body, "<code>input</code>") {
		t.Errorf("input not JSON: %d", r.status)
	}
	r = b.post(page+"/runs", url.Values{"csrf_token": {b.csrf}, "input": {`{"name": "Ada"}`}})
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/console/runs/") {
		t.Fatalf("start: %d %q %s", r.status, r.header.Get("Location"), r.body)
	}
	runID := strings.TrimPrefix(strings.SplitN(r.header.Get("Location"), "?", 2)[0], "/console/runs/")
	for i := 0; ; i++ {
		_, got := e.api(e.admin, "GET", "/v1/workflow_runs/"+runID, nil)
		if got["status"] == "succeeded" {
			if !strings.Contains(string(mustJSON(got["output"])), "Hello, Ada!") {
				t.Errorf("run output: %v", got["output"])
			}
			break
		}
		if i == 100 {
			t.Fatalf("run: %v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := b.get(page); !strings.Contains(r.body, runID) {
		t.Errorf("the workflow page lacks its run")
	}
	// Delete.
	if r := b.post(page+"/delete", url.Values{"csrf_token": {b.csrf}}); r.status != http.StatusSeeOther {
		t.Fatalf("delete: %d", r.status)
	}
	if r := b.get(page); r.status != http.StatusNotFound {
		t.Errorf("deleted workflow's page: %d", r.status)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Another team's webhook and workflow are a 404 through the console, for
// reading and for every action.
func TestTeamIsolationWebhooksWorkflows(t *testing.T) {
	e := newEnv(t, false)
	st, wh := e.api(e.admin, "POST", "/v1/webhooks", map[string]any{"url": "https://hooks.example.com/a", "events": []string{"document.ready"}})
	if st != 201 {
		t.Fatalf("webhook: %d %v", st, wh)
	}
	st, wf := e.api(e.admin, "POST", "/v1/workflows", map[string]any{"name": "team a's", "definition": map[string]any{
		"steps": []any{map[string]any{"id": "s", "type": "transform", "template": "x"}}}})
	if st != 201 {
		t.Fatalf("workflow: %d %v", st, wf)
	}
	_, team := e.api(e.admin, "POST", "/v1/teams", map[string]any{"name": "other"})
	_, bSecret := e.key("team b", team["id"].(string), "console", "webhooks", "workflows", "records:read", "inference")
	b := e.browser()
	if r := b.signIn(bSecret); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", r.status)
	}
	whID, wfID := wh["id"].(string), wf["id"].(string)
	if r := b.get("/console/webhooks"); r.status != 200 || strings.Contains(r.body, whID) {
		t.Errorf("team B's webhooks page: %d, shows A's: %v", r.status, strings.Contains(r.body, whID))
	}
	if r := b.get("/console/workflows"); r.status != 200 || strings.Contains(r.body, wfID) {
		t.Errorf("team B's workflows page: %d, shows A's: %v", r.status, strings.Contains(r.body, wfID))
	}
	for _, c := range []struct {
		method, path string
		form         url.Values
	}{
		{"GET", "/console/webhooks/" + whID, nil},
		{"POST", "/console/webhooks/" + whID, url.Values{"url": {"https://hooks.example.com/b"}, "events": {"document.ready"}, "enabled": {"1"}}},
		{"POST", "/console/webhooks/" + whID + "/rotate", url.Values{}},
		{"POST", "/console/webhooks/" + whID + "/delete", url.Values{}},
		{"GET", "/console/workflows/" + wfID, nil},
		{"POST", "/console/workflows/" + wfID, url.Values{"name": {"x"}, "definition": {`{"steps": [{"id": "s", "type": "transform", "template": "y"}]}`}}},
		{"POST", "/console/workflows/" + wfID + "/runs", url.Values{"input": {"{}"}}},
		{"POST", "/console/workflows/" + wfID + "/delete", url.Values{}},
		{"GET", "/console/api/webhooks/" + whID, nil},
	} {
		var r resp
		if c.method == "GET" {
			r = b.get(c.path)
		} else {
			c.form.Set("csrf_token", b.csrf)
			r = b.post(c.path, c.form)
		}
		if r.status != http.StatusNotFound {
			t.Errorf("%s %s as team B: %d, want 404", c.method, c.path, r.status)
		}
	}
	// Nothing of A's changed.
	if _, got := e.api(e.admin, "GET", "/v1/webhooks/"+whID, nil); got["url"] != "https://hooks.example.com/a" {
		t.Errorf("A's webhook: %v", got)
	}
	if _, got := e.api(e.admin, "GET", "/v1/workflows/"+wfID, nil); got["version"] != float64(1) {
		t.Errorf("A's workflow: %v", got)
	}
}

func TestTeamCapture(t *testing.T) {
	e := newEnv(t, false)
	_, team := e.api(e.admin, "POST", "/v1/teams", map[string]any{"name": "loggers"})
	id := team["id"].(string)
	b := e.browser()
	b.signIn(e.admin)
	if r := b.get("/console/keys"); !strings.Contains(r.body, "/console/teams/"+id+"/capture") {
		t.Fatalf("keys page lacks the capture toggle")
	}
	if r := b.post("/console/teams/"+id+"/capture", url.Values{"capture": {"on"}}); r.status != http.StatusForbidden {
		t.Errorf("without CSRF: %d", r.status)
	}
	if r := b.post("/console/teams/"+id+"/capture", url.Values{"csrf_token": {b.csrf}, "capture": {"on"}}); r.status != http.StatusSeeOther {
		t.Fatalf("capture on: %d %s", r.status, r.body)
	}
	capture := func() any {
		_, list := e.api(e.admin, "GET", "/v1/teams", nil)
		for _, x := range list["data"].([]any) {
			if m := x.(map[string]any); m["id"] == id {
				return m["capture"]
			}
		}
		return nil
	}
	if capture() != true {
		t.Fatalf("capture after on: %v", capture())
	}
	if r := b.post("/console/teams/"+id+"/capture", url.Values{"csrf_token": {b.csrf}, "capture": {"off"}}); r.status != http.StatusSeeOther || capture() != false {
		t.Fatalf("capture off: %d %v", r.status, capture())
	}
	// A team's console key (not admin) may not.
	_, sec := e.key("team op", id, "console", "keys:read")
	o := e.browser()
	o.signIn(sec)
	if r := o.post("/console/teams/"+id+"/capture", url.Values{"csrf_token": {o.csrf}, "capture": {"on"}}); r.status != http.StatusForbidden || capture() != false {
		t.Errorf("non-admin capture: %d %v", r.status, capture())
	}
}

func TestRecordsPagesMore(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	b.signIn(e.admin)
	e.api(e.admin, "GET", "/v1/models", nil)
	time.Sleep(300 * time.Millisecond) // the request log is written asynchronously
	r := b.get("/console/usage")
	if r.status != 200 || !strings.Contains(r.body, "<svg") || !strings.Contains(r.body, time.Now().UTC().Format("2006-01-02")) {
		t.Fatalf("usage: %d %s", r.status, r.body)
	}
	if strings.Count(r.body, `<rect class="bar"`) != 30 {
		t.Errorf("usage chart: %d bars, want 30 days", strings.Count(r.body, `<rect class="bar"`))
	}
	if r := b.get("/console/usage?since=2026-01-01&until=2026-01-07&metric=requests"); r.status != 200 || strings.Count(r.body, `<rect class="bar"`) != 7 {
		t.Errorf("usage for a week: %d, %d bars", r.status, strings.Count(r.body, `<rect class="bar"`))
	}
	if r := b.get("/console/usage?since=nope"); r.status != http.StatusBadRequest {
		t.Errorf("usage with a bad date: %d", r.status)
	}
	if r := b.get("/console/limits"); r.status >= 500 {
		t.Errorf("limits: %d %s", r.status, r.body)
	}
	if r := b.get("/console/source_links/sl_missing?response_id=chatcmpl-x"); r.status != http.StatusNotFound {
		t.Errorf("a missing source link: %d", r.status)
	}
	if r := b.get("/console/decisions/pdec_missing"); r.status != http.StatusNotFound {
		t.Errorf("a missing decision: %d", r.status)
	}
	_, logs := e.api(e.admin, "GET", "/v1/logs", nil)
	if data, _ := logs["data"].([]any); len(data) > 0 {
		id := data[0].(map[string]any)["id"].(string)
		if r := b.get("/console/logs/" + id); r.status != 200 || !strings.Contains(r.body, "/console/decisions?request_id="+id) {
			t.Errorf("log page lacks its decisions link: %d", r.status)
		}
	}
}

// TestAuditChainStatus: the audit page and a record's page check the
// inclusion proof they show (RFC 6962) and say it verifies.
func TestAuditChainStatus(t *testing.T) {
	e := newEnv(t, false)
	b := e.browser()
	b.signIn(e.admin)
	e.api(e.admin, "GET", "/v1/models", nil)
	var id string
	for deadline := time.Now().Add(5 * time.Second); id == ""; time.Sleep(50 * time.Millisecond) {
		if _, logs := e.api(e.admin, "GET", "/v1/logs?limit=1", nil); logs != nil {
			if data, _ := logs["data"].([]any); len(data) > 0 {
				id = data[0].(map[string]any)["id"].(string)
			}
		}
		if id == "" && time.Now().After(deadline) {
			t.Fatal("no record")
		}
	}
	if r := b.get("/console/audit"); r.status != 200 || !strings.Contains(r.body, "<strong>Verified.</strong>") || !strings.Contains(r.body, "/console/logs/") {
		t.Fatalf("audit status: %d %s", r.status, r.body)
	}
	if r := b.get("/console/logs/" + id); r.status != 200 || !strings.Contains(r.body, `id="proof-status"><strong>Verified.</strong>`) {
		t.Fatalf("record page: %d %s", r.status, r.body)
	}
}
