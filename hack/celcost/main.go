// celcost: the cost of a generated ValidatingAdmissionPolicy's CEL as the Kubernetes CEL library
// of the pinned release computes it (k8s.io/apiserver pkg/cel/environment and pkg/cel/library):
// each expression's static estimate (cel-go EstimateCost with Kubernetes' CostEstimator) and the
// actual cost of evaluating the policy on one sample request (cel.CostTracking), variables
// evaluated once each, in order, as the admission plugin does lazily.
//
// usage: celcost POLICY.json REQUEST.json  (REQUEST: {"object":..., "oldObject":..., "request":...})
//        celcost typecheck KUBECONFIG POLICY.json  (typecheck.go)
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
)

type named struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

type policy struct {
	Spec struct {
		MatchConditions []named `json:"matchConditions"`
		Variables       []named `json:"variables"`
		Validations     []struct {
			Expression        string `json:"expression"`
			MessageExpression string `json:"messageExpression"`
		} `json:"validations"`
	} `json:"spec"`
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == "typecheck" {
		typecheck(os.Args[2], os.Args[3])
		return
	}
	var pol policy
	var input map[string]any
	raw, err := os.ReadFile(os.Args[1])
	must(err)
	must(json.Unmarshal(raw, &pol))
	raw, err = os.ReadFile(os.Args[2])
	must(err)
	must(json.Unmarshal(raw, &input))

	envSet := environment.MustBaseEnvSet(version.MajorMinor(1, 37))
	base, err := envSet.Env(environment.NewExpressions)
	must(err)
	env, err := base.Extend(
		cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType), cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)))
	must(err)

	vars := map[string]ref.Val{}
	activation := map[string]any{"object": input["object"], "oldObject": input["oldObject"],
		"request": input["request"]}
	estimator := &library.CostEstimator{}
	var total uint64
	run := func(kind, name, expr string) ref.Val {
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			must(fmt.Errorf("%s %s: %v", kind, name, iss.Err()))
		}
		est, err := env.EstimateCost(ast, estimator)
		must(err)
		prg, err := env.Program(ast, cel.CostTracking(estimator))
		must(err)
		activation["variables"] = types.NewStringInterfaceMap(types.DefaultTypeAdapter, toAny(vars))
		out, det, err := prg.Eval(activation)
		actual := uint64(0)
		if det != nil && det.ActualCost() != nil {
			actual = *det.ActualCost()
		}
		total += actual
		fmt.Printf("%s\t%s\testimated %d..%d\tactual %d\tresult %v\n", kind, name, est.Min, est.Max, actual,
			short(out, err))
		return out
	}
	for _, c := range pol.Spec.MatchConditions {
		run("matchCondition", c.Name, c.Expression)
	}
	for _, v := range pol.Spec.Variables {
		vars[v.Name] = run("variable", v.Name, v.Expression)
	}
	for i, v := range pol.Spec.Validations {
		out := run("validation", fmt.Sprint(i), v.Expression)
		if out == types.False {
			run("messageExpression", fmt.Sprint(i), v.MessageExpression)
		}
	}
	fmt.Printf("total\tactual %d\n", total)
}

func toAny(vars map[string]ref.Val) map[string]any {
	out := map[string]any{}
	for k, v := range vars {
		out[k] = v
	}
	return out
}

func short(v ref.Val, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	s := fmt.Sprint(v.Value())
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return s
}
