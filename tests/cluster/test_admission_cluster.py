"""`kubectl kvcache admission` on the real kube-apiserver (v1.37.2, ValidatingAdmissionPolicy
GA): the generated policies are created, type-checked against the CRDs' published schemas by
kube-controller-manager's own TypeChecker (hack/celcost typecheck; this tier runs no
kube-controller-manager, which would write it into status.typeChecking),
then refuse a Binding whose dtype an engine release on its pool rejects and a ModelDeployment
whose engine release rejects its Binding's dtype, with the message naming the dtype, the release
and the accepted spellings, and admit the rest; in Warn they admit with a warning.

The expected decisions are the engine data's (judge/admission.accepted, the spellings `engines`
lists); the objects are the operator's CRDs generated from its Go markers (tests/cluster/crds).
The policies take effect when the API server's policy informer has them: each first decision is
polled for, bounded, with a server-side dry run (admission runs, nothing is stored)."""

import copy
import io
import json
import subprocess
import sys
import time

import pytest

import celcost
import objects as o
from kubectl_kvcache.cli import main
from kubectl_kvcache.judge import admission

WAIT = 60.0
POLICIES = (admission.BINDINGS_POLICY, admission.DEPLOYMENTS_POLICY)


def plugin(kubeconfig, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--kubeconfig", kubeconfig], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def spellings(engine, release):
    return ", ".join(admission.accepted(engine, release))


def create(cluster, obj, dry_run=False):
    args = ["create", "-f", "-"] + (["--dry-run=server"] if dry_run else [])
    return cluster.kubectl(*args, input=json.dumps(obj))


def until(what, check):
    """Poll `check` (returns a result or None) until it answers, at most WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while True:
        found = check()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {WAIT:.0f}s")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def ns(cluster):
    ns = cluster.new_namespace("admission")
    cluster.apply([
        o.binding("b-vllm", "fp8", ns=ns, pool="pool-v"),
        o.binding("b-sgl", "bf16", ns=ns, pool="pool-s"),
        o.binding("b-stored", "bf16", ns=ns, pool="pool-x"),
        # a dtype the CRD stores (no pattern) that must be escaped in CEL: the policy still compiles
        o.binding("b-quoted", "fp8'\\x", ns=ns, pool="pool-q"),
        o.deployment("chat", engine="vllm", version="0.29.0", binding_name="b-vllm", ns=ns),
        o.deployment("sgl", engine="sglang", version="0.5.18", binding_name="b-sgl", ns=ns),
        # waits for a Binding not yet created
        o.deployment("early", engine="vllm", version="0.29.0", binding_name="b-later", ns=ns),
        # stored before the policy: vLLM 0.29.0 rejects bf16 (it crash-loops; check reports it)
        o.deployment("stored", engine="vllm", version="0.29.0", binding_name="b-stored", ns=ns),
    ], namespace=ns)
    yield ns
    for name in POLICIES:
        cluster.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", name,
                        "--ignore-not-found")


def apply_policy(cluster, ns, *actions):
    args = [a for x in actions for a in ("--validation-actions", x)]
    code, out, err = plugin(cluster.admin_kubeconfig, "admission", "-n", ns, *args)
    assert code == 0, err
    applied = cluster.kubectl("apply", "-f", "-", input=out)
    assert applied.returncode == 0, applied.stderr
    return out, applied


@pytest.fixture(scope="module")
def deny(cluster, ns):
    """The policies in Deny, type-checked by the server; the first refusal seen."""
    _, applied = apply_policy(cluster, ns, "Deny")
    # status.typeChecking is written by kube-controller-manager's policy status controller,
    # which this tier does not run: what the API server itself does at creation is compile every
    # expression (a syntax error or an undeclared function is refused there) and take the objects
    checked = {name: cluster.get("validatingadmissionpolicy", name).get("status", {}) for name in POLICIES}
    bad = o.binding("bad", "bf16", ns=ns, pool="pool-v")
    until("the bindings policy in effect", lambda: True if create(cluster, bad, dry_run=True).returncode else None)
    bad_md = o.deployment("bad-md", engine="vllm", version="0.29.0", binding_name="b-sgl", ns=ns)
    until("the deployments policy in effect",
          lambda: True if create(cluster, bad_md, dry_run=True).returncode else None)
    return {"typeChecking": checked, "applyWarnings": [ln for ln in applied.stderr.splitlines()
                                                       if ln.startswith("Warning")]}


@pytest.fixture(scope="module")
def typecheck(cluster, tmp_path_factory):
    """kube-controller-manager's type checker (hack/celcost typecheck: the same TypeChecker, with
    the schemas this API server publishes for the CRDs): a policy's expression warnings."""
    tool = celcost.build(tmp_path_factory.mktemp("celcost"))

    def check(policy):
        path = tmp_path_factory.mktemp("policy") / "policy.json"
        path.write_text(json.dumps(policy))
        p = subprocess.run([tool, "typecheck", cluster.admin_kubeconfig, str(path)], capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)
    return check


def test_the_generated_cel_type_checks_against_the_crds(cluster, ns, deny, typecheck):
    code, out, err = plugin(cluster.admin_kubeconfig, "admission", "-n", ns, "-o", "json")
    assert code == 0, err
    policies = [i for i in json.loads(out)["items"] if i["kind"] == "ValidatingAdmissionPolicy"]
    warnings = {p["metadata"]["name"]: typecheck(p) for p in policies}
    print("typeChecking:", json.dumps(warnings))
    assert warnings == {name: [] for name in POLICIES}
    # the checker reads the schemas (it checks validations and messages, through the variables
    # they use): a field the CRD does not have is a warning
    wrong = copy.deepcopy(policies[0])
    wrong["spec"]["validations"][0]["expression"] = "object.spec.domain.dtypo == ''"
    found = typecheck(wrong)
    assert [w["fieldRef"] for w in found] == ["spec.validations[0].expression"], found
    assert "dtypo" in found[0]["warning"], found


def test_the_server_takes_the_policies_without_warnings(deny):
    # the API server compiles every expression at creation (a compile error is refused there);
    # status.typeChecking stays empty without kube-controller-manager (the test above runs its
    # type checker); kubectl apply printed no warning
    print("status:", json.dumps(deny))
    assert all(not s.get("typeChecking", {}).get("expressionWarnings") for s in deny["typeChecking"].values())
    assert deny["applyWarnings"] == []


def refused(p, *words):
    assert p.returncode != 0, p.stdout
    assert "ValidatingAdmissionPolicy" in p.stderr, p.stderr
    for w in words:
        assert w in p.stderr, p.stderr
    return p.stderr


@pytest.mark.parametrize("name,dtype,pool,refused_by", [
    ("bad", "bf16", "pool-v", ("vllm", "0.29.0", "chat")),       # vLLM 0.29.0 on the pool rejects bf16
    ("good", "bfloat16", "pool-v", None),                       # accepted spelling
    ("other-engine", "bf16", "pool-s", None),                   # only SGLang 0.5.18 there: accepts it
    ("b-later", "bf16", "pool-new", ("vllm", "0.29.0", "early")),   # a deployment already names it
    ("empty-pool", "bf16", "pool-empty", None),                 # no engine known on it
])
def test_bindings(cluster, ns, deny, name, dtype, pool, refused_by):
    accepted_here = {e: dtype in admission.accepted(e, r) for e, r in (("vllm", "0.29.0"), ("sglang", "0.5.18"))}
    p = create(cluster, o.binding(name, dtype, ns=ns, pool=pool))
    if refused_by is None:
        assert p.returncode == 0, p.stderr
        return
    engine, release, md = refused_by
    assert not accepted_here[engine]
    text = refused(p, f"spec.domain.dtype {dtype}", f"vLLM {release}", f"{ns}/{md}",
                   f"accepts: {spellings(engine, release)}")
    print(text)


@pytest.mark.parametrize("name,engine,version,binding,image,refused_release", [
    ("bad-md", "vllm", "0.29.0", "b-sgl", None, "0.29.0"),        # vLLM 0.29.0 rejects the Binding's bf16
    ("v-prefixed", "vllm", "v0.29.0", "b-sgl", None, "0.29.0"),
    ("sgl-ok", "sglang", "0.5.18", "b-sgl", None, None),
    ("unknown-release", "vllm", "0.29.5", "b-sgl", None, None),   # not in the engine data: left to check
    ("own-image", "vllm", "0.29.0", "b-sgl", "vllm/vllm-openai:v0.34.0", None),   # a stated image wins
    ("vllm-ok", "vllm", "0.29.0", "b-vllm", None, None),
    ("quoted", "vllm", "0.29.0", "b-quoted", None, "0.29.0"),     # the escaped dtype, named as stored
])
def test_deployments(cluster, ns, deny, name, engine, version, binding, image, refused_release):
    p = create(cluster, o.deployment(name, engine=engine, version=version, binding_name=binding, ns=ns, image=image))
    if refused_release is None:
        assert p.returncode == 0, p.stderr
        return
    dtype = {"b-sgl": "bf16", "b-quoted": "fp8'\\x"}[binding]
    assert dtype not in admission.accepted(engine, refused_release)
    text = refused(p, f"spec.engine.version {version}", f"vLLM {refused_release} rejects --kv-cache-dtype {dtype}",
                   f"KVCachePoolBinding {ns}/{binding}", f"accepts: {spellings(engine, refused_release)}")
    print(text)


def test_updates_are_judged_only_when_the_engine_changes(cluster, ns, deny):
    # a deployment stored before the policy keeps its labels and finalizers editable
    p = cluster.kubectl("label", "modeldeployment", "stored", "-n", ns, "team=a")
    assert p.returncode == 0, p.stderr
    assert "bf16" not in admission.accepted("vllm", "0.30.0")
    p = cluster.kubectl("patch", "modeldeployment", "stored", "-n", ns, "--type=merge",
                        "-p", '{"spec":{"engine":{"version":"0.30.0"}}}')
    refused(p, "vLLM 0.30.0 rejects --kv-cache-dtype bf16", f"accepts: {spellings('vllm', '0.30.0')}")
    p = cluster.kubectl("patch", "modeldeployment", "stored", "-n", ns, "--type=merge",
                        "-p", '{"spec":{"engine":{"version":"9.9.9"}}}')
    assert p.returncode == 0, p.stderr


def test_admission_metrics_count_the_refusals(cluster, ns, deny):
    """What the API server measured: its check counter and duration for these policies."""
    status, text = cluster.request("GET", "/metrics")
    assert status == 200
    lines = [ln for ln in text.splitlines() if "validating_admission_policy" in ln and "kvcache-dtype" in ln]
    print("\n".join(ln for ln in lines if "_count" in ln or "_sum" in ln or "check_total" in ln))
    denied = [ln for ln in lines if ln.startswith("apiserver_validating_admission_policy_check_total")
              and 'enforcement_action="deny"' in ln]
    assert denied, lines[:20]


def test_zz_warn_admits_with_a_warning(cluster, ns, deny):
    apply_policy(cluster, ns, "Warn")
    bad = o.binding("warned", "bf16", ns=ns, pool="pool-v")
    p = until("the Warn binding in effect",
              lambda: (lambda r: r if r.returncode == 0 else None)(create(cluster, bad, dry_run=True)))
    assert "Warning:" in p.stderr and "spec.domain.dtype bf16" in p.stderr, p.stderr
    p = create(cluster, bad)
    assert p.returncode == 0 and "Warning:" in p.stderr and f"accepts: {spellings('vllm', '0.29.0')}" in p.stderr, \
        p.stderr


def test_zz_audit_records_what_deny_would_refuse(cluster_binaries, tmp_path):
    """Audit (docs/admission.md's roll-out): admitted, and the API server's audit log carries the
    refusal as the annotation validation.policy.admission.k8s.io/validation_failure. Its own API
    server, with an audit log (level Metadata)."""
    harness = sys.modules["kvcache_test_harness"]      # loaded by this folder's conftest
    c = harness.Cluster(cluster_binaries, name="admission-audit", audit=True)
    try:
        c.start()
        ns = c.new_namespace("audit")
        c.apply([o.binding("b-vllm", "fp8", ns=ns, pool="pool-v"),
                 o.deployment("chat", engine="vllm", version="0.29.0", binding_name="b-vllm", ns=ns)], namespace=ns)
        apply_policy(c, ns, "Audit")
        bad = o.binding("audited", "bf16", ns=ns, pool="pool-v")

        def recorded():
            created = create(c, bad, dry_run=True)
            assert created.returncode == 0 and "Warning" not in created.stderr, created.stderr
            for event in c.audit_events():
                found = event.get("annotations", {}).get("validation.policy.admission.k8s.io/validation_failure")
                if found and f"/namespaces/{ns}/kvcachepoolbindings" in event.get("requestURI", ""):
                    return json.loads(found)
            return None
        failures = until("the audit annotation", recorded)
        print(json.dumps(failures))
        assert [(f["policy"], f["validationActions"]) for f in failures] == [(admission.BINDINGS_POLICY, ["Audit"])]
        assert "spec.domain.dtype bf16 is rejected by vLLM 0.29.0" in failures[0]["message"]
    finally:
        c.stop()
