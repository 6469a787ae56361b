package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Passwords are hashed with argon2id (RFC 9106), kept in the PHC string
// form that other tools read ("$argon2id$v=19$m=…,t=…,p=…$salt$hash"),
// so the parameters travel with each hash and can be raised later
// without invalidating the stored ones. The parameters are OWASP's
// second recommended set (19 MiB, 2 passes, 1 lane): about 30 ms of one
// core here, which bounds an online guesser far below the lock anyway.
const (
	argonMemory  = 19 * 1024 // KiB
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16

	minPassword = 12
	// maxPassword bounds the work a sign-in costs (argon2 hashes the whole
	// password).
	maxPassword = 256
)

// HashPassword checks a new password (12–256 characters, not only
// spaces) and returns its argon2id hash. Errors: a 400 naming param.
func HashPassword(param, password string) (string, error) {
	n := utf8.RuneCountInString(password)
	if n < minPassword || len(password) > maxPassword || strings.TrimSpace(password) == "" {
		return "", apierr.Invalid(param, fmt.Sprintf("a password must have %d to %d characters", minPassword, maxPassword))
	}
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	sum := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(sum)), nil
}

// VerifyPassword reports whether password matches hash (a PHC argon2id
// string; false for anything else).
func VerifyPassword(hash, password string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m == 0 || m > 1<<20 || t == 0 || t > 10 || p == 0 {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 || len(want) > 64 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// dummyHash is checked against when there is no real hash to check, so a
// failed sign-in takes as long whatever failed.
// It is made on first use: every process of the binary (runners, the
// CLI) would otherwise pay for it at start.
var dummyHash = sync.OnceValue(func() string {
	h, err := HashPassword("", "not a password anyone has")
	if err != nil {
		panic(err)
	}
	return h
})
