package workflow

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/sovereign-ai/sovereign/internal/policy"
)

// Expressions are CEL, the language of the policies (linear time, a cost
// limit); templates are Jinja (gonja), which prompt writers know. Both see
// the same variables: input (the run's input), steps (by step id: output
// and status of the steps run so far) and run (id, workflow_id, version).

// MaxExprCost bounds one evaluation of an expression (CEL's cost units).
const MaxExprCost = 1_000_000

// MaxRendered bounds a rendered template.
const MaxRendered = 1 << 20

var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("input", cel.DynType),
		cel.Variable("steps", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("run", cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(), ext.Lists(), ext.Encoders(), ext.Math(),
		cel.ASTValidators(cel.ValidateComprehensionNestingLimit(2)),
		cel.ParserExpressionSizeLimit(4096),
	)
})

// compileExpr type-checks a CEL expression; wantBool requires a bool
// (conditions).
func compileExpr(src string, _ []Step, wantBool bool) (cel.Program, error) {
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, errors.New(policy.CELMessage(iss))
	}
	if wantBool && ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("the expression gives %s; a condition gives a bool", ast.OutputType())
	}
	return env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(MaxExprCost))
}

// evalExpr evaluates src over vars and returns a JSON-like Go value.
func evalExpr(src string, vars map[string]any) (any, error) {
	prg, err := compileExpr(src, nil, false)
	if err != nil {
		return nil, err
	}
	out, _, err := prg.Eval(vars)
	if err != nil {
		return nil, err
	}
	return native(out)
}

// evalBool evaluates a condition.
func evalBool(src string, vars map[string]any) (bool, error) {
	v, err := evalExpr(src, vars)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %T, not a bool", v)
	}
	return b, nil
}

// native turns a CEL value into plain Go (maps, lists, strings, numbers,
// bools, nil).
func native(v ref.Val) (any, error) {
	if v == types.NullValue {
		return nil, nil
	}
	x, err := v.ConvertToNative(jsonValueType)
	if err != nil {
		return nil, fmt.Errorf("the expression's value (%s) is not JSON", v.Type().TypeName())
	}
	return x.(*structpb.Value).AsInterface(), nil
}

var jsonValueType = reflect.TypeOf(&structpb.Value{})

// The template engine: gonja's Python-compatible Jinja with its filters,
// tests and control structures, but nothing that reads files — include,
// import, from and extends are refused, and a template loads from memory.
var templateEnv = sync.OnceValue(func() *exec.Environment {
	cs := exec.NewControlStructureSet(map[string]parser.ControlStructureParser{})
	cs.Update(builtins.ControlStructures)
	for _, name := range []string{"include", "import", "from", "extends"} {
		cs.Replace(name, refuse(name))
	}
	return &exec.Environment{
		Context:           exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables),
		Filters:           builtins.Filters,
		Tests:             builtins.Tests,
		ControlStructures: cs,
		Methods:           builtins.Methods,
	}
})

func refuse(name string) parser.ControlStructureParser {
	return func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
		return nil, fmt.Errorf("{%% %s %%} is not available in workflow templates", name)
	}
}

func init() { gonja.SetLoggerOutput(discard{}) }

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// compileTemplate parses a Jinja template.
func compileTemplate(src string) (*exec.Template, error) {
	loader, err := loaders.NewMemoryLoader(map[string]string{"/t": src})
	if err != nil {
		return nil, err
	}
	t, err := exec.NewTemplate("/t", config.New(), loader, templateEnv())
	if err != nil {
		// gonja names the template by its source: the message would
		// repeat the whole template.
		return nil, errors.New(strings.TrimPrefix(err.Error(), "failed to parse template '"+src+"': "))
	}
	return t, nil
}

// render renders a template over vars.
func render(src string, vars map[string]any) (string, error) {
	t, err := compileTemplate(src)
	if err != nil {
		return "", err
	}
	out, err := t.ExecuteToString(exec.NewContext(vars))
	if err != nil {
		return "", err
	}
	if len(out) > MaxRendered {
		return "", fmt.Errorf("the template rendered %d bytes (at most %d)", len(out), MaxRendered)
	}
	return out, nil
}

// renderValue renders every string of v as a template.
func renderValue(v any, vars map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		return render(x, vars)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := renderValue(e, vars)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := renderValue(e, vars)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	}
	return v, nil
}
