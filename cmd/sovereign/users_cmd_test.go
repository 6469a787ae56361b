package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/store"
)

// TestUsersCommand creates, lists, re-passwords and deactivates a user on
// a SQLite file, and checks what the database then holds.
func TestUsersCommand(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "s.db")
	run := func(stdin string, args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := usersCommand(ctx, append(args, "--database-url", db), strings.NewReader(stdin), &out, &errb)
		return out.String() + errb.String(), err
	}
	out, err := run("", "create", "--email", "Ops@Example.com", "--name", "Ops", "--team", "platform", "--role", "owner", "--instance-admin")
	if err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	pw := regexp.MustCompile(`(?m)^    ([A-Za-z0-9]{20})$`).FindStringSubmatch(out)
	if pw == nil || !strings.Contains(out, "Created team platform") || !strings.Contains(out, "owner in team platform, instance administrator") {
		t.Fatalf("create printed:\n%s", out)
	}
	if out, err := run("a long typed password\n", "create", "--email", "dev@example.com", "--team", "platform", "--password-stdin"); err != nil || strings.Contains(out, "shown once") {
		t.Fatalf("create from stdin: %v\n%s", err, out)
	}
	if out, err := run("", "create", "--email", "dev@example.com"); err == nil {
		t.Fatalf("a second user with the address: %s", out)
	}
	if out, err := run("", "create", "--email", "x@example.com", "--role", "emperor"); err == nil || !strings.Contains(err.Error(), "unknown role") {
		t.Fatalf("an unknown role: %v %s", err, out)
	}
	out, err = run("", "list")
	if err != nil || !strings.Contains(out, "ops@example.com") || !strings.Contains(out, "platform (owner), instance admin") || !strings.Contains(out, "platform (developer)") {
		t.Fatalf("list: %v\n%s", err, out)
	}

	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := auth.NewService(st)
	if _, err := svc.SignIn(ctx, "ops@example.com", pw[1]); err != nil {
		t.Fatalf("the printed password: %v", err)
	}
	if _, err := svc.SignIn(ctx, "dev@example.com", "a long typed password"); err != nil {
		t.Fatalf("the typed password: %v", err)
	}
	if out, err := run("a new long password\n", "password", "dev@example.com", "--password-stdin"); err != nil {
		t.Fatalf("password: %v\n%s", err, out)
	}
	if _, err := svc.SignIn(ctx, "dev@example.com", "a new long password"); err != nil {
		t.Fatalf("the new password: %v", err)
	}
	if out, err := run("", "deactivate", "dev@example.com"); err != nil || !strings.Contains(out, "Deactivated") {
		t.Fatalf("deactivate: %v\n%s", err, out)
	}
	if _, err := svc.SignIn(ctx, "dev@example.com", "a new long password"); err == nil {
		t.Fatal("a deactivated user signed in")
	}
	if out, err := run("", "activate", "nobody@example.com"); err == nil {
		t.Fatalf("activating an unknown user: %s", out)
	}
}
