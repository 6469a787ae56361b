package console

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/console/session"
)

// Users signs people in and reads who they are (*auth.Service).
type Users interface {
	SignIn(ctx context.Context, email, password string) (auth.User, error)
	SessionKey(ctx context.Context, userID, teamID string, until time.Time) (auth.Key, error)
	GetUser(ctx context.Context, id string) (auth.User, error)
	Memberships(ctx context.Context, userID string) ([]auth.Membership, error)
	ListTeams(ctx context.Context) ([]auth.Team, error)
	Revoke(ctx context.Context, id string) (auth.Key, error)
	SignInExternal(ctx context.Context, id auth.ExternalIdentity, rules []auth.GroupRule) (auth.User, error)
	BeginSecondStep(ctx context.Context, u auth.User) (string, error)
	FinishSecondStep(ctx context.Context, token, code string) (auth.User, error)
	StartTOTP(ctx context.Context, id string) (secret, uri string, err error)
	ConfirmTOTP(ctx context.Context, id, code string) error
	CheckTOTP(ctx context.Context, u auth.User, code string) error
	DisableTOTP(ctx context.Context, id string) error
}

// person is who a signed-in page shows in its header.
type person struct {
	Email, Name string
	// Team is the team the session acts in; Teams every team the person
	// may switch to (an instance administrator: every team).
	Team  teamChoice
	Teams []teamChoice
	Admin bool
}

type teamChoice struct {
	ID, Name string
	Role     auth.Role
}

// personOf reads the person behind a session's key (nil for a key's
// break-glass session).
func (c *Console) personOf(ctx context.Context, key auth.Key) (*person, error) {
	if key.OwnerUserID == "" || c.cfg.Users == nil {
		return nil, nil
	}
	u, err := c.cfg.Users.GetUser(ctx, key.OwnerUserID)
	if err != nil {
		return nil, err
	}
	teams, err := c.teamsOf(ctx, u)
	if err != nil {
		return nil, err
	}
	p := &person{Email: u.Email, Name: u.Name, Teams: teams, Admin: u.InstanceAdmin}
	for _, t := range teams {
		if t.ID == key.TeamID {
			p.Team = t
		}
	}
	return p, nil
}

// teamsOf lists the teams a user may act in, with their role: their
// memberships, and for an instance administrator every other team too
// (role "").
func (c *Console) teamsOf(ctx context.Context, u auth.User) ([]teamChoice, error) {
	ms, err := c.cfg.Users.Memberships(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	all, err := c.cfg.Users.ListTeams(ctx)
	if err != nil {
		return nil, err
	}
	role := map[string]auth.Role{}
	for _, m := range ms {
		role[m.TeamID] = m.Role
	}
	var out []teamChoice
	for _, t := range all {
		if r, ok := role[t.ID]; ok || u.InstanceAdmin {
			out = append(out, teamChoice{ID: t.ID, Name: t.Name, Role: r})
		}
	}
	return out, nil
}

// startSession signs user u in to team teamID ("" : their first team):
// a session key for the team, a session acting as it, the cookie.
func (c *Console) startSession(w http.ResponseWriter, r *http.Request, u auth.User, teamID string, o session.Options) error {
	teams, err := c.teamsOf(r.Context(), u)
	if err != nil {
		return err
	}
	if len(teams) == 0 {
		return errNoTeam
	}
	team := teams[0].ID
	for _, t := range teams {
		if t.ID == teamID {
			team = t.ID
		}
	}
	life := c.cfg.Sessions.MaxAgeOrDefault()
	if o.Within > 0 && o.Within < life {
		life = o.Within
	}
	k, err := c.cfg.Users.SessionKey(r.Context(), u.ID, team, time.Now().Add(life))
	if err != nil {
		return err
	}
	id, _, err := c.cfg.Sessions.CreateWith(r.Context(), k.ID, o)
	if err != nil {
		return err
	}
	c.clearCookie(w, r, preCookie)
	c.setCookie(w, r, CookieName, id, 0)
	return nil
}

var errNoTeam = errors.New("console: the user is in no team")

// passwordSignin is the e-mail and password form's side of POST
// /console/signin.
func (c *Console) passwordSignin(w http.ResponseWriter, r *http.Request) {
	ip := clientIP(r)
	if !c.attempts.allow(ip, time.Now()) {
		w.Header().Set("Retry-After", "60")
		c.signinForm(w, r, http.StatusTooManyRequests, "Too many sign-in attempts from this address; wait a minute and try again.")
		return
	}
	u, err := c.cfg.Users.SignIn(r.Context(), r.PostFormValue("email"), r.PostFormValue("password"))
	if errors.Is(err, auth.ErrSignIn) {
		c.cfg.Log.Info("console: password sign-in refused", "client_ip", ip)
		c.signinForm(w, r, http.StatusUnauthorized, "Incorrect e-mail address or password, or the account is locked or deactivated.")
		return
	}
	if err == nil && u.TOTPSecret != "" {
		// Two-step sign-in: the code next, on a page of its own.
		var token string
		if token, err = c.cfg.Users.BeginSecondStep(r.Context(), u); err == nil {
			http.SetCookie(w, &http.Cookie{Name: codeCookie, Value: token, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode,
				Secure: r.TLS != nil, MaxAge: int(auth.ChallengeLife.Seconds())})
			c.codeForm(w, r, http.StatusOK, "", r.PostFormValue("next"))
			return
		}
	}
	if err == nil {
		err = c.startSession(w, r, u, "", session.Options{})
	}
	if errors.Is(err, errNoTeam) {
		c.signinForm(w, r, http.StatusForbidden, "Your account is not a member of any team yet; ask an administrator to add you to one.")
		return
	}
	if err != nil {
		c.signinFailed(w, r, err, "sign you in")
		return
	}
	c.cfg.Log.Info("console: signed in", "user", u.ID, "client_ip", ip)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// switchTeam is POST /console/team: the same person, acting in another of
// their teams (a new session; the old one ends).
func switchTeam(c *Console, q *req) error {
	if q.key.OwnerUserID == "" {
		return errors.New("console: a key's session has no teams to switch to")
	}
	u, err := c.cfg.Users.GetUser(q.r.Context(), q.key.OwnerUserID)
	if err != nil {
		return err
	}
	// The new team's session keeps the old one's provider and end.
	o := session.Options{SSO: q.sess.SSO, IDToken: q.sess.IDToken}
	if !q.sess.EndsAt.IsZero() {
		o.Within = time.Until(q.sess.EndsAt)
	}
	if err := c.startSession(q.w, q.r, u, q.r.PostFormValue("team_id"), o); err != nil {
		return err
	}
	c.endSession(q)
	http.Redirect(q.w, q.r, Prefix+"/", http.StatusSeeOther)
	return nil
}

// endSession ends the request's session and revokes its session key.
func (c *Console) endSession(q *req) {
	if ck, _ := q.r.Cookie(CookieName); ck != nil {
		if err := c.cfg.Sessions.End(q.r.Context(), ck.Value); err != nil {
			c.cfg.Log.Warn("console: ending a session", "err", err)
		}
	}
	if q.key.Kind == auth.KindSession && c.cfg.Users != nil {
		if _, err := c.cfg.Users.Revoke(q.r.Context(), q.key.ID); err != nil {
			c.cfg.Log.Warn("console: revoking a session's key", "key", q.key.ID, "err", err)
		}
	}
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// attempts bounds password sign-ins per client address: perIP in each
// window, so that guessing across many accounts from one address is slow
// too (each account also locks after auth.LockAfter failures).
type attempts struct {
	mu   sync.Mutex
	seen map[string]window
}

type window struct {
	start time.Time
	n     int
}

const (
	signinWindow = time.Minute
	signinPerIP  = 10
	maxTracked   = 10000
)

func (a *attempts) allow(ip string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen == nil || len(a.seen) > maxTracked {
		a.seen = map[string]window{}
	}
	w := a.seen[ip]
	if now.Sub(w.start) >= signinWindow {
		w = window{start: now}
	}
	w.n++
	a.seen[ip] = w
	return w.n <= signinPerIP
}

// preToken starts a form shown before a session exists: a fresh
// double-submit token, in a 10-minute cookie and for the form's field.
func (c *Console) preToken(w http.ResponseWriter, r *http.Request) (string, bool) {
	tok, err := randomToken()
	if err != nil {
		http.Error(w, "no randomness", http.StatusInternalServerError)
		return "", false
	}
	c.setCookie(w, r, preCookie, tok, 600)
	return tok, true
}

// preCSRF checks a form posted before a session exists (sign-in, its code,
// an invitation): the double-submit token of the page's cookie, and the
// origin. It answers the refusal itself.
func (c *Console) preCSRF(w http.ResponseWriter, r *http.Request) bool {
	pre, _ := r.Cookie(preCookie)
	tok := r.PostFormValue(csrfField)
	if pre == nil || tok == "" || pre.Value != tok || !sameOrigin(r) {
		c.refuseCSRF(w, r)
		return false
	}
	return true
}

// signinFailed shows the sign-in page for a failure that is the server's:
// an outage as such (503), anything else logged and a 500 saying what
// could not be done.
func (c *Console) signinFailed(w http.ResponseWriter, r *http.Request, err error, what string) {
	if status, msg, ok := unavailable(w, err); ok {
		c.signinForm(w, r, status, msg)
		return
	}
	c.cfg.Log.Error("console: sign-in", "err", err)
	c.signinForm(w, r, http.StatusInternalServerError, "The server could not "+what+"; try again.")
}
