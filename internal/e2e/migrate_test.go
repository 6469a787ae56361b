package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// startServer runs `bin serve` on the database dbURL (limits in memory).
func startServer(t *testing.T, bin, name, dbURL, modelsDir, key string, env ...string) *replica {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(append(os.Environ(),
		"SOVEREIGN_ADDR="+addr, "SOVEREIGN_DATA_DIR="+t.TempDir(), "SOVEREIGN_MODELS_DIR="+modelsDir,
		"SOVEREIGN_DATABASE_URL="+dbURL, "SOVEREIGN_BOOTSTRAP_KEY="+key, "SOVEREIGN_INSTANCE_ID="+name,
		"SOVEREIGN_THREADS=1", "SOVEREIGN_CTX=512", "SOVEREIGN_SLOTS=2", "SOVEREIGN_CONFIG="), env...)
	logs := &bytes.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{t: t, base: "http://" + addr, logs: logs, cmd: cmd}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("server %s (%s) log:\n%s", name, filepath.Base(bin), tail(logs.String(), 3000))
		}
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(r.base + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return r
			}
		}
		if cmd.ProcessState != nil || time.Now().After(deadline) {
			t.Fatalf("server %s never became ready: %v\n%s", name, err, logs.String())
		}
	}
}

// runMigrate runs `bin migrate args...` on dbURL and returns its output and
// exit status.
func runMigrate(t *testing.T, bin, dbURL string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"migrate", "--database-url", dbURL, "--wait", "20s"}, args...)...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// TestServeNoMigrate: serve with migrate_on_start false refuses a
// database whose migrations are not applied, naming `sovereign migrate`,
// and changes nothing in it; after `sovereign migrate` it starts and
// serves.
func TestServeNoMigrate(t *testing.T) {
	bin := testutil.Binary(t)
	db := filepath.Join(t.TempDir(), "s.db")
	modelsDir := tinyStore(t, "tiny").Dir()
	key := "sk-sov-" + strings.Repeat("N0M1gr4t", 5)

	cmd := exec.Command(bin, "serve", "--no-migrate")
	cmd.Env = append(os.Environ(), "SOVEREIGN_ADDR="+freeAddr(t), "SOVEREIGN_DATA_DIR="+t.TempDir(),
		"SOVEREIGN_MODELS_DIR="+modelsDir, "SOVEREIGN_DATABASE_URL="+db, "SOVEREIGN_CONFIG=")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve --no-migrate on an unmigrated database is still running after 30 s")
	}
	if err == nil || !strings.Contains(string(out), "sovereign migrate") || !strings.Contains(string(out), "behind this release") {
		t.Fatalf("serve --no-migrate on an unmigrated database: %v\n%s", err, out)
	}
	if o, rc := runMigrate(t, bin, db, "--check"); rc == 0 {
		t.Fatalf("serve --no-migrate migrated the database:\n%s", o)
	}
	if o, rc := runMigrate(t, bin, db); rc != 0 {
		t.Fatalf("migrate: exit %d\n%s", rc, o)
	}
	r := startServer(t, bin, "no-migrate", db, modelsDir, key, "SOVEREIGN_MIGRATE_ON_START=false")
	r.must(key, "POST", "/v1/keys", map[string]any{"name": "after-migrate", "scopes": []string{"inference"}}, 201)
}
