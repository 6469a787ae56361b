package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/events"
	"github.com/sovereign-ai/sovereign/internal/webhook"
)

// testWebhooks holds webhooks and their outbox to webhook.Store's
// contract: webhooks round-trip and list by team; storing an event writes
// one delivery per enabled webhook subscribed to its type — the team's,
// or every team's for the deployment's events — and none for an event
// stored already; the dispatcher's queue; attempts recorded once per
// number with the delivery's and the webhook's state in step; failures
// counted once; and a deleted webhook takes its deliveries along.
func testWebhooks(t *testing.T, ks auth.KeyStore) {
	s, ok := ks.(interface {
		webhook.Store
		events.Store
	})
	if !ok {
		t.Fatalf("%T does not implement webhook.Store and events.Store", ks)
	}
	ctx := context.Background()
	mk := func(id, team string, created time.Time, types ...string) webhook.Webhook {
		w := webhook.Webhook{ID: id, TeamID: team, URL: "https://hooks.example/" + id, Description: "d " + id, Events: types,
			Secret: "whsec_" + id, Enabled: true, CreatedAt: created, UpdatedAt: created}
		if err := s.CreateWebhook(ctx, w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	a1 := mk("wh_a1", "team_a", at(time.Second), "*")
	a2 := mk("wh_a2", "team_a", at(2*time.Second), events.WorkflowRunSucceeded)
	a3 := mk("wh_a3", "team_a", at(3*time.Second), events.ModelReady)
	b1 := mk("wh_b1", "team_b", at(4*time.Second), events.ModelReady, events.WorkflowRunSucceeded)

	got, err := s.GetWebhook(ctx, a1.ID)
	if err != nil || got.URL != a1.URL || got.Description != a1.Description || !slices.Equal(got.Events, []string{"*"}) || got.Secret != a1.Secret ||
		!got.Enabled || !got.CreatedAt.Equal(a1.CreatedAt) || got.CreatedAt.Location() != time.UTC || got.FailingSince != nil || got.DisabledAt != nil {
		t.Fatalf("get %+v %v", got, err)
	}
	if _, err := s.GetWebhook(ctx, "wh_none"); !errors.Is(err, webhook.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	list, more, err := s.ListWebhooks(ctx, "team_a", "", 2)
	if err != nil || !more || len(list) != 2 || list[0].ID != a3.ID || list[1].ID != a2.ID {
		t.Fatalf("list %v %v %v", ids(list), more, err)
	}
	list, more, err = s.ListWebhooks(ctx, "team_a", a2.ID, 2)
	if err != nil || more || len(list) != 1 || list[0].ID != a1.ID {
		t.Fatalf("page 2 %v %v %v", ids(list), more, err)
	}
	if n, err := s.CountWebhooks(ctx, "team_a"); err != nil || n != 3 {
		t.Fatalf("count %d %v", n, err)
	}

	// a3 is disabled: it gets nothing.
	if ok, err := s.DisableWebhook(ctx, a3.ID, "test", "", at(5*time.Second)); err != nil || !ok {
		t.Fatalf("disable %v %v", ok, err)
	}
	if ok, _ := s.DisableWebhook(ctx, a3.ID, "again", "", at(5*time.Second)); ok {
		t.Fatal("disabled twice")
	}
	ev := func(id, team, typ string) events.Event {
		return events.Event{ID: id, Object: events.Object, Type: typ, Team: team, CreatedAt: at(10 * time.Second), Data: map[string]any{}}
	}
	batch := []events.Event{
		ev("evt_w1", "team_a", events.WorkflowRunSucceeded), // a1, a2
		ev("evt_w2", "", events.ModelReady),                 // a1, b1
		ev("evt_w3", "team_b", events.WorkflowRunSucceeded), // b1
		ev("evt_w4", "team_a", events.AuditTriggered),       // a1
		ev("evt_w5", "team_c", events.ModelReady),           // nobody
	}
	if err := s.AppendEvents(ctx, batch); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{a1.ID: {"evt_w4", "evt_w2", "evt_w1"}, a2.ID: {"evt_w1"}, a3.ID: nil, b1.ID: {"evt_w3", "evt_w2"}}
	deliveries := func(w string) []webhook.Delivery {
		ds, _, err := s.ListWebhookDeliveries(ctx, webhook.DeliveryFilter{WebhookID: w, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	check := func() {
		t.Helper()
		for w, evs := range want {
			ds := deliveries(w)
			var got []string
			for _, d := range ds {
				got = append(got, d.EventID)
				team := "team_a"
				if w == b1.ID {
					team = "team_b"
				}
				if d.ID != webhook.DeliveryID(w, d.EventID) || d.MessageID != webhook.MessageID(w, d.EventID) || d.Status != webhook.StatusPending ||
					d.TeamID != team || d.Dispatched || d.Attempts != 0 || !d.CreatedAt.Equal(at(10*time.Second)) || d.EventType == "" {
					t.Fatalf("delivery %+v", d)
				}
			}
			slices.Sort(got)
			sorted := slices.Clone(evs)
			slices.Sort(sorted)
			if !slices.Equal(got, sorted) {
				t.Fatalf("%s's deliveries: %v, want %v", w, got, sorted)
			}
		}
	}
	check()
	// An event stored already makes no new delivery.
	if err := s.AppendEvents(ctx, batch[:1]); err != nil {
		t.Fatal(err)
	}
	check()

	// The dispatcher's queue: oldest first, bounded, without the
	// dispatched ones.
	und, err := s.UndispatchedWebhookDeliveries(ctx, 3)
	if err != nil || len(und) != 3 {
		t.Fatalf("undispatched %d %v", len(und), err)
	}
	if err := s.MarkWebhookDeliveriesDispatched(ctx, []string{und[0].ID, und[1].ID}); err != nil {
		t.Fatal(err)
	}
	und, _ = s.UndispatchedWebhookDeliveries(ctx, 100)
	if len(und) != 4 {
		t.Fatalf("%d undispatched after marking 2 of 6", len(und))
	}

	// Attempts: a failure, the same attempt recorded again (a step run
	// twice), then a success.
	d := webhook.DeliveryID(a2.ID, "evt_w1")
	next := at(20 * time.Second)
	fail := webhook.Attempt{DeliveryID: d, N: 1, StartedAt: at(11 * time.Second), Duration: 1500 * time.Microsecond, StatusCode: 500,
		ResponseBody: "oops ünïcode", Error: "the receiver answered HTTP 500"}
	for range 2 {
		if err := s.RecordWebhookAttempt(ctx, fail, webhook.AttemptUpdate{WebhookID: a2.ID, Status: webhook.StatusDelivering, NextAttemptAt: &next}); err != nil {
			t.Fatal(err)
		}
	}
	gd, err := s.GetWebhookDelivery(ctx, d)
	if err != nil || gd.Status != webhook.StatusDelivering || gd.Attempts != 1 || gd.LastStatus != 500 || gd.LastError != fail.Error ||
		gd.NextAttemptAt == nil || !gd.NextAttemptAt.Equal(next) || gd.EndedAt != nil || !gd.LastAttemptAt.Equal(fail.StartedAt) {
		t.Fatalf("after a failed attempt %+v %v", gd, err)
	}
	if w, _ := s.GetWebhook(ctx, a2.ID); w.FailingSince == nil || !w.FailingSince.Equal(fail.StartedAt) {
		t.Fatalf("failing since %v", w.FailingSince)
	}
	ok2 := webhook.Attempt{DeliveryID: d, N: 2, StartedAt: at(21 * time.Second), Duration: time.Millisecond, StatusCode: 204}
	if err := s.RecordWebhookAttempt(ctx, ok2, webhook.AttemptUpdate{WebhookID: a2.ID, Status: webhook.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	as, err := s.WebhookDeliveryAttempts(ctx, d)
	if err != nil || len(as) != 2 || as[0].N != 1 || as[0].ResponseBody != fail.ResponseBody || as[0].Duration != fail.Duration ||
		!as[0].StartedAt.Equal(fail.StartedAt) || as[1].StatusCode != 204 || as[1].Error != "" {
		t.Fatalf("attempts %+v %v", as, err)
	}
	gd, _ = s.GetWebhookDelivery(ctx, d)
	if gd.Status != webhook.StatusSucceeded || gd.EndedAt == nil || gd.NextAttemptAt != nil || gd.Attempts != 2 {
		t.Fatalf("after success %+v", gd)
	}
	// An ended delivery is not changed by a late attempt.
	if err := s.RecordWebhookAttempt(ctx, webhook.Attempt{DeliveryID: d, N: 3, StartedAt: at(22 * time.Second), StatusCode: 500},
		webhook.AttemptUpdate{WebhookID: a2.ID, Status: webhook.StatusDelivering}); err != nil {
		t.Fatal(err)
	}
	if gd, _ = s.GetWebhookDelivery(ctx, d); gd.Status != webhook.StatusSucceeded {
		t.Fatalf("a late attempt changed an ended delivery: %+v", gd)
	}

	// Failures count once; a stopped delivery does not count.
	f1 := webhook.DeliveryID(a1.ID, "evt_w1")
	for i, wantMoved := range []bool{true, false} {
		w, moved, err := s.FailWebhookDelivery(ctx, f1, "", at(30*time.Second))
		if err != nil || moved != wantMoved || w.ID != a1.ID || w.ConsecutiveFailures != 1 {
			t.Fatalf("fail #%d: %+v %v %v", i, w, moved, err)
		}
	}
	if _, _, err := s.FailWebhookDelivery(ctx, "whd_none", "", at(30*time.Second)); !errors.Is(err, webhook.ErrNotFound) {
		t.Fatalf("fail a missing delivery: %v", err)
	}
	f2 := webhook.DeliveryID(a1.ID, "evt_w2")
	if moved, err := s.EndWebhookDelivery(ctx, f2, "the webhook is disabled", at(31*time.Second)); err != nil || !moved {
		t.Fatalf("end %v %v", moved, err)
	}
	gd, _ = s.GetWebhookDelivery(ctx, f2)
	if gd.Status != webhook.StatusFailed || gd.LastError != "the webhook is disabled" || gd.EndedAt == nil {
		t.Fatalf("ended %+v", gd)
	}
	if w, _ := s.GetWebhook(ctx, a1.ID); w.ConsecutiveFailures != 1 {
		t.Fatalf("a stopped delivery counted: %d", w.ConsecutiveFailures)
	}
	if ds, _, _ := s.ListWebhookDeliveries(ctx, webhook.DeliveryFilter{WebhookID: a1.ID, Status: webhook.StatusFailed}); len(ds) != 2 {
		t.Fatalf("%d failed deliveries", len(ds))
	}

	// Disabled by a delivery, then enabled again with its counters reset
	// and new subscriptions.
	if ok, err := s.DisableWebhook(ctx, a1.ID, "1 consecutive deliveries failed", f1, at(32*time.Second)); err != nil || !ok {
		t.Fatal(ok, err)
	}
	w, _ := s.GetWebhook(ctx, a1.ID)
	if w.Enabled || w.DisabledBy != f1 || w.DisabledReason == "" || w.DisabledAt == nil || !w.DisabledAt.Equal(at(32*time.Second)) {
		t.Fatalf("disabled %+v", w)
	}
	on, url := true, "https://hooks.example/new"
	w, err = s.UpdateWebhook(ctx, a1.ID, webhook.Patch{Enabled: &on, ResetFailures: true, URL: &url, Events: []string{events.DocumentReady}}, at(33*time.Second))
	if err != nil || !w.Enabled || w.DisabledBy != "" || w.DisabledReason != "" || w.DisabledAt != nil || w.ConsecutiveFailures != 0 ||
		w.FailingSince != nil || w.URL != url || !slices.Equal(w.Events, []string{events.DocumentReady}) || !w.UpdatedAt.Equal(at(33*time.Second)) {
		t.Fatalf("updated %+v %v", w, err)
	}
	off := false
	if w, err = s.UpdateWebhook(ctx, a2.ID, webhook.Patch{Enabled: &off, DisabledReason: "disabled through the API"}, at(34*time.Second)); err != nil ||
		w.Enabled || w.DisabledReason != "disabled through the API" || w.DisabledAt == nil {
		t.Fatalf("disabled through the API %+v %v", w, err)
	}
	if _, err := s.UpdateWebhook(ctx, "wh_none", webhook.Patch{Enabled: &on}, at(34*time.Second)); !errors.Is(err, webhook.ErrNotFound) {
		t.Fatalf("update a missing webhook: %v", err)
	}
	// The new subscriptions apply to the next events: a1 now gets
	// document.ready only, a2 (disabled) nothing.
	if err := s.AppendEvents(ctx, []events.Event{ev("evt_w6", "team_a", events.DocumentReady), ev("evt_w7", "team_a", events.WorkflowRunSucceeded)}); err != nil {
		t.Fatal(err)
	}
	var evs []string
	for _, d := range deliveries(a1.ID) {
		evs = append(evs, d.EventID)
	}
	if len(evs) != 4 || !slices.Contains(evs, "evt_w6") {
		t.Fatalf("a1 after resubscribing: %v", evs)
	}
	if ds := deliveries(a2.ID); len(ds) != 1 {
		t.Fatalf("a disabled webhook got %d deliveries", len(ds))
	}

	// Rotation.
	until := at(time.Hour)
	w, err = s.RotateWebhookSecret(ctx, b1.ID, "whsec_new", b1.Secret, &until, at(35*time.Second))
	if err != nil || w.Secret != "whsec_new" || w.PreviousSecret != b1.Secret || w.PreviousSecretUntil == nil || !w.PreviousSecretUntil.Equal(until) {
		t.Fatalf("rotated %+v %v", w, err)
	}
	if w, err = s.RotateWebhookSecret(ctx, b1.ID, "whsec_newer", "", nil, at(36*time.Second)); err != nil || w.PreviousSecret != "" || w.PreviousSecretUntil != nil {
		t.Fatalf("rotated without grace %+v %v", w, err)
	}

	// A redelivery: its own row, the same message id, listed first.
	orig, _ := s.GetWebhookDelivery(ctx, webhook.DeliveryID(b1.ID, "evt_w2"))
	re := webhook.Delivery{ID: "whd_re", WebhookID: b1.ID, TeamID: "team_b", EventID: orig.EventID, EventType: orig.EventType, MessageID: orig.MessageID,
		Status: webhook.StatusPending, RedeliveryOf: orig.ID, CreatedAt: at(40 * time.Second)}
	if err := s.CreateWebhookDelivery(ctx, re); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateWebhookDelivery(ctx, re); !errors.Is(err, auth.ErrConflict) {
		t.Fatalf("the same delivery id twice: %v", err)
	}
	page, more, err := s.ListWebhookDeliveries(ctx, webhook.DeliveryFilter{WebhookID: b1.ID, Limit: 1})
	if err != nil || !more || len(page) != 1 || page[0].ID != "whd_re" || page[0].RedeliveryOf != orig.ID || page[0].MessageID != orig.MessageID {
		t.Fatalf("first page %+v %v %v", page, more, err)
	}
	page, _, _ = s.ListWebhookDeliveries(ctx, webhook.DeliveryFilter{WebhookID: b1.ID, After: "whd_re", Limit: 10})
	if len(page) != 2 {
		t.Fatalf("second page: %d", len(page))
	}

	// Purge: the deliveries that ended before the time, with their
	// attempts; not those under way.
	if n, err := s.PurgeWebhookDeliveries(ctx, at(30*time.Second+time.Millisecond)); err != nil || n != 2 {
		t.Fatalf("purged %d %v, want d and f1", n, err)
	}
	for _, id := range []string{d, f1} {
		if _, err := s.GetWebhookDelivery(ctx, id); !errors.Is(err, webhook.ErrNotFound) {
			t.Fatalf("purged delivery %s: %v", id, err)
		}
	}
	if as, _ := s.WebhookDeliveryAttempts(ctx, d); len(as) != 0 {
		t.Fatalf("a purged delivery's attempts: %+v", as)
	}
	if _, err := s.GetWebhookDelivery(ctx, f2); err != nil {
		t.Fatalf("a delivery that ended later: %v", err)
	}
	if _, err := s.GetWebhookDelivery(ctx, "whd_re"); err != nil {
		t.Fatalf("a pending delivery: %v", err)
	}

	// Delete: the webhook, its deliveries and their attempts.
	if err := s.DeleteWebhook(ctx, a2.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteWebhook(ctx, a2.ID); !errors.Is(err, webhook.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if _, err := s.GetWebhookDelivery(ctx, d); !errors.Is(err, webhook.ErrNotFound) {
		t.Fatalf("a deleted webhook's delivery: %v", err)
	}
	if as, _ := s.WebhookDeliveryAttempts(ctx, d); len(as) != 0 {
		t.Fatalf("%d attempts left", len(as))
	}
	// An attempt of a deleted delivery (a step that ran on) is not kept.
	if err := s.RecordWebhookAttempt(ctx, webhook.Attempt{DeliveryID: d, N: 4, StartedAt: at(50 * time.Second), StatusCode: 200},
		webhook.AttemptUpdate{WebhookID: a2.ID, Status: webhook.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	if as, _ := s.WebhookDeliveryAttempts(ctx, d); len(as) != 0 {
		t.Fatalf("an attempt of a deleted delivery was kept: %+v", as)
	}
	if n, _ := s.CountWebhooks(ctx, "team_a"); n != 2 {
		t.Fatalf("count after delete: %d", n)
	}
	// Nothing subscribes it any more.
	if err := s.AppendEvents(ctx, []events.Event{ev("evt_w8", "team_a", events.WorkflowRunSucceeded)}); err != nil {
		t.Fatal(err)
	}
	if ds := deliveries(a2.ID); len(ds) != 0 {
		t.Fatalf("a deleted webhook got %d deliveries", len(ds))
	}
}

func ids(ws []webhook.Webhook) string {
	var out []string
	for _, w := range ws {
		out = append(out, w.ID)
	}
	return fmt.Sprint(out)
}
