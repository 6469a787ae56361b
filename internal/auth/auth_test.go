package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// invalidParam returns the parameter a 400 names ("" for any other error).
func invalidParam(err error) string {
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Code != apierr.InvalidRequest {
		return ""
	}
	return ae.Param
}

// wantAPI checks that err answers a client with status and message.
func wantAPI(t *testing.T, what string, err error, status int, message string) {
	t.Helper()
	if e := apierr.From(err); e.Status() != status || e.Message != message {
		t.Errorf("%s: %d %q, want %d %q", what, e.Status(), e.Message, status, message)
	}
}

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable clock for Service.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type fixture struct {
	svc   *Service
	fake  *fakeStore
	mem   *memStore
	clock *clock
	team  Team
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fake, mem := newMemStore(t)
	c := &clock{now: t0}
	svc := NewService(fake)
	svc.Now = c.Now
	team, err := svc.CreateTeam(context.Background(), "research")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{svc: svc, fake: fake, mem: mem, clock: c, team: team}
}

func (f *fixture) key(t *testing.T, scopes ...Scope) (Key, string) {
	t.Helper()
	if len(scopes) == 0 {
		scopes = []Scope{ScopeInference}
	}
	k, secret, err := f.svc.CreateKey(context.Background(), CreateKeyParams{Name: "test", TeamID: f.team.ID, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return k, secret
}

func ptr[T any](v T) *T { return &v }

func TestNewSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		s := NewSecret()
		if !strings.HasPrefix(s, SecretPrefix) || len(s) != len(SecretPrefix)+43 {
			t.Fatalf("secret %q: want %q + 43 characters", s, SecretPrefix)
		}
		for _, c := range s[len(SecretPrefix):] {
			if !strings.ContainsRune(base62, c) {
				t.Fatalf("secret %q has non-base62 character %q", s, c)
			}
		}
		if seen[s] {
			t.Fatalf("duplicate secret %q", s)
		}
		seen[s] = true
		if err := ValidateImportedSecret(s); err != nil {
			t.Fatalf("generated secret refused as imported: %v", err)
		}
	}
	if got := DisplayPrefix("sk-sov-AbCdEfGhIj"); got != "sk-sov-AbCdE" || len(got) != PrefixLen {
		t.Errorf("DisplayPrefix = %q", got)
	}
	want := sha256.Sum256([]byte("sk-sov-x"))
	if !bytes.Equal(HashSecret("sk-sov-x"), want[:]) {
		t.Error("HashSecret is not SHA-256")
	}
	if id := newKeyID(); !strings.HasPrefix(id, "key_") || len(id) != 26 {
		t.Errorf("key id %q", id)
	}
	if id := newTeamID(); !strings.HasPrefix(id, "team_") || len(id) != 27 {
		t.Errorf("team id %q", id)
	}
}

func TestScopes(t *testing.T) {
	got, err := ParseScopes(" inference, models:read  inference,admin ")
	if err != nil {
		t.Fatal(err)
	}
	if want := []Scope{ScopeInference, ScopeModelsRead, ScopeAdmin}; !equalScopes(got, want) {
		t.Errorf("ParseScopes = %v, want %v", got, want)
	}
	for _, bad := range []string{"", " , ", "inference,models:delete", "Admin"} {
		_, err := ParseScopes(bad)
		if invalidParam(err) != "scopes" {
			t.Errorf("ParseScopes(%q) err = %v, want a 400 naming scopes", bad, err)
		}
	}
	for _, s := range ValidScopes {
		if !s.Valid() {
			t.Errorf("%s not valid", s)
		}
	}
	if got := SplitScopes(JoinScopes([]Scope{ScopeAdmin, ScopeKeysRead})); !equalScopes(got, []Scope{ScopeAdmin, ScopeKeysRead}) {
		t.Errorf("Join/Split round trip = %v", got)
	}

	inf := Key{Scopes: []Scope{ScopeInference}}
	admin := Key{Scopes: []Scope{ScopeAdmin}}
	none := Key{}
	for _, c := range []struct {
		key   Key
		scope Scope
		want  bool
	}{
		{inf, ScopeInference, true},
		{inf, ScopeModelsRead, false},
		{inf, ScopeAdmin, false},
		{admin, ScopeInference, true},
		{admin, ScopeModelsWrite, true},
		{admin, ScopeKeysRead, true},
		{admin, ScopeAdmin, true},
		{none, ScopeInference, false},
	} {
		if got := HasScope(c.key, c.scope); got != c.want {
			t.Errorf("HasScope(%v, %s) = %v, want %v", c.key.Scopes, c.scope, got, c.want)
		}
	}
}

func equalScopes(a, b []Scope) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCreateTeam(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if f.team.Name != "research" || !strings.HasPrefix(f.team.ID, "team_") || !f.team.CreatedAt.Equal(t0) {
		t.Errorf("team = %+v", f.team)
	}
	_, err := f.svc.CreateTeam(ctx, " research ")
	if !errors.Is(err, ErrConflict) {
		t.Errorf("duplicate name: %v, want ErrConflict", err)
	}
	wantAPI(t, "duplicate name", err, 409, `a team named "research" already exists`)
	for _, bad := range []string{"", "   ", strings.Repeat("x", 101)} {
		if _, err := f.svc.CreateTeam(ctx, bad); invalidParam(err) != "name" {
			t.Errorf("CreateTeam(%q) err = %v", bad, err)
		}
	}
	if got, err := f.svc.TeamByName(ctx, "research"); err != nil || got.ID != f.team.ID {
		t.Errorf("TeamByName = %v, %v", got, err)
	}
}

func TestCreateKey(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	exp := t0.Add(48 * time.Hour)
	k, secret, err := f.svc.CreateKey(ctx, CreateKeyParams{
		Name: " ci ", TeamID: f.team.ID, Scopes: []Scope{ScopeModelsRead, ScopeInference, ScopeModelsRead}, ExpiresAt: &exp,
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := f.mem.key(k.ID)
	switch {
	case !strings.HasPrefix(k.ID, "key_"):
		t.Errorf("id %q", k.ID)
	case k.Name != "ci":
		t.Errorf("name %q", k.Name)
	case k.Prefix != secret[:PrefixLen]:
		t.Errorf("prefix %q for secret %q", k.Prefix, secret)
	case !bytes.Equal(stored.Hash, HashSecret(secret)):
		t.Error("stored hash is not the secret's SHA-256")
	case !equalScopes(stored.Scopes, []Scope{ScopeModelsRead, ScopeInference}):
		t.Errorf("scopes %v", stored.Scopes)
	case stored.ExpiresAt == nil || !stored.ExpiresAt.Equal(exp):
		t.Errorf("expires %v", stored.ExpiresAt)
	case stored.TeamID != f.team.ID || !stored.CreatedAt.Equal(t0):
		t.Errorf("stored %+v", stored)
	}
	for _, field := range [][]byte{[]byte(stored.Name), []byte(stored.Prefix), stored.Hash} {
		if bytes.Contains(field, []byte(secret)) {
			t.Error("the secret is stored in clear")
		}
	}

	past := t0.Add(-time.Second)
	for _, c := range []struct {
		p     CreateKeyParams
		param string
	}{
		{CreateKeyParams{TeamID: "", Scopes: []Scope{ScopeInference}}, "team_id"},
		{CreateKeyParams{TeamID: "team_nope", Scopes: []Scope{ScopeInference}}, "team_id"},
		{CreateKeyParams{TeamID: f.team.ID}, "scopes"},
		{CreateKeyParams{TeamID: f.team.ID, Scopes: []Scope{"root"}}, "scopes"},
		{CreateKeyParams{TeamID: f.team.ID, Scopes: []Scope{ScopeInference}, ExpiresAt: &past}, "expires_at"},
		{CreateKeyParams{TeamID: f.team.ID, Scopes: []Scope{ScopeInference}, ExpiresAt: ptr(t0)}, "expires_at"},
		{CreateKeyParams{Name: strings.Repeat("n", 201), TeamID: f.team.ID, Scopes: []Scope{ScopeInference}}, "name"},
	} {
		_, _, err := f.svc.CreateKey(ctx, c.p)
		if invalidParam(err) != c.param {
			t.Errorf("CreateKey(%+v) err = %v, want invalid %s", c.p, err, c.param)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k, secret := f.key(t)

	got, err := f.svc.Authenticate(ctx, secret)
	if err != nil || got.ID != k.ID || got.TeamID != f.team.ID {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}

	for _, c := range []struct {
		secret string
		want   error
	}{
		{"", ErrMissingKey},
		{"Bearer " + secret, ErrInvalidKey},
		{"sk-other-" + secret[len(SecretPrefix):], ErrInvalidKey},
		{SecretPrefix, ErrInvalidKey},
		{secret + "!", ErrInvalidKey},
		{secret[:len(secret)-1] + "\n", ErrInvalidKey},
		{SecretPrefix + strings.Repeat("a", MaxSecretLen), ErrInvalidKey},
		{NewSecret(), ErrInvalidKey},
		{secret[:len(secret)-1], ErrInvalidKey},
	} {
		if _, err := f.svc.Authenticate(ctx, c.secret); !errors.Is(err, c.want) {
			t.Errorf("Authenticate(%q) err = %v, want %v", c.secret, err, c.want)
		}
	}
}

// TestAuthenticateLooksUpByHash checks the constant-time path: the store
// sees only the SHA-256, and a row whose hash does not match (a store that
// matched loosely) is refused.
func TestAuthenticateLooksUpByHash(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k, secret := f.key(t)

	var asked [][]byte
	f.fake.GetKeyByHashFn = func(_ context.Context, hash []byte) (Key, error) {
		asked = append(asked, append([]byte(nil), hash...))
		other := f.mem.key(k.ID)
		other.Hash = HashSecret("sk-sov-somethingelse")
		return other, nil
	}
	if _, err := f.svc.Authenticate(ctx, secret); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("mismatching stored hash: err = %v, want ErrInvalidKey", err)
	}
	if len(asked) != 1 || !bytes.Equal(asked[0], HashSecret(secret)) {
		t.Errorf("store asked for %x, want the secret's SHA-256", asked)
	}

	// A store failure is an error, not a verdict on the key.
	boom := errors.New("disk on fire")
	f.fake.GetKeyByHashFn = func(context.Context, []byte) (Key, error) { return Key{}, boom }
	_, err := f.svc.Authenticate(ctx, secret)
	if !errors.Is(err, boom) || errors.Is(err, ErrInvalidKey) {
		t.Errorf("store failure: err = %v, want the store's error", err)
	}
}

func TestAuthenticateExpiry(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	exp := t0.Add(time.Hour)
	k, secret, err := f.svc.CreateKey(ctx, CreateKeyParams{TeamID: f.team.ID, Scopes: []Scope{ScopeInference}, ExpiresAt: &exp})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Add(time.Hour - time.Microsecond)
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Fatalf("just before expiry: %v", err)
	}
	f.clock.Add(time.Microsecond)
	got, err := f.svc.Authenticate(ctx, secret)
	if !errors.Is(err, ErrExpiredKey) {
		t.Fatalf("at expiry: err = %v, want ErrExpiredKey", err)
	}
	if got.ID != k.ID {
		t.Errorf("expired key not returned for logging: %+v", got)
	}
}

func TestRevoke(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k, secret := f.key(t)
	other, otherSecret := f.key(t)

	f.clock.Add(time.Minute)
	rk, err := f.svc.Revoke(ctx, k.ID)
	if err != nil || rk.RevokedAt == nil || !rk.RevokedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("Revoke = %+v, %v", rk, err)
	}
	got, err := f.svc.Authenticate(ctx, secret)
	if !errors.Is(err, ErrRevokedKey) || got.ID != k.ID {
		t.Errorf("revoked key: %s, %v; want ErrRevokedKey", got.ID, err)
	}
	if _, err := f.svc.Authenticate(ctx, otherSecret); err != nil {
		t.Errorf("other key after revoking one: %v", err)
	}
	_ = other

	// Revoking again keeps the first instant and writes nothing.
	n := f.mem.updateCount()
	f.clock.Add(time.Hour)
	again, err := f.svc.Revoke(ctx, k.ID)
	if err != nil || !again.RevokedAt.Equal(t0.Add(time.Minute)) || f.mem.updateCount() != n {
		t.Errorf("second Revoke = %v, %v (updates %d→%d)", again.RevokedAt, err, n, f.mem.updateCount())
	}
	_, err = f.svc.Revoke(ctx, "key_nope")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Revoke(missing) = %v, want ErrNotFound", err)
	}
	// The client's message names the key, never the store.
	wantAPI(t, "Revoke(missing)", err, 404, `no API key "key_nope"`)
}

func TestRotate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	old, oldSecret := f.key(t, ScopeInference, ScopeModelsRead)

	f.clock.Add(time.Minute)
	nk, newSecret, err := f.svc.Rotate(ctx, old.ID, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if nk.ID == old.ID || nk.Name != old.Name || nk.TeamID != old.TeamID || !equalScopes(nk.Scopes, old.Scopes) || nk.ExpiresAt != nil {
		t.Errorf("new key %+v does not match old %+v", nk, old)
	}
	if newSecret == oldSecret || !bytes.Equal(f.mem.key(nk.ID).Hash, HashSecret(newSecret)) {
		t.Error("new secret not stored as the new key's hash")
	}
	stored := f.mem.key(old.ID)
	if stored.RotatedTo != nk.ID || stored.ExpiresAt == nil || !stored.ExpiresAt.Equal(t0.Add(time.Minute+2*time.Hour)) {
		t.Errorf("old key after rotation: rotated_to %q expires %v", stored.RotatedTo, stored.ExpiresAt)
	}

	// Both work during the grace period; then only the new one.
	f.clock.Add(2*time.Hour - time.Second)
	for _, s := range []string{oldSecret, newSecret} {
		if _, err := f.svc.Authenticate(ctx, s); err != nil {
			t.Errorf("during grace: %v", err)
		}
	}
	f.clock.Add(time.Second)
	if _, err := f.svc.Authenticate(ctx, oldSecret); !errors.Is(err, ErrExpiredKey) {
		t.Errorf("old key after grace: %v, want ErrExpiredKey", err)
	}
	if _, err := f.svc.Authenticate(ctx, newSecret); err != nil {
		t.Errorf("new key after grace: %v", err)
	}

	// Rotating the old key again is refused; its successor can be rotated.
	_, _, err = f.svc.Rotate(ctx, old.ID, time.Hour)
	if !errors.Is(err, ErrExpiredKey) {
		t.Errorf("rotate expired old key: %v", err)
	}
	wantAPI(t, "rotate expired old key", err, 409, `API key "`+old.ID+`" has expired and cannot be rotated; create a new key`)
	if _, _, err := f.svc.Rotate(ctx, "key_nope", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("rotate missing key: %v", err)
	}
}

func TestRotateGrace(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		expires *time.Time
		grace   time.Duration
		want    time.Time
	}{
		{"zero means default", nil, 0, t0.Add(DefaultRotationGrace)},
		{"negative ends at once", nil, -time.Second, t0},
		{"earlier expiry kept", ptr(t0.Add(time.Hour)), 24 * time.Hour, t0.Add(time.Hour)},
		{"later expiry shortened", ptr(t0.Add(72 * time.Hour)), time.Hour, t0.Add(time.Hour)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			k, secret, err := f.svc.CreateKey(ctx, CreateKeyParams{TeamID: f.team.ID, Scopes: []Scope{ScopeAdmin}, ExpiresAt: c.expires})
			if err != nil {
				t.Fatal(err)
			}
			nk, _, err := f.svc.Rotate(ctx, k.ID, c.grace)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.mem.key(k.ID).ExpiresAt; got == nil || !got.Equal(c.want) {
				t.Errorf("old key expires %v, want %v", got, c.want)
			}
			if (nk.ExpiresAt == nil) != (c.expires == nil) || nk.ExpiresAt != nil && !nk.ExpiresAt.Equal(*c.expires) {
				t.Errorf("new key expires %v, want the old key's original %v", nk.ExpiresAt, c.expires)
			}
			if c.grace < 0 {
				if _, err := f.svc.Authenticate(ctx, secret); !errors.Is(err, ErrExpiredKey) {
					t.Errorf("negative grace: old key %v, want ErrExpiredKey", err)
				}
			}
		})
	}
}

func TestRotateRefusals(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	revoked, _ := f.key(t)
	if _, err := f.svc.Revoke(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}
	_, _, err := f.svc.Rotate(ctx, revoked.ID, 0)
	if !errors.Is(err, ErrRevokedKey) {
		t.Errorf("rotate revoked: %v, want ErrRevokedKey", err)
	}
	// A conflict with the key's state, not a failed authentication.
	wantAPI(t, "rotate revoked", err, 409, `API key "`+revoked.ID+`" has been revoked and cannot be rotated; create a new key`)
	k, _ := f.key(t)
	nk, _, err := f.svc.Rotate(ctx, k.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = f.svc.Rotate(ctx, k.ID, time.Hour)
	var ae *apierr.Error
	if !errors.Is(err, ErrAlreadyRotated) || !errors.As(err, &ae) || ae.Err == nil || !strings.Contains(ae.Err.Error(), nk.ID) {
		t.Errorf("rotate twice: %v, want ErrAlreadyRotated naming %s in its cause", err, nk.ID)
	}
	wantAPI(t, "rotate twice", err, 409, `API key "`+k.ID+`" has already been rotated`)
	if _, _, err := f.svc.Rotate(ctx, nk.ID, time.Hour); err != nil {
		t.Errorf("rotate the successor: %v", err)
	}
}

// TestRotateFailureRevokesOrphan: when the old key cannot be updated, the
// new key (whose secret nobody will see) is revoked.
func TestRotateFailureRevokesOrphan(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k, secret := f.key(t)
	update := f.fake.UpdateKeyFn
	boom := errors.New("write failed")
	f.fake.UpdateKeyFn = func(ctx context.Context, id string, u KeyUpdate) error {
		if id == k.ID {
			return boom
		}
		return update(ctx, id, u)
	}
	if _, _, err := f.svc.Rotate(ctx, k.ID, time.Hour); !errors.Is(err, boom) {
		t.Fatalf("Rotate err = %v, want %v", err, boom)
	}
	keys, _ := f.svc.ListKeys(ctx, f.team.ID)
	if len(keys) != 2 {
		t.Fatalf("%d keys, want old + orphan", len(keys))
	}
	for _, x := range keys {
		if x.ID != k.ID && x.RevokedAt == nil {
			t.Errorf("orphan %s not revoked", x.ID)
		}
	}
	f.fake.UpdateKeyFn = update
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Errorf("old key after failed rotation: %v", err)
	}
}

func TestLastUsedThrottled(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k, secret := f.key(t)

	var writes []time.Time
	update := f.fake.UpdateKeyFn
	f.fake.UpdateKeyFn = func(ctx context.Context, id string, u KeyUpdate) error {
		if u.LastUsedAt != nil {
			writes = append(writes, *u.LastUsedAt)
		}
		return update(ctx, id, u)
	}
	auth := func() Key {
		t.Helper()
		got, err := f.svc.Authenticate(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	got := auth()
	if len(writes) != 1 || got.LastUsedAt == nil || !got.LastUsedAt.Equal(t0) {
		t.Fatalf("first use: writes %v, LastUsedAt %v", writes, got.LastUsedAt)
	}
	for range 10 {
		f.clock.Add(5 * time.Second)
		auth()
	}
	if len(writes) != 1 {
		t.Errorf("within a minute: %d writes, want 1", len(writes))
	}
	f.clock.Add(10 * time.Second) // 60 s after the first write
	auth()
	if len(writes) != 2 || !writes[1].Equal(t0.Add(time.Minute)) {
		t.Errorf("after a minute: writes %v", writes)
	}
	if s := f.mem.key(k.ID).LastUsedAt; s == nil || !s.Equal(t0.Add(time.Minute)) {
		t.Errorf("stored LastUsedAt %v", s)
	}

	// Another replica wrote recently: the stored value alone suppresses a write.
	f.clock.Add(5 * time.Minute)
	recent := f.clock.Now().Add(-10 * time.Second)
	if err := update(ctx, k.ID, KeyUpdate{LastUsedAt: &recent}); err != nil {
		t.Fatal(err)
	}
	f.svc.touched = nil // as if a fresh process
	auth()
	if len(writes) != 2 {
		t.Errorf("after another replica's write: %d writes, want 2", len(writes))
	}
}

func TestLastUsedConcurrent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, secret := f.key(t)
	var mu sync.Mutex
	writes := 0
	update := f.fake.UpdateKeyFn
	f.fake.UpdateKeyFn = func(ctx context.Context, id string, u KeyUpdate) error {
		mu.Lock()
		writes++
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // a slow database
		return update(ctx, id, u)
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.svc.Authenticate(ctx, secret); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if writes != 1 {
		t.Errorf("50 concurrent requests wrote last-used %d times, want 1", writes)
	}
}

func TestLastUsedFailureDoesNotFailRequest(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, secret := f.key(t)
	update := f.fake.UpdateKeyFn
	calls := 0
	f.fake.UpdateKeyFn = func(ctx context.Context, id string, u KeyUpdate) error {
		calls++
		if calls == 1 {
			return errors.New("database is locked")
		}
		return update(ctx, id, u)
	}
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Fatalf("a failed last-used write failed the request: %v", err)
	}
	got, err := f.svc.Authenticate(ctx, secret)
	if err != nil || calls != 2 || got.LastUsedAt == nil {
		t.Errorf("retry after failed write: calls %d, LastUsedAt %v, err %v", calls, got.LastUsedAt, err)
	}
}

func TestBootstrapEmptyStore(t *testing.T) {
	fake, mem := newMemStore(t)
	svc := NewService(fake)
	svc.Now = func() time.Time { return t0 }
	ctx := context.Background()

	secret, created, err := svc.Bootstrap(ctx, "")
	if err != nil || !created {
		t.Fatalf("Bootstrap = %v, %v", created, err)
	}
	if err := ValidateImportedSecret(secret); err != nil || len(secret) != len(SecretPrefix)+43 {
		t.Errorf("generated secret %q: %v", secret, err)
	}
	k, err := svc.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	team, err := svc.GetTeam(ctx, k.TeamID)
	if err != nil || team.Name != BootstrapTeam {
		t.Errorf("bootstrap team = %+v, %v", team, err)
	}
	if !equalScopes(k.Scopes, []Scope{ScopeAdmin}) || k.Name != BootstrapKeyName || k.ExpiresAt != nil {
		t.Errorf("bootstrap key = %+v", k)
	}

	// Keys exist now: nothing happens, nothing is written.
	fake.CreateKeyFn, fake.CreateTeamFn = nil, nil
	if s, created, err := svc.Bootstrap(ctx, ""); s != "" || created || err != nil {
		t.Errorf("second Bootstrap = %q, %v, %v", s, created, err)
	}
	if s, created, err := svc.Bootstrap(ctx, "sk-sov-"+strings.Repeat("Z", 40)); s != "" || created || err != nil {
		t.Errorf("Bootstrap with env key and existing keys = %q, %v, %v", s, created, err)
	}
	if n := len(mem.keys); n != 1 {
		t.Errorf("%d keys, want 1", n)
	}
}

func TestBootstrapEnvKey(t *testing.T) {
	fake, _ := newMemStore(t)
	svc := NewService(fake)
	ctx := context.Background()
	env := "sk-sov-" + strings.Repeat("ab_-9", 7) // 35 characters after the prefix
	secret, created, err := svc.Bootstrap(ctx, env)
	if err != nil || !created || secret != env {
		t.Fatalf("Bootstrap(env) = %q, %v, %v", secret, created, err)
	}
	k, err := svc.Authenticate(ctx, env)
	if err != nil || !HasScope(k, ScopeAdmin) || k.Prefix != env[:PrefixLen] {
		t.Errorf("env key: %+v, %v", k, err)
	}
}

func TestBootstrapMalformedEnvKey(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{"hunter2hunter2hunter2hunter2hunter2hunter2", "must start with"},
		{"sk-sov-short", "at least 32 characters"},
		{"sk-sov-" + strings.Repeat("a", 31), "at least 32 characters"},
		{"sk-sov-" + strings.Repeat("a", 31) + "!", "only letters, digits"},
		{"sk-sov-" + strings.Repeat("a", 300), "at most 256"},
		{"sk-sov-" + strings.Repeat("a", 32) + " ", "only letters, digits"},
	} {
		fake := &fakeStore{t: t} // no store call may happen
		_, created, err := NewService(fake).Bootstrap(context.Background(), c.key)
		if err == nil || created {
			t.Errorf("Bootstrap(%q) accepted", c.key)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "SOVEREIGN_BOOTSTRAP_KEY") || !strings.Contains(msg, c.want) {
			t.Errorf("Bootstrap(%q) err = %q, want it to name SOVEREIGN_BOOTSTRAP_KEY and say %q", c.key, msg, c.want)
		}
		if len(c.key) > 12 && strings.Contains(msg, c.key) {
			t.Errorf("error echoes the secret: %q", msg)
		}
	}
}

func TestBootstrapReusesDefaultTeam(t *testing.T) {
	fake, mem := newMemStore(t)
	svc := NewService(fake)
	ctx := context.Background()
	team, err := svc.CreateTeam(ctx, BootstrapTeam)
	if err != nil {
		t.Fatal(err)
	}
	fake.CreateTeamFn = nil // must not be called
	secret, created, err := svc.Bootstrap(ctx, "")
	if err != nil || !created {
		t.Fatalf("Bootstrap = %v, %v", created, err)
	}
	k, _ := svc.Authenticate(ctx, secret)
	if k.TeamID != team.ID || len(mem.teams) != 1 {
		t.Errorf("bootstrap key in team %s, want existing %s", k.TeamID, team.ID)
	}
}

// TestBootstrapRace: two replicas bootstrap the same env key at once; the
// one whose insert conflicts reports nothing created and no error.
func TestBootstrapRace(t *testing.T) {
	fake, _ := newMemStore(t)
	fake.CountKeysFn = func(context.Context) (int, error) { return 0, nil } // both saw an empty store
	svc := NewService(fake)
	ctx := context.Background()
	env := "sk-sov-" + strings.Repeat("k", 40)
	if _, created, err := svc.Bootstrap(ctx, env); err != nil || !created {
		t.Fatalf("first: %v %v", created, err)
	}
	if s, created, err := svc.Bootstrap(ctx, env); err != nil || created || s != "" {
		t.Errorf("second: %q %v %v; want a quiet no-op", s, created, err)
	}
}

func TestBootstrapStoreError(t *testing.T) {
	boom := errors.New("no database")
	fake := &fakeStore{t: t, CountKeysFn: func(context.Context) (int, error) { return 0, boom }}
	if _, _, err := NewService(fake).Bootstrap(context.Background(), ""); !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}

func TestDeleteTeam(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.key(t)
	if err := f.svc.DeleteTeam(ctx, f.team.ID); !errors.Is(err, ErrConflict) {
		t.Errorf("delete team with keys: %v, want ErrConflict", err)
	}
	empty, _ := f.svc.CreateTeam(ctx, "empty")
	if err := f.svc.DeleteTeam(ctx, empty.ID); err != nil {
		t.Errorf("delete empty team: %v", err)
	}
	teams, _ := f.svc.ListTeams(ctx)
	if len(teams) != 1 {
		t.Errorf("%d teams left, want 1", len(teams))
	}
}

// TestAuthenticateCache checks the key cache: a second request does not
// read the store; a revocation through the service applies at once; one
// made directly in the store (another replica) applies within CacheTTL.
func TestAuthenticateCache(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	k, secret := f.key(t)
	reads := 0
	orig := f.fake.GetKeyByHashFn
	f.fake.GetKeyByHashFn = func(ctx context.Context, h []byte) (Key, error) {
		reads++
		return orig(ctx, h)
	}
	for i := 0; i < 3; i++ {
		if _, err := f.svc.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 1 {
		t.Fatalf("store read %d times for 3 requests, want 1", reads)
	}
	// Another replica revokes the key in the shared database.
	now := f.clock.Now()
	if err := f.fake.UpdateKeyFn(ctx, k.ID, KeyUpdate{RevokedAt: &now}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Authenticate(ctx, secret); err != nil {
		t.Fatalf("within the TTL the cached key still works: %v", err)
	}
	f.clock.Add(DefaultCacheTTL)
	if _, err := f.svc.Authenticate(ctx, secret); !errors.Is(err, ErrRevokedKey) {
		t.Fatalf("after the TTL: %v, want ErrRevokedKey", err)
	}
	// Through the service, a revocation is immediate.
	k2, secret2 := f.key(t)
	if _, err := f.svc.Authenticate(ctx, secret2); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Revoke(ctx, k2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Authenticate(ctx, secret2); !errors.Is(err, ErrRevokedKey) {
		t.Fatalf("after Revoke: %v, want ErrRevokedKey", err)
	}
}
