package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/httpapi/wire"
)

// UserAdmin manages users and their memberships (*auth.Service).
type UserAdmin interface {
	CreateUser(ctx context.Context, p auth.CreateUserParams) (auth.User, error)
	GetUser(ctx context.Context, id string) (auth.User, error)
	ListUsers(ctx context.Context, teamID string) ([]auth.User, error)
	UpdateUser(ctx context.Context, id string, p auth.UpdateUserParams) (auth.User, error)
	Memberships(ctx context.Context, userID string) ([]auth.Membership, error)
	TeamMembers(ctx context.Context, teamID string) ([]auth.Membership, error)
	SetMembership(ctx context.Context, userID, teamID string, role auth.Role, source string) (auth.Membership, error)
	RemoveMembership(ctx context.Context, userID, teamID string) error
	Invite(ctx context.Context, by auth.Key, email, teamID string, role auth.Role, life time.Duration) (auth.Invitation, string, error)
	ListInvitations(ctx context.Context, teamID string) ([]auth.Invitation, error)
	RevokeInvitation(ctx context.Context, id string) error
	DisableTOTP(ctx context.Context, id string) error
}

// User is the API's user object. The password's hash never leaves the
// server; has_password says whether there is one.
type User struct {
	ID            string       `json:"id"`
	Object        string       `json:"object"`
	Email         string       `json:"email"`
	Name          string       `json:"name"`
	Active        bool         `json:"active"`
	InstanceAdmin bool         `json:"instance_admin"`
	HasPassword   bool         `json:"has_password"`
	TwoStep       bool         `json:"two_step"`
	Locked        bool         `json:"locked"`
	CreatedAt     int64        `json:"created_at"`
	LastLoginAt   *int64       `json:"last_login_at"`
	Memberships   []Membership `json:"memberships"`
}

// Membership is a user's role in a team.
type Membership struct {
	Object    string `json:"object"`
	UserID    string `json:"user_id"`
	TeamID    string `json:"team_id"`
	Role      string `json:"role"`
	Source    string `json:"source"`
	CreatedAt int64  `json:"created_at"`
}

func membershipObject(m auth.Membership) Membership {
	return Membership{Object: "team.membership", UserID: m.UserID, TeamID: m.TeamID, Role: string(m.Role), Source: m.Source, CreatedAt: m.CreatedAt.Unix()}
}

func (s *Server) userObject(ctx context.Context, u auth.User) (User, error) {
	ms, err := s.Keys.Memberships(ctx, u.ID)
	if err != nil {
		return User{}, err
	}
	out := User{ID: u.ID, Object: "user", Email: u.Email, Name: u.Name, Active: u.Active, InstanceAdmin: u.InstanceAdmin,
		HasPassword: u.PasswordHash != "", TwoStep: u.TOTPSecret != "", Locked: u.LockedUntil != nil && time.Now().Before(*u.LockedUntil),
		CreatedAt: u.CreatedAt.Unix(), LastLoginAt: unix(u.LastLoginAt), Memberships: make([]Membership, len(ms))}
	for i, m := range ms {
		out.Memberships[i] = membershipObject(m)
	}
	return out, nil
}

// writeUser answers with user u's object.
func (s *Server) writeUser(w http.ResponseWriter, r *http.Request, status int, u auth.User) error {
	obj, err := s.userObject(r.Context(), u)
	if err != nil {
		return err
	}
	return wire.JSON(w, status, obj)
}

type membershipRequest struct {
	TeamID string `json:"team_id"`
	Role   string `json:"role"`
}

// createUser is POST /v1/users (admin).
func (s *Server) createUser(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Email         string              `json:"email"`
		Name          string              `json:"name"`
		Password      string              `json:"password"`
		InstanceAdmin bool                `json:"instance_admin"`
		Memberships   []membershipRequest `json:"memberships"`
	}
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	p := auth.CreateUserParams{Email: req.Email, Name: req.Name, Password: req.Password, InstanceAdmin: req.InstanceAdmin}
	for i, m := range req.Memberships {
		role, err := auth.ParseRole(fmt.Sprintf("memberships[%d].role", i), m.Role)
		if err != nil {
			return err
		}
		p.Memberships = append(p.Memberships, auth.Membership{TeamID: m.TeamID, Role: role})
	}
	u, err := s.Keys.CreateUser(r.Context(), p)
	if err != nil {
		return err
	}
	return s.writeUser(w, r, http.StatusCreated, u)
}

// listUsers is GET /v1/users[?team_id=] (admin).
func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) error {
	us, err := s.Keys.ListUsers(r.Context(), r.URL.Query().Get("team_id"))
	if err != nil {
		return err
	}
	data := make([]User, len(us))
	for i, u := range us {
		if data[i], err = s.userObject(r.Context(), u); err != nil {
			return err
		}
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// getUser is GET /v1/users/{id} (admin).
func (s *Server) getUser(w http.ResponseWriter, r *http.Request) error {
	u, err := s.Keys.GetUser(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.writeUser(w, r, http.StatusOK, u)
}

// updateUser is POST /v1/users/{id} (admin): name, active,
// instance_admin, password ("" removes it).
func (s *Server) updateUser(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Name          *string `json:"name"`
		Active        *bool   `json:"active"`
		InstanceAdmin *bool   `json:"instance_admin"`
		Password      *string `json:"password"`
		// TwoStep false turns the user's two-step sign-in off (a lost
		// phone); only they can turn it on.
		TwoStep *bool `json:"two_step"`
	}
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	id := r.PathValue("id")
	if req.TwoStep != nil {
		if *req.TwoStep {
			return apierr.Invalid("two_step", "only the user can turn two-step sign-in on (console, Security); false turns it off")
		}
		if err := s.Keys.DisableTOTP(r.Context(), id); err != nil {
			return err
		}
	}
	if caller, _ := KeyFrom(r.Context()); caller.OwnerUserID == id && ((req.Active != nil && !*req.Active) || (req.InstanceAdmin != nil && !*req.InstanceAdmin)) {
		// The last way back in must not be closed by accident.
		return apierr.Invalid("active", "you cannot deactivate yourself or give up your own administration")
	}
	u, err := s.Keys.UpdateUser(r.Context(), id, auth.UpdateUserParams{Name: req.Name, Active: req.Active, InstanceAdmin: req.InstanceAdmin, Password: req.Password})
	if err != nil {
		return err
	}
	return s.writeUser(w, r, http.StatusOK, u)
}

// listMembers is GET /v1/teams/{id}/members (admin).
func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.Keys.GetTeam(r.Context(), id); err != nil {
		return err
	}
	ms, err := s.Keys.TeamMembers(r.Context(), id)
	if err != nil {
		return err
	}
	data := make([]Membership, len(ms))
	for i, m := range ms {
		data[i] = membershipObject(m)
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// putMember is PUT /v1/teams/{id}/members/{user_id} (admin): {"role"}.
func (s *Server) putMember(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Role string `json:"role"`
	}
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	role, err := auth.ParseRole("role", req.Role)
	if err != nil {
		return err
	}
	m, err := s.Keys.SetMembership(r.Context(), r.PathValue("user_id"), r.PathValue("id"), role, "api")
	if err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, membershipObject(m))
}

// deleteMember is DELETE /v1/teams/{id}/members/{user_id} (admin).
func (s *Server) deleteMember(w http.ResponseWriter, r *http.Request) error {
	if err := s.Keys.RemoveMembership(r.Context(), r.PathValue("user_id"), r.PathValue("id")); err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "team.membership.deleted", "user_id": r.PathValue("user_id"), "team_id": r.PathValue("id"), "deleted": true})
}

// me is GET /v1/me (any key): the key the request was made with, and the
// user who owns it with their teams (null for a service account's key).
func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	k, _ := KeyFrom(r.Context())
	out := map[string]any{"object": "me", "key": keyObject(k, ""), "user": nil}
	scopes := []string{}
	for _, sc := range auth.ValidScopes {
		if auth.HasScope(k, sc) {
			scopes = append(scopes, string(sc))
		}
	}
	out["effective_scopes"] = scopes
	if k.OwnerUserID != "" {
		u, err := s.Keys.GetUser(r.Context(), k.OwnerUserID)
		if err != nil {
			return err
		}
		obj, err := s.userObject(r.Context(), u)
		if err != nil {
			return err
		}
		out["user"] = obj
	}
	return wire.JSON(w, http.StatusOK, out)
}

// Invitation is the API's invitation object; URL (the link, with its
// token) only in the answer that makes it.
type Invitation struct {
	ID         string `json:"id"`
	Object     string `json:"object"`
	Email      string `json:"email"`
	TeamID     string `json:"team_id"`
	Role       string `json:"role"`
	CreatedAt  int64  `json:"created_at"`
	ExpiresAt  int64  `json:"expires_at"`
	AcceptedAt *int64 `json:"accepted_at"`
	UserID     string `json:"user_id,omitempty"`
	URL        string `json:"url,omitempty"`
}

func invitationObject(inv auth.Invitation) Invitation {
	return Invitation{ID: inv.ID, Object: "invitation", Email: inv.Email, TeamID: inv.TeamID, Role: string(inv.Role),
		CreatedAt: inv.CreatedAt.Unix(), ExpiresAt: inv.ExpiresAt.Unix(), AcceptedAt: unix(inv.AcceptedAt), UserID: inv.UserID}
}

// createInvitation is POST /v1/invitations (admin): {email, team_id,
// role, expires_in}. The answer's url is the link to send (shown once).
func (s *Server) createInvitation(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Email     string `json:"email"`
		TeamID    string `json:"team_id"`
		Role      string `json:"role"`
		ExpiresIn int64  `json:"expires_in"`
	}
	if err := wire.DecodeStrict(r.Body, &req); err != nil {
		return err
	}
	role, err := auth.ParseRole("role", req.Role)
	if err != nil {
		return err
	}
	if req.ExpiresIn < 0 {
		return apierr.Invalid("expires_in", "'expires_in' must be a positive number of seconds")
	}
	caller, _ := KeyFrom(r.Context())
	if req.TeamID == "" {
		req.TeamID = caller.TeamID
	}
	inv, token, err := s.Keys.Invite(r.Context(), caller, req.Email, req.TeamID, role, time.Duration(req.ExpiresIn)*time.Second)
	if err != nil {
		return err
	}
	obj := invitationObject(inv)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	obj.URL = scheme + "://" + r.Host + "/console/invite/" + token
	return wire.JSON(w, http.StatusCreated, obj)
}

// listInvitations is GET /v1/invitations[?team_id=] (admin).
func (s *Server) listInvitations(w http.ResponseWriter, r *http.Request) error {
	invs, err := s.Keys.ListInvitations(r.Context(), r.URL.Query().Get("team_id"))
	if err != nil {
		return err
	}
	data := make([]Invitation, len(invs))
	for i, inv := range invs {
		data[i] = invitationObject(inv)
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// deleteInvitation is DELETE /v1/invitations/{id} (admin).
func (s *Server) deleteInvitation(w http.ResponseWriter, r *http.Request) error {
	if err := s.Keys.RevokeInvitation(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return wire.JSON(w, http.StatusOK, map[string]any{"object": "invitation.deleted", "id": r.PathValue("id"), "deleted": true})
}
