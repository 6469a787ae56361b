package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/engine"
)

// workflowOperations are the Workflows tag's operations, checked live by
// TestOpenAPIWorkflowsMatch.
var workflowOperations = []string{
	"createWorkflow", "listWorkflows", "getWorkflow", "updateWorkflow", "deleteWorkflow",
	"createWorkflowRun", "listWorkflowRuns", "getWorkflowRun", "cancelWorkflowRun", "streamWorkflowRunEvents",
	"listApprovals", "getApproval", "decideApproval",
}

func init() { pendingLiveChecks = append(pendingLiveChecks, workflowOperations...) }

// waitRunSpec polls GET /v1/workflow_runs/{id} until the run has one of
// states.
func (c *specChecker) waitRunSpec(id string, states ...string) map[string]any {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		x := c.call("GET", "/v1/workflow_runs/"+id, nil)
		expectStatus(c.t, x, 200)
		r := x.json(c.t)
		for _, s := range states {
			if r["status"] == s {
				return r
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("run %s is %v, want %v: %v", id, r["status"], states, r)
		}
	}
}

// pendingApprovalSpec waits for the pending approval of run runID in GET
// /v1/approvals?status=pending.
func (c *specChecker) pendingApprovalSpec(runID string) map[string]any {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		x := c.call("GET", "/v1/approvals?status=pending", nil)
		expectStatus(c.t, x, 200)
		for _, a := range x.json(c.t)["data"].([]any) {
			if a := a.(map[string]any); a["run_id"] == runID {
				return a
			}
		}
	}
	c.t.Fatalf("run %s never asked for an approval", runID)
	return nil
}

// rawJSON encodes v for callRaw (a request the document refuses).
func rawJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refundDefinition is a workflow of transform, condition and approval
// steps — no model needed: a draft, a branch on the amount (small amounts
// skip the review), an approval waiting approvalTimeout, and a last
// transform over the earlier steps.
func refundDefinition(approvalTimeout string) map[string]any {
	return map[string]any{"steps": []any{
		map[string]any{"id": "draft", "type": "transform", "template": "Refund of {{ input.amount }} EUR for {{ input.name }}"},
		map[string]any{"id": "check", "type": "condition", "when": "input.amount > 100", "else": "done"},
		map[string]any{"id": "review", "type": "approval", "approvers": map[string]any{"scopes": []string{"approvals"}},
			"instructions": "Approve: {{ steps.draft.output.text }}", "timeout": approvalTimeout},
		map[string]any{"id": "done", "type": "transform", "expression": "steps.draft.output.text + ' / ' + steps.review.status"},
	}, "output": map[string]any{"text": "{{ steps.done.output.value }}"}}
}

// TestOpenAPIWorkflowsMatch checks every workflow route live against the
// document, on workflows of transform, condition and approval steps (no
// model): definitions (create, refused ones naming the field, list, get,
// new versions, delete), runs (approved, branched past the approval,
// cancelled, expired), approvals (list, get, decide; a key outside the
// approvers, another team, a second different decision), and a run's
// event stream with a resume.
func TestOpenAPIWorkflowsMatch(t *testing.T) {
	doc := loadSpec(t)
	e := newEnv(t, tinyStore(t), engine.Config{})
	c := newSpecChecker(t, doc, e)
	as := func(key string, f func()) {
		saved := c.key
		defer func() { c.key = saved }()
		c.key = key
		f()
	}
	newKey := func(name string, team any, scopes ...string) map[string]any {
		return e.json("POST", "/v1/keys", map[string]any{"name": name, "team_id": team, "scopes": scopes}, 201)
	}
	team := e.json("POST", "/v1/teams", map[string]any{"name": "refunds"}, 201)["id"]
	c.key = newKey("runner", team, "workflows")["key"].(string)
	approver := newKey("lead", team, "approvals")
	approverKey := approver["key"].(string)
	bystander := newKey("bystander", team, "workflows")["key"].(string)
	outsider := newKey("outsider", e.json("POST", "/v1/teams", map[string]any{"name": "elsewhere"}, 201)["id"], "workflows")["key"].(string)

	// Refused definitions name the field.
	bad := refundDefinition("1m")
	bad["steps"].([]any)[1].(map[string]any)["when"] = "input.amount >"
	if er := expectError(t, c.call("POST", "/v1/workflows", map[string]any{"name": "bad", "definition": bad}), 400, "invalid_request_error"); er["param"] != "definition.steps[1].when" ||
		!strings.HasPrefix(er["message"].(string), "1:") {
		t.Fatalf("CEL error: %v", er)
	}
	bad = refundDefinition("1m")
	bad["steps"].([]any)[0].(map[string]any)["template"] = "Refund of {{ input.amount "
	if er := expectError(t, c.call("POST", "/v1/workflows", map[string]any{"name": "bad", "definition": bad}), 400, "invalid_request_error"); er["param"] != "definition.steps[0].template" ||
		strings.Contains(er["message"].(string), "Refund of") {
		t.Fatalf("template error: %v", er)
	}
	if er := expectError(t, c.callRaw("POST", "/v1/workflows", rawJSON(t, map[string]any{"name": "bad", "definition": map[string]any{"steps": []any{
		map[string]any{"id": "a", "type": "teleport"}}}})), 400, "invalid_request_error"); er["param"] != "definition.steps[0].type" {
		t.Fatalf("unknown type: %v", er)
	}
	if er := expectError(t, c.callRaw("POST", "/v1/workflows", rawJSON(t, map[string]any{"name": "bad", "definition": map[string]any{"steps": []any{
		map[string]any{"id": "a", "type": "transform", "template": "x", "timeout": "1s"}}}})), 400, "invalid_request_error"); er["param"] != "definition.steps[0].timeout" {
		t.Fatalf("a field the type does not take: %v", er)
	}
	if er := expectError(t, c.callRaw("POST", "/v1/workflows", rawJSON(t, map[string]any{"name": "bad"})), 400, "invalid_request_error"); er["param"] != "definition" {
		t.Fatalf("no definition: %v", er)
	}

	// Create, list, get.
	x := c.call("POST", "/v1/workflows", map[string]any{"name": "refund", "description": "refunds above 100 EUR are reviewed", "definition": refundDefinition("1m")})
	expectStatus(t, x, 201)
	wf := x.json(t)
	wfID := wf["id"].(string)
	if wf["version"] != 1.0 || wf["object"] != "workflow" || len(wf["definition"].(map[string]any)["steps"].([]any)) != 4 {
		t.Fatalf("created: %v", wf)
	}
	x = c.call("GET", "/v1/workflows?limit=10", nil)
	expectStatus(t, x, 200)
	if l := x.json(t); l["first_id"] != wfID || l["has_more"] != false {
		t.Fatalf("list: %v", l)
	}
	expectStatus(t, c.call("GET", "/v1/workflows/"+wfID, nil), 200)
	expectError(t, c.callRaw("GET", "/v1/workflows?limit=0", nil), 400, "invalid_request_error")

	// Another team's key sees none of it.
	as(outsider, func() {
		expectError(t, c.call("GET", "/v1/workflows/"+wfID, nil), 404, "not_found")
		expectError(t, c.call("PUT", "/v1/workflows/"+wfID, map[string]any{"name": "mine", "definition": refundDefinition("1m")}), 404, "not_found")
		expectError(t, c.call("POST", "/v1/workflows/"+wfID+"/runs", map[string]any{"input": map[string]any{"amount": 1}}), 404, "not_found")
		expectError(t, c.call("DELETE", "/v1/workflows/"+wfID, nil), 404, "not_found")
		x := c.call("GET", "/v1/workflows", nil)
		expectStatus(t, x, 200)
		if l := x.json(t); len(l["data"].([]any)) != 0 || l["first_id"] != nil {
			t.Fatalf("another team's list: %v", l)
		}
	})

	// Run A waits for its review; its stream shows it from the start.
	start := func(amount int, name string) map[string]any {
		t.Helper()
		x := c.call("POST", "/v1/workflows/"+wfID+"/runs", map[string]any{"input": map[string]any{"amount": amount, "name": name}})
		expectStatus(t, x, 201)
		return x.json(t)
	}
	runA := start(500, "Ada")
	a := runA["id"].(string)
	if runA["version"] != 1.0 || runA["object"] != "workflow.run" || len(runA["steps"].([]any)) != 4 {
		t.Fatalf("started: %v", runA)
	}
	stream := c.openStream("/v1/workflow_runs/"+a+"/events", "")
	var ids, seen []string
	for len(seen) == 0 || seen[len(seen)-1] != "workflow.approval.requested:" {
		id, typ, ev := stream.next()
		data := ev["data"].(map[string]any)
		if data["run_id"] != a {
			t.Fatalf("an event of another run: %v", ev)
		}
		ids, seen = append(ids, id), append(seen, typ+":"+statusOf(data))
	}
	if want := "workflow.run.updated:queued workflow.run.updated:running workflow.step.updated:running"; !strings.HasPrefix(strings.Join(seen, " "), want) {
		t.Fatalf("the run's first events: %v", seen)
	}

	// Run B is small: the condition jumps over the review.
	b := start(50, "Bo")["id"].(string)
	runB := c.waitRunSpec(b, "succeeded", "failed")
	if runB["output"].(map[string]any)["text"] != "Refund of 50 EUR for Bo / skipped" || runB["steps"].([]any)[2].(map[string]any)["status"] != "skipped" {
		t.Fatalf("run B: %v", runB)
	}

	// The approval: a key outside the approvers gets 403, another team
	// 404, an approver decides; the same decision again is accepted, a
	// different one is a 409.
	ap := c.pendingApprovalSpec(a)
	apID := ap["id"].(string)
	x = c.call("GET", "/v1/approvals/"+apID, nil)
	expectStatus(t, x, 200)
	if got := x.json(t); got["instructions"] != "Approve: Refund of 500 EUR for Ada" || got["status"] != "pending" || got["decided_by"] != nil || got["step_id"] != "review" {
		t.Fatalf("approval: %v", got)
	}
	as(bystander, func() {
		expectError(t, c.call("POST", "/v1/approvals/"+apID, map[string]any{"decision": "approve"}), 403, "permission_denied")
	})
	as(outsider, func() {
		expectError(t, c.call("GET", "/v1/approvals/"+apID, nil), 404, "not_found")
		expectError(t, c.call("POST", "/v1/approvals/"+apID, map[string]any{"decision": "approve"}), 404, "not_found")
		expectError(t, c.call("GET", "/v1/workflow_runs/"+a, nil), 404, "not_found")
		expectError(t, c.call("POST", "/v1/workflow_runs/"+a+"/cancel", nil), 404, "not_found")
		expectError(t, c.call("GET", "/v1/workflow_runs/"+a+"/events", nil), 404, "not_found")
		x := c.call("GET", "/v1/approvals", nil)
		expectStatus(t, x, 200)
		if l := x.json(t); len(l["data"].([]any)) != 0 {
			t.Fatalf("another team's approvals: %v", l)
		}
	})
	as(approverKey, func() {
		if er := expectError(t, c.callRaw("POST", "/v1/approvals/"+apID, rawJSON(t, map[string]any{"decision": "maybe"})), 400, "invalid_request_error"); er["param"] != "decision" {
			t.Fatalf("decision: %v", er)
		}
		for range 2 {
			x := c.call("POST", "/v1/approvals/"+apID, map[string]any{"decision": "approve", "comment": "ok"})
			expectStatus(t, x, 200)
			if got := x.json(t); got["status"] != "approved" || got["decided_by"] != approver["id"] || got["comment"] != "ok" || got["decided_at"] == nil {
				t.Fatalf("decided: %v", got)
			}
		}
		expectError(t, c.call("POST", "/v1/approvals/"+apID, map[string]any{"decision": "reject"}), 409, "conflict")
	})
	runA = c.waitRunSpec(a, "succeeded", "failed")
	if runA["output"].(map[string]any)["text"] != "Refund of 500 EUR for Ada / succeeded" || runA["error"] != nil || runA["duration_ms"] == nil {
		t.Fatalf("run A: %v", runA)
	}
	if review := runA["steps"].([]any)[2].(map[string]any); review["output"].(map[string]any)["decision"] != "approved" {
		t.Fatalf("the review step: %v", review)
	}

	// The stream goes on to the run's end and stops there.
	for seen[len(seen)-1] != "workflow.run.succeeded:succeeded" {
		id, typ, ev := stream.next()
		ids, seen = append(ids, id), append(seen, typ+":"+statusOf(ev["data"].(map[string]any)))
	}
	stream.finish()
	want := "workflow.run.updated:queued workflow.run.updated:running workflow.step.updated:running workflow.step.updated:succeeded " +
		"workflow.step.updated:succeeded workflow.step.updated:waiting_approval workflow.run.updated:waiting_approval workflow.approval.requested: " +
		"workflow.run.updated:running workflow.step.updated:succeeded workflow.step.updated:running workflow.step.updated:succeeded workflow.run.succeeded:succeeded"
	if got := strings.Join(seen, " "); got != want {
		t.Errorf("run A's stream:\n got %s\nwant %s", got, want)
	}
	// A resume after the second event replays the rest, then ends.
	again := c.openStream("/v1/workflow_runs/"+a+"/events", ids[1])
	for i := 2; i < len(ids); i++ {
		if id, _, _ := again.next(); id != ids[i] {
			t.Fatalf("resumed: event %d is %s, want %s", i, id, ids[i])
		}
	}
	again.finish()
	// After the last event there is nothing to follow: 204, so that an
	// EventSource stops reconnecting instead of waiting for ever.
	end := c.newRequest("GET", "/v1/workflow_runs/"+a+"/events", nil)
	end.Header.Set("Last-Event-ID", ids[len(ids)-1])
	if x := c.send(end, nil, true); x.resp.StatusCode != 204 || len(x.body) != 0 {
		t.Fatalf("resumed after the last event: %d %q", x.resp.StatusCode, x.body)
	}
	req := c.newRequest("GET", "/v1/workflow_runs/"+a+"/events", nil)
	req.Header.Set("Last-Event-ID", "evt_doesnotexist")
	if er := expectError(t, c.send(req, nil, true), 400, "invalid_request_error"); er["param"] != "Last-Event-ID" {
		t.Fatalf("unknown Last-Event-ID: %v", er)
	}

	// Run C is cancelled while it waits: its approval expires with it.
	cRun := start(900, "Cy")["id"].(string)
	apC := c.pendingApprovalSpec(cRun)["id"].(string)
	x = c.call("POST", "/v1/workflow_runs/"+cRun+"/cancel", nil)
	expectStatus(t, x, 200)
	if got := x.json(t); got["status"] != "cancelled" || got["error"].(map[string]any)["code"] != "cancelled" || got["cancel_requested"] != true ||
		got["steps"].([]any)[2].(map[string]any)["status"] != "cancelled" {
		t.Fatalf("cancelled: %v", got)
	}
	expectError(t, c.call("POST", "/v1/workflow_runs/"+cRun+"/cancel", nil), 409, "conflict")
	x = c.call("GET", "/v1/approvals/"+apC, nil)
	expectStatus(t, x, 200)
	if got := x.json(t); got["status"] != "expired" || got["comment"] != "the run was cancelled" {
		t.Fatalf("the cancelled run's approval: %v", got)
	}
	as(approverKey, func() {
		expectError(t, c.call("POST", "/v1/approvals/"+apC, map[string]any{"decision": "approve"}), 409, "conflict")
	})

	// Version 2 waits a second for its review; run A keeps version 1.
	x = c.call("PUT", "/v1/workflows/"+wfID, map[string]any{"name": "refund", "definition": refundDefinition("1s")})
	expectStatus(t, x, 200)
	if got := x.json(t); got["version"] != 2.0 || got["id"] != wfID {
		t.Fatalf("updated: %v", got)
	}
	d := start(700, "Di")
	if d["version"] != 2.0 {
		t.Fatalf("run D: %v", d)
	}
	runD := c.waitRunSpec(d["id"].(string), "succeeded", "failed")
	if er := runD["error"].(map[string]any); er["code"] != "approval_expired" || er["step"] != "review" {
		t.Fatalf("run D: %v", runD)
	}
	x = c.call("GET", "/v1/approvals?status=expired", nil)
	expectStatus(t, x, 200)
	if l := x.json(t); len(l["data"].([]any)) != 2 {
		t.Fatalf("expired approvals: %v", l)
	}
	if got := c.waitRunSpec(a, "succeeded"); got["version"] != 1.0 {
		t.Fatalf("run A's version: %v", got["version"])
	}

	// Lists of runs: filters and pages; steps are left out.
	x = c.call("GET", "/v1/workflow_runs?workflow_id="+wfID+"&limit=3", nil)
	expectStatus(t, x, 200)
	if l := x.json(t); len(l["data"].([]any)) != 3 || l["has_more"] != true || l["first_id"] != d["id"] || l["data"].([]any)[0].(map[string]any)["steps"] != nil {
		t.Fatalf("runs: %v", l)
	}
	x = c.call("GET", "/v1/workflow_runs?status=succeeded", nil)
	expectStatus(t, x, 200)
	if l := x.json(t); len(l["data"].([]any)) != 2 || l["last_id"] != a {
		t.Fatalf("succeeded runs: %v", l)
	}
	if er := expectError(t, c.callRaw("GET", "/v1/workflow_runs?status=done", nil), 400, "invalid_request_error"); er["param"] != "status" {
		t.Fatalf("status filter: %v", er)
	}

	// Deleted: gone from the routes, its runs stay.
	x = c.call("DELETE", "/v1/workflows/"+wfID, nil)
	expectStatus(t, x, 200)
	if got := x.json(t); got["deleted"] != true || got["id"] != wfID {
		t.Fatalf("deleted: %v", got)
	}
	expectError(t, c.call("GET", "/v1/workflows/"+wfID, nil), 404, "not_found")
	expectError(t, c.call("POST", "/v1/workflows/"+wfID+"/runs", map[string]any{}), 404, "not_found")
	expectStatus(t, c.call("GET", "/v1/workflow_runs/"+a, nil), 200)

	if missing := c.uncovered(operationsExcept(c.doc, workflowOperations...)...); len(missing) > 0 {
		t.Errorf("not exercised: %v", missing)
	}
}

// statusOf is an event's data status ("" for none).
func statusOf(data map[string]any) string {
	s, _ := data["status"].(string)
	return s
}
