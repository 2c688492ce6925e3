"""-o policyreport and -o openreports, read as the API server reads them: every report is valid
against the published CRDs' own openAPIV3Schema (deploy/crds/, copied from
kubernetes-sigs/wg-policy-prototypes policy-report/crd/v1alpha2 at 7132d6fc and
openreports/reports-api config/crd at 93661369), with jsonschema and with a structural walk that
finds any field the API server would prune; a result fails exactly where the exit code does
(the same Document as -o sarif's errors); the summary counts the results; names and labels are
fixed per command; cluster text is escaped and deterministic."""

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

import objects as o
from runcli import kvcache as run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "cluster.json")
CRDS = ROOT / "deploy" / "crds"
EVIL = ("</x>\x00\x01\x1b]0;pwned\x07\r\nNEXT\tcol\x7f\x9b31m\u202eend\ufffe\uffff \"q\" \\")
FORMS = {"policyreport": ("wgpolicyk8s.io", "v1alpha2"), "openreports": ("openreports.io", "v1alpha1")}


def _schemas():
    """(group, version, kind) -> the served version's openAPIV3Schema, from the checked-in CRDs."""
    out = {}
    for path in sorted(CRDS.glob("*.yaml")):
        (crd,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
        for v in crd["spec"]["versions"]:
            out[(crd["spec"]["group"], v["name"], crd["spec"]["names"]["kind"])] = v["schema"]["openAPIV3Schema"]
    return out


SCHEMAS = _schemas()


def pruned(schema, value, where="") -> list[str]:
    """Every field of `value` the API server would drop (not in the structural schema), and every
    type or enum it would refuse: metadata is the API server's own (ObjectMeta), not the CRD's."""
    problems = []
    kind = schema.get("type")
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int}
    if kind in types and (not isinstance(value, types[kind]) or (kind == "integer" and isinstance(value, bool))):
        return [f"{where}: not {kind}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: {value!r} not in {schema['enum']}")
    if kind == "object":
        props = schema.get("properties")
        for key in schema.get("required", ()):
            if key not in value:
                problems.append(f"{where}.{key}: required")
        for key, item in value.items():
            if where == "" and key == "metadata":
                continue
            if props is not None and key in props:
                problems += pruned(props[key], item, f"{where}.{key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                problems += pruned(schema["additionalProperties"], item, f"{where}.{key}")
            else:
                problems.append(f"{where}.{key}: not in the schema (pruned)")
    if kind == "array":
        for n, item in enumerate(value):
            problems += pruned(schema["items"], item, f"{where}[{n}]")
    return problems


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    path = tmp_path_factory.mktemp("policyreport") / "cluster.json"
    path.write_text(json.dumps(o.as_list(*o.hostile(EVIL))))
    return str(path)


def reports(command, fmt, *args):
    code, out, err = run(command, "-A", *args, "-o", fmt)
    data = json.loads(out)
    assert data["kind"] == "List" and data["apiVersion"] == "v1"
    return code, data["items"], err


def test_the_checked_in_crds_are_the_published_ones_with_their_source_named():
    for path in sorted(CRDS.glob("*.yaml")):
        head = path.read_text().splitlines()[0]
        assert head.startswith("# From ") and " at commit " in head, path
        assert len(head.rsplit(" ", 1)[1]) == 40, path
    assert ("wgpolicyk8s.io", "v1alpha2", "PolicyReport") in SCHEMAS
    assert ("wgpolicyk8s.io", "v1alpha2", "ClusterPolicyReport") in SCHEMAS
    assert ("openreports.io", "v1alpha1", "Report") in SCHEMAS
    assert ("openreports.io", "v1alpha1", "ClusterReport") in SCHEMAS


@pytest.mark.parametrize("fmt", sorted(FORMS))
@pytest.mark.parametrize("source", ["example", "hostile"])
@pytest.mark.parametrize("command", ["verify", "check"])
def test_valid_against_the_published_crds(hostile, command, source, fmt):
    path = EXAMPLE if source == "example" else hostile
    code, items, err = reports(command, fmt, "-f", path)
    assert code in (0, 1), err
    group, version = FORMS[fmt]
    assert items
    for item in items:
        assert item["apiVersion"] == f"{group}/{version}"
        schema = SCHEMAS[(group, version, item["kind"])]
        errors = list(jsonschema.Draft4Validator(schema).iter_errors(item))
        assert not errors, [e.message for e in errors[:5]]
        assert not pruned(schema, item), pruned(schema, item)[:5]
        meta = item["metadata"]
        assert meta["name"] == f"kubectl-kvcache-{command}"
        assert meta["labels"] == {"app.kubernetes.io/managed-by": "kubectl-kvcache",
                                  "kubectl-kvcache/command": command}
        assert ("namespace" in meta) == (item["kind"] in ("PolicyReport", "Report"))
        text = json.dumps(item, ensure_ascii=False)
        assert "\x1b" not in text and "\x00" not in text and "\r" not in text


@pytest.mark.parametrize("command", ["verify", "check"])
def test_fail_exactly_where_the_exit_code_fails_and_the_summary_counts_the_results(command):
    code, items, _ = reports(command, "policyreport", "-f", EXAMPLE)
    _, sarif, _ = run(command, "-A", "-f", EXAMPLE, "-o", "sarif")
    errors = [r for r in json.loads(sarif)["runs"][0]["results"] if r["level"] == "error"]
    results = [r for i in items for r in i["results"]]
    fails = [r for r in results if r["result"] == "fail"]
    assert code == 1 and len(fails) == len(errors) > 0        # the one verdict, read by both printers
    assert sorted(r["policy"] for r in fails) == sorted(r["ruleId"] for r in errors)
    for item in items:
        counted = {k: sum(1 for r in item["results"] if r["result"] == k) for k in ("pass", "fail", "warn", "error",
                                                                                   "skip")}
        assert item["summary"] == counted
    for r in results:
        assert r["source"] == "kubectl-kvcache" and r["policy"] == r["rule"]
        assert all(isinstance(v, str) for v in r["properties"].values())
        assert r["resources"] and all(ref["name"] for ref in r["resources"])
        for ref in r["resources"]:      # a namespaced report names the objects of its own namespace
            assert ref.get("namespace") in (None, next(i for i in items if r in i["results"])["metadata"].get(
                "namespace")) or ref["kind"] == "Namespace"


def test_verify_has_one_result_per_replica_ok_ones_pass():
    code, items, _ = reports("verify", "policyreport", "-f", EXAMPLE)
    _, out, _ = run("verify", "-A", "-f", EXAMPLE, "-o", "json")
    rows = json.loads(out)["items"]
    results = [r for i in items for r in i["results"]]
    assert len(results) == len(rows)
    assert sum(1 for r in results if r["result"] == "pass") == sum(1 for r in rows if r["status"] == "OK")
    pods = sorted(ref["name"] for r in results for ref in r["resources"] if ref["kind"] == "Pod")
    assert pods == sorted(r["pod"] for r in rows if r["pod"])


def test_a_tolerated_status_warns_and_an_ignored_one_is_skipped_unscored():
    code, items, _ = reports("verify", "policyreport", "-f", EXAMPLE, "--ignore", "MISSING", "--fail-on",
                             "REJECTED")
    results = [r for i in items for r in i["results"]]
    assert code == 1
    assert {r["result"] for r in results if r["policy"] == "MISSING"} == {"skip"}
    assert all(r["scored"] is False for r in results if r["policy"] == "MISSING")
    assert {r["result"] for r in results if r["policy"] == "MISMATCH"} == {"warn"}
    assert {r["result"] for r in results if r["policy"] == "REJECTED"} == {"fail"}
    code, items, _ = reports("check", "policyreport", "-f", EXAMPLE, "--ignore", "binding-dtype-rejected")
    ignored = [r for i in items for r in i["results"] if r["policy"] == "binding-dtype-rejected"]
    assert ignored and {r["result"] for r in ignored} == {"skip"} and all("ignored" in r["properties"] for r in ignored)


def test_a_run_with_no_failure_has_no_fail_result():
    code, items, _ = reports("verify", "openreports", "-f", EXAMPLE, "--fail-on", "UNKNOWN")
    assert code == 0
    assert not [r for i in items for r in i["results"] if r["result"] == "fail"]
    assert all(i["source"] == "kubectl-kvcache" for i in items)


def test_deterministic_with_source_date_epoch(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    first = run("check", "-A", "-f", EXAMPLE, "-o", "policyreport")
    assert first == run("check", "-A", "-f", EXAMPLE, "-o", "policyreport")
    stamps = {r["timestamp"]["seconds"] for i in json.loads(first[1])["items"] for r in i["results"]}
    assert stamps == {1700000000}


def test_a_run_that_judged_nothing_writes_no_report(tmp_path):
    code, out, err = run("verify", "-A", "-f", str(tmp_path / "missing.json"), "-o", "policyreport")
    assert code == 2 and err.startswith("error:")
    assert json.loads(out)["items"] == []


def test_a_namespace_run_has_no_cluster_report_without_cluster_results():
    code, items, _ = reports("verify", "policyreport", "-f", EXAMPLE)
    assert items[-1]["kind"] == "ClusterPolicyReport"        # -A: the run's own, even when empty
    code, out, _ = run("verify", "-n", "llm-prod", "-f", EXAMPLE, "-o", "policyreport")
    kinds = [(i["kind"], i["metadata"].get("namespace")) for i in json.loads(out)["items"]]
    assert kinds == [("PolicyReport", "llm-prod")]


def test_the_structural_walk_finds_what_the_api_server_would_prune_or_refuse():
    schema = SCHEMAS[("wgpolicyk8s.io", "v1alpha2", "PolicyReport")]
    good = {"apiVersion": "wgpolicyk8s.io/v1alpha2", "kind": "PolicyReport", "metadata": {"name": "x"},
            "results": [{"policy": "p", "result": "fail", "severity": "high", "properties": {"a": "b"}}]}
    assert pruned(schema, good) == []
    bad = json.loads(json.dumps(good))
    bad["results"][0].update(result="failed", extra=1, properties={"a": 1})
    bad["results"].append({"rule": "no policy"})
    problems = pruned(schema, bad)
    assert len(problems) == 4, problems
