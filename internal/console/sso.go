package console

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/console/session"
	"github.com/sovereign-ai/sovereign/internal/oidc"
)

// ssoCookie carries a sign-in's state, nonce and PKCE verifier from its
// start to the provider's callback. It holds nothing secret beyond this
// one sign-in (all three are fresh random values, checked against the
// provider's answer), so it needs no server-side row; SameSite=Lax,
// because the callback is a top-level navigation from the provider's
// site.
const ssoCookie = "sovereign_sso"

const ssoPath = Prefix + "/sso/"

func (c *Console) provider(name string) *oidc.Provider {
	for _, p := range c.cfg.Providers {
		if p.Config.Name == name {
			return p
		}
	}
	return nil
}

// redirectURL is a provider's callback: configured, or this console's own
// URL as the browser reached it (the provider refuses one it does not have
// registered, so a forged Host header leads nowhere).
func redirectURL(r *http.Request, p *oidc.Provider) string {
	if p.Config.RedirectURL != "" {
		return p.Config.RedirectURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + ssoPath + p.Config.Name + "/callback"
}

// ssoStart is GET /console/sso/{name}: off to the provider.
func (c *Console) ssoStart(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	p := c.provider(r.PathValue("name"))
	if p == nil {
		c.render(w, http.StatusNotFound, "error", page{Title: "Not found", Error: "There is no single sign-on provider called " + r.PathValue("name") + "."})
		return
	}
	to, pd, err := p.Start(r.Context(), redirectURL(r, p), safeNext(r.URL.Query().Get("next")))
	if err != nil {
		c.cfg.Log.Error("console: single sign-on", "provider", p.Config.Name, "err", err)
		c.signinForm(w, r, http.StatusBadGateway, "The sign-in provider "+p.Config.DisplayName+" cannot be reached; try again, or ask an administrator.")
		return
	}
	setPending(w, r, ssoCookie, ssoPath, pd, http.SameSiteLaxMode)
	http.Redirect(w, r, to, http.StatusFound)
}

// ssoCallback is GET /console/sso/{name}/callback: the provider's answer.
func (c *Console) ssoCallback(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	p := c.provider(r.PathValue("name"))
	if p == nil {
		c.render(w, http.StatusNotFound, "error", page{Title: "Not found", Error: "There is no single sign-on provider called " + r.PathValue("name") + "."})
		return
	}
	var pd oidc.Pending
	takePending(w, r, ssoCookie, ssoPath, &pd)
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		c.cfg.Log.Info("console: single sign-on refused by the provider", "provider", p.Config.Name, "error", e, "description", q.Get("error_description"))
		c.signinForm(w, r, http.StatusUnauthorized, p.Config.DisplayName+" did not sign you in ("+e+").")
		return
	}
	res, err := p.Finish(r.Context(), redirectURL(r, p), q.Get("code"), q.Get("state"), pd)
	if errors.Is(err, oidc.ErrState) {
		c.signinForm(w, r, http.StatusBadRequest, "This sign-in was not started here, or took too long; start again.")
		return
	}
	if err != nil {
		c.cfg.Log.Error("console: single sign-on", "provider", p.Config.Name, "err", err)
		c.signinForm(w, r, http.StatusBadGateway, "Signing in with "+p.Config.DisplayName+" failed; try again, or ask an administrator.")
		return
	}
	c.finishExternal(w, r, res.Identity, p.Config.DisplayName, session.Options{SSO: p.Config.Name, IDToken: res.IDToken, Within: p.Config.SessionRefresh}, pd.Next)
}

// finishExternal signs in a person an identity provider (OpenID Connect
// or SAML) vouched for, and moves on to next.
func (c *Console) finishExternal(w http.ResponseWriter, r *http.Request, id auth.ExternalIdentity, provider string, o session.Options, next string) {
	u, err := c.cfg.Users.SignInExternal(r.Context(), id, c.cfg.GroupRules)
	if err == nil {
		err = c.startSession(w, r, u, "", o)
	}
	switch {
	case errors.Is(err, auth.ErrSignIn):
		c.signinForm(w, r, http.StatusForbidden, "Your account is deactivated; ask an administrator.")
		return
	case errors.Is(err, errNoTeam):
		c.signinForm(w, r, http.StatusForbidden, "You signed in as "+id.Email+", but none of your groups gives you a team here; ask an administrator.")
		return
	case err != nil:
		var ae *apierr.Error
		if errors.As(err, &ae) && ae.Status() == http.StatusBadRequest {
			c.signinForm(w, r, http.StatusForbidden, ae.Message)
			return
		}
		c.signinFailed(w, r, err, "sign you in")
		return
	}
	c.cfg.Log.Info("console: signed in", "user", u.ID, "provider", provider, "client_ip", clientIP(r))
	// A page that moves on by itself rather than a redirect: the session
	// cookie is SameSite=Strict, and a browser withholds it from the rest
	// of a redirect chain that a cross-site page (the provider's) began.
	c.render(w, http.StatusOK, "moving", page{Title: "Signed in", Data: safeNext(next)})
}

// ssoLogout is where sign-out sends a single sign-on session: the
// provider's end_session_endpoint, coming back to the sign-in page ("" to
// stay here).
func (c *Console) ssoLogout(r *http.Request, s session.Session) string {
	p := c.provider(s.SSO)
	if p == nil {
		return ""
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	after := scheme + "://" + r.Host + Prefix + "/signin?notice=" + url.QueryEscape("Signed out.")
	return p.LogoutURL(r.Context(), s.IDToken, after)
}

// setPending keeps v (a sign-in's state on its way to the provider and
// back) in a 10-minute cookie of path: nothing secret beyond this one
// sign-in, so no server-side row.
func setPending(w http.ResponseWriter, r *http.Request, name, path string, v any, site http.SameSite) {
	b, _ := json.Marshal(v)
	ck := &http.Cookie{Name: name, Value: base64.RawURLEncoding.EncodeToString(b), Path: path, HttpOnly: true,
		SameSite: site, Secure: r.TLS != nil, MaxAge: 600}
	if site == http.SameSiteNoneMode && r.TLS == nil {
		ck.SameSite = http.SameSiteLaxMode // None needs Secure
	}
	http.SetCookie(w, ck)
}

// takePending reads a pending cookie into v (left zero when absent or
// garbled) and clears it: a sign-in's state is used once.
func takePending(w http.ResponseWriter, r *http.Request, name, path string, v any) {
	if ck, err := r.Cookie(name); err == nil {
		if b, err := base64.RawURLEncoding.DecodeString(ck.Value); err == nil {
			_ = json.Unmarshal(b, v)
		}
	}
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: path, HttpOnly: true, Secure: r.TLS != nil, MaxAge: -1})
}
