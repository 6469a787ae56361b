package workflow

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/sources"
)

// storeRetry is the retry policy of the steps that only read or write the
// store: a store that fails for a moment does not fail the run.
var storeRetry = durable.StepOptions{Retries: 5, Backoff: 500 * time.Millisecond, MaxBackoff: 10 * time.Second}

// execute is the durable workflow of one run. The code between steps is
// deterministic (expressions and templates over stored step results), so
// a run resumed after a crash takes the same path up to where it stopped;
// each step writes its state before and after it runs and publishes the
// change, and is written to be repeatable.
func (s *Service) execute(ctx durable.Context, runID string) error {
	r, err := durable.Step(ctx, "load", func(c context.Context) (Run, error) { return s.Store.GetRun(c, runID) }, storeRetry)
	if err != nil {
		return err
	}
	if Terminal(r.Status) {
		return nil
	}
	sp, err := ParseSpec(r.Spec)
	if err != nil {
		msg := apierr.From(err).Message
		if p := apierr.From(err).Param; p != "" {
			msg = p + ": " + msg
		}
		return s.failRun(ctx, r, &RunError{Code: "invalid_definition", Message: msg})
	}
	if _, err := durable.Step(ctx, "start", func(c context.Context) (bool, error) {
		return s.setRun(c, r, RunRunning, nil, nil)
	}, storeRetry); err != nil {
		return err
	}
	vars := runVars(r)
	steps := vars["steps"].(map[string]any)
	index := map[string]int{}
	for i, st := range sp.Steps {
		index[st.ID] = i
	}
	var last json.RawMessage
	for i := 0; i < len(sp.Steps); {
		st := sp.Steps[i]
		state := StepState{RunID: r.ID, StepID: st.ID, Seq: i, Type: st.Type}
		if st.If != "" {
			ok, err := evalBool(st.If, vars)
			if err != nil {
				return s.failStep(ctx, r, state, &RunError{Code: "expression_error", Message: "if: " + err.Error(), Step: st.ID})
			}
			if !ok {
				if err := s.skip(ctx, r, state); err != nil {
					return err
				}
				steps[st.ID] = map[string]any{"status": StepSkipped, "output": nil}
				i++
				continue
			}
		}
		next := i + 1
		var out json.RawMessage
		var serr *RunError
		switch st.Type {
		case StepCondition:
			ok, err := evalBool(st.When, vars)
			if err != nil {
				serr = &RunError{Code: "expression_error", Message: "when: " + err.Error(), Step: st.ID}
				break
			}
			target := st.Else
			if ok {
				target = st.Then
			}
			if target != "" {
				next = index[target]
			}
			out, _ = json.Marshal(map[string]any{"result": ok, "next": target})
			if err := s.quickStep(ctx, r, state, out); err != nil {
				return err
			}
			for j := i + 1; j < next; j++ {
				if err := s.skip(ctx, r, StepState{RunID: r.ID, StepID: sp.Steps[j].ID, Seq: j, Type: sp.Steps[j].Type}); err != nil {
					return err
				}
				steps[sp.Steps[j].ID] = map[string]any{"status": StepSkipped, "output": nil}
			}
		case StepApproval:
			out, serr, err = s.approval(ctx, r, state, st, vars)
			if err != nil {
				return err
			}
		case StepWait:
			if _, err := durable.Step(ctx, "wait:"+st.ID, func(c context.Context) (bool, error) {
				now := s.now()
				state.Status, state.StartedAt, state.Attempts = StepRunning, &now, 1
				return true, s.putStep(c, r, state)
			}, storeRetry); err != nil {
				return err
			}
			// A durable wait that a cancellation can cut short: Cancel
			// sends on the step's wake topic.
			d := duration(st.Duration, 0)
			if _, woken, err := durable.Recv[bool](ctx, "wake:"+st.ID, d); err != nil {
				return err
			} else if woken {
				return nil
			}
			out, _ = json.Marshal(map[string]any{"waited": d.String()})
			if err := s.quickStep(ctx, r, state, out); err != nil {
				return err
			}
		default:
			out, serr, err = s.work(ctx, r, &state, st, vars)
			if err != nil {
				return err
			}
		}
		if serr != nil {
			return s.failStep(ctx, r, state, serr)
		}
		steps[st.ID] = map[string]any{"status": StepSucceeded, "output": decodeJSON(out)}
		last = out
		i = next
	}
	output := last
	if sp.Output != nil {
		v, err := renderValue(sp.Output, vars)
		if err != nil {
			return s.failRun(ctx, r, &RunError{Code: "template_error", Message: "output: " + err.Error()})
		}
		output, _ = json.Marshal(v)
	}
	_, err = durable.Step(ctx, "finish", func(c context.Context) (bool, error) {
		return s.setRun(c, r, RunSucceeded, output, nil)
	}, storeRetry)
	return err
}

// runVars is what expressions and templates see.
func runVars(r Run) map[string]any {
	input := decodeJSON(r.Input)
	return map[string]any{
		"input": input,
		"steps": map[string]any{},
		"run":   map[string]any{"id": r.ID, "workflow_id": r.WorkflowID, "version": r.Version},
	}
}

// decodeJSON decodes a JSON value for expressions and templates: whole
// numbers become integers (as they would in Python's Jinja and in CEL's
// int arithmetic: 40, not 40.0), others float64.
func decodeJSON(b json.RawMessage) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	return numbers(v)
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = numbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = numbers(x[k])
		}
	}
	return v
}

// setRun moves the run to status and publishes the change; a run already
// finished (cancelled meanwhile) is left alone.
func (s *Service) setRun(ctx context.Context, r Run, status string, output json.RawMessage, rerr *RunError) (bool, error) {
	return s.setRunAs(ctx, r, status, status, output, rerr)
}

// setRunAs is setRun with the key of the event's id: a run goes back to
// running after each approval, one event each.
func (s *Service) setRunAs(ctx context.Context, r Run, key, status string, output json.RawMessage, rerr *RunError) (bool, error) {
	ok, err := s.Store.SetRunStatus(ctx, r.ID, status, output, rerr, s.now())
	if err != nil || !ok {
		return ok, err
	}
	data := map[string]any{"run_id": r.ID, "workflow_id": r.WorkflowID, "status": status}
	if rerr != nil {
		data["error"] = rerr
	}
	typ := EventRunUpdated
	switch status {
	case RunSucceeded:
		typ = events.WorkflowRunSucceeded
	case RunFailed:
		typ = events.WorkflowRunFailed
	}
	s.publish(ctx, r, typ, key, data)
	return true, nil
}

func (s *Service) putStep(ctx context.Context, r Run, st StepState) error {
	written, err := s.Store.PutStep(ctx, st)
	if err != nil || !written {
		return err
	}
	s.publish(ctx, r, EventStepUpdated, fmt.Sprintf("%s:%s:%d", st.StepID, st.Status, st.Attempts), stepData(r, st))
	return nil
}

// skip marks a step skipped.
func (s *Service) skip(ctx durable.Context, r Run, st StepState) error {
	_, err := durable.Step(ctx, "skip:"+st.StepID, func(c context.Context) (bool, error) {
		st.Status = StepSkipped
		return true, s.putStep(c, r, st)
	}, storeRetry)
	return err
}

// quickStep records a step that did its work between steps (condition,
// the end of a wait) as succeeded with out.
func (s *Service) quickStep(ctx durable.Context, r Run, st StepState, out json.RawMessage) error {
	_, err := durable.Step(ctx, "done:"+st.StepID, func(c context.Context) (bool, error) {
		now := s.now()
		if st.StartedAt == nil {
			st.StartedAt = &now
		}
		st.Status, st.Output, st.EndedAt, st.Attempts = StepSucceeded, out, &now, max(st.Attempts, 1)
		return true, s.putStep(c, r, st)
	}, storeRetry)
	return err
}

// failStep records a step's failure and fails the run with it.
func (s *Service) failStep(ctx durable.Context, r Run, st StepState, rerr *RunError) error {
	if _, err := durable.Step(ctx, "fail:"+st.StepID, func(c context.Context) (bool, error) {
		now := s.now()
		if st.StartedAt == nil {
			st.StartedAt = &now
		}
		st.Status, st.Error, st.EndedAt = StepFailed, rerr, &now
		return true, s.putStep(c, r, st)
	}, storeRetry); err != nil {
		return err
	}
	return s.failRun(ctx, r, rerr)
}

func (s *Service) failRun(ctx durable.Context, r Run, rerr *RunError) error {
	_, err := durable.Step(ctx, "failed", func(c context.Context) (bool, error) {
		return s.setRun(c, r, RunFailed, nil, rerr)
	}, storeRetry)
	return err
}

// work runs a step that calls something, with the step's retries and
// timeout. A failure of the call after its tries is the step's error
// (serr); err is the engine's (cancellation, a crash's aftermath).
func (s *Service) work(ctx durable.Context, r Run, state *StepState, st Step, vars map[string]any) (json.RawMessage, *RunError, error) {
	o := durable.StepOptions{}
	if st.Retry != nil && st.Retry.MaxAttempts > 1 {
		o = durable.StepOptions{Retries: st.Retry.MaxAttempts - 1, Backoff: duration(st.Retry.Backoff, time.Second), MaxBackoff: 5 * time.Minute,
			Retryable: retryable}
	}
	timeout := duration(st.Timeout, DefaultStepTimeout)
	attempts := 0
	var last *RunError
	out, err := durable.Step(ctx, st.ID, func(c context.Context) (json.RawMessage, error) {
		attempts++
		now := s.now()
		state.Status, state.Attempts, state.StartedAt, state.Error = StepRunning, attempts, &now, nil
		if err := s.putStep(c, r, *state); err != nil {
			return nil, err
		}
		tc, cancel := context.WithTimeout(c, timeout)
		out, err := s.call(tc, r, st, vars)
		timedOut := errors.Is(tc.Err(), context.DeadlineExceeded)
		cancel()
		if err != nil {
			if timedOut && c.Err() == nil {
				err = fmt.Errorf("timed out after %v", timeout)
			}
			last = &RunError{Code: "step_failed", Message: err.Error(), Step: st.ID}
			return nil, err
		}
		end := s.now()
		state.Status, state.Output, state.EndedAt = StepSucceeded, out, &end
		return out, s.putStep(c, r, *state)
	}, o)
	if err == nil {
		return out, nil, nil
	}
	if durable.Interrupted(err) || ctx.Err() != nil {
		return nil, nil, err
	}
	// The step failed after its tries: the run fails with the last
	// try's error (read back from the engine when this is a resumed run
	// that failed before a crash).
	if last == nil {
		last = &RunError{Code: "step_failed", Message: err.Error(), Step: st.ID}
	}
	return nil, last, nil
}

// approval creates the step's approval, waits for its decision (or its
// timeout: expired) and records the outcome.
func (s *Service) approval(ctx durable.Context, r Run, state StepState, st Step, vars map[string]any) (json.RawMessage, *RunError, error) {
	timeout := duration(st.Timeout, DefaultApprovalTimeout)
	a, err := durable.Step(ctx, "approval:"+st.ID, func(c context.Context) (Approval, error) {
		instructions, err := render(st.Instructions, vars)
		if err != nil {
			instructions = st.Instructions
		}
		now := s.now()
		a := Approval{ID: approvalID(r.ID, st.ID), TeamID: r.TeamID, RunID: r.ID, WorkflowID: r.WorkflowID, StepID: st.ID,
			Status: ApprovalPending, Instructions: instructions, CreatedAt: now, ExpiresAt: now.Add(timeout)}
		if st.Approvers != nil {
			a.Approvers = *st.Approvers
		}
		if err := s.Store.CreateApproval(c, a); err != nil {
			return a, err
		}
		if a, err = s.Store.GetApproval(c, a.ID); err != nil {
			return a, err
		}
		state.Status, state.StartedAt, state.Attempts = StepWaitingApproval, &now, 1
		if err := s.putStep(c, r, state); err != nil {
			return a, err
		}
		if _, err := s.Store.SetRunStatus(c, r.ID, RunWaitingApproval, nil, nil, now); err != nil {
			return a, err
		}
		s.publish(c, r, EventRunUpdated, "waiting_approval:"+st.ID, map[string]any{"run_id": r.ID, "workflow_id": r.WorkflowID, "status": RunWaitingApproval, "step_id": st.ID})
		s.publish(c, r, events.WorkflowApprovalRequested, st.ID, map[string]any{"approval_id": a.ID, "run_id": r.ID,
			"workflow_id": r.WorkflowID, "step_id": st.ID, "instructions": a.Instructions, "expires_at": a.ExpiresAt.Unix()})
		return a, nil
	}, storeRetry)
	if err != nil {
		return nil, nil, err
	}
	d, ok, err := durable.Recv[decision](ctx, "approval:"+st.ID, time.Until(a.ExpiresAt))
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		// No decision in time: expire it — unless one lands at this very
		// moment, which then stands.
		d, err = durable.Step(ctx, "expire:"+st.ID, func(c context.Context) (decision, error) {
			got, err := s.Store.DecideApproval(c, a.ID, ApprovalExpired, "", "", s.now())
			if err != nil && !errors.Is(err, ErrConflict) {
				return decision{}, err
			}
			out := decision{Status: got.Status, Comment: got.Comment, DecidedBy: got.DecidedBy}
			if got.DecidedAt != nil {
				out.DecidedAt = *got.DecidedAt
			}
			return out, nil
		}, storeRetry)
		if err != nil {
			return nil, nil, err
		}
	}
	out, _ := json.Marshal(map[string]any{"approval_id": a.ID, "decision": d.Status, "comment": d.Comment, "decided_by": d.DecidedBy, "decided_at": d.DecidedAt.Unix()})
	switch d.Status {
	case ApprovalApproved:
		if _, err := durable.Step(ctx, "approved:"+st.ID, func(c context.Context) (bool, error) {
			return s.setRunAs(c, r, "running:"+st.ID, RunRunning, nil, nil)
		}, storeRetry); err != nil {
			return nil, nil, err
		}
		state.Attempts = 1
		return out, nil, s.quickStep(ctx, r, state, out)
	case ApprovalRejected:
		msg := "rejected"
		if d.Comment != "" {
			msg += ": " + d.Comment
		}
		return nil, &RunError{Code: "approval_rejected", Message: msg, Step: st.ID}, nil
	default:
		return nil, &RunError{Code: "approval_expired", Message: fmt.Sprintf("no decision within %v", timeout), Step: st.ID}, nil
	}
}

// approvalID is the id of a run's approval step: stable, so that the
// step that creates it can run again.
func approvalID(runID, stepID string) string {
	h := sha256.Sum256([]byte(runID + "\x00" + stepID))
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 22)
	for i := range b {
		b[i] = alphabet[int(h[i])%len(alphabet)]
	}
	return "appr_" + string(b)
}

// call does a calling step's work.
func (s *Service) call(ctx context.Context, r Run, st Step, vars map[string]any) (json.RawMessage, error) {
	user := "workflow_run:" + r.ID
	switch st.Type {
	case StepChat:
		req := inference.CompletionRequest{Messages: make([]inference.Message, len(st.Messages))}
		req.Temperature = 1 // OpenAI's default, as over HTTP
		for i, m := range st.Messages {
			c, err := render(m.Content, vars)
			if err != nil {
				return nil, fmt.Errorf("messages[%d].content: %w", i, err)
			}
			req.Messages[i] = inference.Message{Role: m.Role, Content: c}
		}
		if st.MaxTokens != nil {
			req.MaxTokens = *st.MaxTokens
		}
		if st.Temperature != nil {
			req.Temperature = float32(*st.Temperature)
		}
		if s.Chatter == nil {
			return nil, errors.New("chat steps are not configured")
		}
		ans, err := s.Chatter.Chat(ctx, r.KeyID, user, st.Model, req)
		if err != nil {
			return nil, stepError("chat", err)
		}
		usage := map[string]int{"prompt_tokens": ans.PromptTokens, "completion_tokens": ans.CompletionTokens, "total_tokens": ans.PromptTokens + ans.CompletionTokens}
		return json.Marshal(map[string]any{"text": ans.Text, "finish_reason": ans.FinishReason, "model": ans.Model, "usage": usage})
	case StepRetrieve:
		q, err := render(st.Query, vars)
		if err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		k := st.TopK
		if k == 0 {
			k = 5
		}
		var hits []sources.Result
		for _, col := range st.CollectionIDs {
			found, err := s.Searcher.Search(ctx, r.KeyID, user, col, q, k, st.Mode)
			if err != nil {
				return nil, stepError("collection "+col, err)
			}
			hits = append(hits, found...)
		}
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
		if len(hits) > k {
			hits = hits[:k]
		}
		texts := make([]string, len(hits))
		for i, h := range hits {
			texts[i] = h.Text
		}
		if hits == nil {
			hits = []sources.Result{} // "hits": [], as the API's empty list
		}
		return json.Marshal(map[string]any{"hits": hits, "text": strings.Join(texts, "\n\n")})
	case StepRerank:
		q, err := render(st.Query, vars)
		if err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		docs, err := evalExpr(st.Documents, vars)
		if err != nil {
			return nil, fmt.Errorf("documents: %w", err)
		}
		list, ok := docs.([]any)
		if !ok {
			return nil, fmt.Errorf("documents: the expression gave %T, not a list", docs)
		}
		texts, err := documentTexts(list)
		if err != nil {
			return nil, err
		}
		ranked, err := s.Reranker.Rerank(ctx, r.KeyID, user, st.Model, q, texts, st.TopN)
		if err != nil {
			return nil, stepError("rerank", err)
		}
		return json.Marshal(map[string]any{"results": ranked})
	case StepAnswerWithSources:
		q, err := render(st.Question, vars)
		if err != nil {
			return nil, fmt.Errorf("question: %w", err)
		}
		question := Question{Model: st.Model, Text: q, Collections: st.CollectionIDs, Temperature: st.Temperature}
		if st.MaxTokens != nil {
			question.MaxTokens = *st.MaxTokens
		}
		ans, err := s.Answerer.AnswerWithSources(ctx, r.KeyID, user, question)
		if err != nil {
			return nil, stepError("answer_with_sources", err)
		}
		return json.Marshal(map[string]any{"text": ans.Text, "citations": ans.Citations})
	case StepHTTP:
		u, err := render(st.URL, vars)
		if err != nil {
			return nil, fmt.Errorf("url: %w", err)
		}
		hdr := map[string]string{}
		for k, v := range st.Headers {
			if hdr[k], err = render(v, vars); err != nil {
				return nil, fmt.Errorf("headers.%s: %w", k, err)
			}
		}
		body, err := render(st.Body, vars)
		if err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		if s.Fetcher == nil {
			return nil, errors.New("outbound calls are not configured")
		}
		status, rh, resp, err := s.Fetcher.Fetch(ctx, st.Method, u, hdr, body)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"status": status, "headers": rh, "body": string(resp)}
		var js any
		if json.Unmarshal(resp, &js) == nil {
			out["json"] = js
		}
		if status >= 400 {
			err := fmt.Errorf("%s %s: HTTP %d", st.Method, u, status)
			if statusIsFinal(status) {
				return nil, permanent{err.Error()}
			}
			return nil, err
		}
		return json.Marshal(out)
	case StepTransform:
		if st.Template != "" {
			t, err := render(st.Template, vars)
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"text": t})
		}
		v, err := evalExpr(st.Expression, vars)
		if err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"value": v})
	}
	return nil, fmt.Errorf("step type %s does not call anything", st.Type)
}

// permanent is a step failure that another attempt would meet again: an
// API call refused with a 4xx (a bad request, a missing scope, a model
// that does not exist), a remote answer 4xx. A step's retries are for the
// rest: 408, 409 (a request still running under the same key), 425, 429,
// 5xx, and calls that got no answer. The durable engine stores a step's
// error with gob, hence a registered type of exported fields.
type permanent struct{ Msg string }

func (p permanent) Error() string { return p.Msg }

func init() { gob.Register(permanent{}) }

// stepError is a model call's API error as a step's failure: permanent
// unless apierr calls it retryable, and a call cut short by the run's own
// context (a cancel, a shutdown) stays that context's error.
func stepError(what string, err error) error {
	e := apierr.From(err)
	msg := fmt.Sprintf("%s: %d %s: %s", what, e.Status(), e.Code, e.Message)
	if !e.Retryable() {
		return permanent{msg}
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// retryable reports whether a step's failure is worth another attempt.
func retryable(err error) bool {
	var p permanent
	return !errors.As(err, &p)
}

// statusIsFinal reports whether an HTTP status is one a retry cannot
// change.
func statusIsFinal(status int) bool {
	return status >= 400 && status < 500 && status != 408 && status != 409 && status != 425 && status != 429
}
