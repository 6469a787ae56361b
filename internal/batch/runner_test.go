package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/batch"
	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
)

// fakeAPI stands in for the generation service (httpapi.Ops.RunLine): it answers requests
// with the request's custom content echoed, counts the calls per content
// and the answered ones, and can hold calls until released.
type fakeAPI struct {
	mu       sync.Mutex
	calls    map[string]int // by the body's "input"
	answered map[string]int
	users    map[string]bool
	bgCalls  int
	hold     chan struct{} // when set, calls wait for it (or their context)
	// holdFrom, when > 0, makes every call after the first holdFrom wait
	// for its context to end (a model that never answers).
	holdFrom int
	total    int
	inflight atomic.Int32
	// answer, when set, decides a call's status (0: 200).
	answer func(input string, call int) int
}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{calls: map[string]int{}, answered: map[string]int{}, users: map[string]bool{}}
}

func (f *fakeAPI) run(ctx context.Context, keyID, endpoint, user string, body []byte) (batch.Answer, error) {
	var req struct {
		Input string `json:"input"`
		User  string `json:"user"`
	}
	json.Unmarshal(body, &req)
	if req.User == "" {
		req.User = user
	}
	f.mu.Lock()
	f.calls[req.Input]++
	call := f.calls[req.Input]
	f.users[req.User] = true
	if inference.PriorityFrom(ctx) == inference.PriorityBackground {
		f.bgCalls++
	}
	hold, answer := f.hold, f.answer
	f.total++
	if f.holdFrom > 0 && f.total > f.holdFrom {
		hold = make(chan struct{}) // never closed
	}
	f.mu.Unlock()
	f.inflight.Add(1)
	defer f.inflight.Add(-1)
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return batch.Answer{Status: 499, Body: []byte(`{"error":{"message":"cancelled","type":"invalid_request_error","param":null,"code":"request_cancelled"}}`)}, nil
		}
	}
	status := 200
	if answer != nil {
		if s := answer(req.Input, call); s != 0 {
			status = s
		}
	}
	out := batch.Answer{Status: status, RequestID: "req_" + req.Input + fmt.Sprint(call)}
	if status != 200 {
		if status == 429 {
			out.RetryAfter = time.Second
		}
		out.Body = []byte(fmt.Sprintf(`{"error":{"message":"no","type":"x","param":null,"code":"e%d"}}`, status))
		return out, nil
	}
	f.mu.Lock()
	f.answered[req.Input]++
	f.mu.Unlock()
	out.Body = []byte(fmt.Sprintf(`{"object":"embedding","input":%q,"usage":{"prompt_tokens":3,"completion_tokens":2}}`, req.Input))
	out.InputTokens, out.OutputTokens = 3, 2
	return out, nil
}

// rig is a batch service on a SQLite store and a durable engine.
type rig struct {
	t     *testing.T
	db    string
	store *sqlite.Store
	svc   *batch.Service
	e     *durable.Engine
	bus   *events.Bus
	sub   *events.Subscription
	api   *fakeAPI
	clock atomic.Int64 // offset added to the real time
}

func newRig(t *testing.T, db string, api *fakeAPI) *rig {
	t.Helper()
	ctx := context.Background()
	if db == "" {
		db = filepath.Join(t.TempDir(), "s.db")
	}
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, db: db, store: st, api: api, bus: events.NewBus()}
	r.sub = r.bus.Subscribe(64)
	r.svc = batch.New(batch.Config{Store: st, Events: r.bus, Concurrency: 2,
		Now: func() time.Time { return time.Now().Add(time.Duration(r.clock.Load())) }})
	if r.e, err = durable.New(ctx, durable.Config{DatabaseURL: db}); err != nil {
		t.Fatal(err)
	}
	if err := r.svc.Register(r.e); err != nil {
		t.Fatal(err)
	}
	if err := r.e.Launch(ctx); err != nil {
		t.Fatal(err)
	}
	r.svc.SetRun(api.run)
	t.Cleanup(r.close)
	return r
}

func (r *rig) close() {
	if r.e != nil {
		r.e.Close(5 * time.Second)
		r.store.Close()
		r.e = nil
	}
}

func chatLines(n int, extra ...string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"custom_id":"req-%d","method":"POST","url":"/v1/embeddings","body":{"model":"m","input":"in-%d"}}`+"\n", i, i)
	}
	for _, e := range extra {
		b.WriteString(e + "\n")
	}
	return b.String()
}

func (r *rig) create(content string) batch.Batch {
	r.t.Helper()
	ctx := context.Background()
	f, err := r.svc.Upload(ctx, "team_a", "in.jsonl", strings.NewReader(content))
	if err != nil {
		r.t.Fatal(err)
	}
	b, err := r.svc.Create(ctx, "team_a", "key_a", batch.CreateRequest{InputFileID: f.ID, Endpoint: "/v1/embeddings", CompletionWindow: "24h",
		Metadata: map[string]string{"k": "v"}})
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

func (r *rig) waitFor(id string, statuses ...string) batch.Batch {
	r.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := r.svc.Get(context.Background(), "team_a", id)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, s := range statuses {
			if b.Status == s {
				return b
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("batch still %s, want %v: %+v", b.Status, statuses, b)
		}
	}
}

func (r *rig) content(id string) []map[string]any {
	r.t.Helper()
	var buf bytes.Buffer
	if err := r.svc.Content(context.Background(), "team_a", id, &buf); err != nil {
		r.t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			r.t.Fatalf("result line %q: %v", l, err)
		}
		out = append(out, m)
	}
	f, err := r.svc.File(context.Background(), "team_a", id)
	if err != nil || f.Bytes != int64(buf.Len()) {
		r.t.Fatalf("file %s: %d bytes listed, %d read (%v)", id, f.Bytes, buf.Len(), err)
	}
	return out
}

func (r *rig) event(typ string) events.Event {
	r.t.Helper()
	for {
		select {
		case ev := <-r.sub.C:
			if ev.Type == typ {
				return ev
			}
		case <-time.After(5 * time.Second):
			r.t.Fatalf("no %s event", typ)
		}
	}
}

// TestBatchRuns runs a batch to completion: every line once (a 429 waited
// out and tried again), at background priority, as its batch's user,
// answers in input order in the output file, the refused line in the error
// file, counts and usage added up, batch.completed published.
func TestBatchRuns(t *testing.T) {
	api := newFakeAPI()
	api.answer = func(input string, call int) int {
		switch {
		case input == "in-3":
			return 400
		case input == "in-5" && call == 1:
			return 429
		}
		return 0
	}
	r := newRig(t, "", api)
	b := r.create(chatLines(8, `{"custom_id":"own-user","method":"POST","url":"/v1/embeddings","body":{"model":"m","input":"in-u","user":"alice"}}`))
	if b.Status != batch.StatusValidating || b.ExpiresAt.Sub(b.CreatedAt) != 24*time.Hour {
		t.Fatalf("created: %+v", b)
	}
	b = r.waitFor(b.ID, batch.StatusCompleted)
	if b.Total != 9 || b.Completed != 8 || b.Failed != 1 || b.InputTokens != 24 || b.OutputTokens != 16 || b.Model != "m" ||
		b.InProgressAt == nil || b.FinalizingAt == nil || b.CompletedAt == nil || b.OutputFileID == "" || b.ErrorFileID == "" {
		t.Fatalf("completed: %+v", b)
	}
	for in, n := range api.calls {
		want := 1
		if in == "in-5" {
			want = 2
		}
		if n != want {
			t.Errorf("%s called %d times, want %d", in, n, want)
		}
	}
	if api.bgCalls != 10 || !api.users["batch:"+b.ID] || !api.users["alice"] || len(api.users) != 2 {
		t.Fatalf("priority and users: %d background calls, users %v", api.bgCalls, api.users)
	}
	out := r.content(b.OutputFileID)
	if len(out) != 8 {
		t.Fatalf("%d output lines", len(out))
	}
	for i, l := range out {
		resp := l["response"].(map[string]any)
		if l["error"] != nil || resp["status_code"].(float64) != 200 || !strings.HasPrefix(l["id"].(string), "batch_req_") {
			t.Fatalf("output line %d: %v", i, l)
		}
	}
	if out[0]["custom_id"] != "req-0" || out[3]["custom_id"] != "req-4" || out[7]["custom_id"] != "own-user" ||
		out[4]["response"].(map[string]any)["request_id"] != "req_in-52" {
		t.Fatalf("output order or request ids: %v", out)
	}
	errs := r.content(b.ErrorFileID)
	if len(errs) != 1 || errs[0]["custom_id"] != "req-3" || errs[0]["response"].(map[string]any)["status_code"].(float64) != 400 || errs[0]["error"] != nil {
		t.Fatalf("error file: %v", errs)
	}
	ev := r.event(events.BatchCompleted)
	if o, ok := ev.Data.(batch.Object); !ok || o.ID != b.ID || o.Status != batch.StatusCompleted || ev.Team != "team_a" {
		t.Fatalf("event: %+v", ev)
	}
	// Another team sees none of it.
	// Another team's is missing, exactly as one that does not exist, in
	// the words a client reads.
	if _, err := r.svc.Get(context.Background(), "team_b", b.ID); !errors.Is(err, batch.ErrNotFound) ||
		apierr.From(err).Message != fmt.Sprintf("no batch %q", b.ID) {
		t.Fatalf("another team's batch: %v", err)
	}
	if err := r.svc.Content(context.Background(), "team_b", b.OutputFileID, &bytes.Buffer{}); !errors.Is(err, batch.ErrNotFound) ||
		apierr.From(err).Message != fmt.Sprintf("no file %q", b.OutputFileID) {
		t.Fatalf("another team's file: %v", err)
	}
}

// TestBatchFailsOnAnotherURL: a line whose url is not the batch's endpoint
// fails the batch at validation, naming the line; nothing runs.
// TestUploadOverTheLimit: a file over the size limit is refused as too
// large, not as a bad line where the limit cut it, and nothing is kept.
func TestUploadOverTheLimit(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	content := chatLines(20)
	svc := batch.New(batch.Config{Store: st, MaxFileBytes: int64(len(content)) - 30})
	_, err = svc.Upload(context.Background(), "team_a", "in.jsonl", strings.NewReader(content))
	var tl *batch.TooLargeError
	if !errors.As(err, &tl) || tl.Limit != int64(len(content))-30 {
		t.Fatalf("upload over the limit: %v", err)
	}
	if e := apierr.From(err); e.Status() != 413 || e.Param != "file" {
		t.Fatalf("upload over the limit as an API error: %+v", e)
	}
	// A bad line is a 400 naming the file, and the line.
	_, err = svc.Upload(context.Background(), "team_a", "in.jsonl", strings.NewReader("{}\n"))
	if e := apierr.From(err); e.Status() != 400 || e.Param != "file" || !strings.HasPrefix(e.Message, "line 1: ") {
		t.Fatalf("a bad line: %v", err)
	}
	if files, _, err := svc.Files(context.Background(), batch.FileFilter{TeamID: "team_a", Limit: 10}); err != nil || len(files) != 0 {
		t.Fatalf("kept: %+v, %v", files, err)
	}
}

func TestBatchFailsOnAnotherURL(t *testing.T) {
	api := newFakeAPI()
	r := newRig(t, "", api)
	b := r.create(chatLines(2, `{"custom_id":"x","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}}`))
	b = r.waitFor(b.ID, batch.StatusFailed)
	if len(b.Errors) != 1 || *b.Errors[0].Line != 3 || b.Errors[0].Code != "invalid_url" || b.FailedAt == nil || len(api.calls) != 0 {
		t.Fatalf("failed batch: %+v, calls %v", b, api.calls)
	}
	r.event(events.BatchFailed)
}

// TestBatchCancel: a cancel stops the batch; the lines it finished are in
// the output file, the others in the error file as batch_cancelled.
func TestBatchCancel(t *testing.T) {
	api := newFakeAPI()
	api.hold = make(chan struct{})
	r := newRig(t, "", api)
	b := r.create(chatLines(6))
	for deadline := time.Now().Add(10 * time.Second); api.inflight.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("lines never started")
		}
	}
	if api.inflight.Load() != 2 {
		t.Fatalf("%d lines at once, want the concurrency, 2", api.inflight.Load())
	}
	c, err := r.svc.Cancel(context.Background(), "team_a", b.ID)
	if err != nil || c.Status != batch.StatusCancelling || c.CancellingAt == nil {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	if again, err := r.svc.Cancel(context.Background(), "team_a", b.ID); err != nil || again.Status != batch.StatusCancelling {
		t.Fatalf("second cancel: %+v %v", again, err)
	}
	b = r.waitFor(b.ID, batch.StatusCancelled)
	if b.Total != 6 || b.Completed != 0 || b.Failed != 6 || b.OutputFileID != "" || b.CancelledAt == nil {
		t.Fatalf("cancelled: %+v", b)
	}
	errs := r.content(b.ErrorFileID)
	if len(errs) != 6 || errs[0]["error"].(map[string]any)["code"] != "batch_cancelled" || errs[0]["response"] != nil {
		t.Fatalf("error file: %v", errs)
	}
	r.event(events.BatchCancelled)
	if _, err := r.svc.Cancel(context.Background(), "team_a", b.ID); err != nil {
		t.Fatalf("cancel of a cancelled batch: %v", err)
	}
	close(api.hold)
}

// TestBatchCancelAfterCompletion is a conflict.
func TestBatchCancelAfterCompletion(t *testing.T) {
	r := newRig(t, "", newFakeAPI())
	b := r.waitFor(r.create(chatLines(1)).ID, batch.StatusCompleted)
	_, err := r.svc.Cancel(context.Background(), "team_a", b.ID)
	if e := apierr.From(err); !errors.Is(err, batch.ErrConflict) || e.Status() != 409 || !strings.Contains(e.Message, "completed") {
		t.Fatalf("cancel after completion: %v", err)
	}
}

// TestBatchExpires: a batch past its window ends expired, its unrun lines
// in the error file as batch_expired.
func TestBatchExpires(t *testing.T) {
	api := newFakeAPI()
	api.hold = make(chan struct{})
	r := newRig(t, "", api)
	b := r.create(chatLines(4))
	for api.inflight.Load() < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	r.clock.Store(int64(25 * time.Hour))
	close(api.hold) // the two running lines answer; the next ones find the window closed
	b = r.waitFor(b.ID, batch.StatusExpired)
	if b.Total != 4 || b.ExpiredAt == nil || b.Completed+b.Failed != 4 || b.Failed < 2 {
		t.Fatalf("expired: %+v", b)
	}
	errs := r.content(b.ErrorFileID)
	for _, l := range errs {
		if l["error"].(map[string]any)["code"] != "batch_expired" {
			t.Fatalf("error line: %v", l)
		}
	}
	r.event(events.BatchExpired)
}

// TestBatchResumes: a server stopping in the middle of a batch leaves its
// unanswered lines pending; the next start runs those, and no line that
// was answered runs again.
func TestBatchResumes(t *testing.T) {
	api := newFakeAPI()
	api.holdFrom = 10 // ten lines are answered; those running next never are
	r := newRig(t, "", api)
	b := r.create(chatLines(40))
	for deadline := time.Now().Add(30 * time.Second); api.inflight.Load() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the held lines never started")
		}
	}
	mid, err := r.store.GetBatch(context.Background(), b.ID)
	if err != nil || mid.Status != batch.StatusInProgress {
		t.Fatalf("before the stop: %+v %v", mid, err)
	}
	r.close() // the server stops; the held lines are interrupted
	api.mu.Lock()
	api.holdFrom = 0
	api.mu.Unlock()
	r2 := newRig(t, r.db, api)
	if _, err := r2.svc.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	b = r2.waitFor(b.ID, batch.StatusCompleted)
	if b.Completed != 40 || mid.Completed != 10 {
		t.Fatalf("resumed: %+v (%d completed at the stop, want 10)", b, mid.Completed)
	}
	for i := range 40 {
		if n := api.answered[fmt.Sprintf("in-%d", i)]; n != 1 {
			t.Errorf("in-%d answered %d times", i, n)
		}
	}
	if out := r2.content(b.OutputFileID); len(out) != 40 {
		t.Fatalf("%d output lines", len(out))
	}
}
