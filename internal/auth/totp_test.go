package auth

import (
	"testing"
	"time"
)

// TestTOTPVectors: RFC 6238's SHA-1 test vectors (appendix B), read as
// 6 digits, and the skew of one step either way.
func TestTOTPVectors(t *testing.T) {
	key := []byte("12345678901234567890")
	for unix, want := range map[int64]string{59: "287082", 1111111109: "081804", 1111111111: "050471", 1234567890: "005924", 2000000000: "279037", 20000000000: "353130"} {
		if got := totpCode(key, unix/30); got != want {
			t.Errorf("T=%d: %s, want %s", unix, got, want)
		}
	}
	secret := b32.EncodeToString(key)
	at := time.Unix(1234567890, 0)
	for d, want := range map[time.Duration]bool{-29 * time.Second: true, -31 * time.Second: false, 0: true, 59 * time.Second: true, 61 * time.Second: false} {
		if got := totpMatch(secret, "005924", at.Add(d)) >= 0; got != want {
			t.Errorf("the code %v later: matched %v, want %v", d, got, want)
		}
	}
	if totpMatch(secret, "00592", at) >= 0 || totpMatch("not base32!", "005924", at) >= 0 {
		t.Error("a short code or a bad secret matched")
	}
}
