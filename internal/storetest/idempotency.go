package storetest

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/idempotency"
)

// testIdempotency runs the Idempotency-Key protocol (idempotency.Service)
// over the store: claim, finish, replay, reuse, in use, release, takeover
// of a stale or expired key, purge, and one winner among racing claims.
func testIdempotency(t *testing.T, ks auth.KeyStore) {
	st, ok := ks.(idempotency.Store)
	if !ok {
		t.Fatalf("%T does not implement idempotency.Store", ks)
	}
	ctx := context.Background()
	now := base
	svc := &idempotency.Service{Store: st, Now: func() time.Time { return now }}
	begin := func(caller, key, body string) (*idempotency.Attempt, *idempotency.Replay, error) {
		return svc.Begin(ctx, caller, key, "POST", "/v1/collections", "application/json", strings.NewReader(body))
	}
	run := func(a *idempotency.Attempt) string { // the handler reads its body
		b, err := io.ReadAll(a.Body())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	a, r, err := begin("key_1", "k1", `{"name":"x"}`)
	if err != nil || r != nil || a == nil {
		t.Fatalf("first attempt: %v %v %v", a, r, err)
	}
	if got := run(a); got != `{"name":"x"}` {
		t.Fatalf("the attempt's body = %q", got)
	}
	// A repeat while the first runs.
	if _, _, err := begin("key_1", "k1", `{"name":"x"}`); !errors.Is(err, idempotency.ErrInUse) {
		t.Fatalf("while running: %v, want ErrInUse", err)
	}
	a.Finish(ctx, 201, []byte(`{"id":"col_1"}`))
	_, r, err = begin("key_1", "k1", `{"name":"x"}`)
	if err != nil || r == nil || r.Status != 201 || string(r.Body) != `{"id":"col_1"}` {
		t.Fatalf("replay: %+v %v", r, err)
	}
	if _, _, err := begin("key_1", "k1", `{"name":"y"}`); !errors.Is(err, idempotency.ErrReused) {
		t.Fatalf("another body: %v, want ErrReused", err)
	}
	if _, _, err := svc.Begin(ctx, "key_1", "k1", "POST", "/v1/teams", "application/json", strings.NewReader(`{"name":"x"}`)); !errors.Is(err, idempotency.ErrReused) {
		t.Fatalf("another path: %v, want ErrReused", err)
	}
	// Keys are the caller's own: another API key's k1 is a new attempt.
	if a, _, err := begin("key_2", "k1", `{"name":"x"}`); err != nil || a == nil {
		t.Fatalf("another caller: %v %v", a, err)
	} else {
		a.Finish(ctx, 400, []byte(`{"error":{}}`)) // a final error is kept too
		if _, r, _ := begin("key_2", "k1", `{"name":"x"}`); r == nil || r.Status != 400 {
			t.Fatalf("a stored 400: %+v", r)
		}
	}
	// A 503 is not final: released, the retry runs.
	a, _, _ = begin("key_1", "k2", `{}`)
	a.Finish(ctx, 503, []byte(`{"error":{}}`))
	if a, _, err := begin("key_1", "k2", `{}`); err != nil || a == nil {
		t.Fatalf("after a 503: %v %v", a, err)
	} else {
		a.Release(ctx)
	}
	// An attempt whose server died goes stale and is taken over.
	if a, _, err := begin("key_1", "k3", `{}`); err != nil || a == nil {
		t.Fatal(err)
	}
	now = now.Add(idempotency.DefaultStale + time.Second)
	if a, _, err := begin("key_1", "k3", `{}`); err != nil || a == nil {
		t.Fatalf("a stale attempt is not taken over: %v", err)
	} else {
		a.Finish(ctx, 200, []byte(`{}`))
	}
	// Expiry: a stored answer is forgotten after the TTL, then purged.
	now = now.Add(idempotency.DefaultTTL + time.Minute)
	if a, _, err := begin("key_1", "k1", `{"name":"other"}`); err != nil || a == nil {
		t.Fatalf("an expired key is not reusable: %v", err)
	} else {
		a.Release(ctx)
	}
	if n, err := st.PurgeIdempotency(ctx, now); err != nil || n < 2 {
		t.Fatalf("purge: %d %v", n, err)
	}
	// Of racing claims, exactly one runs.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, _, err := begin("key_1", "race", `{}`)
			if err != nil && !errors.Is(err, idempotency.ErrInUse) {
				t.Error(err)
			}
			if a != nil {
				mu.Lock()
				won++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d racing attempts ran, want 1", won)
	}
}
