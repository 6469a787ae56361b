package apierr

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTableIsComplete: every code has a status and an OpenAI type, the
// statuses are the brief's, and an unknown code is a 500 server_error.
func TestTableIsComplete(t *testing.T) {
	want := map[Code]int{InvalidRequest: 400, InvalidJSON: 400, MissingAPIKey: 401, InvalidAPIKey: 401, PermissionDenied: 403,
		ModelNotAllowed: 403, NotFound: 404, ModelNotFound: 404, UnsupportedAPIVersion: 404, MethodNotAllowed: 405, Conflict: 409,
		BodyTooLarge: 413, RateLimitExceeded: 429, QuotaExceeded: 429, ModelOverloaded: 503, ModelLoading: 503, ModelFailed: 503,
		ModelCrashed: 502, RequestCancelled: 499, Internal: 500, ModelRetired: 410, PolicyViolation: 403, LimitsUnavailable: 503, DatabaseUnavailable: 503, RequestLogUnavailable: 503,
		UpstreamError: 502, UpstreamUnavailable: 503, UpstreamTimeout: 504, IdempotencyKeyInUse: 409, IdempotencyKeyReused: 422}
	if len(want) != len(table) {
		t.Fatalf("%d codes in the table, %d here: a code was added without a test", len(table), len(want))
	}
	for code, status := range want {
		e := New(code, "m")
		if e.Status() != status || table[code].typ == "" {
			t.Errorf("%s: status %d type %q, want %d", code, e.Status(), table[code].typ, status)
		}
	}
	if e := New("no_such_code", "m"); e.Status() != 500 || e.Envelope().Error.Type != "server_error" {
		t.Errorf("unknown code: %d %+v", e.Status(), e.Envelope())
	}
}

// TestWriteRendersTheEnvelope: the OpenAI envelope (param null when
// empty), the status, Retry-After rounded up, and x-should-retry where a
// retry cannot help; FromBody reads it back.
func TestWriteRendersTheEnvelope(t *testing.T) {
	w := httptest.NewRecorder()
	Write(w, &Error{Code: RateLimitExceeded, Message: "slow down", RetryAfter: 1500 * time.Millisecond})
	var env struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || w.Code != 429 || w.Header().Get("Retry-After") != "2" ||
		env.Error["type"] != "rate_limit_error" || env.Error["code"] != "rate_limit_exceeded" || env.Error["param"] != nil ||
		w.Header().Get("Content-Type") != "application/json" || w.Header().Get("x-should-retry") != "" {
		t.Fatalf("%d %v %s", w.Code, w.Header(), w.Body)
	}
	for code, retry := range map[Code]string{Conflict: "false", QuotaExceeded: "false", IdempotencyKeyInUse: "true", RateLimitExceeded: "false"} {
		w := httptest.NewRecorder()
		Write(w, New(code, "m"))
		if w.Header().Get("x-should-retry") != retry {
			t.Errorf("%s: x-should-retry %q, want %q", code, w.Header().Get("x-should-retry"), retry)
		}
	}
	w = httptest.NewRecorder()
	Write(w, &Error{Code: PolicyViolation, Message: "no", Param: "messages", Policy: "pii", Rule: "ssn"})
	back := FromBody(w.Code, w.Body.Bytes())
	if back.Code != PolicyViolation || back.Param != "messages" || back.Policy != "pii" || back.Rule != "ssn" || back.Message != "no" {
		t.Fatalf("read back: %+v", back)
	}
	if e := FromBody(502, []byte("<html>bad gateway</html>")); e.Code != Internal || !strings.Contains(e.Message, "502") {
		t.Fatalf("not an envelope: %+v", e)
	}
}

func TestRetryableByStatusAndCode(t *testing.T) {
	for code, want := range map[Code]bool{
		InvalidRequest: false, ModelNotFound: false, PermissionDenied: false, InvalidAPIKey: false, PolicyViolation: false,
		RateLimitExceeded: true, QuotaExceeded: true, Conflict: true, ModelOverloaded: true, ModelLoading: true,
		ModelCrashed: true, Internal: true, LimitsUnavailable: true, RequestCancelled: true,
	} {
		if got := New(code, "x").Retryable(); got != want {
			t.Errorf("%s (%d): retryable %v, want %v", code, New(code, "x").Status(), got, want)
		}
	}
	if !From(context.Canceled).Retryable() || From(Invalid("x", "y")).Retryable() {
		t.Error("a cancelled call must be retryable, an invalid one not")
	}
}
