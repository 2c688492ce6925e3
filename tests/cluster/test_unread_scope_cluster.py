"""A scope that was not read never passes (issue 48, 2), on the real API server: a namespace that
does not exist (GET /api/v1/namespaces/NAME is 404) and one that exists with nothing the command
reads fail check, bindings, roles and verify alike, and every format says so with the exit code
(before: check, bindings and roles exited 0 and markdown said PASSED, JUnit failures="0", SARIF
exitCode 0; verify failed on the missing namespace only). `setting status` is not a gate over a
scope: unchanged."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import objects as o
from kubectl_kvcache.render import formats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from test_verdict_matrix import said  # noqa: E402  (one reading of every format's verdict)

GATES = ("check", "bindings", "roles", "verify")
SHOWN = ("table", "markdown", "junit", "sarif", "json")
CHECK_WORDS = "KVCachePoolBindings, pool-attached ModelDeployments or injection opt-ins"


def plugin(cluster, *args):
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *args, "--kubeconfig", cluster.admin_kubeconfig],
                       cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=ROOT, SOURCE_DATE_EPOCH="1773133200"))
    return p.returncode, p.stdout, p.stderr


def _cases():
    return [(c, f) for c in GATES for f in SHOWN if f in formats.offered(c)]


def _reasons(fmt, out):
    """The reason codes the report names as failing the run."""
    if fmt == "json":
        return [r["code"] for r in json.loads(out)["verdict"]["reasons"] if r["fails"]]
    if fmt == "junit":
        return [f.get("type") for f in ET.fromstring(out.encode()).iter("failure")]
    if fmt == "sarif":
        return [r["ruleId"] for r in json.loads(out)["runs"][0]["results"] if r["level"] == "error"]
    return None


@pytest.fixture(scope="module")
def empty_namespace(cluster):
    """A namespace that exists, with a ConfigMap and nothing of the operator's."""
    ns = cluster.new_namespace("unread-empty")
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": ns}})
    return ns


@pytest.mark.parametrize("command,fmt", _cases())
def test_a_namespace_that_does_not_exist_fails_every_gate_in_every_format(cluster, command, fmt):
    code, out, err = plugin(cluster, command, "-n", "nope-issue48", "-o", fmt)
    assert code == 1, (out, err)
    assert "warning: namespace 'nope-issue48' does not exist: nothing in it was read" in err.splitlines()
    fails, named = said(fmt, out, err)
    assert fails and named in (None, 1), (out, err)
    if fmt == "table":
        assert ("verdict: FAILED (exit code 1): namespace nope-issue48 was not found in the cluster: nothing was "
                "verified there") in err.splitlines()
    if fmt == "markdown":
        assert "PASSED" not in out and "Nothing fails" not in out
    reasons = _reasons(fmt, out)
    assert reasons is None or reasons == ["not-found"], reasons


@pytest.mark.parametrize("command,fmt", _cases())
def test_a_namespace_with_nothing_the_command_reads_fails_every_gate(cluster, empty_namespace, command, fmt):
    code, out, err = plugin(cluster, command, "-n", empty_namespace, "-o", fmt)
    assert code == 1, (out, err)
    fails, named = said(fmt, out, err)
    assert fails and named in (None, 1), (out, err)
    words = "pool-attached engine pods" if command == "verify" else CHECK_WORDS
    if fmt == "table":
        assert (f"verdict: FAILED (exit code 1): no {words} found in namespace {empty_namespace}: nothing was "
                f"verified there") in err.splitlines()
    reasons = _reasons(fmt, out)
    assert reasons is None or reasons == ["nothing-found"], reasons


def test_a_namespace_with_a_good_binding_passes_check_and_bindings(cluster):
    """The gate still passes where something was read and nothing fails: a vLLM 0.18.0 deployment
    on an fp8 Binding (the release accepts fp8)."""
    ns = cluster.new_namespace("unread-good")
    cluster.apply([o.binding("f8", "fp8", ns=ns), o.deployment("md", ns=ns, version="0.18.0", binding_name="f8")],
                  with_status=False)
    for command in ("check", "bindings", "roles"):
        code, out, err = plugin(cluster, command, "-n", ns, "-o", "markdown")
        assert code == 0 and said("markdown", out, err) == (False, 0), (command, out, err)


def test_setting_status_is_not_a_scope_gate(cluster):
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                   "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                   "spec": {"value": "true"}, "status": {"value": "true"}})
    for fmt in ("table", "json"):
        code, out, err = plugin(cluster, "setting", "status", "-o", fmt)
        assert code == 0 and "nothing-found" not in out + err and "nothing was verified" not in out + err, (out, err)
