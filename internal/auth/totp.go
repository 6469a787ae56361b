package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// Two-step sign-in with a one-time code from an authenticator app (TOTP,
// RFC 6238: HMAC-SHA1, 30-second steps, 6 digits — what every app
// reads from an otpauth:// URI). A user turns it on for themselves; a
// password sign-in then asks for a code before the session starts.

const (
	totpStep   = 30 * time.Second
	totpDigits = 6
	// totpSkew accepts the step before and after the current one (clocks
	// drift, people type slowly).
	totpSkew = 1
	// ChallengeLife is how long a password sign-in waits for its code;
	// ChallengeAttempts how many codes it takes.
	ChallengeLife     = 5 * time.Minute
	ChallengeAttempts = 5
)

// ChallengeStore keeps password sign-ins waiting for their code
// (internal/sqlstore).
type ChallengeStore interface {
	CreateSigninChallenge(ctx context.Context, idHash []byte, userID string, expires time.Time) error
	// TakeSigninChallenge counts an attempt at challenge idHash and
	// returns its user, expiry and attempts so far (ErrNotFound).
	TakeSigninChallenge(ctx context.Context, idHash []byte) (userID string, expires time.Time, attempts int, err error)
	DeleteSigninChallenge(ctx context.Context, idHash []byte) error
	// UseTOTPStep records that user id used the code of step, if no later
	// or equal step was used before (a code works once); it reports
	// whether it did.
	UseTOTPStep(ctx context.Context, id string, step int64) (bool, error)
}

func (s *Service) challenges() ChallengeStore {
	cs, ok := s.Store.(ChallengeStore)
	if !ok {
		panic("auth: the key store keeps no sign-in challenges")
	}
	return cs
}

// ErrCode is the answer to a wrong, reused or late code.
var ErrCode = apierr.New(apierr.InvalidAPIKey, "That code is not right, or was used already; type the current code from your authenticator app.")

// totpCode is the code of step for secret.
func totpCode(secret []byte, step int64) string {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(step))
	m := hmac.New(sha1.New, secret)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	v := binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff
	return fmt.Sprintf("%0*d", totpDigits, v%1_000_000)
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// totpMatch returns the step within the skew whose code is code (-1: none).
func totpMatch(secret, code string, now time.Time) int64 {
	key, err := b32.DecodeString(strings.ToUpper(secret))
	code = strings.ReplaceAll(strings.TrimSpace(code), " ", "")
	if err != nil || len(code) != totpDigits {
		return -1
	}
	cur := now.Unix() / int64(totpStep/time.Second)
	for d := int64(-totpSkew); d <= totpSkew; d++ {
		if subtle.ConstantTimeCompare([]byte(totpCode(key, cur+d)), []byte(code)) == 1 {
			return cur + d
		}
	}
	return -1
}

// StartTOTP makes a new secret for user id, pending until ConfirmTOTP, and
// returns it with the otpauth:// URI an authenticator app reads.
func (s *Service) StartTOTP(ctx context.Context, id string) (secret, uri string, err error) {
	u, err := s.GetUser(ctx, id)
	if err != nil {
		return "", "", err
	}
	raw := make([]byte, 20)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	secret = b32.EncodeToString(raw)
	if err := s.users().UpdateUser(ctx, id, UserUpdate{TOTPPending: &secret}); err != nil {
		return "", "", err
	}
	v := url.Values{"secret": {secret}, "issuer": {"Sovereign"}, "algorithm": {"SHA1"}, "digits": {"6"}, "period": {"30"}}
	return secret, "otpauth://totp/" + url.PathEscape("Sovereign:"+u.Email) + "?" + v.Encode(), nil
}

// ConfirmTOTP turns two-step sign-in on with the pending secret, once the
// user shows a code from it. Errors: ErrCode.
func (s *Service) ConfirmTOTP(ctx context.Context, id, code string) error {
	u, err := s.GetUser(ctx, id)
	if err != nil {
		return err
	}
	step := totpMatch(u.TOTPPending, code, s.now())
	if u.TOTPPending == "" || step < 0 {
		return ErrCode
	}
	secret, none := u.TOTPPending, ""
	if err := s.users().UpdateUser(ctx, id, UserUpdate{TOTPSecret: &secret, TOTPPending: &none, TOTPLastStep: &step}); err != nil {
		return err
	}
	return nil
}

// DisableTOTP turns two-step sign-in off (an administrator's reset, or the
// user with a current code: the console checks it first).
func (s *Service) DisableTOTP(ctx context.Context, id string) error {
	none := ""
	var zero int64
	return worded(s.users().UpdateUser(ctx, id, UserUpdate{TOTPSecret: &none, TOTPPending: &none, TOTPLastStep: &zero}), ErrNotFound, "no user %q", id)
}

// CheckTOTP checks a current code of user u's (each code works once).
func (s *Service) CheckTOTP(ctx context.Context, u User, code string) error {
	step := totpMatch(u.TOTPSecret, code, s.now())
	if u.TOTPSecret == "" || step < 0 {
		return ErrCode
	}
	ok, err := s.challenges().UseTOTPStep(ctx, u.ID, step)
	if err != nil {
		return err
	}
	if !ok {
		return ErrCode
	}
	return nil
}

// BeginSecondStep holds a password sign-in of user u until its code comes:
// the returned token goes in the browser's cookie.
func (s *Service) BeginSecondStep(ctx context.Context, u User) (string, error) {
	token := "sic-" + randBase62(43)
	h := sha256.Sum256([]byte(token))
	return token, s.challenges().CreateSigninChallenge(ctx, h[:], u.ID, s.now().Add(ChallengeLife))
}

// FinishSecondStep completes a password sign-in with its code. Errors:
// ErrSignIn (no such sign-in, expired, too many attempts, deactivated
// meanwhile), ErrCode (a wrong code: try again).
func (s *Service) FinishSecondStep(ctx context.Context, token, code string) (User, error) {
	h := sha256.Sum256([]byte(token))
	userID, expires, attempts, err := s.challenges().TakeSigninChallenge(ctx, h[:])
	if errors.Is(err, ErrNotFound) {
		return User{}, ErrSignIn
	}
	if err != nil {
		return User{}, err
	}
	if !s.now().Before(expires) || attempts > ChallengeAttempts {
		_ = s.challenges().DeleteSigninChallenge(ctx, h[:])
		return User{}, ErrSignIn
	}
	u, err := s.GetUser(ctx, userID)
	if err != nil || !u.Active {
		return User{}, ErrSignIn
	}
	if err := s.CheckTOTP(ctx, u, code); err != nil {
		return User{}, err
	}
	if err := s.challenges().DeleteSigninChallenge(ctx, h[:]); err != nil {
		return User{}, err
	}
	return u, nil
}
