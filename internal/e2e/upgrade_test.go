//go:build upgrade

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/schema"
	"github.com/sovereign-ai/sovereign/internal/storetest"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// previousBinary builds the previous release (internal/schema's
// previous_release.txt names its git revision) from `git archive` of that
// revision, as the Makefile builds this one, and keeps it in the user's
// cache by revision, so that only the first run pays for the build.
// SOVEREIGN_PREVIOUS_BIN names a binary to use instead.
func previousBinary(t *testing.T) (string, schema.Release) {
	t.Helper()
	prev, err := schema.PreviousRelease()
	if err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("SOVEREIGN_PREVIOUS_BIN"); p != "" {
		return p, prev
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, "sovereign", "upgrade", "sovereign-"+prev.Rev)
	if _, err := os.Stat(bin); err == nil {
		return bin, prev
	}
	began := time.Now()
	src := t.TempDir()
	run := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail(stderr.String(), 3000))
		}
		return string(out)
	}
	has := func() error {
		return exec.Command("git", "-C", testutil.RepoRoot(), "cat-file", "-e", prev.Rev+"^{commit}").Run()
	}
	if has() != nil {
		// A shallow clone (CI systems make them) lacks the revision:
		// fetch it from the clone's origin before giving up.
		exec.Command("git", "-C", testutil.RepoRoot(), "fetch", "--quiet", "origin", prev.Rev).Run()
		if has() != nil {
			exec.Command("git", "-C", testutil.RepoRoot(), "fetch", "--quiet", "--unshallow").Run()
		}
	}
	if err := has(); err != nil {
		t.Fatalf("the previous release's revision %s is not in this checkout (a shallow clone? `git fetch --unshallow`), "+
			"or set SOVEREIGN_PREVIOUS_BIN to a build of it: %v", prev.Rev, err)
	}
	// git archive reads the revision without touching the checkout.
	run(testutil.RepoRoot(), nil, "bash", "-c", fmt.Sprintf("git archive --format=tar %s | tar -x -C %q", prev.Rev, src))
	prefix := strings.TrimSpace(run(src, nil, "bash", "scripts/llama-cpp.sh", "build", "native"))
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := bin + ".tmp"
	run(src, []string{"CGO_ENABLED=1", "CGO_CPPFLAGS=-I" + prefix + "/include", "CGO_LDFLAGS=-L" + prefix + "/lib",
		"CGO_CFLAGS=-O3 -march=native", "CGO_CXXFLAGS=-O3 -march=native"},
		"go", "build", "-ldflags", "-X main.version=previous-"+prev.Rev[:12], "-o", tmp, "./cmd/sovereign")
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the previous release (%s) in %v", prev.Rev[:12], time.Since(began).Round(time.Second))
	return bin, prev
}

// TestUpgradeSideBySide is a rolling upgrade on one PostgreSQL, from the
// previous release (previous_release.txt) to this tree: the old release
// serves, `sovereign migrate` of the new one moves the schema (the Helm
// hook's step), the old server keeps serving and another old one starts
// on the migrated schema (a pod restarted mid-roll), the new release
// starts with --no-migrate, and a mixed workload — chat, keys, document
// uploads, workflow runs with approvals — runs across all of them, each
// thing made on one server used or read on another; then the old servers
// get SIGTERM (the roll's end) and the new one finishes what they left.
// Nothing may be lost: every call answered, every key works everywhere,
// every document ready and every run succeeded as seen from both
// releases, and the request log's chain, written by both, verifies.
func TestUpgradeSideBySide(t *testing.T) {
	began := time.Now()
	oldBin, prev := previousBinary(t)
	newBin := testutil.Binary(t)
	built := time.Now()
	dbURL := storetest.PostgresURL(t)
	modelsDir := defaultStore(t).Dir()
	admin := "sk-sov-" + strings.Repeat("Upgr4d3s", 5)

	old1 := startServer(t, oldBin, "old-1", dbURL, modelsDir, admin)
	team := old1.must(admin, "POST", "/v1/teams", map[string]any{"name": "upgrade"}, 201)["id"].(string)
	col := old1.must(admin, "POST", "/v1/collections", map[string]any{"name": "upgrade"}, 201)["id"].(string)
	wf := old1.must(admin, "POST", "/v1/workflows", map[string]any{"name": "upgrade", "definition": map[string]any{"steps": []any{
		map[string]any{"id": "ask", "type": "approval", "instructions": "go on?", "approvers": map[string]any{"scopes": []string{"approvals"}}, "timeout": "1h"},
		map[string]any{"id": "done", "type": "transform", "template": "done {{ input.n }}"},
	}}}, 201)["id"].(string)

	var keys, docs, runs []string
	n := 0
	work := func(r *replica) {
		t.Helper()
		n++
		chat := r.must(admin, "POST", "/v1/chat/completions", map[string]any{"model": "gemma3-270m", "max_tokens": 4,
			"messages": []any{map[string]any{"role": "user", "content": fmt.Sprintf("count to %d", n)}}}, 200)
		if ch, _ := chat["choices"].([]any); len(ch) != 1 {
			t.Fatalf("chat on %s: %v", r.base, chat)
		}
		keys = append(keys, r.must(admin, "POST", "/v1/keys", map[string]any{"name": fmt.Sprintf("k%d", n), "team_id": team,
			"scopes": []string{"inference"}}, 201)["key"].(string))
		docs = append(docs, r.must(admin, "POST", "/v1/collections/"+col+"/documents", map[string]any{"title": fmt.Sprintf("note %d", n),
			"text": fmt.Sprintf("Note %d. The ferry to the north island leaves at %d o'clock from pier %d.", n, 6+n, n)}, 202)["id"].(string))
		runs = append(runs, r.must(admin, "POST", "/v1/workflows/"+wf+"/runs", map[string]any{"input": map[string]any{"n": n}}, 201)["id"].(string))
	}
	work(old1)

	// The new release's migration, as the Helm hook Job runs it.
	out, rc := runMigrate(t, newBin, dbURL, "--check")
	if rc == 0 || !strings.Contains(out, "pending") {
		t.Fatalf("migrate --check before migrating: exit %d\n%s", rc, out)
	}
	out, rc = runMigrate(t, newBin, dbURL)
	if rc != 0 {
		t.Fatalf("migrate: exit %d\n%s", rc, out)
	}
	vs := regexp.MustCompile(`Application schema: +version (\d+)`).FindAllStringSubmatch(out, -1)
	if len(vs) != 2 || vs[0][1] != fmt.Sprint(prev.Highest["postgres"]) || vs[1][1] == vs[0][1] {
		t.Fatalf("migrate did not report the schema moving from the previous release's %d:\n%s", prev.Highest["postgres"], out)
	}
	t.Logf("migrated: application schema %s -> %s", vs[0][1], vs[1][1])
	if out, rc := runMigrate(t, newBin, dbURL, "--check"); rc != 0 {
		t.Fatalf("migrate --check after migrating: exit %d\n%s", rc, out)
	}

	// The old server serves on; another old one starts on the migrated
	// schema; the new one starts without migrating.
	work(old1)
	old2 := startServer(t, oldBin, "old-2", dbURL, modelsDir, admin)
	neu := startServer(t, newBin, "new-1", dbURL, modelsDir, admin, "SOVEREIGN_MIGRATE_ON_START=false")
	servers := []*replica{old1, old2, neu}
	for round := 0; round < 2; round++ {
		for _, r := range servers {
			work(r)
		}
	}
	// Every key works on every server; the approvals are given on a
	// server other than the one that started the run.
	for i, k := range keys {
		for _, r := range servers {
			if resp, body := r.do(k, "POST", "/v1/embeddings", map[string]any{"model": "all-minilm-l6-v2", "input": "k"}); resp.StatusCode != 200 {
				t.Fatalf("key %d on %s: %d %v", i, r.base, resp.StatusCode, body)
			}
		}
	}
	approved := map[string]bool{}
	for deadline := time.Now().Add(60 * time.Second); len(approved) < len(runs); time.Sleep(200 * time.Millisecond) {
		for i, r := range servers {
			for _, ap := range r.must(admin, "GET", "/v1/approvals?status=pending", nil, 200)["data"].([]any) {
				a := ap.(map[string]any)
				if id, _ := a["id"].(string); !approved[id] {
					servers[(i+1)%len(servers)].must(admin, "POST", "/v1/approvals/"+id, map[string]any{"decision": "approve"}, 200)
					approved[id] = true
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d approvals of %d runs appeared", len(approved), len(runs))
		}
	}

	// What each release made, the other one reads.
	for _, r := range servers {
		for _, d := range docs {
			r.must(admin, "GET", "/v1/collections/"+col+"/documents/"+d, nil, 200)
		}
		for _, id := range runs {
			r.must(admin, "GET", "/v1/workflow_runs/"+id, nil, 200)
		}
		listed := map[string]bool{}
		for _, k := range r.must(admin, "GET", "/v1/keys?limit=100", nil, 200)["data"].([]any) {
			listed[k.(map[string]any)["name"].(string)] = true
		}
		for i := 1; i <= n; i++ {
			if !listed[fmt.Sprintf("k%d", i)] {
				t.Errorf("key k%d is not listed by %s", i, r.base)
			}
		}
	}

	// The roll ends: the old servers get SIGTERM and hand their work back.
	old1.term()
	old2.term()
	neu2 := startServer(t, newBin, "new-2", dbURL, modelsDir, admin, "SOVEREIGN_MIGRATE_ON_START=false")
	for _, r := range []*replica{neu, neu2} {
		for _, d := range docs {
			upgradeWait(t, r, admin, "/v1/collections/"+col+"/documents/"+d, 90*time.Second, "ready")
		}
		for _, id := range runs {
			upgradeWait(t, r, admin, "/v1/workflow_runs/"+id, 90*time.Second, "succeeded")
		}
	}
	// The request log's hash chain, written by both releases, verifies.
	audit := exec.Command(newBin, "audit", "verify", "--database-url", dbURL)
	if b, err := audit.CombinedOutput(); err != nil {
		t.Fatalf("audit verify: %v\n%s", err, b)
	}
	t.Logf("%d rounds of work (chat, key, document, run) across the previous release (%s) and this one; build %v, run %v",
		n, prev.Rev[:12], built.Sub(began).Round(time.Second), time.Since(built).Round(time.Second))
}

// upgradeWait polls path on r until its status is want, failing on a
// final other status or after within.
func upgradeWait(t *testing.T, r *replica, key, path string, within time.Duration, want string) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(200 * time.Millisecond) {
		o := r.must(key, "GET", path, nil, 200)
		if o["status"] == want {
			return
		}
		if s := o["status"]; s == "failed" || s == "cancelled" || s == "expired" || time.Now().After(deadline) {
			t.Fatalf("%s on %s: %v", path, r.base, o)
		}
	}
}
