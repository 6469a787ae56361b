package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/events/eventstest"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
	"github.com/sovereign-ai/sovereign/internal/workflow"
)

// chatterFunc and fetcherFunc are function-field fakes of the service's
// ports (the end-to-end tests use the real generation service and
// outbound client).
type chatterFunc func(ctx context.Context, keyID, user, model string, req inference.CompletionRequest) (workflow.ChatAnswer, error)

func (f chatterFunc) Chat(ctx context.Context, keyID, user, model string, req inference.CompletionRequest) (workflow.ChatAnswer, error) {
	return f(ctx, keyID, user, model, req)
}

type fetcherFunc func(ctx context.Context, method, url string, h map[string]string, body string) (int, map[string]string, []byte, error)

func (f fetcherFunc) Fetch(ctx context.Context, method, url string, h map[string]string, body string) (int, map[string]string, []byte, error) {
	return f(ctx, method, url, h, body)
}

func (f fetcherFunc) Refused(ctx context.Context, url string) error {
	if strings.Contains(url, "127.0.0.1") {
		return errors.New("outbound: refusing 127.0.0.1 (loopback)")
	}
	return nil
}

type harness struct {
	svc    *workflow.Service
	events *eventstest.Store
	key    auth.Key
}

func newHarness(t *testing.T, chatter chatterFunc, fetcher fetcherFunc) *harness {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "sovereign.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	evs := &eventstest.Store{}
	bus := events.New(events.Config{Store: evs})
	t.Cleanup(bus.Close)
	svc := &workflow.Service{Store: st, Events: bus}
	if chatter != nil {
		svc.Chatter = chatter
	}
	if fetcher != nil {
		svc.Fetcher = fetcher
	}
	e, err := durable.New(ctx, durable.Config{DatabaseURL: filepath.Join(dir, "sovereign.db")})
	if err != nil {
		t.Fatal(err)
	}
	svc.Engine = e
	svc.Register(e)
	if err := e.Launch(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(time.Second) })
	return &harness{svc: svc, events: evs, key: auth.Key{ID: "key_test", TeamID: "team_a", Scopes: []auth.Scope{auth.ScopeWorkflows}}}
}

func (h *harness) define(t *testing.T, spec string) workflow.Definition {
	t.Helper()
	d, err := h.svc.Create(context.Background(), "team_a", "test", "", json.RawMessage(spec))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// wait waits for the run to reach one of states.
func (h *harness) wait(t *testing.T, id string, states ...string) workflow.Run {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := h.svc.Store.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range states {
			if r.Status == s {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s, want %v: %+v", id, r.Status, states, r.Error)
		}
	}
}

func (h *harness) pendingApproval(t *testing.T, runID string) workflow.Approval {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		as, _, err := h.svc.Store.ListApprovals(context.Background(), "team_a", workflow.ApprovalPending, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			if a.RunID == runID {
				return a
			}
		}
	}
	t.Fatal("no pending approval")
	return workflow.Approval{}
}

const approvalSpec = `{"steps": [
	{"id": "draft", "type": "transform", "template": "Dear {{ input.name }}, your refund of {{ input.amount }} EUR is approved."},
	{"id": "review", "type": "approval", "instructions": "Check the refund for {{ input.name }}", "timeout": "%s"},
	{"id": "send", "type": "transform", "expression": "steps.draft.output.text + ' (' + steps.review.output.decision + ')'"}
], "output": {"letter": "{{ steps.send.output.value }}"}}`

func TestApprovedRunSucceeds(t *testing.T) {
	h := newHarness(t, nil, nil)
	d := h.define(t, fmt.Sprintf(approvalSpec, "1h"))
	r, err := h.svc.Start(context.Background(), h.key, d.ID, json.RawMessage(`{"name": "Ada", "amount": 40}`))
	if err != nil {
		t.Fatal(err)
	}
	a := h.pendingApproval(t, r.ID)
	if a.Instructions != "Check the refund for Ada" {
		t.Errorf("instructions %q", a.Instructions)
	}
	h.wait(t, r.ID, workflow.RunWaitingApproval)
	// A key of another team does not see the approval (even an admin
	// key: teams are isolated); one of the team outside the approvers may
	// not decide.
	// Another team's approval is not found in the same words as a
	// missing one: nothing tells that it exists.
	if _, err := h.svc.Decide(context.Background(), auth.Key{ID: "key_b", TeamID: "team_b", Scopes: []auth.Scope{auth.ScopeAdmin}}, a.ID, true, ""); !errors.Is(err, workflow.ErrNotFound) ||
		apierr.From(err).Message != "No approval '"+a.ID+"'." {
		t.Fatalf("another team's key decided: %v", err)
	}
	if _, err := h.svc.Decide(context.Background(), h.key, "apr_missing", true, ""); !errors.Is(err, workflow.ErrNotFound) ||
		apierr.From(err).Message != "No approval 'apr_missing'." {
		t.Fatalf("a missing approval: %v", err)
	}
	if _, err := h.svc.Decide(context.Background(), auth.Key{ID: "key_c", TeamID: h.key.TeamID, Scopes: []auth.Scope{auth.ScopeInference}}, a.ID, true, ""); apierr.CodeOf(err) != apierr.PermissionDenied {
		t.Fatalf("a key outside the approvers decided: %v", err)
	}
	if _, err := h.svc.Decide(context.Background(), h.key, a.ID, true, "fine"); err != nil {
		t.Fatal(err)
	}
	// Deciding again differently is a conflict; the same decision again is
	// delivered again (a retried request).
	if _, err := h.svc.Decide(context.Background(), h.key, a.ID, false, ""); apierr.CodeOf(err) != apierr.Conflict || apierr.From(err).Message != "the approval is approved already" {
		t.Fatalf("second decision: %v", err)
	}
	if _, err := h.svc.Decide(context.Background(), h.key, a.ID, true, "fine"); err != nil {
		t.Fatalf("repeated decision: %v", err)
	}
	r = h.wait(t, r.ID, workflow.RunSucceeded, workflow.RunFailed)
	if r.Status != workflow.RunSucceeded {
		t.Fatalf("run %s: %+v", r.Status, r.Error)
	}
	var out map[string]string
	json.Unmarshal(r.Output, &out)
	if out["letter"] != "Dear Ada, your refund of 40 EUR is approved. (approved)" {
		t.Errorf("output %s", r.Output)
	}
	for _, st := range r.Steps {
		if st.Status != workflow.StepSucceeded || st.StartedAt == nil || st.EndedAt == nil {
			t.Errorf("step %s: %s", st.StepID, st.Status)
		}
	}
	// The run's events, in order: every state change, ending with the run.
	var seq []string
	for _, ev := range h.events.All() {
		if ev.Subject != r.ID {
			continue
		}
		var data struct {
			Step   string `json:"step_id"`
			Status string `json:"status"`
		}
		b, _ := ev.DataJSON()
		json.Unmarshal(b, &data)
		switch ev.Type {
		case events.WorkflowStepUpdated:
			seq = append(seq, data.Step+":"+data.Status)
		case events.WorkflowApprovalRequested:
			seq = append(seq, "approval.requested")
		default:
			seq = append(seq, "run:"+data.Status)
		}
	}
	want := "run:queued run:running draft:running draft:succeeded review:waiting_approval run:waiting_approval approval.requested run:running review:succeeded send:running send:succeeded run:succeeded"
	if got := strings.Join(seq, " "); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
}

func TestRejectedRunFails(t *testing.T) {
	h := newHarness(t, nil, nil)
	d := h.define(t, fmt.Sprintf(approvalSpec, "1h"))
	r, _ := h.svc.Start(context.Background(), h.key, d.ID, json.RawMessage(`{"name": "Bo", "amount": 9000}`))
	a := h.pendingApproval(t, r.ID)
	if _, err := h.svc.Decide(context.Background(), h.key, a.ID, false, "too much"); err != nil {
		t.Fatal(err)
	}
	r = h.wait(t, r.ID, workflow.RunSucceeded, workflow.RunFailed)
	if r.Status != workflow.RunFailed || r.Error == nil || r.Error.Code != "approval_rejected" || !strings.Contains(r.Error.Message, "too much") {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	if r.Steps[2].Status != workflow.StepPending {
		t.Errorf("the step after a rejection: %s", r.Steps[2].Status)
	}
}

func TestApprovalExpires(t *testing.T) {
	h := newHarness(t, nil, nil)
	d := h.define(t, fmt.Sprintf(approvalSpec, "1s"))
	r, _ := h.svc.Start(context.Background(), h.key, d.ID, json.RawMessage(`{"name": "Cy", "amount": 1}`))
	a := h.pendingApproval(t, r.ID)
	r = h.wait(t, r.ID, workflow.RunSucceeded, workflow.RunFailed)
	if r.Status != workflow.RunFailed || r.Error.Code != "approval_expired" {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	a, _ = h.svc.Store.GetApproval(context.Background(), a.ID)
	if a.Status != workflow.ApprovalExpired {
		t.Errorf("approval %s", a.Status)
	}
	if _, err := h.svc.Decide(context.Background(), h.key, a.ID, true, ""); apierr.CodeOf(err) != apierr.Conflict {
		t.Errorf("deciding an expired approval: %v", err)
	}
}

func TestBranchesRetriesAndCalls(t *testing.T) {
	var fetches atomic.Int32
	var calls []string
	h := newHarness(t, func(ctx context.Context, keyID, user, model string, req inference.CompletionRequest) (workflow.ChatAnswer, error) {
		calls = append(calls, keyID+" "+model)
		if !strings.HasPrefix(user, "workflow_run:run_") {
			return workflow.ChatAnswer{}, apierr.Invalid("user", "no user")
		}
		return workflow.ChatAnswer{Model: model, Text: "four", FinishReason: "stop"}, nil
	}, func(ctx context.Context, method, url string, hd map[string]string, body string) (int, map[string]string, []byte, error) {
		if fetches.Add(1) < 3 {
			return 503, nil, []byte("busy"), nil
		}
		return 200, map[string]string{"content-type": "application/json"}, []byte(`{"ok": true, "echo": ` + body + `}`), nil
	})
	d := h.define(t, `{"steps": [
		{"id": "big", "type": "condition", "when": "input.n > 10", "then": "ask", "else": "small"},
		{"id": "small", "type": "transform", "template": "small"},
		{"id": "ask", "type": "chat", "model": "m", "messages": [{"role": "user", "content": "2+2 for {{ input.n }}?"}]},
		{"id": "skipme", "type": "transform", "if": "steps.ask.status == 'skipped'", "template": "never"},
		{"id": "hook", "type": "http", "method": "POST", "url": "https://hooks.example.com/x", "body": "{\"answer\": \"{{ steps.ask.output.text }}\"}",
		 "retry": {"max_attempts": 3, "backoff": "10ms"}}
	]}`)
	r, _ := h.svc.Start(context.Background(), h.key, d.ID, json.RawMessage(`{"n": 42}`))
	r = h.wait(t, r.ID, workflow.RunSucceeded, workflow.RunFailed)
	if r.Status != workflow.RunSucceeded {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	got := map[string]string{}
	for _, st := range r.Steps {
		got[st.StepID] = st.Status
	}
	if got["small"] != "skipped" || got["ask"] != "succeeded" || got["skipme"] != "skipped" || got["hook"] != "succeeded" {
		t.Errorf("steps %v", got)
	}
	if r.Steps[4].Attempts != 3 || fetches.Load() != 3 {
		t.Errorf("http step: %d attempts, %d fetches, want 3", r.Steps[4].Attempts, fetches.Load())
	}
	var out struct {
		JSON struct {
			Echo struct{ Answer string } `json:"echo"`
		} `json:"json"`
	}
	json.Unmarshal(r.Output, &out)
	if out.JSON.Echo.Answer != "four" || len(calls) != 1 || calls[0] != "key_test m" {
		t.Errorf("output %s, calls %v", r.Output, calls)
	}
}

func TestFailedStepFailsRun(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, keyID, user, model string, req inference.CompletionRequest) (workflow.ChatAnswer, error) {
		return workflow.ChatAnswer{}, &apierr.Error{Code: apierr.ModelNotFound, Param: "model", Message: "The model 'nope' does not exist"}
	}, nil)
	d := h.define(t, `{"steps": [{"id": "ask", "type": "chat", "model": "nope", "messages": [{"role": "user", "content": "hi"}]},
		{"id": "after", "type": "transform", "template": "x"}]}`)
	r, _ := h.svc.Start(context.Background(), h.key, d.ID, nil)
	r = h.wait(t, r.ID, workflow.RunSucceeded, workflow.RunFailed)
	if r.Status != workflow.RunFailed || r.Error.Step != "ask" || !strings.Contains(r.Error.Message, "model_not_found") {
		t.Fatalf("run %s %+v", r.Status, r.Error)
	}
	if r.Steps[0].Status != workflow.StepFailed || r.Steps[1].Status != workflow.StepPending {
		t.Errorf("steps %s %s", r.Steps[0].Status, r.Steps[1].Status)
	}
}

// TestRetriesOnlyWhatARetryCanFix: a step with retries tries again after
// a 429 or a 503, not after a 400 or a 404 (an API call's or a remote
// server's), which fail it at its first attempt.
func TestRetriesOnlyWhatARetryCanFix(t *testing.T) {
	for _, c := range []struct {
		status   int
		attempts int
	}{{400, 1}, {404, 1}, {429, 3}, {503, 3}} {
		var calls, fetches atomic.Int32
		code := map[int]apierr.Code{400: apierr.InvalidRequest, 404: apierr.ModelNotFound, 429: apierr.RateLimitExceeded, 503: apierr.ModelOverloaded}[c.status]
		h := newHarness(t, func(ctx context.Context, keyID, user, model string, req inference.CompletionRequest) (workflow.ChatAnswer, error) {
			calls.Add(1)
			return workflow.ChatAnswer{}, apierr.New(code, "no")
		}, func(ctx context.Context, method, url string, hd map[string]string, body string) (int, map[string]string, []byte, error) {
			fetches.Add(1)
			return c.status, nil, []byte("no"), nil
		})
		for _, step := range []string{
			`{"id": "s", "type": "chat", "model": "m", "messages": [{"role": "user", "content": "hi"}], "retry": {"max_attempts": 3, "backoff": "10ms"}}`,
			`{"id": "s", "type": "http", "method": "GET", "url": "https://hooks.example.com/x", "retry": {"max_attempts": 3, "backoff": "10ms"}}`,
		} {
			d := h.define(t, `{"steps": [`+step+`]}`)
			r, _ := h.svc.Start(context.Background(), h.key, d.ID, nil)
			r = h.wait(t, r.ID, workflow.RunSucceeded, workflow.RunFailed)
			if r.Status != workflow.RunFailed || r.Steps[0].Attempts != c.attempts {
				t.Errorf("status %d, %s: run %s after %d attempts, want failed after %d", c.status, step[:40], r.Status, r.Steps[0].Attempts, c.attempts)
			}
		}
		if int(calls.Load()) != c.attempts || int(fetches.Load()) != c.attempts {
			t.Errorf("status %d: %d calls, %d fetches, want %d each", c.status, calls.Load(), fetches.Load(), c.attempts)
		}
	}
}

func TestCancelWaitingRun(t *testing.T) {
	h := newHarness(t, nil, nil)
	d := h.define(t, `{"steps": [{"id": "nap", "type": "wait", "duration": "1h"}, {"id": "after", "type": "transform", "template": "x"}]}`)
	r, _ := h.svc.Start(context.Background(), h.key, d.ID, nil)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, _ = h.svc.Store.GetRun(context.Background(), r.ID)
		if r.Steps[0].Status == workflow.StepRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the wait step never started: %+v", r.Steps[0])
		}
	}
	r, err := h.svc.Cancel(context.Background(), h.key, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != workflow.RunCancelled || r.Steps[0].Status != workflow.StepCancelled || r.Steps[1].Status != workflow.StepCancelled {
		t.Fatalf("after cancel: %s %s %s", r.Status, r.Steps[0].Status, r.Steps[1].Status)
	}
	time.Sleep(300 * time.Millisecond)
	if r, _ = h.svc.Store.GetRun(context.Background(), r.ID); r.Status != workflow.RunCancelled {
		t.Errorf("the run moved on after its cancellation: %s", r.Status)
	}
	if _, err := h.svc.Cancel(context.Background(), h.key, r.ID); apierr.CodeOf(err) != apierr.Conflict {
		t.Errorf("cancelling twice: %v", err)
	}
}

func TestPrivateTargetRefusedWhenSaved(t *testing.T) {
	h := newHarness(t, nil, func(ctx context.Context, method, url string, hd map[string]string, body string) (int, map[string]string, []byte, error) {
		return 200, nil, nil, nil
	})
	_, err := h.svc.Create(context.Background(), "team_a", "x", "", json.RawMessage(`{"steps": [{"id": "a", "type": "transform", "template": "x"}, {"id": "b", "type": "http", "url": "http://127.0.0.1:9/x"}]}`))
	var ve *apierr.Error
	if !errors.As(err, &ve) || ve.Code != apierr.InvalidRequest || ve.Param != "steps[1].url" || !strings.Contains(ve.Message, "loopback") {
		t.Fatalf("got %v", err)
	}
}

func TestValidation(t *testing.T) {
	for _, c := range []struct{ spec, param, msg string }{
		{`{"steps": []}`, "steps", "1 to"},
		{`{"steps": [{"id": "a", "type": "teleport"}]}`, "steps[0].type", "unknown step type"},
		{`{"steps": [{"id": "a", "type": "wait", "duration": "1s", "model": "x"}]}`, "steps[0].model", "takes no"},
		{`{"steps": [{"id": "a", "type": "wait", "duration": "soon"}]}`, "steps[0].duration", "duration"},
		{`{"steps": [{"id": "a", "type": "transform", "template": "x"}, {"id": "a", "type": "transform", "template": "y"}]}`, "steps[1].id", "twice"},
		{`{"steps": [{"id": "a", "type": "condition", "when": "input.x >", "then": "b"}, {"id": "b", "type": "transform", "template": "y"}]}`, "steps[0].when", "1:"},
		{`{"steps": [{"id": "a", "type": "condition", "when": "'yes'", "then": "b"}, {"id": "b", "type": "transform", "template": "y"}]}`, "steps[0].when", "bool"},
		{`{"steps": [{"id": "a", "type": "transform", "template": "x"}, {"id": "b", "type": "condition", "when": "true", "then": "a"}]}`, "steps[1].then", "forward"},
		{`{"steps": [{"id": "a", "type": "transform", "template": "{{ input.x "}]}`, "steps[0].template", ""},
		{`{"steps": [{"id": "a", "type": "transform", "template": "{% include '/etc/passwd' %}"}]}`, "steps[0].template", "not available"},
		{`{"steps": [{"id": "a", "type": "chat", "model": "m", "messages": [{"role": "robot", "content": "x"}]}]}`, "steps[0].messages[0].role", "role"},
		{`{"steps": [{"id": "a", "type": "http", "url": "ftp://x"}]}`, "steps[0].url", "http"},
		{`{"steps": [{"id": "a", "type": "answer_with_sources", "model": "m", "collection_ids": ["c"], "question": "q", "max_tokens": 0}]}`, "steps[0].max_tokens", "at least 1"},
		{`{"steps": [{"id": "a", "type": "retrieve", "collection_ids": ["c"], "query": "q", "temperature": 0}]}`, "steps[0].temperature", "takes no"},
		{`{"steps": [{"id": "a", "type": "transform", "template": "x", "retry": {"max_attempts": 50}}]}`, "steps[0].retry", "takes no"},
		{`{"steps": [{"id": "a", "type": "chat", "model": "m", "messages": [{"role": "user", "content": "x"}], "retry": {"max_attempts": 50}}]}`, "steps[0].retry.max_attempts", "1 to"},
		{`{"steps": [{"id": "a", "type": "transform", "template": "x"}], "extra": 1}`, "extra", "unknown field"},
	} {
		_, err := workflow.ParseSpec(json.RawMessage(c.spec))
		var ve *apierr.Error
		if !errors.As(err, &ve) || ve.Code != apierr.InvalidRequest || ve.Param != c.param || !strings.Contains(ve.Message, c.msg) {
			t.Errorf("%s: got %v, want param %s with %q", c.spec, err, c.param, c.msg)
		}
	}
}

// TestNotFound: another team's workflow or run and a missing one are not
// found in the same words, naming the id the request named (the HTTP
// layer shows the message as it is); a definition updated meanwhile is a
// conflict that says so.
func TestNotFound(t *testing.T) {
	h := newHarness(t, nil, nil)
	ctx := context.Background()
	d := h.define(t, `{"steps": [{"id": "a", "type": "wait", "duration": "1h"}]}`)
	r, err := h.svc.Start(ctx, h.key, d.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	teamB := auth.Key{ID: "key_b", TeamID: "team_b", Scopes: []auth.Scope{auth.ScopeAdmin}}
	second := func(_ any, err error) error { return err }
	for _, c := range []struct {
		what string
		err  error
		want string
	}{
		{"another team's workflow", second(h.svc.GetWorkflow(ctx, teamB, d.ID)), "No workflow '" + d.ID + "'."},
		{"a missing workflow", second(h.svc.GetWorkflow(ctx, h.key, "wf_missing")), "No workflow 'wf_missing'."},
		{"starting another team's workflow", second(h.svc.Start(ctx, teamB, d.ID, nil)), "No workflow '" + d.ID + "'."},
		{"deleting a missing workflow", h.svc.DeleteWorkflow(ctx, h.key, "wf_missing"), "No workflow 'wf_missing'."},
		{"another team's run", second(h.svc.GetRun(ctx, teamB, r.ID)), "No workflow run '" + r.ID + "'."},
		{"cancelling a missing run", second(h.svc.Cancel(ctx, h.key, "run_missing")), "No workflow run 'run_missing'."},
		{"a missing approval", second(h.svc.GetApproval(ctx, h.key, "apr_missing")), "No approval 'apr_missing'."},
	} {
		if e := apierr.From(c.err); !errors.Is(c.err, workflow.ErrNotFound) || e.Status() != 404 || e.Message != c.want {
			t.Errorf("%s: %v, want 404 %q", c.what, c.err, c.want)
		}
	}
	// An update that finds another version stored (one that came first).
	stale := d
	stale.Version = 5
	err = h.svc.Store.UpdateWorkflow(ctx, stale)
	if e := apierr.From(err); !errors.Is(err, workflow.ErrConflict) || e.Status() != 409 || e.Message != "The workflow changed meanwhile; read it again." {
		t.Errorf("a stale update: %v", err)
	}
	if _, err := h.svc.Cancel(ctx, h.key, r.ID); err != nil {
		t.Fatal(err)
	}
}
