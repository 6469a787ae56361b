package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// KeyStore is what Service needs from a database. The sqlite and postgres
// packages implement it; tests fake it. Every method returns an error
// wrapping ErrNotFound when the team or key does not exist, and one
// wrapping ErrConflict when a uniqueness rule would break. Stores keep
// times in UTC with at least microsecond precision.
type KeyStore interface {
	// CreateTeam stores a new team (ErrConflict: id or name taken).
	CreateTeam(ctx context.Context, t Team) error
	// GetTeam returns a team by id (ErrNotFound).
	GetTeam(ctx context.Context, id string) (Team, error)
	// GetTeamByName returns a team by its unique name (ErrNotFound).
	GetTeamByName(ctx context.Context, name string) (Team, error)
	// ListTeams returns every team, oldest first.
	ListTeams(ctx context.Context) ([]Team, error)
	// SetTeamCapture switches whether a team's requests keep their prompt
	// and output text (ErrNotFound).
	SetTeamCapture(ctx context.Context, id string, on bool) error
	// DeleteTeam removes a team that owns no keys (ErrNotFound; ErrConflict
	// when keys, even revoked ones, still belong to it).
	DeleteTeam(ctx context.Context, id string) error
	// CreateKey stores a new key (ErrConflict: id or hash taken;
	// ErrNotFound: its team does not exist).
	CreateKey(ctx context.Context, k Key) error
	// GetKey returns a key by id (ErrNotFound).
	GetKey(ctx context.Context, id string) (Key, error)
	// GetKeyByHash returns the key whose Hash equals hash (ErrNotFound).
	GetKeyByHash(ctx context.Context, hash []byte) (Key, error)
	// ListKeys returns the keys of one team, or of all teams when teamID
	// is "", oldest first. An unknown team yields an empty list.
	ListKeys(ctx context.Context, teamID string) ([]Key, error)
	// UpdateKey sets the non-nil fields of u on key id (ErrNotFound).
	UpdateKey(ctx context.Context, id string, u KeyUpdate) error
	// CountKeys returns how many keys exist, revoked and expired included.
	CountKeys(ctx context.Context) (int, error)
}

// Tunables.
const (
	// DefaultRotationGrace is how long a rotated key keeps working when
	// Rotate is given a zero grace.
	DefaultRotationGrace = 24 * time.Hour
	// LastUsedInterval is the finest resolution of Key.LastUsedAt:
	// Authenticate writes it at most once per interval per key, so a busy
	// key costs one database write a minute, not one per request.
	LastUsedInterval = time.Minute
	// BootstrapTeam is the team Bootstrap creates (or reuses).
	BootstrapTeam = "default"
	// BootstrapKeyName is the name of the admin key Bootstrap creates.
	BootstrapKeyName = "bootstrap admin"

	maxNameLen = 200
)

// Service manages teams and keys and authenticates requests. Create it
// with NewService; its fields may be set before first use. It is safe for
// concurrent use.
type Service struct {
	// Store persists teams and keys.
	Store KeyStore
	// Now is the clock; nil means time.Now. Times are stored in UTC,
	// truncated to microseconds (what PostgreSQL keeps).
	Now func() time.Time
	// Logger receives failures that do not fail a request (a last-used
	// update that could not be written); nil means slog.Default().
	Logger *slog.Logger
	// CacheTTL is how long Authenticate trusts a key it read from the store
	// before reading it again (0 means DefaultCacheTTL; negative disables
	// the cache). Revocations and rotations made through this Service take
	// effect at once; those made by another server replica sharing the
	// database, within CacheTTL.
	CacheTTL time.Duration
	// OutageGrace is how long a key read from the store keeps working from
	// the cache while the store is unavailable (apierr.DatabaseUnavailable:
	// the database cannot be reached), counted from its last successful
	// read: inference goes on through a database outage, as it does through
	// a Redis outage when limits fail open. 0 means DefaultOutageGrace;
	// negative disables the grace (a key not read within CacheTTL is then a
	// 503 during an outage). It needs the cache (CacheTTL ≥ 0).
	OutageGrace time.Duration
	// EndSessions ends the console sessions acting as a key (the
	// console's session manager); deactivating a user or taking them out
	// of a team calls it for each key they own. nil: nothing to end.
	EndSessions func(ctx context.Context, keyID string) error

	mu           sync.Mutex
	touched      map[string]time.Time // key id → last LastUsedAt this process wrote
	outageLogged time.Time            // when markDown last logged (wall clock)
	downUntil    time.Time            // see storeDown

	cacheMu  sync.RWMutex
	cache    map[string]cachedKey // string(hash) → key
	cacheGen uint64               // how many times forget emptied the cache
}

// DefaultCacheTTL is Service.CacheTTL's default: it saves a database read
// per request (most of the API's own latency) while bounding how long a
// revocation on another replica takes to apply.
const DefaultCacheTTL = 2 * time.Second

// DefaultOutageGrace is Service.OutageGrace's default: long enough to ride
// out a database restart or fail-over, short enough that a key revoked on
// another replica just before the outage is not honoured for long.
const DefaultOutageGrace = 5 * time.Minute

// keyLookupTimeout bounds one read of a key from the store. A database
// that does not answer (a network partition drops packets rather than
// refusing them) would otherwise hold every request until the client
// gives up; past the bound the read counts as the database being
// unavailable, and the outage grace applies. A variable for the tests.
var keyLookupTimeout = 5 * time.Second

// maxCachedKeys bounds the cache; when full it is emptied.
const maxCachedKeys = 10000

type cachedKey struct {
	key Key
	at  time.Time // when the key was last read from the store
}

// lookup returns the key with hash h, from the cache when fresh. When the
// store is unavailable, a cached key read within OutageGrace is returned
// with stale true (the caller then writes nothing to the store); a key not
// cached, or cached longer ago, gets the store's error, which is a 503
// database_unavailable and never a verdict on the key.
func (s *Service) lookup(ctx context.Context, h []byte, now time.Time) (k Key, stale bool, err error) {
	ttl := s.CacheTTL
	if ttl == 0 {
		ttl = DefaultCacheTTL
	}
	var c cachedKey
	var gen uint64
	cached := false
	if ttl > 0 {
		s.cacheMu.RLock()
		c, cached = s.cache[string(h)]
		gen = s.cacheGen
		s.cacheMu.RUnlock()
		cached = cached && !now.Before(c.at)
		if cached && now.Sub(c.at) < ttl {
			return c.key, false, nil
		}
	}
	graced := cached && now.Sub(c.at) < s.outageGrace()
	if graced && s.storeDown(now) {
		// The store failed a moment ago: do not make this request wait
		// for it again (a partition costs keyLookupTimeout a read).
		return c.key, true, nil
	}
	k, err = s.read(ctx, h)
	if err != nil {
		if apierr.CodeOf(err) != apierr.DatabaseUnavailable {
			return k, false, err
		}
		s.markDown(now, ttl, err)
		if graced {
			return c.key, true, nil
		}
		return k, false, err
	}
	s.markUp()
	if ttl < 0 || subtle.ConstantTimeCompare(k.Hash, h) != 1 {
		return k, false, nil
	}
	s.cacheMu.Lock()
	// A revocation or rotation that emptied the cache while this read
	// was under way may have changed the key after it was read: caching
	// it then would let it work for another TTL, or a whole outage grace.
	if s.cacheGen == gen {
		if s.cache == nil || len(s.cache) >= maxCachedKeys {
			s.cache = make(map[string]cachedKey)
		}
		s.cache[string(h)] = cachedKey{key: k, at: now}
	}
	s.cacheMu.Unlock()
	return k, false, nil
}

// read reads the key with hash h from the store, within keyLookupTimeout:
// a store that does not answer in time is unavailable (unless the request
// itself ended first).
func (s *Service) read(ctx context.Context, h []byte) (Key, error) {
	rctx, cancel := context.WithTimeout(ctx, keyLookupTimeout)
	defer cancel()
	k, err := s.Store.GetKeyByHash(rctx, h)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		return k, apierr.DatabaseDown(fmt.Errorf("reading an API key: no answer within %s: %w", keyLookupTimeout, err))
	}
	return k, err
}

func (s *Service) outageGrace() time.Duration {
	switch g := s.OutageGrace; {
	case g == 0:
		return DefaultOutageGrace
	case g < 0:
		return 0
	default:
		return g
	}
}

// storeDown reports whether a read found the store unavailable less than a
// cache TTL before now: until then, cached keys within their grace are
// served without trying the store again.
func (s *Service) storeDown(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return now.Before(s.downUntil)
}

// markDown notes that the store was found unavailable at now, and logs it
// at most once a minute (every request of the outage meets it).
func (s *Service) markDown(now time.Time, ttl time.Duration, err error) {
	wall := time.Now()
	s.mu.Lock()
	if ttl > 0 {
		s.downUntil = now.Add(ttl)
	}
	due := wall.Sub(s.outageLogged) >= time.Minute
	if due {
		s.outageLogged = wall
	}
	s.mu.Unlock()
	if due {
		s.logger().Warn("auth: the key store is unavailable; keys read from it within the outage grace keep working from the cache, others get 503",
			"grace", s.outageGrace(), "err", err)
	}
}

// markUp notes that the store answered.
func (s *Service) markUp() {
	s.mu.Lock()
	s.downUntil = time.Time{}
	s.mu.Unlock()
}

// forget drops every cached key (after a revocation or rotation).
func (s *Service) forget() {
	s.cacheMu.Lock()
	s.cache = nil
	s.cacheGen++
	s.cacheMu.Unlock()
}

// NewService returns a Service over store using the system clock.
func NewService(store KeyStore) *Service {
	return &Service{Store: store}
}

func (s *Service) now() time.Time {
	f := s.Now
	if f == nil {
		f = time.Now
	}
	return f().UTC().Truncate(time.Microsecond)
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// worded returns err as the API error a client sees when it wraps
// sentinel: sentinel's code, with a message naming what was asked for
// (the store's own text names its database, which clients must not see).
// err stays the cause, for logs and errors.Is. Other errors, nil
// included, pass as they are.
func worded(err error, sentinel *apierr.Error, format string, args ...any) error {
	if !errors.Is(err, sentinel) {
		return err
	}
	return &apierr.Error{Code: sentinel.Code, Param: sentinel.Param, Message: fmt.Sprintf(format, args...), Err: err}
}

// CreateTeam creates a team named name (trimmed; 1–100 characters).
// Errors: a 400 naming "name", ErrConflict when the name is taken, or a
// store error.
func (s *Service) CreateTeam(ctx context.Context, name string) (Team, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return Team{}, apierr.Invalid("name", "team name must be 1 to 100 characters")
	}
	t := Team{ID: newTeamID(), Name: name, CreatedAt: s.now()}
	if err := s.Store.CreateTeam(ctx, t); err != nil {
		return Team{}, worded(fmt.Errorf("create team %q: %w", name, err), ErrConflict, "a team named %q already exists", name)
	}
	return t, nil
}

// SetTeamCapture switches the capture of a team's prompts and outputs and
// returns the team. Errors: ErrNotFound or a store error.
func (s *Service) SetTeamCapture(ctx context.Context, id string, on bool) (Team, error) {
	if err := s.Store.SetTeamCapture(ctx, id, on); err != nil {
		// Unquoted, as PATCH /v1/teams/{id} has always said it.
		return Team{}, worded(err, ErrNotFound, "no team %s", id)
	}
	t, err := s.Store.GetTeam(ctx, id)
	return t, worded(err, ErrNotFound, "no team %s", id)
}

// GetTeam returns the team with id. Errors: ErrNotFound or a store error.
func (s *Service) GetTeam(ctx context.Context, id string) (Team, error) {
	t, err := s.Store.GetTeam(ctx, id)
	return t, worded(err, ErrNotFound, "no team %q", id)
}

// TeamByName returns the team called name. Errors: ErrNotFound or a store
// error.
func (s *Service) TeamByName(ctx context.Context, name string) (Team, error) {
	name = strings.TrimSpace(name)
	t, err := s.Store.GetTeamByName(ctx, name)
	return t, worded(err, ErrNotFound, "no team named %q", name)
}

// ListTeams returns every team, oldest first. Errors: a store error.
func (s *Service) ListTeams(ctx context.Context) ([]Team, error) {
	return s.Store.ListTeams(ctx)
}

// DeleteTeam deletes a team that owns no keys. Errors: ErrNotFound,
// ErrConflict when keys (even revoked ones, kept for the audit trail)
// still belong to it, or a store error.
func (s *Service) DeleteTeam(ctx context.Context, id string) error {
	err := worded(s.Store.DeleteTeam(ctx, id), ErrNotFound, "no team %q", id)
	return worded(err, ErrConflict, "team %q still owns keys (revoked ones too) and cannot be deleted", id)
}

// CreateKeyParams describes a new key.
type CreateKeyParams struct {
	Name      string     // free text, at most 200 characters
	TeamID    string     // required; the team must exist
	Scopes    []Scope    // at least one; duplicates are dropped
	ExpiresAt *time.Time // nil: never expires; else must be in the future
	// Kind is KindService ("" too), KindUser or KindSession; OwnerUserID
	// names the user of a KindUser or KindSession key.
	Kind        string
	OwnerUserID string
}

// CreateKey creates a key and returns its record and its secret. The
// secret is returned only here: it is stored as a hash and cannot be
// recovered. Errors: a 400 naming "name", "team_id", "scopes" or
// "expires_at" (apierr.Invalid), ErrNotFound when the team is deleted
// meanwhile, or a store error.
func (s *Service) CreateKey(ctx context.Context, p CreateKeyParams) (Key, string, error) {
	now := s.now()
	k, err := s.validateKey(ctx, p, now)
	if err != nil {
		return Key{}, "", err
	}
	secret := NewSecret()
	k.ID, k.Prefix, k.Hash = newKeyID(), DisplayPrefix(secret), HashSecret(secret)
	if err := s.Store.CreateKey(ctx, k); err != nil {
		return Key{}, "", worded(fmt.Errorf("create key: %w", err), ErrNotFound, "no team %q", p.TeamID)
	}
	return k, secret, nil
}

func (s *Service) validateKey(ctx context.Context, p CreateKeyParams, now time.Time) (Key, error) {
	name := strings.TrimSpace(p.Name)
	if len(name) > maxNameLen {
		return Key{}, apierr.Invalid("name", fmt.Sprintf("key name must be at most %d characters", maxNameLen))
	}
	if p.TeamID == "" {
		return Key{}, apierr.Invalid("team_id", "a team is required")
	}
	if _, err := s.Store.GetTeam(ctx, p.TeamID); err != nil {
		if errors.Is(err, ErrNotFound) {
			return Key{}, apierr.Invalid("team_id", fmt.Sprintf("no team with id %q", p.TeamID))
		}
		return Key{}, fmt.Errorf("create key: %w", err)
	}
	names := make([]string, len(p.Scopes))
	for i, sc := range p.Scopes {
		names[i] = string(sc)
	}
	scopes, err := NormalizeScopes(names)
	if err != nil {
		return Key{}, err
	}
	var exp *time.Time
	if p.ExpiresAt != nil {
		e := p.ExpiresAt.UTC().Truncate(time.Microsecond)
		if !e.After(now) {
			return Key{}, apierr.Invalid("expires_at", "expiry must be in the future")
		}
		exp = &e
	}
	k := Key{Name: name, TeamID: p.TeamID, Scopes: scopes, CreatedAt: now, ExpiresAt: exp, Kind: p.Kind, OwnerUserID: p.OwnerUserID}
	if k.Kind == "" {
		k.Kind = KindService
	}
	switch {
	case k.Kind == KindService && k.OwnerUserID != "":
		return Key{}, apierr.Invalid("owner", "a service account's key has no owner")
	case k.Kind == KindService:
	case k.Kind != KindUser && k.Kind != KindSession:
		return Key{}, apierr.Invalid("kind", fmt.Sprintf("unknown kind of key %q", k.Kind))
	case k.OwnerUserID == "":
		return Key{}, apierr.Invalid("owner", "a user's key needs its owner")
	default:
		// A user's key holds at most what its owner may do in its team.
		o, err := s.ownerOf(ctx, k.OwnerUserID, k.TeamID)
		if err != nil {
			return Key{}, err
		}
		k.Owner = &o
		for _, sc := range scopes {
			if !HasScope(k, sc) {
				return Key{}, apierr.Invalid("scopes", fmt.Sprintf("scope %q is beyond what the key's owner may do in team %s (role %q)", sc, k.TeamID, o.Role))
			}
		}
	}
	return k, nil
}

// ownerOf returns a user's standing in team teamID, as a key's Owner.
// Errors: a 400 naming "owner" for an unknown or deactivated user, or
// one who is neither a member of the team nor an instance administrator.
func (s *Service) ownerOf(ctx context.Context, userID, teamID string) (Owner, error) {
	u, err := s.users().GetUser(ctx, userID)
	if errors.Is(err, ErrNotFound) || (err == nil && !u.Active) {
		return Owner{}, apierr.Invalid("owner", fmt.Sprintf("no active user %q", userID))
	}
	if err != nil {
		return Owner{}, err
	}
	o := Owner{UserID: u.ID, Active: u.Active, InstanceAdmin: u.InstanceAdmin}
	ms, err := s.users().ListMemberships(ctx, userID, "")
	if err != nil {
		return Owner{}, err
	}
	for _, m := range ms {
		if m.TeamID == teamID {
			o.Role = m.Role
		}
	}
	if o.Role == "" && !o.InstanceAdmin {
		return Owner{}, apierr.Invalid("owner", fmt.Sprintf("user %s is not a member of team %s", userID, teamID))
	}
	return o, nil
}

// GetKey returns the key with id. Errors: ErrNotFound or a store error.
func (s *Service) GetKey(ctx context.Context, id string) (Key, error) {
	k, err := s.Store.GetKey(ctx, id)
	return k, worded(err, ErrNotFound, "no API key %q", id)
}

// ListKeys returns the keys of team teamID, or of every team when teamID
// is "", oldest first. Revoked and expired keys are included. Errors: a
// store error.
func (s *Service) ListKeys(ctx context.Context, teamID string) ([]Key, error) {
	return s.Store.ListKeys(ctx, teamID)
}

// Authenticate returns the key whose secret is secret.
//
// Errors: ErrMissingKey for an empty secret; ErrInvalidKey for a
// malformed or unknown one; ErrRevokedKey; ErrExpiredKey (past its expiry
// or its rotation grace period); or a store error (a failure, not a
// verdict: never a 401; a 503 database_unavailable when the store cannot
// be reached). With ErrRevokedKey and ErrExpiredKey the matched key is
// returned too, for logging only.
//
// While the store is unavailable, a key read from it within OutageGrace
// is checked as it was then read (revoked, expired: still refused; its
// expiry against the clock) and its last use is not written.
//
// The key is looked up by the SHA-256 of the secret and the hashes are
// then compared with crypto/subtle.ConstantTimeCompare; the lookup's own
// timing depends only on the hash, which an attacker cannot steer toward
// a stored one. On success LastUsedAt is brought up to date at most once
// per LastUsedInterval per key; a failed update is logged, not returned.
func (s *Service) Authenticate(ctx context.Context, secret string) (Key, error) {
	if secret == "" {
		return Key{}, ErrMissingKey
	}
	if !wellFormed(secret, 1) {
		return Key{}, ErrInvalidKey
	}
	h := HashSecret(secret)
	now := s.now()
	k, stale, err := s.lookup(ctx, h, now)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return Key{}, ErrInvalidKey
		}
		return Key{}, fmt.Errorf("authenticate: %w", err)
	}
	if subtle.ConstantTimeCompare(k.Hash, h) != 1 {
		return Key{}, ErrInvalidKey
	}
	if k.RevokedAt != nil {
		return k, ErrRevokedKey
	}
	if k.expired(now) {
		return k, ErrExpiredKey
	}
	if !k.ownerStands() {
		return k, ErrOwnerGone
	}
	if !stale {
		s.touch(ctx, &k, now)
	}
	return k, nil
}

// touch records that k was used at now, unless that was already recorded
// less than LastUsedInterval ago (in the store or by this process).
func (s *Service) touch(ctx context.Context, k *Key, now time.Time) {
	if k.LastUsedAt != nil && now.Sub(*k.LastUsedAt) < LastUsedInterval {
		return
	}
	s.mu.Lock()
	if last, ok := s.touched[k.ID]; ok && now.Sub(last) < LastUsedInterval {
		s.mu.Unlock()
		return
	}
	if s.touched == nil {
		s.touched = make(map[string]time.Time)
	}
	if len(s.touched) >= 4096 {
		for id, t := range s.touched {
			if now.Sub(t) >= LastUsedInterval {
				delete(s.touched, id)
			}
		}
	}
	s.touched[k.ID] = now
	s.mu.Unlock()

	// The write belongs to the key, not to the request: finish it even if
	// the client has gone, but never hold a request for long.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.Store.UpdateKey(wctx, k.ID, KeyUpdate{LastUsedAt: &now}); err != nil {
		// Let the next request try again, unless the database is down:
		// then the next try is a LastUsedInterval away, not one per
		// request.
		if apierr.CodeOf(err) != apierr.DatabaseUnavailable {
			s.mu.Lock()
			if s.touched[k.ID].Equal(now) {
				delete(s.touched, k.ID)
			}
			s.mu.Unlock()
		}
		s.logger().Warn("auth: recording key last use", "key_id", k.ID, "err", err)
		return
	}
	k.LastUsedAt = &now
}

// Revoke revokes key id at once and returns its updated record. Revoking
// a revoked key changes nothing. Errors: ErrNotFound or a store error.
func (s *Service) Revoke(ctx context.Context, id string) (Key, error) {
	k, err := s.GetKey(ctx, id)
	if err != nil {
		return Key{}, err
	}
	if k.RevokedAt != nil {
		return k, nil
	}
	now := s.now()
	if err := s.Store.UpdateKey(ctx, id, KeyUpdate{RevokedAt: &now}); err != nil {
		return Key{}, worded(fmt.Errorf("revoke key %s: %w", id, err), ErrNotFound, "no API key %q", id)
	}
	s.forget()
	k.RevokedAt = &now
	return k, nil
}

// Rotate replaces key id with a new key of the same name, team, scopes and
// expiry, and returns the new key and its secret (shown once). The old key
// keeps working for grace, then counts as expired (ErrExpiredKey); its
// RotatedTo names the new key. A zero grace means DefaultRotationGrace; a
// negative one ends the old key at once. The grace never extends an
// earlier expiry.
//
// Errors: ErrNotFound; a 409 wrapping ErrRevokedKey or ErrExpiredKey when
// the old key no longer works (a conflict with the key's state, not a
// failed authentication: the caller's own key is fine); ErrAlreadyRotated
// when it already has a successor; or a store error.
func (s *Service) Rotate(ctx context.Context, id string, grace time.Duration) (Key, string, error) {
	old, err := s.GetKey(ctx, id)
	if err != nil {
		return Key{}, "", err
	}
	now := s.now()
	switch {
	case old.RevokedAt != nil:
		// Rotating gives a working key its successor; a revoked one has
		// none to give.
		return Key{}, "", &apierr.Error{Code: apierr.Conflict, Err: ErrRevokedKey,
			Message: fmt.Sprintf("API key %q has been revoked and cannot be rotated; create a new key", id)}
	case old.expired(now):
		return Key{}, "", &apierr.Error{Code: apierr.Conflict, Err: ErrExpiredKey,
			Message: fmt.Sprintf("API key %q has expired and cannot be rotated; create a new key", id)}
	case old.RotatedTo != "":
		// The successor is named in the cause (for logs and the CLI's
		// caller), not to the client.
		return Key{}, "", &apierr.Error{Code: ErrAlreadyRotated.Code, Err: fmt.Errorf("%w to %s", ErrAlreadyRotated, old.RotatedTo),
			Message: fmt.Sprintf("API key %q has already been rotated", id)}
	}
	if grace == 0 {
		grace = DefaultRotationGrace
	} else if grace < 0 {
		grace = 0
	}
	end := now.Add(grace)
	if old.ExpiresAt != nil && old.ExpiresAt.Before(end) {
		end = *old.ExpiresAt
	}

	secret := NewSecret()
	nk := Key{
		ID:        newKeyID(),
		Name:      old.Name,
		Prefix:    DisplayPrefix(secret),
		Hash:      HashSecret(secret),
		TeamID:    old.TeamID,
		Scopes:    append([]Scope(nil), old.Scopes...),
		CreatedAt: now,
		ExpiresAt: old.ExpiresAt,
		// The successor is the same kind of key, with the same owner.
		Kind:        old.Kind,
		OwnerUserID: old.OwnerUserID,
		Owner:       old.Owner,
	}
	if err := s.Store.CreateKey(ctx, nk); err != nil {
		return Key{}, "", fmt.Errorf("rotate key %s: %w", id, err)
	}
	if err := s.Store.UpdateKey(ctx, id, KeyUpdate{ExpiresAt: &end, RotatedTo: &nk.ID}); err != nil {
		// Nobody has seen the new secret: retire the orphan.
		if rerr := s.Store.UpdateKey(context.WithoutCancel(ctx), nk.ID, KeyUpdate{RevokedAt: &now}); rerr != nil {
			s.logger().Error("auth: revoking orphaned key after failed rotation", "key_id", nk.ID, "err", rerr)
		}
		return Key{}, "", worded(fmt.Errorf("rotate key %s: %w", id, err), ErrNotFound, "no API key %q", id)
	}
	s.forget()
	return nk, secret, nil
}

// Bootstrap makes sure a fresh installation can be administered. When the
// store holds no key at all it creates (or reuses) team BootstrapTeam and
// an admin key, and returns the key's secret with created true: the
// caller prints it once. The secret is envKey (SOVEREIGN_BOOTSTRAP_KEY)
// when that is set, else a generated one. When any key exists, Bootstrap
// does nothing and returns "", false.
//
// Errors: a non-empty envKey that does not look like a Sovereign key
// (SecretPrefix and at least MinSecretBody characters of [A-Za-z0-9_-])
// is refused whether or not keys exist, so a typo is caught at start; or
// a store error. When another server replica bootstraps the same envKey
// at the same moment, the loser returns "", false, nil.
func (s *Service) Bootstrap(ctx context.Context, envKey string) (secret string, created bool, err error) {
	if envKey != "" {
		if err := ValidateImportedSecret(envKey); err != nil {
			return "", false, fmt.Errorf("SOVEREIGN_BOOTSTRAP_KEY: %w", err)
		}
	}
	n, err := s.Store.CountKeys(ctx)
	if err != nil {
		return "", false, fmt.Errorf("bootstrap: %w", err)
	}
	if n > 0 {
		return "", false, nil
	}
	team, err := s.Store.GetTeamByName(ctx, BootstrapTeam)
	if errors.Is(err, ErrNotFound) {
		team, err = s.CreateTeam(ctx, BootstrapTeam)
		if errors.Is(err, ErrConflict) { // created meanwhile by another replica
			team, err = s.Store.GetTeamByName(ctx, BootstrapTeam)
		}
	}
	if err != nil {
		return "", false, fmt.Errorf("bootstrap: %w", err)
	}
	secret = envKey
	if secret == "" {
		secret = NewSecret()
	}
	k := Key{
		ID:        newKeyID(),
		Name:      BootstrapKeyName,
		Prefix:    DisplayPrefix(secret),
		Hash:      HashSecret(secret),
		TeamID:    team.ID,
		Scopes:    []Scope{ScopeAdmin},
		CreatedAt: s.now(),
	}
	if err := s.Store.CreateKey(ctx, k); err != nil {
		if envKey != "" && errors.Is(err, ErrConflict) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("bootstrap: %w", err)
	}
	return secret, true, nil
}
