package scim

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// GroupView is a group with its members (nil when not asked for).
type GroupView struct {
	Group
	Members []Member
}

// groupState is what SCIM sets on a group.
type groupState struct {
	DisplayName, ExternalID string
	Members                 []string // user ids, in order, no repeats
	in                      map[string]bool
	// mentioned are the user ids the request named (added or removed),
	// and named counts member values against MaxPatchMembers (unless
	// unbounded: a whole resource's members, bounded by the body's size).
	mentioned []string
	named     int
	unbounded bool
}

func newGroupState(name, externalID string, members []string) groupState {
	g := groupState{DisplayName: name, ExternalID: externalID, in: map[string]bool{}}
	for _, id := range members {
		if !g.in[id] {
			g.in[id] = true
			g.Members = append(g.Members, id)
		}
	}
	return g
}

// clone returns a copy that shares nothing with g.
func (g groupState) clone() groupState {
	c := newGroupState(g.DisplayName, g.ExternalID, g.Members)
	c.mentioned, c.named, c.unbounded = slices.Clone(g.mentioned), g.named, g.unbounded
	return c
}

func (g *groupState) has(id string) bool { return g.in[id] }

func (g *groupState) add(id string) {
	g.mentioned = append(g.mentioned, id)
	if !g.in[id] {
		g.in[id] = true
		g.Members = append(g.Members, id)
	}
}

func (g *groupState) remove(ids ...string) {
	g.mentioned = append(g.mentioned, ids...)
	gone := map[string]bool{}
	for _, id := range ids {
		if g.in[id] {
			delete(g.in, id)
			gone[id] = true
		}
	}
	if len(gone) > 0 {
		g.Members = slices.DeleteFunc(g.Members, func(m string) bool { return gone[m] })
	}
}

// count counts n more member values named by the request.
func (g *groupState) count(n int) error {
	g.named += n
	if !g.unbounded && g.named > MaxPatchMembers {
		return invalidValue("at most %d members may be named in one request", MaxPatchMembers)
	}
	return nil
}

// memberIDs reads a members value: a list of {value[, display, $ref,
// type]} (a single object is taken as a list of one).
func (g *groupState) memberIDs(v any) ([]string, error) {
	var list []any
	switch e := v.(type) {
	case []any:
		list = e
	case map[string]any:
		list = []any{e}
	case nil:
		return nil, nil
	default:
		return nil, invalidValue("members must be a list of {\"value\": user id}")
	}
	if err := g.count(len(list)); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, invalidValue("members must be a list of {\"value\": user id}")
		}
		raw, _ := lookup(m, "value")
		id, err := asString("members.value", raw)
		if err != nil || id == "" {
			return nil, invalidValue("each member needs a value: the user's id")
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// patch applies one operation (op lower-cased) at p to the group.
func (g *groupState) patch(op string, p path, v any) error {
	if p.Ext {
		return nil
	}
	var err error
	switch p.Attr {
	case "displayname":
		if op == "remove" {
			return errorf(400, TypeMutability, "displayName is required and cannot be removed")
		}
		if g.DisplayName, err = asString("displayName", v); err != nil {
			return err
		}
		if strings.TrimSpace(g.DisplayName) == "" {
			return invalidValue("displayName must not be empty")
		}
	case "externalid":
		if op == "remove" {
			g.ExternalID = ""
			return nil
		}
		g.ExternalID, err = asString("externalId", v)
		return err
	case "members":
		if p.Sub != "" {
			return errorf(400, TypeInvalidPath, "members' sub-attributes cannot be changed: add or remove members by value")
		}
		if p.Filter != nil {
			// members[value eq "user_…"] (Okta's remove).
			if p.Filter.Attr != "value" {
				return errorf(400, TypeInvalidPath, "a members filter must be [value eq \"user id\"]")
			}
			id, ok := p.Filter.Value.(string)
			if !ok {
				return errorf(400, TypeInvalidPath, "a members filter's value must be a string")
			}
			if err := g.count(1); err != nil {
				return err
			}
			g.remove(id)
			if op == "remove" {
				return nil
			}
			op = "add" // replace members[value eq x] with value: x leaves, value's join
		}
		ids, err := g.memberIDs(v)
		if err != nil {
			return err
		}
		switch op {
		case "add":
			for _, id := range ids {
				g.add(id)
			}
		case "replace":
			g.mentioned = append(g.mentioned, g.Members...)
			g.Members, g.in = nil, map[string]bool{}
			for _, id := range ids {
				g.add(id)
			}
		case "remove":
			if v == nil { // every member
				g.mentioned = append(g.mentioned, g.Members...)
				g.Members, g.in = nil, map[string]bool{}
			}
			g.remove(ids...)
		}
	}
	return nil
}

// groupFromResource reads a Group resource (POST, PUT): displayName is
// required, members are what is sent (absent: none), externalId is kept
// when absent.
func groupFromResource(m map[string]any, base groupState) (groupState, error) {
	g := newGroupState("", base.ExternalID, nil)
	g.mentioned = slices.Clone(base.Members)
	v, _ := lookup(m, "displayName")
	if err := g.patch("replace", path{Attr: "displayname"}, v); err != nil {
		return g, err
	}
	if v, ok := lookup(m, "externalId"); ok {
		if err := g.patch("replace", path{Attr: "externalid"}, v); err != nil {
			return g, err
		}
	}
	if v, ok := lookup(m, "members"); ok && v != nil {
		g.unbounded = true
		if err := g.patch("add", path{Attr: "members"}, v); err != nil {
			return g, err
		}
	}
	return g, checkGroup(g)
}

func checkGroup(g groupState) error {
	if len(g.DisplayName) > maxString || len(g.ExternalID) > maxString {
		return invalidValue("displayName and externalId must be at most %d bytes", maxString)
	}
	return nil
}

// GetGroup returns a group, with its members when withMembers. Errors:
// 404.
func (s *Service) GetGroup(ctx context.Context, id string, withMembers bool) (GroupView, error) {
	g, err := s.Store.GetSCIMGroup(ctx, id)
	if errors.Is(err, auth.ErrNotFound) {
		return GroupView{}, notFound("no group %q", id)
	}
	if err != nil {
		return GroupView{}, err
	}
	return s.groupView(ctx, g, withMembers)
}

func (s *Service) groupView(ctx context.Context, g Group, withMembers bool) (GroupView, error) {
	v := GroupView{Group: g}
	if withMembers {
		ms, err := s.Store.ListSCIMMembers(ctx, g.ID)
		if err != nil {
			return GroupView{}, err
		}
		v.Members = ms
	}
	return v, nil
}

// ListGroups returns a page (startIndex from 1) of the groups filter
// selects (displayName, externalId or id with eq), and their total.
func (s *Service) ListGroups(ctx context.Context, filter string, startIndex, count int, withMembers bool) ([]GroupView, int, error) {
	var f GroupFilter
	if strings.TrimSpace(filter) != "" {
		attr, v, err := filterOf(filter, "displayname", "externalid", "id")
		if err != nil {
			return nil, 0, err
		}
		switch attr {
		case "displayname":
			f.DisplayName = v
		case "externalid":
			f.ExternalID = v
		case "id":
			f.ID = v
		}
	}
	gs, total, err := s.Store.ListSCIMGroups(ctx, f, startIndex-1, count)
	if err != nil {
		return nil, 0, err
	}
	out := make([]GroupView, 0, len(gs))
	for _, g := range gs {
		v, err := s.groupView(ctx, g, withMembers)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, v)
	}
	return out, total, nil
}

// checkMembers refuses ids that are not SCIM users (400).
func (s *Service) checkMembers(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	linked, err := s.Store.LinkedSCIMUsers(ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if !linked[id] {
			return invalidValue("member %q is not a user provisioned by SCIM", id)
		}
	}
	return nil
}

// CreateGroup makes a group from a Group resource; its members' roles
// follow the group rules at once.
func (s *Service) CreateGroup(ctx context.Context, m map[string]any) (GroupView, error) {
	g, err := groupFromResource(m, newGroupState("", "", nil))
	if err != nil {
		return GroupView{}, err
	}
	if err := s.checkMembers(ctx, g.Members); err != nil {
		return GroupView{}, err
	}
	now := s.now()
	grp := Group{ID: newGroupID(), DisplayName: g.DisplayName, ExternalID: g.ExternalID, CreatedAt: now, UpdatedAt: now}
	if err := s.Store.CreateSCIMGroup(ctx, grp, g.Members); err != nil {
		if errors.Is(err, auth.ErrConflict) {
			return GroupView{}, conflict("a group with displayName %q exists", g.DisplayName)
		}
		return GroupView{}, err
	}
	if err := s.syncUsers(ctx, g.Members); err != nil {
		return GroupView{}, err
	}
	s.log().Info("scim: group created", "group", grp.ID, "name", grp.DisplayName, "members", len(g.Members))
	return s.GetGroup(ctx, grp.ID, true)
}

// ReplaceGroup replaces a group from a Group resource (PUT).
func (s *Service) ReplaceGroup(ctx context.Context, id string, m map[string]any) (GroupView, error) {
	cur, base, err := s.groupState(ctx, id)
	if err != nil {
		return GroupView{}, err
	}
	g, err := groupFromResource(m, base)
	if err != nil {
		return GroupView{}, err
	}
	return s.storeGroup(ctx, cur, base, g)
}

// PatchGroup applies PATCH operations to a group: members added and
// removed, a new displayName or externalId. Every user the request names
// has their roles brought in line with the group rules, also when the
// change was already made (a provider's retry).
func (s *Service) PatchGroup(ctx context.Context, id string, ops []Operation) (GroupView, error) {
	cur, base, err := s.groupState(ctx, id)
	if err != nil {
		return GroupView{}, err
	}
	g := base.clone()
	if err := applyOps(ops, func(op string, p path, v any) error { return g.patch(op, p, v) }); err != nil {
		return GroupView{}, err
	}
	if err := checkGroup(g); err != nil {
		return GroupView{}, err
	}
	return s.storeGroup(ctx, cur, base, g)
}

func (s *Service) groupState(ctx context.Context, id string) (Group, groupState, error) {
	v, err := s.GetGroup(ctx, id, true)
	if err != nil {
		return Group{}, groupState{}, err
	}
	ids := make([]string, len(v.Members))
	for i, m := range v.Members {
		ids[i] = m.UserID
	}
	return v.Group, newGroupState(v.DisplayName, v.ExternalID, ids), nil
}

// storeGroup writes a group's new state as the difference from old, then
// brings the roles of every user concerned in line with the group rules.
func (s *Service) storeGroup(ctx context.Context, cur Group, old, g groupState) (GroupView, error) {
	var added, removed []string
	for _, id := range g.Members {
		if !old.has(id) {
			added = append(added, id)
		}
	}
	for _, id := range old.Members {
		if !g.has(id) {
			removed = append(removed, id)
		}
	}
	if err := s.checkMembers(ctx, added); err != nil {
		return GroupView{}, err
	}
	now := s.now()
	renamed := g.DisplayName != cur.DisplayName
	if renamed || g.ExternalID != cur.ExternalID {
		up := cur
		up.DisplayName, up.ExternalID, up.UpdatedAt = g.DisplayName, g.ExternalID, now
		if err := s.Store.UpdateSCIMGroup(ctx, up); err != nil {
			if errors.Is(err, auth.ErrConflict) {
				return GroupView{}, conflict("a group with displayName %q exists", g.DisplayName)
			}
			return GroupView{}, err
		}
	}
	if len(added) > 0 {
		if err := s.Store.AddSCIMMembers(ctx, cur.ID, added, now); err != nil {
			return GroupView{}, err
		}
	}
	if len(removed) > 0 {
		if err := s.Store.RemoveSCIMMembers(ctx, cur.ID, removed, now); err != nil {
			return GroupView{}, err
		}
	}
	// Who to bring in line: everyone whose groups changed, and every user
	// the request named (so that a retried request repairs what a failed
	// one left), or, after a rename, every member old and new.
	affected := append(append(slices.Clone(added), removed...), g.mentioned...)
	if renamed {
		affected = append(append(affected, old.Members...), g.Members...)
	}
	linked, err := s.Store.LinkedSCIMUsers(ctx, uniq(affected))
	if err != nil {
		return GroupView{}, err
	}
	var sync []string
	for _, id := range uniq(affected) {
		if linked[id] {
			sync = append(sync, id)
		}
	}
	if err := s.syncUsers(ctx, sync); err != nil {
		return GroupView{}, err
	}
	if len(added)+len(removed) > 0 || renamed {
		s.log().Info("scim: group changed", "group", cur.ID, "name", g.DisplayName, "added", len(added), "removed", len(removed))
	}
	return s.GetGroup(ctx, cur.ID, true)
}

// DeleteGroup removes a group; its members lose what the group rules
// gave them for it.
func (s *Service) DeleteGroup(ctx context.Context, id string) error {
	v, err := s.GetGroup(ctx, id, true)
	if err != nil {
		return err
	}
	if err := s.Store.DeleteSCIMGroup(ctx, id); err != nil && !errors.Is(err, auth.ErrNotFound) {
		return err
	}
	ids := make([]string, len(v.Members))
	for i, m := range v.Members {
		ids[i] = m.UserID
	}
	if err := s.syncUsers(ctx, ids); err != nil {
		return err
	}
	s.log().Info("scim: group deleted", "group", id, "name", v.DisplayName, "members", len(ids))
	return nil
}

// uniq returns ids without repeats, in first-seen order.
func uniq(ids []string) []string {
	seen := map[string]bool{}
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
