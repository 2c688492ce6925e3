"""judge/policy.py: the per-code policy step, on generated reports and rules (every code, every
scope field, ignore and each severity), against the rule as docs/policy.md states it: the last
rule whose every given field holds decides; an ignored finding moves to `suppressed`, never away."""

import random

import pytest

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.judge import checks, policy
from kubectl_kvcache.judge.checks import CODES, SEVERITIES, Finding, Report
from kubectl_kvcache.kube import selector as label_selector

NAMESPACES = ("llm-prod", "llm-research", None)
KINDS = ("KVCachePoolBinding", "ModelDeployment", "Deployment", "Pod")
NAMES = ("a", "b", "c")
LABELS = ({}, {"team": "research"}, {"team": "prod", "tier": "gold"}, {"tier": "gold"})
SELECTORS = (None, "team=research", "team!=research", "tier", "!tier", "team in (prod,research)")


def _report(rng, n):
    labels = {}
    findings = []
    for _ in range(n):
        code = rng.choice(list(CODES))
        obj = (rng.choice(NAMESPACES), rng.choice(KINDS), rng.choice(NAMES))
        labels[obj] = rng.choice(LABELS)
        findings.append(Finding(rng.choice(SEVERITIES), code, *obj, f"message {len(findings)}"))
    return Report({}, findings, [], [], {}), lambda k, ns, name: labels.get((ns, k, name), {})


def _rule(rng, i):
    def some(values):
        return frozenset(rng.sample(values, rng.randint(1, 2))) if rng.random() < 0.4 else None
    return policy.Rule(rng.choice(list(CODES)), rng.choice(SEVERITIES + (None,)), some(NAMESPACES), some(KINDS),
                       some(NAMES), rng.choice(SELECTORS), where=f"p.yaml: rules[{i}]")


def _decides(rule, f, labels):
    """docs/policy.md, field by field."""
    if rule.code != f.code:
        return False
    if rule.namespaces is not None and f.namespace not in rule.namespaces:
        return False
    if rule.kinds is not None and f.kind not in rule.kinds:
        return False
    if rule.names is not None and f.name not in rule.names:
        return False
    return rule.selector is None or label_selector.matches(labels(f.kind, f.namespace, f.name), rule.selector)


@pytest.mark.parametrize("seed", range(200))
def test_the_last_matching_rule_decides_and_nothing_is_lost(seed):
    rng = random.Random(seed)
    report, labels = _report(rng, rng.randint(0, 25))
    rules = tuple(_rule(rng, i) for i in range(rng.randint(1, 8)))
    out = policy.apply(report, policy.Policy(rules, "p.yaml", "sha256:x"), labels)
    # every finding once, in findings or in suppressed
    assert sorted(f.message for f in out.findings + out.suppressed) == sorted(f.message for f in report.findings)
    by_message = {f.message: f for f in out.findings}
    ignored = {f.message: f for f in out.suppressed}
    changed = 0
    for f in report.findings:
        deciding = [r for r in rules if _decides(r, f, labels)]
        rule = deciding[-1] if deciding else None
        if rule is None or rule.severity == f.severity:
            assert by_message[f.message] == f          # untouched, no policy mark
            continue
        changed += 1
        got = ignored[f.message] if rule.severity is None else by_message[f.message]
        assert got.policy == policy.Effect(f.severity, rule.severity, rule.where, rule.reason)
        assert got.severity == (f.severity if rule.severity is None else rule.severity)
    assert (out.policy.changed, out.policy.ignored) == (changed, len(out.suppressed))
    assert out.summary() == {s: sum(1 for f in out.findings if f.severity == s) for s in SEVERITIES}
    if changed:     # sorted as check sorts: by severity, the Setting's finding last
        ranks = [(f.code == "setting", SEVERITIES.index(f.severity)) for f in out.findings]
        assert ranks == sorted(ranks)
    data = out.to_dict()
    assert len(data["suppressed"]) == len(out.suppressed) and data["policy"]["changed"] == changed


@pytest.mark.parametrize("code", list(CODES))
def test_every_code_can_be_ignored_and_regraded(code):
    f = Finding(CODES[code].severity, code, "ns", "ModelDeployment", "m", "x")
    other = Finding(checks.ERROR, "binding-missing" if code != "binding-missing" else "binding-auto", "ns",
                    "ModelDeployment", "m", "y")
    report = Report({}, [f, other], [], [], {})
    out = policy.apply(report, policy.Policy(policy.from_flags(ignore=[code])))
    assert out.findings == [other] and [s.code for s in out.suppressed] == [code]
    for level in SEVERITIES:
        out = policy.apply(report, policy.Policy(policy.from_flags(severity=[f"{code}={level}"])))
        assert {g.code: g.severity for g in out.findings}[code] == level


def test_no_policy_is_the_report_itself():
    report = Report({}, [Finding(checks.ERROR, "binding-missing", "n", "Pod", "p", "m")], [], [], {})
    assert policy.apply(report, None) is report
    assert "policy" not in report.to_dict() and "suppressed" not in report.to_dict()


def test_a_flag_wins_over_the_file():
    f = Finding(checks.WARNING, "binding-auto", "n", "KVCachePoolBinding", "b", "m")
    file_rule = policy.Rule("binding-auto", None, where="p.yaml: rules[0]")
    rules = (file_rule,) + policy.from_flags(severity=["binding-auto=error"])
    out = policy.apply(Report({}, [f], [], [], {}), policy.Policy(rules, "p.yaml", "sha256:x"))
    assert [(g.severity, g.policy.where) for g in out.findings] == [("error", "--severity")]
    assert out.policy.text() == "p.yaml (sha256:x) and flags: 1 finding changed, 0 of them ignored"


@pytest.mark.parametrize("flags, message", [
    ({"ignore": ["nope"]}, "--ignore: unknown finding code 'nope'"),
    ({"ignore": ["binding-auto,"]}, "--ignore: unknown finding code ''"),
    ({"severity": ["binding-auto"]}, "--severity: 'binding-auto': must be CODE=LEVEL"),
    ({"severity": ["binding-auto=fatal"]}, "--severity: 'binding-auto=fatal': must be CODE=LEVEL"),
    ({"severity": ["nope=error"]}, "--severity: unknown finding code 'nope'"),
])
def test_bad_flags_name_the_flag(flags, message):
    with pytest.raises(PluginError) as exc:
        policy.from_flags(**flags)
    assert str(exc.value).startswith(message)


def test_comma_lists_as_pflag_reads_them():
    rules = policy.from_flags(ignore=["binding-auto,binding-unused"], severity=["setting=warning,unchecked=error"])
    assert [(r.code, r.severity) for r in rules] == [("binding-auto", None), ("binding-unused", None),
                                                      ("setting", "warning"), ("unchecked", "error")]


# -- verify: its statuses are the codes, a replica is about its Pod (or its ModelDeployment) ----

from kubectl_kvcache.judge import verify as verify_judge  # noqa: E402
from kubectl_kvcache.judge.verify import STATUSES, Item, Report as VerifyReport  # noqa: E402

VERIFY_CODES = tuple(s for s in STATUSES if s != verify_judge.OK)


def _item(rng, n):
    status = rng.choice(STATUSES)
    pod = None if status == verify_judge.NO_POD else f"pod-{n}"
    owner = {"kind": "ModelDeployment", "name": rng.choice(NAMES)}
    return Item(rng.choice(NAMESPACES[:2]), pod, "main", owner, "server", "vllm", "0.10.0", "b", "fp8", None,
                status, f"reason {n}", slot=n if pod is None else None)


def _verify_rule(rng, i):
    def some(values):
        return frozenset(rng.sample(values, rng.randint(1, 2))) if rng.random() < 0.4 else None
    return policy.Rule(rng.choice(VERIFY_CODES), rng.choice(SEVERITIES + (None,)), some(NAMESPACES[:2]),
                       some(policy.VERIFY_KINDS), some(NAMES + ("pod-0", "pod-1", "pod-2")),
                       rng.choice(SELECTORS), where=f"v.yaml: rules[{i}]")


@pytest.mark.parametrize("seed", range(150))
def test_verify_the_last_matching_rule_decides_over_fail_on_and_nothing_is_lost(seed):
    rng = random.Random(seed)
    items = [_item(rng, n) for n in range(rng.randint(0, 20))]
    fail_on = tuple(rng.sample(VERIFY_CODES, rng.randint(0, 3)))
    labels_of = {}
    for i in items:
        kind, name = ("Pod", i.pod) if i.pod is not None else ("ModelDeployment", i.deployment)
        labels_of[(kind, i.namespace, name)] = rng.choice(LABELS)

    def labels(kind, ns, name):
        return labels_of.get((kind, ns, name), {})
    rules = tuple(_verify_rule(rng, i) for i in range(rng.randint(1, 8)))
    report = VerifyReport(True, "cluster", items)
    out = policy.apply_verify(report, policy.Policy(rules, "v.yaml", "sha256:x", "verify"), fail_on, labels)
    assert sorted(i.reason for i in out.items + out.suppressed) == sorted(i.reason for i in items)
    kept = {i.reason: i for i in out.items}
    ignored = {i.reason: i for i in out.suppressed}
    changed = 0
    for i in items:
        # docs/policy.md: before the policy, a status --fail-on fails (default: every one but OK) is an error
        was = None if i.status == verify_judge.OK else \
            ("error" if i.status in (fail_on or VERIFY_CODES) else "warning")
        kind, name = ("Pod", i.pod) if i.pod is not None else ("ModelDeployment", i.deployment)
        result = policy.VerifyResult(i.status, was or "", i.namespace, kind, name)
        deciding = [r for r in rules if _decides(r, result, labels)]
        rule = deciding[-1] if deciding and was is not None else None
        if rule is None or rule.severity == was:
            assert kept[i.reason] == i and verify_judge.fails(i, fail_on) == (was == "error")
            continue
        changed += 1
        got = ignored[i.reason] if rule.severity is None else kept[i.reason]
        assert got.policy == policy.Effect(was, rule.severity, rule.where, rule.reason)
        assert got.status == i.status       # the status is a fact; the policy changes what it weighs
        assert verify_judge.fails(got, fail_on) == (rule.severity == "error")
    assert (out.policy.changed, out.policy.ignored) == (changed, len(out.suppressed))
    assert out.summary()["total"] == len(out.items)
    data = out.to_dict()
    assert data["policy"]["changed"] == changed and len(data["suppressed"]) == len(out.suppressed)


@pytest.mark.parametrize("code", VERIFY_CODES)
def test_every_verify_status_can_be_ignored_and_regraded(code):
    item = Item("ns", "p-0", "main", None, None, "vllm", None, "b", "fp8", None, code, "x")
    ok = Item("ns", "p-1", "main", None, None, "vllm", None, "b", "fp8", "fp8", verify_judge.OK, "y")
    report = VerifyReport(True, "cluster", [item, ok])
    out = policy.apply_verify(report, policy.Policy(policy.from_flags(ignore=[code.lower()], command="verify"),
                                                    command="verify"))
    assert out.items == [ok] and [s.status for s in out.suppressed] == [code]
    assert out.policy.text() == "flags: 1 result changed, 1 of them ignored"
    for level in SEVERITIES:
        rules = policy.from_flags(severity=[f"{code}={level}"], command="verify")
        out = policy.apply_verify(report, policy.Policy(rules, command="verify"))
        assert [verify_judge.severity(i) for i in out.items] == [level, None]
        assert any(verify_judge.fails(i) for i in out.items) == (level == "error")
    # --fail-on tolerates it: a warning, raised back to an error by a rule
    other = next(s for s in VERIFY_CODES if s != code)
    assert verify_judge.severity(item, (other,)) == "warning" and not verify_judge.fails(item, (other,))
    out = policy.apply_verify(report, policy.Policy(policy.from_flags(severity=[f"{code}=error"], command="verify"),
                                                    command="verify"), (other,))
    assert verify_judge.fails(out.items[0], (other,)) and out.items[0].policy.was == "warning"


def test_verify_no_policy_is_the_report_itself():
    report = VerifyReport(True, "cluster", [Item("n", "p", "main", None, None, None, None, "b", "fp8", None,
                                                 verify_judge.MISMATCH, "m")])
    assert policy.apply_verify(report, None) is report
    assert "policy" not in report.to_dict() and "suppressed" not in report.to_dict()


@pytest.mark.parametrize("command, code", [("verify", "binding-auto"), ("verify", "OK"), ("check", "MISMATCH")])
def test_a_code_of_the_other_command_is_unknown(command, code):
    with pytest.raises(PluginError) as exc:
        policy.from_flags(ignore=[code], command=command)
    word = "verify status" if command == "verify" else "finding code"
    assert str(exc.value).startswith(f"--ignore: unknown {word} {code!r}")


def test_a_verify_rule_names_verify_kinds():
    class Doc:
        path, digest = "v.yaml", "sha256:x"
        rules = ({"code": "MISMATCH", "severity": None, "namespaces": None, "kinds": ("KVCachePoolBinding",),
                  "names": None, "selector": None, "reason": "", "where": "v.yaml: rules[0]"},)
    with pytest.raises(PluginError) as exc:
        policy.from_file(Doc(), "verify")
    assert str(exc.value).startswith("v.yaml: rules[0].kinds: unknown kind 'KVCachePoolBinding'")
    Doc.rules = (dict(Doc.rules[0], kinds=("Pod",), code="mismatch"),)
    (rule,) = policy.from_file(Doc(), "verify").rules
    assert rule.code == "MISMATCH" and rule.kinds == {"Pod"}
