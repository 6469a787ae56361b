package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/sovereign-ai/sovereign/internal/durable"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/outbound"
	"github.com/sovereign-ai/sovereign/internal/sqlite"
	"github.com/sovereign-ai/sovereign/internal/webhook"
)

// receiver is a test endpoint: it verifies every message with the
// Standard Webhooks library against the secrets it is given, answers
// fail(n) for the n-th attempt of a message, and records what it
// accepted by webhook-id.
type receiver struct {
	t    *testing.T
	srv  *httptest.Server
	fail func(msgID string, n int) int // status for the n-th attempt (0: 200)

	mu       sync.Mutex
	secrets  []string
	attempts map[string]int
	accepted map[string]events.Event // by webhook-id
	order    []string
	sigs     map[string]string // last webhook-signature by webhook-id
	bad      int
}

func newReceiver(t *testing.T, fail func(string, int) int) *receiver {
	r := &receiver{t: t, fail: fail, attempts: map[string]int{}, accepted: map[string]events.Event{}, sigs: map[string]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.secrets {
		wh, _ := standardwebhooks.NewWebhook(s)
		if err := wh.Verify(body, req.Header); err != nil {
			r.bad++
			r.t.Errorf("signature does not verify with %s…: %v", s[:10], err)
			w.WriteHeader(400)
			return
		}
	}
	id := req.Header.Get("webhook-id")
	r.attempts[id]++
	if r.fail != nil {
		if code := r.fail(id, r.attempts[id]); code != 0 {
			w.WriteHeader(code)
			io.WriteString(w, "not now")
			return
		}
	}
	var ev events.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		r.t.Errorf("body %s: %v", body, err)
	}
	if _, dup := r.accepted[id]; !dup {
		r.order = append(r.order, id)
	}
	r.accepted[id] = ev
	r.sigs[id] = req.Header.Get("webhook-signature")
	io.WriteString(w, "ok")
}

func (r *receiver) setSecrets(s ...string) {
	r.mu.Lock()
	r.secrets = s
	r.mu.Unlock()
}

// types returns the types of the events accepted, in order.
func (r *receiver) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, id := range r.order {
		out = append(out, r.accepted[id].Type)
	}
	return out
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.accepted)
}

type rig struct {
	db  *sqlite.Store
	bus *events.Bus
	svc *webhook.Service
}

// newRig runs the webhook service as the app does — SQLite store, event
// bus, durable engine, dispatcher — with a fast schedule and window.
func newRig(t *testing.T) *rig {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sovereign.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	bus := events.New(events.Config{Store: db})
	e, err := durable.New(ctx, durable.Config{DatabaseURL: path})
	if err != nil {
		t.Fatal(err)
	}
	client, err := outbound.New(outbound.Config{AllowPrivate: true, MaxResponseBytes: webhook.MaxResponseBody, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	svc := &webhook.Service{Store: db, Events: bus, Engine: e, Client: client, Wake: bus.Changed, Poll: 100 * time.Millisecond,
		Schedule: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}, RetryWindow: 1500 * time.Millisecond, DisableAfter: 2}
	svc.Register(e)
	if err := e.Launch(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(rctx) }()
	t.Cleanup(func() {
		stop()
		<-done
		e.Close(time.Second)
		bus.Close()
		db.Close()
	})
	return &rig{db: db, bus: bus, svc: svc}
}

func (g *rig) create(t *testing.T, team string, r *receiver, types ...string) webhook.Webhook {
	t.Helper()
	w, err := g.svc.Create(context.Background(), webhook.CreateParams{TeamID: team, URL: r.srv.URL + "/hook", Events: types, Audit: true})
	if err != nil {
		t.Fatal(err)
	}
	r.setSecrets(w.Secret)
	return w
}

// teamA is a key of the team the rig's webhooks belong to.
var teamA = auth.Key{ID: "key_a", TeamID: "team_a", Scopes: []auth.Scope{auth.ScopeWebhooks}}

func (g *rig) deliveries(t *testing.T, w webhook.Webhook) []webhook.Delivery {
	t.Helper()
	ds, _, err := g.db.ListWebhookDeliveries(context.Background(), webhook.DeliveryFilter{WebhookID: w.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func eventually(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
	}
}

// TestDeliveries runs the whole delivery path: the outbox written with
// the events, team isolation, signatures, retries after failures, the
// failure of a delivery when its window ends, auto-disable with its
// webhook.disabled event delivered to the team's other webhook,
// redelivery under the same webhook-id, and rotation's two signatures.
func TestDeliveries(t *testing.T) {
	g := newRig(t)
	ctx := context.Background()

	good := newReceiver(t, nil)
	flaky := newReceiver(t, func(_ string, n int) int {
		if n <= 2 {
			return 500
		}
		return 0
	})
	dead := newReceiver(t, func(string, int) int { return 503 })
	other := newReceiver(t, nil)

	whGood := g.create(t, "team_a", good, "*")
	whFlaky := g.create(t, "team_a", flaky, events.WorkflowRunSucceeded)
	whDead := g.create(t, "team_a", dead, events.WorkflowRunSucceeded)
	g.create(t, "team_b", other, "*")

	for i := range 3 {
		g.bus.PublishTeam("team_a", events.WorkflowRunSucceeded, map[string]any{"run_id": i})
	}
	g.bus.Publish(events.ModelReady, map[string]any{"model": "m"})
	g.bus.PublishTeam("team_b", events.WorkflowRunSucceeded, map[string]any{"run_id": "b"})
	g.bus.PublishTeam("team_a", events.DocumentReady, map[string]any{"id": "doc_1"})

	// The team's "*" webhook gets its team's events and the
	// deployment's, then webhook.disabled once the dead one is disabled
	// after two deliveries failed for good.
	eventually(t, 20*time.Second, "the good receiver gets 6 messages", func() bool { return good.count() >= 6 })
	got := good.types()
	slices.Sort(got)
	want := []string{events.DocumentReady, events.ModelReady, events.WebhookDisabled, events.WorkflowRunSucceeded, events.WorkflowRunSucceeded, events.WorkflowRunSucceeded}
	if !slices.Equal(got, want) {
		t.Fatalf("team a's * webhook got %v, want %v", got, want)
	}
	// The other team's webhook: its own run and the model, nothing of
	// team a's.
	eventually(t, 5*time.Second, "the other team's receiver gets 2 messages", func() bool { return other.count() >= 2 })
	time.Sleep(200 * time.Millisecond)
	if got := other.types(); len(got) != 2 || !slices.Contains(got, events.ModelReady) || !slices.Contains(got, events.WorkflowRunSucceeded) {
		t.Fatalf("team b's webhook got %v", got)
	}

	// The flaky receiver failed each message twice: three attempts each,
	// logged.
	eventually(t, 10*time.Second, "the flaky receiver's 3 messages", func() bool { return flaky.count() == 3 })
	for _, d := range g.deliveries(t, whFlaky) {
		as, err := g.db.WebhookDeliveryAttempts(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != webhook.StatusSucceeded || d.Attempts != 3 || len(as) != 3 || as[0].StatusCode != 500 || as[2].StatusCode != 200 ||
			as[0].ResponseBody != "not now" || !strings.Contains(as[0].Error, "HTTP 500") || as[2].Error != "" {
			t.Fatalf("flaky delivery %+v, attempts %+v", d, as)
		}
		if d.MessageID != webhook.MessageID(whFlaky.ID, d.EventID) {
			t.Fatalf("message id %s", d.MessageID)
		}
	}

	// The dead receiver: disabled once 2 deliveries failed for good; its
	// third delivery failed too, or was stopped by the disable (without
	// counting), depending on which ended first.
	eventually(t, 10*time.Second, "the dead webhook is disabled", func() bool {
		w, _ := g.db.GetWebhook(ctx, whDead.ID)
		return !w.Enabled
	})
	w, _ := g.db.GetWebhook(ctx, whDead.ID)
	if w.ConsecutiveFailures < 2 || !strings.Contains(w.DisabledReason, "consecutive deliveries failed") || w.DisabledAt == nil || w.FailingSince == nil {
		t.Fatalf("disabled webhook %+v", w)
	}
	eventually(t, 10*time.Second, "every dead delivery ends", func() bool {
		for _, d := range g.deliveries(t, whDead) {
			if !webhook.Terminal(d.Status) {
				return false
			}
		}
		return true
	})
	stopped := 0
	for _, d := range g.deliveries(t, whDead) {
		if d.Status != webhook.StatusFailed || d.Attempts == 0 && d.LastError != "the webhook is disabled" {
			t.Fatalf("dead delivery %+v", d)
		}
		if d.LastError == "the webhook is disabled" {
			stopped++
		} else if d.LastStatus != 503 {
			t.Fatalf("dead delivery %+v", d)
		}
	}
	if stopped+w.ConsecutiveFailures != 3 {
		t.Fatalf("%d deliveries stopped by the disable, %d counted: want 3 in all", stopped, w.ConsecutiveFailures)
	}
	for id, ev := range good.accepted {
		if ev.Type == events.WebhookDisabled {
			data := ev.Data.(json.RawMessage)
			var v webhook.View
			json.Unmarshal(data, &v)
			if v.ID != whDead.ID || v.Enabled || v.DisabledReason == nil || strings.Contains(string(data), "whsec_") {
				t.Fatalf("webhook.disabled %s: %s", id, data)
			}
		}
	}
	// Re-enabling clears the counters.
	on := true
	w, err := g.svc.Update(ctx, teamA, w.ID, webhook.UpdateParams{Enabled: &on})
	if err != nil || !w.Enabled || w.ConsecutiveFailures != 0 || w.FailingSince != nil || w.DisabledReason != "" {
		t.Fatalf("re-enabled %+v %v", w, err)
	}

	// A redelivery carries the same webhook-id.
	first := g.deliveries(t, whGood)[0]
	if first.Status != webhook.StatusSucceeded {
		t.Fatalf("delivery %+v", first)
	}
	before := good.attempts[first.MessageID]
	nd, err := g.svc.Redeliver(ctx, teamA, whGood.ID, first.ID)
	if err != nil || nd.MessageID != first.MessageID || nd.RedeliveryOf != first.ID || nd.ID == first.ID {
		t.Fatalf("redelivery %+v %v", nd, err)
	}
	eventually(t, 5*time.Second, "the redelivery arrives", func() bool {
		good.mu.Lock()
		defer good.mu.Unlock()
		return good.attempts[first.MessageID] == before+1
	})

	// Rotation: both signatures during the grace period, each verifying
	// on its own.
	rotated, err := g.svc.Rotate(ctx, teamA, whGood.ID, time.Hour)
	if err != nil || rotated.Secret == whGood.Secret || rotated.PreviousSecret != whGood.Secret {
		t.Fatalf("rotated %+v %v", rotated, err)
	}
	good.setSecrets(whGood.Secret, rotated.Secret)
	ev := g.bus.PublishTeam("team_a", events.DocumentFailed, map[string]any{"id": "doc_2"})
	msg := webhook.MessageID(whGood.ID, ev.ID)
	eventually(t, 5*time.Second, "the message after the rotation", func() bool {
		good.mu.Lock()
		defer good.mu.Unlock()
		return good.sigs[msg] != ""
	})
	if n := len(strings.Fields(good.sigs[msg])); n != 2 {
		t.Fatalf("%d signatures during the grace period", n)
	}
	if good.bad != 0 {
		t.Fatalf("%d messages did not verify", good.bad)
	}

	// A deleted webhook's deliveries go with it.
	if err := g.svc.Delete(ctx, teamA, whFlaky.ID); err != nil {
		t.Fatal(err)
	}
	if ds := g.deliveries(t, whFlaky); len(ds) != 0 {
		t.Fatalf("%d deliveries left", len(ds))
	}
}

// TestRefusedTargets: a private target is refused when the webhook is
// saved, and a redirect to one is refused when a delivery follows it.
func TestRefusedTargets(t *testing.T) {
	ctx := context.Background()
	client, _ := outbound.New(outbound.Config{})
	svc := &webhook.Service{Client: client}
	for _, u := range []string{"http://127.0.0.1:9/", "http://10.0.0.1/hook", "http://169.254.169.254/latest/meta-data/", "http://localhost:8080/",
		"ftp://example.com/", "https://user:pw@example.com/"} {
		_, err := svc.Create(ctx, webhook.CreateParams{TeamID: "t", URL: u, Events: []string{"model.ready"}})
		var ve *apierr.Error
		if !errors.As(err, &ve) || ve.Code != apierr.InvalidRequest || ve.Param != "url" {
			t.Fatalf("%s: %v", u, err)
		}
		t.Logf("%s: %s", u, ve.Message)
	}
}

// TestNotFound: another team's webhook and a missing one are not found in
// the same words, naming the id the request named (the HTTP layer shows
// the message as it is).
func TestNotFound(t *testing.T) {
	g := newRig(t)
	ctx := context.Background()
	w := g.create(t, "team_a", newReceiver(t, nil), "*")
	teamB := auth.Key{ID: "key_b", TeamID: "team_b", Scopes: []auth.Scope{auth.ScopeAdmin}}
	for _, c := range []struct {
		what string
		err  error
		want string
	}{
		{"another team's webhook", second(g.svc.GetWebhook(ctx, teamB, w.ID)), "No webhook '" + w.ID + "'."},
		{"a missing webhook", second(g.svc.GetWebhook(ctx, teamA, "wh_missing")), "No webhook 'wh_missing'."},
		{"updating a missing webhook", second(g.svc.Update(ctx, teamA, "wh_missing", webhook.UpdateParams{})), "No webhook 'wh_missing'."},
		{"deleting another team's webhook", g.svc.Delete(ctx, teamB, w.ID), "No webhook '" + w.ID + "'."},
		{"a missing delivery", second(g.svc.Redeliver(ctx, teamA, w.ID, "whd_missing")), "No delivery 'whd_missing'."},
		{"a delivery of another team's webhook", second(g.svc.Redeliver(ctx, teamB, w.ID, "whd_missing")), "No webhook '" + w.ID + "'."},
	} {
		if e := apierr.From(c.err); !errors.Is(c.err, webhook.ErrNotFound) || e.Status() != 404 || e.Message != c.want {
			t.Errorf("%s: %v, want 404 %q", c.what, c.err, c.want)
		}
	}
}

// second returns a call's error.
func second[T any](_ T, err error) error { return err }
