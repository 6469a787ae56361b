package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"github.com/sovereign-ai/sovereign/internal/policy/pii"
)

// Set is the policies in force, compiled: what the request path
// evaluates. It is immutable and safe for concurrent use; a change to the
// policies builds a new Set.
type Set struct {
	deployment group
	teams      map[string]*group
	keys       map[string]*group
	builtin    *pii.Set
	// merged caches the detector sets Detectors builds when the redact
	// rules of several policies with custom detectors apply at once.
	merged sync.Map // string (policy ids) → *pii.Set
}

// group is the policies of one scope (and scope id), in evaluation order.
type group struct {
	list []*Compiled
	// has says whether any of them has rules of each stage.
	has [2]bool
}

func (g *group) add(c *Compiled) {
	g.list = append(g.list, c)
	for s := range g.has {
		g.has[s] = g.has[s] || len(c.stages[s]) > 0
	}
}

// NewSet compiles the enabled policies. They are evaluated deployment
// policies first, then team policies, then key policies; within a scope in
// the order given (the store lists oldest first). Errors: a policy that
// does not compile (the error names it and wraps its 400, see invalid).
func NewSet(policies []Policy) (*Set, error) {
	s, err := newSet()
	if err != nil {
		return nil, err
	}
	for _, p := range policies {
		if !p.Enabled {
			continue
		}
		c, err := Compile(p)
		if err != nil {
			return nil, fmt.Errorf("policy %s (%q): %w", p.ID, p.Name, err)
		}
		switch p.Scope {
		case ScopeDeployment:
			s.deployment.add(c)
		case ScopeTeam:
			scoped(s.teams, p.ScopeID).add(c)
		case ScopeKey:
			scoped(s.keys, p.ScopeID).add(c)
		}
	}
	return s, nil
}

func newSet() (*Set, error) {
	builtin, err := builtinSet()
	if err != nil {
		return nil, fmt.Errorf("policy: detectors: %w", err)
	}
	return &Set{teams: map[string]*group{}, keys: map[string]*group{}, builtin: builtin}, nil
}

// scoped returns m's group for id, adding it if missing.
func scoped(m map[string]*group, id string) *group {
	g := m[id]
	if g == nil {
		g = &group{}
		m[id] = g
	}
	return g
}

// Test evaluates p alone on in, whether it is enabled or not and whatever
// its scope (a dry run of a possibly unsaved policy). Errors: p does not
// compile (a 400 naming the field, see invalid).
func Test(p Policy, in Input) (Outcome, error) {
	c, err := Compile(p)
	if err != nil {
		return Outcome{}, err
	}
	s, err := newSet()
	if err != nil {
		return Outcome{}, err
	}
	s.deployment.add(c)
	return s.Evaluate(in), nil
}

// groups are the groups that apply to a request of team and key, in
// evaluation order.
func (s *Set) groups(team, key string) [3]*group {
	gs := [3]*group{&s.deployment}
	if team != "" {
		gs[1] = s.teams[team]
	}
	if key != "" {
		gs[2] = s.keys[key]
	}
	return gs
}

// Applies reports whether any enabled rule of stage applies to a request
// of team and key; when it does not, Evaluate would return an empty
// Outcome and need not be called. It does not allocate.
func (s *Set) Applies(stage, team, key string) bool {
	if s == nil || (stage != StageInput && stage != StageOutput) {
		return false
	}
	si := stageIndex(stage)
	if s.deployment.has[si] {
		return true
	}
	if g := s.teams[team]; g != nil && team != "" && g.has[si] {
		return true
	}
	g := s.keys[key]
	return g != nil && key != "" && g.has[si]
}

// Detectors returns the detectors and kinds that the output-stage redact
// rules applying to a request of team and key redact: what a stream
// redactor needs to redact a streamed answer as it goes (nil, nil when no
// such rule applies). The kinds are those of every such rule whatever its
// condition, which can only be evaluated on the whole answer. When the
// rules of several policies with custom detectors apply, their detectors
// are merged; a custom kind two of them define is the first one's.
func (s *Set) Detectors(team, key string) (*pii.Set, []string) {
	if s == nil {
		return nil, nil
	}
	var kinds []string
	var customs []*Compiled
	for _, g := range s.groups(team, key) {
		if g == nil {
			continue
		}
		for _, c := range g.list {
			uses := false
			for _, r := range c.stages[1] {
				if r.Action != ActionRedact {
					continue
				}
				kinds = append(kinds, r.kinds...)
				for _, k := range r.kinds {
					uses = uses || !isBuiltin[k]
				}
			}
			if uses {
				customs = append(customs, c)
			}
		}
	}
	if len(kinds) == 0 {
		return nil, nil
	}
	kinds = sortedUnique(kinds)
	switch len(customs) {
	case 0:
		return s.builtin, kinds
	case 1:
		return customs[0].set, kinds
	}
	ids := make([]string, len(customs))
	for i, c := range customs {
		ids[i] = c.p.ID
	}
	cacheKey := strings.Join(ids, ",")
	if set, ok := s.merged.Load(cacheKey); ok {
		return set.(*pii.Set), kinds
	}
	merged := map[string]string{}
	for _, c := range customs {
		for k, re := range c.p.Detectors {
			if _, ok := merged[k]; !ok {
				merged[k] = re
			}
		}
	}
	set, err := pii.New(merged)
	if err != nil {
		// Every pattern compiled in its own policy; merging cannot break
		// one. Fall back to the first policy's detectors if it somehow does.
		return customs[0].set, kinds
	}
	s.merged.Store(cacheKey, set)
	return set, kinds
}

// Evaluate runs the rules of in.Stage that apply to a request of in.Team
// and in.Key: deployment policies, then the team's, then the key's, each
// policy's rules in order. In a policy, a matching allow rule skips the
// policy's remaining rules (an exception to them); a matching deny stops
// everything and is Outcome.Deny; a redact rule adds the findings of its
// kinds to Outcome.Redact; a flag is only recorded. Every rule sees the
// text as received (a redaction applies after evaluation). PII detection
// runs only if a rule that is reached needs it (reads pii or redacts), and
// then once per evaluation (the built-in detectors) and once per policy
// with custom detectors (those).
//
// A rule that fails to evaluate does not match, except when it reaches
// MaxRuleCost: then a deny, redact or flag rule matches (fail closed; its
// decision's reason says so) and an allow rule does not.
func (s *Set) Evaluate(in Input) Outcome {
	var out Outcome
	if !s.Applies(in.Stage, in.Team, in.Key) {
		return out
	}
	si := stageIndex(in.Stage)
	ev := evaluations.Get().(*evaluation)
	defer ev.release()
	ev.set, ev.in, ev.input, ev.maxLen = s, in, in.Input, -1
	if in.Stage == StageInput {
		if ev.input == "" {
			ev.input = in.Text
		}
	} else {
		ev.output = in.Text
	}
	for _, g := range s.groups(in.Team, in.Key) {
		if g == nil || !g.has[si] {
			continue
		}
	policies:
		for _, c := range g.list {
			if len(c.stages[si]) == 0 {
				continue
			}
			ev.enter(c)
			for _, r := range c.stages[si] {
				match, note := ev.run(r)
				if !match {
					continue
				}
				var spans []Span
				switch r.Action {
				case ActionAllow:
					continue policies
				case ActionRedact:
					fs := ev.findings()
					for _, f := range fs {
						if slices.Contains(r.kinds, f.Kind) {
							out.Redact = append(out.Redact, f)
							spans = append(spans, Span{Kind: f.Kind, Start: f.Start, End: f.End})
						}
					}
					out.RedactKinds = append(out.RedactKinds, r.kinds...)
				default:
					if r.readsPII {
						for _, f := range ev.findings() {
							if r.piiAll || slices.Contains(r.piiKinds, f.Kind) {
								spans = append(spans, Span{Kind: f.Kind, Start: f.Start, End: f.End})
							}
						}
					}
				}
				out.Decisions = append(out.Decisions, ev.decision(c, r, spans, note))
				if r.Action == ActionDeny {
					out.Deny = &out.Decisions[len(out.Decisions)-1]
					return finish(out)
				}
			}
		}
	}
	return finish(out)
}

// finish sorts and merges the redactions.
func finish(out Outcome) Outcome {
	if len(out.RedactKinds) > 1 {
		out.RedactKinds = sortedUnique(out.RedactKinds)
	}
	out.Redact = mergeSpans(out.Redact)
	return out
}

// mergeSpans sorts fs by offset and merges overlapping findings (the
// merged span keeps the first one's kind).
func mergeSpans(fs []pii.Finding) []pii.Finding {
	if len(fs) < 2 {
		return fs
	}
	slices.SortFunc(fs, func(a, b pii.Finding) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(b.End, a.End), strings.Compare(a.Kind, b.Kind))
	})
	out := fs[:1]
	for _, f := range fs[1:] {
		last := &out[len(out)-1]
		if f.Start < last.End {
			last.End = max(last.End, f.End)
			continue
		}
		out = append(out, f)
	}
	return out
}

// evaluation is one Evaluate's state, and the CEL activation its rules
// read their variables from: values are made when a rule first reads
// them, PII detection runs when a rule first needs it. Evaluations are
// pooled: the request path makes one per stage of every request.
type evaluation struct {
	set           *Set
	in            Input
	input, output string
	// vals are the variables' values once read, by their ix… index.
	vals [numVars]ref.Val
	// maxLen is the length of the longest string a rule can read (-1:
	// not measured yet).
	maxLen int

	// builtin are the findings of the built-in detectors in the text
	// (detected once), builtinMap their pii map.
	builtinDone bool
	builtin     []pii.Finding
	builtinMap  ref.Val

	// pol is the policy whose rules run; polFindings its findings
	// (built-in and custom) and polMap its pii map, made on first use.
	pol         *Compiled
	polDone     bool
	polFindings []pii.Finding
	polMap      ref.Val
}

var evaluations = sync.Pool{New: func() any { return new(evaluation) }}

// release returns ev to the pool, dropping what it refers to.
func (ev *evaluation) release() {
	*ev = evaluation{}
	evaluations.Put(ev)
}

// within reports whether every string a rule can read is at most n bytes
// long and there are at most maxTags model tags (see rule.fast).
func (ev *evaluation) within(n int) bool {
	if ev.maxLen < 0 {
		in := &ev.in
		ev.maxLen = max(len(in.Model), len(in.Backend), len(in.Team), len(in.Key), len(in.User), len(in.Route), len(in.Stage),
			len(ev.input), len(ev.output))
		if len(in.ModelTags) > maxTags {
			ev.maxLen = math.MaxInt
		}
		for _, t := range in.ModelTags {
			ev.maxLen = max(ev.maxLen, len(t))
		}
	}
	return ev.maxLen <= n
}

func (ev *evaluation) enter(c *Compiled) {
	ev.pol, ev.polDone, ev.polFindings, ev.polMap = c, false, nil, nil
}

// findings are the current policy's findings in the text, sorted by
// offset (a custom finding may overlap a built-in one).
func (ev *evaluation) findings() []pii.Finding {
	if ev.polDone {
		return ev.polFindings
	}
	ev.polDone = true
	if !ev.builtinDone {
		ev.builtinDone = true
		ev.builtin = ev.set.builtin.Find(ev.in.Text)
	}
	ev.polFindings = ev.builtin
	if len(ev.pol.custom) > 0 {
		custom := ev.pol.set.Find(ev.in.Text, ev.pol.custom...)
		if len(custom) > 0 {
			fs := make([]pii.Finding, 0, len(ev.builtin)+len(custom))
			fs = append(append(fs, ev.builtin...), custom...)
			slices.SortStableFunc(fs, func(a, b pii.Finding) int { return cmp.Compare(a.Start, b.Start) })
			ev.polFindings = fs
		}
	}
	return ev.polFindings
}

// piiMap is the pii variable of the current policy.
func (ev *evaluation) piiMap() ref.Val {
	if ev.polMap != nil {
		return ev.polMap
	}
	fs := ev.findings()
	shared := len(ev.pol.custom) == 0
	if shared && ev.builtinMap != nil {
		ev.polMap = ev.builtinMap
		return ev.polMap
	}
	counts := make(map[string]int64, 4)
	for _, f := range fs {
		counts[f.Kind]++
	}
	ev.polMap = types.NewMap(types.DefaultTypeAdapter, counts)
	if shared {
		ev.builtinMap = ev.polMap
	}
	return ev.polMap
}

// Indexes of the variables in evaluation.vals.
const (
	ixModel = iota
	ixModelTags
	ixBackend
	ixTeam
	ixKey
	ixUser
	ixRoute
	ixMaxTokens
	ixStage
	ixInput
	ixOutput
	numVars
)

// ResolveName gives the CEL variables their values (interpreter.Activation).
func (ev *evaluation) ResolveName(name string) (any, bool) {
	if name == varPII {
		return ev.piiMap(), true
	}
	i := -1
	switch name {
	case varModel:
		i = ixModel
	case varModelTags:
		i = ixModelTags
	case varBackend:
		i = ixBackend
	case varTeam:
		i = ixTeam
	case varKey:
		i = ixKey
	case varUser:
		i = ixUser
	case varRoute:
		i = ixRoute
	case varMaxTokens:
		i = ixMaxTokens
	case varStage:
		i = ixStage
	case varInput:
		i = ixInput
	case varOutput:
		i = ixOutput
	default:
		return nil, false
	}
	if v := ev.vals[i]; v != nil {
		return v, true
	}
	in := &ev.in
	var v ref.Val
	switch i {
	case ixModel:
		v = types.String(in.Model)
	case ixModelTags:
		v = types.NewStringList(types.DefaultTypeAdapter, in.ModelTags)
	case ixBackend:
		v = types.String(in.Backend)
	case ixTeam:
		v = types.String(in.Team)
	case ixKey:
		v = types.String(in.Key)
	case ixUser:
		v = types.String(in.User)
	case ixRoute:
		v = types.String(in.Route)
	case ixMaxTokens:
		v = types.Int(in.MaxTokens)
	case ixStage:
		v = types.String(in.Stage)
	case ixInput:
		v = types.String(ev.input)
	case ixOutput:
		v = types.String(ev.output)
	}
	ev.vals[i] = v
	return v, true
}

// Parent is nil: the evaluation holds every variable.
func (ev *evaluation) Parent() interpreter.Activation { return nil }

// run evaluates r's condition: whether it matched, and a note for the
// decision's reason when it matched because it could not be evaluated.
func (ev *evaluation) run(r *rule) (bool, string) {
	prg := r.prg
	if r.fast != nil && ev.within(r.fastUpTo) {
		prg = r.fast
	}
	val, _, err := prg.Eval(ev)
	if err != nil {
		var cancelled interpreter.EvalCancelledError
		if errors.As(err, &cancelled) && r.Action != ActionAllow {
			return true, "the rule exceeded its cost limit and was taken to match"
		}
		return false, ""
	}
	return val == types.True, ""
}

// decision records a match of r.
func (ev *evaluation) decision(c *Compiled, r *rule, spans []Span, note string) Decision {
	now := time.Now()
	reason := r.Reason
	if note != "" {
		if reason != "" {
			reason += " (" + note + ")"
		} else {
			reason = note
		}
	}
	if spans == nil {
		spans = []Span{}
	}
	return Decision{
		ID:        NewDecisionID(now),
		Object:    ObjectDecision,
		CreatedAt: now.Unix(),
		RequestID: ev.in.RequestID,
		TeamID:    ev.in.Team,
		KeyID:     ev.in.Key,
		Model:     ev.in.Model,
		Route:     ev.in.Route,
		PolicyID:  c.p.ID,
		Policy:    c.p.Name,
		Rule:      r.Name,
		Stage:     ev.in.Stage,
		Action:    r.Action,
		Reason:    reason,
		Spans:     spans,
	}
}
