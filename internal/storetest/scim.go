package storetest

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/scim"
)

// testSCIM checks scim.Store: links of users (unique userName
// case-insensitively, only for existing users, read with the account's
// address, name and active), groups (unique displayName
// case-insensitively), members (only linked users; adding and removing
// skip what is there or not; memberships go with the link and with the
// group), filters, pages and totals, and UTC times to the microsecond.
func testSCIM(t *testing.T, ks auth.KeyStore) {
	ctx := context.Background()
	s, ok := ks.(scim.Store)
	if !ok {
		t.Fatalf("%T does not implement scim.Store", ks)
	}
	us := ks.(auth.UserStore)
	tokyo := time.FixedZone("JST", 9*3600)
	mkUser := func(id, email string, created time.Time) {
		t.Helper()
		if err := us.CreateUser(ctx, auth.User{ID: id, Email: email, Name: "Name of " + id, Active: true, CreatedAt: created}); err != nil {
			t.Fatal(err)
		}
	}
	link := func(id, userName, ext string, created time.Time) scim.User {
		return scim.User{ID: id, UserName: userName, ExternalID: ext, GivenName: "G" + id, FamilyName: "F" + id, Formatted: "Fmt",
			DisplayName: "D" + id, CreatedAt: created, UpdatedAt: created}
	}
	mkUser("user_a", "ada@example.com", at(0))
	mkUser("user_b", "bob@example.com", at(0))
	mkUser("user_c", "cy@example.com", at(0))
	mkUser("user_z", "zed@example.com", at(0)) // never linked

	a := link("user_a", "Ada@Example.com", "ext-a", at(time.Second).In(tokyo))
	if err := s.CreateSCIMUser(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSCIMUser(ctx, link("user_b", "bob", "", at(2*time.Second))); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSCIMUser(ctx, link("user_c", "cy@example.com", "ext-c", at(2*time.Second))); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "linking a user twice", s.CreateSCIMUser(ctx, link("user_a", "other", "", at(0))), auth.ErrConflict)
	wantErr(t, "a userName in use, in other case", s.CreateSCIMUser(ctx, link("user_z", "ADA@example.COM", "", at(0))), auth.ErrConflict)
	wantErr(t, "linking no user", s.CreateSCIMUser(ctx, link("user_none", "none", "", at(0))), auth.ErrNotFound)

	got, err := s.GetSCIMUser(ctx, "user_a")
	if err != nil {
		t.Fatal(err)
	}
	want := a
	want.CreatedAt, want.UpdatedAt = a.CreatedAt.UTC(), a.UpdatedAt.UTC()
	want.Email, want.Name, want.Active = "ada@example.com", "Name of user_a", true
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GetSCIMUser:\n got %+v\nwant %+v", got, want)
	}
	if got.CreatedAt.Location() != time.UTC || got.CreatedAt.Nanosecond() != 535897000 {
		t.Errorf("created_at %v: not UTC to the microsecond", got.CreatedAt)
	}
	_, err = s.GetSCIMUser(ctx, "user_z")
	wantErr(t, "an unlinked user", err, auth.ErrNotFound)

	// The account's standing is read with the link.
	off := false
	if err := us.UpdateUser(ctx, "user_a", auth.UserUpdate{Active: &off}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSCIMUser(ctx, "user_a"); got.Active {
		t.Error("a deactivated account reads as active")
	}

	// Update: fields, and userName uniqueness.
	up := got
	up.UserName, up.ExternalID, up.GivenName, up.DisplayName, up.UpdatedAt = "ada.l@example.com", "ext-a2", "Augusta", "", at(time.Hour)
	if err := s.UpdateSCIMUser(ctx, up); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetSCIMUser(ctx, "user_a"); got.UserName != "ada.l@example.com" || got.ExternalID != "ext-a2" || got.GivenName != "Augusta" ||
		got.DisplayName != "" || got.FamilyName != "Fuser_a" || !got.UpdatedAt.Equal(at(time.Hour)) || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Errorf("after update: %+v", got)
	}
	clash := up
	clash.UserName = "BOB"
	wantErr(t, "renaming onto another's userName", s.UpdateSCIMUser(ctx, clash), auth.ErrConflict)
	wantErr(t, "updating an unlinked user", s.UpdateSCIMUser(ctx, link("user_z", "z", "", at(0))), auth.ErrNotFound)

	// Lists: filters, order, pages, totals.
	ids := func(f scim.UserFilter, offset, limit int) (string, int) {
		t.Helper()
		l, n, err := s.ListSCIMUsers(ctx, f, offset, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, u := range l {
			out = append(out, u.ID)
		}
		return strings.Join(out, ","), n
	}
	for _, c := range []struct {
		f     scim.UserFilter
		off   int
		lim   int
		want  string
		total int
	}{
		{scim.UserFilter{}, 0, 10, "user_a,user_b,user_c", 3},
		{scim.UserFilter{}, 1, 1, "user_b", 3},
		{scim.UserFilter{}, 3, 10, "", 3},
		{scim.UserFilter{}, 0, 0, "", 3},
		{scim.UserFilter{UserName: "ADA.L@example.com"}, 0, 10, "user_a", 1},
		{scim.UserFilter{UserName: "ada@example.com"}, 0, 10, "", 0},
		{scim.UserFilter{ExternalID: "ext-c"}, 0, 10, "user_c", 1},
		{scim.UserFilter{ExternalID: "EXT-C"}, 0, 10, "", 0},
		{scim.UserFilter{Email: "Bob@Example.com"}, 0, 10, "user_b", 1},
		{scim.UserFilter{Email: "zed@example.com"}, 0, 10, "", 0},
		{scim.UserFilter{ID: "user_c"}, 0, 10, "user_c", 1},
	} {
		if got, n := ids(c.f, c.off, c.lim); got != c.want || n != c.total {
			t.Errorf("ListSCIMUsers(%+v, %d, %d) = %q, %d; want %q, %d", c.f, c.off, c.lim, got, n, c.want, c.total)
		}
	}
	linked, err := s.LinkedSCIMUsers(ctx, []string{"user_a", "user_z", "user_none", "user_c"})
	if err != nil || !reflect.DeepEqual(linked, map[string]bool{"user_a": true, "user_c": true}) {
		t.Errorf("LinkedSCIMUsers = %v, %v", linked, err)
	}

	// Groups.
	g1 := scim.Group{ID: "grp_1", DisplayName: "ml-research", ExternalID: "e1", CreatedAt: at(time.Minute), UpdatedAt: at(time.Minute)}
	if err := s.CreateSCIMGroup(ctx, g1, []string{"user_a", "user_b"}); err != nil {
		t.Fatal(err)
	}
	g2 := scim.Group{ID: "grp_2", DisplayName: "ops", CreatedAt: at(2 * time.Minute), UpdatedAt: at(2 * time.Minute)}
	if err := s.CreateSCIMGroup(ctx, g2, nil); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "a displayName in use, in other case", s.CreateSCIMGroup(ctx, scim.Group{ID: "grp_3", DisplayName: "ML-Research",
		CreatedAt: at(0), UpdatedAt: at(0)}, nil), auth.ErrConflict)
	wantErr(t, "a group with an unlinked member", s.CreateSCIMGroup(ctx, scim.Group{ID: "grp_4", DisplayName: "four",
		CreatedAt: at(0), UpdatedAt: at(0)}, []string{"user_c", "user_z"}), auth.ErrNotFound)
	_, err = s.GetSCIMGroup(ctx, "grp_4")
	wantErr(t, "the refused group is not half made", err, auth.ErrNotFound)
	if gg, err := s.GetSCIMGroup(ctx, "grp_1"); err != nil || !reflect.DeepEqual(gg, g1) {
		t.Errorf("GetSCIMGroup = %+v, %v; want %+v", gg, err, g1)
	}
	members := func(id string) string {
		t.Helper()
		ms, err := s.ListSCIMMembers(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.UserID+"="+m.Email)
		}
		return strings.Join(out, ",")
	}
	if m := members("grp_1"); m != "user_a=ada@example.com,user_b=bob@example.com" {
		t.Errorf("members of grp_1: %s", m)
	}
	// Adding and removing skip what is there or not, and stamp the group.
	if err := s.AddSCIMMembers(ctx, "grp_1", []string{"user_b", "user_c"}, at(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if m := members("grp_1"); m != "user_a=ada@example.com,user_b=bob@example.com,user_c=cy@example.com" {
		t.Errorf("members after add: %s", m)
	}
	if gg, _ := s.GetSCIMGroup(ctx, "grp_1"); !gg.UpdatedAt.Equal(at(3 * time.Minute)) {
		t.Errorf("lastModified after add: %v", gg.UpdatedAt)
	}
	wantErr(t, "adding an unlinked user", s.AddSCIMMembers(ctx, "grp_1", []string{"user_z"}, at(0)), auth.ErrNotFound)
	wantErr(t, "adding to no group", s.AddSCIMMembers(ctx, "grp_none", []string{"user_a"}, at(0)), auth.ErrNotFound)
	if err := s.RemoveSCIMMembers(ctx, "grp_1", []string{"user_a", "user_z"}, at(4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if m := members("grp_1"); m != "user_b=bob@example.com,user_c=cy@example.com" {
		t.Errorf("members after remove: %s", m)
	}
	wantErr(t, "removing from no group", s.RemoveSCIMMembers(ctx, "grp_none", []string{"user_a"}, at(0)), auth.ErrNotFound)
	if err := s.AddSCIMMembers(ctx, "grp_2", []string{"user_b"}, at(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	groupsOf := func(id string) string {
		t.Helper()
		gs, err := s.SCIMGroupsOfUser(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, g := range gs {
			out = append(out, g.DisplayName)
		}
		return strings.Join(out, ",")
	}
	if g := groupsOf("user_b"); g != "ml-research,ops" {
		t.Errorf("groups of user_b: %s", g)
	}
	if g := groupsOf("user_a"); g != "" {
		t.Errorf("groups of user_a: %s", g)
	}

	// Rename, uniqueness, lists.
	r := g2
	r.DisplayName, r.ExternalID, r.UpdatedAt = "Operations", "e2", at(6*time.Minute)
	if err := s.UpdateSCIMGroup(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.DisplayName = "ML-RESEARCH"
	wantErr(t, "renaming onto another's displayName", s.UpdateSCIMGroup(ctx, r), auth.ErrConflict)
	wantErr(t, "updating no group", s.UpdateSCIMGroup(ctx, scim.Group{ID: "grp_none", DisplayName: "x", UpdatedAt: at(0)}), auth.ErrNotFound)
	gids := func(f scim.GroupFilter, offset, limit int) (string, int) {
		t.Helper()
		l, n, err := s.ListSCIMGroups(ctx, f, offset, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, g := range l {
			out = append(out, g.ID+"="+g.DisplayName)
		}
		return strings.Join(out, ","), n
	}
	for _, c := range []struct {
		f     scim.GroupFilter
		off   int
		lim   int
		want  string
		total int
	}{
		{scim.GroupFilter{}, 0, 10, "grp_1=ml-research,grp_2=Operations", 2},
		{scim.GroupFilter{}, 1, 10, "grp_2=Operations", 2},
		{scim.GroupFilter{DisplayName: "operations"}, 0, 10, "grp_2=Operations", 1},
		{scim.GroupFilter{ExternalID: "e1"}, 0, 10, "grp_1=ml-research", 1},
		{scim.GroupFilter{ID: "grp_2"}, 0, 10, "grp_2=Operations", 1},
		{scim.GroupFilter{DisplayName: "nobody"}, 0, 10, "", 0},
	} {
		if got, n := gids(c.f, c.off, c.lim); got != c.want || n != c.total {
			t.Errorf("ListSCIMGroups(%+v, %d, %d) = %q, %d; want %q, %d", c.f, c.off, c.lim, got, n, c.want, c.total)
		}
	}

	// Leaving every group at once; memberships go with the link and with
	// the group.
	left, err := s.RemoveSCIMUserFromGroups(ctx, "user_b", at(7*time.Minute))
	if err != nil || strings.Join(left, ",") != "grp_1,grp_2" {
		t.Errorf("RemoveSCIMUserFromGroups = %v, %v", left, err)
	}
	if g := groupsOf("user_b"); g != "" {
		t.Errorf("groups of user_b after leaving all: %s", g)
	}
	if gg, _ := s.GetSCIMGroup(ctx, "grp_2"); !gg.UpdatedAt.Equal(at(7 * time.Minute)) {
		t.Errorf("lastModified after a member left: %v", gg.UpdatedAt)
	}
	if left, err := s.RemoveSCIMUserFromGroups(ctx, "user_b", at(8*time.Minute)); err != nil || len(left) != 0 {
		t.Errorf("leaving no group = %v, %v", left, err)
	}
	if err := s.DeleteSCIMUser(ctx, "user_c"); err != nil {
		t.Fatal(err)
	}
	if m := members("grp_1"); m != "" {
		t.Errorf("an unlinked user is still a member: %s", m)
	}
	_, err = s.GetSCIMUser(ctx, "user_c")
	wantErr(t, "an unlinked user", err, auth.ErrNotFound)
	if _, err := us.GetUser(ctx, "user_c"); err != nil {
		t.Errorf("unlinking removed the account: %v", err)
	}
	wantErr(t, "unlinking again", s.DeleteSCIMUser(ctx, "user_c"), auth.ErrNotFound)
	if err := s.AddSCIMMembers(ctx, "grp_1", []string{"user_a"}, at(9*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSCIMGroup(ctx, "grp_1"); err != nil {
		t.Fatal(err)
	}
	if g := groupsOf("user_a"); g != "" {
		t.Errorf("a deleted group's member: %s", g)
	}
	wantErr(t, "deleting again", s.DeleteSCIMGroup(ctx, "grp_1"), auth.ErrNotFound)
	if ms, err := s.ListSCIMMembers(ctx, "grp_1"); err != nil || len(ms) != 0 {
		t.Errorf("members of a deleted group: %v, %v", ms, err)
	}
	// A linked account can be relinked after unlinking (a later POST).
	if err := s.CreateSCIMUser(ctx, link("user_c", "cy@example.com", "", at(10*time.Minute))); err != nil {
		t.Errorf("relinking: %v", err)
	}
	if _, err := s.GetSCIMUser(ctx, "user_c"); errors.Is(err, auth.ErrNotFound) {
		t.Error("the relinked user is not found")
	}
}
