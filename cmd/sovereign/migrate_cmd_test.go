package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMigrateCommand: --check on a new database fails naming `sovereign
// migrate` and changes nothing; migrate prints the versions before and
// after and brings both schemas up to date; --check then passes, and a
// second migrate has nothing to do.
func TestMigrateCommand(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "s.db")
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := migrateCommand(ctx, append([]string{"--database-url", db}, args...), &out, &errOut)
		return out.String() + errOut.String(), err
	}
	out, err := run("--check")
	if !errors.Is(err, errPending) || !strings.Contains(err.Error(), "sovereign migrate") {
		t.Fatalf("--check on a new database: %v\n%s", err, out)
	}
	if out, err = run("--check"); !errors.Is(err, errPending) {
		t.Fatalf("--check changed the database: %v\n%s", err, out)
	}
	out, err = run()
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	for _, want := range []string{"Application schema:    version 0 ", "Durable engine schema: version 0 ", "pending", "Migrated in"} {
		if !strings.Contains(out, want) {
			t.Errorf("migrate's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "Application schema:") != 2 || !strings.Contains(out, "; up to date)") {
		t.Errorf("migrate does not print the versions after:\n%s", out)
	}
	if out, err = run("--check"); err != nil || !strings.Contains(out, "Up to date") {
		t.Fatalf("--check after migrating: %v\n%s", err, out)
	}
	if out, err = run(); err != nil || !strings.Contains(out, "nothing to migrate") {
		t.Fatalf("migrate again: %v\n%s", err, out)
	}
}

// TestMigrateWaitsThenFails: a database that does not answer is waited
// for, with a line per attempt, and then reported, not hung on.
func TestMigrateWaitsThenFails(t *testing.T) {
	var out bytes.Buffer
	began := time.Now()
	err := migrateCommand(context.Background(), []string{"--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1", "--wait", "3s"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "did not answer within 3s") {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
	if took := time.Since(began); took < 3*time.Second || took > 20*time.Second {
		t.Errorf("gave up after %v, want about 3 s", took)
	}
	if !strings.Contains(out.String(), "Waiting for the database (attempt 1") {
		t.Errorf("no progress line:\n%s", out.String())
	}
}
