package main

// typecheck: what kube-controller-manager's ValidatingAdmissionPolicy status controller would write
// into status.typeChecking, computed by the same code (k8s.io/apiserver v0.37.2
// pkg/admission/plugin/policy/validating TypeChecker, with the schema resolver that reads the
// API server's OpenAPI v3, as cmd/kube-controller-manager/app/validatingadmissionpolicystatus.go
// of kubernetes v1.37.2 builds it for CRDs), against a running API server's CRDs.
//
// usage: celcost typecheck KUBECONFIG POLICY.json   prints the expression warnings as JSON

import (
	"encoding/json"
	"fmt"
	"os"

	v1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

func typecheck(kubeconfig, policyFile string) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	must(err)
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	must(err)
	checker := &validating.TypeChecker{
		SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: disco},
		RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)),
	}
	raw, err := os.ReadFile(policyFile)
	must(err)
	var policy v1.ValidatingAdmissionPolicy
	must(json.Unmarshal(raw, &policy))
	warnings := checker.Check(&policy)
	if warnings == nil {
		warnings = []v1.ExpressionWarning{}
	}
	out, err := json.Marshal(warnings)
	must(err)
	fmt.Println(string(out))
}
