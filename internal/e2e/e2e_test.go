// Package e2e tests the engine end to end: the HTTP API in front of the
// runner manager, which starts real `sovereign runner` processes running
// llama.cpp on tiny generated models and on the real default models.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/app"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/config"
	"github.com/sovereign-ai/sovereign/internal/engine"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/gguf/testmodel"
	"github.com/sovereign-ai/sovereign/internal/models"
	sovstore "github.com/sovereign-ai/sovereign/internal/store"
	"github.com/sovereign-ai/sovereign/internal/testutil"
)

type env struct {
	t     testing.TB
	url   string
	key   string // an admin API key
	mgr   *engine.Manager
	cat   *catalog.Catalog
	sub   *events.Subscription
	store *models.Store
}

// installTiny puts a tiny random model into the store under id.
func installTiny(t testing.TB, store *models.Store, id string, seed int64) {
	t.Helper()
	src := filepath.Join(t.TempDir(), id+".gguf")
	if err := testmodel.Write(src, testmodel.Options{Seed: seed}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pull(context.Background(), "file://"+src, models.PullOptions{ID: id}); err != nil {
		t.Fatal(err)
	}
}

// newEnv serves the API on the database SOVEREIGN_TEST_DB names ("sqlite",
// the default, or "postgres"): `make test` runs this package on both.
func newEnv(t testing.TB, store *models.Store, cfg engine.Config) *env {
	kind := os.Getenv("SOVEREIGN_TEST_DB")
	if kind == "" {
		kind = "sqlite"
	}
	return newEnvWithDB(t, store, cfg, openDatabase(t, kind))
}

// newEnvSpecs is newEnv with configured models (the YAML file's).
func newEnvSpecs(t testing.TB, store *models.Store, cfg engine.Config, specs []catalog.Spec) *env {
	kind := os.Getenv("SOVEREIGN_TEST_DB")
	if kind == "" {
		kind = "sqlite"
	}
	return newEnvFull(t, store, cfg, openDatabase(t, kind), specs)
}

// newEnvWithDB serves the API over db with an engine for the models in
// store, and bootstraps an admin key.
func newEnvWithDB(t testing.TB, store *models.Store, cfg engine.Config, db sovstore.Store) *env {
	return newEnvFull(t, store, cfg, db, nil)
}

func newEnvFull(t testing.TB, store *models.Store, cfg engine.Config, db sovstore.Store, specs []catalog.Spec) *env {
	t.Helper()
	cfg.Exe = testutil.Binary(t)
	if cfg.Threads == 0 {
		cfg.Threads = 2
	}
	if cfg.CtxPerSlot == 0 {
		cfg.CtxPerSlot = 512
	}
	// The application as `sovereign serve` builds it, on the test's
	// database, model store and engine settings.
	// A short PDF budget: the hostile-file tests wait for it. The mock
	// upstreams the tests register through the API listen on loopback.
	a, err := app.New(context.Background(), config.Config{Models: specs, ExtractTimeout: 3 * time.Second,
		UpstreamAllow: []string{"127.0.0.1", "::1", "localhost"}}, app.Options{DB: db, Models: store, Engine: &cfg, CatalogRefresh: -1,
		DurableURL: filepath.Join(t.TempDir(), "durable.db")})
	if err != nil {
		t.Fatal(err)
	}
	sub := a.Bus.Subscribe(256)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		srv.Close()
		a.Close()
		sub.Close()
	})
	return &env{t: t, url: srv.URL, key: a.AdminKey, mgr: a.Engine, cat: a.Catalog, sub: sub, store: store}
}

// request sends body (JSON, or nothing when nil) with key.
func (e *env) request(key, method, path string, body any) *http.Response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// get sends an authenticated GET.
func (e *env) get(path string) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

func tinyStore(t testing.TB, ids ...string) *models.Store {
	store, err := models.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		installTiny(t, store, id, int64(i+1))
	}
	return store
}

func (e *env) post(ctx context.Context, path string, body any) *http.Response {
	e.t.Helper()
	b, raw := body.([]byte) // sent as it is
	if !raw {
		b, _ = json.Marshal(body)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

type envelope struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

func readError(t *testing.T, resp *http.Response) envelope {
	t.Helper()
	defer resp.Body.Close()
	var env envelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("error body is not an OpenAI envelope: %v", err)
	}
	return env
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func (e *env) chat(model, content string, extra map[string]any) (chatResponse, *http.Response) {
	e.t.Helper()
	body := map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": content}}, "temperature": 0, "max_tokens": 16}
	for k, v := range extra {
		body[k] = v
	}
	resp := e.post(context.Background(), "/v1/chat/completions", body)
	var out chatResponse
	if resp.StatusCode == 200 {
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			e.t.Fatal(err)
		}
	}
	return out, resp
}

// waitEvent waits for an event of type typ about model.
func (e *env) waitEvent(typ, model string, within time.Duration) events.Event {
	e.t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev := <-e.sub.C:
			if ev.Type == typ {
				if d, ok := ev.Data.(map[string]any); ok && d["model"] == model {
					return ev
				}
			}
		case <-deadline:
			e.t.Fatalf("no %s event for %s within %s", typ, model, within)
		}
	}
}

func runnerPID(t *testing.T, mgr *engine.Manager, id string) int {
	for _, st := range mgr.Status() {
		if st.ID == id && st.PID > 0 {
			return st.PID
		}
	}
	t.Fatalf("no runner for %s in %+v", id, mgr.Status())
	return 0
}

func TestChatLoadsModelAndEmitsReady(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{})
	out, resp := e.chat("tiny", "hello", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %+v", resp.StatusCode, readError(t, resp))
	}
	if len(out.Choices) != 1 || out.Usage.CompletionTokens == 0 {
		t.Fatalf("unexpected response %+v", out)
	}
	ev := e.waitEvent(events.ModelReady, "tiny", 5*time.Second)
	if !strings.HasPrefix(ev.ID, "evt_") || ev.Object != "event" {
		t.Fatalf("bad event %+v", ev)
	}
}

func TestKilledRunnerGivesCleanErrorAndRestarts(t *testing.T) {
	// The end token is banned and the context is long, so the stream is
	// still running when the runner is killed (sampled at temperature 1,
	// the tiny model could otherwise end it first).
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{CtxPerSlot: 8192})
	// The whole stream takes the tiny model about 0.2 s: should this
	// goroutine be held up that long between reading the stream's start
	// and the kill (a loaded CI machine), the stream ends first and the
	// kill proves nothing. Such a try is recognised by its [DONE] and
	// made again (the next request starts a new runner).
	var pid int
	var rest []byte
	for try := 1; ; try++ {
		resp := e.post(context.Background(), "/v1/chat/completions", map[string]any{
			"model": "tiny", "stream": true, "temperature": 1, "messages": []map[string]string{{"role": "user", "content": "tell a long story"}},
			"logit_bias": map[string]int{strconv.Itoa(testmodel.EOSID): -100},
		})
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		rd := bufio.NewReader(resp.Body)
		for i := 0; i < 3; i++ {
			if _, err := rd.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
		pid = runnerPID(t, e.mgr, "tiny")
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var err error
		rest, err = io.ReadAll(rd)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("stream broke instead of ending cleanly: %v", err)
		}
		if !strings.HasSuffix(strings.TrimSpace(string(rest)), "data: [DONE]") || try == 3 {
			break
		}
		t.Logf("try %d: the stream ended before the kill landed; again", try)
		e.waitEvent(events.ModelFailed, "tiny", 5*time.Second)
	}
	lines := strings.Split(strings.TrimSpace(string(rest)), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "data: {\"error\"") || !strings.Contains(last, "model_crashed") {
		t.Fatalf("stream did not end with an error event; last line %q", last)
	}
	if strings.Contains(string(rest), "[DONE]") {
		t.Fatal("a crashed stream must not end with [DONE]")
	}
	e.waitEvent(events.ModelFailed, "tiny", 5*time.Second)
	// The next request starts a new runner.
	out, resp2 := e.chat("tiny", "hello again", nil)
	if resp2.StatusCode != 200 || len(out.Choices) != 1 {
		t.Fatalf("request after crash: status %d", resp2.StatusCode)
	}
	if pid2 := runnerPID(t, e.mgr, "tiny"); pid2 == pid {
		t.Fatal("runner was not restarted")
	}
}

func TestCorruptModelFailsWithReasonAndOthersKeepServing(t *testing.T) {
	store := tinyStore(t, "good", "broken")
	path := store.Path("broken")
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, store, engine.Config{})
	_, resp := e.chat("broken", "hi", nil)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("corrupt model: status %d, want 503", resp.StatusCode)
	}
	env := readError(t, resp)
	if env.Error.Code != "model_failed" || !strings.Contains(env.Error.Message, path) {
		t.Fatalf("error does not name the failure and file: %+v", env.Error)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After on a failed model")
	}
	e.waitEvent(events.ModelFailed, "broken", 5*time.Second)
	out, resp := e.chat("good", "hi", nil)
	if resp.StatusCode != 200 || len(out.Choices) != 1 {
		t.Fatalf("healthy model stopped serving: %d", resp.StatusCode)
	}
	// The model list shows the failure with its reason.
	lr := e.get("/v1/models/broken")
	var m catalog.Model
	json.NewDecoder(lr.Body).Decode(&m)
	lr.Body.Close()
	if m.Status != "failed" || !strings.Contains(m.StatusReason, "broken") {
		t.Fatalf("model status %q reason %q", m.Status, m.StatusReason)
	}
}

func TestQueueOverflowIs503WithRetryAfter(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{Slots: 1, MaxQueue: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	started := make(chan struct{}, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, _ := json.Marshal(map[string]any{"model": "tiny", "stream": true, "temperature": 1, "messages": []map[string]string{{"role": "user", "content": "go on forever"}}})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/v1/chat/completions", bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+e.key)
			started <- struct{}{}
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	<-started
	<-started
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := e.mgr.Status()
		if len(st) == 1 && st[0].Inflight == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("two requests never in flight: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, resp := e.chat("tiny", "one more", nil)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("overflow: status %d, want 503", resp.StatusCode)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	if env := readError(t, resp); env.Error.Code != "model_overloaded" {
		t.Fatalf("code %q", env.Error.Code)
	}
	cancel()
	wg.Wait()
}

func TestIdleModelIsUnloadedAndLoadedModelsAreLimited(t *testing.T) {
	e := newEnv(t, tinyStore(t, "a", "b"), engine.Config{KeepAlive: 400 * time.Millisecond, MaxLoaded: 1})
	if _, resp := e.chat("a", "hi", nil); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	e.waitEvent(events.ModelReady, "a", 5*time.Second)
	if _, resp := e.chat("b", "hi", nil); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	ev := e.waitEvent(events.ModelUnloaded, "a", 5*time.Second)
	if ev.Data.(map[string]any)["reason"] != "max_loaded_models" {
		t.Fatalf("a unloaded for %v, want max_loaded_models", ev.Data)
	}
	ev = e.waitEvent(events.ModelUnloaded, "b", 5*time.Second)
	if ev.Data.(map[string]any)["reason"] != "idle" {
		t.Fatalf("b unloaded for %v, want idle", ev.Data)
	}
	if st := e.mgr.Status(); len(st) != 0 {
		t.Fatalf("models still loaded after keep-alive: %+v", st)
	}
}

func TestStreamDisconnectFreesSlot(t *testing.T) {
	e := newEnv(t, tinyStore(t, "tiny"), engine.Config{Slots: 1, MaxQueue: -1})
	ctx, cancel := context.WithCancel(context.Background())
	resp := e.post(ctx, "/v1/chat/completions", map[string]any{"model": "tiny", "stream": true, "temperature": 1, "messages": []map[string]string{{"role": "user", "content": "go"}}})
	rd := bufio.NewReader(resp.Body)
	rd.ReadString('\n')
	cancel()
	resp.Body.Close()
	// With one slot and no queue, a new request only succeeds once the
	// abandoned generation has released the slot.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, r := e.chat("tiny", "next", nil)
		if r.StatusCode == 200 {
			break
		}
		r.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("slot never freed: last status %d", r.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
