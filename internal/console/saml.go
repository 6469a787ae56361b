package console

import (
	"errors"
	"net/http"

	"github.com/sovereign-ai/sovereign/internal/console/session"
	"github.com/sovereign-ai/sovereign/internal/samlsso"
)

// samlCookie carries a SAML sign-in's request id from its start to the
// assertion consumer service. The provider's answer is a cross-site POST,
// which a SameSite=Lax cookie does not follow: under TLS the cookie is
// SameSite=None (with Secure); over plain HTTP (loopback) Lax, which works
// where provider and console share a site.
const samlCookie = "sovereign_saml"

const samlPath = Prefix + "/saml/"

func (c *Console) samlProvider(name string) *samlsso.Provider {
	for _, p := range c.cfg.SAMLProviders {
		if p.Config.Name == name {
			return p
		}
	}
	return nil
}

func base(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (c *Console) samlNotFound(w http.ResponseWriter, r *http.Request) {
	c.render(w, http.StatusNotFound, "error", page{Title: "Not found", Error: "There is no SAML sign-in provider called " + r.PathValue("name") + "."})
}

// samlStart is GET /console/saml/{name}: off to the identity provider.
func (c *Console) samlStart(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	p := c.samlProvider(r.PathValue("name"))
	if p == nil {
		c.samlNotFound(w, r)
		return
	}
	to, pd, err := p.Start(r.Context(), base(r), safeNext(r.URL.Query().Get("next")))
	if err != nil {
		c.cfg.Log.Error("console: SAML sign-in", "provider", p.Config.Name, "err", err)
		c.signinForm(w, r, http.StatusBadGateway, "The sign-in provider "+p.Config.DisplayName+" cannot be reached; try again, or ask an administrator.")
		return
	}
	setPending(w, r, samlCookie, samlPath, pd, http.SameSiteNoneMode)
	http.Redirect(w, r, to, http.StatusFound)
}

// samlACS is POST /console/saml/{name}/acs: the provider's response.
func (c *Console) samlACS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	p := c.samlProvider(r.PathValue("name"))
	if p == nil {
		c.samlNotFound(w, r)
		return
	}
	var pd samlsso.Pending
	takePending(w, r, samlCookie, samlPath, &pd)
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	// crewjam/saml reads the response from the parsed form.
	if err := r.ParseForm(); err != nil {
		c.signinForm(w, r, http.StatusBadRequest, "The sign-in provider's answer could not be read; start again.")
		return
	}
	id, err := p.Finish(r, base(r), pd)
	if errors.Is(err, samlsso.ErrResponse) {
		c.cfg.Log.Warn("console: SAML response refused", "provider", p.Config.Name, "err", err)
		c.signinForm(w, r, http.StatusBadRequest, "The sign-in provider's answer is not valid for a sign-in started here; start again.")
		return
	}
	if err != nil {
		c.cfg.Log.Error("console: SAML sign-in", "provider", p.Config.Name, "err", err)
		c.signinForm(w, r, http.StatusBadGateway, "Signing in with "+p.Config.DisplayName+" failed; try again, or ask an administrator.")
		return
	}
	c.finishExternal(w, r, id, p.Config.DisplayName, session.Options{SSO: "saml:" + p.Config.Name, Within: p.Config.SessionRefresh}, pd.Next)
}

// samlMetadata is GET /console/saml/{name}/metadata: the service
// provider's metadata, to register the console at the provider.
func (c *Console) samlMetadata(w http.ResponseWriter, r *http.Request) {
	p := c.samlProvider(r.PathValue("name"))
	if p == nil {
		c.samlNotFound(w, r)
		return
	}
	b, err := p.Metadata(r.Context(), base(r))
	if err != nil {
		c.cfg.Log.Error("console: SAML metadata", "provider", p.Config.Name, "err", err)
		http.Error(w, "The identity provider's metadata cannot be read; see the server's log.", http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/samlmetadata+xml")
	_, _ = w.Write(b)
}
