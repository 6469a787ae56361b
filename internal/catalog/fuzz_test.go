package catalog

import (
	"errors"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// FuzzSpecPatch applies arbitrary patches to a valid spec: decoding and
// patching must never panic, and failures are invalid-request errors (apierr.Invalid).
func FuzzSpecPatch(f *testing.F) {
	f.Add([]byte(`{"aliases":["fast"],"limits":{"max_output_tokens":5}}`))
	f.Add([]byte(`{"timeouts":{"idle":"1s","connect":3}}`))
	f.Add([]byte(`{"deprecation":{"sunset":"2027-01-01T00:00:00Z"}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"id":"other"}`))
	f.Fuzz(func(t *testing.T, patch []byte) {
		s := Spec{ID: "m", BaseURL: "http://h/v1", Aliases: []string{"a"}, Limits: &Limits{MaxInputTokens: 1}}
		if err := s.Patch(patch); err != nil {
			var se *apierr.Error
			if !errors.As(err, &se) || se.Code != apierr.InvalidRequest {
				t.Fatalf("patch %q: %T %v is not an invalid-request error", patch, err, err)
			}
			return
		}
		if s.ID != "m" {
			t.Fatalf("patch %q changed the id to %q", patch, s.ID)
		}
		_ = s.Normalize()
	})
}
