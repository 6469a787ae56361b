package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/inference"
)

// Run runs one line's request as the key keyID on the batch's endpoint
// through the generation service — the same scopes, limits, policies and
// request log as over HTTP, without an HTTP round trip: the body is
// decoded once and the answer rendered once, for the output file. user is
// the end user the line is attributed to when its body names none (its
// batch). err is for a line that could not be run at all (the key cannot
// be read, or is revoked).
type Run func(ctx context.Context, keyID, endpoint, user string, body []byte) (Answer, error)

// Answer is a line's answer: its status, the request id of its record,
// the body (JSON: the answer, or the API error's envelope), how long to
// wait before asking again (429 and 503), and the tokens it used.
type Answer struct {
	Status                    int
	RequestID                 string
	Body                      []byte
	RetryAfter                time.Duration
	InputTokens, OutputTokens int
}

// The durable workflow and its queue.
const (
	Workflow = "batch.run"
	Queue    = "batch"
	// QueueConcurrency bounds the batches one server runs at a time; their
	// lines share Config.Concurrency.
	QueueConcurrency = 16
)

// stepRetry is how a step that fails (the store) is retried.
var stepRetry = durable.StepOptions{Retries: 8, Backoff: time.Second, MaxBackoff: time.Minute}

// Register registers the batch workflow and its queue on e; call it before
// e launches.
func (s *Service) Register(e *durable.Engine) error {
	s.engine = e
	durable.Register(e, Workflow, s.run)
	e.Resumable(Workflow, s.open)
	return e.Queue(Queue, QueueConcurrency)
}

// open reports whether the batch of the workflow id is still to finish:
// the engine resumes such a workflow should a shutdown have cancelled it
// (a user's cancel goes through the batch's status, never the engine).
func (s *Service) open(ctx context.Context, workflowID string) (bool, error) {
	b, err := s.store.GetBatch(ctx, strings.TrimPrefix(workflowID, "batch:"))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil && !Final(b.Status), err
}

// SetRun gives a service built without Config.Run the function to run
// lines with. Batches that resume before it is set wait for it.
func (s *Service) SetRun(fn Run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.invoke == nil {
		s.invoke = fn
		close(s.ready)
	}
}

// Resume starts the workflow of every batch not in a final status (those
// whose workflow exists already are left alone: a start is idempotent),
// so that a batch stored just before a crash, before its workflow began,
// runs too; and removes uploads a crash interrupted over an hour ago. It
// returns how many batches are open.
func (s *Service) Resume(ctx context.Context) (int, error) {
	if n, err := s.store.PurgeUploads(ctx, s.now().Add(-time.Hour)); err != nil {
		s.log.Warn("batch: removing interrupted uploads", "err", err)
	} else if n > 0 {
		s.log.Info("batch: removed interrupted uploads", "files", n)
	}
	ids, err := s.store.OpenBatches(ctx)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if err := s.start(ctx, id); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

func (s *Service) start(ctx context.Context, id string) error {
	if s.engine == nil {
		return errors.New("batch: no durable engine (Register)")
	}
	return s.engine.Start(ctx, Queue, Workflow, "batch:"+id, id)
}

// run is the workflow of the batch id: validate it (its lines stored as
// rows), run its pending lines a step at a time until none is left or it
// is cancelled or expired, then finish it. Every step is repeatable: the
// progress is in the batch's rows, so a step a crash interrupted runs
// again over the lines still pending.
func (s *Service) run(ctx durable.Context, id string) error {
	status, err := durable.Step(ctx, "validate", func(c context.Context) (string, error) { return s.validate(c, id) }, stepRetry)
	if err != nil {
		return s.broken(ctx, id, err)
	}
	if status == StatusInProgress {
		for {
			more, err := durable.Step(ctx, "lines", func(c context.Context) (bool, error) { return s.runLines(c, id) }, stepRetry)
			if err != nil {
				return s.broken(ctx, id, err)
			}
			if !more {
				break
			}
		}
	}
	if _, err := durable.Step(ctx, "finish", func(c context.Context) (struct{}, error) { return struct{}{}, s.finish(c, id) }, stepRetry); err != nil {
		return s.broken(ctx, id, err)
	}
	return nil
}

// broken ends a batch whose step failed for good as failed, unless the
// workflow was interrupted (the server is stopping: it resumes later).
func (s *Service) broken(ctx durable.Context, id string, cause error) error {
	if ctx.Err() != nil {
		return cause
	}
	s.log.Error("batch: failed", "batch", id, "err", cause)
	_, err := durable.Step(ctx, "broken", func(c context.Context) (struct{}, error) {
		return struct{}{}, s.fail(c, id, []LineError{{Code: "internal_error", Message: "the batch could not be run: " + cause.Error()}})
	}, stepRetry)
	if err != nil {
		return err
	}
	return cause
}

// fail moves an unfinished batch to failed with errs, and publishes
// batch.failed.
func (s *Service) fail(ctx context.Context, id string, errs []LineError) error {
	ok, err := s.store.TransitionBatch(ctx, id, Transition{From: []string{StatusValidating, StatusInProgress, StatusFinalizing, StatusCancelling},
		To: StatusFailed, At: s.now().UTC(), Errors: errs})
	if err != nil || !ok {
		return err
	}
	return s.publish(ctx, id, events.BatchFailed)
}

// validate reads the input file of a validating batch, stores its lines
// as rows (again, harmlessly, when repeated) and moves the batch to
// in_progress — or to failed when a line's url is not the batch's
// endpoint or the file is gone. It returns the batch's status.
func (s *Service) validate(ctx context.Context, id string) (string, error) {
	b, err := s.store.GetBatch(ctx, id)
	if err != nil {
		return "", err
	}
	if b.Status != StatusValidating {
		return b.Status, nil
	}
	f, err := s.store.GetFile(ctx, b.InputFileID)
	if errors.Is(err, ErrNotFound) || err == nil && f.Status != FileProcessed {
		return StatusFailed, s.fail(ctx, id, []LineError{{Code: "invalid_file", Message: fmt.Sprintf("the input file %s was deleted before the batch started", b.InputFileID),
			Param: ptr("input_file_id")}})
	}
	if err != nil {
		return "", err
	}
	var (
		items  []Item
		errs   []LineError
		model  string
		stored int
	)
	flush := func() error {
		if len(items) == 0 || len(errs) > 0 {
			items = items[:0]
			return nil
		}
		err := s.store.AddItems(ctx, id, items)
		stored += len(items)
		items = items[:0]
		return err
	}
	_, n, err := Scan(&fileReader{ctx: ctx, s: s, id: f.ID}, s.scan, func(line int, req Request) error {
		if req.URL != b.Endpoint {
			if len(errs) < 100 {
				errs = append(errs, LineError{Code: "invalid_url", Message: fmt.Sprintf("the line's url %s is not the batch's endpoint %s", req.URL, b.Endpoint),
					Param: ptr("url"), Line: ptr(line)})
			}
			return nil
		}
		if model == "" {
			var m struct {
				Model string `json:"model"`
			}
			json.Unmarshal(req.Body, &m)
			model = m.Model
		}
		items = append(items, Item{Index: stored + len(items), Line: line, CustomID: req.CustomID, Body: req.Body})
		if len(items) == 500 {
			return flush()
		}
		return nil
	})
	var lp *LineProblem
	if errors.As(err, &lp) {
		// Checked at upload; only a file stored by an older version gets
		// here.
		l := lp.Line
		return StatusFailed, s.fail(ctx, id, []LineError{{Code: "invalid_file", Message: lp.Message, Line: &l}})
	}
	if err == nil {
		err = flush()
	}
	if err != nil {
		return "", err
	}
	if len(errs) > 0 {
		return StatusFailed, s.fail(ctx, id, errs)
	}
	ok, err := s.store.TransitionBatch(ctx, id, Transition{From: []string{StatusValidating}, To: StatusInProgress, At: s.now().UTC(), Total: &n, Model: model})
	if err != nil {
		return "", err
	}
	if !ok {
		// Cancelled meanwhile: its lines are stored, and finish writes them
		// to the error file.
		if _, err := s.store.TransitionBatch(ctx, id, Transition{From: []string{StatusCancelling}, To: StatusCancelling, Total: &n, Model: model}); err != nil {
			return "", err
		}
		b, err := s.store.GetBatch(ctx, id)
		return b.Status, err
	}
	return StatusInProgress, nil
}

func ptr[T any](v T) *T { return &v }

// runLines runs pending lines of the batch, at most stepLines of them,
// and reports whether the batch has more to run: false once no line is
// pending, or the batch is cancelling or past its window. Each line's
// ending is stored as it comes; a line interrupted (the server stopping,
// the window closing, a cancel) stays pending.
func (s *Service) runLines(ctx context.Context, id string) (bool, error) {
	b, err := s.store.GetBatch(ctx, id)
	if err != nil {
		return false, err
	}
	if b.Status != StatusInProgress || !s.now().Before(b.ExpiresAt) {
		return false, nil
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	s.mu.Lock()
	invoke := s.invoke
	s.mu.Unlock()

	// Lines run until the window closes; a cancel stops them.
	lctx, stop := context.WithDeadline(ctx, b.ExpiresAt)
	defer stop()
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		t := time.NewTicker(s.poll)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
			}
			cur, err := s.store.GetBatch(lctx, id)
			if err == nil && cur.Status != StatusInProgress {
				stop()
				return
			}
		}
	}()
	defer func() { stop(); <-watchDone }()

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		failure error
	)
	fail := func(err error) {
		mu.Lock()
		if failure == nil {
			failure = err
		}
		mu.Unlock()
		stop()
	}
	after := -1
	dispatched := 0
feed:
	for dispatched < s.stepLines {
		items, err := s.store.PendingItems(ctx, id, after, min(64, s.stepLines-dispatched))
		if err != nil {
			fail(err)
			break
		}
		if len(items) == 0 {
			break
		}
		for _, it := range items {
			select {
			case s.lines <- struct{}{}:
			case <-lctx.Done():
				break feed
			}
			if !s.now().Before(b.ExpiresAt) {
				// The window closed (by the service's clock).
				<-s.lines
				stop()
				break feed
			}
			after, dispatched = it.Index, dispatched+1
			wg.Add(1)
			go func(it Item) {
				defer wg.Done()
				defer func() { <-s.lines }()
				r, ok := s.runLine(lctx, invoke, b, it)
				if !ok {
					return
				}
				// The answer is kept even if the server is stopping now: a
				// line that reached the model is not run again.
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				defer cancel()
				if _, err := s.store.FinishItems(sctx, id, []Result{r}); err != nil {
					fail(err)
				}
			}(it)
		}
	}
	wg.Wait()
	if failure != nil {
		return false, failure
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if lctx.Err() != nil {
		// Cancelled or expired: finish decides.
		return false, nil
	}
	if dispatched == 0 {
		return false, nil
	}
	return true, nil
}

// runLine runs one line and returns how it ended; false when it was
// interrupted before an answer came (it stays pending). 429s and 503s
// (limits, a model loading or overloaded) are waited out and tried again
// for as long as the batch runs.
func (s *Service) runLine(ctx context.Context, run Run, b Batch, it Item) (Result, bool) {
	ctx = inference.WithPriority(ctx, inference.PriorityBackground)
	backoff := time.Second
	for {
		ans, err := run(ctx, b.KeyID, b.Endpoint, "batch:"+b.ID, it.Body)
		if ctx.Err() != nil && (err != nil || ans.Status < 200 || ans.Status > 299) {
			return Result{}, false
		}
		if err != nil {
			return s.errorResult(b.ID, it, "invocation_failed", err.Error()), true
		}
		if ans.Status == http.StatusTooManyRequests || ans.Status == http.StatusServiceUnavailable {
			wait := backoff
			if ans.RetryAfter > 0 {
				wait = ans.RetryAfter
			}
			backoff = min(2*backoff, 30*time.Second)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return Result{}, false
			}
		}
		return s.answerResult(b.ID, it, ans), true
	}
}

// outputLine is a line of a batch's output or error file (OpenAI's).
type outputLine struct {
	ID       string          `json:"id"`
	CustomID string          `json:"custom_id"`
	Response *outputResponse `json:"response"`
	Error    *outputError    `json:"error"`
}

type outputResponse struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"`
	Body       json.RawMessage `json:"body"`
}

type outputError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// answerResult is a line that was answered: 2xx to the output file, other
// statuses to the error file, with the answer either way. The answer is
// JSON already (the generation service rendered it): it goes into the
// line as it is, not decoded and encoded again.
func (s *Service) answerResult(batchID string, it Item, ans Answer) Result {
	body := ans.Body
	head, _ := json.Marshal(struct {
		ID       string `json:"id"`
		CustomID string `json:"custom_id"`
	}{RequestID(batchID, it.Index), it.CustomID})
	rid, _ := json.Marshal(ans.RequestID)
	line := make([]byte, 0, len(head)+len(body)+96)
	line = append(line, head[:len(head)-1]...)
	line = append(line, `,"response":{"status_code":`...)
	line = strconv.AppendInt(line, int64(ans.Status), 10)
	line = append(append(append(line, `,"request_id":`...), rid...), `,"body":`...)
	line = append(append(line, body...), `},"error":null}`...)
	r := Result{Index: it.Index, Status: LineCompleted, Kind: KindOutput, Line: string(line)}
	if ans.Status < 200 || ans.Status > 299 {
		r.Status, r.Kind = LineFailed, KindError
		return r
	}
	r.InputTokens, r.OutputTokens = ans.InputTokens, ans.OutputTokens
	return r
}

// errorResult is a line that got no answer, to the error file.
func (s *Service) errorResult(batchID string, it Item, code, message string) Result {
	status := LineFailed
	switch code {
	case "batch_expired":
		status = LineExpired
	case "batch_cancelled":
		status = LineCancelled
	}
	line, _ := json.Marshal(outputLine{ID: RequestID(batchID, it.Index), CustomID: it.CustomID, Error: &outputError{Code: code, Message: message}})
	return Result{Index: it.Index, Status: status, Kind: KindError, Line: string(line)}
}

// finish ends a batch: a cancelling one becomes cancelled and an
// in_progress one past its window expired, their pending lines written to
// the error file (batch_cancelled, batch_expired); an in_progress one
// with nothing pending goes through finalizing to completed. The result
// files are named, the event published. Repeated, it publishes the event
// again (at least once).
func (s *Service) finish(ctx context.Context, id string) error {
	b, err := s.store.GetBatch(ctx, id)
	if err != nil {
		return err
	}
	switch b.Status {
	case StatusFailed:
		return nil // published by fail
	case StatusCompleted:
		return s.publish(ctx, id, events.BatchCompleted)
	case StatusCancelled:
		return s.publish(ctx, id, events.BatchCancelled)
	case StatusExpired:
		return s.publish(ctx, id, events.BatchExpired)
	}
	to, event, code, message := StatusCompleted, events.BatchCompleted, "", ""
	switch {
	case b.Status == StatusCancelling || b.Status == StatusValidating:
		// validating: cancelled before it started (validate saw the cancel).
		to, event, code, message = StatusCancelled, events.BatchCancelled, "batch_cancelled", "The batch was cancelled before this request ran."
	case !s.now().Before(b.ExpiresAt):
		to, event, code, message = StatusExpired, events.BatchExpired, "batch_expired", "This request could not be executed before the completion window expired."
	}
	if code != "" {
		for {
			items, err := s.store.PendingItems(ctx, id, -1, 500)
			if err != nil {
				return err
			}
			if len(items) == 0 {
				break
			}
			rs := make([]Result, len(items))
			for i, it := range items {
				rs[i] = s.errorResult(id, it, code, message)
			}
			if _, err := s.store.FinishItems(ctx, id, rs); err != nil {
				return err
			}
		}
	} else {
		if items, err := s.store.PendingItems(ctx, id, -1, 1); err != nil {
			return err
		} else if len(items) > 0 {
			return fmt.Errorf("batch %s: line %d is still pending", id, items[0].Line)
		}
		if _, err := s.store.TransitionBatch(ctx, id, Transition{From: []string{StatusInProgress}, To: StatusFinalizing, At: s.now().UTC()}); err != nil {
			return err
		}
	}
	if b, err = s.store.GetBatch(ctx, id); err != nil {
		return err
	}
	t := Transition{From: []string{StatusInProgress, StatusFinalizing, StatusCancelling, StatusValidating}, To: to, At: s.now().UTC()}
	for _, rf := range []struct {
		kind  string
		bytes int64
		lines int
		id    *string
	}{{KindOutput, b.OutputBytes, b.OutputLines, &t.OutputFileID}, {KindError, b.ErrorBytes, b.ErrorLines, &t.ErrorFileID}} {
		if rf.lines == 0 {
			continue
		}
		fid := OutputFileID(id)
		name := "batch_" + id + "_output.jsonl"
		if rf.kind == KindError {
			fid, name = ErrorFileID(id), "batch_"+id+"_error.jsonl"
		}
		f := File{ID: fid, TeamID: b.TeamID, Filename: name, Purpose: PurposeBatchOutput, Status: FileProcessed, Bytes: rf.bytes, Lines: rf.lines,
			BatchID: id, Kind: rf.kind, CreatedAt: s.now().UTC()}
		if err := s.store.CreateFile(ctx, f); err != nil && !errors.Is(err, ErrConflict) {
			return err
		}
		*rf.id = fid
	}
	if _, err := s.store.TransitionBatch(ctx, id, t); err != nil {
		return err
	}
	return s.publish(ctx, id, event)
}

// publish publishes typ with the batch object to the batch's team.
func (s *Service) publish(ctx context.Context, id, typ string) error {
	if s.events == nil {
		return nil
	}
	b, err := s.store.GetBatch(ctx, id)
	if err != nil {
		return err
	}
	s.events.PublishTeam(b.TeamID, typ, b.Object())
	return nil
}
