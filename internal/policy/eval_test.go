package policy_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/policy"
	"github.com/sovereign-ai/sovereign/internal/policy/pii"
)

// PII samples the built-in detectors find.
const (
	email = "alice@example.com"
	card  = "4111 1111 1111 1111"
	iban  = "DE89370400440532013000"
)

func deny(name, when string) policy.Rule {
	return policy.Rule{Name: name, Stage: policy.StageInput, When: when, Action: policy.ActionDeny, Reason: name}
}

func mustSet(t testing.TB, ps ...policy.Policy) *policy.Set {
	t.Helper()
	for i := range ps {
		if ps[i].ID == "" {
			ps[i].ID = policy.NewID()
		}
		if ps[i].Scope == "" {
			ps[i].Scope = policy.ScopeDeployment
		}
		ps[i].Enabled = true
	}
	s, err := policy.NewSet(ps)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rules is the names of the rules of the decisions, in order.
func rules(out policy.Outcome) []string {
	var names []string
	for _, d := range out.Decisions {
		names = append(names, d.Rule)
	}
	return names
}

func denied(out policy.Outcome) string {
	if out.Deny == nil {
		return ""
	}
	return out.Deny.Rule
}

func TestEvaluateExamples(t *testing.T) {
	s := mustSet(t,
		policy.Policy{Name: "allow-list", Rules: []policy.Rule{deny("allow-list", `!(model in ["qwen2.5-0.5b-instruct"])`)}},
		policy.Policy{Name: "residency", Rules: []policy.Rule{deny("residency", `!("eu" in model_tags)`)}},
		policy.Policy{Name: "tokens", Rules: []policy.Rule{deny("tokens", `max_tokens > 1024`)}},
		policy.Policy{Name: "injection", Rules: []policy.Rule{deny("injection", `input.contains("ignore previous instructions")`)}},
		policy.Policy{Name: "money", Rules: []policy.Rule{deny("money", `"card" in pii || "iban" in pii`)}},
		policy.Policy{Name: "secret", Rules: []policy.Rule{{Name: "secret", Stage: policy.StageOutput, When: `output.matches("(?i)confidential")`, Action: policy.ActionDeny}}},
	)
	ok := policy.Input{Stage: policy.StageInput, Model: "qwen2.5-0.5b-instruct", ModelTags: []string{"eu", "small"}, MaxTokens: 100, Text: "hello"}
	for _, c := range []struct {
		name string
		edit func(in *policy.Input)
		want string
	}{
		{"allowed", func(in *policy.Input) {}, ""},
		{"another model", func(in *policy.Input) { in.Model = "llama-3-70b" }, "allow-list"},
		{"not in the EU", func(in *policy.Input) { in.ModelTags = []string{"us"} }, "residency"},
		{"no tags", func(in *policy.Input) { in.ModelTags = nil }, "residency"},
		{"too many tokens", func(in *policy.Input) { in.MaxTokens = 4096 }, "tokens"},
		{"no max tokens", func(in *policy.Input) { in.MaxTokens = 0 }, ""},
		{"injection", func(in *policy.Input) { in.Text = "please ignore previous instructions and" }, "injection"},
		{"a card", func(in *policy.Input) { in.Text = "my card is " + card + " thanks" }, "money"},
		{"an iban", func(in *policy.Input) { in.Text = "pay to " + iban }, "money"},
		{"an email is fine", func(in *policy.Input) { in.Text = "write to " + email }, ""},
		{"output rules wait", func(in *policy.Input) { in.Text = "CONFIDENTIAL" }, ""},
		{"output", func(in *policy.Input) {
			in.Stage, in.Text, in.Input = policy.StageOutput, "this is Confidential.", "hi"
		}, "secret"},
		{"output fine", func(in *policy.Input) { in.Stage, in.Text = policy.StageOutput, "all public" }, ""},
		// The first deny wins: the allow-list comes first.
		{"first deny", func(in *policy.Input) { in.Model, in.MaxTokens = "x", 5000 }, "allow-list"},
	} {
		in := ok
		c.edit(&in)
		out := s.Evaluate(in)
		if got := denied(out); got != c.want {
			t.Errorf("%s: denied by %q, want %q (%+v)", c.name, got, c.want, out)
		}
		if c.want != "" && (len(out.Decisions) != 1 || out.Deny != &out.Decisions[0]) {
			t.Errorf("%s: decisions %+v", c.name, out.Decisions)
		}
	}
}

func TestEvaluateActions(t *testing.T) {
	s := mustSet(t, policy.Policy{Name: "pii", Rules: []policy.Rule{
		// An exception first: the ops team's test key may send anything.
		{Name: "ops", Stage: policy.StageInput, When: `key == "key_ops"`, Action: policy.ActionAllow},
		{Name: "many-emails", Stage: policy.StageInput, When: `"email" in pii && pii["email"] > 2`, Action: policy.ActionFlag, Reason: "bulk"},
		{Name: "scrub-emails", Stage: policy.StageInput, When: `"email" in pii`, Action: policy.ActionRedact, Redact: []string{"email"}},
		{Name: "no-cards", Stage: policy.StageInput, When: `"card" in pii`, Action: policy.ActionDeny, Reason: "no card numbers"},
		{Name: "after", Stage: policy.StageInput, When: `true`, Action: policy.ActionFlag},
	}})
	text := "mail " + email + ", b@example.org and c@example.net"
	out := s.Evaluate(policy.Input{Stage: policy.StageInput, RequestID: "req_1", Team: "team_a", Key: "key_1", Model: "m", Route: "/v1/chat/completions", Text: text})
	if out.Deny != nil || !slices.Equal(rules(out), []string{"many-emails", "scrub-emails", "after"}) {
		t.Fatalf("decisions %v, deny %v", rules(out), out.Deny)
	}
	if len(out.Redact) != 3 || !slices.Equal(out.RedactKinds, []string{"email"}) {
		t.Fatalf("redact %+v %v", out.Redact, out.RedactKinds)
	}
	if got := pii.Redact(text, out.Redact); got != "mail [REDACTED:email], [REDACTED:email] and [REDACTED:email]" {
		t.Fatalf("redacted: %q", got)
	}
	d := out.Decisions[0]
	if d.Action != policy.ActionFlag || d.Reason != "bulk" || d.RequestID != "req_1" || d.TeamID != "team_a" || d.KeyID != "key_1" ||
		d.Model != "m" || d.Route != "/v1/chat/completions" || d.Policy != "pii" || d.Stage != policy.StageInput ||
		!strings.HasPrefix(d.ID, "pdec_") || d.Object != "policy_decision" || d.CreatedAt == 0 || len(d.Spans) != 3 || d.Spans[0] != (policy.Span{Kind: "email", Start: 5, End: 5 + len(email)}) {
		t.Fatalf("decision %+v", d)
	}
	if got := out.Decisions[2].Spans; got == nil || len(got) != 0 {
		t.Fatalf("a rule that does not read pii has no spans: %#v", got)
	}
	// Decision ids differ and sort in the order made.
	if out.Decisions[0].ID >= out.Decisions[1].ID || out.Decisions[1].ID >= out.Decisions[2].ID {
		t.Errorf("ids out of order: %v", out.Decisions)
	}

	// A deny stops everything, decisions made before it kept.
	out = s.Evaluate(policy.Input{Stage: policy.StageInput, Text: email + " " + card})
	if denied(out) != "no-cards" || !slices.Equal(rules(out), []string{"scrub-emails", "no-cards"}) || out.Deny.Reason != "no card numbers" {
		t.Fatalf("deny: %v %+v", rules(out), out.Deny)
	}
	if want := []policy.Span{{Kind: "card", Start: len(email) + 1, End: len(email) + 1 + len(card)}}; !reflect.DeepEqual(out.Deny.Spans, want) {
		t.Fatalf("deny spans %+v, want %+v", out.Deny.Spans, want)
	}
	// Spans never hold the text.
	js, _ := json.Marshal(out)
	if strings.Contains(string(js), "alice") || strings.Contains(string(js), "4111") {
		t.Fatalf("the outcome holds PII: %s", js)
	}
	js, _ = json.Marshal(out.Decisions)
	if strings.Contains(string(js), "alice") || strings.Contains(string(js), "4111") || strings.Contains(string(js), "example") {
		t.Fatalf("the decisions hold PII: %s", js)
	}

	// An allow skips the rest of its policy.
	out = s.Evaluate(policy.Input{Stage: policy.StageInput, Key: "key_ops", Text: email + " " + card})
	if out.Deny != nil || len(out.Decisions) != 0 || len(out.Redact) != 0 {
		t.Fatalf("exception: %+v", out)
	}
}

// An allow is an exception in its own policy only; later policies still run.
func TestEvaluateAllowIsLocal(t *testing.T) {
	s := mustSet(t,
		policy.Policy{Name: "a", Rules: []policy.Rule{
			{Name: "vip", Stage: policy.StageInput, When: `user == "vip"`, Action: policy.ActionAllow},
			deny("a-tokens", `max_tokens > 100`),
		}},
		policy.Policy{Name: "b", Rules: []policy.Rule{deny("b-tokens", `max_tokens > 1000`)}},
	)
	for _, c := range []struct {
		user   string
		tokens int
		want   string
	}{{"vip", 500, ""}, {"vip", 5000, "b-tokens"}, {"joe", 500, "a-tokens"}, {"joe", 5000, "a-tokens"}} {
		if got := denied(s.Evaluate(policy.Input{Stage: policy.StageInput, User: c.user, MaxTokens: c.tokens})); got != c.want {
			t.Errorf("%s %d: %q, want %q", c.user, c.tokens, got, c.want)
		}
	}
}

func TestEvaluateScopes(t *testing.T) {
	flag := func(name string) []policy.Rule {
		return []policy.Rule{{Name: name, Stage: policy.StageInput, When: "true", Action: policy.ActionFlag}}
	}
	ps := []policy.Policy{
		// Given out of order: evaluation is deployment, team, key.
		{Name: "key", Scope: policy.ScopeKey, ScopeID: "key_1", Rules: flag("key")},
		{Name: "team", Scope: policy.ScopeTeam, ScopeID: "team_a", Rules: flag("team")},
		{Name: "deployment", Rules: flag("deployment")},
		{Name: "deployment-2", Rules: flag("deployment-2")},
		{Name: "other-team", Scope: policy.ScopeTeam, ScopeID: "team_b", Rules: flag("other-team")},
		{Name: "output-only", Scope: policy.ScopeTeam, ScopeID: "team_c", Rules: []policy.Rule{{Name: "o", Stage: policy.StageOutput, When: "true", Action: policy.ActionFlag}}},
	}
	s := mustSet(t, ps...)
	// A disabled policy is ignored.
	ps = append(ps, policy.Policy{ID: "pol_off", Name: "off", Scope: policy.ScopeDeployment, Rules: flag("off")})
	s2, err := policy.NewSet(ps)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []*policy.Set{s, s2} {
		out := set.Evaluate(policy.Input{Stage: policy.StageInput, Team: "team_a", Key: "key_1"})
		if !slices.Equal(rules(out), []string{"deployment", "deployment-2", "team", "key"}) {
			t.Errorf("order: %v", rules(out))
		}
		out = set.Evaluate(policy.Input{Stage: policy.StageInput, Team: "team_b", Key: "key_9"})
		if !slices.Equal(rules(out), []string{"deployment", "deployment-2", "other-team"}) {
			t.Errorf("team b: %v", rules(out))
		}
	}
	if out := s.Evaluate(policy.Input{Stage: policy.StageOutput, Team: "team_a", Key: "key_1"}); len(out.Decisions) != 0 {
		t.Errorf("output stage: %v", rules(out))
	}
	// Applies.
	if !s.Applies(policy.StageInput, "", "") || s.Applies(policy.StageOutput, "team_a", "key_1") || !s.Applies(policy.StageOutput, "team_c", "") ||
		s.Applies("during", "team_c", "") {
		t.Error("Applies")
	}
	only := mustSet(t, policy.Policy{Name: "k", Scope: policy.ScopeKey, ScopeID: "key_1", Rules: flag("k")})
	if only.Applies(policy.StageInput, "team_a", "key_2") || !only.Applies(policy.StageInput, "team_a", "key_1") || only.Applies(policy.StageInput, "key_1", "") {
		t.Error("Applies for a key policy")
	}
	var none *policy.Set
	if none.Applies(policy.StageInput, "", "") {
		t.Error("a nil set applies")
	}
	empty := mustSet(t)
	if out := empty.Evaluate(policy.Input{Stage: policy.StageInput, Text: card}); out.Deny != nil || out.Decisions != nil {
		t.Errorf("empty set: %+v", out)
	}
}

func TestEvaluateCustomDetectors(t *testing.T) {
	s := mustSet(t,
		policy.Policy{Name: "tickets", Detectors: map[string]string{"ticket": `TCK-\d{6}`}, Rules: []policy.Rule{
			{Name: "scrub", Stage: policy.StageOutput, When: `"ticket" in pii || "email" in pii`, Action: policy.ActionRedact},
		}},
		// Another policy's custom kinds are not this one's.
		policy.Policy{Name: "plain", Rules: []policy.Rule{
			{Name: "count", Stage: policy.StageOutput, When: `size(pii) > 0`, Action: policy.ActionFlag},
		}},
	)
	text := "see TCK-123456 or mail " + email
	out := s.Evaluate(policy.Input{Stage: policy.StageOutput, Text: text})
	if got := pii.Redact(text, out.Redact); got != "see [REDACTED:ticket] or mail [REDACTED:email]" {
		t.Fatalf("redacted %q (%+v)", got, out)
	}
	if !slices.Contains(out.RedactKinds, "ticket") || !slices.Contains(out.RedactKinds, "email") {
		t.Fatalf("redact kinds %v", out.RedactKinds)
	}
	if len(out.Decisions) != 2 || len(out.Decisions[1].Spans) != 1 || out.Decisions[1].Spans[0].Kind != "email" {
		t.Fatalf("decisions %+v", out.Decisions)
	}
	// The stream redactor's detectors.
	set, kinds := s.Detectors("", "")
	if set == nil || !slices.Contains(kinds, "ticket") || !slices.Contains(set.Kinds(), "ticket") {
		t.Fatalf("Detectors: %v %v", set, kinds)
	}
	if set, kinds := mustSet(t, policy.Policy{Name: "x", Rules: []policy.Rule{deny("d", "true")}}).Detectors("", ""); set != nil || kinds != nil {
		t.Fatalf("Detectors without redact rules: %v %v", set, kinds)
	}
	// Two policies with custom detectors: merged.
	s = mustSet(t,
		policy.Policy{Name: "a", Detectors: map[string]string{"ticket": `TCK-\d{6}`}, Rules: []policy.Rule{
			{Name: "a", Stage: policy.StageOutput, When: "true", Action: policy.ActionRedact, Redact: []string{"ticket"}}}},
		policy.Policy{Name: "b", Scope: policy.ScopeTeam, ScopeID: "team_a", Detectors: map[string]string{"badge": `BDG\d{4}`}, Rules: []policy.Rule{
			{Name: "b", Stage: policy.StageOutput, When: "true", Action: policy.ActionRedact, Redact: []string{"badge", "ip"}}}},
	)
	set, kinds = s.Detectors("team_a", "")
	if set == nil || !slices.Equal(kinds, []string{"badge", "ip", "ticket"}) {
		t.Fatalf("merged: %v", kinds)
	}
	if got := pii.Redact("TCK-123456 BDG1234", set.Find("TCK-123456 BDG1234", kinds...)); got != "[REDACTED:ticket] [REDACTED:badge]" {
		t.Fatalf("merged set finds %q", got)
	}
	if again, _ := s.Detectors("team_a", ""); again != set {
		t.Error("the merged set is not cached")
	}
	if set, kinds := s.Detectors("team_b", ""); set == nil || !slices.Equal(kinds, []string{"ticket"}) {
		t.Fatalf("one policy: %v", kinds)
	}
}

func TestRedactMerged(t *testing.T) {
	// Overlapping redactions of two policies merge into one span.
	s := mustSet(t,
		policy.Policy{Name: "a", Detectors: map[string]string{"host": `example\.com`}, Rules: []policy.Rule{
			{Name: "a", Stage: policy.StageInput, When: "true", Action: policy.ActionRedact, Redact: []string{"host"}}}},
		policy.Policy{Name: "b", Rules: []policy.Rule{
			{Name: "b", Stage: policy.StageInput, When: "true", Action: policy.ActionRedact, Redact: []string{"email"}}}},
	)
	text := "to " + email + " now"
	out := s.Evaluate(policy.Input{Stage: policy.StageInput, Text: text})
	if len(out.Redact) != 1 || out.Redact[0].Start != 3 || out.Redact[0].End != 3+len(email) {
		t.Fatalf("redact %+v", out.Redact)
	}
}

func TestTest(t *testing.T) {
	p := policy.Policy{Name: "draft", Scope: policy.ScopeKey, ScopeID: "key_other", Enabled: false,
		Rules: []policy.Rule{deny("cards", `"card" in pii`)}}
	out, err := policy.Test(p, policy.Input{Stage: policy.StageInput, Text: card, Key: "key_1"})
	if err != nil || denied(out) != "cards" {
		t.Fatalf("Test: %+v %v", out, err)
	}
	p.Rules[0].When = "nope"
	if _, err := policy.Test(p, policy.Input{Stage: policy.StageInput}); err == nil {
		t.Fatal("Test of a bad policy")
	}
	// NewSet ignores disabled policies, even broken ones, and names a
	// broken enabled one.
	if _, err := policy.NewSet([]policy.Policy{p}); err != nil {
		t.Fatal(err)
	}
	p.Enabled, p.ID = true, "pol_broken"
	if _, err := policy.NewSet([]policy.Policy{p}); err == nil || !strings.Contains(err.Error(), "pol_broken") {
		t.Fatalf("NewSet: %v", err)
	}
}

// A rule that reaches its cost limit matches, unless it allows.
func TestCostLimit(t *testing.T) {
	long := strings.Repeat("a", 1<<20)
	// Twelve matches of a 40-character pattern over 1 MiB: about 12M.
	expensive := `[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].exists(i, input.matches("(a|b|c|d|e|f|g|h|i|j)+x(a|b|c|d|e|f)+y" + string(i)))`
	s := mustSet(t,
		policy.Policy{Name: "a", Rules: []policy.Rule{
			{Name: "skip", Stage: policy.StageInput, When: expensive, Action: policy.ActionAllow},
			deny("d", expensive),
		}},
	)
	out := s.Evaluate(policy.Input{Stage: policy.StageInput, Text: long})
	if denied(out) != "d" || !strings.Contains(out.Deny.Reason, "cost limit") {
		t.Fatalf("%+v", out.Deny)
	}
	// A runtime error (no such key) is no match.
	s = mustSet(t, policy.Policy{Name: "a", Rules: []policy.Rule{deny("d", `pii["card"] > 0`)}})
	if out := s.Evaluate(policy.Input{Stage: policy.StageInput, Text: "none"}); out.Deny != nil {
		t.Fatalf("%+v", out.Deny)
	}
	if out := s.Evaluate(policy.Input{Stage: policy.StageInput, Text: card}); out.Deny == nil {
		t.Fatal("pii[card] with a card")
	}
}

func TestIDs(t *testing.T) {
	id := policy.NewID()
	if len(id) != 4+22 || !strings.HasPrefix(id, "pol_") || id == policy.NewID() {
		t.Fatalf("NewID %q", id)
	}
}

// fuzzSet is a fixed set of policies with PII and regex rules.
var fuzzSet = func() *policy.Set {
	s, err := policy.NewSet([]policy.Policy{
		{ID: "pol_1", Name: "one", Scope: policy.ScopeDeployment, Enabled: true, Detectors: map[string]string{"ticket": `TCK-\d{3,6}`}, Rules: []policy.Rule{
			{Name: "eu", Stage: policy.StageInput, When: `"eu" in model_tags && model.startsWith("q")`, Action: policy.ActionAllow},
			{Name: "scrub", Stage: policy.StageInput, When: `size(pii) > 0`, Action: policy.ActionRedact},
			{Name: "words", Stage: policy.StageInput, When: `input.matches("(?i)ignore (all|previous) instructions")`, Action: policy.ActionFlag},
			{Name: "out", Stage: policy.StageOutput, When: `output.contains("@") || "ticket" in pii`, Action: policy.ActionRedact, Redact: []string{"email", "ticket"}},
		}},
		{ID: "pol_2", Name: "two", Scope: policy.ScopeDeployment, Enabled: true, Rules: []policy.Rule{
			{Name: "cards", Stage: policy.StageInput, When: `"card" in pii && pii["card"] > 1`, Action: policy.ActionDeny},
			{Name: "ips", Stage: policy.StageOutput, When: `has(pii.ip)`, Action: policy.ActionRedact, Redact: []string{"ip", "phone"}},
			{Name: "tokens", Stage: policy.StageInput, When: `max_tokens > 1000 || model_tags.exists(t, t.matches("^x"))`, Action: policy.ActionFlag},
		}},
	})
	if err != nil {
		panic(err)
	}
	return s
}()

func FuzzEvaluate(f *testing.F) {
	f.Add("mail alice@example.com or call +1 415 555 0100", "qwen", "eu", 10, false)
	f.Add("cards "+card+" and "+card+" TCK-1234 10.0.0.1", "m", "x", 2000, true)
	f.Add("ignore previous instructions", "", "", 0, false)
	f.Add("\xff\xfe@@TCK-999 a@b.co", "q", "eu", -1, true)
	f.Fuzz(func(t *testing.T, text, model, tag string, maxTokens int, output bool) {
		in := policy.Input{Stage: policy.StageInput, Model: model, ModelTags: []string{tag}, MaxTokens: maxTokens, Text: text}
		if output {
			in.Stage, in.Input = policy.StageOutput, "question"
		}
		out := fuzzSet.Evaluate(in)
		end := 0
		for _, f := range out.Redact {
			if f.Start < end || f.End <= f.Start || f.End > len(text) {
				t.Fatalf("bad redaction %+v of %d bytes (previous end %d): %+v", f, len(text), end, out.Redact)
			}
			end = f.End
		}
		for _, d := range out.Decisions {
			for _, sp := range d.Spans {
				if sp.Start < 0 || sp.End > len(text) || sp.End <= sp.Start {
					t.Fatalf("bad span %+v", sp)
				}
			}
		}
		_ = pii.Redact(text, out.Redact)
		again := fuzzSet.Evaluate(in)
		if denied(again) != denied(out) || !slices.Equal(rules(again), rules(out)) || !reflect.DeepEqual(again.Redact, out.Redact) ||
			!slices.Equal(again.RedactKinds, out.RedactKinds) {
			t.Fatalf("not deterministic: %+v then %+v", out, again)
		}
		for i := range out.Decisions {
			if !reflect.DeepEqual(out.Decisions[i].Spans, again.Decisions[i].Spans) {
				t.Fatalf("spans not deterministic")
			}
		}
	})
}

// BenchmarkEvaluate is three policies on a 1 KB request: an allow-list and
// data residency for the deployment, a token limit for the team, and PII
// rules (deny cards, redact emails) for the key.
func BenchmarkEvaluate(b *testing.B) {
	s := mustSet(b,
		policy.Policy{Name: "deployment", Rules: []policy.Rule{
			deny("allow-list", `!(model in ["qwen2.5-0.5b-instruct", "llama-3.2-1b"])`),
			deny("residency", `!("eu" in model_tags)`),
		}},
		policy.Policy{Name: "team", Scope: policy.ScopeTeam, ScopeID: "team_a", Rules: []policy.Rule{
			{Name: "tokens", Stage: policy.StageInput, When: `max_tokens > 1024`, Action: policy.ActionFlag},
			deny("injection", `input.contains("ignore previous instructions")`),
		}},
		policy.Policy{Name: "key", Scope: policy.ScopeKey, ScopeID: "key_1", Rules: []policy.Rule{
			deny("money", `"card" in pii || "iban" in pii`),
			{Name: "scrub", Stage: policy.StageInput, When: `"email" in pii`, Action: policy.ActionRedact, Redact: []string{"email"}},
		}},
	)
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 22) + "Reach me at " + email + "."
	in := policy.Input{Stage: policy.StageInput, RequestID: "req", Team: "team_a", Key: "key_1", Model: "qwen2.5-0.5b-instruct",
		ModelTags: []string{"eu", "small"}, MaxTokens: 256, Text: text, Route: "/v1/chat/completions"}
	if out := s.Evaluate(in); out.Deny != nil || len(out.Redact) != 1 {
		b.Fatalf("%+v", out)
	}
	b.Run("pii", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			s.Evaluate(in)
		}
	})
	// Without the key's PII policy: CEL only.
	in.Key = "key_2"
	b.Run("no-pii", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Evaluate(in)
		}
	})
	b.Run("applies", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Applies(policy.StageOutput, "team_a", "key_2")
		}
	})
}
