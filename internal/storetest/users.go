package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
)

// testUsers checks users, memberships and the standing a user's key is
// read with (auth.Owner), in the store and through auth.Service.
func testUsers(t *testing.T, ks auth.KeyStore) {
	ctx := context.Background()
	s := ks.(auth.UserStore)
	now := time.Now().UTC()
	svc := auth.NewService(ks)
	svc.Now = func() time.Time { return now }
	var ended []string
	svc.EndSessions = func(_ context.Context, keyID string) error { ended = append(ended, keyID); return nil }

	research, err := svc.CreateTeam(ctx, "research")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := svc.CreateTeam(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	ada, err := svc.CreateUser(ctx, auth.CreateUserParams{Email: " Ada@Example.COM ", Name: "Ada", Password: "correct horse battery",
		Memberships: []auth.Membership{{TeamID: research.ID, Role: auth.RoleDeveloper}}})
	if err != nil {
		t.Fatal(err)
	}
	if ada.Email != "ada@example.com" || !ada.Active || ada.PasswordHash == "" || ada.PasswordHash == "correct horse battery" {
		t.Fatalf("created user = %+v", ada)
	}
	if _, err := svc.CreateUser(ctx, auth.CreateUserParams{Email: "ADA@example.com"}); !errors.Is(err, auth.ErrConflict) {
		t.Errorf("second user with the same address: %v, want ErrConflict", err)
	}
	for _, bad := range []auth.CreateUserParams{{Email: "not an address"}, {Email: "b@example.com", Password: "short"},
		{Email: "c@example.com", Memberships: []auth.Membership{{TeamID: research.ID, Role: "emperor"}}},
		{Email: "d@example.com", Memberships: []auth.Membership{{TeamID: "team_none", Role: auth.RoleViewer}}}} {
		if _, err := svc.CreateUser(ctx, bad); err == nil {
			t.Errorf("CreateUser(%+v) succeeded", bad)
		}
	}
	got, err := s.GetUserByEmail(ctx, "ada@example.com")
	if err != nil || got.ID != ada.ID || !got.CreatedAt.Equal(ada.CreatedAt.Truncate(time.Microsecond)) {
		t.Fatalf("GetUserByEmail = %+v, %v", got, err)
	}
	if _, err := s.GetUser(ctx, "user_none"); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("GetUser(unknown) = %v", err)
	}

	// Memberships: put, change, list both ways.
	if _, err := svc.SetMembership(ctx, ada.ID, ops.ID, auth.RoleViewer, ""); err != nil {
		t.Fatal(err)
	}
	ms, err := svc.Memberships(ctx, ada.ID)
	if err != nil || len(ms) != 2 {
		t.Fatalf("Memberships = %+v, %v", ms, err)
	}
	if members, err := svc.TeamMembers(ctx, ops.ID); err != nil || len(members) != 1 || members[0].Role != auth.RoleViewer || members[0].Source != "api" {
		t.Fatalf("TeamMembers(ops) = %+v, %v", members, err)
	}
	if users, err := svc.ListUsers(ctx, research.ID); err != nil || len(users) != 1 || users[0].ID != ada.ID {
		t.Fatalf("ListUsers(research) = %+v, %v", users, err)
	}
	if _, err := svc.SetMembership(ctx, ada.ID, "team_none", auth.RoleViewer, ""); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("membership of an unknown team: %v", err)
	}

	// A user's own key: within the role, and read with the owner's standing.
	if _, _, err := svc.CreateKey(ctx, auth.CreateKeyParams{TeamID: research.ID, Scopes: []auth.Scope{auth.ScopeAdmin},
		Kind: auth.KindUser, OwnerUserID: ada.ID}); err == nil {
		t.Error("a developer's key with admin was created")
	}
	if _, _, err := svc.CreateKey(ctx, auth.CreateKeyParams{TeamID: ops.ID, Scopes: []auth.Scope{auth.ScopeInference},
		Kind: auth.KindUser, OwnerUserID: ada.ID}); err == nil {
		t.Error("a viewer's key with inference was created")
	}
	k, secret, err := svc.CreateKey(ctx, auth.CreateKeyParams{Name: "notebook", TeamID: research.ID,
		Scopes: []auth.Scope{auth.ScopeInference, auth.ScopeRecordsRead}, Kind: auth.KindUser, OwnerUserID: ada.ID})
	if err != nil {
		t.Fatal(err)
	}
	svc.CacheTTL = -1
	read, err := svc.Authenticate(ctx, secret)
	if err != nil || read.Kind != auth.KindUser || read.OwnerUserID != ada.ID || read.Owner == nil ||
		read.Owner.Role != auth.RoleDeveloper || !read.Owner.Active || !auth.HasScope(read, auth.ScopeInference) {
		t.Fatalf("Authenticate(user key) = %+v (owner %+v), %v", read, read.Owner, err)
	}
	sess, err := svc.SessionKey(ctx, ada.ID, research.ID, now.Add(time.Hour))
	if err != nil || sess.Kind != auth.KindSession || !auth.HasScope(sess, auth.ScopeWorkflows) || auth.HasScope(sess, auth.ScopeAdmin) {
		t.Fatalf("SessionKey = %+v, %v", sess, err)
	}
	if keys, err := svc.ListKeys(ctx, research.ID); err != nil || len(keys) != 1 || keys[0].ID != k.ID {
		t.Errorf("ListKeys(research) = %+v, %v; want the user's key, not the session's", keys, err)
	}
	if keys, err := s.ListKeysOfUser(ctx, ada.ID); err != nil || len(keys) != 2 {
		t.Errorf("ListKeysOfUser = %d keys, %v; want 2", len(keys), err)
	}

	// A lower role applies to the key at once; leaving the team stops it
	// and ends the sessions; so does deactivation.
	if _, err := svc.SetMembership(ctx, ada.ID, research.ID, auth.RoleViewer, ""); err != nil {
		t.Fatal(err)
	}
	if read, err = svc.Authenticate(ctx, secret); err != nil || auth.HasScope(read, auth.ScopeInference) || !auth.HasScope(read, auth.ScopeRecordsRead) {
		t.Fatalf("as a viewer: inference=%v records=%v err=%v", auth.HasScope(read, auth.ScopeInference), auth.HasScope(read, auth.ScopeRecordsRead), err)
	}
	if err := svc.RemoveMembership(ctx, ada.ID, research.ID); err != nil {
		t.Fatal(err)
	}
	if read, err = svc.GetKey(ctx, k.ID); err != nil || read.Active(now) {
		t.Fatalf("the key of a user who left its team: active=%v err=%v", read.Active(now), err)
	}
	if len(ended) != 2 {
		t.Errorf("sessions ended on leaving the team: %v, want both keys'", ended)
	}
	if err := svc.RemoveMembership(ctx, ada.ID, research.ID); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("removing a membership twice: %v", err)
	}
	if _, err := svc.SetMembership(ctx, ada.ID, research.ID, auth.RoleDeveloper, "scim"); err != nil {
		t.Fatal(err)
	}
	if read, err = svc.GetKey(ctx, k.ID); err != nil || !read.Active(now) {
		t.Fatalf("back in the team: active=%v err=%v", read.Active(now), err)
	}
	if _, err := svc.UpdateUser(ctx, ada.ID, auth.UpdateUserParams{Active: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if read, err = svc.GetKey(ctx, k.ID); err != nil || read.Active(now) || auth.HasScope(read, auth.ScopeRecordsRead) {
		t.Fatalf("the key of a deactivated user: active=%v err=%v", read.Active(now), err)
	}
	if _, err := svc.SignIn(ctx, "ada@example.com", "correct horse battery"); !errors.Is(err, auth.ErrSignIn) {
		t.Errorf("a deactivated user signed in: %v", err)
	}
	if _, err := svc.UpdateUser(ctx, ada.ID, auth.UpdateUserParams{Active: ptr(true)}); err != nil {
		t.Fatal(err)
	}

	// Password sign-in: success stamps the time; LockAfter failures lock
	// (concurrent guesses each count), even the right password then fails.
	if u, err := svc.SignIn(ctx, "ADA@example.com", "correct horse battery"); err != nil || u.LastLoginAt == nil {
		t.Fatalf("SignIn = %+v, %v", u, err)
	}
	if _, err := svc.SignIn(ctx, "nobody@example.com", "correct horse battery"); !errors.Is(err, auth.ErrSignIn) {
		t.Errorf("unknown address: %v", err)
	}
	var wg sync.WaitGroup
	for range auth.LockAfter - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := svc.SignIn(ctx, "ada@example.com", "wrong horse battery"); !errors.Is(err, auth.ErrSignIn) {
				t.Errorf("wrong password: %v", err)
			}
		}()
	}
	wg.Wait()
	if u, _ := s.GetUser(ctx, ada.ID); u.FailedLogins != auth.LockAfter-1 || u.LockedUntil != nil {
		t.Fatalf("after %d failures: count %d, locked %v", auth.LockAfter-1, u.FailedLogins, u.LockedUntil)
	}
	if _, err := svc.SignIn(ctx, "ada@example.com", "wrong horse battery"); !errors.Is(err, auth.ErrSignIn) {
		t.Fatal(err)
	}
	if _, err := svc.SignIn(ctx, "ada@example.com", "correct horse battery"); !errors.Is(err, auth.ErrSignIn) {
		t.Errorf("the right password while locked: %v", err)
	}
	now = now.Add(auth.LockFor)
	if _, err := svc.SignIn(ctx, "ada@example.com", "correct horse battery"); err != nil {
		t.Errorf("after the lock: %v", err)
	}
	if u, _ := s.GetUser(ctx, ada.ID); u.FailedLogins != 0 || u.LockedUntil != nil {
		t.Errorf("after a success: count %d, locked %v", u.FailedLogins, u.LockedUntil)
	}

	// An instance administrator's session holds admin in any team.
	root, err := svc.CreateUser(ctx, auth.CreateUserParams{Email: "root@example.com", InstanceAdmin: true})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := svc.SessionKey(ctx, root.ID, ops.ID, now.Add(time.Hour))
	if err != nil || !auth.HasScope(rs, auth.ScopeAdmin) {
		t.Fatalf("instance admin's session: %+v, %v", rs, err)
	}
	if _, err := svc.SessionKey(ctx, ada.ID, "team_none", now.Add(time.Hour)); err == nil {
		t.Error("a session in a team the user is not in")
	}
}

// testInvitations checks invitations through auth.Service on the store:
// a link used once, expired, revoked; a single sign-on identity linked
// once.
func testInvitations(t *testing.T, ks auth.KeyStore) {
	ctx := context.Background()
	now := time.Now().UTC()
	svc := auth.NewService(ks)
	svc.Now = func() time.Time { return now }
	team, err := svc.CreateTeam(ctx, "research")
	if err != nil {
		t.Fatal(err)
	}
	inv, token, err := svc.Invite(ctx, auth.Key{ID: "key_admin"}, "New@Example.com", team.ID, auth.RoleViewer, time.Hour)
	if err != nil || inv.Email != "new@example.com" || token == "" {
		t.Fatalf("Invite = %+v, %q, %v", inv, token, err)
	}
	if _, _, err := svc.Invite(ctx, auth.Key{}, "x@example.com", "team_none", auth.RoleViewer, 0); err == nil {
		t.Error("an invitation to no team")
	}
	got, err := svc.Invitation(ctx, token)
	if err != nil || got.ID != inv.ID || got.Role != auth.RoleViewer || got.InvitedBy != "key_admin" {
		t.Fatalf("Invitation = %+v, %v", got, err)
	}
	if _, err := svc.Invitation(ctx, token+"x"); !errors.Is(err, auth.ErrInvitation) {
		t.Errorf("a wrong token: %v", err)
	}
	u, err := svc.AcceptInvitation(ctx, token, "New Person", "a long enough password")
	if err != nil {
		t.Fatal(err)
	}
	if ms, _ := svc.Memberships(ctx, u.ID); len(ms) != 1 || ms[0].Source != "invitation" || ms[0].Role != auth.RoleViewer {
		t.Errorf("memberships after accepting: %+v", ms)
	}
	if _, err := svc.AcceptInvitation(ctx, token, "", "a long enough password"); !errors.Is(err, auth.ErrInvitation) {
		t.Errorf("a used link: %v", err)
	}
	list, err := svc.ListInvitations(ctx, team.ID)
	if err != nil || len(list) != 1 || list[0].AcceptedAt == nil || list[0].UserID != u.ID {
		t.Fatalf("ListInvitations = %+v, %v", list, err)
	}
	_, late, err := svc.Invite(ctx, auth.Key{}, "late@example.com", team.ID, auth.RoleViewer, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := svc.Invitation(ctx, late); !errors.Is(err, auth.ErrInvitation) {
		t.Errorf("an expired link: %v", err)
	}
	if err := svc.RevokeInvitation(ctx, list[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := svc.RevokeInvitation(ctx, list[0].ID); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("revoking twice: %v", err)
	}

	// Single sign-on: made at first sign-in, found again by subject after
	// the provider changes the address, groups into memberships.
	rules := []auth.GroupRule{{Group: "g", Team: "made by a rule", Role: auth.RoleDeveloper}}
	first, err := svc.SignInExternal(ctx, auth.ExternalIdentity{Provider: "idp", Subject: "s-1", Email: "sso@example.com", Name: "S", Groups: []string{"g"}}, rules)
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.SignInExternal(ctx, auth.ExternalIdentity{Provider: "idp", Subject: "s-1", Email: "renamed@example.com", Groups: nil}, rules)
	if err != nil || again.ID != first.ID || again.Email != "renamed@example.com" {
		t.Fatalf("second sign-in = %+v, %v", again, err)
	}
	if ms, _ := svc.Memberships(ctx, first.ID); len(ms) != 0 {
		t.Errorf("memberships after the group left: %+v", ms)
	}
	if err := ks.(auth.UserStore).LinkIdentity(ctx, "idp", "s-1", u.ID, now); !errors.Is(err, auth.ErrConflict) {
		t.Errorf("linking a subject twice: %v", err)
	}
}

// testTwoStep checks a password sign-in's second step on the store: the
// challenge, its attempts, a code used once.
func testTwoStep(t *testing.T, ks auth.KeyStore) {
	ctx := context.Background()
	now := time.Unix(1234567890, 0).UTC() // RFC 6238's vector: code 005924 for this key
	svc := auth.NewService(ks)
	svc.Now = func() time.Time { return now }
	u, err := svc.CreateUser(ctx, auth.CreateUserParams{Email: "kim@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	secret := "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ" // base32 of "12345678901234567890"
	if err := ks.(auth.UserStore).UpdateUser(ctx, u.ID, auth.UserUpdate{TOTPSecret: &secret}); err != nil {
		t.Fatal(err)
	}
	u, _ = svc.GetUser(ctx, u.ID)
	token, err := svc.BeginSecondStep(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.FinishSecondStep(ctx, token, "111111"); !errors.Is(err, auth.ErrCode) {
		t.Fatalf("a wrong code: %v", err)
	}
	if got, err := svc.FinishSecondStep(ctx, token, "005924"); err != nil || got.ID != u.ID {
		t.Fatalf("the right code: %+v, %v", got, err)
	}
	if _, err := svc.FinishSecondStep(ctx, token, "005924"); !errors.Is(err, auth.ErrSignIn) {
		t.Errorf("a finished challenge again: %v", err)
	}
	token, _ = svc.BeginSecondStep(ctx, u)
	if _, err := svc.FinishSecondStep(ctx, token, "005924"); !errors.Is(err, auth.ErrCode) {
		t.Errorf("a code used twice: %v", err)
	}
	for range auth.ChallengeAttempts {
		_, _ = svc.FinishSecondStep(ctx, token, "000000")
	}
	if _, err := svc.FinishSecondStep(ctx, token, "005924"); !errors.Is(err, auth.ErrSignIn) {
		t.Errorf("after too many attempts: %v", err)
	}
}
