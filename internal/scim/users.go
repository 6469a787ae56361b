package scim

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// Service is SCIM's domain logic over auth.Service (the accounts, their
// memberships, what group rules make of groups) and Store (what SCIM
// alone keeps).
type Service struct {
	Auth *auth.Service
	// Users is the accounts' store, for what auth.Service does not offer
	// (looking a user up by e-mail address, changing one's address).
	Users auth.UserStore
	Store Store
	// Rules are the group rules (config group_rules) that SCIM groups'
	// displayNames become roles in teams by.
	Rules []auth.GroupRule
	Log   *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// syncs serializes the group synchronization of each user (by a hash
	// of the id), so that the last of two concurrent changes to a user's
	// groups is the one their memberships end up with.
	syncs [64]sync.Mutex
}

// Limits on what a request may carry.
const (
	// MaxResults is the most resources one list returns (count is capped
	// there); DefaultCount is a list's page without count.
	MaxResults   = 200
	DefaultCount = 100
	// MaxPatchMembers is the most member values one PATCH may name.
	MaxPatchMembers = 1000
	maxString       = 256
)

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// UserView is a user with the groups they are in.
type UserView struct {
	User
	Groups []Group
}

// userState is what SCIM sets on a user.
type userState struct {
	UserName, ExternalID                          string
	GivenName, FamilyName, Formatted, DisplayName string
	// Email is emails[primary].value (or the first address), used when
	// userName is not an e-mail address.
	Email  string
	Active bool
}

func stateOf(u User) userState {
	return userState{UserName: u.UserName, ExternalID: u.ExternalID, GivenName: u.GivenName, FamilyName: u.FamilyName,
		Formatted: u.Formatted, DisplayName: u.DisplayName, Email: u.Email, Active: u.Active}
}

// name is the account's name: displayName, else name.formatted, else the
// given and family names.
func (st userState) name() string {
	if d := strings.TrimSpace(st.DisplayName); d != "" {
		return d
	}
	if f := strings.TrimSpace(st.Formatted); f != "" {
		return f
	}
	return strings.TrimSpace(strings.TrimSpace(st.GivenName) + " " + strings.TrimSpace(st.FamilyName))
}

// email is the account's address: userName when it is one, else
// emails[primary].value.
func (st userState) email() (string, error) {
	if e, err := auth.NormalizeEmail("userName", st.UserName); err == nil {
		return e, nil
	}
	if st.Email != "" {
		e, err := auth.NormalizeEmail("emails", st.Email)
		if err != nil {
			return "", invalidValue("emails[primary].value %q is not an e-mail address", st.Email)
		}
		return e, nil
	}
	return "", invalidValue("userName %q is not an e-mail address and no emails[primary].value was given: a Sovereign user is an e-mail address", st.UserName)
}

// check validates the state's sizes and its required userName.
func (st userState) check() error {
	if strings.TrimSpace(st.UserName) == "" {
		return invalidValue("userName is required")
	}
	for _, f := range []struct{ name, v string }{{"userName", st.UserName}, {"externalId", st.ExternalID},
		{"name.givenName", st.GivenName}, {"name.familyName", st.FamilyName}, {"name.formatted", st.Formatted},
		{"displayName", st.DisplayName}, {"emails.value", st.Email}} {
		if len(f.v) > maxString {
			return invalidValue("%s must be at most %d bytes", f.name, maxString)
		}
	}
	return nil
}

// userFromResource reads a User resource (POST, PUT) over base: userName
// is required; name and displayName are replaced by what is sent (absent:
// cleared); externalId, active and emails are kept when absent.
func userFromResource(m map[string]any, base userState) (userState, error) {
	st := base
	var err error
	if v, ok := lookup(m, "userName"); ok {
		if st.UserName, err = asString("userName", v); err != nil {
			return st, err
		}
	} else {
		st.UserName = ""
	}
	if v, ok := lookup(m, "externalId"); ok {
		if st.ExternalID, err = asString("externalId", v); err != nil {
			return st, err
		}
	}
	st.GivenName, st.FamilyName, st.Formatted, st.DisplayName = "", "", "", ""
	if v, ok := lookup(m, "name"); ok && v != nil {
		if err := st.patch("replace", path{Attr: "name"}, v); err != nil {
			return st, err
		}
	}
	if v, ok := lookup(m, "displayName"); ok {
		if st.DisplayName, err = asString("displayName", v); err != nil {
			return st, err
		}
	}
	if v, ok := lookup(m, "active"); ok && v != nil {
		if st.Active, err = asBool("active", v); err != nil {
			return st, err
		}
	}
	if v, ok := lookup(m, "emails"); ok && v != nil {
		if err := st.patch("replace", path{Attr: "emails"}, v); err != nil {
			return st, err
		}
	}
	return st, st.check()
}

// primaryEmail picks emails[primary].value, else the first address, from
// an emails value ("" when none).
func primaryEmail(v any) (string, error) {
	var list []any
	switch e := v.(type) {
	case []any:
		list = e
	case map[string]any:
		list = []any{e}
	case nil:
		return "", nil
	default:
		return "", invalidValue("emails must be a list of {value, type, primary}")
	}
	first := ""
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return "", invalidValue("emails must be a list of {value, type, primary}")
		}
		raw, _ := lookup(m, "value")
		val, err := asString("emails.value", raw)
		if err != nil || val == "" {
			continue
		}
		if p, ok := lookup(m, "primary"); ok {
			if b, err := asBool("emails.primary", p); err == nil && b {
				return val, nil
			}
		}
		if first == "" {
			first = val
		}
	}
	return first, nil
}

// patch applies one PATCH operation (op lower-cased) at p to the state.
// Attributes Sovereign keeps nothing of (title, locale, an extension's)
// are accepted and ignored: a provider's default mappings send them.
func (st *userState) patch(op string, p path, v any) error {
	if p.Ext {
		return nil
	}
	remove := op == "remove"
	var err error
	str := func(attr string, dst *string) error {
		if remove {
			*dst = ""
			return nil
		}
		*dst, err = asString(attr, v)
		return err
	}
	switch p.Attr {
	case "active":
		if remove || p.Sub != "" {
			return nil
		}
		st.Active, err = asBool("active", v)
		return err
	case "username":
		if remove {
			return errorf(400, TypeMutability, "userName is required and cannot be removed")
		}
		if err := str("userName", &st.UserName); err != nil {
			return err
		}
		if strings.TrimSpace(st.UserName) == "" {
			return invalidValue("userName must not be empty")
		}
		return nil
	case "externalid":
		return str("externalId", &st.ExternalID)
	case "displayname":
		return str("displayName", &st.DisplayName)
	case "name":
		switch p.Sub {
		case "givenname":
			return str("name.givenName", &st.GivenName)
		case "familyname":
			return str("name.familyName", &st.FamilyName)
		case "formatted":
			return str("name.formatted", &st.Formatted)
		case "":
			if remove {
				st.GivenName, st.FamilyName, st.Formatted = "", "", ""
				return nil
			}
			m, ok := v.(map[string]any)
			if !ok {
				return invalidValue("name must be an object {givenName, familyName, formatted}")
			}
			for k, sub := range m {
				if err := st.patch(op, path{Attr: "name", Sub: strings.ToLower(k)}, sub); err != nil {
					return err
				}
			}
		}
		return nil
	case "emails":
		if remove {
			return nil // an account keeps its address
		}
		switch {
		case p.Sub == "value":
			e, err := asString("emails.value", v)
			if err != nil {
				return err
			}
			if e != "" {
				st.Email = e
			}
		case p.Sub == "" && p.Filter == nil:
			e, err := primaryEmail(v)
			if err != nil {
				return err
			}
			if e != "" {
				st.Email = e
			}
		}
		return nil
	}
	return nil
}

// Operation is one PATCH operation as sent.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// normalizeOp lower-cases and checks an operation's op (Entra ID sends
// "Add", "Replace", "Remove").
func normalizeOp(op string) (string, error) {
	o := strings.ToLower(strings.TrimSpace(op))
	switch o {
	case "add", "replace", "remove":
		return o, nil
	}
	return "", errorf(400, TypeInvalidSyntax, "unknown PATCH op %q (add, replace or remove)", op)
}

// eachTarget calls f with each (path, value) an operation addresses: its
// path, or, without one, each attribute of its value object.
func eachTarget(o Operation, op string, f func(p path, v any) error) error {
	if strings.TrimSpace(o.Path) != "" {
		p, err := parsePath(o.Path)
		if err != nil {
			return err
		}
		return f(p, o.Value)
	}
	if op == "remove" {
		return errorf(400, TypeNoTarget, "a remove operation needs a path")
	}
	m, ok := o.Value.(map[string]any)
	if !ok {
		return invalidValue("an operation without a path needs an object value")
	}
	for k, v := range m {
		p, err := parsePath(k)
		if err != nil {
			return err
		}
		if err := f(p, v); err != nil {
			return err
		}
	}
	return nil
}

// GetUser returns a linked user with their groups. Errors: 404.
func (s *Service) GetUser(ctx context.Context, id string) (UserView, error) {
	u, err := s.Store.GetSCIMUser(ctx, id)
	if errors.Is(err, auth.ErrNotFound) {
		return UserView{}, notFound("no user %q", id)
	}
	if err != nil {
		return UserView{}, err
	}
	return s.view(ctx, u)
}

func (s *Service) view(ctx context.Context, u User) (UserView, error) {
	gs, err := s.Store.SCIMGroupsOfUser(ctx, u.ID)
	if err != nil {
		return UserView{}, err
	}
	return UserView{User: u, Groups: gs}, nil
}

// ListUsers returns a page (startIndex from 1) of the users filter
// selects, and their total. filter is "" or a SCIM filter on userName,
// externalId, emails.value or id with eq.
func (s *Service) ListUsers(ctx context.Context, filter string, startIndex, count int) ([]UserView, int, error) {
	var f UserFilter
	if strings.TrimSpace(filter) != "" {
		attr, v, err := filterOf(filter, "username", "externalid", "emails.value", "emails", "id")
		if err != nil {
			return nil, 0, err
		}
		switch attr {
		case "username":
			f.UserName = v
		case "externalid":
			f.ExternalID = v
		case "emails", "emails.value":
			f.Email = strings.ToLower(strings.TrimSpace(v))
		case "id":
			f.ID = v
		}
	}
	users, total, err := s.Store.ListSCIMUsers(ctx, f, startIndex-1, count)
	if err != nil {
		return nil, 0, err
	}
	out := make([]UserView, 0, len(users))
	for _, u := range users {
		v, err := s.view(ctx, u)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, v)
	}
	return out, total, nil
}

// CreateUser provisions a user from a User resource. userName is the
// e-mail address (or, when it is not one, emails[primary].value).
//
// A userName or address another SCIM user holds is a 409 uniqueness. An
// account with the address that SCIM does not manage yet (made by the API
// or the CLI, or provisioned and then deleted) is taken over: it is
// linked, keeps its id, memberships and keys, and gets the resource's name
// and active — what an identity provider's "match" expects. Instance
// administrators made outside SCIM are not taken over (409): a SCIM token
// must not be able to deactivate the deployment's way in.
func (s *Service) CreateUser(ctx context.Context, m map[string]any) (UserView, error) {
	st, err := userFromResource(m, userState{Active: true})
	if err != nil {
		return UserView{}, err
	}
	email, err := st.email()
	if err != nil {
		return UserView{}, err
	}
	if same, _, err := s.Store.ListSCIMUsers(ctx, UserFilter{UserName: st.UserName}, 0, 1); err != nil {
		return UserView{}, err
	} else if len(same) > 0 {
		return UserView{}, conflict("a user with userName %q exists", st.UserName)
	}
	now := s.now()
	var id string
	existing, err := s.Users.GetUserByEmail(ctx, email)
	switch {
	case err == nil:
		if _, err := s.Store.GetSCIMUser(ctx, existing.ID); err == nil {
			return UserView{}, conflict("a user with e-mail address %q exists", email)
		} else if !errors.Is(err, auth.ErrNotFound) {
			return UserView{}, err
		}
		if existing.InstanceAdmin {
			return UserView{}, conflict("%q is an instance administrator made outside SCIM, which SCIM does not take over", email)
		}
		id = existing.ID
		p := auth.UpdateUserParams{}
		if n := st.name(); n != "" && n != existing.Name {
			p.Name = &n
		}
		if st.Active != existing.Active {
			p.Active = &st.Active
		}
		if p.Name != nil || p.Active != nil {
			if _, err := s.Auth.UpdateUser(ctx, id, p); err != nil {
				return UserView{}, err
			}
		}
		s.log().Info("scim: took over an existing user", "user", id, "email", email)
	case errors.Is(err, auth.ErrNotFound):
		u, err := s.Auth.CreateUser(ctx, auth.CreateUserParams{Email: email, Name: st.name()})
		if err != nil {
			return UserView{}, err
		}
		id = u.ID
		if !st.Active {
			if _, err := s.Auth.UpdateUser(ctx, id, auth.UpdateUserParams{Active: &st.Active}); err != nil {
				return UserView{}, err
			}
		}
	default:
		return UserView{}, err
	}
	link := User{ID: id, UserName: st.UserName, ExternalID: st.ExternalID, GivenName: st.GivenName, FamilyName: st.FamilyName,
		Formatted: st.Formatted, DisplayName: st.DisplayName, CreatedAt: now, UpdatedAt: now}
	if err := s.Store.CreateSCIMUser(ctx, link); err != nil {
		if errors.Is(err, auth.ErrConflict) {
			return UserView{}, conflict("a user with userName %q or e-mail address %q exists", st.UserName, email)
		}
		return UserView{}, err
	}
	return s.GetUser(ctx, id)
}

// ReplaceUser replaces a user from a User resource (PUT).
func (s *Service) ReplaceUser(ctx context.Context, id string, m map[string]any) (UserView, error) {
	cur, err := s.GetUser(ctx, id)
	if err != nil {
		return UserView{}, err
	}
	st, err := userFromResource(m, stateOf(cur.User))
	if err != nil {
		return UserView{}, err
	}
	return s.store(ctx, cur.User, st)
}

// PatchUser applies PATCH operations to a user.
func (s *Service) PatchUser(ctx context.Context, id string, ops []Operation) (UserView, error) {
	cur, err := s.GetUser(ctx, id)
	if err != nil {
		return UserView{}, err
	}
	st := stateOf(cur.User)
	if err := applyOps(ops, func(op string, p path, v any) error { return st.patch(op, p, v) }); err != nil {
		return UserView{}, err
	}
	if err := st.check(); err != nil {
		return UserView{}, err
	}
	return s.store(ctx, cur.User, st)
}

// applyOps runs each operation's targets through f, with ops checked.
func applyOps(ops []Operation, f func(op string, p path, v any) error) error {
	if len(ops) == 0 {
		return invalidValue("a PATCH needs at least one operation in Operations")
	}
	for i, o := range ops {
		op, err := normalizeOp(o.Op)
		if err != nil {
			return err
		}
		if err := eachTarget(o, op, func(p path, v any) error { return f(op, p, v) }); err != nil {
			var e *Error
			if errors.As(err, &e) {
				c := *e
				c.Detail = fmt.Sprintf("Operations[%d]: %s", i, e.Detail)
				return &c
			}
			return err
		}
	}
	return nil
}

// store writes a user's new state: the link, then the account (e-mail
// address, name, active).
func (s *Service) store(ctx context.Context, cur User, st userState) (UserView, error) {
	email, err := st.email()
	if err != nil {
		return UserView{}, err
	}
	if email != cur.Email {
		other, err := s.Users.GetUserByEmail(ctx, email)
		if err == nil && other.ID != cur.ID {
			return UserView{}, conflict("a user with e-mail address %q exists", email)
		} else if err != nil && !errors.Is(err, auth.ErrNotFound) {
			return UserView{}, err
		}
	}
	link := cur
	link.UserName, link.ExternalID = st.UserName, st.ExternalID
	link.GivenName, link.FamilyName, link.Formatted, link.DisplayName = st.GivenName, st.FamilyName, st.Formatted, st.DisplayName
	if link != cur {
		link.UpdatedAt = s.now()
		if err := s.Store.UpdateSCIMUser(ctx, link); err != nil {
			if errors.Is(err, auth.ErrConflict) {
				return UserView{}, conflict("a user with userName %q exists", st.UserName)
			}
			return UserView{}, err
		}
	}
	if email != cur.Email {
		if err := s.Users.UpdateUser(ctx, cur.ID, auth.UserUpdate{Email: &email}); err != nil {
			if errors.Is(err, auth.ErrConflict) {
				return UserView{}, conflict("a user with e-mail address %q exists", email)
			}
			return UserView{}, err
		}
	}
	var p auth.UpdateUserParams
	// The account's name follows SCIM's when SCIM's changes: a name an
	// administrator gave an account SCIM sends none for is kept.
	if n := st.name(); n != stateOf(cur).name() && n != cur.Name {
		p.Name = &n
	}
	if st.Active != cur.Active {
		p.Active = &st.Active
	}
	if p.Name != nil || p.Active != nil {
		if _, err := s.Auth.UpdateUser(ctx, cur.ID, p); err != nil {
			return UserView{}, err
		}
		if p.Active != nil {
			s.log().Info("scim: user active changed", "user", cur.ID, "active", st.Active)
		}
	}
	return s.GetUser(ctx, cur.ID)
}

// DeleteUser deprovisions a user: the account is deactivated (their
// console sessions end, the keys they own stop; the team's service-account
// keys are not theirs and go on), they leave every SCIM group and the
// memberships the group rules gave them, and SCIM no longer sees them
// (404). The account itself stays, for the request log's sake; a later
// POST for the address takes it over again.
func (s *Service) DeleteUser(ctx context.Context, id string) error {
	if _, err := s.GetUser(ctx, id); err != nil {
		return err
	}
	off := false
	if _, err := s.Auth.UpdateUser(ctx, id, auth.UpdateUserParams{Active: &off}); err != nil {
		return err
	}
	if _, err := s.Store.RemoveSCIMUserFromGroups(ctx, id, s.now()); err != nil {
		return err
	}
	if err := s.syncUser(ctx, id); err != nil {
		return err
	}
	if err := s.Store.DeleteSCIMUser(ctx, id); err != nil && !errors.Is(err, auth.ErrNotFound) {
		return err
	}
	s.log().Info("scim: user deprovisioned", "user", id)
	return nil
}

// syncUser makes the memberships SCIM gives a user match the group rules
// for the groups they are in now.
func (s *Service) syncUser(ctx context.Context, userID string) error {
	h := fnv.New32a()
	h.Write([]byte(userID))
	mu := &s.syncs[h.Sum32()%uint32(len(s.syncs))]
	mu.Lock()
	defer mu.Unlock()
	gs, err := s.Store.SCIMGroupsOfUser(ctx, userID)
	if err != nil {
		return err
	}
	names := make([]string, len(gs))
	for i, g := range gs {
		names[i] = g.DisplayName
	}
	changed, err := s.Auth.SyncGroups(ctx, userID, "scim", names, s.Rules)
	if err != nil {
		return fmt.Errorf("scim: group rules for user %s: %w", userID, err)
	}
	if changed {
		s.log().Info("scim: group rules applied", "user", userID, "groups", names)
	}
	return nil
}

// syncUsers runs syncUser for each of ids (once each).
func (s *Service) syncUsers(ctx context.Context, ids []string) error {
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if err := s.syncUser(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newGroupID returns "grp_" and 22 base62 characters from crypto/rand.
func newGroupID() string {
	b := make([]byte, 22)
	var buf [64]byte
	n := 0
	for n < len(b) {
		rand.Read(buf[:])
		for _, c := range buf {
			if c < 248 && n < len(b) { // 248 = 4·62: no modulo bias
				b[n] = base62[c%62]
				n++
			}
		}
	}
	return "grp_" + string(b)
}
