package generate

import (
	"context"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/limits"
)

// gate is a RecordGate whose answer the test sets.
type gate struct{ err error }

func (g *gate) Accepting() error { return g.err }

// TestAdmitRefusesWhileRecordsCannotBeKept: while the request log's gate
// refuses (its spool full, failing closed), a call is refused before any
// work — no policy decision, no limit charged — with the gate's 503 and
// Retry-After; once it accepts, calls are admitted again.
func TestAdmitRefusesWhileRecordsCannotBeKept(t *testing.T) {
	s, ps, _ := service(mustSet(t, redactEmails), func(inference.CompletionRequest) inference.Stream { return chunks("ok", 1) })
	ctx := context.Background()
	lim, err := limits.New(ctx, limits.Config{Backend: limits.NewMemory(nil), Rules: []limits.Rule{{Scope: "key", Subject: "key_t", RequestsPerMinute: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	g := &gate{err: &apierr.Error{Code: apierr.RequestLogUnavailable, Message: "no log", RetryAfter: 5e9}}
	s.Limits, s.RecordGate = lim, g
	c := keyedCall()
	m, err := s.Resolve(ctx, c, "m", "chat")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Admit(ctx, c, m, Gate{Text: "hi", Output: true})
	if e := apierr.From(err); e.Code != apierr.RequestLogUnavailable || e.Status() != 503 || e.RetryAfter == 0 {
		t.Fatalf("Admit = %v, want the gate's refusal", err)
	}
	if n := len(ps.got); n != 0 {
		t.Fatalf("%d policy decisions recorded for a refused call", n)
	}
	g.err = nil
	c2 := keyedCall()
	if _, st, err := s.Admit(ctx, c2, m, Gate{Text: "hi", Output: true}); err != nil || st.Requests == nil || st.Requests.Remaining != 0 {
		t.Fatalf("Admit after the gate opened = %v (%+v), want the minute's one request", err, st.Requests)
	}
	s.Finish(ctx, c2, nil)
}
