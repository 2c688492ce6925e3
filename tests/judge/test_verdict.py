"""judge/verdict.py: what fails each command's run, decided once (the exit code and every format
read it: tests/cli/test_verdict_matrix.py). Judged on the saved cluster of examples/."""

import os

import pytest

from kubectl_kvcache import engine, exitcodes
from kubectl_kvcache.judge import checks, rollout, verdict, verify
from kubectl_kvcache.kube.connection import Connection
from kubectl_kvcache.load import reader
from kubectl_kvcache.load.scope import Scope

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")


def snapshot(namespace=None):
    return reader.read(Connection(), Scope(namespace=namespace, all_namespaces=namespace is None, files=(EXAMPLE,)))


@pytest.fixture(scope="module")
def judged():
    return verify.verify(snapshot())


def _ok(report):
    return next(i for i in report.items if i.status == verify.OK and i.pod and i.effective)


def test_every_status_but_ok_fails_by_default_and_fail_on_tolerates_the_rest(judged):
    v = verdict.verify(judged)
    failing = {judged.items[d.index].status for d in v.failures}
    assert failing == {"MISMATCH", "MISSING", "REJECTED"} and v.code == exitcodes.FINDINGS
    v = verdict.verify(judged, fail_on=("REJECTED",))
    assert [judged.items[d.index].status for d in v.failures] == ["REJECTED"]
    tolerated = [d for d in v.decisions if d.outcome == verdict.PASSED]
    assert tolerated and all(d.why == "tolerated by --fail-on" for d in tolerated)


def test_an_ok_replica_the_engine_contradicts_fails_whatever_fail_on_says(judged):
    report = judged.replace(items=[i.replace() for i in judged.items])
    item = _ok(report)
    item.observed = engine.Observed("fp8_e5m2", None, "metrics", "metrics", 'cache_dtype="fp8_e5m2"')
    v = verdict.verify(report, fail_on=("REJECTED",))
    decision = v.of("items", report.items.index(item))
    assert (decision.outcome, decision.code) == (verdict.FAILED, verify.CONTRADICTED)
    assert "'fp8_e5m2' (its /metrics)" in decision.why
    assert "OBSERVED-DIFFERS" in v.text() and v.code == 1


def test_an_ok_replica_still_rolling_fails_only_without_fail_on(judged):
    report = judged.replace(items=[i.replace() for i in judged.items])
    item = next(i for i in report.items if i.status == verify.OK and i.owner)
    item.state = dict(item.state, ready=False)
    n = report.items.index(item)
    assert verdict.verify(report).of("items", n).code == verify.ROLLING
    assert verdict.verify(report, fail_on=("REJECTED",)).of("items", n).outcome == verdict.PASSED


def test_what_was_asked_for_and_not_read_fails_every_command():
    """Issue 48: a namespace that does not exist fails verify, check (--strict or not), bindings
    and roles alike; before, check failed only with --strict, bindings and roles never."""
    snap = snapshot("nowhere")
    snap.missing_namespaces = ("nowhere",)
    reasons = verdict.unread(snap, nothing="anything")
    assert [r.code for r in reasons] == [verdict.NOT_FOUND] and "nothing was verified there" in reasons[0].message
    assert verdict.verify(verify.verify(snap), reasons=reasons).code == 1
    report = checks.check(snap)
    for strict in (False, True):
        assert verdict.check(report, strict=strict, reasons=reasons).code == 1
    assert verdict.check(report, reasons=reasons).reasons[0].fails is True
    assert verdict.bindings(report, reasons).code == 1 and verdict.roles(report, reasons).code == 1
    assert verdict.bindings(report, reasons).text().startswith("FAILED (exit code 1): namespace nowhere was not found")


@pytest.mark.parametrize("namespace,source,selector,where", [
    ("team", "cluster", None, "in namespace team"),
    (None, "cluster", None, "in any namespace"),
    ("team", "file", None, "in the input (namespace team)"),
    (None, "file", "app=x", "in the input matching -l app=x")])
def test_a_scope_that_holds_nothing_read_fails_every_command(namespace, source, selector, where):
    """Nothing of the kinds read in the scope asked for: a reason of its own, failing each
    command's verdict, in verify's words ("nothing was verified there")."""
    reason = verdict.nothing_found("pool-attached engine pods", namespace, source, selector)
    assert reason.code == verdict.NOTHING and reason.fails and reason.code in verdict.UNREAD
    assert reason.message == f"no pool-attached engine pods found {where}: nothing was verified there"
    assert ("-l" in reason.fix) == bool(selector)
    report = checks.check(snapshot("nowhere"))
    assert not any(report.checked.values())
    for v in (verdict.check(report, reasons=(reason,)), verdict.bindings(report, (reason,)),
              verdict.roles(report, (reason,)), verdict.verify(verify.verify(snapshot("nowhere")), reasons=(reason,))):
        assert (v.code, v.result, v.counts()) == (1, "FAILED", {verdict.NOTHING: 1})
        assert v.text() == f"FAILED (exit code 1): {reason.message}"


def test_unread_adds_nothing_found_only_when_asked_and_no_namespace_is_missing():
    snap = snapshot("nowhere")
    assert verdict.unread(snap) == ()
    assert [r.code for r in verdict.unread(snap, nothing="x")] == [verdict.NOTHING]
    snap.missing_namespaces = ("nowhere",)
    assert [r.code for r in verdict.unread(snap, nothing="x")] == [verdict.NOT_FOUND]


def test_bindings_fail_on_the_registry_codes_through_the_binding_they_are_about():
    report = checks.check(snapshot())
    v = verdict.bindings(report)
    failed = [report.bindings[d.index].name for d in v.failures if d.where == "bindings"]
    assert failed == ["sgl-fp8"]
    findings = [report.findings[d.index].code for d in v.decisions if d.where == "findings"]
    assert findings == ["binding-dtype-rejected"] and len(v.failures) == 1     # counted once, on its Binding
    assert v.code == (1 if any(f.code in checks.BINDING_FAILURES for f in report.findings) else 0)


def test_a_failing_finding_about_no_binding_listed_stays_a_failure():
    report = checks.check(snapshot())
    rejected = next(f for f in report.findings if f.code == "binding-dtype-rejected")
    narrowed = report.replace(bindings=[b for b in report.bindings if b.name != rejected.name])
    v = verdict.bindings(narrowed)
    assert [(d.where, d.code) for d in v.failures] == [("findings", "binding-dtype-rejected")] and v.code == 1


def test_roles_fail_on_an_error_role():
    report = checks.check(snapshot())
    v = verdict.roles(report)
    errors = [n for n, e in enumerate(report.roles) if e.severity == checks.ERROR]
    assert errors and [d.index for d in v.failures] == errors and v.code == 1     # the example has one


def test_a_wait_is_decided_by_the_rollout():
    snap = snapshot("llm-prod")
    report = verify.verify(snap)
    now = rollout.progress(report, snap.deployments)
    v = verdict.wait(report, rollout.TIMEOUT, now.left, fail_on=("REJECTED",))
    assert v.code == 1 and [r.code for r in v.reasons] == ["wait-timeout"]
    assert {report.items[d.index].key for d in v.failures} == {i.key for i in now.left}
    keep = {("llm-prod", "qwen-chat")}
    done = report.replace(items=[i for i in report.items if (i.namespace, i.deployment) in keep],
                          deployments=[d for d in report.deployments if (d.namespace, d.name) in keep])
    assert verdict.wait(done, rollout.COMPLETE, ()).code == 0
