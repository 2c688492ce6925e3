"""Per-code policy (docs/policy.md): after check has judged, before anything is rendered, each
finding's severity set or the finding ignored by the rules of a policy file and of --ignore and
--severity. Pure: a report and rules in, a report out.

A finding is matched by the rules in order and the last one that matches wins (the file's rules,
then the flags', so a flag overrides the file, as kubectl's flags override its kubeconfig). An
ignored finding leaves the findings (the summary, the tables, the exit code never see it) and is
kept in the report's `suppressed`, so that machine-readable output still counts it (as SARIF's
`suppressions`); a finding whose severity a rule changed carries `policy` with the severity it had.
"""

from __future__ import annotations

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.judge.checks.findings import CODES, SEVERITIES
from kubectl_kvcache.kube import selector as label_selector
from kubectl_kvcache.record import Record

# The kinds findings are about (docs/check.md "Finding codes", its "about" column), for a rule's `kinds`.
KINDS = ("KVCachePoolBinding", "ModelDeployment", "Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet",
         "Job", "CronJob", "Setting", "Workloads")
_RANK = {s: n for n, s in enumerate(SEVERITIES)}


class Rule(Record):
    """One rule: a code, what it does (`severity`, None: ignore) and which findings of that code
    (None: any namespace, kind, name or labels). `where`: `FILE: rules[N]`, `--ignore` or `--severity`."""

    __slots__ = ("code", "severity", "namespaces", "kinds", "names", "selector", "reason", "where")

    def __init__(self, code: str, severity: str | None, namespaces=None, kinds=None, names=None,
                 selector: str | None = None, reason: str = "", where: str = ""):
        self.code = code
        self.severity = severity
        self.namespaces = namespaces
        self.kinds = kinds
        self.names = names
        self.selector = selector
        self.reason = reason
        self.where = where

    def matches(self, f, labels) -> bool:
        return (f.code == self.code
                and (self.namespaces is None or f.namespace in self.namespaces)
                and (self.kinds is None or f.kind in self.kinds)
                and (self.names is None or f.name in self.names)
                and (self.selector is None or label_selector.matches(labels(f.kind, f.namespace, f.name),
                                                                     self.selector)))


class Effect(Record):
    """What a rule did to one finding: the severity it had, the one it has now (None: ignored),
    the rule (`where`) and its reason."""

    __slots__ = ("was", "now", "where", "reason")

    def __init__(self, was: str, now: str | None, where: str, reason: str = ""):
        self.was = was
        self.now = now
        self.where = where
        self.reason = reason

    def to_dict(self):
        return {"severity": self.was, "rule": self.where} | ({"reason": self.reason} if self.reason else {})


class Policy(Record):
    """The rules in force and where they came from: `file` and `digest` (None: flags only)."""

    __slots__ = ("rules", "file", "digest")

    def __init__(self, rules: tuple[Rule, ...], file: str | None = None, digest: str | None = None):
        self.rules = rules
        self.file = file
        self.digest = digest


class Applied(Record):
    """What a policy did to a report, for its header: the policy, how many findings it changed
    (ignored or given another severity) and how many of those it ignored."""

    __slots__ = ("policy", "changed", "ignored")

    def __init__(self, policy: Policy, changed: int, ignored: int):
        self.policy = policy
        self.changed = changed
        self.ignored = ignored

    def to_dict(self):
        return {"file": self.policy.file, "digest": self.policy.digest, "rules": len(self.policy.rules),
                "changed": self.changed, "ignored": self.ignored}

    def text(self) -> str:
        """`policy.yaml (sha256:...): 3 findings changed, 2 of them ignored`."""
        source = f"{self.policy.file} ({self.policy.digest})" if self.policy.file else "flags"
        flags = sum(1 for r in self.policy.rules if r.where.startswith("--"))
        if self.policy.file and flags:
            source += " and flags"
        n = self.changed
        return f"{source}: {n} {'finding' if n == 1 else 'findings'} changed, {self.ignored} of them ignored"


# -- building the rules ----------------------------------------------------------------------

def _known_code(code, where):
    if code not in CODES:
        raise PluginError(f"{where}: unknown finding code {code!r} (the codes: {', '.join(CODES)})")
    return code


def from_file(document) -> Policy:
    """The rules of a load.policy.PolicyFile, each code checked against the registry (CODES)."""
    rules = []
    for r in document.rules:
        _known_code(r["code"], r["where"] + ".code")
        for kind in r["kinds"] or ():
            if kind not in KINDS:
                raise PluginError(f"{r['where']}.kinds: unknown kind {kind!r} (findings are about: "
                                  f"{', '.join(KINDS)})")
        rules.append(Rule(r["code"], r["severity"], _set(r["namespaces"]), _set(r["kinds"]), _set(r["names"]),
                          r["selector"], r["reason"], r["where"]))
    return Policy(tuple(rules), document.path, document.digest)


def _set(values):
    return None if values is None else frozenset(values)


def _codes(values, flag):
    """Codes from a repeatable flag; each value may also be a comma-separated list (pflag's StringSlice)."""
    for value in values:
        for code in value.split(","):
            yield _known_code(code.strip(), flag)


def from_flags(ignore=(), severity=()) -> tuple[Rule, ...]:
    """--ignore CODE and --severity CODE=LEVEL, for every finding of the code, in that order."""
    rules = [Rule(code, None, where="--ignore") for code in _codes(ignore, "--ignore")]
    for value in severity:
        for pair in value.split(","):
            code, eq, level = pair.partition("=")
            if not eq or level not in SEVERITIES:
                raise PluginError(f"--severity: {pair!r}: must be CODE=LEVEL, LEVEL one of {', '.join(SEVERITIES)}")
            rules.append(Rule(_known_code(code.strip(), "--severity"), level, where="--severity"))
    return tuple(rules)


# -- applying them ---------------------------------------------------------------------------

def labels_of(snapshot):
    """(kind, namespace, name) -> labels of every object a finding can be about (what a rule's
    selector matches; an object not read, or without labels, has none)."""
    found = {}
    for d in snapshot.deployments.values():
        found[("ModelDeployment", d.namespace, d.name)] = d.labels
    for b in snapshot.bindings.values():
        found[("KVCachePoolBinding", b.namespace, b.name)] = b.labels
    for p in snapshot.pods:
        found[("Pod", p.namespace, p.name)] = p.labels
    for w in snapshot.workloads:
        found[(w.kind, w.namespace, w.name)] = w.own_labels     # its own, as kubectl get -l matches it

    def labels(kind, namespace, name):
        return found.get((kind, namespace, name)) or {}
    return labels


def _no_labels(kind, namespace, name):
    return {}


def apply(report, policy: Policy | None, labels=_no_labels):
    """`report` (checks.Report) with the policy's rules applied; with no policy, itself."""
    if policy is None:
        return report
    kept, suppressed, changed = [], list(report.suppressed), 0
    for f in report.findings:
        rule = next((r for r in reversed(policy.rules) if r.matches(f, labels)), None)
        if rule is None or rule.severity == f.severity:
            kept.append(f)
            continue
        changed += 1
        effect = Effect(f.severity, rule.severity, rule.where, rule.reason)
        if rule.severity is None:
            suppressed.append(f.replace(policy=effect))
        else:
            kept.append(f.replace(severity=rule.severity, policy=effect))
    if changed:     # the Setting's finding stays last, as check puts it
        kept.sort(key=lambda f: (f.code == "setting", _RANK[f.severity], f.namespace or "", f.kind, f.name, f.code))
    ignored = len(suppressed) - len(report.suppressed)
    return report.replace(findings=kept, suppressed=suppressed, policy=Applied(policy, changed, ignored))
