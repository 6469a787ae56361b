package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Team owns keys. Every key belongs to exactly one team; a key without
// ScopeAdmin sees only its own team's resources.
type Team struct {
	ID        string    // "team_" + 22 base62 characters
	Name      string    // unique, 1–100 characters
	CreatedAt time.Time // UTC
	// Capture says the team's requests keep their prompt and output text
	// in the request log (off by default; docs/records.md).
	Capture bool
}

// Key is an API key's stored record. The secret itself is never stored:
// only its SHA-256 (Hash) and its first PrefixLen characters (Prefix, for
// people to recognise a key in lists and logs).
type Key struct {
	ID         string     // "key_" + 22 base62 characters
	Name       string     // free text chosen by the creator
	Prefix     string     // first PrefixLen characters of the secret, e.g. "sk-sov-AbCdE"
	Hash       []byte     // SHA-256 of the whole secret (32 bytes)
	TeamID     string     // owning team
	Scopes     []Scope    // what the key may do
	CreatedAt  time.Time  // UTC
	ExpiresAt  *time.Time // nil: never; the key is refused from this instant on
	LastUsedAt *time.Time // nil: never used; updated at most once per LastUsedInterval
	RevokedAt  *time.Time // nil: not revoked
	RotatedTo  string     // ID of the key that replaced this one by Rotate; "" if none
	// Kind is KindService (the team's, made by an administrator: it
	// outlives any person), KindUser (a person's own key) or KindSession
	// (made for a console sign-in, never shown, ending with it).
	Kind string
	// OwnerUserID is the user who owns a KindUser or KindSession key.
	OwnerUserID string
	// Owner is the owner's standing when the key was read (nil for a
	// service key): the key acts with at most the owner's role in its
	// team, and not at all once the owner is deactivated or leaves the
	// team.
	Owner *Owner
}

// The kinds of key.
const (
	KindService = "service"
	KindUser    = "user"
	KindSession = "session"
)

// Active reports whether k would authenticate at instant now: not revoked,
// not expired, and (for a key a user owns) its owner active and still a
// member of the key's team (or an instance administrator).
func (k Key) Active(now time.Time) bool {
	return k.RevokedAt == nil && !k.expired(now) && k.ownerStands()
}

// ownerStands reports whether a user's key may act: its owner is active
// and holds a role in the key's team or is an instance administrator.
func (k Key) ownerStands() bool {
	if k.OwnerUserID == "" {
		return true
	}
	o := k.Owner
	return o != nil && o.Active && (o.Role != "" || o.InstanceAdmin)
}

func (k Key) expired(now time.Time) bool {
	return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)
}

// KeyUpdate changes some mutable fields of a stored key; nil fields are
// left as they are. Updates never clear a field: a revoked key stays
// revoked. Partial updates keep concurrent writers (a last-used touch and a
// revocation) from overwriting each other.
type KeyUpdate struct {
	RevokedAt  *time.Time
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	RotatedTo  *string
}

// Secret format.
const (
	// SecretPrefix starts every key secret.
	SecretPrefix = "sk-sov-"
	// PrefixLen is how many leading characters of a secret are kept in
	// Key.Prefix for display.
	PrefixLen = 12
	// MinSecretBody is the least number of characters after SecretPrefix
	// an imported secret (SOVEREIGN_BOOTSTRAP_KEY) must have.
	MinSecretBody = 32
	// MaxSecretLen bounds a presented secret; longer ones are refused
	// before hashing.
	MaxSecretLen = 256
	// secretBodyLen is the length of a generated body: 32 random bytes in
	// base62 need ceil(256 / log2(62)) = 43 characters.
	secretBodyLen = 43
)

// Errors Authenticate and the other Service methods return; check them
// with errors.Is. They are API errors (package apierr), so a handler
// returns them as they are: the authentication errors carry the 401
// answers clients have always been given, and the service words its
// not-found and conflict errors (apierr.Wrapf) with what was asked for.
var (
	// ErrMissingKey: no key was presented (HTTP 401 missing_api_key).
	ErrMissingKey = apierr.New(apierr.MissingAPIKey, "You didn't provide an API key. Send it in the Authorization header as 'Bearer sk-sov-…'.")
	// ErrInvalidKey: the key is malformed or unknown (HTTP 401 invalid_api_key).
	ErrInvalidKey = apierr.New(apierr.InvalidAPIKey, "Incorrect API key provided.")
	// ErrRevokedKey: the key was revoked (HTTP 401 invalid_api_key).
	ErrRevokedKey = apierr.New(apierr.InvalidAPIKey, "This API key has been revoked.")
	// ErrExpiredKey: the key's expiry, or its rotation grace period, has
	// passed (HTTP 401 invalid_api_key).
	ErrExpiredKey = apierr.New(apierr.InvalidAPIKey, "This API key has expired.")
	// ErrOwnerGone: the key's owner is deactivated or no longer a member
	// of the key's team (HTTP 401 invalid_api_key).
	ErrOwnerGone = apierr.New(apierr.InvalidAPIKey, "This API key's owner is deactivated or no longer a member of its team.")
	// ErrAlreadyRotated: Rotate was asked for a key that already has a
	// successor; rotate the successor instead (HTTP 409).
	ErrAlreadyRotated = apierr.New(apierr.Conflict, "API key was already rotated")
	// ErrNotFound: the team or key does not exist (HTTP 404). Stores return
	// it (wrapped or not) for every lookup, update or delete that matches no
	// row; it is store.ErrNotFound, every domain's.
	ErrNotFound = apierr.New(apierr.NotFound, "not found")
	// ErrConflict: a uniqueness rule was broken (team name, key id or hash
	// already stored), or a team still owns keys and cannot be deleted
	// (HTTP 409). It is store.ErrConflict, which the stores report for
	// every unique violation.
	ErrConflict = apierr.New(apierr.Conflict, "conflict")
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randBase62 returns n base62 characters drawn uniformly from crypto/rand.
func randBase62(n int) string {
	b := make([]byte, n)
	buf := make([]byte, n+n/2)
	i := 0
	for i < n {
		if _, err := rand.Read(buf); err != nil {
			panic("auth: crypto/rand failed: " + err.Error()) // never happens on supported platforms
		}
		for _, c := range buf {
			// Reject bytes >= 248 (= 4*62) so every character is equally likely.
			if c >= 248 {
				continue
			}
			b[i] = base62[c%62]
			i++
			if i == n {
				break
			}
		}
	}
	return string(b)
}

// NewSecret returns a fresh key secret: SecretPrefix followed by 32 bytes
// from crypto/rand written as 43 base62 characters (256 bits of entropy;
// base62 so that a double click selects the whole key).
func NewSecret() string {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic("auth: crypto/rand failed: " + err.Error())
	}
	n := new(big.Int).SetBytes(raw[:])
	body := make([]byte, secretBodyLen)
	base := big.NewInt(62)
	mod := new(big.Int)
	for i := secretBodyLen - 1; i >= 0; i-- {
		n.DivMod(n, base, mod)
		body[i] = base62[mod.Int64()]
	}
	return SecretPrefix + string(body)
}

// HashSecret returns the SHA-256 of secret, the only form a secret is
// stored in. A fast hash is right here (GitHub and Stripe do the same):
// a key has 256 random bits, so no dictionary or brute-force attack on a
// leaked hash can succeed, and slow password hashes (bcrypt, argon2) would
// cost tens of milliseconds on every request and make lookup by hash
// impossible (they are salted).
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// DisplayPrefix returns the first PrefixLen characters of secret.
func DisplayPrefix(secret string) string {
	if len(secret) <= PrefixLen {
		return secret
	}
	return secret[:PrefixLen]
}

// wellFormed reports whether secret has the shape of a Sovereign key:
// SecretPrefix, then at least minBody characters of [A-Za-z0-9_-], at most
// MaxSecretLen in all.
func wellFormed(secret string, minBody int) bool {
	if len(secret) > MaxSecretLen || !strings.HasPrefix(secret, SecretPrefix) {
		return false
	}
	body := secret[len(SecretPrefix):]
	if len(body) < minBody {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ValidateImportedSecret checks a secret supplied from outside (the
// SOVEREIGN_BOOTSTRAP_KEY variable): it must start with SecretPrefix and
// carry at least MinSecretBody characters of [A-Za-z0-9_-] after it. The
// error says what is wrong without echoing the secret.
func ValidateImportedSecret(secret string) error {
	switch {
	case !strings.HasPrefix(secret, SecretPrefix):
		return fmt.Errorf("key must start with %q", SecretPrefix)
	case len(secret)-len(SecretPrefix) < MinSecretBody:
		return fmt.Errorf("key must have at least %d characters after %q (has %d); for example sk-sov-$(openssl rand -hex 24)",
			MinSecretBody, SecretPrefix, len(secret)-len(SecretPrefix))
	case len(secret) > MaxSecretLen:
		return fmt.Errorf("key must be at most %d characters long", MaxSecretLen)
	case !wellFormed(secret, MinSecretBody):
		return fmt.Errorf("key may contain only letters, digits, '-' and '_' after %q", SecretPrefix)
	}
	return nil
}

func newTeamID() string { return "team_" + randBase62(22) }
func newKeyID() string  { return "key_" + randBase62(22) }
