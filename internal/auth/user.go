package auth

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Role is what a user may do in one team. Each role is a fixed set of
// the API's scopes (RoleScopes; docs/users.md), so a person's access reads
// the same as a key's: a key a user owns acts with at most its owner's
// role in the key's team, checked at every request.
type Role string

// The roles, from least to most.
const (
	// RoleViewer reads: the console, models, the team's keys and records.
	RoleViewer Role = "viewer"
	// RoleDeveloper builds with the team's models: a viewer's scopes and
	// inference, workflows, approvals and webhooks.
	RoleDeveloper Role = "developer"
	// RoleAdmin is a developer who also manages the team's members below
	// owner and its service-account keys.
	RoleAdmin Role = "admin"
	// RoleOwner is an admin who may also make and remove owners.
	RoleOwner Role = "owner"
)

// Roles lists the roles from least to most.
var Roles = []Role{RoleViewer, RoleDeveloper, RoleAdmin, RoleOwner}

var viewerScopes = []Scope{ScopeConsole, ScopeModelsRead, ScopeKeysRead, ScopeRecordsRead}

var developerScopes = append(slices.Clone(viewerScopes), ScopeInference, ScopeWorkflows, ScopeApprovals, ScopeWebhooks)

// roleScopes is each role's set. No role holds ScopeAdmin or
// ScopeModelsWrite: both act on the whole deployment (every team, the
// shared model catalogue), so they belong to instance administrators
// (User.InstanceAdmin), not to a team's members.
var roleScopes = map[Role][]Scope{
	RoleViewer:    viewerScopes,
	RoleDeveloper: developerScopes,
	RoleAdmin:     developerScopes,
	RoleOwner:     developerScopes,
}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return slices.Contains(Roles, r) }

// rank orders roles (viewer 1 … owner 4; 0 for none).
func (r Role) rank() int { return slices.Index(Roles, r) + 1 }

// AtLeast reports whether r is o or a greater role.
func (r Role) AtLeast(o Role) bool { return r.Valid() && r.rank() >= o.rank() }

// RoleScopes returns the scopes role r grants in its team (nil for an
// unknown role).
func RoleScopes(r Role) []Scope { return slices.Clone(roleScopes[r]) }

// ParseRole validates a role's name (a 400 naming param otherwise).
func ParseRole(param, s string) (Role, error) {
	r := Role(strings.TrimSpace(s))
	if !r.Valid() {
		names := make([]string, len(Roles))
		for i, v := range Roles {
			names[i] = string(v)
		}
		return "", apierr.Invalid(param, fmt.Sprintf("unknown role %q (valid: %s)", s, strings.Join(names, ", ")))
	}
	return r, nil
}

// User is a person who signs in to the console (with a password or a
// single sign-on provider) and may own API keys.
type User struct {
	ID    string // "user_" + 22 base62 characters
	Email string // unique (case-insensitive: stored lower-cased)
	Name  string // display name
	// Active is false for a deactivated user (by an administrator or by
	// SCIM): they cannot sign in, and the keys they own stop working.
	Active bool
	// InstanceAdmin holds the admin scope: every team, the deployment's
	// settings. Keys the user owns may carry admin only while it holds.
	InstanceAdmin bool
	// PasswordHash is the argon2id hash of a local password in PHC form
	// ("" when the user has none: single sign-on only).
	PasswordHash string
	// FailedLogins counts password failures since the last success;
	// LockedUntil refuses password sign-in until then.
	FailedLogins int
	LockedUntil  *time.Time
	CreatedAt    time.Time
	LastLoginAt  *time.Time
	// TOTPSecret turns two-step sign-in on (base32; "" off); TOTPPending
	// is a secret being set up, until a code from it confirms it;
	// TOTPLastStep is the last code's time step (a code works once).
	TOTPSecret, TOTPPending string
	TOTPLastStep            int64
}

// Membership puts a user in a team with a role.
type Membership struct {
	UserID string
	TeamID string
	Role   Role
	// Source says what made it: "api" (an administrator), or
	// "oidc:<provider>" / "scim" (kept in step with the identity
	// provider, which may change or remove it).
	Source    string
	CreatedAt time.Time
}

// Owner is what a key's owner holds at the moment the key is read: the
// store fills it with the key (a join), so that deactivating a user or
// changing their role applies to their keys at the next request.
type Owner struct {
	UserID        string
	Active        bool
	InstanceAdmin bool
	// Role is the owner's role in the key's team ("" when no longer a
	// member).
	Role Role
}

// UserUpdate changes some of a user's fields; nil fields are kept.
type UserUpdate struct {
	Email         *string
	Name          *string
	Active        *bool
	InstanceAdmin *bool
	PasswordHash  *string
	FailedLogins  *int
	// LockedUntil sets the lock; ClearLock removes it.
	LockedUntil  *time.Time
	ClearLock    bool
	LastLoginAt  *time.Time
	TOTPSecret   *string
	TOTPPending  *string
	TOTPLastStep *int64
}

// UserStore is what the user methods of Service need from a database
// (internal/sqlstore). Errors: ErrNotFound for a missing user or
// membership, ErrConflict for an e-mail address in use.
type UserStore interface {
	CreateUser(ctx context.Context, u User) error
	GetUser(ctx context.Context, id string) (User, error)
	GetUserByEmail(ctx context.Context, email string) (User, error)
	// ListUsers returns every user, or a team's members when teamID is
	// set, oldest first.
	ListUsers(ctx context.Context, teamID string) ([]User, error)
	UpdateUser(ctx context.Context, id string, u UserUpdate) error
	// AddLoginFailure counts one more password failure and returns the
	// count (atomically: concurrent guesses each count).
	AddLoginFailure(ctx context.Context, id string) (int, error)
	// PutMembership creates or changes a membership (ErrNotFound: no
	// such user or team).
	PutMembership(ctx context.Context, m Membership) error
	DeleteMembership(ctx context.Context, userID, teamID string) error
	// ListMemberships returns a user's memberships, or a team's when
	// userID is "" (at least one of the two is set), oldest first.
	ListMemberships(ctx context.Context, userID, teamID string) ([]Membership, error)
	// ListKeysOfUser returns the keys a user owns, every team's.
	ListKeysOfUser(ctx context.Context, userID string) ([]Key, error)
	// GetUserByIdentity returns the user a single sign-on provider's
	// subject is linked to (ErrNotFound).
	GetUserByIdentity(ctx context.Context, provider, subject string) (User, error)
	// LinkIdentity links a provider's subject to a user (ErrConflict:
	// linked already).
	LinkIdentity(ctx context.Context, provider, subject, userID string, at time.Time) error
}

// Password sign-in's limits.
const (
	// LockAfter failures in a row lock a user's password sign-in for
	// LockFor; the count starts again after a success.
	LockAfter = 5
	LockFor   = 15 * time.Minute
	maxEmail  = 254
)

// ErrSignIn is the one answer to a failed password sign-in, whatever
// failed (no such user, wrong password, locked, deactivated): the
// answer must not tell a guesser which e-mail addresses exist.
var ErrSignIn = apierr.New(apierr.InvalidAPIKey, "Incorrect e-mail address or password, or the account is locked or deactivated.")

// users returns the store's user side (a store without one is a bug in
// the wiring).
func (s *Service) users() UserStore {
	us, ok := s.Store.(UserStore)
	if !ok {
		panic("auth: the key store keeps no users")
	}
	return us
}

// NormalizeEmail lower-cases and checks an e-mail address (a 400 naming
// param otherwise).
func NormalizeEmail(param, s string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(s))
	if e == "" || len(e) > maxEmail {
		return "", apierr.Invalid(param, "an e-mail address of at most 254 characters is required")
	}
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || a.Name != "" {
		return "", apierr.Invalid(param, fmt.Sprintf("%q is not an e-mail address", s))
	}
	return e, nil
}

// CreateUserParams describes a new user.
type CreateUserParams struct {
	Email         string
	Name          string
	Password      string // optional: "" for a single sign-on user
	InstanceAdmin bool
	Memberships   []Membership // UserID is filled in
}

// CreateUser creates a user (active) and their memberships. Errors: a
// 400 naming the field, ErrConflict (409) for an e-mail address in use.
func (s *Service) CreateUser(ctx context.Context, p CreateUserParams) (User, error) {
	email, err := NormalizeEmail("email", p.Email)
	if err != nil {
		return User{}, err
	}
	name := strings.TrimSpace(p.Name)
	if len(name) > maxNameLen {
		return User{}, apierr.Invalid("name", fmt.Sprintf("a name must be at most %d characters", maxNameLen))
	}
	u := User{ID: "user_" + randBase62(22), Email: email, Name: name, Active: true, InstanceAdmin: p.InstanceAdmin, CreatedAt: s.now()}
	if p.Password != "" {
		if u.PasswordHash, err = HashPassword("password", p.Password); err != nil {
			return User{}, err
		}
	}
	for i, m := range p.Memberships {
		if _, err := ParseRole(fmt.Sprintf("memberships[%d].role", i), string(m.Role)); err != nil {
			return User{}, err
		}
		if _, err := s.Store.GetTeam(ctx, m.TeamID); err != nil {
			if errors.Is(err, ErrNotFound) {
				return User{}, apierr.Invalid(fmt.Sprintf("memberships[%d].team_id", i), fmt.Sprintf("no team with id %q", m.TeamID))
			}
			return User{}, err
		}
	}
	if err := s.users().CreateUser(ctx, u); err != nil {
		return User{}, worded(fmt.Errorf("create user: %w", err), ErrConflict, "a user with e-mail address %q exists", email)
	}
	for _, m := range p.Memberships {
		m.UserID, m.CreatedAt = u.ID, u.CreatedAt
		if m.Source == "" {
			m.Source = "api"
		}
		if err := s.users().PutMembership(ctx, m); err != nil {
			return User{}, err
		}
	}
	return u, nil
}

// GetUser returns a user. Errors: ErrNotFound (404).
func (s *Service) GetUser(ctx context.Context, id string) (User, error) {
	u, err := s.users().GetUser(ctx, id)
	return u, worded(err, ErrNotFound, "no user %q", id)
}

// UserByEmail returns the user with an e-mail address. Errors:
// ErrNotFound.
func (s *Service) UserByEmail(ctx context.Context, email string) (User, error) {
	e, err := NormalizeEmail("email", email)
	if err != nil {
		return User{}, ErrNotFound
	}
	return s.users().GetUserByEmail(ctx, e)
}

// ListUsers returns every user, or a team's members.
func (s *Service) ListUsers(ctx context.Context, teamID string) ([]User, error) {
	return s.users().ListUsers(ctx, teamID)
}

// Memberships returns a user's memberships.
func (s *Service) Memberships(ctx context.Context, userID string) ([]Membership, error) {
	return s.users().ListMemberships(ctx, userID, "")
}

// TeamMembers returns a team's memberships.
func (s *Service) TeamMembers(ctx context.Context, teamID string) ([]Membership, error) {
	return s.users().ListMemberships(ctx, "", teamID)
}

// UpdateUserParams changes a user; nil fields are kept.
type UpdateUserParams struct {
	Name          *string
	Active        *bool
	InstanceAdmin *bool
	Password      *string // "" removes the password
}

// UpdateUser changes a user. Deactivating one ends their console sessions
// (the Sessions hook) and stops the keys they own at their next use
// (Key.Active consults the owner). Errors: ErrNotFound, a 400.
func (s *Service) UpdateUser(ctx context.Context, id string, p UpdateUserParams) (User, error) {
	var up UserUpdate
	if p.Name != nil {
		n := strings.TrimSpace(*p.Name)
		if len(n) > maxNameLen {
			return User{}, apierr.Invalid("name", fmt.Sprintf("a name must be at most %d characters", maxNameLen))
		}
		up.Name = &n
	}
	up.Active, up.InstanceAdmin = p.Active, p.InstanceAdmin
	if p.Password != nil {
		h := ""
		if *p.Password != "" {
			var err error
			if h, err = HashPassword("password", *p.Password); err != nil {
				return User{}, err
			}
		}
		up.PasswordHash = &h
		zero := 0
		up.FailedLogins, up.ClearLock = &zero, true
	}
	if err := s.users().UpdateUser(ctx, id, up); err != nil {
		return User{}, worded(err, ErrNotFound, "no user %q", id)
	}
	s.forget()
	if p.Active != nil && !*p.Active {
		s.endSessionsOf(ctx, id)
	}
	return s.GetUser(ctx, id)
}

// SetMembership puts user userID in team teamID with role. Errors:
// ErrNotFound (no such user or team), a 400 for the role.
func (s *Service) SetMembership(ctx context.Context, userID, teamID string, role Role, source string) (Membership, error) {
	if _, err := ParseRole("role", string(role)); err != nil {
		return Membership{}, err
	}
	if _, err := s.GetUser(ctx, userID); err != nil {
		return Membership{}, err
	}
	if _, err := s.GetTeam(ctx, teamID); err != nil {
		return Membership{}, err
	}
	if source == "" {
		source = "api"
	}
	m := Membership{UserID: userID, TeamID: teamID, Role: role, Source: source, CreatedAt: s.now()}
	if err := s.users().PutMembership(ctx, m); err != nil {
		return Membership{}, err
	}
	s.forget()
	return m, nil
}

// RemoveMembership takes user userID out of team teamID: their keys in
// that team stop at their next use, their sessions in it end. Errors:
// ErrNotFound.
func (s *Service) RemoveMembership(ctx context.Context, userID, teamID string) error {
	if err := s.users().DeleteMembership(ctx, userID, teamID); err != nil {
		return worded(err, ErrNotFound, "user %q is not a member of team %q", userID, teamID)
	}
	s.forget()
	s.endSessionsOf(ctx, userID)
	return nil
}

// endSessionsOf ends the console sessions of the keys a user owns (a
// failure is logged: the keys themselves refuse already).
func (s *Service) endSessionsOf(ctx context.Context, userID string) {
	if s.EndSessions == nil {
		return
	}
	keys, err := s.users().ListKeysOfUser(ctx, userID)
	if err != nil {
		s.logger().Warn("auth: ending a user's sessions", "user", userID, "err", err)
		return
	}
	for _, k := range keys {
		if err := s.EndSessions(ctx, k.ID); err != nil {
			s.logger().Warn("auth: ending a user's sessions", "user", userID, "key", k.ID, "err", err)
		}
	}
}

// SignIn checks an e-mail address and password. A wrong password counts
// towards the lock (LockAfter in a row lock sign-in for LockFor); a
// success resets the count and stamps LastLoginAt. Every failure is
// ErrSignIn, worded the same.
func (s *Service) SignIn(ctx context.Context, email, password string) (User, error) {
	e, err := NormalizeEmail("email", email)
	if err != nil || password == "" || len(password) > maxPassword {
		return User{}, ErrSignIn
	}
	u, err := s.users().GetUserByEmail(ctx, e)
	if errors.Is(err, ErrNotFound) {
		// Spend the time a check takes, so that timing does not say
		// which addresses exist.
		_ = VerifyPassword(dummyHash(), password)
		return User{}, ErrSignIn
	}
	if err != nil {
		return User{}, err
	}
	now := s.now()
	if !u.Active || u.PasswordHash == "" || (u.LockedUntil != nil && now.Before(*u.LockedUntil)) {
		_ = VerifyPassword(dummyHash(), password)
		return User{}, ErrSignIn
	}
	if !VerifyPassword(u.PasswordHash, password) {
		n, err := s.users().AddLoginFailure(ctx, u.ID)
		if err != nil {
			return User{}, err
		}
		if n >= LockAfter {
			until := now.Add(LockFor)
			zero := 0
			if err := s.users().UpdateUser(ctx, u.ID, UserUpdate{LockedUntil: &until, FailedLogins: &zero}); err != nil {
				return User{}, err
			}
			s.logger().Warn("auth: password sign-in locked after repeated failures", "user", u.ID, "until", until)
		}
		return User{}, ErrSignIn
	}
	zero := 0
	if err := s.users().UpdateUser(ctx, u.ID, UserUpdate{FailedLogins: &zero, ClearLock: true, LastLoginAt: &now}); err != nil {
		return User{}, err
	}
	u.FailedLogins, u.LockedUntil, u.LastLoginAt = 0, nil, &now
	return u, nil
}

// SessionKey makes the key a console sign-in acts as: user userID in team
// teamID with every scope their role there grants (an instance
// administrator: admin), expiring at until. Its secret is thrown away:
// the console holds the key's id, and the key is not listed with the
// keys people made. Errors: a 400 naming "owner" (not a member, not
// active), a store error.
func (s *Service) SessionKey(ctx context.Context, userID, teamID string, until time.Time) (Key, error) {
	o, err := s.ownerOf(ctx, userID, teamID)
	if err != nil {
		return Key{}, err
	}
	scopes := RoleScopes(o.Role)
	if o.InstanceAdmin {
		scopes = []Scope{ScopeAdmin}
	}
	k, _, err := s.CreateKey(ctx, CreateKeyParams{Name: "console sign-in", TeamID: teamID, Scopes: scopes, ExpiresAt: &until,
		Kind: KindSession, OwnerUserID: userID})
	return k, err
}

// ErrPermission is the answer to a caller who may not do what they asked
// (HTTP 403).
var ErrPermission = apierr.New(apierr.PermissionDenied, "permission denied")

// CreateKeyAs creates a key on behalf of caller. An administrator (the
// admin scope) may create any key. A user acting through a key they own
// may create their own keys (KindUser, owner themselves) in that key's
// team, and a team admin or owner the team's service-account keys;
// either holds at most the scopes of the creator's role. Errors: as
// CreateKey, and ErrPermission (403).
func (s *Service) CreateKeyAs(ctx context.Context, caller Key, p CreateKeyParams) (Key, string, error) {
	if HasScope(caller, ScopeAdmin) {
		return s.CreateKey(ctx, p)
	}
	o := caller.Owner
	if caller.OwnerUserID == "" || o == nil || o.Role == "" {
		return Key{}, "", apierr.Wrapf(ErrPermission, "only an administrator, or a user signed in to a team, may create API keys")
	}
	if p.TeamID == "" {
		p.TeamID = caller.TeamID
	}
	if p.TeamID != caller.TeamID {
		return Key{}, "", apierr.Invalid("team_id", "a user creates keys in the team they are signed in to ("+caller.TeamID+")")
	}
	switch p.Kind {
	case KindService:
		if !o.Role.AtLeast(RoleAdmin) {
			return Key{}, "", apierr.Wrapf(ErrPermission, "a team's service-account keys are created by its admins and owners")
		}
		p.OwnerUserID = ""
		// Within the creator's role, as a user's own key is.
		for _, sc := range p.Scopes {
			if !HasScope(caller, sc) || !holds(roleScopes[o.Role], sc) {
				return Key{}, "", apierr.Invalid("scopes", fmt.Sprintf("scope %q is beyond your role %q", sc, o.Role))
			}
		}
	case "", KindUser:
		p.Kind, p.OwnerUserID = KindUser, caller.OwnerUserID
	default:
		return Key{}, "", apierr.Invalid("kind", "kind is \"user\" (your own key) or \"service\" (the team's)")
	}
	return s.CreateKey(ctx, p)
}

// GroupRule maps an identity provider's group to a role in a team, or to
// instance administration (config group_rules; docs/users.md). The rules
// are evaluated at every single sign-on and on every SCIM change.
type GroupRule struct {
	// Group is the group's name as the provider sends it (an OIDC groups
	// claim's entry, a SCIM group's displayName).
	Group string `yaml:"group"`
	// Team is the team's name (created when missing); Role the role in it.
	Team string `yaml:"team"`
	Role Role   `yaml:"role"`
	// InstanceAdmin makes the group's members instance administrators.
	InstanceAdmin bool `yaml:"instance_admin"`
}

// CheckGroupRules validates rules (for the configuration's loader).
func CheckGroupRules(rules []GroupRule) error {
	for i, r := range rules {
		switch {
		case strings.TrimSpace(r.Group) == "":
			return fmt.Errorf("group_rules[%d]: group is required", i)
		case r.Team == "" && !r.InstanceAdmin:
			return fmt.Errorf("group_rules[%d] (%s): a team and role, or instance_admin: true, is required", i, r.Group)
		case r.Team != "" && !r.Role.Valid():
			return fmt.Errorf("group_rules[%d] (%s): role %q is not one of viewer, developer, admin, owner", i, r.Group, r.Role)
		}
	}
	return nil
}

// SyncGroups makes the memberships that source (an identity provider:
// "oidc:<name>", "scim") gives user userID what rules make of groups: a
// team's role is the highest any matching rule gives; memberships of the
// source no rule gives any more are removed (their keys stop, their
// sessions end). Memberships made otherwise (the API, the CLI) are left
// alone, and a team a rule names is created when missing. When any rule
// names instance administration, the user is an instance administrator
// exactly while a matching group says so. It reports whether anything
// changed.
func (s *Service) SyncGroups(ctx context.Context, userID, source string, groups []string, rules []GroupRule) (bool, error) {
	in := map[string]bool{}
	for _, g := range groups {
		in[g] = true
	}
	want := map[string]Role{} // team id → role
	adminRules, admin := false, false
	for _, r := range rules {
		adminRules = adminRules || r.InstanceAdmin
		if !in[r.Group] {
			continue
		}
		admin = admin || r.InstanceAdmin
		if r.Team == "" {
			continue
		}
		t, err := s.TeamByName(ctx, r.Team)
		if errors.Is(err, ErrNotFound) {
			t, err = s.CreateTeam(ctx, r.Team)
			if errors.Is(err, ErrConflict) { // made meanwhile by another sign-in
				t, err = s.TeamByName(ctx, r.Team)
			}
		}
		if err != nil {
			return false, fmt.Errorf("group rule %q: team %q: %w", r.Group, r.Team, err)
		}
		if !want[t.ID].AtLeast(r.Role) {
			want[t.ID] = r.Role
		}
	}
	have, err := s.users().ListMemberships(ctx, userID, "")
	if err != nil {
		return false, err
	}
	changed := false
	current := map[string]Membership{}
	for _, m := range have {
		current[m.TeamID] = m
		if m.Source == source {
			if _, ok := want[m.TeamID]; !ok {
				if err := s.RemoveMembership(ctx, userID, m.TeamID); err != nil && !errors.Is(err, ErrNotFound) {
					return changed, err
				}
				changed = true
			}
		}
	}
	for team, role := range want {
		m, ok := current[team]
		if ok && m.Source != source {
			continue // made by an administrator: theirs to change
		}
		if ok && m.Role == role {
			continue
		}
		if _, err := s.SetMembership(ctx, userID, team, role, source); err != nil {
			return changed, err
		}
		if ok && role.rank() < m.Role.rank() {
			s.endSessionsOf(ctx, userID) // a lower role: sign in again
		}
		changed = true
	}
	if adminRules {
		u, err := s.GetUser(ctx, userID)
		if err != nil {
			return changed, err
		}
		if u.InstanceAdmin != admin {
			if _, err := s.UpdateUser(ctx, userID, UpdateUserParams{InstanceAdmin: &admin}); err != nil {
				return changed, err
			}
			if !admin {
				s.endSessionsOf(ctx, userID)
			}
			changed = true
		}
	}
	return changed, nil
}

// ExternalIdentity is what a single sign-on provider says about the person
// signing in (the ID token's claims, as the provider's configuration maps
// them).
type ExternalIdentity struct {
	// Provider is the provider's name in the configuration; Subject its
	// stable id for the person (the ID token's sub).
	Provider, Subject string
	Email             string
	// EmailVerified is the email_verified claim (nil: not sent).
	EmailVerified *bool
	Name          string
	Groups        []string
	// Source is what the memberships the provider's groups make are
	// marked with (default "oidc:<Provider>").
	Source string
}

// SignInExternal signs in a person a single sign-on provider vouches for:
// the user linked to the provider's subject, else the user with the same
// e-mail address (linked now, unless the provider says the address is
// not verified), else a new user (just-in-time). Their name and address
// follow the provider's; their memberships from this provider follow the
// group rules at every sign-in (SyncGroups, source "oidc:<provider>").
// Errors: ErrSignIn (deactivated, or an unverified address that would
// claim an existing account), a 400 for an unusable address.
func (s *Service) SignInExternal(ctx context.Context, id ExternalIdentity, rules []GroupRule) (User, error) {
	us := s.users()
	email, err := NormalizeEmail("email", id.Email)
	if err != nil {
		return User{}, apierr.Invalid("email", "the identity provider sent no usable e-mail address (claim email): "+err.Error())
	}
	u, err := us.GetUserByIdentity(ctx, id.Provider, id.Subject)
	if errors.Is(err, ErrNotFound) {
		u, err = us.GetUserByEmail(ctx, email)
		switch {
		case err == nil && id.EmailVerified != nil && !*id.EmailVerified:
			// An address the provider has not verified must not take over
			// an account someone else made.
			s.logger().Warn("auth: single sign-on refused: unverified e-mail address of an existing user", "provider", id.Provider, "email", email)
			return User{}, ErrSignIn
		case errors.Is(err, ErrNotFound):
			u, err = s.CreateUser(ctx, CreateUserParams{Email: email, Name: id.Name})
			if err == nil {
				s.logger().Info("auth: user created at first single sign-on", "user", u.ID, "provider", id.Provider)
			}
		}
		if err != nil {
			return User{}, err
		}
		if err := us.LinkIdentity(ctx, id.Provider, id.Subject, u.ID, s.now()); err != nil {
			return User{}, err
		}
	} else if err != nil {
		return User{}, err
	}
	if !u.Active {
		return User{}, ErrSignIn
	}
	now := s.now()
	up := UserUpdate{LastLoginAt: &now}
	if u.Email != email {
		up.Email = &email
	}
	if n := strings.TrimSpace(id.Name); n != "" && n != u.Name && len(n) <= maxNameLen {
		up.Name = &n
	}
	if err := us.UpdateUser(ctx, u.ID, up); err != nil {
		return User{}, worded(err, ErrConflict, "another user has the e-mail address %q", email)
	}
	source := id.Source
	if source == "" {
		source = "oidc:" + id.Provider
	}
	if _, err := s.SyncGroups(ctx, u.ID, source, id.Groups, rules); err != nil {
		return User{}, err
	}
	return s.GetUser(ctx, u.ID)
}
