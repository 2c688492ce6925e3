"""Per-code policy (docs/policy.md): after check or verify has judged, before anything is rendered,
each result's severity set or the result ignored by the rules of a policy file and of --ignore and
--severity. Pure: a report and rules in, a report out. One matcher for both commands: what differs
is their vocabulary (Terms: check's finding codes, verify's statuses) and what a result is about
(a check finding names its object; a verify replica is its Pod, or its ModelDeployment when it
has none).

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
# What verify's results are about: a replica's Pod, or its ModelDeployment when it has no Pod (NO-POD).
VERIFY_KINDS = ("Pod", "ModelDeployment")
_RANK = {s: n for n, s in enumerate(SEVERITIES)}


class Terms(Record):
    """What one command's policy may name: its codes (a rule's `code`), the kinds its results are
    about, what a code is called in errors, what a result is called in reports, and whether codes
    are matched whatever their case (verify's statuses, as --fail-on takes them)."""

    __slots__ = ("command", "codes", "kinds", "code_word", "noun", "upper", "theirs")

    def __init__(self, command: str, codes: tuple[str, ...], kinds: tuple[str, ...], code_word: str, noun: str,
                 upper: bool = False, theirs: str | None = None):
        self.command = command
        self.codes = codes
        self.kinds = kinds
        self.code_word = code_word
        self.noun = noun
        self.upper = upper
        self.theirs = theirs or f"{command}'s codes"     # how an error names the list of codes


def _verify_terms() -> Terms:
    from kubectl_kvcache.judge import verify

    return Terms("verify", tuple(s for s in verify.STATUSES if s != verify.OK), VERIFY_KINDS, "verify status",
                 "result", upper=True)


def _check_terms() -> Terms:
    return Terms("check", tuple(CODES), KINDS, "finding code", "finding", theirs="the codes")


# The policy vocabularies, by the name a command's flags give (cli/flags.PolicyTerms): check's
# finding codes, verify's statuses but OK.
TERMS = {"check": _check_terms, "verify": _verify_terms}


def terms(name: str = "check") -> Terms:
    """The vocabulary named `name` (TERMS)."""
    return TERMS[name]()


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
    """The rules in force and where they came from: `file` and `digest` (None: flags only), and
    the command whose codes they name."""

    __slots__ = ("rules", "file", "digest", "command")

    def __init__(self, rules: tuple[Rule, ...], file: str | None = None, digest: str | None = None,
                 command: str = "check"):
        self.rules = rules
        self.file = file
        self.digest = digest
        self.command = command


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
        n, noun = self.changed, terms(self.policy.command).noun
        return f"{source}: {n} {noun if n == 1 else noun + 's'} changed, {self.ignored} of them ignored"


# -- building the rules ----------------------------------------------------------------------

def _known_code(code, where, vocabulary: Terms):
    """`code` as the command spells it; an unknown one (for this command) is an error naming `where`."""
    found = code.upper() if vocabulary.upper else code
    if found not in vocabulary.codes:
        raise PluginError(f"{where}: unknown {vocabulary.code_word} {code!r} ({vocabulary.theirs}: "
                          f"{', '.join(vocabulary.codes)})")
    return found


def from_file(document, command: str = "check") -> Policy:
    """The rules of a load.policy.PolicyFile, each code and kind checked against `command`'s terms."""
    vocabulary = terms(command)
    rules = []
    for r in document.rules:
        code = _known_code(r["code"], r["where"] + ".code", vocabulary)
        for kind in r["kinds"] or ():
            if kind not in vocabulary.kinds:
                raise PluginError(f"{r['where']}.kinds: unknown kind {kind!r} ({vocabulary.noun}s of "
                                  f"{command} are about: {', '.join(vocabulary.kinds)})")
        rules.append(Rule(code, r["severity"], _set(r["namespaces"]), _set(r["kinds"]), _set(r["names"]),
                          r["selector"], r["reason"], r["where"]))
    return Policy(tuple(rules), document.path, document.digest, command)


def _set(values):
    return None if values is None else frozenset(values)


def _codes(values, flag, vocabulary):
    """Codes from a repeatable flag; each value may also be a comma-separated list (pflag's StringSlice)."""
    for value in values:
        for code in value.split(","):
            yield _known_code(code.strip(), flag, vocabulary)


def from_flags(ignore=(), severity=(), command: str = "check") -> tuple[Rule, ...]:
    """--ignore CODE and --severity CODE=LEVEL, for every result of the code, in that order."""
    vocabulary = terms(command)
    rules = [Rule(code, None, where="--ignore") for code in _codes(ignore, "--ignore", vocabulary)]
    for value in severity:
        for pair in value.split(","):
            code, eq, level = pair.partition("=")
            if not eq or level not in SEVERITIES:
                raise PluginError(f"--severity: {pair!r}: must be CODE=LEVEL, LEVEL one of {', '.join(SEVERITIES)}")
            rules.append(Rule(_known_code(code.strip(), "--severity", vocabulary), level, where="--severity"))
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


def effect(policy: Policy, result, labels=_no_labels) -> Effect | None:
    """What the last rule matching `result` (anything with code, severity, namespace, kind and
    name) does to it; None when no rule matches or the one that does leaves its severity as it is."""
    rule = next((r for r in reversed(policy.rules) if r.matches(result, labels)), None)
    if rule is None or rule.severity == result.severity:
        return None
    return Effect(result.severity, rule.severity, rule.where, rule.reason)


def apply(report, policy: Policy | None, labels=_no_labels):
    """`report` (checks.Report) with the policy's rules applied; with no policy, itself."""
    if policy is None:
        return report
    kept, suppressed, changed = [], list(report.suppressed), 0
    for f in report.findings:
        change = effect(policy, f, labels)
        if change is None:
            kept.append(f)
            continue
        changed += 1
        if change.now is None:
            suppressed.append(f.replace(policy=change))
        else:
            kept.append(f.replace(severity=change.now, policy=change))
    if changed:     # the Setting's finding stays last, as check puts it
        kept.sort(key=lambda f: (f.code == "setting", _RANK[f.severity], f.namespace or "", f.kind, f.name, f.code))
    ignored = len(suppressed) - len(report.suppressed)
    return report.replace(findings=kept, suppressed=suppressed, policy=Applied(policy, changed, ignored))


class VerifyResult(Record):
    """A verify replica as a rule matches it: its status is its code, its severity what
    --fail-on makes it (judge.verify.severity), and it is about its Pod, or its ModelDeployment
    when it has none."""

    __slots__ = ("code", "severity", "namespace", "kind", "name")

    def __init__(self, code: str, severity: str, namespace: str, kind: str, name: str):
        self.code = code
        self.severity = severity
        self.namespace = namespace
        self.kind = kind
        self.name = name


def verify_result(item, fail_on=()) -> VerifyResult:
    from kubectl_kvcache.judge import verify

    kind, name = ("Pod", item.pod) if item.pod is not None else ("ModelDeployment", item.deployment or "")
    return VerifyResult(item.status, verify.severity(item, fail_on) or "", item.namespace, kind, name)


def apply_verify(report, policy: Policy | None, fail_on=(), labels=_no_labels):
    """`report` (verify.Report) with the policy's rules applied; with no policy, itself. An OK
    replica is no result a rule can name (OK is not one of verify's codes); a replica a rule
    changed carries its Effect, one it ignored leaves `items` for `suppressed`. The rollout's
    per-deployment progress is a fact about the replicas, and stays as judged."""
    if policy is None:
        return report
    kept, suppressed, changed = [], list(report.suppressed), 0
    for item in report.items:
        change = None if item.policy is not None else effect(policy, verify_result(item, fail_on), labels)
        if change is None:
            kept.append(item)
            continue
        changed += 1
        (kept if change.now is not None else suppressed).append(item.replace(policy=change))
    ignored = len(suppressed) - len(report.suppressed)
    return report.replace(items=kept, suppressed=suppressed, policy=Applied(policy, changed, ignored))
