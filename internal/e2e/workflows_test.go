package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/openai"
	"github.com/sovereign-ai/sovereign/internal/storetest"
)

// streamed is one event of an SSE stream: its id, type and payload.
type streamed struct {
	ID, Type string
	Data     map[string]any
}

// openStream opens an SSE route (with Last-Event-ID when lastID is set)
// and returns its events as they arrive; the channel closes when the
// stream ends.
func openStream(t *testing.T, base, key, path, lastID string) <-chan streamed {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s on %s: %d", path, base, resp.StatusCode)
	}
	out := make(chan streamed, 256)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev streamed
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				var env struct {
					Data map[string]any `json:"data"`
				}
				json.Unmarshal([]byte(line[6:]), &env)
				ev.Data = env.Data
			case line == "" && ev.ID != "":
				out <- ev
				ev = streamed{}
			}
		}
	}()
	return out
}

// collect reads a run's stream until it ends (or d passes).
func collect(t *testing.T, ch <-chan streamed, d time.Duration) []streamed {
	t.Helper()
	var evs []streamed
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatalf("the run's stream did not end within %v; got %d events", d, len(evs))
		}
	}
}

// describe renders events as "step:status" / "run:status" words.
func describe(evs []streamed) string {
	var out []string
	for _, ev := range evs {
		st, _ := ev.Data["status"].(string)
		switch ev.Type {
		case "workflow.step.updated":
			out = append(out, ev.Data["step_id"].(string)+":"+st)
		case "workflow.approval.requested":
			out = append(out, "approval.requested")
		default:
			out = append(out, "run:"+st)
		}
	}
	return strings.Join(out, " ")
}

func waitRun(t *testing.T, r *replica, key, id string, within time.Duration, states ...string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		run := r.must(key, "GET", "/v1/workflow_runs/"+id, nil, 200)
		for _, s := range states {
			if run["status"] == s {
				return run
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %v after %v, want %v: %v", id, run["status"], within, states, run["error"])
		}
	}
}

func pendingApproval(t *testing.T, r *replica, key, runID string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, a := range r.must(key, "GET", "/v1/approvals?status=pending", nil, 200)["data"].([]any) {
			if a := a.(map[string]any); a["run_id"] == runID {
				return a
			}
		}
	}
	t.Fatalf("run %s never asked for an approval", runID)
	return nil
}

// TestWorkflowWithModels runs retrieve → chat → approval with the default
// models through `sovereign serve`: approved, the run succeeds with the
// model's answer, its stream shows every state change in order, and the
// chat call is in the request log attributed to the run; rejected, the
// run fails with the reason; a key outside the approvers gets 403 and
// another team's key a 404.
func TestWorkflowWithModels(t *testing.T) {
	modelsDir := defaultStore(t).Dir()
	admin := "sk-sov-" + strings.Repeat("W0rkfl0w", 5)
	srv := startReplica(t, filepath.Join(t.TempDir(), "sovereign.db"), "", modelsDir, admin)

	team := srv.must(admin, "POST", "/v1/teams", map[string]any{"name": "support"}, 201)["id"].(string)
	key := srv.must(admin, "POST", "/v1/keys", map[string]any{"name": "runner", "team_id": team, "scopes": []string{"inference", "workflows", "records:read"}}, 201)["key"].(string)
	approverKey := srv.must(admin, "POST", "/v1/keys", map[string]any{"name": "lead", "team_id": team, "scopes": []string{"approvals"}}, 201)
	bystander := srv.must(admin, "POST", "/v1/keys", map[string]any{"name": "other", "team_id": team, "scopes": []string{"workflows"}}, 201)["key"].(string)
	otherTeam := srv.must(admin, "POST", "/v1/teams", map[string]any{"name": "elsewhere"}, 201)["id"].(string)
	stranger := srv.must(admin, "POST", "/v1/keys", map[string]any{"name": "x", "team_id": otherTeam, "scopes": []string{"workflows"}}, 201)["key"].(string)

	col := srv.must(key, "POST", "/v1/collections", map[string]any{"name": "handbook"}, 201)["id"].(string)
	doc := srv.must(key, "POST", "/v1/collections/"+col+"/documents", map[string]any{"title": "refunds",
		"text": "Refunds are paid within 14 days to the original payment card. Refunds above 500 EUR need a team lead's approval."}, 202)["id"].(string)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if d := srv.must(key, "GET", "/v1/collections/"+col+"/documents/"+doc, nil, 200); d["status"] == "ready" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("document: %v", d)
		}
	}
	spec := map[string]any{"steps": []any{
		map[string]any{"id": "find", "type": "retrieve", "collection_ids": []string{col}, "query": "{{ input.question }}", "top_k": 2},
		map[string]any{"id": "draft", "type": "chat", "model": "gemma3-270m", "max_tokens": 24, "temperature": 0,
			"messages": []any{map[string]any{"role": "user", "content": "Policy: {{ steps.find.output.text }}\nQuestion: {{ input.question }}\nAnswer briefly."}}},
		map[string]any{"id": "review", "type": "approval", "instructions": "Approve the answer to {{ input.question }}",
			"approvers": map[string]any{"scopes": []string{"approvals"}}, "timeout": "10m"},
	}, "output": map[string]any{"answer": "{{ steps.draft.output.text }}", "decision": "{{ steps.review.output.decision }}"}}
	wf := srv.must(key, "POST", "/v1/workflows", map[string]any{"name": "refund answer", "definition": spec}, 201)
	if wf["version"].(float64) != 1 {
		t.Fatalf("workflow %v", wf)
	}
	// Another team's key does not see it.
	if resp, _ := srv.do(stranger, "GET", "/v1/workflows/"+wf["id"].(string), nil); resp.StatusCode != 404 {
		t.Fatalf("another team's key: %d", resp.StatusCode)
	}

	run := srv.must(key, "POST", "/v1/workflows/"+wf["id"].(string)+"/runs", map[string]any{"input": map[string]any{"question": "How long do refunds take?"}}, 201)
	runID := run["id"].(string)
	stream := openStream(t, srv.base, key, "/v1/workflow_runs/"+runID+"/events", "")
	a := pendingApproval(t, srv, key, runID)
	if a["instructions"] != "Approve the answer to How long do refunds take?" {
		t.Errorf("approval %v", a)
	}
	if resp, out := srv.do(bystander, "POST", "/v1/approvals/"+a["id"].(string), map[string]any{"decision": "approve"}); resp.StatusCode != 403 {
		t.Fatalf("a key outside the approvers: %d %v", resp.StatusCode, out)
	}
	if resp, _ := srv.do(stranger, "POST", "/v1/approvals/"+a["id"].(string), map[string]any{"decision": "approve"}); resp.StatusCode != 404 {
		t.Fatalf("another team's key: %d", resp.StatusCode)
	}
	decided := srv.must(approverKey["key"].(string), "POST", "/v1/approvals/"+a["id"].(string), map[string]any{"decision": "approve", "comment": "ok"}, 200)
	if decided["status"] != "approved" || decided["decided_by"] != approverKey["id"] {
		t.Fatalf("decision %v", decided)
	}
	done := waitRun(t, srv, key, runID, 2*time.Minute, "succeeded", "failed")
	if done["status"] != "succeeded" {
		t.Fatalf("run %v", done)
	}
	out := done["output"].(map[string]any)
	if out["decision"] != "approved" || strings.TrimSpace(out["answer"].(string)) == "" {
		t.Errorf("output %v", out)
	}
	find := done["steps"].([]any)[0].(map[string]any)["output"].(map[string]any)
	if hits := find["hits"].([]any); len(hits) == 0 || hits[0].(map[string]any)["document_id"] != doc {
		t.Errorf("retrieve found %v", find)
	}
	evs := collect(t, stream, 30*time.Second)
	want := "run:queued run:running find:running find:succeeded draft:running draft:succeeded review:waiting_approval run:waiting_approval approval.requested run:running review:succeeded run:succeeded"
	if got := describe(evs); got != want {
		t.Errorf("the run's stream:\n got %s\nwant %s", got, want)
	}
	// A reconnect after the fourth event replays the rest, nothing twice.
	rest := collect(t, openStream(t, srv.base, key, "/v1/workflow_runs/"+runID+"/events", evs[3].ID), 30*time.Second)
	if describe(rest) != describe(evs[4:]) {
		t.Errorf("resumed after %s:\n got %s\nwant %s", evs[3].ID, describe(rest), describe(evs[4:]))
	}
	// The steps' calls are in the request log, as the run's key, for the
	// run.
	logs := srv.must(key, "GET", "/v1/logs?user=workflow_run:"+runID, nil, 200)["data"].([]any)
	var routes []string
	for _, l := range logs {
		l := l.(map[string]any)
		routes = append(routes, fmt.Sprint(l["route"], " ", l["status"], " ", l["key_id"]))
	}
	slices.Sort(routes)
	if want := []string{"POST /v1/chat/completions 200 " + fmt.Sprint(run["key_id"]), "POST /v1/collections/{id}/search 200 " + fmt.Sprint(run["key_id"])}; !slices.Equal(routes, want) {
		t.Errorf("the run's request records: %v, want %v", routes, want)
	}

	// Rejected: the run fails with the reason.
	run2 := srv.must(key, "POST", "/v1/workflows/"+wf["id"].(string)+"/runs", map[string]any{"input": map[string]any{"question": "Can I get 900 EUR back?"}}, 201)["id"].(string)
	a2 := pendingApproval(t, srv, key, run2)
	srv.must(approverKey["key"].(string), "POST", "/v1/approvals/"+a2["id"].(string), map[string]any{"decision": "reject", "comment": "needs the receipt"}, 200)
	failed := waitRun(t, srv, key, run2, time.Minute, "succeeded", "failed")
	e, _ := failed["error"].(map[string]any)
	if failed["status"] != "failed" || e["code"] != "approval_rejected" || !strings.Contains(e["message"].(string), "needs the receipt") {
		t.Fatalf("rejected run %v", failed)
	}
}

// waitSpec is a run that sleeps between two steps: long enough to kill
// the server in the middle.
var waitSpec = map[string]any{"steps": []any{
	map[string]any{"id": "before", "type": "transform", "template": "started {{ input.n }}"},
	map[string]any{"id": "nap", "type": "wait", "duration": "4s"},
	map[string]any{"id": "after", "type": "transform", "expression": "steps.before.output.text + ' and finished'"},
}}

// checkOnce checks a finished run ran each step once: succeeded, one
// attempt, and one "running" event per step in the run's events.
func checkOnce(t *testing.T, r *replica, key string, run map[string]any) {
	t.Helper()
	if run["status"] != "succeeded" {
		t.Fatalf("run %v", run)
	}
	for _, st := range run["steps"].([]any) {
		st := st.(map[string]any)
		if st["status"] != "succeeded" || st["attempts"].(float64) != 1 {
			t.Errorf("step %v", st)
		}
	}
	if got := run["output"].(map[string]any)["value"]; got != "started 7 and finished" {
		t.Errorf("output %v", run["output"])
	}
	evs := collect(t, openStream(t, r.base, key, "/v1/workflow_runs/"+run["id"].(string)+"/events", ""), 10*time.Second)
	if n := strings.Count(describe(evs), "before:running"); n != 1 {
		t.Errorf("the first step started %d times: %s", n, describe(evs))
	}
}

// TestWorkflowSurvivesKill: a server killed with SIGKILL while a run
// waits finishes the run when it starts again (SQLite), without running
// the finished step again.
func TestWorkflowSurvivesKill(t *testing.T) {
	dbURL := filepath.Join(t.TempDir(), "sovereign.db")
	modelsDir := tinyStore(t, "tiny").Dir()
	admin := "sk-sov-" + strings.Repeat("Wk1llT35", 5)
	a := startReplica(t, dbURL, "", modelsDir, admin)
	wf := a.must(admin, "POST", "/v1/workflows", map[string]any{"name": "nap", "definition": waitSpec}, 201)["id"].(string)
	run := a.must(admin, "POST", "/v1/workflows/"+wf+"/runs", map[string]any{"input": map[string]any{"n": 7}}, 201)["id"].(string)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := a.must(admin, "GET", "/v1/workflow_runs/"+run, nil, 200)
		if r["current_step"] == "nap" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never reached its wait: %v", r)
		}
	}
	a.kill()
	b := startReplica(t, dbURL, "", modelsDir, admin)
	checkOnce(t, b, admin, waitRun(t, b, admin, run, time.Minute, "succeeded", "failed"))
}

// TestWorkflowTakenOver: two servers on one PostgreSQL; the one running a
// workflow is killed while the run waits; the other finishes the run, and
// a run stream followed on the dead server resumes on the other with
// Last-Event-ID, missing nothing.
func TestWorkflowTakenOver(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	modelsDir := tinyStore(t, "tiny").Dir()
	admin := "sk-sov-" + strings.Repeat("WT4k30vr", 5)
	a := startReplica(t, dbURL, "", modelsDir, admin)
	wf := a.must(admin, "POST", "/v1/workflows", map[string]any{"name": "nap", "definition": waitSpec}, 201)["id"].(string)
	run := a.must(admin, "POST", "/v1/workflows/"+wf+"/runs", map[string]any{"input": map[string]any{"n": 7}}, 201)["id"].(string)
	stream := openStream(t, a.base, admin, "/v1/workflow_runs/"+run+"/events", "")
	var seen []streamed
	for len(seen) == 0 || seen[len(seen)-1].Data["step_id"] != "nap" {
		select {
		case ev := <-stream:
			seen = append(seen, ev)
		case <-time.After(30 * time.Second):
			t.Fatalf("no wait step on the stream: %s", describe(seen))
		}
	}
	// B starts after A took the run, so A is the one running it.
	b := startReplica(t, dbURL, "", modelsDir, admin)
	a.kill()
	killed := time.Now()
	rest := collect(t, openStream(t, b.base, admin, "/v1/workflow_runs/"+run+"/events", seen[len(seen)-1].ID), 2*time.Minute)
	t.Logf("B finished the run %v after A was killed", time.Since(killed).Round(100*time.Millisecond))
	all := collect(t, openStream(t, b.base, admin, "/v1/workflow_runs/"+run+"/events", ""), 10*time.Second)
	if got, want := describe(append(seen, rest...)), describe(all); got != want {
		t.Errorf("stream across the servers:\n got %s\nwant %s", got, want)
	}
	checkOnce(t, b, admin, waitRun(t, b, admin, run, time.Minute, "succeeded", "failed"))
}

// TestWorkflowHTTPStepSSRF: http steps refuse private targets — a literal
// one when the definition is saved (400 naming the step's url), one that a
// template produces or a redirect leads to when the step runs (the run
// fails with the refusal) — while a target the operator allows is reached.
func TestWorkflowHTTPStepSSRF(t *testing.T) {
	// The allowed receiver listens on 127.0.0.2 (allowed by
	// outbound_allow); it redirects to 127.0.0.1, which is not.
	loop := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"reached": "loopback"}`))
	}))
	loop.Start()
	defer loop.Close()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	allowed := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, loop.URL+"/", http.StatusFound)
			return
		}
		w.Write([]byte(`{"reached": "allowed"}`))
	}))
	allowed.Listener = ln
	allowed.Start()
	defer allowed.Close()
	cfg := filepath.Join(t.TempDir(), "sovereign.yaml")
	if err := os.WriteFile(cfg, []byte("outbound_allow: [\"127.0.0.2/32\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	admin := "sk-sov-" + strings.Repeat("SsRfT35t", 5)
	srv := startReplica(t, filepath.Join(t.TempDir(), "sovereign.db"), "", tinyStore(t, "tiny").Dir(), admin, "SOVEREIGN_CONFIG="+cfg)

	for _, target := range []string{"http://127.0.0.1:9/x", "http://10.1.2.3/x", "http://169.254.169.254/latest/meta-data/", "http://localhost:9/x"} {
		resp, out := srv.do(admin, "POST", "/v1/workflows", map[string]any{"name": "ssrf", "definition": map[string]any{"steps": []any{
			map[string]any{"id": "call", "type": "http", "url": target}}}})
		e, _ := out["error"].(map[string]any)
		if resp.StatusCode != 400 || e["param"] != "definition.steps[0].url" || !strings.Contains(fmt.Sprint(e["message"]), "refus") {
			t.Errorf("%s: %d %v", target, resp.StatusCode, out)
		}
	}
	wf := srv.must(admin, "POST", "/v1/workflows", map[string]any{"name": "fetch", "definition": map[string]any{"steps": []any{
		map[string]any{"id": "call", "type": "http", "url": "{{ input.url }}"}}}}, 201)["id"].(string)
	run := func(target string) map[string]any {
		id := srv.must(admin, "POST", "/v1/workflows/"+wf+"/runs", map[string]any{"input": map[string]any{"url": target}}, 201)["id"].(string)
		return waitRun(t, srv, admin, id, 30*time.Second, "succeeded", "failed")
	}
	if r := run(allowed.URL + "/ok"); r["status"] != "succeeded" || r["output"].(map[string]any)["json"].(map[string]any)["reached"] != "allowed" {
		t.Fatalf("the allowed target: %v", r)
	}
	for _, target := range []string{loop.URL + "/", "http://localhost:" + strings.Split(loop.URL, ":")[2] + "/", allowed.URL + "/redirect"} {
		r := run(target)
		e, _ := r["error"].(map[string]any)
		if r["status"] != "failed" || !strings.Contains(fmt.Sprint(e["message"]), "refus") {
			t.Errorf("%s: %v %v", target, r["status"], e)
		}
	}
}

// TestWorkflowChatStepDecodesNothing: a chat step calls the generation
// service with a typed request and gets the answer back as native events —
// no in-process HTTP round trip, so no request body is decoded (and no
// answer rendered and read back) between the step and the model — yet the
// call is governed and recorded like the same call over HTTP.
func TestWorkflowChatStepDecodesNothing(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	team, key := teamWithKey(t, e, "flows", "inference", "workflows", "records:read")
	spec := map[string]any{"steps": []any{map[string]any{"id": "ask", "type": "chat", "model": "tiny", "max_tokens": 4, "temperature": 0,
		"messages": []any{map[string]any{"role": "user", "content": "Say {{ input.word }}"}}}}}
	wf := e.jsonWith(key, "POST", "/v1/workflows", map[string]any{"name": "ask", "definition": spec}, 201)
	run := e.jsonWith(key, "POST", "/v1/workflows/"+wf["id"].(string)+"/runs", map[string]any{"input": map[string]any{"word": "hi"}}, 201)
	before := openai.Decodes()
	var done map[string]any
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		done = e.jsonWith(key, "GET", "/v1/workflow_runs/"+run["id"].(string), nil, 200)
		if done["status"] == "succeeded" || done["status"] == "failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %v", done)
		}
	}
	if n := openai.Decodes() - before; n != 0 {
		t.Errorf("the chat step decoded %d request bodies, want none", n)
	}
	step := done["steps"].([]any)[0].(map[string]any)
	out, _ := step["output"].(map[string]any)
	usage, _ := out["usage"].(map[string]any)
	if done["status"] != "succeeded" || out["model"] != "tiny" || out["finish_reason"] == nil || usage["completion_tokens"] == nil || usage["completion_tokens"].(float64) < 1 {
		t.Fatalf("run %v", done)
	}
	var rec map[string]any
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		logs := e.jsonWith(key, "GET", "/v1/logs?user=workflow_run:"+run["id"].(string), nil, 200)["data"].([]any)
		if len(logs) == 1 {
			rec = logs[0].(map[string]any)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run's request records: %v", logs)
		}
	}
	if rec["route"] != "POST /v1/chat/completions" || rec["status"].(float64) != 200 || rec["team_id"] != team || rec["model"] != "tiny" ||
		rec["completion_tokens"].(float64) != usage["completion_tokens"].(float64) {
		t.Fatalf("record %v", rec)
	}
}

// TestWorkflowModelStepsDecodeNothing: retrieve, rerank and
// answer_with_sources steps call the sources and generation services
// with typed requests, like chat steps — no request body is decoded
// between a step and its model — and each call is governed and recorded
// like the same call over HTTP, as the run's key, for the run.
func TestWorkflowModelStepsDecodeNothing(t *testing.T) {
	e := newEnv(t, defaultStore(t), engine.Config{CtxPerSlot: 2048})
	col := e.json("POST", "/v1/collections", map[string]any{"name": "handbook"}, 201)["id"].(string)
	doc := e.json("POST", "/v1/collections/"+col+"/documents", map[string]any{"title": "Refunds",
		"text": "Refunds are paid within 14 days to the original payment card. Gift cards are never refunded."}, 202)["id"].(string)
	e.waitReady(col, doc)
	spec := map[string]any{"steps": []any{
		map[string]any{"id": "find", "type": "retrieve", "collection_ids": []string{col}, "query": "{{ input.question }}", "top_k": 2},
		map[string]any{"id": "rank", "type": "rerank", "model": "gemma3-270m", "query": "{{ input.question }}", "documents": "steps.find.output.hits", "top_n": 1},
		map[string]any{"id": "answer", "type": "answer_with_sources", "model": answerModel, "collection_ids": []string{col},
			"question": "{{ input.question }}", "max_tokens": 60, "temperature": 0},
	}, "output": map[string]any{"answer": "{{ steps.answer.output.text }}"}}
	wf := e.json("POST", "/v1/workflows", map[string]any{"name": "refunds", "definition": spec}, 201)
	run := e.json("POST", "/v1/workflows/"+wf["id"].(string)+"/runs", map[string]any{"input": map[string]any{"question": "How long do refunds take?"}}, 201)
	before := openai.Decodes()
	var done map[string]any
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		done = e.json("GET", "/v1/workflow_runs/"+run["id"].(string), nil, 200)
		if done["status"] == "succeeded" || done["status"] == "failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %v", done)
		}
	}
	if n := openai.Decodes() - before; n != 0 {
		t.Errorf("the steps decoded %d request bodies, want none", n)
	}
	if done["status"] != "succeeded" {
		t.Fatalf("run %v", done)
	}
	steps := done["steps"].([]any)
	output := func(i int) map[string]any { return steps[i].(map[string]any)["output"].(map[string]any) }
	if hits := output(0)["hits"].([]any); len(hits) != 1 || hits[0].(map[string]any)["document_id"] != doc {
		t.Errorf("retrieve: %v", output(0))
	}
	ranked := output(1)["results"].([]any)
	if len(ranked) != 1 || !strings.Contains(ranked[0].(map[string]any)["document"].(map[string]any)["text"].(string), "14 days") ||
		ranked[0].(map[string]any)["relevance_score"] == nil {
		t.Errorf("rerank: %v", output(1))
	}
	ans := output(2)
	cits, _ := ans["citations"].([]any)
	if !strings.Contains(ans["text"].(string), "14") || len(cits) == 0 {
		t.Fatalf("answer: %v", ans)
	}
	src := cits[0].(map[string]any)["sources"].([]any)[0].(map[string]any)
	if src["document_id"] != doc || src["collection_id"] != col {
		t.Errorf("the answer's citation: %v", cits[0])
	}
	// The answer's citations are source links, like an answer over HTTP.
	if links := e.json("GET", "/v1/source_links?document_id="+doc, nil, 200)["data"].([]any); len(links) == 0 {
		t.Errorf("no source link for the workflow's answer")
	}
	// Each model call is in the request log for the run.
	want := []string{"POST /v1/collections/{id}/search 200", "POST /v1/completions 200", "POST /v1/rerank 200"} // sorted
	var got []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got = got[:0]
		for _, l := range e.json("GET", "/v1/logs?user=workflow_run:"+run["id"].(string), nil, 200)["data"].([]any) {
			l := l.(map[string]any)
			got = append(got, fmt.Sprint(l["route"], " ", l["status"]))
		}
		slices.Sort(got)
		if slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the run's request records: %v, want %v", got, want)
	}
}
