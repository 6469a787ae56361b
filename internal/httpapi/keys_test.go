package httpapi

import "testing"

// TestAuthMessages: the key service's refusals are the 401 answers
// themselves (the middleware no longer maps them), with the messages
// clients have always been given.
func TestAuthMessages(t *testing.T) {
	srv, _ := newTestServer(t)
	for _, c := range []struct{ key, code, message string }{
		{"", "missing_api_key", "You didn't provide an API key. Send it in the Authorization header as 'Bearer sk-sov-…'."},
		{"sk-sov-nope", "invalid_api_key", "Incorrect API key provided."},
		{"sk-sov-revoked", "invalid_api_key", "This API key has been revoked."},
		{"sk-sov-expired", "invalid_api_key", "This API key has expired."},
	} {
		resp, body := do(t, srv, "GET", "/v1/models", c.key, "")
		e, _ := body["error"].(map[string]any)
		if resp.StatusCode != 401 || errCode(body) != c.code || e["message"] != c.message {
			t.Errorf("key %q: %d %q %q, want 401 %q %q", c.key, resp.StatusCode, errCode(body), e["message"], c.code, c.message)
		}
	}
}
