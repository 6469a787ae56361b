package webhook

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The signatures are checked with the Standard Webhooks library's own
// Verify, as a receiver would.
func TestSignaturesVerifyWithTheLibrary(t *testing.T) {
	cur, old := NewSecret(), NewSecret()
	body := []byte(`{"id":"evt_1","object":"event","type":"model.ready","created_at":1767225600,"data":{"model":"m"}}`)
	now := time.Now()
	h, err := Headers([]string{cur, old}, "msg_1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("webhook-id"); got != "msg_1" {
		t.Fatalf("webhook-id %q", got)
	}
	if sigs := strings.Fields(h.Get("webhook-signature")); len(sigs) != 2 || !strings.HasPrefix(sigs[0], "v1,") || !strings.HasPrefix(sigs[1], "v1,") {
		t.Fatalf("webhook-signature %q: want two v1 signatures, space-separated", h.Get("webhook-signature"))
	}
	// Each secret verifies on its own: a receiver that has the new one and
	// one that still has the old one both accept the message.
	for name, s := range map[string]string{"current": cur, "previous": old} {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("%s secret: %v", name, err)
		}
		tampered := append([]byte(nil), body...)
		tampered[len(tampered)-3] = 'n'
		if err := wh.Verify(tampered, h); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
			t.Errorf("%s secret, tampered body: %v", name, err)
		}
	}
	stranger, _ := standardwebhooks.NewWebhook(NewSecret())
	if err := stranger.Verify(body, h); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("another secret verified: %v", err)
	}
	// A message signed long ago is refused by the library's tolerance:
	// each attempt is signed with a fresh timestamp.
	stale, _ := Headers([]string{cur}, "msg_1", now.Add(-time.Hour), body)
	wh, _ := standardwebhooks.NewWebhook(cur)
	if err := wh.Verify(body, stale); !errors.Is(err, standardwebhooks.ErrMessageTooOld) {
		t.Errorf("an hour-old timestamp: %v", err)
	}
}

func TestSecretFormat(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	if a == b || !strings.HasPrefix(a, "whsec_") {
		t.Fatalf("secrets %q %q", a, b)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "whsec_"))
	if err != nil || len(key) != 32 {
		t.Fatalf("key %d bytes, %v", len(key), err)
	}
	if _, err := Sign([]string{"whsec_!!"}, "msg", time.Now(), nil); err == nil {
		t.Fatal("a malformed secret signed")
	}
}

func TestSecretsDuringGrace(t *testing.T) {
	now := time.Now()
	until := now.Add(time.Hour)
	w := Webhook{Secret: "new", PreviousSecret: "old", PreviousSecretUntil: &until}
	if got := w.Secrets(now); len(got) != 2 || got[0] != "new" || got[1] != "old" {
		t.Fatalf("during the grace period: %v", got)
	}
	if got := w.Secrets(until); len(got) != 1 {
		t.Fatalf("after the grace period: %v", got)
	}
}

func TestMessageIDs(t *testing.T) {
	if MessageID("wh_a", "evt_1") != MessageID("wh_a", "evt_1") {
		t.Fatal("the message id is not stable")
	}
	ids := map[string]bool{MessageID("wh_a", "evt_1"): true, MessageID("wh_b", "evt_1"): true, MessageID("wh_a", "evt_2"): true,
		DeliveryID("wh_a", "evt_1"): true}
	if len(ids) != 4 {
		t.Fatalf("ids collide: %v", ids)
	}
	if m := MessageID("wh_a", "evt_1"); !strings.HasPrefix(m, "msg_") || len(m) != 4+32 {
		t.Fatalf("message id %q", m)
	}
}

func TestNormalizeEvents(t *testing.T) {
	got, err := normalizeEvents([]string{"model.ready", " document.ready", "model.ready"}, false)
	if err != nil || strings.Join(got, ",") != "model.ready,document.ready" {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := normalizeEvents([]string{"model.ready", "*"}, true); err != nil || len(got) != 1 || got[0] != "*" {
		t.Fatalf("with *: %v %v", got, err)
	}
	var ve *apierr.Error
	if _, err := normalizeEvents(nil, true); !errors.As(err, &ve) || ve.Code != apierr.InvalidRequest || ve.Param != "events" {
		t.Fatalf("none: %v", err)
	}
	if _, err := normalizeEvents([]string{"model.ready", "model.exploded"}, true); !errors.As(err, &ve) || ve.Code != apierr.InvalidRequest || ve.Param != "events[1]" {
		t.Fatalf("unknown: %v", err)
	}
	for _, list := range [][]string{{"audit.triggered"}, {"*"}} {
		if _, err := normalizeEvents(list, false); !errors.As(err, &ve) || ve.Code != apierr.PermissionDenied || ve.Param != "events" {
			t.Fatalf("%v without records:read: %v", list, err)
		}
	}
	if _, err := normalizeEvents([]string{"audit.triggered"}, true); err != nil {
		t.Fatal(err)
	}
}

func TestClip(t *testing.T) {
	if got := clip([]byte("héllo\x00"), 100); got != "héllo\uFFFD" {
		t.Fatalf("%q", got)
	}
	// "é" is two bytes: a cut after its first byte drops it.
	if got := clip([]byte("hé"), 2); got != "h" {
		t.Fatalf("%q", got)
	}
	if got := clip([]byte(strings.Repeat("a", 5000)), MaxResponseBody); len(got) != MaxResponseBody {
		t.Fatalf("%d bytes", len(got))
	}
}
