package policy

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"

	"github.com/sovereign-ai/sovereign/internal/apierr"
	"github.com/sovereign-ai/sovereign/internal/policy/pii"
)

// Limits on a policy, checked by Compile. They keep one request's policy
// work bounded whatever the rules say.
const (
	// MaxRules is the most rules a policy may have.
	MaxRules = 100
	// MaxWhenLen is the longest a rule's condition may be, in bytes.
	MaxWhenLen = 4096
	// MaxRuleCost is the CEL runtime cost one rule's evaluation may
	// spend (cel.CostLimit, as Kubernetes' per-expression limit). A string
	// function costs about a tenth of the string's length
	// (input.contains("x") on a 1 MiB text: about 100k); a regex match
	// multiplies that by a quarter of the pattern's length (a 40-character
	// pattern on 1 MiB: about 1M, some 50 ms of CPU). So rules can read
	// long contexts, while loops and string building that would take
	// seconds are stopped. A rule that reaches the limit is taken to have
	// matched, unless it is an allow rule: fail closed, so that a client
	// cannot slip past a deny by making the text expensive to check.
	MaxRuleCost = 1_000_000
	// MaxRegexProgramSize bounds a regex a rule uses (its RE2 program's
	// instruction count), literal or built at run time.
	MaxRegexProgramSize = 10_000
	// MaxDetectors is the most custom PII detectors a policy may define.
	MaxDetectors = 32
)

// invalid reports what is wrong with a policy as a 400: param names the
// field (as the OpenAI error envelope's "param": "name", "scope_id",
// "detectors.my_kind", "rules[2].when", …) and the message, fit to show
// to the client, starts with it too ("rules[2].when: 1:7: …"), as the API
// has always answered. For a rule's condition the message then gives the
// CEL position, line:column (1-based), and cel-go's message.
func invalid(param, format string, args ...any) *apierr.Error {
	return apierr.Invalid(param, param+": "+fmt.Sprintf(format, args...))
}

// The CEL variables a rule can read.
const (
	varModel     = "model"
	varModelTags = "model_tags"
	varBackend   = "backend"
	varTeam      = "team"
	varKey       = "key"
	varUser      = "user"
	varRoute     = "route"
	varMaxTokens = "max_tokens"
	varStage     = "stage"
	varInput     = "input"
	varOutput    = "output"
	varPII       = "pii"
)

// celEnv is the one CEL environment every rule is checked in; cel.Env is
// safe for concurrent use, and building it is the costly part.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varModel, cel.StringType),
		cel.Variable(varModelTags, cel.ListType(cel.StringType)),
		cel.Variable(varBackend, cel.StringType),
		cel.Variable(varTeam, cel.StringType),
		cel.Variable(varKey, cel.StringType),
		cel.Variable(varUser, cel.StringType),
		cel.Variable(varRoute, cel.StringType),
		cel.Variable(varMaxTokens, cel.IntType),
		cel.Variable(varStage, cel.StringType),
		cel.Variable(varInput, cel.StringType),
		cel.Variable(varOutput, cel.StringType),
		cel.Variable(varPII, cel.MapType(cel.StringType, cel.IntType)),
		// lowerAscii, indexOf, … (all with cost estimates).
		ext.Strings(),
		// Regex literals and literal aggregates are checked at compile
		// time, so a bad pattern is a validation error with a position.
		cel.ExtendedValidations(),
		cel.RegexProgramSizeLimit(MaxRegexProgramSize),
		cel.ASTValidators(cel.ValidateComprehensionNestingLimit(1)),
		cel.ParserExpressionSizeLimit(MaxWhenLen),
	)
})

// builtinSet is the detector set of policies without custom detectors.
var builtinSet = sync.OnceValues(func() (*pii.Set, error) { return pii.New(nil) })

var (
	ruleName  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	kindName  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	isBuiltin = func() map[string]bool {
		m := map[string]bool{}
		for _, k := range pii.Builtin() {
			m[k] = true
		}
		return m
	}()
)

// Compiled is a validated policy with its rules compiled, ready to
// evaluate. It is immutable and safe for concurrent use.
type Compiled struct {
	p Policy
	// set holds the policy's detectors: the shared built-in set, or the
	// built-ins and the policy's custom ones.
	set *pii.Set
	// custom are the policy's custom kinds, sorted.
	custom []string
	// stages are the rules of each stage, in order.
	stages [2][]*rule
}

// rule is a compiled rule.
type rule struct {
	Rule
	// prg tracks the cost of an evaluation; fast, when not nil, does not,
	// and is run when no string the rule can read is longer than fastUpTo
	// bytes (and there are at most maxTags model tags): the rule then
	// cannot reach MaxRuleCost.
	prg      cel.Program
	fast     cel.Program
	fastUpTo int
	// readsPII: the condition reads pii; piiAll: in a way that does not
	// name the kinds (then its decisions carry every finding), else
	// piiKinds are the kinds it names.
	readsPII bool
	piiAll   bool
	piiKinds []string
	// kinds are what a redact rule redacts (resolved: never empty).
	kinds []string
}

// Policy returns the policy as it was compiled.
func (c *Compiled) Policy() Policy { return c.p }

func stageIndex(stage string) int {
	if stage == StageOutput {
		return 1
	}
	return 0
}

// Validate checks p as Compile does.
func Validate(p Policy) error {
	_, err := Compile(p)
	return err
}

// Compile validates p and compiles its rules. Errors: a 400 naming the
// field (see invalid) for the first problem found (fields in order: name,
// description, scope, scope_id, detectors, rules), or an internal error if
// the CEL environment cannot be built. Enabled is not looked at.
func Compile(p Policy) (*Compiled, error) {
	if err := checkText("name", p.Name, 100, true); err != nil {
		return nil, err
	}
	if len(p.Description) > 1000 {
		return nil, invalid("description", "must be at most 1000 bytes")
	}
	switch p.Scope {
	case ScopeDeployment:
		if p.ScopeID != "" {
			return nil, invalid("scope_id", "must be empty for a deployment policy")
		}
	case ScopeTeam, ScopeKey:
		if p.ScopeID == "" {
			return nil, invalid("scope_id", "is required for a %s policy (the %s's id)", p.Scope, p.Scope)
		}
		if err := checkText("scope_id", p.ScopeID, 100, true); err != nil {
			return nil, err
		}
	case "":
		return nil, invalid("scope", "is required: deployment, team or key")
	default:
		return nil, invalid("scope", "unknown scope %q: use deployment, team or key", p.Scope)
	}
	c := &Compiled{p: p}
	if err := c.compileDetectors(); err != nil {
		return nil, err
	}
	if len(p.Rules) == 0 {
		return nil, invalid("rules", "a policy needs at least one rule")
	}
	if len(p.Rules) > MaxRules {
		return nil, invalid("rules", "a policy may have at most %d rules", MaxRules)
	}
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("policy: building the CEL environment: %w", err)
	}
	seen := make(map[string]int, len(p.Rules))
	for i, r := range p.Rules {
		param := fmt.Sprintf("rules[%d]", i)
		if !ruleName.MatchString(r.Name) {
			return nil, invalid(param+".name", "%q must be 1 to 64 characters: lower-case letters, digits, '_' and '-', starting with a letter or digit", r.Name)
		}
		if j, dup := seen[r.Name]; dup {
			return nil, invalid(param+".name", "%q is already the name of rules[%d]", r.Name, j)
		}
		seen[r.Name] = i
		cr, err := c.compileRule(env, param, r)
		if err != nil {
			return nil, err
		}
		s := stageIndex(r.Stage)
		c.stages[s] = append(c.stages[s], cr)
	}
	return c, nil
}

// checkText checks a required or optional free-text field.
func checkText(param, s string, max int, required bool) *apierr.Error {
	switch {
	case required && strings.TrimSpace(s) == "":
		return invalid(param, "is required")
	case utf8.RuneCountInString(s) > max:
		return invalid(param, "must be at most %d characters", max)
	case !utf8.ValidString(s):
		return invalid(param, "must be valid UTF-8")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return invalid(param, "must not contain control characters")
	}
	return nil
}

// compileDetectors builds the policy's detector set.
func (c *Compiled) compileDetectors() error {
	if len(c.p.Detectors) > MaxDetectors {
		return invalid("detectors", "a policy may define at most %d detectors", MaxDetectors)
	}
	for _, k := range sortedKeys(c.p.Detectors) {
		param := "detectors." + k
		switch {
		case !kindName.MatchString(k):
			return invalid(param, "kind %q must be 1 to 32 characters: lower-case letters, digits and '_', starting with a letter", k)
		case isBuiltin[k]:
			return invalid(param, "%q is a built-in kind", k)
		case c.p.Detectors[k] == "":
			return invalid(param, "the pattern is empty")
		}
		c.custom = append(c.custom, k)
	}
	var err error
	if len(c.custom) == 0 {
		c.set, err = builtinSet()
	} else {
		c.set, err = pii.New(c.p.Detectors)
	}
	if err != nil {
		var pe *pii.PatternError
		if errors.As(err, &pe) {
			return invalid("detectors."+pe.Kind, "%v", pe.Err)
		}
		return fmt.Errorf("policy: detectors: %w", err)
	}
	return nil
}

// knows reports whether kind is one of the policy's detectors.
func (c *Compiled) knows(kind string) bool {
	return isBuiltin[kind] || slices.Contains(c.custom, kind)
}

func (c *Compiled) compileRule(env *cel.Env, param string, r Rule) (cr *rule, err error) {
	switch r.Stage {
	case StageInput, StageOutput:
	case "":
		return nil, invalid(param+".stage", "is required: input or output")
	default:
		return nil, invalid(param+".stage", "unknown stage %q: use input or output", r.Stage)
	}
	switch r.Action {
	case ActionAllow, ActionDeny, ActionRedact, ActionFlag:
	case "":
		return nil, invalid(param+".action", "is required: allow, deny, redact or flag")
	default:
		return nil, invalid(param+".action", "unknown action %q: use allow, deny, redact or flag", r.Action)
	}
	if err := checkText(param+".reason", r.Reason, 1000, false); err != nil {
		return nil, err
	}
	cr = &rule{Rule: r}
	if len(r.Redact) > 0 && r.Action != ActionRedact {
		return nil, invalid(param+".redact", "only a redact rule lists kinds to redact")
	}
	if r.Action == ActionRedact {
		for j, k := range r.Redact {
			if !c.knows(k) {
				return nil, invalid(fmt.Sprintf("%s.redact[%d]", param, j), "unknown PII kind %q: the policy's detectors are %s", k, strings.Join(c.set.Kinds(), ", "))
			}
		}
		cr.kinds = sortedUnique(slices.Clone(r.Redact))
		if len(cr.kinds) == 0 {
			cr.kinds = c.set.Kinds()
		}
	}

	param += ".when"
	if strings.TrimSpace(r.When) == "" {
		return nil, invalid(param, "is required: a CEL expression of type bool (\"true\" always matches)")
	}
	if len(r.When) > MaxWhenLen {
		return nil, invalid(param, "must be at most %d bytes", MaxWhenLen)
	}
	// cel-go is not expected to panic on any input, but a rule comes from
	// an API client: a panic must be a validation error, not a crash.
	defer func() {
		if v := recover(); v != nil {
			cr, err = nil, invalid(param, "the expression could not be compiled (%v)", v)
		}
	}()
	ast, iss := env.Compile(r.When)
	if iss.Err() != nil {
		return nil, invalid(param, "%s", CELMessage(iss))
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) {
		return nil, invalid(param, "the expression is of type %s; a condition must be a bool", t)
	}
	native := ast.NativeRep()
	refs := scan(native.Expr())
	at := func(id int64) string {
		loc := native.SourceInfo().GetStartLocation(id)
		return fmt.Sprintf("%d:%d", loc.Line(), loc.Column()+1)
	}
	if r.Stage == StageInput && refs.outputAt != 0 {
		return nil, invalid(param, "%s: output is always empty at the input stage; use it in an output rule", at(refs.outputAt))
	}
	for _, k := range sortedKeys(refs.kinds) {
		if !c.knows(k) {
			return nil, invalid(param, "%s: unknown PII kind %q: the policy's detectors are %s", at(refs.kinds[k]), k, strings.Join(c.set.Kinds(), ", "))
		}
	}
	if refs.pii {
		cr.readsPII, cr.piiAll = true, refs.piiAll
		if !refs.piiAll {
			cr.piiKinds = sortedKeys(refs.kinds)
		}
	}
	// OptOptimize folds constants and compiles literal regexes once;
	// CostLimit bounds each evaluation (see MaxRuleCost).
	cr.prg, err = env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(MaxRuleCost))
	if err != nil {
		return nil, invalid(param, "%v", err)
	}
	// Tracking the cost of an evaluation costs about half a microsecond
	// and a dozen allocations. It cannot change the outcome when cel-go's
	// static estimate, with every string no longer than some size, stays
	// within the limit: such a rule also gets an untracked program, run
	// when the request's strings are that short.
	for _, size := range []uint64{1 << 20, 1 << 18, 1 << 16, 1 << 14, 1 << 12} {
		est, err := env.EstimateCost(ast, sizeBounds{str: size})
		if err == nil && est.Max <= MaxRuleCost {
			if cr.fast, err = env.Program(ast, cel.EvalOptions(cel.OptOptimize)); err == nil {
				cr.fastUpTo = int(size)
			}
			break
		}
	}
	return cr, nil
}

// maxTags is the most model tags an untracked program is run with.
const maxTags = 64

// sizeBounds bounds the sizes of the variables for the cost estimate of
// a rule: str bytes for every string (a string's CEL size is its count of
// code points, never more than its bytes), maxTags model tags, and the pii
// map has at most every kind a policy can have, with names of at most 32
// bytes (as Compile requires).
type sizeBounds struct{ str uint64 }

// EstimateSize implements cost.Estimator.
func (b sizeBounds) EstimateSize(n cost.AstNode) *cost.SizeEstimate {
	path := n.Path()
	if len(path) == 0 {
		return nil
	}
	switch path[0] {
	case varMaxTokens:
		return nil
	case varModelTags:
		if len(path) == 1 {
			return &cost.SizeEstimate{Max: maxTags}
		}
		return &cost.SizeEstimate{Max: b.str}
	case varPII:
		if len(path) == 1 {
			return &cost.SizeEstimate{Max: uint64(len(pii.Builtin()) + MaxDetectors)}
		}
		if path[1] == "@keys" {
			return &cost.SizeEstimate{Max: 32}
		}
		return nil
	}
	if len(path) == 1 {
		return &cost.SizeEstimate{Max: b.str}
	}
	return nil
}

// EstimateCallCost implements cost.Estimator: the standard estimates.
func (sizeBounds) EstimateCallCost(function, overloadID string, target *cost.AstNode, args []cost.AstNode) *cost.CallEstimate {
	return nil
}

// CELMessage is cel-go's errors as "line:column: message", joined by "; ".
func CELMessage(iss *cel.Issues) string {
	var b strings.Builder
	for i, e := range iss.Errors() {
		if i > 0 {
			b.WriteString("; ")
		}
		if e.Location != nil && e.Location.Line() > 0 {
			fmt.Fprintf(&b, "%d:%d: ", e.Location.Line(), e.Location.Column()+1)
		}
		b.WriteString(e.Message)
	}
	return b.String()
}

// refs is what a condition reads: output (outputAt is the id of the
// first reference, 0 if none), pii, and which kinds of pii by name.
type refs struct {
	outputAt int64
	pii      bool
	// piiAll: pii is used other than as "kind" in pii, pii["kind"],
	// pii.kind or has(pii.kind), so the kinds it depends on are unknown.
	piiAll bool
	kinds  map[string]int64 // kind → id of the expression naming it
}

// scan walks a checked expression for the references to output and pii.
// Comprehension variables shadow the declared ones (in their loop and
// result), so `model_tags.exists(output, …)` does not read output.
func scan(e celast.Expr) refs {
	var r refs
	var walk func(e celast.Expr, shadow []string)
	isVar := func(e celast.Expr, name string, shadow []string) bool {
		return e.Kind() == celast.IdentKind && e.AsIdent() == name && !slices.Contains(shadow, name)
	}
	literal := func(e celast.Expr) (string, bool) {
		if e.Kind() != celast.LiteralKind {
			return "", false
		}
		s, ok := e.AsLiteral().Value().(string)
		return s, ok
	}
	named := func(kind string, id int64) {
		r.pii = true
		if r.kinds == nil {
			r.kinds = map[string]int64{}
		}
		if _, ok := r.kinds[kind]; !ok {
			r.kinds[kind] = id
		}
	}
	walk = func(e celast.Expr, shadow []string) {
		switch e.Kind() {
		case celast.IdentKind:
			switch {
			case isVar(e, varOutput, shadow):
				if r.outputAt == 0 {
					r.outputAt = e.ID()
				}
			case isVar(e, varPII, shadow):
				r.pii, r.piiAll = true, true
			}
		case celast.SelectKind:
			s := e.AsSelect()
			if isVar(s.Operand(), varPII, shadow) {
				named(s.FieldName(), e.ID())
				return
			}
			walk(s.Operand(), shadow)
		case celast.CallKind:
			c := e.AsCall()
			args := c.Args()
			if len(args) == 2 && !c.IsMemberFunction() {
				if k, ok := literal(args[0]); ok && c.FunctionName() == operators.In && isVar(args[1], varPII, shadow) {
					named(k, args[0].ID())
					return
				}
				if k, ok := literal(args[1]); ok && c.FunctionName() == operators.Index && isVar(args[0], varPII, shadow) {
					named(k, args[1].ID())
					return
				}
			}
			if c.IsMemberFunction() {
				walk(c.Target(), shadow)
			}
			for _, a := range args {
				walk(a, shadow)
			}
		case celast.ComprehensionKind:
			c := e.AsComprehension()
			walk(c.IterRange(), shadow)
			walk(c.AccuInit(), shadow)
			inner := append(slices.Clip(shadow), c.IterVar(), c.AccuVar())
			if c.HasIterVar2() {
				inner = append(inner, c.IterVar2())
			}
			walk(c.LoopCondition(), inner)
			walk(c.LoopStep(), inner)
			walk(c.Result(), append(slices.Clip(shadow), c.AccuVar()))
		case celast.ListKind:
			for _, el := range e.AsList().Elements() {
				walk(el, shadow)
			}
		case celast.MapKind:
			for _, en := range e.AsMap().Entries() {
				m := en.AsMapEntry()
				walk(m.Key(), shadow)
				walk(m.Value(), shadow)
			}
		case celast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				walk(f.AsStructField().Value(), shadow)
			}
		}
	}
	walk(e, nil)
	return r
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
