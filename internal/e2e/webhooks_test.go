package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/storetest"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// The webhook tests run `sovereign serve` with outbound_allow naming
// 127.0.0.2 only — the receivers listen there — so that 127.0.0.1, the
// rest of loopback and every private range stay refused, as in
// production.

// pythonVenv installs dir/requirements.txt into dir/.venv when missing or
// stale (scripts/python-venv.sh, which `make test` also runs) and returns
// its python.
func pythonVenv(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("bash", "scripts/python-venv.sh", dir)
	cmd.Dir = testutil.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("installing %s's Python packages: %v\n%s", dir, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// pyReceiver is tests/webhooks/receiver.py: it verifies every message
// with the official Standard Webhooks library for Python and processes
// each webhook-id once.
type pyReceiver struct {
	t    *testing.T
	base string
}

// recvPath is what the receiver recorded for one path.
type recvPath struct {
	Processed map[string]struct {
		ID   string         `json:"id"`
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	} `json:"processed"`
	Attempts   map[string]int `json:"attempts"`
	Duplicates map[string]int `json:"duplicates"`
	Conflicts  []string       `json:"conflicts"`
	Rejected   int            `json:"rejected"`
	Rejections []string       `json:"rejections"`
	Signatures map[string]int `json:"signatures"`
	Last       *struct {
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	} `json:"last"`
}

func startPyReceiver(t *testing.T) *pyReceiver {
	t.Helper()
	py := pythonVenv(t, "tests/webhooks")
	cmd := exec.Command(py, filepath.Join(testutil.RepoRoot(), "tests", "webhooks", "receiver.py"), "--host", "127.0.0.2")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("receiver's stderr:\n%s", tail(stderr.String(), 3000))
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	var port int
	if _, serr := fmt.Sscanf(line, "PORT %d", &port); err != nil || serr != nil {
		t.Fatalf("the receiver did not start: %q %v\n%s", line, err, stderr.String())
	}
	return &pyReceiver{t: t, base: fmt.Sprintf("http://127.0.0.2:%d", port)}
}

func (r *pyReceiver) configure(paths map[string]any) {
	r.t.Helper()
	b, _ := json.Marshal(map[string]any{"paths": paths})
	resp, err := http.Post(r.base+"/_control/config", "application/json", bytes.NewReader(b))
	if err != nil || resp.StatusCode != 200 {
		r.t.Fatalf("configuring the receiver: %v %v", resp, err)
	}
	resp.Body.Close()
}

func (r *pyReceiver) state() map[string]recvPath {
	r.t.Helper()
	resp, err := http.Get(r.base + "/_control/state")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var st map[string]recvPath
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		r.t.Fatal(err)
	}
	return st
}

// post sends a message straight to the receiver, as an attacker or a
// replay would.
func (r *pyReceiver) post(path string, header map[string]string, body string) int {
	r.t.Helper()
	req, _ := http.NewRequest("POST", r.base+path, strings.NewReader(body))
	for k, v := range header {
		if strings.HasPrefix(strings.ToLower(k), "webhook-") || strings.EqualFold(k, "content-type") {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// serverConfig writes a YAML configuration file for `sovereign serve`
// that allows outbound calls to 127.0.0.2 alone.
func serverConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sovereign.yaml")
	if err := os.WriteFile(path, []byte("outbound_allow:\n  - 127.0.0.2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// received lists what path processed: "type:subject" words (a run's id, a
// document's id, a model's id).
func received(p recvPath) map[string]string {
	out := map[string]string{}
	for msg, ev := range p.Processed {
		subject := ""
		for _, k := range []string{"run_id", "model"} {
			if v, ok := ev.Data[k].(string); ok {
				subject = v
			}
		}
		if ev.Type == "document.ready" || strings.HasPrefix(ev.Type, "batch.") {
			subject, _ = ev.Data["id"].(string)
		}
		out[ev.Type+":"+subject] = msg
	}
	return out
}

// TestWebhooksDeliverAtLeastOnce runs webhooks through `sovereign serve`
// to a receiver that verifies every signature with the official Python
// library. The receiver fails the first two attempts of every run's
// message; the server is killed (SIGKILL) while those retries are pending
// and started again. In the end every event the test caused — the runs'
// workflow.run.succeeded, the document's document.ready, the embedding
// model's model.ready — was received, each webhook-id processed once;
// another team's webhook got the deployment's event and none of the
// team's; a tampered body is rejected; a redelivery carries the same
// webhook-id; a rotated secret signs beside the new one.
func TestWebhooksDeliverAtLeastOnce(t *testing.T) {
	modelsDir := defaultStore(t).Dir()
	rc := startPyReceiver(t)
	cfg := serverConfig(t)
	// SQLite, or PostgreSQL on the suite's second run (there the restarted
	// server has another instance id: it takes the killed one's
	// deliveries over once that one's heartbeat is stale).
	dbURL := filepath.Join(t.TempDir(), "sovereign.db")
	if os.Getenv("SOVEREIGN_TEST_DB") == "postgres" {
		dbURL = storetest.PostgresURL(t)
	}
	admin := "sk-sov-" + strings.Repeat("W3bh00kz", 5)
	srv := startReplica(t, dbURL, "", modelsDir, admin, "SOVEREIGN_CONFIG="+cfg)

	teamA := srv.must(admin, "POST", "/v1/teams", map[string]any{"name": "hooks"}, 201)["id"].(string)
	keyA := srv.must(admin, "POST", "/v1/keys", map[string]any{"name": "a", "team_id": teamA,
		"scopes": []string{"inference", "workflows", "webhooks", "records:read"}}, 201)["key"].(string)
	teamB := srv.must(admin, "POST", "/v1/teams", map[string]any{"name": "bystanders"}, 201)["id"].(string)
	keyB := srv.must(admin, "POST", "/v1/keys", map[string]any{"name": "b", "team_id": teamB, "scopes": []string{"webhooks"}}, 201)["key"].(string)

	// "*" includes audit events, which need records:read.
	if resp, out := srv.do(keyB, "POST", "/v1/webhooks", map[string]any{"url": rc.base + "/b", "events": []string{"*"}}); resp.StatusCode != 403 {
		t.Fatalf("* without records:read: %d %v", resp.StatusCode, out)
	}
	whA := srv.must(keyA, "POST", "/v1/webhooks", map[string]any{"url": rc.base + "/a", "description": "e2e",
		"events": []string{"workflow.run.succeeded", "document.ready", "model.ready"}}, 201)
	whB := srv.must(keyB, "POST", "/v1/webhooks", map[string]any{"url": rc.base + "/b",
		"events": []string{"model.ready", "workflow.run.succeeded", "document.ready"}}, 201)
	idA, secretA := whA["id"].(string), whA["secret"].(string)
	if !strings.HasPrefix(secretA, "whsec_") || whA["enabled"] != true {
		t.Fatalf("created %v", whA)
	}
	if got := srv.must(keyA, "GET", "/v1/webhooks/"+idA, nil, 200); got["secret"] != nil || got["url"] != rc.base+"/a" {
		t.Fatalf("retrieved %v: the secret is shown once", got)
	}
	if resp, _ := srv.do(keyB, "GET", "/v1/webhooks/"+idA, nil); resp.StatusCode != 404 {
		t.Fatalf("another team's webhook: %d", resp.StatusCode)
	}
	rc.configure(map[string]any{
		"/a": map[string]any{"secrets": []string{secretA}, "fail_first": 2, "fail_types": []string{"workflow.run.succeeded"}},
		"/b": map[string]any{"secrets": []string{whB["secret"].(string)}},
	})

	wf := srv.must(keyA, "POST", "/v1/workflows", map[string]any{"name": "greet", "definition": map[string]any{
		"steps": []any{map[string]any{"id": "hello", "type": "transform", "template": "hello {{ input.name }}"}}}}, 201)["id"].(string)
	run := func(r *replica) string {
		id := r.must(keyA, "POST", "/v1/workflows/"+wf+"/runs", map[string]any{"input": map[string]any{"name": "hooks"}}, 201)["id"].(string)
		waitRun(t, r, keyA, id, time.Minute, "succeeded")
		return id
	}
	runs := []string{run(srv), run(srv)}
	col := srv.must(keyA, "POST", "/v1/collections", map[string]any{"name": "hooked"}, 201)["id"].(string)
	doc := srv.must(keyA, "POST", "/v1/collections/"+col+"/documents", map[string]any{"title": "note",
		"text": "Webhooks are signed the Standard Webhooks way and delivered at least once."}, 202)["id"].(string)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if d := srv.must(keyA, "GET", "/v1/collections/"+col+"/documents/"+doc, nil, 200); d["status"] == "ready" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("document %v", d)
		}
	}

	// Both runs' messages were refused once (forced failures) and wait
	// for their retry: kill the server now.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st := rc.state()["/a"]
		failing := 0
		for msg, n := range st.Attempts {
			if _, done := st.Processed[msg]; !done && n >= 1 {
				failing++
			}
		}
		if failing >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runs' first attempts never came: %+v", st)
		}
	}
	srv.kill()
	t.Log("killed the server with deliveries pending; starting it again")
	srv = startReplica(t, dbURL, "", modelsDir, admin, "SOVEREIGN_CONFIG="+cfg)
	runs = append(runs, run(srv))

	want := []string{"document.ready:" + doc, "model.ready:all-minilm-l6-v2"}
	for _, r := range runs {
		want = append(want, "workflow.run.succeeded:"+r)
	}
	var st map[string]recvPath
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		st = rc.state()
		got := received(st["/a"])
		missing := []string{}
		for _, w := range want {
			if got[w] == "" {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never received %v; received %v", missing, got)
		}
	}
	a := st["/a"]
	if a.Rejected != 0 || len(a.Conflicts) != 0 {
		t.Fatalf("rejected %d (%v), conflicts %v", a.Rejected, a.Rejections, a.Conflicts)
	}
	// One webhook-id per event: no event was processed twice under two
	// ids.
	seen := map[string]string{}
	for msg, ev := range a.Processed {
		if other, dup := seen[ev.ID]; dup {
			t.Fatalf("event %s processed as %s and %s", ev.ID, other, msg)
		}
		seen[ev.ID] = msg
	}
	dups := 0
	for _, n := range a.Duplicates {
		dups += n
	}
	t.Logf("team A's receiver processed %d messages once each (%d duplicates acknowledged)", len(a.Processed), dups)
	// The other team's webhook got the deployment's event only.
	for _, ev := range st["/b"].Processed {
		if ev.Type != "model.ready" {
			t.Fatalf("team B's webhook received %s %v", ev.Type, ev.Data)
		}
	}
	if len(st["/b"].Processed) == 0 || st["/b"].Rejected != 0 {
		t.Fatalf("team B's receiver: %+v", st["/b"])
	}

	// The delivery log: a run's delivery failed twice, then succeeded.
	msgRun0 := received(a)["workflow.run.succeeded:"+runs[0]]
	var delivery map[string]any
	for _, d := range srv.must(keyA, "GET", "/v1/webhooks/"+idA+"/deliveries?limit=100", nil, 200)["data"].([]any) {
		if d := d.(map[string]any); d["message_id"] == msgRun0 {
			delivery = d
		}
	}
	if delivery == nil || delivery["status"] != "succeeded" || delivery["event_type"] != "workflow.run.succeeded" {
		t.Fatalf("delivery of %s: %v", msgRun0, delivery)
	}
	full := srv.must(keyA, "GET", "/v1/webhooks/"+idA+"/deliveries/"+delivery["id"].(string), nil, 200)
	attempts := full["attempts"].([]any)
	first, last := attempts[0].(map[string]any), attempts[len(attempts)-1].(map[string]any)
	if len(attempts) < 3 || first["status_code"] != 500.0 || last["status_code"] != 200.0 || full["attempt_count"] != float64(len(attempts)) {
		t.Fatalf("attempts %v", full)
	}

	// A tampered body is rejected by the receiver; the genuine message,
	// replayed, is acknowledged as a duplicate and not processed again.
	if a.Last == nil {
		t.Fatal("no message recorded")
	}
	tampered := strings.Replace(a.Last.Body, `"object":"event"`, `"object":"evil"`, 1)
	if tampered == a.Last.Body {
		t.Fatalf("body %s", a.Last.Body)
	}
	if code := rc.post("/a", a.Last.Headers, tampered); code != 400 {
		t.Fatalf("tampered body: %d", code)
	}
	if code := rc.post("/a", a.Last.Headers, a.Last.Body); code != 200 {
		t.Fatalf("replayed message: %d", code)
	}
	if st := rc.state()["/a"]; st.Rejected != 1 || len(st.Processed) != len(a.Processed) {
		t.Fatalf("after the tampered and replayed messages: rejected %d, processed %d (was %d)", st.Rejected, len(st.Processed), len(a.Processed))
	}

	// A redelivery carries the same webhook-id: the receiver dedupes it.
	before := rc.state()["/a"].Duplicates[msgRun0]
	re := srv.must(keyA, "POST", "/v1/webhooks/"+idA+"/deliveries/"+delivery["id"].(string)+"/redeliver", nil, 202)
	if re["message_id"] != msgRun0 || re["redelivery_of"] != delivery["id"] || re["id"] == delivery["id"] {
		t.Fatalf("redelivery %v", re)
	}
	for deadline := time.Now().Add(30 * time.Second); rc.state()["/a"].Duplicates[msgRun0] <= before; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the redelivery never arrived")
		}
	}

	// Rotation: the old and the new secret both sign during the grace
	// period; a receiver requiring both verifies the next message.
	rotated := srv.must(keyA, "POST", "/v1/webhooks/"+idA+"/rotate_secret", map[string]any{"grace_period_seconds": 3600}, 200)
	newSecret, _ := rotated["secret"].(string)
	if !strings.HasPrefix(newSecret, "whsec_") || newSecret == secretA || rotated["previous_secret_expires_at"] == nil {
		t.Fatalf("rotated %v", rotated)
	}
	rc.configure(map[string]any{
		"/a": map[string]any{"secrets": []string{secretA, newSecret}, "require_all": true},
		"/b": map[string]any{"secrets": []string{whB["secret"].(string)}},
	})
	r4 := run(srv)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st := rc.state()["/a"]
		if msg := received(st)["workflow.run.succeeded:"+r4]; msg != "" {
			if st.Signatures[msg] != 2 || st.Rejected != 1 {
				t.Fatalf("after the rotation: %d signatures, %d rejected", st.Signatures[msg], st.Rejected)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no message after the rotation")
		}
	}
}

// TestWebhookTargetsRefused: webhooks on 127.0.0.1, 10/8, the cloud
// metadata address and a name resolving to loopback are refused when
// saved, with the reason; one on an allowed address that redirects to
// loopback is saved, and its delivery is refused at the redirect.
func TestWebhookTargetsRefused(t *testing.T) {
	admin := "sk-sov-" + strings.Repeat("55rfT3st", 5)
	srv := startReplica(t, filepath.Join(t.TempDir(), "sovereign.db"), "", t.TempDir(), admin, "SOVEREIGN_CONFIG="+serverConfig(t))

	for _, tc := range []struct{ url, says string }{
		{"http://127.0.0.1:8080/hook", "refusing 127.0.0.1 (loopback)"},
		{"http://10.0.0.1/hook", "refusing 10.0.0.1 (private)"},
		{"http://169.254.169.254/latest/meta-data/", "cloud metadata endpoint"},
		{"http://localhost:8080/hook", `for host "localhost"`},
		{"http://[::1]:8080/hook", "loopback"},
		{"file:///etc/passwd", "only http and https"},
	} {
		resp, out := srv.do(admin, "POST", "/v1/webhooks", map[string]any{"url": tc.url, "events": []string{"workflow.run.succeeded"}})
		e, _ := out["error"].(map[string]any)
		if resp.StatusCode != 400 || e["param"] != "url" || !strings.Contains(e["message"].(string), tc.says) {
			t.Fatalf("%s: %d %v", tc.url, resp.StatusCode, out)
		}
		t.Logf("%s → 400 %s", tc.url, e["message"])
	}

	// A target on loopback that the redirect points at: it must never be
	// reached.
	hit := make(chan struct{}, 10)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(inner, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit <- struct{}{} }))
	t.Cleanup(func() { inner.Close() })
	// The allowed receiver answers 302 to it.
	outer, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	target := "http://" + inner.Addr().String() + "/"
	go http.Serve(outer, http.RedirectHandler(target, http.StatusFound))
	t.Cleanup(func() { outer.Close() })

	wh := srv.must(admin, "POST", "/v1/webhooks", map[string]any{"url": "http://" + outer.Addr().String() + "/hook", "events": []string{"workflow.run.succeeded"}}, 201)
	wf := srv.must(admin, "POST", "/v1/workflows", map[string]any{"name": "ping", "definition": map[string]any{
		"steps": []any{map[string]any{"id": "s", "type": "transform", "template": "ping"}}}}, 201)["id"].(string)
	runID := srv.must(admin, "POST", "/v1/workflows/"+wf+"/runs", map[string]any{"input": map[string]any{}}, 201)["id"].(string)
	waitRun(t, srv, admin, runID, time.Minute, "succeeded")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ds := srv.must(admin, "GET", "/v1/webhooks/"+wh["id"].(string)+"/deliveries", nil, 200)["data"].([]any)
		if len(ds) == 1 {
			d := ds[0].(map[string]any)
			if msg, _ := d["last_error"].(string); msg != "" {
				full := srv.must(admin, "GET", "/v1/webhooks/"+wh["id"].(string)+"/deliveries/"+d["id"].(string), nil, 200)
				a := full["attempts"].([]any)[0].(map[string]any)
				e, _ := a["error"].(string)
				if !strings.Contains(e, "refusing 127.0.0.1 (loopback)") || !strings.Contains(e, "after a redirect to "+target) ||
					d["status"] != "delivering" || d["next_attempt_at"] == nil {
					t.Fatalf("delivery %v, attempt %v", d, a)
				}
				t.Logf("delivery refused at the redirect: %s", e)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no refused attempt: %v", ds)
		}
	}
	select {
	case <-hit:
		t.Fatal("the loopback target behind the redirect was reached")
	default:
	}
}
