package console_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"html"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crewjam/saml/samlidp"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/samlsso"
)

var (
	formActionRE = regexp.MustCompile(`<form method="post" action="([^"]+)"`)
	hiddenRE     = regexp.MustCompile(`<input type="hidden" name="([A-Za-z]+)" value="([^"]*)"`)
)

// postForm submits the first form of page with its hidden fields and
// extra, as a browser would.
func (b *ssoBrowser) submit(page string, base *url.URL, extra url.Values) (int, string, *url.URL) {
	b.t.Helper()
	m := formActionRE.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no form in:\n%s", page)
	}
	action, err := base.Parse(html.UnescapeString(m[1]))
	if err != nil {
		b.t.Fatal(err)
	}
	form := url.Values{}
	for _, h := range hiddenRE.FindAllStringSubmatch(page, -1) {
		form.Set(h[1], html.UnescapeString(h[2]))
	}
	for k, v := range extra {
		form[k] = v
	}
	return b.postForm(action.String(), form)
}

// TestSAMLSignIn signs in through a SAML 2.0 identity provider
// (crewjam/saml's samlidp, a real IdP): the SP-initiated flow, the user
// made at first sign-in with the team and role its groups give, a
// response replayed or answering no request of this browser refused.
func TestSAMLSignIn(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "test idp"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	cert, _ := x509.ParseCertificate(der)
	idpSrv := httptest.NewUnstartedServer(nil)
	idpSrv.Start()
	t.Cleanup(idpSrv.Close)
	idpURL, _ := url.Parse(idpSrv.URL)
	idp, err := samlidp.New(samlidp.Options{URL: *idpURL, Key: key, Certificate: cert, Store: &samlidp.MemoryStore{}})
	if err != nil {
		t.Fatal(err)
	}
	idpSrv.Config.Handler = idp
	put := func(path string, body []byte) {
		req, _ := http.NewRequest("PUT", idpSrv.URL+path, bytes.NewReader(body))
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode >= 300 {
			t.Fatalf("PUT %s: %v %v", path, res, err)
		}
		res.Body.Close()
	}
	user, _ := json.Marshal(map[string]any{"name": "alan", "password": "alan-at-the-idp", "email": "alan@example.com",
		"common_name": "Alan Turing", "groups": []string{"ml-research"}})
	put("/users/alan", user)

	e := newEnvConfig(t, false, config.Config{
		SAML:       []samlsso.ProviderConfig{{Name: "corp", DisplayName: "Corp SAML", MetadataURL: idpSrv.URL + "/metadata"}},
		GroupRules: []auth.GroupRule{{Group: "ml-research", Team: "research", Role: auth.RoleDeveloper}},
	})
	b := newSSOBrowser(t)
	st, md, _ := b.get(e.url + "/console/saml/corp/metadata")
	if st != 200 || !strings.Contains(md, "/console/saml/corp/acs") {
		t.Fatalf("SP metadata: %d\n%s", st, md)
	}
	put("/services/sovereign", []byte(md))
	_, page, _ := b.get(e.url + "/console/signin")
	if !strings.Contains(page, "Sign in with Corp SAML") || strings.Contains(page, `name="password"`) {
		t.Fatalf("sign-in page:\n%s", page)
	}

	st, login, at := b.get(e.url + "/console/saml/corp?next=/console/keys")
	if st != 200 || !strings.Contains(login, `name="user"`) {
		t.Fatalf("the provider's login page: %d at %s\n%s", st, at, login)
	}
	st, answer, at := b.submit(login, at, url.Values{"user": {"alan"}, "password": {"alan-at-the-idp"}})
	if st != 200 || !strings.Contains(answer, "SAMLResponse") {
		t.Fatalf("after the provider's login: %d at %s\n%s", st, at, answer)
	}
	st, moving, _ := b.submit(answer, at, nil)
	if st != 200 || !strings.Contains(moving, "Continue to the console") {
		t.Fatalf("the assertion consumer: %d\n%s", st, moving)
	}
	st, keys, _ := b.get(e.url + "/console/keys")
	if st != 200 || !strings.Contains(keys, "Alan Turing") || !strings.Contains(keys, "research (developer)") {
		t.Fatalf("signed in through SAML: %d\n%s", st, keys)
	}
	_, users := e.api(e.admin, "GET", "/v1/users", nil)
	data := users["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["email"] != "alan@example.com" {
		t.Fatalf("users: %v", users)
	}
	if ms := data[0].(map[string]any)["memberships"].([]any); len(ms) != 1 || ms[0].(map[string]any)["source"] != "saml:corp" {
		t.Errorf("memberships: %v", ms)
	}

	// The same response again (a replay, in another browser that started
	// no sign-in) is refused.
	st, _, _ = newSSOBrowser(t).submit(answer, at, nil)
	if st != http.StatusBadRequest {
		t.Errorf("a replayed response: %d", st)
	}
}
