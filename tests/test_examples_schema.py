"""Every operator object in examples/ against the CRDs generated from the operator's Go markers
(tests/cluster/crds, tools/operatordata/crds.py), without an API server: the structural schema's
types, enums, bounds, patterns and required fields (jsonschema), and no field the schema does not
name (kubectl apply's strict field validation refuses one; the cluster tier loads the same files
into the real kube-apiserver: tests/cluster/test_harness.py). The saved pre-schema snapshot
(tests/load/old_operator) is refused for each of the old spellings, so the check can fail."""

import glob
import json
import os

import jsonschema
import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRDS = os.path.join(ROOT, "tests", "cluster", "crds")
EXAMPLES = [os.path.join(ROOT, "examples", "cluster.json")] + \
    sorted(glob.glob(os.path.join(ROOT, "examples", "*", "*.yaml")))
OLD = os.path.join(ROOT, "tests", "load", "old_operator", "cluster-before-schema.json")


def _strict(schema):
    """The schema with unknown fields refused where the structural schema would prune them."""
    if isinstance(schema, dict):
        schema = {k: _strict(v) for k, v in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema \
                and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    return schema


def _schemas():
    found = {}
    for path in glob.glob(os.path.join(CRDS, "*.yaml")):
        with open(path, encoding="utf-8") as f:
            crd = yaml.safe_load(f)
        for v in crd["spec"]["versions"]:
            found[(f"{crd['spec']['group']}/{v['name']}", crd["spec"]["names"]["kind"])] = \
                _strict(v["schema"]["openAPIV3Schema"])
    return found


SCHEMAS = _schemas()


def _objects(path):
    with open(path, encoding="utf-8") as f:
        docs = [json.load(f)] if path.endswith(".json") else [d for d in yaml.safe_load_all(f) if d]
    for d in docs:
        yield from (d["items"] if d.get("kind") == "List" else [d])


def _errors(obj):
    schema = SCHEMAS[(obj["apiVersion"], obj["kind"])]
    # metadata is the API server's (type: object here): only spec and status are the CRD's own
    body = {k: v for k, v in obj.items() if k != "metadata"}
    return sorted(f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}"
                  for e in jsonschema.Draft7Validator(schema).iter_errors(body))


def test_every_operator_kind_has_its_generated_crd():
    assert {k for _, k in SCHEMAS} >= {"ModelDeployment", "KVCachePoolBinding", "KVCachePool", "Setting"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_example_object_is_one_the_crds_accept(path):
    checked = 0
    for obj in _objects(path):
        if (obj.get("apiVersion"), obj.get("kind")) in SCHEMAS:
            assert _errors(obj) == [], (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
            checked += 1
    assert checked >= 5


def test_the_pre_schema_snapshot_is_refused_for_each_old_spelling():
    errors = [e for obj in _objects(OLD) if (obj.get("apiVersion"), obj.get("kind")) in SCHEMAS
              for e in _errors(obj)]
    text = "\n".join(errors)
    assert "spec.engine.name: 'vLLM' is not one of" in text
    assert "'Prefill' is not one of" in text and "'Decode' is not one of" in text
    assert "spec.router: 'name' is a required property" in text
    assert "'instanceType' is a required property" in text
    assert "spec: 'quotaCeiling' is a required property" in text


def test_the_test_builders_write_what_the_crds_accept():
    """tests/objects.py, which the cluster tier applies to the real API server: its defaults are
    the accepted spellings (a test that wants an old one passes it)."""
    import objects as o

    built = [o.deployment("d"), o.deployment("pd", engine="sglang", roles=[o.role("p", kind="prefill"),
                                                                          o.role("d", kind="decode")]),
             o.binding("b", "fp8", used_by=("d",)), o.binding("c", "bf16", domain="other"), o.pool(),
             o.setting("true")]
    for obj in built:
        assert _errors(obj) == [], obj["kind"]


def test_the_backend_builders_write_what_the_crd_accepts():
    import objects as o

    for obj in (o.backend(), o.backend("m", multi_tenancy=False), o.backend("t", multi_tenancy=True)):
        assert _errors(obj) == [], obj["spec"]
