"""The cluster tier's CRDs are the ones tools/operatordata/crds.py generates from the facts it
extracted from the operator's Go types (tools/operatordata/markers.json), and those facts name
the Go file and commit they were read from."""

import importlib.util
import json
import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRD_DIR = os.path.join(ROOT, "tests", "cluster", "crds")
MARKERS = os.path.join(ROOT, "tools", "operatordata", "markers.json")


def _crds():
    spec = importlib.util.spec_from_file_location(
        "kvcache_crds_tool", os.path.join(ROOT, "tools", "operatordata", "crds.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


crds = _crds()


def _markers():
    with open(MARKERS) as f:
        return json.load(f)


def test_checked_in_crds_are_the_generated_ones():
    rendered = crds.render(_markers())
    assert len(rendered) == 5
    for name, text in rendered.items():
        with open(os.path.join(CRD_DIR, name)) as f:
            assert f.read() == text, f"{name} differs: rerun tools/operatordata/crds.py generate"


def test_every_go_file_names_its_commit():
    data = _markers()
    assert data["files"]
    for f in data["files"]:
        assert f["repo"] == "gpustack/gpustack-operator"
        assert re.fullmatch(r"[0-9a-f]{40}", f["commit"]), f
        assert f["path"].startswith("api/") and f["path"].endswith(".go")
    known = {f["path"] for f in data["files"]}
    assert {t["file"] for t in data["types"].values()} <= known


def test_generated_rules_are_the_go_markers():
    """The rules issue 50 names, read back from the generated ModelDeployment and Binding."""
    with open(os.path.join(CRD_DIR, "worker.gpustack.ai_modeldeployments.yaml")) as f:
        md = yaml.safe_load(f)
    v = md["spec"]["versions"][0]
    spec = v["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["engine"]["properties"]["name"]["enum"] == ["vllm", "sglang"]
    role = spec["properties"]["roles"]["items"]
    kind = role["properties"]["kind"]
    assert (kind["enum"], kind["default"]) == (["server", "prefill", "decode"], "server")
    rep = role["properties"]["replicas"]
    assert (rep["minimum"], rep["maximum"], rep["default"]) == (1, 1024, 1)
    assert role["required"] == ["name", "instanceType"]
    router = spec["properties"]["router"]
    assert router["required"] == ["name"]
    assert router["properties"]["name"]["enum"] == ["llm-d-router", "vllm-router",
                                                    "sglang-gateway"]
    assert [c["name"] for c in v["additionalPrinterColumns"]] == ["Engine", "Phase", "Endpoint"]
    assert md["spec"]["names"]["shortNames"] == ["md"]
    assert md["spec"]["names"]["categories"] == ["gpustack"]
    with open(os.path.join(CRD_DIR, "worker.gpustack.ai_kvcachepoolbindings.yaml")) as f:
        b = yaml.safe_load(f)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    bspec = b["properties"]["spec"]
    assert bspec["required"] == ["poolRef", "domain", "quotaCeiling"]
    dom = bspec["properties"]["domain"]
    assert dom["required"] == ["name", "blockSize", "dtype"]
    assert (dom["properties"]["name"]["maxLength"], dom["properties"]["dtype"]["maxLength"]) == (
        63, 32)


GO = '''package v1alpha1

import (
\tcore "k8s.io/api/core/v1"
\tgpustack "gpustack.ai/gpustack/api/v1"
)

// Thing is a test type.
//
// +k8s:crd-gen:resource:scope="Cluster",shortName=["th"],subResources=["status"]
// +k8s:crd-gen:printcolumn:name="Mode",type="string",jsonPath=".spec.mode"
type Thing struct {
\tmeta.TypeMeta `json:",inline"`
\tSpec ThingSpec `json:"spec" protobuf:"bytes,2,name=spec"`
}

// ThingSpec is the spec.
type ThingSpec struct {
\t// Mode picks one.
\t//
\t// second paragraph, not kept
\t// +k8s:validation:enum=["a","b"]
\t// +k8s:validation:default="a"
\tMode Mode `json:"mode,omitempty"`

\t// a comment parted from the field by a blank line

\tRefs []core.LocalObjectReference `json:"refs,omitempty"`
\tConds []gpustack.Condition `json:"conds"`
\tHidden string `json:"-"`
}

// +enum
type Mode string
'''


def test_extract_reads_declarations_markers_and_first_doc_lines():
    types, pkg = crds.extract_file(GO, "api/worker/v1alpha1")
    thing = types["api/worker/v1alpha1.Thing"]
    assert thing["markers"][0].startswith("+k8s:crd-gen:resource:")
    spec = types["api/worker/v1alpha1.ThingSpec"]["fields"]
    assert [f["json"] for f in spec] == ["mode", "refs", "conds"]
    mode = spec[0]
    assert mode["doc"] == "Mode picks one."
    assert mode["markers"] == ['+k8s:validation:enum=["a","b"]', '+k8s:validation:default="a"']
    assert mode["type"] == "api/worker/v1alpha1.Mode" and mode["omitempty"]
    assert spec[1]["doc"] == "" and spec[1]["type"] == "[]k8s.io/api/core/v1.LocalObjectReference"
    assert spec[2]["type"] == "[]api/v1.Condition" and not spec[2]["omitempty"]
    assert types["api/worker/v1alpha1.Mode"] == {
        "kind": "named", "doc": "", "markers": ["+enum"], "underlying": "string"}
