package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/console/session"
)

// testConsoleSessions checks the console's session store: round trip with
// times to the microsecond, conflict on a duplicate id hash, not found,
// touch, delete (idempotent), delete by key, purge of expired sessions —
// and the Manager over it (create, check, idle and absolute expiry, end).
func testConsoleSessions(t *testing.T, ks auth.KeyStore) {
	st, ok := ks.(session.Store)
	if !ok {
		t.Fatalf("%T does not implement session.Store", ks)
	}
	ctx := context.Background()
	s1 := session.Session{IDHash: hash("s1"), KeyID: "key_a", CSRF: "tok1", CreatedAt: at(0), LastSeenAt: at(time.Second), ExpiresAt: at(time.Hour)}
	if err := st.CreateConsoleSession(ctx, s1); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateConsoleSession(ctx, s1); !errors.Is(err, auth.ErrConflict) {
		t.Fatalf("duplicate: %v, want ErrConflict", err)
	}
	got, err := st.GetConsoleSession(ctx, hash("s1"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.IDHash, s1.IDHash) || got.KeyID != "key_a" || got.CSRF != "tok1" ||
		!got.CreatedAt.Equal(s1.CreatedAt) || !got.LastSeenAt.Equal(s1.LastSeenAt) || !got.ExpiresAt.Equal(s1.ExpiresAt) ||
		got.CreatedAt.Location() != time.UTC {
		t.Fatalf("got %+v, want %+v", got, s1)
	}
	if _, err := st.GetConsoleSession(ctx, hash("nope")); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("missing: %v, want ErrNotFound", err)
	}
	if err := st.TouchConsoleSession(ctx, hash("s1"), at(time.Minute), at(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ = st.GetConsoleSession(ctx, hash("s1")); !got.LastSeenAt.Equal(at(time.Minute)) || !got.ExpiresAt.Equal(at(2*time.Hour)) {
		t.Fatalf("after touch: %+v", got)
	}
	if err := st.TouchConsoleSession(ctx, hash("nope"), at(0), at(0)); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("touch missing: %v, want ErrNotFound", err)
	}
	for i, name := range []string{"s2", "s3"} {
		if err := st.CreateConsoleSession(ctx, session.Session{IDHash: hash(name), KeyID: "key_b", CSRF: "t", CreatedAt: at(0), LastSeenAt: at(0), ExpiresAt: at(time.Duration(i+1) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.PurgeConsoleSessions(ctx, at(90*time.Second)); err != nil || n != 1 {
		t.Fatalf("purge: %d %v, want 1", n, err)
	}
	if n, err := st.DeleteConsoleSessionsOfKey(ctx, "key_b"); err != nil || n != 1 {
		t.Fatalf("delete of key: %d %v, want 1", n, err)
	}
	if err := st.DeleteConsoleSession(ctx, hash("s1")); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteConsoleSession(ctx, hash("s1")); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := st.GetConsoleSession(ctx, hash("s1")); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("deleted: %v", err)
	}

	// The manager over the store.
	now := base
	m := &session.Manager{Store: st, Idle: time.Hour, MaxAge: 3 * time.Hour, Now: func() time.Time { return now }}
	id, s, err := m.Create(ctx, "key_m")
	if err != nil || id == "" || s.CSRF == "" || !s.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("create: %q %+v %v", id, s, err)
	}
	if got, err := m.Check(ctx, id); err != nil || got.KeyID != "key_m" || !got.ValidCSRF(s.CSRF) || got.ValidCSRF("x") || got.ValidCSRF("") {
		t.Fatalf("check: %+v %v", got, err)
	}
	for i := 0; i < 5; i++ { // used every 50 minutes: idle expiry moves on, up to MaxAge
		now = now.Add(50 * time.Minute)
		if i < 3 {
			if _, err := m.Check(ctx, id); err != nil {
				t.Fatalf("check after %d×50m: %v", i+1, err)
			}
		} else if _, err := m.Check(ctx, id); !errors.Is(err, session.ErrNoSession) {
			t.Fatalf("past MaxAge: %v, want ErrNoSession", err)
		}
	}
	id2, _, err := m.Create(ctx, "key_m")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(61 * time.Minute)
	if _, err := m.Check(ctx, id2); !errors.Is(err, session.ErrNoSession) {
		t.Fatalf("idle: %v, want ErrNoSession", err)
	}
	if _, err := st.GetConsoleSession(ctx, session.Hash(id2)); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("an expired session is deleted when seen: %v", err)
	}
	id3, _, _ := m.Create(ctx, "key_m")
	if err := m.End(ctx, id3); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Check(ctx, id3); !errors.Is(err, session.ErrNoSession) {
		t.Fatalf("after End: %v", err)
	}
	if _, err := m.Check(ctx, ""); !errors.Is(err, session.ErrNoSession) {
		t.Fatalf("empty id: %v", err)
	}
}
