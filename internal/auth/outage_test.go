package auth

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// outage switches f's store between up and down: down, reading or
// writing a key fails as a database that cannot be reached does (the
// store adapters' classifiers make a driver's error this 503). reads
// counts key reads by hash.
type outage struct {
	down  atomic.Bool
	reads atomic.Int32
}

func (o *outage) install(f *fixture) {
	get, update := f.fake.GetKeyByHashFn, f.fake.UpdateKeyFn
	refused := func() error {
		return fmt.Errorf("postgres: %w", apierr.DatabaseDown(errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")))
	}
	f.fake.GetKeyByHashFn = func(ctx context.Context, h []byte) (Key, error) {
		o.reads.Add(1)
		if o.down.Load() {
			return Key{}, refused()
		}
		return get(ctx, h)
	}
	f.fake.UpdateKeyFn = func(ctx context.Context, id string, u KeyUpdate) error {
		if o.down.Load() {
			return refused()
		}
		return update(ctx, id, u)
	}
}

// wantDown checks that err is the honest answer to a store outage: a 503
// database_unavailable with Retry-After, not a verdict on the key.
func wantDown(t *testing.T, what string, err error) {
	t.Helper()
	e := apierr.From(err)
	if e.Status() != 503 || e.Code != apierr.DatabaseUnavailable || e.RetryAfter <= 0 ||
		errors.Is(err, ErrInvalidKey) || errors.Is(err, ErrRevokedKey) || errors.Is(err, ErrExpiredKey) {
		t.Errorf("%s: %v (%d %s retry %s), want 503 database_unavailable with Retry-After", what, err, e.Status(), e.Code, e.RetryAfter)
	}
}

// TestOutageGrace: a key read from the store keeps working from the cache
// for OutageGrace after that read while the store is down, without writes
// to the store; past the grace it gets 503 database_unavailable; a key
// not read before the outage gets the 503 at once; never a 401 for the
// outage itself. Once the store is back, keys are read from it again.
func TestOutageGrace(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var o outage
	o.install(f)
	_, secret := f.key(t)
	_, unseen := f.key(t)
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	writes := f.mem.updateCount()

	o.down.Store(true)
	f.clock.Add(DefaultCacheTTL) // the cache entry is stale: the store is asked, and fails
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Fatalf("a key read a moment ago, store down: %v", err)
	}
	f.clock.Add(LastUsedInterval) // a last use would be due: nothing is written while down
	reads := o.reads.Load()
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Fatalf("during the grace: %v", err)
	}
	f.clock.Add(DefaultOutageGrace - DefaultCacheTTL - LastUsedInterval - time.Microsecond)
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Fatalf("at the end of the grace: %v", err)
	}
	if w := f.mem.updateCount(); w != writes {
		t.Errorf("%d writes to the store during the outage, want none", w-writes)
	}
	if o.reads.Load() == reads {
		t.Error("the store was not tried again once a cache TTL had passed")
	}
	_, err := f.svc.Authenticate(ctx, unseen)
	wantDown(t, "a key not read before the outage", err)
	f.clock.Add(time.Microsecond)
	_, err = f.svc.Authenticate(ctx, secret)
	wantDown(t, "after the grace", err)

	o.down.Store(false)
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Fatalf("store back: %v", err)
	}
	if _, err := f.svc.Authenticate(ctx, unseen); err != nil {
		t.Fatalf("store back, the other key: %v", err)
	}
}

// TestOutageSparesTheStore: once a read found the store down, requests of
// cached keys within their grace do not try it again for a cache TTL (a
// partition would make each wait for the lookup timeout).
func TestOutageSparesTheStore(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var o outage
	o.install(f)
	_, secret := f.key(t)
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	o.down.Store(true)
	f.clock.Add(DefaultCacheTTL)
	before := o.reads.Load()
	for i := 0; i < 5; i++ {
		if _, err := f.svc.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	if n := o.reads.Load() - before; n != 1 {
		t.Errorf("%d reads of a down store for 5 requests within a TTL, want 1", n)
	}
	f.clock.Add(DefaultCacheTTL)
	f.svc.Authenticate(ctx, secret)
	if n := o.reads.Load() - before; n != 2 {
		t.Errorf("%d reads after another TTL, want 2", n)
	}
}

// TestOutageDoesNotResurrect: the grace serves a key as it was last read.
// A key revoked through the service is out of the cache (503 during the
// outage, not 200); one revoked by another replica and read since stays
// revoked; one that expires during the outage is expired.
func TestOutageDoesNotResurrect(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var o outage
	o.install(f)
	k1, s1 := f.key(t)
	k2, s2 := f.key(t)
	exp := f.clock.Now().Add(time.Minute)
	_, s3, err := f.svc.CreateKey(ctx, CreateKeyParams{Name: "short", TeamID: f.team.ID, Scopes: []Scope{ScopeInference}, ExpiresAt: &exp})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{s1, s2, s3} {
		if _, err := f.svc.Authenticate(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.Revoke(ctx, k1.ID); err != nil {
		t.Fatal(err)
	}
	now := f.clock.Now()
	if err := f.fake.UpdateKeyFn(ctx, k2.ID, KeyUpdate{RevokedAt: &now}); err != nil { // another replica
		t.Fatal(err)
	}
	f.clock.Add(DefaultCacheTTL)
	if _, err := f.svc.Authenticate(ctx, s2); !errors.Is(err, ErrRevokedKey) {
		t.Fatalf("revoked by another replica, read again: %v", err)
	}
	if _, err := f.svc.Authenticate(ctx, s3); err != nil {
		t.Fatal(err)
	}

	o.down.Store(true)
	f.clock.Add(DefaultCacheTTL)
	_, err = f.svc.Authenticate(ctx, s1)
	wantDown(t, "revoked through the service, then an outage", err)
	if _, err := f.svc.Authenticate(ctx, s2); !errors.Is(err, ErrRevokedKey) {
		t.Errorf("revoked elsewhere, then an outage: %v, want ErrRevokedKey", err)
	}
	if _, err := f.svc.Authenticate(ctx, s3); err != nil {
		t.Errorf("before its expiry, during the outage: %v", err)
	}
	f.clock.Add(time.Minute)
	if _, err := f.svc.Authenticate(ctx, s3); !errors.Is(err, ErrExpiredKey) {
		t.Errorf("expired during the outage: %v, want ErrExpiredKey", err)
	}
}

// TestRevokeDuringRead: a key read from the store while a revocation
// empties the cache is not cached (it may be the key as it was before the
// revocation), so an outage right after cannot serve it.
func TestRevokeDuringRead(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var o outage
	o.install(f)
	k, secret := f.key(t)
	get := f.fake.GetKeyByHashFn
	f.fake.GetKeyByHashFn = func(ctx context.Context, h []byte) (Key, error) {
		before, err := get(ctx, h)
		if _, rerr := f.svc.Revoke(ctx, k.ID); rerr != nil {
			t.Error(rerr)
		}
		return before, err
	}
	f.svc.Authenticate(ctx, secret) // read before the revocation: allowed, not cached
	f.fake.GetKeyByHashFn = get
	o.down.Store(true)
	_, err := f.svc.Authenticate(ctx, secret)
	wantDown(t, "a key revoked during its read, then an outage", err)
}

// TestOutageGraceDisabled: with a negative grace an outage is a 503 as
// soon as the cache entry is stale.
func TestOutageGraceDisabled(t *testing.T) {
	f := newFixture(t)
	f.svc.OutageGrace = -1
	ctx := context.Background()
	var o outage
	o.install(f)
	_, secret := f.key(t)
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	o.down.Store(true)
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Fatalf("within the cache TTL: %v", err)
	}
	f.clock.Add(DefaultCacheTTL)
	_, err := f.svc.Authenticate(ctx, secret)
	wantDown(t, "no grace", err)
}

// TestLookupTimeout: a store that does not answer is unavailable after
// the lookup timeout (503, and the grace for cached keys), unless the
// request itself ended first (then it is the request's cancellation).
func TestLookupTimeout(t *testing.T) {
	defer func(d time.Duration) { keyLookupTimeout = d }(keyLookupTimeout)
	keyLookupTimeout = 50 * time.Millisecond
	f := newFixture(t)
	ctx := context.Background()
	_, secret := f.key(t)
	_, unseen := f.key(t)
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	get := f.fake.GetKeyByHashFn
	f.fake.GetKeyByHashFn = func(ctx context.Context, h []byte) (Key, error) {
		<-ctx.Done() // a partition: no answer
		return Key{}, fmt.Errorf("postgres: get key: %w", ctx.Err())
	}
	_, err := f.svc.Authenticate(ctx, unseen)
	wantDown(t, "no answer", err)
	f.clock.Add(DefaultCacheTTL)
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Errorf("a cached key, no answer: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	f.clock.Add(DefaultCacheTTL) // the store is tried again
	if _, err := f.svc.Authenticate(cctx, unseen); apierr.CodeOf(err) == apierr.DatabaseUnavailable {
		t.Errorf("the request's own deadline: %v, want it, not database_unavailable", err)
	}
	f.fake.GetKeyByHashFn = get
}
