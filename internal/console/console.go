// Package console is Sovereign's web console, served at /console: pages
// rendered on the server from embedded html/template files, forms that
// work as plain POST + redirect, and a few small JavaScript modules for
// what must be live (the streamed chat playground). See docs/console.md.
//
// A browser signs in with an API key holding the console (or admin) scope;
// the console keeps a server-side session (internal/console/session) and
// makes every read and write through the API itself, in process, as that
// key (httpapi.Server.Invoke and ServeAs). A page therefore shows exactly
// what the key may see: its scopes, its team, its limits and policies
// apply, and each call is in the request log like any other.
package console

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/console/session"
	"github.com/sovereign-ai/sovereign/internal/httpapi"
	"github.com/sovereign-ai/sovereign/internal/oidc"
	"github.com/sovereign-ai/sovereign/internal/samlsso"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// CookieName is the session cookie's name; preCookie carries the sign-in
// form's CSRF token before a session exists.
const (
	CookieName = "sovereign_console"
	preCookie  = "sovereign_console_signin"
	// CSRFHeader carries the CSRF token of JavaScript calls.
	CSRFHeader = "X-CSRF-Token"
	csrfField  = "csrf_token"
	// Prefix is where the console is mounted.
	Prefix = "/console"
)

// API is the in-process API the console calls as the session's key
// (*httpapi.Server).
type API interface {
	Invoke(ctx context.Context, keyID, method, path string, body []byte) (httpapi.Invoked, error)
	ServeAs(w http.ResponseWriter, r *http.Request, keyID string) error
}

// Keys authenticates the secret typed at sign-in and reads the session's
// own key (its name and scopes for the header) (*auth.Service).
type Keys interface {
	Authenticate(ctx context.Context, secret string) (auth.Key, error)
	GetKey(ctx context.Context, id string) (auth.Key, error)
}

// Config is what the console needs.
type Config struct {
	API      API
	Keys     Keys
	Sessions *session.Manager
	Log      *slog.Logger
	// Users signs people in with a password (nil: no user accounts).
	Users Users
	// KeySignIn lets an API key with the console or admin scope sign in:
	// a break-glass path, off by default, logged at warning level.
	KeySignIn bool
	// Passwords lets people sign in with a password (needs Users).
	Passwords bool
	// Providers are the single sign-on providers, and GroupRules what
	// their groups make of people.
	Providers     []*oidc.Provider
	SAMLProviders []*samlsso.Provider
	GroupRules    []auth.GroupRule
	// Invites turns invitation links into accounts (nil: none).
	Invites Invitations
}

// Console serves /console.
type Console struct {
	cfg   Config
	pages map[string]*template.Template
	mux   *http.ServeMux
	// attempts bounds password sign-ins per client address.
	attempts attempts
	// csp is the Content-Security-Policy of every answer.
	csp string
}

// New builds the console. Errors: a template that does not parse (a bug).
func New(cfg Config) (*Console, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	c := &Console{cfg: cfg, pages: map[string]*template.Template{}}
	// form-action also governs where a form's answer redirects: sign-out
	// goes on to a single sign-on provider's logout (RP-initiated logout),
	// so the providers' origins are allowed too.
	formAction := "'self'"
	for _, p := range cfg.Providers {
		if u, err := url.Parse(p.Config.Issuer); err == nil && u.Host != "" {
			formAction += " " + u.Scheme + "://" + u.Host
		}
	}
	c.csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action " + formAction + "; base-uri 'none'"
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	// templates/_*.html are partials every page may use.
	partials, err := fs.Glob(templateFS, "templates/_*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" || strings.HasPrefix(base, "_") {
			continue
		}
		files := append([]string{"templates/layout.html"}, partials...)
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, append(files, n)...)
		if err != nil {
			return nil, err
		}
		c.pages[base] = t
	}
	c.routes()
	return c, nil
}

// ServeHTTP serves the console's pages and assets.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", c.csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	c.mux.ServeHTTP(w, r)
}

// page is what every template gets.
type page struct {
	Title string
	Nav   string
	Key   *auth.Key
	// Person is who is signed in (nil for a key's break-glass session).
	Person *person
	CSRF   string
	Notice string
	Error  string
	Data   any
}

// req is one signed-in request.
type req struct {
	w      http.ResponseWriter
	r      *http.Request
	sess   session.Session
	key    auth.Key
	person *person
}

type handler func(c *Console, q *req) error

func (c *Console) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix(Prefix+"/static/", http.FileServer(http.FS(static)))
	m.Handle("GET "+Prefix+"/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
	m.HandleFunc("GET "+Prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"/", http.StatusFound)
	})
	m.HandleFunc("GET "+Prefix+"/signin", c.signinPage)
	m.HandleFunc("POST "+Prefix+"/signin", c.signin)
	m.HandleFunc("POST "+Prefix+"/signin/code", c.signinCode)
	m.Handle("GET "+Prefix+"/security", c.auth(securityPage))
	m.Handle("POST "+Prefix+"/security", c.auth(securityAction))
	m.HandleFunc("GET "+Prefix+"/invite/{token}", c.invitePage)
	m.HandleFunc("POST "+Prefix+"/invite/{token}", c.acceptInvite)
	m.HandleFunc("GET "+samlPath+"{name}", c.samlStart)
	m.HandleFunc("POST "+samlPath+"{name}/acs", c.samlACS)
	m.HandleFunc("GET "+samlPath+"{name}/metadata", c.samlMetadata)
	m.HandleFunc("GET "+ssoPath+"{name}", c.ssoStart)
	m.HandleFunc("GET "+ssoPath+"{name}/callback", c.ssoCallback)
	m.Handle("POST "+Prefix+"/signout", c.auth(signout))
	m.Handle("POST "+Prefix+"/team", c.auth(switchTeam))
	m.Handle("GET "+Prefix+"/{$}", c.auth(overview))
	m.Handle("GET "+Prefix+"/keys", c.auth(keysPage))
	m.Handle("POST "+Prefix+"/keys", c.auth(createKey))
	m.Handle("POST "+Prefix+"/keys/{id}/revoke", c.auth(revokeKey))
	m.Handle("POST "+Prefix+"/keys/{id}/rotate", c.auth(rotateKey))
	m.Handle("POST "+Prefix+"/teams", c.auth(createTeam))
	m.Handle("POST "+Prefix+"/teams/{id}/capture", c.auth(teamCapture))
	m.Handle("GET "+Prefix+"/playground", c.auth(playground))
	m.Handle("GET "+Prefix+"/models", c.auth(modelsPage))
	m.Handle("GET "+Prefix+"/models/{id}", c.auth(modelPage))
	m.Handle("POST "+Prefix+"/models/{id}/{action}", c.auth(modelAction))
	m.Handle("GET "+Prefix+"/compare", c.auth(comparePage))
	m.Handle("POST "+Prefix+"/compare", c.auth(compare))
	m.Handle("GET "+Prefix+"/logs", c.auth(logsPage))
	m.Handle("GET "+Prefix+"/logs/{id}", c.auth(logPage))
	m.Handle("GET "+Prefix+"/usage", c.auth(usagePage))
	m.Handle("GET "+Prefix+"/decisions", c.auth(decisionsPage))
	m.Handle("GET "+Prefix+"/decisions/{id}", c.auth(decisionPage))
	m.Handle("GET "+Prefix+"/limits", c.auth(limitsPage))
	m.Handle("GET "+Prefix+"/source_links", c.auth(sourceLinksPage))
	m.Handle("GET "+Prefix+"/source_links/{id}", c.auth(sourceLinkPage))
	m.Handle("GET "+Prefix+"/audit", c.auth(auditPage))
	m.Handle("GET "+Prefix+"/sources", c.auth(collectionsPage))
	m.Handle("POST "+Prefix+"/sources", c.auth(createCollection))
	m.Handle("GET "+Prefix+"/sources/{id}", c.auth(collectionPage))
	m.Handle("POST "+Prefix+"/sources/{id}/documents", c.auth(addDocument))
	m.Handle("POST "+Prefix+"/sources/{id}/search", c.auth(searchCollection))
	m.Handle("GET "+Prefix+"/workflows", c.auth(workflowsPage))
	m.Handle("POST "+Prefix+"/workflows", c.auth(createWorkflow))
	m.Handle("GET "+Prefix+"/workflows/{id}", c.auth(workflowPage))
	m.Handle("POST "+Prefix+"/workflows/{id}", c.auth(updateWorkflow))
	m.Handle("POST "+Prefix+"/workflows/{id}/delete", c.auth(deleteWorkflow))
	m.Handle("POST "+Prefix+"/workflows/{id}/runs", c.auth(startRun))
	m.Handle("GET "+Prefix+"/runs", c.auth(runsPage))
	m.Handle("GET "+Prefix+"/runs/{id}", c.auth(runPage))
	m.Handle("GET "+Prefix+"/approvals", c.auth(approvalsPage))
	m.Handle("POST "+Prefix+"/approvals/{id}", c.auth(decideApproval))
	m.Handle("GET "+Prefix+"/webhooks", c.auth(webhooksPage))
	m.Handle("POST "+Prefix+"/webhooks", c.auth(createWebhook))
	m.Handle("GET "+Prefix+"/webhooks/{id}", c.auth(webhookPage))
	m.Handle("POST "+Prefix+"/webhooks/{id}", c.auth(updateWebhook))
	m.Handle("POST "+Prefix+"/webhooks/{id}/rotate", c.auth(rotateWebhook))
	m.Handle("POST "+Prefix+"/webhooks/{id}/delete", c.auth(deleteWebhook))
	m.Handle("POST "+Prefix+"/webhooks/{id}/deliveries/{delivery}/redeliver", c.auth(redeliver))
	m.Handle(Prefix+"/api/", c.auth(passThrough))
	m.HandleFunc(Prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		c.render(w, http.StatusNotFound, "error", page{Title: "Not found", Error: "There is no console page at " + r.URL.Path + "."})
	})
	c.mux = m
}

// auth wraps a page that needs a session: without one, GET goes to the
// sign-in page and anything else is 401; a non-GET without the session's
// CSRF token (form field or header) is 403.
func (c *Console) auth(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		ck, _ := r.Cookie(CookieName)
		var id string
		if ck != nil {
			id = ck.Value
		}
		s, err := c.cfg.Sessions.Check(r.Context(), id)
		var key auth.Key
		if err == nil {
			key, err = c.cfg.Keys.GetKey(r.Context(), s.KeyID)
			if err == nil && !key.Active(time.Now()) {
				// A revoked or expired key ends its sessions.
				_ = c.cfg.Sessions.End(r.Context(), id)
				err = session.ErrNoSession
			}
		}
		if err != nil {
			if !errors.Is(err, session.ErrNoSession) && !errors.Is(err, auth.ErrNotFound) {
				if status, msg, ok := unavailable(w, err); ok {
					c.render(w, status, "error", page{Title: "Unavailable", Error: msg})
					return
				}
				c.cfg.Log.Error("console: session", "err", err)
				c.render(w, http.StatusInternalServerError, "error", page{Title: "Error", Error: "The console could not read its session; try again."})
				return
			}
			if ck != nil {
				c.clearCookie(w, r, CookieName)
			}
			if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, Prefix+"/api/") {
				http.Redirect(w, r, Prefix+"/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			writeAPIError(w, http.StatusUnauthorized, "unauthorized", "Sign in to the console first.")
			return
		}
		if !safeMethod(r.Method) {
			tok := r.Header.Get(CSRFHeader)
			if tok == "" && isForm(r) {
				tok = r.PostFormValue(csrfField)
			}
			if !s.ValidCSRF(tok) || !sameOrigin(r) {
				c.refuseCSRF(w, r)
				return
			}
		}
		q := &req{w: w, r: r, sess: s, key: key}
		// Who is signed in is for the page's header: the pass-through to
		// the API (the playground's streams, a model page's polling) has
		// no page, and skips the three reads.
		if strings.HasPrefix(r.URL.Path, Prefix+"/api/") {
			if err := h(c, q); err != nil {
				c.fail(q, err)
			}
			return
		}
		if q.person, err = c.personOf(r.Context(), key); err != nil {
			if status, msg, ok := unavailable(w, err); ok {
				c.render(w, status, "error", page{Title: "Unavailable", Error: msg})
				return
			}
			c.cfg.Log.Error("console: reading the signed-in user", "err", err)
			c.render(w, http.StatusInternalServerError, "error", page{Title: "Error", Error: "The console could not read who you are; try again."})
			return
		}
		if err := h(c, q); err != nil {
			c.fail(q, err)
		}
	})
}

func (c *Console) refuseCSRF(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, Prefix+"/api/") {
		writeAPIError(w, http.StatusForbidden, "csrf_failed", "The request lacks this session's CSRF token.")
		return
	}
	c.render(w, http.StatusForbidden, "error", page{Title: "Refused", Error: "This form lacks its security token (CSRF). Reload the page and try again."})
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func isForm(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return strings.HasPrefix(ct, "application/x-www-form-urlencoded") || strings.HasPrefix(ct, "multipart/form-data")
}

// sameOrigin refuses a request whose Origin header (when the browser sends
// one) names another site: defence in depth beside the token and
// SameSite=Strict.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" {
		return o == ""
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// writeAPIError answers a /console/api call in the API's error envelope.
func writeAPIError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "console_error", "param": nil, "code": code}})
}

// setCookie sets a console cookie: HttpOnly, SameSite=Strict, Path
// /console, Secure when the request came over TLS.
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: maxAge})
}

func (c *Console) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	c.setCookie(w, r, name, "", -1)
}

// render writes page name with p.
func (c *Console) render(w http.ResponseWriter, status int, name string, p page) {
	t, ok := c.pages[name]
	if !ok {
		http.Error(w, "no template "+name, http.StatusInternalServerError)
		return
	}
	var b strings.Builder
	if err := t.Execute(&b, p); err != nil {
		c.cfg.Log.Error("console: render", "page", name, "err", err)
		http.Error(w, "The page could not be rendered.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// show renders a signed-in page.
func (q *req) page(title, nav string, data any) page {
	k := q.key
	return page{Title: title, Nav: nav, Key: &k, Person: q.person, CSRF: q.sess.CSRF, Notice: q.r.URL.Query().Get("notice"), Data: data}
}

func (c *Console) show(q *req, status int, name, title, nav string, data any) error {
	c.render(q.w, status, name, q.page(title, nav, data))
	return nil
}

// fail renders err for a signed-in page: an API error with its status and
// message, anything else as a 500 (logged).
func (c *Console) fail(q *req, err error) {
	var ae *apierr.Error
	status, msg := http.StatusInternalServerError, "Something went wrong on the server; the error is logged."
	if s, m, ok := unavailable(q.w, err); ok {
		status, msg = s, m
	} else if errors.As(err, &ae) {
		status, msg = ae.Status(), ae.Message
	} else {
		c.cfg.Log.Error("console", "path", q.r.URL.Path, "err", err)
	}
	p := q.page("Error", "", nil)
	p.Error = msg
	c.render(q.w, status, "error", p)
}

// unavailable reports whether err is a dependency being down (the
// database: 503 database_unavailable, as the API answers it) and, if so,
// sets Retry-After on w and returns the status and a message for a person.
// A page the console cannot serve during a database outage says so, like
// the API, rather than showing a 500 that reads like a bug (issue 27).
func unavailable(w http.ResponseWriter, err error) (int, string, bool) {
	e := apierr.From(err)
	if e.Status() != http.StatusServiceUnavailable {
		return 0, "", false
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	msg := "A service the console needs is unavailable right now; try again in a few seconds."
	if e.Code == apierr.DatabaseUnavailable {
		msg = "The database is unavailable right now; try again in a few seconds."
	}
	return e.Status(), msg, true
}

// call makes an API call as the session's key and decodes a 2xx answer
// into out (when not nil). Errors: the API's error (*apierr.Error).
func (c *Console) call(q *req, method, path string, body any, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	res, err := c.cfg.API.Invoke(q.r.Context(), q.sess.KeyID, method, path, b)
	if err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return err
	}
	if out != nil && len(res.Body) > 0 {
		return json.Unmarshal(res.Body, out)
	}
	return nil
}

// redirect answers a form post: see other, with a notice for the page.
func redirect(q *req, path, notice string) error {
	if notice != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "notice=" + url.QueryEscape(notice)
	}
	http.Redirect(q.w, q.r, path, http.StatusSeeOther)
	return nil
}

var funcs = template.FuncMap{
	"unix": func(v any) string {
		var n int64
		switch x := v.(type) {
		case float64:
			n = int64(x)
		case int64:
			n = x
		case *int64:
			if x == nil {
				return "—"
			}
			n = *x
		case json.Number:
			n, _ = x.Int64()
		case nil:
			return "—"
		default:
			return "—"
		}
		if n == 0 {
			return "—"
		}
		return time.Unix(n, 0).UTC().Format("2006-01-02 15:04 UTC")
	},
	"join":   func(v []string) string { return strings.Join(v, ", ") },
	"has":    func(k *auth.Key, scope string) bool { return k != nil && auth.HasScope(*k, auth.Scope(scope)) },
	"scopes": func() []auth.Scope { return auth.ValidScopes },
	"inc":    func(i int) int { return i + 1 },
	"cell":   cell,
	"list":   func(v ...string) []string { return v },
	"count":  count,
	"named":  named,
	"label":  label,
	"size":   size,
	"bar":    barWidth,
	"has1":   func(list []string, v string) bool { return slices.Contains(list, v) },
	"defform": func(csrf, action string, form workflowForm, refused any, button string) definitionForm {
		ae, _ := refused.(*apierr.Error)
		return definitionForm{CSRF: csrf, Action: action, Form: form, Refused: ae, Button: button}
	},
	"ms": func(v any) string {
		switch x := v.(type) {
		case float64:
			return strconvF(x, 0) + " ms"
		case *float64:
			if x != nil {
				return strconvF(*x, 0) + " ms"
			}
		}
		return "—"
	},
	"f1": func(v any) string {
		switch x := v.(type) {
		case float64:
			return strconvF(x, 1)
		case *float64:
			if x != nil {
				return strconvF(*x, 1)
			}
		}
		return "—"
	},
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// count writes a whole number for people: 1,234 and 12.3 k, 4.5 M.
func count(n int64) string {
	switch {
	case n >= 10_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 0, 64) + " M"
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " M"
	case n >= 100_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 0, 64) + " k"
	case n >= 10_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + " k"
	case n >= 1000:
		s := strconv.FormatInt(n, 10)
		return s[:len(s)-3] + "," + s[len(s)-3:]
	}
	return strconv.FormatInt(n, 10)
}

// label writes a field's name for people: "tokens_per_second" is
// "Tokens per second", "ttft_ms" "TTFT".
func label(field string) string {
	f := strings.TrimSuffix(field, "_ms")
	words := strings.Split(f, "_")
	for i, w := range words {
		switch w {
		case "ttft", "tpot", "kv", "id", "p50", "p95", "p99":
			words[i] = strings.ToUpper(w)
		case "tps":
			words[i] = "tokens/s"
		}
	}
	s := strings.Join(words, " ")
	if s == "" {
		return field
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// size writes a number of bytes for people: 380 MB, 1.2 GB.
func size(v any) string {
	var n float64
	switch x := v.(type) {
	case int64:
		n = float64(x)
	case int:
		n = float64(x)
	case float64:
		n = x
	default:
		return fmt.Sprint(v)
	}
	switch {
	case n >= 1e9:
		return strconv.FormatFloat(n/1e9, 'f', 1, 64) + " GB"
	case n >= 1e6:
		return strconv.FormatFloat(n/1e6, 'f', 0, 64) + " MB"
	case n >= 1e3:
		return strconv.FormatFloat(n/1e3, 'f', 0, 64) + " kB"
	}
	return strconv.FormatFloat(n, 'f', 0, 64) + " bytes"
}
