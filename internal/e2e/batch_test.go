package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/openai"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

// countingUpstream is an OpenAI-compatible model server that counts, per
// question, the requests that reach it and those it answered. While held,
// requests wait (until released or their client goes): the test kills the
// Sovereign server at a moment when no answer is on its way, so that "no
// line reaches the model twice" can be checked exactly.
type countingUpstream struct {
	*httptest.Server
	mu       sync.Mutex
	arrived  map[string]int
	answered map[string]int
	waiting  int
	hold     chan struct{} // non-nil: requests wait for it
	delay    time.Duration
}

func newCountingUpstream(t *testing.T, delay time.Duration) *countingUpstream {
	u := &countingUpstream{arrived: map[string]int{}, answered: map[string]int{}, delay: delay}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(func() { u.release(); u.Close() })
	return u
}

func (u *countingUpstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"mock","object":"model"}]}`)
		return
	}
	var body struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&body) != nil || len(body.Messages) == 0 {
		http.Error(w, `{"error":{"message":"no","type":"invalid_request_error"}}`, 404)
		return
	}
	q := body.Messages[0].Content
	u.mu.Lock()
	u.arrived[q]++
	hold := u.hold
	u.waiting++
	u.mu.Unlock()
	defer func() { u.mu.Lock(); u.waiting--; u.mu.Unlock() }()
	t := time.NewTimer(u.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return
	}
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return // never answered
		}
	}
	u.mu.Lock()
	u.answered[q]++
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1767225600,"model":"mock",`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":"answer to %s"},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}`, q)
}

// holdNow makes the requests from now on wait.
func (u *countingUpstream) holdNow() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.hold == nil {
		u.hold = make(chan struct{})
	}
}

func (u *countingUpstream) release() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.hold != nil {
		close(u.hold)
		u.hold = nil
	}
}

func (u *countingUpstream) counts() (answered, waiting int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, n := range u.answered {
		answered += n
	}
	return answered, u.waiting
}

// uploadJSONL sends POST /v1/files with purpose batch.
func (r *replica) uploadJSONL(key, name, content string) map[string]any {
	r.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", name)
	io.WriteString(fw, content)
	mw.Close()
	req, _ := http.NewRequest("POST", r.base+"/v1/files", &buf)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != 200 {
		r.t.Fatalf("upload: %d %v", resp.StatusCode, out)
	}
	return out
}

func (r *replica) raw(key, path string) []byte {
	r.t.Helper()
	req, _ := http.NewRequest("GET", r.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		r.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return b
}

// batchRecords counts the request log's successful records of the batch's
// user.
func (r *replica) batchRecords(key, batchID string) int {
	r.t.Helper()
	n := 0
	for after := ""; ; {
		page := r.must(key, "GET", "/v1/logs?limit=100&status=200&user=batch:"+batchID+after, nil, 200)
		data := page["data"].([]any)
		n += len(data)
		if page["has_more"] != true || len(data) == 0 {
			return n
		}
		after = "&after=" + data[len(data)-1].(map[string]any)["id"].(string)
	}
}

// runKilledBatch starts a batch of lines questions on the mock upstream
// model through a, kills a with SIGKILL while some lines are answered and
// others wait at the model (calling beforeKill, if set, just before), and
// returns the batch id.
func runKilledBatch(t *testing.T, a *replica, u *countingUpstream, admin string, lines int, beforeKill func()) string {
	t.Helper()
	return runStoppedBatch(t, a, u, admin, lines, beforeKill, (*replica).kill)
}

// runStoppedBatch is runKilledBatch with the server stopped by stop.
func runStoppedBatch(t *testing.T, a *replica, u *countingUpstream, admin string, lines int, beforeKill func(), stop func(*replica)) string {
	t.Helper()
	a.must(admin, "POST", "/v1/models/mock", map[string]any{"base_url": u.URL + "/v1", "upstream_model": "mock"}, 201)
	var in strings.Builder
	for i := range lines {
		fmt.Fprintf(&in, `{"custom_id":"line-%d","method":"POST","url":"/v1/chat/completions","body":{"model":"mock","messages":[{"role":"user","content":"q%d"}],"max_tokens":8}}`+"\n", i, i)
	}
	f := a.uploadJSONL(admin, "kill.jsonl", in.String())
	b := a.must(admin, "POST", "/v1/batches", map[string]any{"input_file_id": f["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"}, 200)
	id := b["id"].(string)
	// Let a third of the lines be answered, then hold the model: the lines
	// running now reach it and wait there.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if n, _ := u.counts(); n >= lines/3 {
			u.holdNow()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the batch never got going: %v", a.must(admin, "GET", "/v1/batches/"+id, nil, 200))
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, w := u.counts(); w >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no line reached the held model")
		}
	}
	// The answers already given are stored (each line's row as it ends,
	// the request log within its 10 ms linger) before the kill.
	time.Sleep(500 * time.Millisecond)
	mid := a.must(admin, "GET", "/v1/batches/"+id, nil, 200)
	done := int(mid["request_counts"].(map[string]any)["completed"].(float64))
	answered, waiting := u.counts()
	t.Logf("killing the server: %d lines answered and stored (%d answered at the model), %d waiting at the model", done, answered, waiting)
	if mid["status"] != "in_progress" || done != answered {
		t.Fatalf("before the kill: %d stored, %d answered: %v", done, answered, mid)
	}
	if beforeKill != nil {
		beforeKill()
	}
	stop(a)
	// The held requests end at the model when it sees their client gone
	// (never answered); only then may requests go through again.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, w := u.counts(); w == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the model never saw the killed server's requests end")
		}
	}
	u.release()
	return id
}

// checkKilledBatch waits for the batch to complete on r and checks that
// every line reached the model's answer once, the output holds every line
// once in order, and the request log holds one successful record per line.
func checkKilledBatch(t *testing.T, r *replica, u *countingUpstream, admin, id string, lines int) {
	t.Helper()
	var b map[string]any
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		b = r.must(admin, "GET", "/v1/batches/"+id, nil, 200)
		if b["status"] == "completed" {
			break
		}
		if b["status"] == "failed" || time.Now().After(deadline) {
			t.Fatalf("batch after the restart: %v", b)
		}
	}
	if c := b["request_counts"].(map[string]any); c["total"] != float64(lines) || c["completed"] != float64(lines) || c["failed"] != 0.0 {
		t.Fatalf("counts: %v", c)
	}
	u.mu.Lock()
	for i := range lines {
		q := fmt.Sprintf("q%d", i)
		if u.answered[q] != 1 {
			t.Errorf("%s answered by the model %d times (arrived %d)", q, u.answered[q], u.arrived[q])
		}
	}
	u.mu.Unlock()
	out := jsonLines(t, r.raw(admin, "/v1/files/"+b["output_file_id"].(string)+"/content"))
	if len(out) != lines {
		t.Fatalf("%d output lines, want %d", len(out), lines)
	}
	for i, l := range out {
		if l["custom_id"] != fmt.Sprintf("line-%d", i) {
			t.Fatalf("output line %d: %v", i, l["custom_id"])
		}
		body := l["response"].(map[string]any)["body"].(map[string]any)
		if got := body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; got != fmt.Sprintf("answer to q%d", i) {
			t.Fatalf("output line %d: %v", i, got)
		}
	}
	// One successful record per line, across both servers.
	var n int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if n = r.batchRecords(admin, id); n >= lines || time.Now().After(deadline) {
			break
		}
	}
	if n != lines {
		t.Fatalf("%d successful records of user batch:%s, want one per line (%d)", n, id, lines)
	}
}

// TestBatchSurvivesStop: SIGKILL of `sovereign serve` during a batch, or
// SIGTERM (SQLite); after the restart the batch completes and no line's
// request was answered by the model twice (counted at the model and in the
// request log).
func TestBatchSurvivesStop(t *testing.T) {
	for _, c := range []struct {
		name string
		stop func(*replica)
	}{{"SIGKILL", (*replica).kill}, {"SIGTERM", (*replica).term}} {
		t.Run(c.name, func(t *testing.T) {
			dbURL := filepath.Join(t.TempDir(), "sovereign.db")
			modelsDir := defaultStore(t).Dir()
			admin := "sk-sov-" + strings.Repeat("B4tchK1l", 5)
			u := newCountingUpstream(t, 30*time.Millisecond)
			a := startReplica(t, dbURL, "", modelsDir, admin)
			const lines = 40
			id := runStoppedBatch(t, a, u, admin, lines, nil, c.stop)
			b := startReplica(t, dbURL, "", modelsDir, admin)
			checkKilledBatch(t, b, u, admin, id, lines)
		})
	}
}

// TestBatchTakenOver: two servers on one PostgreSQL; the one running a
// batch is killed; the other completes it once the dead one's heartbeat
// is stale, and no line is answered twice.
func TestBatchTakenOver(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	modelsDir := defaultStore(t).Dir()
	admin := "sk-sov-" + strings.Repeat("B4tchT4k", 5)
	u := newCountingUpstream(t, 30*time.Millisecond)
	a := startReplica(t, dbURL, "", modelsDir, admin, "SOVEREIGN_INSTANCE_ID=batch-a")
	// A runs the batch; B starts while it is under way (A holds it), just
	// before A dies.
	const lines = 40
	var b *replica
	id := runKilledBatch(t, a, u, admin, lines, func() {
		b = startReplica(t, dbURL, "", modelsDir, admin, "SOVEREIGN_INSTANCE_ID=batch-b")
	})
	killed := time.Now()
	checkKilledBatch(t, b, u, admin, id, lines)
	t.Logf("B completed the batch %v after A was killed", time.Since(killed).Round(100*time.Millisecond))
}

// TestBatchLineDecodesTheRequestOnce: a batch line goes to the generation
// service with its body decoded once (counted by openai.Decodes) and its
// answer rendered once into the output file, not through an in-process
// HTTP round trip; it is recorded as its batch's like the same request
// over HTTP.
func TestBatchLineDecodesTheRequestOnce(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	_, key := teamWithKey(t, e, "batches", "inference", "records:read")
	const lines = 3
	var in strings.Builder
	for i := range lines {
		in.WriteString(batchLine(fmt.Sprint("q", i), "tiny", fmt.Sprint("hello ", i), "") + "\n")
	}
	b := e.jsonWith(key, "POST", "/v1/batches", map[string]any{"input_file_id": e.uploadJSONL(key, in.String()), "endpoint": "/v1/chat/completions", "completion_window": "24h"}, 200)
	before := openai.Decodes()
	for deadline := time.Now().Add(time.Minute); b["status"] != "completed"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) || b["status"] == "failed" {
			t.Fatalf("batch %v", b)
		}
		b = e.jsonWith(key, "GET", "/v1/batches/"+b["id"].(string), nil, 200)
	}
	if n := openai.Decodes() - before; n != lines {
		t.Errorf("%d request decodes for %d lines, want one each", n, lines)
	}
	r := e.request(key, "GET", "/v1/files/"+b["output_file_id"].(string)+"/content", nil)
	raw, _ := io.ReadAll(r.Body)
	r.Body.Close()
	out := jsonLines(t, raw)
	if len(out) != lines {
		t.Fatalf("output %s", raw)
	}
	for _, l := range out {
		res := l["response"].(map[string]any)
		answer := res["body"].(map[string]any)
		if res["status_code"] != 200.0 || answer["object"] != "chat.completion" || answer["model"] != "tiny" || answer["usage"].(map[string]any)["completion_tokens"].(float64) < 1 {
			t.Fatalf("line %v", l)
		}
		rec := e.jsonWith(key, "GET", "/v1/logs/"+res["request_id"].(string), nil, 200)
		if rec["route"] != "POST /v1/chat/completions" || rec["user"] != "batch:"+b["id"].(string) || rec["completion_tokens"] != answer["usage"].(map[string]any)["completion_tokens"] {
			t.Fatalf("record %v of line %v", rec, l)
		}
	}
}

// uploadJSONL uploads content as a batch input file as key and returns the
// file's id.
func (e *env) uploadJSONL(key, content string) string {
	e.t.Helper()
	body, ctype := multipartBody(e.t, "in.jsonl", "application/jsonl", content, map[string]string{"purpose": "batch"})
	req, _ := http.NewRequest("POST", e.url+"/v1/files", bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var f map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil || resp.StatusCode != 200 {
		e.t.Fatalf("upload: %d %v %v", resp.StatusCode, f, err)
	}
	return f["id"].(string)
}

// TestBatchLinesWithSourcesDecodeOnce: lines of the Responses API and
// completions with sources run through the generation service too, not
// an in-process HTTP round trip: one request decode a line, the answer
// the same shape as over HTTP (citations from the line's documents,
// stored as source links; a Responses line's response stored and
// readable), each recorded for its batch.
func TestBatchLinesWithSourcesDecodeOnce(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 2048})
	_, key := teamWithKey(t, e, "batches", "inference", "records:read")
	docs := `"sources":{"documents":[{"id":"refunds","title":"Refunds","text":"Refunds are paid within 14 days to the original payment card."}]}`
	lines := map[string]string{
		"/v1/completions": fmt.Sprintf(`{"custom_id":"c","method":"POST","url":"/v1/completions","body":{"model":%q,"messages":[{"role":"user","content":"How long do refunds take?"}],"citations":true,%s,"max_tokens":60,"temperature":0}}`, answerModel, docs),
		"/v1/responses":   fmt.Sprintf(`{"custom_id":"r","method":"POST","url":"/v1/responses","body":{"model":%q,"input":"How long do refunds take?","citations":true,%s,"max_output_tokens":60,"temperature":0}}`, answerModel, docs),
	}
	for endpoint, line := range lines {
		b := e.jsonWith(key, "POST", "/v1/batches", map[string]any{"input_file_id": e.uploadJSONL(key, line+"\n"), "endpoint": endpoint, "completion_window": "24h"}, 200)
		before := openai.Decodes()
		for deadline := time.Now().Add(2 * time.Minute); b["status"] != "completed"; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) || b["status"] == "failed" {
				t.Fatalf("%s: batch %v", endpoint, b)
			}
			b = e.jsonWith(key, "GET", "/v1/batches/"+b["id"].(string), nil, 200)
		}
		if n := openai.Decodes() - before; n != 1 {
			t.Errorf("%s: %d request decodes for one line, want one", endpoint, n)
		}
		r := e.request(key, "GET", "/v1/files/"+b["output_file_id"].(string)+"/content", nil)
		raw, _ := io.ReadAll(r.Body)
		r.Body.Close()
		out := jsonLines(t, raw)
		if len(out) != 1 || out[0]["response"].(map[string]any)["status_code"] != 200.0 {
			t.Fatalf("%s: output %s", endpoint, raw)
		}
		res := out[0]["response"].(map[string]any)
		answer := res["body"].(map[string]any)
		switch endpoint {
		case "/v1/completions":
			cits, _ := answer["citations"].([]any)
			text := answer["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
			if !strings.Contains(text, "14") || len(cits) == 0 {
				t.Errorf("%s: answer %v", endpoint, answer)
			} else if links := e.jsonWith(key, "GET", "/v1/source_links?response_id="+answer["id"].(string), nil, 200)["data"].([]any); len(links) == 0 {
				t.Errorf("%s: no source links for %s", endpoint, answer["id"])
			}
		case "/v1/responses":
			if answer["object"] != "response" || answer["status"] != "completed" || !strings.Contains(fmt.Sprint(answer["output"]), "14") {
				t.Errorf("%s: answer %v", endpoint, answer)
			}
			if kept := e.jsonWith(key, "GET", "/v1/responses/"+answer["id"].(string), nil, 200); kept["id"] != answer["id"] {
				t.Errorf("%s: the stored response %v", endpoint, kept)
			}
		}
		rec := e.jsonWith(key, "GET", "/v1/logs/"+res["request_id"].(string), nil, 200)
		if rec["route"] != "POST "+endpoint || rec["user"] != "batch:"+b["id"].(string) || rec["completion_tokens"].(float64) < 1 {
			t.Errorf("%s: record %v", endpoint, rec)
		}
	}
}
