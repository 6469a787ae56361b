package console

import (
	"errors"
	"html/template"
	"net/http"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/console/session"
)

// codeCookie carries a password sign-in waiting for its one-time code.
const codeCookie = "sovereign_console_code"

type codeData struct{ Next string }

// codeForm asks for the one-time code of a password sign-in.
func (c *Console) codeForm(w http.ResponseWriter, r *http.Request, status int, msg, next string) {
	w.Header().Set("Cache-Control", "no-store")
	tok, ok := c.preToken(w, r)
	if !ok {
		return
	}
	c.render(w, status, "code", page{Title: "Sign in: code", CSRF: tok, Error: msg, Data: codeData{Next: safeNext(next)}})
}

// signinCode is POST /console/signin/code: the second step.
func (c *Console) signinCode(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !c.preCSRF(w, r) {
		return
	}
	ck, _ := r.Cookie(codeCookie)
	if ck == nil || !c.attempts.allow(clientIP(r), time.Now()) {
		c.signinForm(w, r, http.StatusUnauthorized, "Sign in again: the code was not asked for here, or too many tries.")
		return
	}
	u, err := c.cfg.Users.FinishSecondStep(r.Context(), ck.Value, r.PostFormValue("code"))
	switch {
	case errors.Is(err, auth.ErrCode):
		c.codeForm(w, r, http.StatusUnauthorized, auth.ErrCode.Message, r.PostFormValue("next"))
		return
	case errors.Is(err, auth.ErrSignIn):
		c.signinForm(w, r, http.StatusUnauthorized, "This sign-in took too long or had too many tries; sign in again.")
		return
	case err != nil:
		c.signinFailed(w, r, err, "sign you in")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: codeCookie, Value: "", Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	if err := c.startSession(w, r, u, "", session.Options{}); err != nil {
		if errors.Is(err, errNoTeam) {
			c.signinForm(w, r, http.StatusForbidden, "Your account is not a member of any team yet; ask an administrator to add you to one.")
			return
		}
		c.cfg.Log.Error("console: sign-in", "err", err)
		c.signinForm(w, r, http.StatusInternalServerError, "The server could not sign you in; try again.")
		return
	}
	c.cfg.Log.Info("console: signed in", "user", u.ID, "second_step", "totp", "client_ip", clientIP(r))
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

type securityData struct {
	On, Pending bool
	Secret, URI string
	// Link is URI as a link: otpauth: is not one of the schemes
	// html/template lets through by itself; this one is the server's own
	// (url.Values-encoded), never a person's input.
	Link template.URL
}

// securityPage is GET /console/security: a person's two-step sign-in.
func securityPage(c *Console, q *req) error {
	if q.key.OwnerUserID == "" {
		return errors.New("console: a key's session has no account to secure")
	}
	u, err := c.cfg.Users.GetUser(q.r.Context(), q.key.OwnerUserID)
	if err != nil {
		return err
	}
	return c.show(q, http.StatusOK, "security", "Security", "", securityData{On: u.TOTPSecret != ""})
}

// securityAction is POST /console/security: start, confirm or turn off
// two-step sign-in.
func securityAction(c *Console, q *req) error {
	if q.key.OwnerUserID == "" {
		return errors.New("console: a key's session has no account to secure")
	}
	ctx, id := q.r.Context(), q.key.OwnerUserID
	switch q.r.PostFormValue("action") {
	case "start":
		secret, uri, err := c.cfg.Users.StartTOTP(ctx, id)
		if err != nil {
			return err
		}
		return c.show(q, http.StatusOK, "security", "Security", "", securityData{Pending: true, Secret: secret, URI: uri, Link: template.URL(uri)})
	case "confirm":
		if err := c.cfg.Users.ConfirmTOTP(ctx, id, q.r.PostFormValue("code")); err != nil {
			if errors.Is(err, auth.ErrCode) {
				c.render(q.w, http.StatusBadRequest, "security", withError(q.page("Security", "", securityData{}), "That code does not match; start again and type the code your app shows."))
				return nil
			}
			return err
		}
		http.Redirect(q.w, q.r, Prefix+"/security?notice=Two-step+sign-in+is+on.", http.StatusSeeOther)
	case "off":
		u, err := c.cfg.Users.GetUser(ctx, id)
		if err != nil {
			return err
		}
		if err := c.cfg.Users.CheckTOTP(ctx, u, q.r.PostFormValue("code")); err != nil {
			if errors.Is(err, auth.ErrCode) {
				c.render(q.w, http.StatusBadRequest, "security", withError(q.page("Security", "", securityData{On: true}), auth.ErrCode.Message))
				return nil
			}
			return err
		}
		if err := c.cfg.Users.DisableTOTP(ctx, id); err != nil {
			return err
		}
		http.Redirect(q.w, q.r, Prefix+"/security?notice=Two-step+sign-in+is+off.", http.StatusSeeOther)
	default:
		http.Redirect(q.w, q.r, Prefix+"/security", http.StatusSeeOther)
	}
	return nil
}

func withError(p page, msg string) page {
	p.Error = msg
	return p
}
