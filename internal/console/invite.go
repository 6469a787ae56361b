package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/console/session"
)

// Invitations turns invitation links into accounts (*auth.Service).
type Invitations interface {
	Invitation(ctx context.Context, token string) (auth.Invitation, error)
	AcceptInvitation(ctx context.Context, token, name, password string) (auth.User, error)
	GetTeam(ctx context.Context, id string) (auth.Team, error)
	UserByEmail(ctx context.Context, email string) (auth.User, error)
}

type inviteData struct {
	Token, Email, Team, Role string
	// Exists: the address has an account already (joining needs no
	// password); Passwords: password sign-in is on (else, single sign-on
	// after joining).
	Exists, Passwords bool
	Providers         []providerLink
}

// invitePage is GET /console/invite/{token}: what the link invites to,
// and the form to accept it.
func (c *Console) invitePage(w http.ResponseWriter, r *http.Request) {
	c.inviteForm(w, r, http.StatusOK, "")
}

func (c *Console) inviteForm(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	// The token is in the path: no Referer leaves the console with it.
	// (same-origin, not no-referrer: with no-referrer, browsers send
	// "Origin: null" on the form's POST, which the CSRF check refuses.)
	w.Header().Set("Referrer-Policy", "same-origin")
	token := r.PathValue("token")
	inv, err := c.cfg.Invites.Invitation(r.Context(), token)
	if err != nil {
		c.inviteError(w, err)
		return
	}
	team, err := c.cfg.Invites.GetTeam(r.Context(), inv.TeamID)
	if err != nil {
		c.inviteError(w, err)
		return
	}
	tok, ok := c.preToken(w, r)
	if !ok {
		return
	}
	d := inviteData{Token: token, Email: inv.Email, Team: team.Name, Role: string(inv.Role), Passwords: c.cfg.Passwords,
		Providers: c.signinData(r).Providers}
	if u, err := c.cfg.Invites.UserByEmail(r.Context(), inv.Email); err == nil && u.ID != "" {
		d.Exists = true
	}
	c.render(w, status, "invite", page{Title: "Join " + team.Name, CSRF: tok, Error: msg, Data: d})
}

func (c *Console) inviteError(w http.ResponseWriter, err error) {
	if errors.Is(err, auth.ErrInvitation) {
		c.render(w, http.StatusNotFound, "error", page{Title: "Invitation", Error: auth.ErrInvitation.Message})
		return
	}
	if status, msg, ok := unavailable(w, err); ok {
		c.render(w, status, "error", page{Title: "Unavailable", Error: msg})
		return
	}
	c.cfg.Log.Error("console: invitation", "err", err)
	c.render(w, http.StatusInternalServerError, "error", page{Title: "Error", Error: "The invitation could not be read; try again."})
}

// acceptInvite is POST /console/invite/{token}: the account made (or the
// existing one joined to the team), and signed in where it can be.
func (c *Console) acceptInvite(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !c.preCSRF(w, r) {
		return
	}
	token := r.PathValue("token")
	inv, err := c.cfg.Invites.Invitation(r.Context(), token)
	if err != nil {
		c.inviteError(w, err)
		return
	}
	existing, _ := c.cfg.Invites.UserByEmail(r.Context(), inv.Email)
	password := r.PostFormValue("password")
	if existing.ID == "" && c.cfg.Passwords && password != r.PostFormValue("password2") {
		c.inviteForm(w, r, http.StatusBadRequest, "The two passwords differ.")
		return
	}
	if !c.cfg.Passwords {
		// Single sign-on only: the account needs no password.
		password = ""
	}
	u, err := c.cfg.Invites.AcceptInvitation(r.Context(), token, r.PostFormValue("name"), password)
	var ae *apierr.Error
	if errors.As(err, &ae) && ae.Status() == http.StatusBadRequest {
		c.inviteForm(w, r, http.StatusBadRequest, ae.Message)
		return
	}
	if err != nil {
		c.inviteError(w, err)
		return
	}
	c.cfg.Log.Info("console: invitation accepted", "user", u.ID, "team", inv.TeamID, "role", inv.Role, "client_ip", clientIP(r))
	if existing.ID != "" || !c.cfg.Passwords {
		// Joined: they sign in as they always do.
		http.Redirect(w, r, Prefix+"/signin?notice="+url.QueryEscape("You joined the team; sign in to continue."), http.StatusSeeOther)
		return
	}
	if err := c.startSession(w, r, u, inv.TeamID, session.Options{}); err != nil {
		c.cfg.Log.Error("console: signing in after an invitation", "err", err)
		http.Redirect(w, r, Prefix+"/signin?notice="+url.QueryEscape("Your account is ready; sign in."), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}
