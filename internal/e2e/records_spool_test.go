package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/testutil"
)

// metric reads one sample of a Prometheus metric (its full name with
// labels, as /metrics writes it) from a replica; -1 when absent.
func (r *replica) metric(name string) float64 {
	r.t.Helper()
	resp, err := http.Get(r.base + "/metrics")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// logLines is the lines of the replica's log that contain s.
func (r *replica) logLines(s string) string {
	var out []string
	for _, l := range strings.Split(r.logs.String(), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// chatAs sends a chat completion with the request id id and returns the
// status, the Retry-After header and the error code ("" for none).
func (r *replica) chatAs(key, id string) (int, string, string) {
	r.t.Helper()
	b, _ := json.Marshal(map[string]any{"model": "tiny", "max_tokens": 2, "messages": []map[string]string{{"role": "user", "content": "hello"}}})
	req, _ := http.NewRequest("POST", r.base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var env map[string]any
	json.Unmarshal(body, &env)
	return resp.StatusCode, resp.Header.Get("Retry-After"), errCode(env)
}

// TestRequestLogSpoolsThroughADatabaseOutage (issue 27): with its
// PostgreSQL stopped, a server keeps the records of the calls it answers
// in its spool (a small one here: 256 KiB), and once the spool is nearly
// full refuses inference with 503 request_log_unavailable and
// Retry-After, before any record was lost (the last sixteenth of the
// spool is for the calls under way); the server is then killed (SIGKILL,
// mid-outage). Started
// again on the same data directory with PostgreSQL back, it replays the
// spool: every answered call has its record, once, in the chain, which
// `sovereign audit verify` finds intact (and says whether records are
// known lost).
func TestRequestLogSpoolsThroughADatabaseOutage(t *testing.T) {
	pg := startOwnPostgres(t)
	admin := "sk-sov-" + strings.Repeat("Sp00lRec", 5)
	data, models := t.TempDir(), tinyStore(t, "tiny").Dir()
	r := startReplica(t, pg.url, "", models, admin, "SOVEREIGN_DATA_DIR="+data, "SOVEREIGN_RECORDS_SPOOL_BYTES=262144")
	if st, _, code := r.chatAs(admin, "spool-before"); st != 200 {
		t.Fatalf("chat before the outage: %d %s", st, code)
	}

	pg.stop()
	t.Logf("PostgreSQL stopped at %s", time.Now().Format("15:04:05.000"))
	var answered []string
	refused := false
	for i := 0; i < 5000 && !refused; i++ {
		time.Sleep(10 * time.Millisecond) // a steady client, not a burst
		id := fmt.Sprintf("spool-during-%03d", i)
		switch st, retry, code := r.chatAs(admin, id); {
		case st == 200:
			answered = append(answered, id)
		case st == 503 && code == "request_log_unavailable":
			if retry == "" {
				t.Errorf("request_log_unavailable without Retry-After")
			}
			refused = true
		default:
			t.Fatalf("chat %d during the outage: %d %s", i, st, code)
		}
	}
	if !refused || len(answered) < 10 {
		t.Fatalf("%d answered during the outage, refused: %v", len(answered), refused)
	}
	if lost := r.metric(`sovereign_request_log_lost_total{reason="spool_full"}`); lost > 0 {
		t.Errorf("%v records lost to a full spool before the first refusal", lost)
	}
	t.Logf("%d calls answered during the outage before the first refusal", len(answered))
	// The answered calls' records are spooled (fsynced by the writer
	// within its batch), then the server dies.
	for deadline := time.Now().Add(10 * time.Second); r.metric("sovereign_request_log_spooled_records") < float64(len(answered)); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("spooled %v records of %d answered\n%s", r.metric("sovereign_request_log_spooled_records"), len(answered), r.logLines("request log"))
		}
	}
	r.kill()

	pg.start()
	r2 := startReplica(t, pg.url, "", models, admin, "SOVEREIGN_DATA_DIR="+data)
	for _, id := range append([]string{"spool-before"}, answered...) {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			resp, rec := r2.do(admin, "GET", "/v1/logs/"+id, nil)
			if resp.StatusCode == 200 {
				if rec["status"] != 200.0 || rec["model"] != "tiny" {
					t.Fatalf("record %s: %v", id, rec)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no record of %s after the replay: %d", id, resp.StatusCode)
			}
		}
	}
	if n := r2.metric("sovereign_request_log_replayed_total"); n < float64(len(answered)) {
		t.Errorf("replayed %v records, %d answered", n, len(answered))
	}
	for deadline := time.Now().Add(10 * time.Second); r2.metric("sovereign_request_log_spooled_records") != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still spooled: %v", r2.metric("sovereign_request_log_spooled_records"))
		}
	}
	// Each once: the route's records, read through the API.
	seen := map[string]int{}
	for after := ""; ; {
		page := r2.must(admin, "GET", "/v1/logs?route=POST+/v1/chat/completions&status=200&limit=100"+after, nil, 200)
		for _, d := range page["data"].([]any) {
			seen[d.(map[string]any)["id"].(string)]++
		}
		if page["has_more"] != true {
			break
		}
		after = "&after=" + page["last_id"].(string)
	}
	for _, id := range answered {
		if seen[id] != 1 {
			t.Errorf("record %s listed %d times", id, seen[id])
		}
	}
	if st, _, code := r2.chatAs(admin, "spool-after"); st != 200 {
		t.Fatalf("chat after the replay: %d %s", st, code)
	}
	out, err := exec.Command(testutil.Binary(t), "audit", "verify", "--database-url", pg.url).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK:") {
		t.Fatalf("audit verify: %v\n%s", err, out)
	}
	t.Logf("audit verify:\n%s", out)
}
