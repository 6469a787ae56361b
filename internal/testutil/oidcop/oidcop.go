// Package oidcop runs a real OpenID Provider for tests: Ory Hydra
// (scripts/hydra.sh builds it) with the small login, consent and logout
// app Hydra needs in front of it. testutil.Hydra starts one for a Go
// test; the testidp command starts one for the browser suite.
package oidcop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"time"
)

// OP is a real OpenID Provider for tests: Ory Hydra (scripts/hydra.sh
// builds it) on loopback ports with an in-memory database, and the small
// login and consent app Hydra needs in front of it (Hydra has no user
// store of its own). The app's login page is an HTML form; it knows the
// people in People, and puts their e-mail address, name and groups in
// the ID token. Change People to change what the provider says next time.
type OP struct {
	// Issuer is the provider's issuer URL (its public port).
	Issuer string
	admin  string
	app    *httptest.Server

	// Control serves /_ctl/person and /_ctl/client on the login app, for
	// a test in another process (the browser suite) to change the people
	// and register its client.
	Control bool

	mu     sync.Mutex
	people map[string]Person
}

// Person is someone the test provider signs in.
type Person struct {
	Password, Email, Name string
	Groups                []string
	// EmailVerified is the email_verified claim (nil: not sent).
	EmailVerified *bool
}

// SetPerson adds or changes a person the provider knows, by login name.
func (op *OP) SetPerson(login string, p Person) {
	op.mu.Lock()
	defer op.mu.Unlock()
	op.people[login] = p
}

func (op *OP) person(login string) (Person, bool) {
	op.mu.Lock()
	defer op.mu.Unlock()
	p, ok := op.people[login]
	return p, ok
}

// Start starts Hydra from bin with an in-memory database on free loopback
// ports, and the login app (with its control routes when control is
// set); stop ends both. Hydra's output goes to logs.
func Start(bin string, logs io.Writer, control bool) (op *OP, stop func(), err error) {
	op = &OP{people: map[string]Person{}, Control: control}
	op.app = httptest.NewServer(http.HandlerFunc(op.serveApp))
	public, err := freePort()
	if err != nil {
		op.app.Close()
		return nil, nil, err
	}
	admin, err := freePort()
	if err != nil {
		op.app.Close()
		return nil, nil, err
	}
	op.Issuer = fmt.Sprintf("http://127.0.0.1:%d", public)
	op.admin = fmt.Sprintf("http://127.0.0.1:%d", admin)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "all", "--dev")
	cmd.Env = append(os.Environ(),
		"DSN=memory", "LOG_LEVEL=warn", "SECRETS_SYSTEM=sovereign-tests-only-secret-0123456789",
		"URLS_SELF_ISSUER="+op.Issuer, "URLS_LOGIN="+op.app.URL+"/login", "URLS_CONSENT="+op.app.URL+"/consent",
		"URLS_LOGOUT="+op.app.URL+"/logout",
		fmt.Sprintf("SERVE_PUBLIC_PORT=%d", public), fmt.Sprintf("SERVE_ADMIN_PORT=%d", admin),
		"SERVE_PUBLIC_HOST=127.0.0.1", "SERVE_ADMIN_HOST=127.0.0.1",
		"STRATEGIES_ACCESS_TOKEN=jwt", "OAUTH2_PKCE_ENFORCED=true")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		cancel()
		op.app.Close()
		return nil, nil, fmt.Errorf("starting Hydra: %w", err)
	}
	stop = func() {
		cancel()
		_ = cmd.Wait()
		op.app.Close()
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res, err := http.Get(op.admin + "/health/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return op, stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("Hydra did not become ready: %v", err)
		}
	}
}

// LoginURL is the login app's base URL.
func (op *OP) LoginURL() string { return op.app.URL }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ClientSecret is the secret of every client Client registers.
const ClientSecret = "a-client-secret-for-tests-0123456789"

// Client registers an OAuth client id (confidential, authorization code
// with PKCE; its secret is ClientSecret).
func (op *OP) Client(id string, redirectURIs, postLogout []string) error {
	_, err := op.adminDo("POST", "/admin/clients", map[string]any{"client_id": id, "client_secret": ClientSecret,
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"scope": "openid email profile groups offline_access", "redirect_uris": redirectURIs,
		"post_logout_redirect_uris": postLogout, "token_endpoint_auth_method": "client_secret_basic"})
	return err
}

// admin calls Hydra's admin API from the app (errors answered as 502).
func (op *OP) adminDo(method, path string, body any) (map[string]any, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, op.admin+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	var out map[string]any
	return out, json.Unmarshal(raw, &out)
}

const loginPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test provider: sign in</title></head>
<body><main><h1>Test identity provider</h1>%s
<form method="post" action="/login"><input type="hidden" name="challenge" value="%s">
<label for="login">Login</label> <input id="login" name="login" autocomplete="username">
<label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password">
<button type="submit">Sign in at the provider</button></form></main></body></html>`

// serveApp is the login, consent and logout app.
func (op *OP) serveApp(w http.ResponseWriter, r *http.Request) {
	redirect := func(out map[string]any, err error) {
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		http.Redirect(w, r, out["redirect_to"].(string), http.StatusFound)
	}
	switch {
	case r.URL.Path == "/_ctl/person" && r.Method == http.MethodPost && op.Control:
		var p struct {
			Login string `json:"login"`
			Person
		}
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.Login == "" {
			http.Error(w, "want {login, Password, Email, Name, Groups}", http.StatusBadRequest)
			return
		}
		op.SetPerson(p.Login, p.Person)
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/_ctl/client" && r.Method == http.MethodPost && op.Control:
		var c struct {
			ID         string   `json:"id"`
			Redirects  []string `json:"redirect_uris"`
			PostLogout []string `json:"post_logout_redirect_uris"`
		}
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil || c.ID == "" {
			http.Error(w, "want {id, redirect_uris, post_logout_redirect_uris}", http.StatusBadRequest)
			return
		}
		if err := op.Client(c.ID, c.Redirects, c.PostLogout); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/login" && r.Method == http.MethodGet:
		ch := r.URL.Query().Get("login_challenge")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, loginPage, "", html.EscapeString(ch))
	case r.URL.Path == "/login" && r.Method == http.MethodPost:
		ch, login := r.PostFormValue("challenge"), r.PostFormValue("login")
		p, ok := op.person(login)
		if !ok || p.Password != r.PostFormValue("password") {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, loginPage, `<p role="alert">Wrong login or password.</p>`, html.EscapeString(ch))
			return
		}
		redirect(op.adminDo("PUT", "/admin/oauth2/auth/requests/login/accept?login_challenge="+url.QueryEscape(ch),
			map[string]any{"subject": login, "remember": false}))
	case r.URL.Path == "/consent":
		ch := r.URL.Query().Get("consent_challenge")
		req, err := op.adminDo("GET", "/admin/oauth2/auth/requests/consent?consent_challenge="+url.QueryEscape(ch), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		login, _ := req["subject"].(string)
		p, _ := op.person(login)
		claims := map[string]any{"email": p.Email, "name": p.Name, "groups": p.Groups}
		if p.EmailVerified != nil {
			claims["email_verified"] = *p.EmailVerified
		}
		redirect(op.adminDo("PUT", "/admin/oauth2/auth/requests/consent/accept?consent_challenge="+url.QueryEscape(ch),
			map[string]any{"grant_scope": req["requested_scope"], "grant_access_token_audience": req["requested_access_token_audience"],
				"remember": false, "session": map[string]any{"id_token": claims}}))
	case r.URL.Path == "/logout":
		ch := r.URL.Query().Get("logout_challenge")
		redirect(op.adminDo("PUT", "/admin/oauth2/auth/requests/logout/accept?logout_challenge="+url.QueryEscape(ch), nil))
	default:
		http.NotFound(w, r)
	}
}
