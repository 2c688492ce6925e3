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
