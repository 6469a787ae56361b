package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/httpapi"
	"github.com/sovereign-ai/sovereign/internal/records"
)

func strconvF(f float64, prec int) string { return strconv.FormatFloat(f, 'f', prec, 64) }

// ---------------------------------------------------------------- sign-in

type signinData struct {
	Next string
	// Passwords and Keys say which forms the page shows, Providers which
	// single sign-on buttons.
	Passwords, Keys bool
	Providers       []providerLink
}

type providerLink struct{ Name, DisplayName, URL string }

// signinPage shows the sign-in form, with a CSRF token in a short-lived
// cookie (no session exists yet: double submit).
func (c *Console) signinPage(w http.ResponseWriter, r *http.Request) {
	c.signinForm(w, r, http.StatusOK, "")
}

func (c *Console) signinForm(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	tok, ok := c.preToken(w, r)
	if !ok {
		return
	}
	c.render(w, status, "signin", page{Title: "Sign in", CSRF: tok, Error: msg, Notice: r.URL.Query().Get("notice"),
		Data: c.signinData(r)})
}

func (c *Console) signinData(r *http.Request) signinData {
	d := signinData{Next: safeNext(r.FormValue("next")), Passwords: c.cfg.Users != nil && c.cfg.Passwords, Keys: c.cfg.KeySignIn}
	for _, p := range c.cfg.Providers {
		d.Providers = append(d.Providers, providerLink{Name: p.Config.Name, DisplayName: p.Config.DisplayName,
			URL: ssoPath + p.Config.Name + "?next=" + url.QueryEscape(d.Next)})
	}
	for _, p := range c.cfg.SAMLProviders {
		d.Providers = append(d.Providers, providerLink{Name: p.Config.Name, DisplayName: p.Config.DisplayName,
			URL: samlPath + p.Config.Name + "?next=" + url.QueryEscape(d.Next)})
	}
	return d
}

// safeNext keeps a post-sign-in target inside the console.
func safeNext(n string) string {
	home := Prefix + "/"
	u, err := url.Parse(n)
	if n == "" || err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(n, "/") || strings.HasPrefix(n, "//") || strings.Contains(n, "\\") {
		return home
	}
	// The path as the browser will resolve it: http.Redirect (and the
	// browser) resolve dot segments, so "/console/../../evil" is "/evil".
	p := path.Clean(u.Path)
	if strings.HasSuffix(u.Path, "/") && p != "/" {
		p += "/"
	}
	if !strings.HasPrefix(p, home) || strings.HasPrefix(p, Prefix+"/api/") || strings.HasPrefix(p, Prefix+"/signin") {
		return home
	}
	return (&url.URL{Path: p, RawQuery: u.RawQuery}).String()
}

// signin checks the key typed in (it must hold console or admin) and
// starts a session.
func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !c.preCSRF(w, r) {
		return
	}
	if r.PostFormValue("email") != "" && c.cfg.Users != nil {
		if !c.cfg.Passwords {
			c.signinForm(w, r, http.StatusForbidden, "Signing in with a password is turned off here; use single sign-on.")
			return
		}
		c.passwordSignin(w, r)
		return
	}
	if !c.cfg.KeySignIn {
		c.signinForm(w, r, http.StatusForbidden, "Signing in with an API key is turned off; sign in with your account.")
		return
	}
	secret := strings.TrimSpace(r.PostFormValue("api_key"))
	key, err := c.cfg.Keys.Authenticate(r.Context(), secret)
	switch {
	case errors.Is(err, auth.ErrMissingKey):
		c.signinForm(w, r, http.StatusUnauthorized, "Paste an API key to sign in.")
		return
	case errors.Is(err, auth.ErrRevokedKey):
		c.signinForm(w, r, http.StatusUnauthorized, "This API key has been revoked.")
		return
	case errors.Is(err, auth.ErrExpiredKey):
		c.signinForm(w, r, http.StatusUnauthorized, "This API key has expired.")
		return
	case errors.Is(err, auth.ErrInvalidKey):
		c.signinForm(w, r, http.StatusUnauthorized, "Incorrect API key.")
		return
	case err != nil:
		c.signinFailed(w, r, err, "check the key")
		return
	}
	if !auth.HasScope(key, auth.ScopeConsole) {
		c.signinForm(w, r, http.StatusForbidden, "This API key lacks the 'console' scope (or 'admin') needed to sign in.")
		return
	}
	id, _, err := c.cfg.Sessions.Create(r.Context(), key.ID)
	if err != nil {
		c.signinFailed(w, r, err, "start a session")
		return
	}
	// Loudly: a key's session is a break-glass path, and nothing names
	// the person who used it.
	c.cfg.Log.Warn("console: signed in with an API key (break-glass: console_key_signin)", "key", key.ID, "team", key.TeamID, "client_ip", clientIP(r))
	c.clearCookie(w, r, preCookie)
	// A session cookie (no Max-Age): the server decides expiry.
	c.setCookie(w, r, CookieName, id, 0)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

func signout(c *Console, q *req) error {
	if ck, _ := q.r.Cookie(CookieName); ck != nil {
		if err := c.cfg.Sessions.End(q.r.Context(), ck.Value); err != nil {
			return err
		}
	}
	if q.key.Kind == auth.KindSession && c.cfg.Users != nil {
		// The sign-in's key ends with it.
		if _, err := c.cfg.Users.Revoke(q.r.Context(), q.key.ID); err != nil {
			c.cfg.Log.Warn("console: revoking a session's key", "key", q.key.ID, "err", err)
		}
	}
	c.clearCookie(q.w, q.r, CookieName)
	if to := c.ssoLogout(q.r, q.sess); to != "" {
		// Signed out at the provider too (RP-initiated logout), which
		// comes back to the sign-in page.
		http.Redirect(q.w, q.r, to, http.StatusSeeOther)
		return nil
	}
	http.Redirect(q.w, q.r, Prefix+"/signin?notice="+url.QueryEscape("Signed out."), http.StatusSeeOther)
	return nil
}

// ---------------------------------------------------------------- overview

func overview(c *Console, q *req) error {
	d := overviewData{}
	if err := c.call(q, "GET", "/v1/limits", nil, &d.Limits); err != nil {
		d.LimitsError = apierr.From(err).Message
	}
	if q.person == nil {
		return c.show(q, http.StatusOK, "overview", "Overview", "overview", d)
	}
	// A person's own keys in this team, the team's use of the last 7 days
	// by model, and what waits for their approval: each read through the
	// API as the session, so a role that may not read one says so.
	var keys list[httpapi.APIKey]
	if err := c.call(q, "GET", "/v1/keys?team_id="+url.QueryEscape(q.key.TeamID), nil, &keys); err != nil {
		d.KeysError = apierr.From(err).Message
	}
	for _, k := range keys.Data {
		if k.OwnerUserID == q.key.OwnerUserID {
			d.Keys = append(d.Keys, k)
		}
	}
	since := time.Now().Add(-7 * 24 * time.Hour).Unix()
	var usage struct {
		Data []records.UsageRow `json:"data"`
	}
	if err := c.call(q, "GET", "/v1/usage?group_by=model&since="+strconv.FormatInt(since, 10), nil, &usage); err != nil {
		d.UsageError = apierr.From(err).Message
	}
	d.Usage = usage.Data
	var approvals list[map[string]any]
	if err := c.call(q, "GET", "/v1/approvals?status=pending", nil, &approvals); err != nil {
		d.ApprovalsError = apierr.From(err).Message
	}
	d.Approvals = approvals.Data
	return c.show(q, http.StatusOK, "overview", "Overview", "overview", d)
}

type overviewData struct {
	Limits      map[string]any
	LimitsError string
	// A person's: their keys in the team, its use, their pending
	// approvals (each with the API's refusal, if any).
	Keys                                  []httpapi.APIKey
	Usage                                 []records.UsageRow
	Approvals                             []map[string]any
	KeysError, UsageError, ApprovalsError string
}

// ---------------------------------------------------------------- keys

type keysData struct {
	Keys      []httpapi.APIKey
	Teams     []httpapi.Team
	TeamNames map[string]string
	Team      string
	Created   *httpapi.APIKey
	Rotated   bool
	CanAdmin  bool
	TeamError string
}

type list[T any] struct {
	Data []T `json:"data"`
}

func (c *Console) keysData(q *req) (keysData, error) {
	d := keysData{CanAdmin: auth.HasScope(q.key, auth.ScopeAdmin), Team: q.r.URL.Query().Get("team_id"), TeamNames: map[string]string{}}
	path := "/v1/keys"
	if d.Team != "" {
		path += "?team_id=" + url.QueryEscape(d.Team)
	}
	var keys list[httpapi.APIKey]
	if err := c.call(q, "GET", path, nil, &keys); err != nil {
		return d, err
	}
	d.Keys = keys.Data
	slices.Reverse(d.Keys) // newest first
	if d.CanAdmin {
		var teams list[httpapi.Team]
		if err := c.call(q, "GET", "/v1/teams", nil, &teams); err != nil {
			d.TeamError = apierr.From(err).Message
		}
		d.Teams = teams.Data
		for _, t := range d.Teams {
			d.TeamNames[t.ID] = t.Name
		}
	}
	return d, nil
}

func keysPage(c *Console, q *req) error {
	d, err := c.keysData(q)
	if err != nil {
		return err
	}
	return c.show(q, http.StatusOK, "keys", "API keys", "keys", d)
}

// createKey creates a key and shows its secret once, on the page that
// answers the post (it is never put in a URL or stored).
func createKey(c *Console, q *req) error {
	f := q.r.PostForm
	body := map[string]any{"name": strings.TrimSpace(f.Get("name")), "scopes": f["scopes"]}
	if t := f.Get("team_id"); t != "" {
		body["team_id"] = t
	}
	if d := strings.TrimSpace(f.Get("expires_in_days")); d != "" {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n <= 0 {
			return apierr.Invalid("expires_in_days", "Expiry must be a positive number of days.")
		}
		body["expires_in"] = n * 86400
	}
	if f["scopes"] == nil {
		body["scopes"] = []string{}
	}
	var k httpapi.APIKey
	if err := c.call(q, "POST", "/v1/keys", body, &k); err != nil {
		return err
	}
	return c.showSecret(q, k, false)
}

func (c *Console) showSecret(q *req, k httpapi.APIKey, rotated bool) error {
	d, err := c.keysData(q)
	if err != nil {
		return err
	}
	d.Created, d.Rotated = &k, rotated
	return c.show(q, http.StatusCreated, "keys", "API keys", "keys", d)
}

func revokeKey(c *Console, q *req) error {
	id := q.r.PathValue("id")
	if err := c.call(q, "DELETE", "/v1/keys/"+url.PathEscape(id), nil, nil); err != nil {
		return err
	}
	// Its console sessions end now (any other request would end them too).
	if _, err := c.cfg.Sessions.Store.DeleteConsoleSessionsOfKey(q.r.Context(), id); err != nil {
		c.cfg.Log.Warn("console: ending the sessions of a revoked key", "key", id, "err", err)
	}
	return redirect(q, Prefix+"/keys", "Key "+id+" revoked.")
}

func rotateKey(c *Console, q *req) error {
	id := q.r.PathValue("id")
	body := map[string]any{}
	if g := strings.TrimSpace(q.r.PostFormValue("grace_hours")); g != "" {
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil || n <= 0 {
			// (The API reads a zero grace as its 24 h default.)
			return apierr.Invalid("grace_hours", "The grace period is a positive whole number of hours.")
		}
		body["grace_seconds"] = n * 3600
	}
	var k httpapi.APIKey
	if err := c.call(q, "POST", "/v1/keys/"+url.PathEscape(id)+"/rotate", body, &k); err != nil {
		return err
	}
	return c.showSecret(q, k, true)
}

func createTeam(c *Console, q *req) error {
	var t httpapi.Team
	if err := c.call(q, "POST", "/v1/teams", map[string]any{"name": strings.TrimSpace(q.r.PostFormValue("name"))}, &t); err != nil {
		return err
	}
	return redirect(q, Prefix+"/keys", "Team "+t.Name+" created ("+t.ID+").")
}

// ---------------------------------------------------------------- models

// model is the part of the API's model object the pages show.
type model struct {
	ID            string         `json:"id"`
	OwnedBy       string         `json:"owned_by"`
	Backend       string         `json:"backend"`
	Source        string         `json:"source"`
	Family        string         `json:"family"`
	Capabilities  []string       `json:"capabilities"`
	Tags          []string       `json:"tags"`
	ContextLength uint64         `json:"context_length"`
	Parameters    uint64         `json:"parameters"`
	Quantization  string         `json:"quantization"`
	Size          int64          `json:"size"`
	Status        string         `json:"status"`
	StatusReason  string         `json:"status_reason"`
	Aliases       []string       `json:"aliases"`
	Limits        map[string]any `json:"limits"`
	Stats         map[string]any `json:"stats"`
	Deprecation   map[string]any `json:"deprecation"`
}

func (c *Console) models(q *req) ([]model, error) {
	var ms list[model]
	err := c.call(q, "GET", "/v1/models", nil, &ms)
	return ms.Data, err
}

type modelsData struct {
	Models               []model
	Capability, Status   string
	Capabilities, States []string
	Total                int
}

func modelsPage(c *Console, q *req) error {
	all, err := c.models(q)
	if err != nil {
		return err
	}
	d := modelsData{Capability: q.r.URL.Query().Get("capability"), Status: q.r.URL.Query().Get("status"), Total: len(all)}
	caps, states := map[string]bool{}, map[string]bool{}
	for _, m := range all {
		for _, cp := range m.Capabilities {
			caps[cp] = true
		}
		states[m.Status] = true
		if (d.Capability == "" || slices.Contains(m.Capabilities, d.Capability)) && (d.Status == "" || m.Status == d.Status) {
			d.Models = append(d.Models, m)
		}
	}
	for k := range caps {
		d.Capabilities = append(d.Capabilities, k)
	}
	for k := range states {
		d.States = append(d.States, k)
	}
	slices.Sort(d.Capabilities)
	slices.Sort(d.States)
	return c.show(q, http.StatusOK, "models", "Models", "models", d)
}

func modelPage(c *Console, q *req) error {
	var m model
	if err := c.call(q, "GET", "/v1/models/"+url.PathEscape(q.r.PathValue("id")), nil, &m); err != nil {
		return err
	}
	return c.show(q, http.StatusOK, "model", m.ID, "models", m)
}

func modelAction(c *Console, q *req) error {
	id, action := q.r.PathValue("id"), q.r.PathValue("action")
	if action != "load" && action != "unload" {
		return apierr.New(apierr.NotFound, "no model action "+action)
	}
	if err := c.call(q, "POST", "/v1/models/"+url.PathEscape(id)+"/"+action, map[string]any{}, nil); err != nil {
		return err
	}
	verb := map[string]string{"load": "loading", "unload": "unloaded"}[action]
	return redirect(q, Prefix+"/models/"+url.PathEscape(id), fmt.Sprintf("Model %s %s.", id, verb))
}

// ---------------------------------------------------------------- compare

type compareResult struct {
	Model  string `json:"model"`
	Status string `json:"status"`
	Output *struct {
		Content      string `json:"content"`
		FinishReason string `json:"finish_reason"`
	} `json:"output"`
	Usage           map[string]any   `json:"usage"`
	LatencyMs       float64          `json:"latency_ms"`
	TTFTMs          *float64         `json:"ttft_ms"`
	TokensPerSecond *float64         `json:"tokens_per_second"`
	Error           *apierr.Envelope `json:"error"`
}

type compareData struct {
	Models []model
	// Columns is the model chosen in each column ("" for none).
	Columns   []string
	Prompt    string
	MaxTokens int
	Results   []compareResult
}

func comparePage(c *Console, q *req) error {
	all, err := c.models(q)
	if err != nil {
		return err
	}
	d := compareData{Models: chatModels(all), MaxTokens: 32}
	d.Columns = defaultColumns(d.Models)
	return c.show(q, http.StatusOK, "compare", "Compare models", "compare", d)
}

// defaultColumns fills the first two columns with the first two chat
// models (the one model twice when there is one) and leaves two empty.
func defaultColumns(ms []model) []string {
	cols := make([]string, 4)
	for i := 0; i < 2 && len(ms) > 0; i++ {
		cols[i] = ms[min(i, len(ms)-1)].ID
	}
	return cols
}

func chatModels(all []model) []model {
	var out []model
	for _, m := range all {
		if slices.Contains(m.Capabilities, "chat") {
			out = append(out, m)
		}
	}
	return out
}

func compare(c *Console, q *req) error {
	all, err := c.models(q)
	if err != nil {
		return err
	}
	f := q.r.PostForm
	d := compareData{Models: chatModels(all), Prompt: f.Get("prompt"), MaxTokens: 32}
	var chosen []string
	for _, m := range f["models"] {
		if m != "" {
			chosen = append(chosen, m)
		}
	}
	d.Columns = append(append([]string{}, f["models"]...), make([]string, 4)...)[:4]
	if n, err := strconv.Atoi(f.Get("max_tokens")); err == nil && n > 0 {
		d.MaxTokens = n
	}
	var res struct {
		Results []compareResult `json:"results"`
	}
	body := map[string]any{"models": chosen, "messages": []map[string]string{{"role": "user", "content": d.Prompt}},
		"max_tokens": d.MaxTokens, "temperature": 0}
	if err := c.call(q, "POST", "/v1/models/compare", body, &res); err != nil {
		p := q.page("Compare models", "compare", d)
		p.Error = apierr.From(err).Message
		c.render(q.w, apierr.From(err).Status(), "compare", p)
		return nil
	}
	d.Results = res.Results
	return c.show(q, http.StatusOK, "compare", "Compare models", "compare", d)
}

// ---------------------------------------------------------------- playground

func playground(c *Console, q *req) error {
	all, err := c.models(q)
	if err != nil {
		return err
	}
	// The collections to answer from (none when the key may not list them).
	var cols struct {
		Data []map[string]any `json:"data"`
	}
	_ = c.call(q, "GET", "/v1/collections?limit=100", nil, &cols)
	return c.show(q, http.StatusOK, "playground", "Playground", "playground", map[string]any{"Models": chatModels(all), "Collections": cols.Data})
}

// passThrough serves /console/api/<path> as the API's /v1/<path>, as the
// session's key, onto the live response (streams included): the JS
// modules' way to the API. Non-GET calls need the CSRF header (auth).
func passThrough(c *Console, q *req) error {
	rest := strings.TrimPrefix(q.r.URL.Path, Prefix+"/api/")
	r := q.r.Clone(q.r.Context())
	r.URL.Path = "/v1/" + rest
	r.URL.RawPath = ""
	r.RequestURI = r.URL.RequestURI()
	r.Header.Del(CSRFHeader)
	if err := c.cfg.API.ServeAs(q.w, r, q.sess.KeyID); err != nil {
		ae := apierr.From(err)
		writeAPIError(q.w, ae.Status(), string(ae.Code), ae.Message)
	}
	return nil
}

// ---------------------------------------------------------------- records

type logsData struct {
	Logs    []map[string]any
	Filter  map[string]string
	NextID  string
	HasMore bool
	// Names maps key ids to the keys' names.
	Names map[string]map[string]string
}

var logFilters = []string{"model", "key_id", "route", "status", "user", "since", "until", "after"}

func logsPage(c *Console, q *req) error {
	v := url.Values{}
	d := logsData{Filter: map[string]string{}}
	for _, f := range logFilters {
		val := strings.TrimSpace(q.r.URL.Query().Get(f))
		if val == "" {
			continue
		}
		if f == "since" || f == "until" {
			// The form's date inputs (YYYY-MM-DD, UTC) become Unix seconds.
			if t, err := time.Parse("2006-01-02", val); err == nil {
				if f == "until" {
					t = t.Add(24 * time.Hour)
				}
				v.Set(f, strconv.FormatInt(t.Unix(), 10))
				d.Filter[f] = val
				continue
			}
		}
		v.Set(f, val)
		d.Filter[f] = val
	}
	var res struct {
		Data    []map[string]any `json:"data"`
		HasMore bool             `json:"has_more"`
		LastID  *string          `json:"last_id"`
	}
	path := "/v1/logs"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	if err := c.call(q, "GET", path, nil, &res); err != nil {
		return err
	}
	d.Logs, d.HasMore = res.Data, res.HasMore
	d.Names = map[string]map[string]string{"key_id": c.names(q, "keys")}
	if res.LastID != nil {
		d.NextID = *res.LastID
	}
	return c.show(q, http.StatusOK, "logs", "Request logs", "logs", d)
}

func logPage(c *Console, q *req) error {
	var rec map[string]any
	id := q.r.PathValue("id")
	if err := c.call(q, "GET", "/v1/logs/"+url.PathEscape(id), nil, &rec); err != nil {
		return err
	}
	var proof map[string]any
	proofErr, verified := "", ""
	if err := c.call(q, "GET", "/v1/logs/"+url.PathEscape(id)+"/proof", nil, &proof); err != nil {
		proofErr = apierr.From(err).Message
	} else {
		verified = verifyProof(proof)
	}
	keys := make([]string, 0, len(rec))
	for k := range rec {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return c.show(q, http.StatusOK, "log", "Request "+id, "logs", map[string]any{"Record": rec, "Fields": keys, "Proof": proof, "ProofError": proofErr, "Verified": verified,
		"Decisions": c.requestDecisions(q, id)})
}

// verifyProof checks an inclusion proof as the API gave it (RFC 6962,
// records.VerifyInclusion): "ok" when it recomputes its root, else why
// not. The console checks what it shows rather than take it on trust.
func verifyProof(p map[string]any) string {
	b, err := json.Marshal(p)
	var in records.Inclusion
	if err == nil {
		err = json.Unmarshal(b, &in)
	}
	if err == nil {
		err = records.VerifyInclusion(in)
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// auditPage is the audit chain's status — the newest record's inclusion
// proof in the tree of every record stored now, checked here — above the
// stored checkpoints.
func auditPage(c *Console, q *req) error {
	d, err := c.table(q, checkpointsTable, checkpointsTable.api)
	if err != nil {
		return err
	}
	st := auditStatus{}
	var newest struct {
		Data []map[string]any `json:"data"`
	}
	if err := c.call(q, "GET", "/v1/logs?limit=1", nil, &newest); err != nil {
		st.Error = apierr.From(err).Message
	} else if len(newest.Data) > 0 {
		id, _ := newest.Data[0]["id"].(string)
		st.RecordID = id
		var proof map[string]any
		if err := c.call(q, "GET", "/v1/logs/"+url.PathEscape(id)+"/proof", nil, &proof); err != nil {
			st.Error = apierr.From(err).Message
		} else {
			st.Proof, st.Verified = proof, verifyProof(proof)
		}
	}
	d.Extra = st
	return c.show(q, http.StatusOK, "table", checkpointsTable.title, checkpointsTable.nav, d)
}

// auditStatus is what the audit page says of the chain.
type auditStatus struct {
	RecordID string
	Proof    map[string]any
	Verified string
	Error    string
}
