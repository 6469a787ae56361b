package console_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/oidc"
	"github.com/sovereign-ai/sovereign/internal/testutil"
	"github.com/sovereign-ai/sovereign/internal/testutil/oidcop"
)

// ssoBrowser is a browser that follows redirects, as one does through a
// provider's pages.
type ssoBrowser struct {
	t *testing.T
	c *http.Client
}

func newSSOBrowser(t *testing.T) *ssoBrowser {
	jar, _ := cookiejar.New(nil)
	return &ssoBrowser{t: t, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

func (b *ssoBrowser) do(req *http.Request) (int, string, *url.URL) {
	b.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body), res.Request.URL
}

func (b *ssoBrowser) get(u string) (int, string, *url.URL) {
	req, _ := http.NewRequest("GET", u, nil)
	return b.do(req)
}

func (b *ssoBrowser) postForm(u string, form url.Values) (int, string, *url.URL) {
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

var challengeRE = regexp.MustCompile(`name="challenge" value="([^"]+)"`)

// signInWith goes from the console's button through the provider's login
// page and back; it returns the console's last answer.
func (b *ssoBrowser) signInWith(console, login, password string) (int, string, *url.URL) {
	b.t.Helper()
	return b.signInWithProvider(console, "test", login, password)
}

func (b *ssoBrowser) signInWithProvider(console, provider, login, password string) (int, string, *url.URL) {
	b.t.Helper()
	st, body, at := b.get(console + "/console/sso/" + provider + "?next=/console/keys")
	if st != 200 || at.Path != "/login" {
		b.t.Fatalf("to the provider's login page: %d at %s\n%s", st, at, body)
	}
	m := challengeRE.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no login challenge in the provider's page:\n%s", body)
	}
	loginURL := at.Scheme + "://" + at.Host + "/login"
	st, body, at = b.postForm(loginURL, url.Values{"challenge": {m[1]}, "login": {login}, "password": {password}})
	if at.Path == "/console/keys" || strings.Contains(body, "Continue to the console") {
		// The "moving" page: follow it as the browser's refresh would.
		st, body, at = b.get(console + "/console/keys")
	}
	return st, body, at
}

// TestSingleSignOn signs people in through a real OpenID Provider (Ory
// Hydra): the authorization code flow with PKCE, a user made at first
// sign-in, teams and roles from the groups claim by the group rules,
// removal from a group removing the access at the next sign-in and a
// session that ends within the refresh window, an unverified address
// refused from taking over an account, RP-initiated logout, a forged
// callback refused, and password sign-in off once SSO is configured.
func TestSingleSignOn(t *testing.T) {
	op := testutil.Hydra(t)
	const clientID = "sovereign-console"
	e := newEnvConfig(t, false, config.Config{
		OIDC: []oidc.ProviderConfig{{Name: "test", DisplayName: "Test IdP", Issuer: op.Issuer, ClientID: clientID, ClientSecret: oidcop.ClientSecret,
			Scopes: []string{"openid", "email", "profile"}, SessionRefresh: 3 * time.Second},
			// A second provider (the same Hydra, another registration):
			// several at once, each with its button and its identities.
			{Name: "second", DisplayName: "Second IdP", Issuer: op.Issuer, ClientID: "sovereign-second", ClientSecret: oidcop.ClientSecret}},
		GroupRules: []auth.GroupRule{{Group: "ml-research", Team: "research", Role: auth.RoleDeveloper},
			{Group: "ml-leads", Team: "research", Role: auth.RoleOwner}, {Group: "platform", InstanceAdmin: true}},
	})
	if err := op.Client(clientID, []string{e.url + "/console/sso/test/callback"}, []string{e.url + "/console/signin?notice=Signed+out."}); err != nil {
		t.Fatal(err)
	}
	if err := op.Client("sovereign-second", []string{e.url + "/console/sso/second/callback"}, nil); err != nil {
		t.Fatal(err)
	}
	op.SetPerson("grace", oidcop.Person{Password: "grace-at-the-idp", Email: "Grace@Example.com", Name: "Grace Hopper", Groups: []string{"ml-research", "unrelated"}})

	// The sign-in page offers the provider and, with SSO configured, no
	// password form (console_password_signin: auto).
	b := newSSOBrowser(t)
	_, page, _ := b.get(e.url + "/console/signin")
	if !strings.Contains(page, "Sign in with Test IdP") || !strings.Contains(page, "Sign in with Second IdP") || strings.Contains(page, `name="password"`) {
		t.Fatalf("sign-in page:\n%s", page)
	}

	st, body, at := b.signInWith(e.url, "grace", "grace-at-the-idp")
	if st != 200 || at.Path != "/console/keys" || !strings.Contains(body, "Grace Hopper") || !strings.Contains(body, "research (developer)") {
		t.Fatalf("after single sign-on: %d at %s\n%s", st, at, body)
	}
	_, users := e.api(e.admin, "GET", "/v1/users", nil)
	data := users["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("users after the first sign-in: %v", users)
	}
	grace := data[0].(map[string]any)
	ms := grace["memberships"].([]any)
	if grace["email"] != "grace@example.com" || len(ms) != 1 || ms[0].(map[string]any)["role"] != "developer" || ms[0].(map[string]any)["source"] != "oidc:test" {
		t.Fatalf("the user made at first sign-in: %v", grace)
	}

	// Within the refresh window the session ends by itself; with the
	// group removed at the provider, signing in again finds no team.
	time.Sleep(3500 * time.Millisecond)
	noRedirect := &http.Client{Jar: b.c.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noRedirect.Get(e.url + "/console/keys")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/console/signin") {
		t.Fatalf("after the refresh window: %d %s, want the sign-in page", res.StatusCode, res.Header.Get("Location"))
	}
	op.SetPerson("grace", oidcop.Person{Password: "grace-at-the-idp", Email: "grace@example.com", Name: "Grace Hopper", Groups: []string{"unrelated"}})
	st, body, _ = b.signInWith(e.url, "grace", "grace-at-the-idp")
	if st != http.StatusForbidden || !strings.Contains(body, "none of your groups gives you a team") {
		t.Fatalf("signing in without the group: %d\n%s", st, body)
	}
	_, u := e.api(e.admin, "GET", "/v1/users/"+grace["id"].(string), nil)
	if ms := u["memberships"].([]any); len(ms) != 0 {
		t.Fatalf("the group's membership survived its removal: %v", u)
	}

	// A lead: owner of research; in platform: an instance administrator.
	op.SetPerson("grace", oidcop.Person{Password: "grace-at-the-idp", Email: "grace@example.com", Name: "Grace Hopper", Groups: []string{"ml-research", "ml-leads", "platform"}})
	st, body, _ = b.signInWith(e.url, "grace", "grace-at-the-idp")
	if st != 200 || !strings.Contains(body, "research (owner)") {
		t.Fatalf("as a lead: %d\n%s", st, body)
	}
	_, u = e.api(e.admin, "GET", "/v1/users/"+grace["id"].(string), nil)
	if u["instance_admin"] != true {
		t.Errorf("the platform group did not make an instance administrator: %v", u)
	}

	// RP-initiated logout: out of the console and out of the provider,
	// back on the sign-in page.
	hst, home, hat := b.get(e.url + "/console/")
	if hst != 200 || hat.Path != "/console/" {
		t.Fatalf("home as a lead: %d at %s", hst, hat)
	}
	csrf := csrfOf(t, home)
	st, body, at = b.postForm(e.url+"/console/signout", url.Values{"csrf_token": {csrf}})
	if st != 200 || at.Path != "/console/signin" || !strings.Contains(body, "Signed out.") {
		t.Fatalf("sign-out through the provider: %d at %s\n%s", st, at, body)
	}
	if res, err := noRedirect.Get(e.url + "/console/keys"); err != nil || res.StatusCode != http.StatusSeeOther {
		t.Fatalf("after sign-out: %v %v", res, err)
	}

	// The second provider knows the same person (another subject there):
	// the address links them to the same user.
	b3 := newSSOBrowser(t)
	st, body, at = b3.signInWithProvider(e.url, "second", "grace", "grace-at-the-idp")
	if st != 200 || at.Path != "/console/keys" || !strings.Contains(body, "Grace Hopper") {
		t.Fatalf("through the second provider: %d at %s\n%s", st, at, body)
	}
	if _, all := e.api(e.admin, "GET", "/v1/users", nil); len(all["data"].([]any)) != 1 {
		t.Errorf("the second provider made another user: %v", all)
	}

	// An unverified address does not take over an account someone made.
	if st, body := e.api(e.admin, "POST", "/v1/users", map[string]any{"email": "ada@example.com", "password": "ada's own password"}); st != 201 {
		t.Fatalf("create ada: %d %v", st, body)
	}
	no := false
	op.SetPerson("mallory", oidcop.Person{Password: "mallory-pw", Email: "ada@example.com", Groups: []string{"ml-research"}, EmailVerified: &no})
	b2 := newSSOBrowser(t)
	if st, body, _ := b2.signInWith(e.url, "mallory", "mallory-pw"); st != http.StatusForbidden {
		t.Fatalf("an unverified address claimed an account: %d\n%s", st, body)
	}

	// A callback this browser did not start is refused.
	if st, _, _ := newSSOBrowser(t).get(e.url + "/console/sso/test/callback?code=x&state=forged"); st != http.StatusBadRequest {
		t.Errorf("forged callback: %d", st)
	}
	// So is a password, with single sign-on configured (the form is not
	// shown; a post with the sign-in page's token is refused).
	pb := e.browser()
	pb.get("/console/signin")
	u2, _ := url.Parse(e.url + "/console/signin")
	var tok string
	for _, ck := range pb.c.Jar.Cookies(u2) {
		if ck.Name == "sovereign_console_signin" {
			tok = ck.Value
		}
	}
	if tok == "" {
		t.Fatal("no sign-in token cookie")
	}
	if r := pb.post("/console/signin", url.Values{"csrf_token": {tok}, "email": {"ada@example.com"}, "password": {"ada's own password"}}); r.status != http.StatusForbidden {
		t.Errorf("password sign-in with SSO on: %d", r.status)
	}
}
