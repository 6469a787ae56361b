package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Invitation asks a person, by link, to join a team with a role. The
// link's token is shown once, when it is made; the store keeps its
// SHA-256 (TokenHash), like a key's.
type Invitation struct {
	ID         string // "inv_" + 22 base62 characters
	TokenHash  []byte
	Email      string
	TeamID     string
	Role       Role
	InvitedBy  string // the key that made it
	CreatedAt  time.Time
	ExpiresAt  time.Time
	AcceptedAt *time.Time
	UserID     string // who accepted it
}

// InvitationStore keeps invitations (internal/sqlstore).
type InvitationStore interface {
	CreateInvitation(ctx context.Context, inv Invitation) error
	// GetInvitationByToken returns the invitation whose token hashes to
	// hash (ErrNotFound).
	GetInvitationByToken(ctx context.Context, hash []byte) (Invitation, error)
	// ListInvitations returns the team's invitations, or every team's for
	// "", newest first.
	ListInvitations(ctx context.Context, teamID string) ([]Invitation, error)
	// AcceptInvitation marks an unused invitation used by userID at at;
	// ErrConflict when it was used meanwhile.
	AcceptInvitation(ctx context.Context, id, userID string, at time.Time) error
	DeleteInvitation(ctx context.Context, id string) error
}

// DefaultInvitationLife is how long an invitation's link works unless
// the inviter says otherwise; MaxInvitationLife bounds what they may say.
const (
	DefaultInvitationLife = 7 * 24 * time.Hour
	MaxInvitationLife     = 30 * 24 * time.Hour
)

// ErrInvitation is the one answer to a link that cannot be used (unknown,
// used, expired): the page must not tell a guesser which.
var ErrInvitation = apierr.New(apierr.NotFound, "This invitation link is not valid: it may have been used already or have expired. Ask for a new one.")

func (s *Service) invitations() InvitationStore {
	is, ok := s.Store.(InvitationStore)
	if !ok {
		panic("auth: the key store keeps no invitations")
	}
	return is
}

// Invite makes an invitation to team teamID with role for email, valid for
// life (0: DefaultInvitationLife), and returns it with its token (shown
// once). Errors: a 400 naming the field, ErrNotFound (no such team).
func (s *Service) Invite(ctx context.Context, by Key, email, teamID string, role Role, life time.Duration) (Invitation, string, error) {
	e, err := NormalizeEmail("email", email)
	if err != nil {
		return Invitation{}, "", err
	}
	if _, err := ParseRole("role", string(role)); err != nil {
		return Invitation{}, "", err
	}
	if life == 0 {
		life = DefaultInvitationLife
	}
	if life < time.Minute || life > MaxInvitationLife {
		return Invitation{}, "", apierr.Invalid("expires_in", fmt.Sprintf("an invitation lasts from a minute to %d days", int(MaxInvitationLife.Hours()/24)))
	}
	if _, err := s.Store.GetTeam(ctx, teamID); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Invitation{}, "", apierr.Invalid("team_id", fmt.Sprintf("no team with id %q", teamID))
		}
		return Invitation{}, "", err
	}
	token := "inv-" + randBase62(43)
	now := s.now()
	inv := Invitation{ID: "inv_" + randBase62(22), TokenHash: tokenHash(token), Email: e, TeamID: teamID, Role: role, InvitedBy: by.ID,
		CreatedAt: now, ExpiresAt: now.Add(life)}
	if err := s.invitations().CreateInvitation(ctx, inv); err != nil {
		return Invitation{}, "", err
	}
	return inv, token, nil
}

func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Invitation returns the usable invitation of a link's token. Errors:
// ErrInvitation.
func (s *Service) Invitation(ctx context.Context, token string) (Invitation, error) {
	if len(token) < 10 || len(token) > 100 {
		return Invitation{}, ErrInvitation
	}
	inv, err := s.invitations().GetInvitationByToken(ctx, tokenHash(token))
	if errors.Is(err, ErrNotFound) {
		return Invitation{}, ErrInvitation
	}
	if err != nil {
		return Invitation{}, err
	}
	if inv.AcceptedAt != nil || !s.now().Before(inv.ExpiresAt) {
		return Invitation{}, ErrInvitation
	}
	return inv, nil
}

// ListInvitations returns a team's invitations (every team's for "").
func (s *Service) ListInvitations(ctx context.Context, teamID string) ([]Invitation, error) {
	return s.invitations().ListInvitations(ctx, teamID)
}

// RevokeInvitation deletes an invitation (its link stops working).
func (s *Service) RevokeInvitation(ctx context.Context, id string) error {
	return worded(s.invitations().DeleteInvitation(ctx, id), ErrNotFound, "no invitation %q", id)
}

// AcceptInvitation uses a link's token: the invited person joins the team
// with the role — a new user with the name and password given, or the
// existing user with the invited address (whose password is not changed;
// they sign in as before). Errors: ErrInvitation, a 400 for the password.
func (s *Service) AcceptInvitation(ctx context.Context, token, name, password string) (User, error) {
	inv, err := s.Invitation(ctx, token)
	if err != nil {
		return User{}, err
	}
	u, err := s.users().GetUserByEmail(ctx, inv.Email)
	switch {
	case errors.Is(err, ErrNotFound):
		if password == "" {
			return User{}, apierr.Invalid("password", "choose a password")
		}
		if u, err = s.CreateUser(ctx, CreateUserParams{Email: inv.Email, Name: name, Password: password}); err != nil {
			return User{}, err
		}
	case err != nil:
		return User{}, err
	case !u.Active:
		return User{}, ErrInvitation
	}
	if err := s.invitations().AcceptInvitation(ctx, inv.ID, u.ID, s.now()); err != nil {
		if errors.Is(err, ErrConflict) {
			return User{}, ErrInvitation
		}
		return User{}, err
	}
	if _, err := s.SetMembership(ctx, u.ID, inv.TeamID, inv.Role, "invitation"); err != nil {
		return User{}, err
	}
	return u, nil
}
