"""-o markdown, -o junit and -o sarif against a real kube-apiserver, through the plugin's executable on a
real pipe: the report says it read the cluster (of the context --context named), its namespace
and the Setting as the cluster has it; the JUnit document is valid against junit-10.xsd and has
one testcase per replica, failing the ones the exit code fails."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import junit_schema
import objects as o

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN = os.path.join(REPO, "bin", "kubectl-kvcache")
NS = "reports-test"


def plugin(cluster, *args):
    proc = subprocess.run([sys.executable, PLUGIN, *args, "--kubeconfig", cluster.admin_kubeconfig],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
                          env=cluster.env(cluster.admin_kubeconfig))
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


@pytest.fixture(scope="module")
def reports(cluster):
    cluster.apply([o.binding("b1", "fp8", ns=NS), o.deployment("md", ns=NS, binding_name="b1"),
                   o.md_pod("md-0", "md", o.vllm_argv("fp8"), ns=NS),
                   o.deployment("old", ns=NS, binding_name="b1"), o.md_pod("old-0", "old", o.vllm_argv(), ns=NS)])
    return cluster


def current_context(cluster):
    r = cluster.kubectl("config", "current-context", check=True)
    return r.stdout.strip()


def test_markdown_report_of_a_cluster(reports):
    context = current_context(reports)
    code, out, err = plugin(reports, "verify", "-n", NS, "--context", context, "-o", "markdown")
    assert code == 1, err
    assert f"- **Input:** the cluster of kubeconfig context `{context}`" in out
    assert f"- **Namespaces:** namespace `{NS}`" in out
    status = json.loads(plugin(reports, "setting", "status", "-o", "json")[1])     # as the cluster has it
    where = "read from the cluster" if status["source"] == "cluster" else "the Setting does not exist"
    assert f"- **Setting:** {'on' if status['value'] else 'off'} ({where}" in out
    assert f"kubectl kvcache verify -n {NS} --context {context} -o markdown --kubeconfig " in out
    assert f"1. **MISSING** `{NS}/old/server/0`" in out        # namespace/deployment/role/replica
    assert "(Pod old-0 container main)" in out
    assert "| `reports-test` | `md-0`" in out


def test_junit_report_of_a_cluster(reports):
    code, out, err = plugin(reports, "verify", "-n", NS, "-o", "junit")
    assert code == 1, err
    junit_schema.schema().validate(out)
    root = ET.fromstring(out.encode("utf-8"))
    cases = {c.get("name"): c for c in root.iter("testcase")}    # stable across rollouts: no Pod names
    assert set(cases) == {f"{NS}/md/server/0", f"{NS}/old/server/0"}
    assert cases[f"{NS}/md/server/0"].find("failure") is None
    assert cases[f"{NS}/old/server/0"].find("failure").get("type") == "MISSING"
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["Input"] == "the cluster of the kubeconfig's current context"
    code, out, _ = plugin(reports, "check", "-n", NS, "-o", "junit")
    junit_schema.schema().validate(out)
    assert code == 0 and ET.fromstring(out.encode("utf-8")).get("failures") == "0"


def test_sarif_report_of_a_cluster(reports):
    """-o sarif from a live cluster (no file: no physical location), and over the kubeconfig's
    contexts (--contexts: each result's place starts with its context); valid against the
    published SARIF 2.1.0 schema."""
    import sarif_schema

    validator = sarif_schema.validator()
    context = current_context(reports)
    for extra in ((), ("--contexts", context)):
        code, out, err = plugin(reports, "verify", "-n", NS, "-o", "sarif", *extra)
        assert code == 1, err
        log = json.loads(out)
        assert not list(validator.iter_errors(log))
        (run,) = log["runs"]
        assert run["invocations"][0]["exitCode"] == 1 and "artifacts" not in run
        (result,) = run["results"]
        assert result["ruleId"] == "MISSING" and result["level"] == "error"
        where = [(loc["kind"], loc["name"]) for loc in result["locations"][0]["logicalLocations"]]
        assert where == ([("context", context)] if extra else []) + [
            ("namespace", NS), ("ModelDeployment", "old"), ("role", "server"), ("replica", "0")]
        assert "physicalLocation" not in result["locations"][0]
