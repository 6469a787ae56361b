package generate

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/auth"
	"github.com/sovereign-ai/sovereign/internal/catalog"
	"github.com/sovereign-ai/sovereign/internal/inference"
	"github.com/sovereign-ai/sovereign/internal/limits"
	"github.com/sovereign-ai/sovereign/internal/policy"
	"github.com/sovereign-ai/sovereign/internal/policy/pii"
	"github.com/sovereign-ai/sovereign/internal/records"
)

// policies serves one set and keeps the decisions it is given.
type policies struct {
	set *policy.Set
	got []policy.Decision
}

func (p *policies) Set() *policy.Set            { return p.set }
func (p *policies) Record(ds []policy.Decision) { p.got = append(p.got, ds...) }

// models resolves every name to one route and keeps observations.
type models struct {
	m    catalog.Resolved
	seen []catalog.Observation
}

func (f *models) Resolve(_ context.Context, name string) (catalog.Resolved, error) {
	if name != f.m.ID {
		return catalog.Resolved{}, catalog.ErrNotFound
	}
	return f.m, nil
}
func (f *models) Record(_ string, o catalog.Observation) { f.seen = append(f.seen, o) }

// backend answers every completion with complete(req).
type backend struct {
	inference.Backend
	complete func(req inference.CompletionRequest) inference.Stream
}

func (b backend) Complete(_ context.Context, req inference.CompletionRequest) (inference.Stream, error) {
	return b.complete(req), nil
}

// chunks is text cut into events of size n, then the end with usage.
func chunks(text string, n int) inference.Stream {
	var evs []inference.Event
	for text != "" {
		k := min(n, len(text))
		for k < len(text) && !utf8.RuneStart(text[k]) {
			k++
		}
		evs = append(evs, inference.Event{Text: text[:k]})
		text = text[k:]
	}
	evs = append(evs, inference.Event{Done: true, FinishReason: inference.FinishStop, Usage: &inference.Usage{PromptTokens: 7, CompletionTokens: len(evs)}})
	return inference.StreamOf(evs...)
}

func mustSet(t testing.TB, rules ...policy.Rule) *policy.Set {
	t.Helper()
	set, err := policy.NewSet([]policy.Policy{{ID: "pol_t", Name: "t", Scope: policy.ScopeDeployment, Enabled: true, Rules: rules}})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

var redactEmails = policy.Rule{Name: "scrub", Stage: policy.StageOutput, When: "true", Action: policy.ActionRedact, Redact: []string{"email"}}

// service is a Service over one model whose answers are answer(req),
// with the given policies.
func service(set *policy.Set, answer func(req inference.CompletionRequest) inference.Stream) (*Service, *policies, *models) {
	ps := &policies{set: set}
	ms := &models{m: catalog.Resolved{ID: "m", Backend: "local", Capabilities: []string{"chat"}, Target: backend{complete: answer}}}
	return &Service{Models: ms, Policies: ps}, ps, ms
}

func keyedCall() *Call {
	c := &Call{ID: "req_t", Method: "POST", Route: "POST /v1/chat/completions", Path: "/v1/chat/completions", Start: time.Now()}
	c.SetKey(auth.Key{ID: "key_t", TeamID: "team_t", Scopes: []auth.Scope{auth.ScopeInference}})
	return c
}

// read drains a stream's text.
func read(t testing.TB, st inference.Stream) string {
	t.Helper()
	var b strings.Builder
	for {
		ev, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return b.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(ev.Text)
		if ev.Done {
			return b.String()
		}
	}
}

// generation admits and starts one governed call of n choices whose
// answers are text cut into events of size.
func generation(t testing.TB, set *policy.Set, text string, size, n int) (*Generation, *Call, *policies) {
	t.Helper()
	s, ps, _ := service(set, func(inference.CompletionRequest) inference.Stream { return chunks(text, size) })
	c := keyedCall()
	ctx := context.Background()
	m, err := s.Resolve(ctx, c, "m", "chat")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Admit(ctx, c, m, Gate{Text: "hi", Output: true}); err != nil {
		t.Fatal(err)
	}
	sts, err := s.Start(ctx, c, m, inference.CompletionRequest{Model: "m"}, n)
	if err != nil {
		t.Fatal(err)
	}
	return s.Output(c, sts), c, ps
}

func TestGenerationRedactsNativeEventsAcrossChunks(t *testing.T) {
	text := "Reach jane.doe@example.com or bob@corp.example.org today."
	set, _ := pii.New(nil)
	want := pii.Redact(text, set.Find(text, pii.Email))
	for _, size := range []int{1, 3, 7, 100} {
		g, _, _ := generation(t, mustSet(t, redactEmails), text, size, 2)
		for i, st := range g.Streams {
			if got := read(t, st); got != want {
				t.Fatalf("events of %d, choice %d: got %q, want %q", size, i, got, want)
			}
		}
		if err := g.End(); err != nil {
			t.Fatal(err)
		}
		g.Close()
	}
}

// FuzzGenerationRedaction: whatever the answer and however it is cut,
// the text passed on is the whole answer redacted — never a partial match.
func FuzzGenerationRedaction(f *testing.F) {
	f.Add("mail me at a@example.com please", uint8(3))
	f.Add("x@y.zz", uint8(1))
	f.Add("no pii here at all", uint8(50))
	pset, _ := pii.New(nil)
	set := mustSet(f, redactEmails)
	f.Fuzz(func(t *testing.T, text string, size uint8) {
		if !utf8.ValidString(text) {
			return
		}
		g, _, _ := generation(t, set, text, int(size%40)+1, 1)
		defer g.Close()
		if got, want := read(t, g.Streams[0]), pii.Redact(text, pset.Find(text, pii.Email)); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

func TestGenerationEndDeniesOnTheWholeAnswer(t *testing.T) {
	deny := policy.Rule{Name: "no-secrets", Stage: policy.StageOutput, When: `output.contains("TOP SECRET")`, Action: policy.ActionDeny, Reason: "no secrets"}
	// The phrase is split across events and only the whole answer has it.
	g, _, ps := generation(t, mustSet(t, deny), "this is TOP SECRET stuff", 2, 1)
	defer g.Close()
	read(t, g.Streams[0])
	err := g.End()
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Code != apierr.PolicyViolation || ae.Rule != "no-secrets" {
		t.Fatalf("End = %v, want a policy_violation naming the rule", err)
	}
	if len(ps.got) != 1 || ps.got[0].Action != policy.ActionDeny {
		t.Fatalf("decisions %+v, want the deny recorded", ps.got)
	}
	if err := g.End(); err != nil {
		t.Fatal("a second End evaluated again")
	}
	g2, _, _ := generation(t, mustSet(t, deny), "nothing to see", 2, 1)
	read(t, g2.Streams[0])
	if err := g2.End(); err != nil {
		t.Fatalf("an allowed answer: %v", err)
	}
}

// capture is a CaptureSet that keeps every team's texts.
type capture struct{}

func (capture) Enabled(string) bool { return true }

// logger keeps records.
type logger struct{ got []records.Record }

func (l *logger) Log(r records.Record) { l.got = append(l.got, r) }

func TestRecordKeepsThePromptAndTheAnswerAsSent(t *testing.T) {
	redactIn := policy.Rule{Name: "in", Stage: policy.StageInput, When: "true", Action: policy.ActionRedact, Redact: []string{"email"}}
	s, _, ms := service(mustSet(t, redactIn, redactEmails), func(inference.CompletionRequest) inference.Stream {
		return chunks("write to x@example.com", 4)
	})
	s.Capture = capture{}
	log := &logger{}
	s.Records = log
	c := keyedCall()
	ctx := context.Background()
	m, _ := s.Resolve(ctx, c, "m", "")
	redact, _, err := s.Admit(ctx, c, m, Gate{Text: "I am me@example.com", Output: true})
	if err != nil || redact == nil {
		t.Fatalf("Admit: %v, redact %v", err, redact != nil)
	}
	sts, _ := s.Start(ctx, c, m, inference.CompletionRequest{Model: "m"}, 1)
	g := s.Output(c, sts)
	read(t, g.Streams[0])
	if err := g.End(); err != nil {
		t.Fatal(err)
	}
	g.Close()
	s.Finish(ctx, c, nil)
	if len(log.got) != 1 {
		t.Fatalf("%d records, want 1", len(log.got))
	}
	r := log.got[0]
	if r.Prompt != "I am [REDACTED:email]" || r.Output != "write to [REDACTED:email]" {
		t.Fatalf("record keeps prompt %q and output %q", r.Prompt, r.Output)
	}
	if r.Status != 200 || r.Model != "m" || r.KeyID != "key_t" || r.TeamID != "team_t" || r.PromptTokens != 7 || r.TTFTMs == nil {
		t.Fatalf("record %+v", r)
	}
	if len(ms.seen) != 1 || ms.seen[0].Failed {
		t.Fatalf("model figures %+v, want one success", ms.seen)
	}
}

func TestInputDenyChargesNoLimit(t *testing.T) {
	deny := policy.Rule{Name: "no", Stage: policy.StageInput, When: `input.contains("forbidden")`, Action: policy.ActionDeny}
	s, _, _ := service(mustSet(t, deny), func(inference.CompletionRequest) inference.Stream { return chunks("ok", 1) })
	ctx := context.Background()
	lim, err := limits.New(ctx, limits.Config{Backend: limits.NewMemory(nil), Rules: []limits.Rule{{Scope: "key", Subject: "key_t", RequestsPerMinute: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	s.Limits = lim
	c := keyedCall()
	m, _ := s.Resolve(ctx, c, "m", "")
	if _, _, err := s.Admit(ctx, c, m, Gate{Text: "forbidden", Output: true}); apierr.From(err).Code != apierr.PolicyViolation {
		t.Fatalf("Admit = %v, want the deny", err)
	}
	// The one request a minute is still there.
	c2 := keyedCall()
	if _, st, err := s.Admit(ctx, c2, m, Gate{Text: "fine", Output: true}); err != nil || st.Requests == nil || st.Requests.Remaining != 0 {
		t.Fatalf("Admit = %v (%+v), want the minute's one request", err, st.Requests)
	}
	s.Finish(ctx, c2, nil)
	if _, _, err := s.Admit(ctx, keyedCall(), m, Gate{Text: "again", Output: true}); apierr.From(err).Code != apierr.RateLimitExceeded {
		t.Fatalf("Admit = %v, want the limit", err)
	}
}

// keys serves one key.
type keys struct{ k auth.Key }

func (f keys) GetKey(_ context.Context, id string) (auth.Key, error) {
	if id != f.k.ID {
		return auth.Key{}, auth.ErrInvalidKey
	}
	return f.k, nil
}

func TestInProcessCallsRunAsAnActiveKeyWithTheScope(t *testing.T) {
	ctx := context.Background()
	past := time.Now().Add(-time.Hour)
	for _, tc := range []struct {
		name string
		key  auth.Key
		code apierr.Code
	}{
		{"active", auth.Key{ID: "key_a", TeamID: "t", Scopes: []auth.Scope{auth.ScopeInference}}, ""},
		{"revoked", auth.Key{ID: "key_a", TeamID: "t", Scopes: []auth.Scope{auth.ScopeInference}, RevokedAt: &past}, apierr.InvalidAPIKey},
		{"expired", auth.Key{ID: "key_a", TeamID: "t", Scopes: []auth.Scope{auth.ScopeInference}, ExpiresAt: &past}, apierr.InvalidAPIKey},
		{"no scope", auth.Key{ID: "key_a", TeamID: "t", Scopes: []auth.Scope{auth.ScopeWebhooks}}, apierr.PermissionDenied},
	} {
		s := &Service{Keys: keys{tc.key}}
		c, err := s.As(ctx, "key_a", "POST /v1/chat/completions", auth.ScopeInference)
		if tc.code == "" {
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if k, _ := c.Key(); k.ID != "key_a" || c.Route != "POST /v1/chat/completions" || c.Path != "/v1/chat/completions" {
				t.Fatalf("%s: call %+v", tc.name, c)
			}
			continue
		}
		if got := apierr.From(err).Code; got != tc.code {
			t.Fatalf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
}

func TestChoicesGetSuccessiveSeedsAndCountThePromptOnce(t *testing.T) {
	var seeds []uint32
	s, _, _ := service(nil, func(req inference.CompletionRequest) inference.Stream {
		seeds = append(seeds, *req.Seed)
		return chunks("ab", 1)
	})
	c := keyedCall()
	ctx := context.Background()
	m, _ := s.Resolve(ctx, c, "m", "")
	seed := uint32(40)
	sts, err := s.Start(ctx, c, m, inference.CompletionRequest{Model: "m", Sampling: inference.Sampling{Seed: &seed}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sts {
		read(t, st)
		st.Close()
	}
	if len(seeds) != 3 || seeds[0] != 40 || seeds[1] != 41 || seeds[2] != 42 {
		t.Fatalf("seeds %v", seeds)
	}
	if p, comp := c.Usage(); p != 7 || comp != 6 {
		t.Fatalf("usage %d+%d, want the prompt once (7) and every choice's completion (6)", p, comp)
	}
}

func TestResolveRefusesWhatTheModelCannotDo(t *testing.T) {
	s, _, _ := service(nil, nil)
	ctx := context.Background()
	if _, err := s.Resolve(ctx, keyedCall(), "nope", ""); apierr.From(err).Code != apierr.ModelNotFound {
		t.Fatalf("unknown model: %v", err)
	}
	if _, err := s.Resolve(ctx, keyedCall(), "m", "embeddings"); apierr.From(err).Param != "model" {
		t.Fatalf("capability: %v", err)
	}
	if _, err := s.Resolve(ctx, keyedCall(), "", ""); apierr.From(err).Param != "model" {
		t.Fatalf("no model: %v", err)
	}
}

// TestNewIDsSortByTime: ids made later sort after earlier ones (the request
// log's id index then appends instead of writing a page per record), and
// keep their shape.
func TestNewIDsSortByTime(t *testing.T) {
	a := NewID()
	time.Sleep(2 * time.Millisecond)
	b := NewID()
	if len(a) != 28 || !strings.HasPrefix(a, "req_") || a >= b || a[:16] == b[:16] {
		t.Fatalf("ids %s then %s", a, b)
	}
	seen := map[string]bool{}
	for range 10000 {
		id := NewID()
		if seen[id] {
			t.Fatalf("id %s made twice", id)
		}
		seen[id] = true
	}
}
