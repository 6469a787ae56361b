package policy

import (
	"errors"
	"strings"
	"testing"

	"cel.dev/cel-go/interpreter"

	"github.com/sovereign-ai/sovereign/internal/policy/pii"
)

// A rule's untracked program is only run where it cannot reach the cost
// limit: on the largest inputs it is run with, the tracked program stays
// within the limit and agrees with it.
func TestFastProgramsStayWithinTheLimit(t *testing.T) {
	for _, when := range []string{
		`!(model in ["qwen2.5-0.5b-instruct", "llama"])`,
		`!("eu" in model_tags)`,
		`max_tokens > 1024`,
		`"card" in pii || "iban" in pii`,
		`size(pii) > 2 && pii.exists(k, pii[k] > 1)`,
		`input.contains("ignore previous instructions")`,
		`input.matches("(?i)ignore (all|previous) instructions")`,
		`input.matches(user)`,
		`input.lowerAscii().contains(model.lowerAscii())`,
		`model_tags.exists(t, input.contains(t))`,
		`model_tags.all(t, t.matches(model))`,
		`(input + input + output).size() > 100`,
		`input.split(" ").size() > 10`,
		`input.replace("a", "bb").contains(user)`,
	} {
		p := Policy{Name: "p", Scope: ScopeDeployment, Rules: []Rule{{Name: "r", Stage: StageOutput, When: when, Action: ActionFlag}}}
		c, err := Compile(p)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		r := c.stages[1][0]
		if r.fast == nil {
			t.Logf("%s: always tracked", when)
			continue
		}
		t.Logf("%s: untracked up to %d bytes", when, r.fastUpTo)
		n := r.fastUpTo
		long := func(c string) string { return strings.Repeat(c, n) }
		tags := make([]string, maxTags)
		for i := range tags {
			tags[i] = long("a")
		}
		for _, in := range []Input{
			{Stage: StageOutput, Model: long("a"), User: long("a"), ModelTags: tags, Input: long("a"), Text: long("a")},
			{Stage: StageOutput, Model: long("."), User: "(a*)*" + long("a")[5:], ModelTags: tags, Input: long("a ")[:n], Text: long("x")},
			{Stage: StageOutput, Model: "", User: "", ModelTags: tags, Input: long("a ")[:n], Text: long("a")},
		} {
			s, err := newSet()
			if err != nil {
				t.Fatal(err)
			}
			ev := &evaluation{set: s, in: in, input: in.Input, output: in.Text, maxLen: -1}
			// PII detection is not part of a rule's cost: skip it, with
			// findings of every kind.
			ev.builtinDone = true
			for i, k := range pii.Builtin() {
				ev.builtin = append(ev.builtin, pii.Finding{Kind: k, Start: 2 * i, End: 2*i + 1}, pii.Finding{Kind: k, Start: 2*i + 1, End: 2*i + 2})
			}
			ev.enter(c)
			if !ev.within(r.fastUpTo) {
				t.Fatalf("%s: the test input is not within %d", when, r.fastUpTo)
			}
			tracked, _, terr := r.prg.Eval(ev)
			var cancelled interpreter.EvalCancelledError
			if errors.As(terr, &cancelled) {
				t.Fatalf("%s: the tracked program reached the limit on an input the untracked one is run with", when)
			}
			fast, _, ferr := r.fast.Eval(ev)
			if (terr == nil) != (ferr == nil) || (terr == nil && tracked != fast) {
				t.Fatalf("%s: tracked %v %v, untracked %v %v", when, tracked, terr, fast, ferr)
			}
		}
	}
}
