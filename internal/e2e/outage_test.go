package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/limits/limitstest"
	"github.com/sovereign-ai/sovereign/internal/storetest"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// ownService is a PostgreSQL or Redis server of the test's own, made by
// scripts/postgres-test.sh or scripts/redis-test.sh in a directory of its
// own, which the test may pause (PostgreSQL: `pg_ctl -m fast stop`, its
// sessions ended with 57P01 and new connections refused) and start again
// on the same port. It is deleted when the test ends.
type ownService struct {
	t      *testing.T
	script string
	dir    string
	url    string
}

// startOwnPostgres and startOwnRedis start an ownService.
func startOwnPostgres(t *testing.T) *ownService {
	t.Helper()
	if os.Getenv(storetest.PostgresEnv) == "skip" {
		t.Skipf("%s=skip", storetest.PostgresEnv)
	}
	return startOwn(t, "postgres-test.sh")
}

func startOwnRedis(t *testing.T) *ownService {
	t.Helper()
	if os.Getenv(limitstest.RedisEnv) == "skip" {
		t.Skipf("%s=skip", limitstest.RedisEnv)
	}
	return startOwn(t, "redis-test.sh")
}

func startOwn(t *testing.T, script string) *ownService {
	t.Helper()
	// Under the system's temporary directory, not t.TempDir(): as root,
	// PostgreSQL runs as the postgres user, who must reach its directory
	// through the parents.
	parent, err := os.MkdirTemp("", "sovereign-own-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(parent, 0o755)
	s := &ownService{t: t, script: filepath.Join(testutil.RepoRoot(), "scripts", script), dir: filepath.Join(parent, "srv")}
	t.Cleanup(func() {
		if _, err := s.run("stop"); err != nil {
			t.Logf("stopping the test's %s: %v", script, err)
		}
		os.RemoveAll(parent)
	})
	s.start()
	return s
}

// run runs the script's cmd and returns what it printed.
func (s *ownService) run(cmd string) (string, error) {
	var stderr bytes.Buffer
	c := exec.Command("bash", s.script, cmd, s.dir)
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", filepath.Base(s.script), cmd, err, stderr.String())
	}
	return string(out), nil
}

// start starts the server (the first start creates it) and waits until it
// accepts connections; it comes back on the same port.
func (s *ownService) start() {
	s.t.Helper()
	out, err := s.run("start")
	if err != nil {
		s.t.Fatal(err)
	}
	_, url, ok := strings.Cut(strings.TrimSpace(out), "=")
	if !ok {
		s.t.Fatalf("%s printed %q", filepath.Base(s.script), out)
	}
	url = strings.Trim(url, "'")
	if s.url != "" && url != s.url {
		s.t.Fatalf("the server came back at %s, not %s", url, s.url)
	}
	s.url = url
}

// stop stops the server, keeping its directory for the next start.
func (s *ownService) stop() {
	s.t.Helper()
	if _, err := s.run("pause"); err != nil {
		s.t.Fatal(err)
	}
}

// stream sends a streamed chat request and returns the status, the
// Retry-After header and the body (the SSE text or an error envelope).
func (r *replica) stream(key, model string) (int, string, string) {
	r.t.Helper()
	b, _ := json.Marshal(map[string]any{"model": model, "stream": true, "max_tokens": 4,
		"messages": []map[string]string{{"role": "user", "content": "hello"}}})
	req, _ := http.NewRequest("POST", r.base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
}

// TestDatabaseOutage stops the server's PostgreSQL (fast shutdown) under
// a running `sovereign serve`: a key used before the stop still gets
// chat completions, plain and streamed, from the key cache's outage
// grace; a key not used before, and routes that need the database, get
// 503 database_unavailable with Retry-After (a streamed request too,
// before its first byte), never a 401 or a 500; /readyz is 503 naming
// the database. Once PostgreSQL is back, everything answers 200 again.
func TestDatabaseOutage(t *testing.T) {
	pg := startOwnPostgres(t)
	admin := "sk-sov-" + strings.Repeat("0utage5x", 5)
	r := startReplica(t, pg.url, "", tinyStore(t, "tiny").Dir(), admin)
	teams := r.must(admin, "GET", "/v1/teams", nil, 200)["data"].([]any)
	team := teams[0].(map[string]any)["id"]
	unused := r.must(admin, "POST", "/v1/keys", map[string]any{"name": "unused", "team_id": team, "scopes": []string{"inference"}}, 201)["key"].(string)
	chat := map[string]any{"model": "tiny", "max_tokens": 4, "messages": []map[string]string{{"role": "user", "content": "hello"}}}
	r.must(admin, "POST", "/v1/chat/completions", chat, 200) // loads the model
	browser := consoleSignIn(t, r, admin)

	pg.stop()
	// Past the key cache's TTL (2 s): the key is read again, and the
	// database is gone.
	time.Sleep(2100 * time.Millisecond)
	wantDown := func(what string, status int, retryAfter string, body map[string]any) {
		t.Helper()
		if status != 503 || errCode(body) != "database_unavailable" || retryAfter == "" {
			t.Errorf("%s during the outage: %d %v Retry-After %q; want 503 database_unavailable with Retry-After", what, status, body, retryAfter)
		}
	}
	if resp, out := r.do(admin, "POST", "/v1/chat/completions", chat); resp.StatusCode != 200 {
		t.Errorf("chat with a key used before the outage: %d %v", resp.StatusCode, out)
	}
	if status, _, body := r.stream(admin, "tiny"); status != 200 || !strings.Contains(body, "data: [DONE]") {
		t.Errorf("streamed chat with a key used before the outage: %d %s", status, body)
	}
	for _, path := range []string{"/v1/keys", "/v1/logs", "/v1/files"} {
		resp, out := r.do(admin, "GET", path, nil)
		wantDown("GET "+path, resp.StatusCode, resp.Header.Get("Retry-After"), out)
	}
	resp, out := r.do(unused, "POST", "/v1/chat/completions", chat)
	wantDown("chat with a key not used before", resp.StatusCode, resp.Header.Get("Retry-After"), out)
	status, retry, body := r.stream(unused, "tiny")
	var env map[string]any
	json.Unmarshal([]byte(body), &env)
	wantDown("streamed chat with a key not used before", status, retry, env)
	// The console says so too, rather than showing a 500.
	if resp, err := browser.Get(r.base + "/console/"); err != nil {
		t.Error(err)
	} else {
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(page), "The database is unavailable right now") {
			t.Errorf("the console during the outage: %d Retry-After %q\n%s", resp.StatusCode, resp.Header.Get("Retry-After"), tail(string(page), 1500))
		}
	}
	resp, out = r.do("", "GET", "/readyz", nil)
	if checks, _ := out["checks"].(map[string]any); resp.StatusCode != 503 || out["status"] != "not_ready" || checks["database"] != "unavailable" {
		t.Errorf("/readyz during the outage: %d %v", resp.StatusCode, out)
	}

	pg.start()
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, _ := r.do("", "GET", "/readyz", nil)
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz never answered 200 after PostgreSQL came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.must(admin, "GET", "/v1/keys", nil, 200)
	r.must(admin, "GET", "/v1/logs", nil, 200)
	r.must(admin, "GET", "/v1/files", nil, 200)
	r.must(unused, "POST", "/v1/chat/completions", chat, 200)
	if status, _, body := r.stream(unused, "tiny"); status != 200 || !strings.Contains(body, "data: [DONE]") {
		t.Errorf("streamed chat after the outage: %d %s", status, body)
	}
}

// consoleSignIn signs in to r's console with key as a browser does and
// returns the browser (its cookie jar holds the session; it does not
// follow redirects).
func consoleSignIn(t *testing.T, r *replica, key string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(r.base + "/console/signin")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf_token on the sign-in page:\n%s", page)
	}
	// A person signs in (the key sign-in is a break-glass, off by
	// default): an instance administrator made with the admin key.
	email := fmt.Sprintf("operator-%d@example.com", time.Now().UnixNano())
	r.must(key, "POST", "/v1/users", map[string]any{"email": email, "password": "the operator's password", "instance_admin": true}, 201)
	resp, err = c.PostForm(r.base+"/console/signin", url.Values{"csrf_token": {string(m[1])}, "email": {email}, "password": {"the operator's password"}, "next": {"/console/"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("console sign-in: %d", resp.StatusCode)
	}
	return c
}

// TestReadyzReportsRedis: /readyz checks Redis when limits are kept there.
// With Redis down, a replica whose limits fail open is degraded (200,
// still ready) and one whose limits fail closed is not ready (503); both
// name Redis in checks and reason, and the database is still ok.
func TestReadyzReportsRedis(t *testing.T) {
	rd := startOwnRedis(t)
	redisURL := rd.url
	admin := "sk-sov-" + strings.Repeat("r3d1sR3dy", 5)
	models := tinyStore(t).Dir()
	db := func() string { return filepath.Join(t.TempDir(), "sovereign.db") }
	open := startReplica(t, db(), redisURL, models, admin, "SOVEREIGN_LIMITS_FAIL_OPEN=true")
	closed := startReplica(t, db(), redisURL, models, admin, "SOVEREIGN_LIMITS_FAIL_OPEN=false")
	for _, r := range []*replica{open, closed} {
		out := r.must("", "GET", "/readyz", nil, 200)
		if checks, _ := out["checks"].(map[string]any); out["status"] != "ready" || checks["database"] != "ok" || checks["redis"] != "ok" {
			t.Fatalf("/readyz with Redis up: %v", out)
		}
	}
	rd.stop()
	for _, c := range []struct {
		r      *replica
		status int
		want   string
	}{{open, 200, "degraded"}, {closed, 503, "not_ready"}} {
		resp, out := c.r.do("", "GET", "/readyz", nil)
		checks, _ := out["checks"].(map[string]any)
		reason, _ := out["reason"].(string)
		if resp.StatusCode != c.status || out["status"] != c.want || checks["database"] != "ok" || checks["redis"] != "unavailable" || !strings.HasPrefix(reason, "redis: ") {
			t.Errorf("/readyz with Redis down: %d %v, want %d %s", resp.StatusCode, out, c.status, c.want)
		}
	}
}
