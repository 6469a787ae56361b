package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/policy"
)

// valid is a policy every case of TestCompileErrors breaks in one place.
func valid() policy.Policy {
	return policy.Policy{
		ID: "pol_x", Name: "guard", Scope: policy.ScopeTeam, ScopeID: "team_a", Enabled: true,
		Detectors: map[string]string{"ticket": `TCK-\d{6}`},
		Rules: []policy.Rule{
			{Name: "allow-list", Stage: policy.StageInput, When: `!(model in ["qwen2.5-0.5b-instruct"])`, Action: policy.ActionDeny},
			{Name: "scrub", Stage: policy.StageOutput, When: `"ticket" in pii`, Action: policy.ActionRedact, Redact: []string{"email", "ticket"}},
			{Name: "secret", Stage: policy.StageOutput, When: `output.matches("(?i)confidential")`, Action: policy.ActionFlag},
		},
	}
}

func TestCompileValid(t *testing.T) {
	if _, err := policy.Compile(valid()); err != nil {
		t.Fatal(err)
	}
	// The documented examples compile.
	for _, when := range []string{
		`!(model in ["qwen2.5-0.5b-instruct"])`,
		`!("eu" in model_tags)`,
		`max_tokens > 1024`,
		`"card" in pii || "iban" in pii`,
		`input.contains("ignore previous instructions")`,
		`pii["email"] > 2 || has(pii.phone) || size(pii) > 3`,
		`backend == "upstream" && team == "team_a" && key != "" && user.startsWith("bot-") && route == "/v1/chat/completions" && stage == "input"`,
		`input.lowerAscii().contains("jailbreak")`,
		`model_tags.exists(t, t.startsWith("eu-"))`,
		"model == 'a' ||\n  model == 'b'",
	} {
		p := valid()
		p.Rules = []policy.Rule{{Name: "r", Stage: policy.StageInput, When: when, Action: policy.ActionDeny}}
		if err := policy.Validate(p); err != nil {
			t.Errorf("%s: %v", when, err)
		}
	}
	// Disabled policies are validated all the same.
	p := valid()
	p.Enabled = false
	p.Scope, p.ScopeID = policy.ScopeDeployment, ""
	if err := policy.Validate(p); err != nil {
		t.Fatal(err)
	}
}

func TestCompileErrors(t *testing.T) {
	rule := func(i int, f func(r *policy.Rule)) func(p *policy.Policy) {
		return func(p *policy.Policy) { f(&p.Rules[i]) }
	}
	when := func(i int, w string) func(p *policy.Policy) {
		return rule(i, func(r *policy.Rule) { r.When = w })
	}
	for _, c := range []struct {
		name    string
		edit    func(p *policy.Policy)
		param   string
		message string // a part of the message
	}{
		{"no name", func(p *policy.Policy) { p.Name = " " }, "name", "required"},
		{"long name", func(p *policy.Policy) { p.Name = strings.Repeat("n", 101) }, "name", "100"},
		{"control in name", func(p *policy.Policy) { p.Name = "a\nb" }, "name", "control"},
		{"long description", func(p *policy.Policy) { p.Description = strings.Repeat("d", 1001) }, "description", "1000"},
		{"no scope", func(p *policy.Policy) { p.Scope = "" }, "scope", "required"},
		{"unknown scope", func(p *policy.Policy) { p.Scope = "org" }, "scope", `unknown scope "org"`},
		{"deployment with an id", func(p *policy.Policy) { p.Scope = policy.ScopeDeployment }, "scope_id", "empty"},
		{"team without an id", func(p *policy.Policy) { p.ScopeID = "" }, "scope_id", "required"},
		{"key without an id", func(p *policy.Policy) { p.Scope, p.ScopeID = policy.ScopeKey, "" }, "scope_id", "required"},
		{"bad detector pattern", func(p *policy.Policy) { p.Detectors = map[string]string{"my_kind": `(`} }, "detectors.my_kind", "missing closing )"},
		{"bad detector kind", func(p *policy.Policy) { p.Detectors = map[string]string{"My-Kind": `x`} }, "detectors.My-Kind", "lower-case"},
		{"a built-in kind", func(p *policy.Policy) { p.Detectors = map[string]string{"email": `x`} }, "detectors.email", "built-in"},
		{"empty pattern", func(p *policy.Policy) { p.Detectors = map[string]string{"x": ``} }, "detectors.x", "empty"},
		{"no rules", func(p *policy.Policy) { p.Rules = nil }, "rules", "at least one rule"},
		{"too many rules", func(p *policy.Policy) {
			p.Rules = make([]policy.Rule, policy.MaxRules+1)
		}, "rules", "at most"},
		{"bad rule name", rule(1, func(r *policy.Rule) { r.Name = "Scrub" }), "rules[1].name", "lower-case"},
		{"duplicate rule name", rule(2, func(r *policy.Rule) { r.Name = "scrub" }), "rules[2].name", "rules[1]"},
		{"unknown stage", rule(1, func(r *policy.Rule) { r.Stage = "before" }), "rules[1].stage", `unknown stage "before"`},
		{"no stage", rule(1, func(r *policy.Rule) { r.Stage = "" }), "rules[1].stage", "required"},
		{"unknown action", rule(0, func(r *policy.Rule) { r.Action = "block" }), "rules[0].action", `unknown action "block"`},
		{"no action", rule(0, func(r *policy.Rule) { r.Action = "" }), "rules[0].action", "required"},
		{"redact on a deny", rule(0, func(r *policy.Rule) { r.Redact = []string{"email"} }), "rules[0].redact", "only a redact rule"},
		{"redact an unknown kind", rule(1, func(r *policy.Rule) { r.Redact = []string{"email", "ssn"} }), "rules[1].redact[1]", `unknown PII kind "ssn"`},
		{"no condition", when(0, "  "), "rules[0].when", "required"},
		{"undeclared", when(2, `output == foo`), "rules[2].when", "1:11: undeclared reference to 'foo'"},
		{"syntax", when(0, "model ==\n  "), "rules[0].when", "2:3: Syntax error"},
		{"not a bool", when(0, `max_tokens + 1`), "rules[0].when", "of type int"},
		{"a string", when(0, `model`), "rules[0].when", "of type string"},
		{"dyn", when(0, `dyn(model)`), "rules[0].when", "of type dyn"},
		{"wrong types", when(0, `model > 3`), "rules[0].when", "1:7: found no matching overload for '_>_'"},
		{"bad regex", when(2, `output.matches("(")`), "rules[2].when", "1:16: invalid matches argument"},
		{"output at the input stage", when(0, `model == "x" && output.contains("x")`), "rules[0].when", "1:17: output is always empty at the input stage"},
		{"unknown pii kind", when(1, `"ssn" in pii`), "rules[1].when", `1:1: unknown PII kind "ssn"`},
		{"unknown pii kind by index", when(1, "true &&\npii[\"ssn\"] > 1"), "rules[1].when", `2:5: unknown PII kind "ssn"`},
		{"nested comprehensions", when(0, `model_tags.exists(a, model_tags.exists(b, a == b))`), "rules[0].when", "nesting"},
		{"too long", when(0, "true"+strings.Repeat(" ", policy.MaxWhenLen)), "rules[0].when", "at most"},
		{"long reason", rule(0, func(r *policy.Rule) { r.Reason = strings.Repeat("r", 1001) }), "rules[0].reason", "1000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := valid()
			c.edit(&p)
			_, err := policy.Compile(p)
			var ve *apierr.Error
			if !errors.As(err, &ve) || ve.Code != apierr.InvalidRequest {
				t.Fatalf("err = %v, want a 400", err)
			}
			if ve.Param != c.param || !strings.Contains(ve.Message, c.message) {
				t.Fatalf("got %q: %q, want %q: …%s…", ve.Param, ve.Message, c.param, c.message)
			}
			// The message starts with the field, as the API has always
			// answered.
			if !strings.HasPrefix(ve.Message, ve.Param+": ") {
				t.Errorf("Message = %q", ve.Message)
			}
		})
	}
}

// An iteration variable named output (or pii) is not the variable.
func TestCompileShadowing(t *testing.T) {
	p := valid()
	p.Rules = []policy.Rule{{Name: "r", Stage: policy.StageInput, When: `model_tags.exists(output, output == "eu")`, Action: policy.ActionDeny}}
	if err := policy.Validate(p); err != nil {
		t.Fatal(err)
	}
	// … but outside the loop it is.
	p.Rules[0].When = `model_tags.exists(output, output == "eu") || output == ""`
	var ve *apierr.Error
	if err := policy.Validate(p); !errors.As(err, &ve) || !strings.Contains(ve.Message, "1:46: output") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`!(model in ["qwen2.5-0.5b-instruct"])`, `"card" in pii`, `output.matches("(?i)x")`, `max_tokens > 1024`,
		`model_tags.all(t, t != "")`, `pii["email"] > 1`, `has(pii.x)`, `foo`, `1 +`, `"\xff"`, `[1, "a"]`, `{"a": 1}.a == 1`,
		`input.matches(model)`, `size(pii) == 0 ? true : false`, `b"abc" == bytes(input)`, `timestamp("x") < now`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, when string) {
		p := policy.Policy{Name: "fuzz", Scope: policy.ScopeDeployment, Enabled: true,
			Rules: []policy.Rule{{Name: "r", Stage: policy.StageOutput, When: when, Action: policy.ActionFlag}}}
		c, err := policy.Compile(p)
		if err == nil {
			if c == nil {
				t.Fatal("nil compiled policy without an error")
			}
			// Whatever compiled evaluates without panicking.
			if _, err := policy.Test(p, policy.Input{Stage: policy.StageOutput, Text: "x@example.com " + when, Input: when}); err != nil {
				t.Fatal(err)
			}
			return
		}
		var ve *apierr.Error
		if !errors.As(err, &ve) || ve.Code != apierr.InvalidRequest || ve.Param != "rules[0].when" {
			t.Fatalf("Compile(%q) = %v, want a 400 for rules[0].when", when, err)
		}
	})
}
