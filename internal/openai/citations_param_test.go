package openai

import (
	"errors"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
)

// TestCitationsParam: citations is true, false or {"abstain": bool};
// anything else is a 400 naming the field.
func TestCitationsParam(t *testing.T) {
	for _, c := range []struct {
		body            string
		cite, noAbstain bool
	}{
		{`{"citations": true}`, true, false},
		{`{"citations": false}`, false, false},
		{`{}`, false, false},
		{`{"citations": {}}`, true, false},
		{`{"citations": {"abstain": true}}`, true, false},
		{`{"citations": {"abstain": false}}`, true, true},
	} {
		var r CompletionRequest
		if err := Decode(strings.NewReader(c.body), &r); err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		if r.Citations.Cite() != c.cite || r.Citations.NoAbstain() != c.noAbstain {
			t.Fatalf("%s: cite %v, no abstain %v", c.body, r.Citations.Cite(), r.Citations.NoAbstain())
		}
	}
	for _, body := range []string{`{"citations": "yes"}`, `{"citations": {"abstain": "no"}}`, `{"citations": {"cite": true}}`, `{"citations": [1]}`} {
		var r ResponsesRequest
		err := Decode(strings.NewReader(body), &r)
		var e *apierr.Error
		if !errors.As(err, &e) || e.Param != "citations" {
			t.Fatalf("%s: %v, want a 400 naming citations", body, err)
		}
	}
}
