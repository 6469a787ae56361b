package console_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/console"
)

// signInAs signs in with an e-mail address and password.
func (b *browser) signInAs(email, password string) resp {
	b.e.t.Helper()
	page := b.get("/console/signin")
	if page.status != 200 {
		b.e.t.Fatalf("sign-in page: %d", page.status)
	}
	r := b.post("/console/signin", url.Values{"csrf_token": {csrfOf(b.e.t, page.body)}, "email": {email}, "password": {password}, "next": {"/console/keys"}})
	if r.status == http.StatusSeeOther {
		home := b.get("/console/")
		if home.status != 200 {
			b.e.t.Fatalf("after sign-in, /console/: %d %s", home.status, home.body)
		}
		b.csrf = csrfOf(b.e.t, home.body)
	}
	return r
}

// user creates a user through the API as the admin and returns its id.
func (e *env) user(email, password string, memberships ...map[string]any) string {
	e.t.Helper()
	st, u := e.api(e.admin, "POST", "/v1/users", map[string]any{"email": email, "password": password, "memberships": memberships})
	if st != 201 {
		e.t.Fatalf("create user: %d %v", st, u)
	}
	return u["id"].(string)
}

func (e *env) team(name string) string {
	e.t.Helper()
	st, tm := e.api(e.admin, "POST", "/v1/teams", map[string]any{"name": name})
	if st != 201 {
		e.t.Fatalf("create team: %d %v", st, tm)
	}
	return tm["id"].(string)
}

// TestPeopleSignIn: by default people sign in with a password and keys do
// not; the session acts with the person's role in their team, records
// name the person, switching team changes what they see, and taking them
// out of the team (or deactivating them) ends their access at once.
func TestPeopleSignIn(t *testing.T) {
	e := newEnvConfig(t, false, config.Config{})
	research, ops := e.team("research"), e.team("ops")
	ada := e.user("ada@example.com", "correct horse battery",
		map[string]any{"team_id": research, "role": "developer"}, map[string]any{"team_id": ops, "role": "viewer"})

	if st, body := e.api(e.admin, "POST", "/v1/users", map[string]any{"email": "x@example.com", "admin": true}); st != 400 {
		t.Errorf("an unknown field: %d %v", st, body)
	}

	// The break-glass key sign-in is off by default.
	b := e.browser()
	page := b.get("/console/signin")
	if strings.Contains(page.body, `name="api_key"`) || !strings.Contains(page.body, `name="password"`) {
		t.Fatalf("sign-in page: key form shown or password form missing:\n%s", page.body)
	}
	if r := b.signIn(e.admin); r.status != http.StatusForbidden {
		t.Fatalf("key sign-in while off: %d", r.status)
	}
	if r := b.signInAs("ada@example.com", "wrong horse battery"); r.status != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", r.status)
	}
	if r := b.signInAs("ada@example.com", "correct horse battery"); r.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", r.status, r.body)
	}
	home := b.get("/console/")
	if !strings.Contains(home.body, "ada@example.com") || !strings.Contains(home.body, "research (developer)") || !strings.Contains(home.body, "ops (viewer)") {
		t.Fatalf("header lacks the person and their teams:\n%s", home.body)
	}

	// As a developer of research: the playground's model list is allowed
	// (inference), team admin pages are not.
	if r := b.get("/console/api/models"); r.status != 200 {
		t.Fatalf("models as a developer: %d %s", r.status, r.body)
	}
	if r := b.get("/console/api/teams"); r.status != http.StatusForbidden {
		t.Errorf("teams (admin) as a developer: %d", r.status)
	}
	// The request log names the person as well as the key (the writer
	// batches: poll).
	var logs map[string]any
	found := false
	for deadline := time.Now().Add(5 * time.Second); !found && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, logs = e.api(e.admin, "GET", "/v1/logs?team_id="+research, nil)
		for _, r := range logs["data"].([]any) {
			if rec := r.(map[string]any); rec["user_id"] == ada && rec["route"] == "GET /v1/models" {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no record of the console's call with user_id %s: %v", ada, logs["data"])
	}

	// A person's own key: within the role.
	st, k := e.apiAsConsole(b, "POST", "/console/api/keys", `{"name":"mine","scopes":["inference","models:read"]}`)
	if st != 201 || k["kind"] != "user" || k["owner_user_id"] != ada || k["team_id"] != research {
		t.Fatalf("own key: %d %v", st, k)
	}
	if st, body := e.apiAsConsole(b, "POST", "/console/api/keys", `{"name":"too much","scopes":["admin"]}`); st != 400 {
		t.Errorf("a key beyond the role: %d %v", st, body)
	}
	if st, body := e.apiAsConsole(b, "POST", "/console/api/keys", `{"name":"svc","scopes":["inference"],"kind":"service"}`); st != 403 {
		t.Errorf("a developer's service key: %d %v", st, body)
	}
	mine := k["key"].(string)
	// The overview shows the person, their teams and their own keys.
	if home := b.get("/console/"); !strings.Contains(home.body, "Your teams") || !strings.Contains(home.body, "<td>mine</td>") ||
		!strings.Contains(home.body, "The team's use, last 7 days") || !strings.Contains(home.body, "Waiting for approval") {
		t.Errorf("overview of a person:\n%s", home.body)
	}
	if st, _ := e.api(mine, "GET", "/v1/models", nil); st != 200 {
		t.Fatalf("own key: %d", st)
	}
	// The log shows the key's name, not its id.
	shown := false
	for deadline := time.Now().Add(5 * time.Second); !shown && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		shown = strings.Contains(b.get("/console/logs").body, `">mine</span>`)
	}
	if !shown {
		t.Errorf("the logs page does not name the key:\n%s", b.get("/console/logs").body)
	}

	// Switching to ops, a viewer there: inference is refused.
	if r := b.post("/console/team", url.Values{"csrf_token": {b.csrf}, "team_id": {ops}}); r.status != http.StatusSeeOther {
		t.Fatalf("switch team: %d %s", r.status, r.body)
	}
	home = b.get("/console/")
	b.csrf = csrfOf(t, home.body)
	if st, body := e.apiAsConsole(b, "POST", "/console/api/chat/completions", `{"model":"none","messages":[{"role":"user","content":"hi"}]}`); st != 403 {
		t.Errorf("inference as a viewer: %d %v", st, body)
	}

	// Out of research: the own key stops at once; deactivated: the
	// session ends.
	if st, body := e.api(e.admin, "DELETE", "/v1/teams/"+research+"/members/"+ada, nil); st != 200 {
		t.Fatalf("remove member: %d %v", st, body)
	}
	if st, _ := e.api(mine, "GET", "/v1/models", nil); st != 401 {
		t.Errorf("the key of someone who left the team: %d, want 401", st)
	}
	if st, body := e.api(e.admin, "POST", "/v1/users/"+ada, map[string]any{"active": false}); st != 200 {
		t.Fatalf("deactivate: %d %v", st, body)
	}
	if r := b.get("/console/keys"); r.status != http.StatusSeeOther {
		t.Errorf("console after deactivation: %d, want the sign-in redirect", r.status)
	}
	if r := b.signInAs("ada@example.com", "correct horse battery"); r.status != http.StatusUnauthorized {
		t.Errorf("a deactivated person signs in: %d", r.status)
	}
}

// TestPasswordGuessing: an account locks after repeated failures (the
// right password then fails too), and one address is slowed down across
// accounts.
func TestPasswordGuessing(t *testing.T) {
	e := newEnvConfig(t, false, config.Config{})
	research := e.team("research")
	e.user("bob@example.com", "correct horse battery", map[string]any{"team_id": research, "role": "viewer"})
	b := e.browser()
	for i := range 5 {
		if r := b.signInAs("bob@example.com", "guess number "+string(rune('a'+i))+"xxxx"); r.status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i, r.status)
		}
	}
	if r := b.signInAs("bob@example.com", "correct horse battery"); r.status != http.StatusUnauthorized {
		t.Fatalf("the right password on a locked account: %d", r.status)
	}
	_, u := e.api(e.admin, "GET", "/v1/users?team_id="+research, nil)
	if data := u["data"].([]any); len(data) != 1 || data[0].(map[string]any)["locked"] != true {
		t.Errorf("the account is not shown locked: %v", u)
	}
	var last int
	for range 10 {
		last = b.signInAs("nobody@example.com", "whatever it might be").status
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("the 17th attempt from one address in a minute: %d, want 429", last)
	}
}

// apiAsConsole calls the console's API pass-through with the session.
func (e *env) apiAsConsole(b *browser, method, path, body string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(console.CSRFHeader, b.csrf)
	res, err := b.c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		out = map[string]any{"body": string(raw)}
	}
	return res.StatusCode, out
}

// TestInvitation: an invitation link makes an account in the team with the
// role and signs its person in; a used or revoked link is refused; an
// existing person joins without a new password.
func TestInvitation(t *testing.T) {
	e := newEnvConfig(t, false, config.Config{})
	research := e.team("research")
	st, inv := e.api(e.admin, "POST", "/v1/invitations", map[string]any{"email": "Newcomer@Example.com", "team_id": research, "role": "viewer"})
	if st != 201 || inv["email"] != "newcomer@example.com" || inv["url"] == nil {
		t.Fatalf("invite: %d %v", st, inv)
	}
	link, _ := url.Parse(inv["url"].(string))
	b := e.browser()
	page := b.get(link.Path)
	if page.status != 200 || !strings.Contains(page.body, "research") || !strings.Contains(page.body, "viewer") || page.header.Get("Referrer-Policy") != "same-origin" {
		t.Fatalf("invitation page: %d\n%s", page.status, page.body)
	}
	csrf := csrfOf(t, page.body)
	if r := b.post(link.Path, url.Values{"csrf_token": {csrf}, "name": {"Nia"}, "password": {"a long new password"}, "password2": {"another long password"}}); r.status != http.StatusBadRequest {
		t.Fatalf("passwords that differ: %d", r.status)
	}
	page = b.get(link.Path)
	r := b.post(link.Path, url.Values{"csrf_token": {csrfOf(t, page.body)}, "name": {"Nia"}, "password": {"a long new password"}, "password2": {"a long new password"}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("accept: %d %s", r.status, r.body)
	}
	home := b.get("/console/")
	if home.status != 200 || !strings.Contains(home.body, "Nia") || !strings.Contains(home.body, "research (viewer)") {
		t.Fatalf("after accepting: %d\n%s", home.status, home.body)
	}
	if again := e.browser().get(link.Path); again.status != http.StatusNotFound {
		t.Errorf("a used link: %d", again.status)
	}
	if r := e.browser().signInAs("newcomer@example.com", "a long new password"); r.status != http.StatusSeeOther {
		t.Errorf("signing in with the chosen password: %d", r.status)
	}
	_, list := e.api(e.admin, "GET", "/v1/invitations?team_id="+research, nil)
	if data := list["data"].([]any); len(data) != 1 || data[0].(map[string]any)["accepted_at"] == nil || data[0].(map[string]any)["url"] != nil {
		t.Errorf("invitations after use: %v", list)
	}

	// An existing person joins another team by link, keeping their password.
	ops := e.team("ops")
	_, inv2 := e.api(e.admin, "POST", "/v1/invitations", map[string]any{"email": "newcomer@example.com", "team_id": ops, "role": "developer"})
	link2, _ := url.Parse(inv2["url"].(string))
	b2 := e.browser()
	page = b2.get(link2.Path)
	if !strings.Contains(page.body, "You have an account already") {
		t.Fatalf("invitation for an existing person:\n%s", page.body)
	}
	if r := b2.post(link2.Path, url.Values{"csrf_token": {csrfOf(t, page.body)}}); r.status != http.StatusSeeOther || !strings.Contains(r.header.Get("Location"), "/console/signin") {
		t.Fatalf("joining: %d %s", r.status, r.header.Get("Location"))
	}
	if r := b2.signInAs("newcomer@example.com", "a long new password"); r.status != http.StatusSeeOther {
		t.Fatalf("sign in after joining: %d", r.status)
	}
	if home := b2.get("/console/"); !strings.Contains(home.body, "ops (developer)") {
		t.Errorf("the second team is missing:\n%s", home.body)
	}

	// A revoked link stops working; a made-up one is the same answer.
	_, inv3 := e.api(e.admin, "POST", "/v1/invitations", map[string]any{"email": "x@example.com", "team_id": ops, "role": "viewer"})
	if st, body := e.api(e.admin, "DELETE", "/v1/invitations/"+inv3["id"].(string), nil); st != 200 {
		t.Fatalf("revoke: %d %v", st, body)
	}
	link3, _ := url.Parse(inv3["url"].(string))
	if r := e.browser().get(link3.Path); r.status != http.StatusNotFound {
		t.Errorf("a revoked link: %d", r.status)
	}
	if r := e.browser().get("/console/invite/inv-madeup0000000000"); r.status != http.StatusNotFound {
		t.Errorf("a made-up link: %d", r.status)
	}
	if st, _ := e.api(e.admin, "POST", "/v1/invitations", map[string]any{"email": "y@example.com", "team_id": ops, "role": "emperor"}); st != 400 {
		t.Errorf("an unknown role: %d", st)
	}
}

// totp is an independent RFC 6238 code generator (SHA-1, 30 s, 6 digits)
// to check the server's against.
func totp(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret)
	if err != nil {
		t.Fatal(err)
	}
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(at.Unix()/30))
	m := hmac.New(sha1.New, key)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[19] & 15
	return fmt.Sprintf("%06d", (binary.BigEndian.Uint32(sum[off:])&0x7fffffff)%1000000)
}

var secretRE = regexp.MustCompile(`id="totp-secret">([A-Z2-7]+)<`)

// TestTwoStepSignIn: a person turns on two-step sign-in with a code from
// their app; a password sign-in then needs a current code, each code
// works once; an administrator can turn it off (a lost phone).
func TestTwoStepSignIn(t *testing.T) {
	e := newEnvConfig(t, false, config.Config{})
	research := e.team("research")
	uid := e.user("kim@example.com", "correct horse battery", map[string]any{"team_id": research, "role": "viewer"})
	b := e.browser()
	if r := b.signInAs("kim@example.com", "correct horse battery"); r.status != http.StatusSeeOther {
		t.Fatal(r.status)
	}
	page := b.post("/console/security", url.Values{"csrf_token": {b.csrf}, "action": {"start"}})
	m := secretRE.FindStringSubmatch(page.body)
	if page.status != 200 || m == nil || !strings.Contains(page.body, `href="otpauth://totp/Sovereign:kim@example.com?`) {
		t.Fatalf("setting up: %d\n%s", page.status, page.body)
	}
	secret := m[1]
	if r := b.post("/console/security", url.Values{"csrf_token": {b.csrf}, "action": {"confirm"}, "code": {"000000"}}); r.status != http.StatusBadRequest {
		t.Errorf("a wrong code turned it on: %d", r.status)
	}
	page = b.post("/console/security", url.Values{"csrf_token": {b.csrf}, "action": {"start"}})
	secret = secretRE.FindStringSubmatch(page.body)[1]
	now := time.Now()
	if r := b.post("/console/security", url.Values{"csrf_token": {b.csrf}, "action": {"confirm"}, "code": {totp(t, secret, now)}}); r.status != http.StatusSeeOther {
		t.Fatalf("confirm: %d %s", r.status, r.body)
	}
	if _, u := e.api(e.admin, "GET", "/v1/users/"+uid, nil); u["two_step"] != true {
		t.Fatalf("two_step after confirming: %v", u)
	}

	// A password alone now leads to the code page; a wrong code is
	// refused; the next step's code (the current one was used to turn it
	// on) signs in; the same code again does not.
	b2 := e.browser()
	pg := b2.get("/console/signin")
	r := b2.post("/console/signin", url.Values{"csrf_token": {csrfOf(t, pg.body)}, "email": {"kim@example.com"}, "password": {"correct horse battery"}})
	if r.status != 200 || !strings.Contains(r.body, `name="code"`) {
		t.Fatalf("after the password: %d\n%s", r.status, r.body)
	}
	if r := b2.get("/console/"); r.status != http.StatusSeeOther {
		t.Fatalf("signed in before the code: %d", r.status)
	}
	r = b2.post("/console/signin/code", url.Values{"csrf_token": {csrfOf(t, r.body)}, "code": {"123456"}})
	if r.status != http.StatusUnauthorized {
		t.Fatalf("a wrong code: %d", r.status)
	}
	next := totp(t, secret, now.Add(30*time.Second))
	r = b2.post("/console/signin/code", url.Values{"csrf_token": {csrfOf(t, r.body)}, "code": {next}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("the right code: %d %s", r.status, r.body)
	}
	if home := b2.get("/console/"); home.status != 200 {
		t.Fatalf("signed in: %d", home.status)
	}
	b3 := e.browser()
	pg = b3.get("/console/signin")
	r = b3.post("/console/signin", url.Values{"csrf_token": {csrfOf(t, pg.body)}, "email": {"kim@example.com"}, "password": {"correct horse battery"}})
	if r = b3.post("/console/signin/code", url.Values{"csrf_token": {csrfOf(t, r.body)}, "code": {next}}); r.status != http.StatusUnauthorized {
		t.Errorf("a code used twice: %d", r.status)
	}

	// The administrator's reset for a lost phone: a password alone again.
	if st, body := e.api(e.admin, "POST", "/v1/users/"+uid, map[string]any{"two_step": false}); st != 200 || body["two_step"] != false {
		t.Fatalf("reset: %d %v", st, body)
	}
	if st, _ := e.api(e.admin, "POST", "/v1/users/"+uid, map[string]any{"two_step": true}); st != 400 {
		t.Errorf("an administrator turned two-step sign-in on: %d", st)
	}
	if r := e.browser().signInAs("kim@example.com", "correct horse battery"); r.status != http.StatusSeeOther {
		t.Errorf("password alone after the reset: %d", r.status)
	}
}
