"""What a check reports: severities, the registry of finding codes (docs/check.md "Finding codes" is
tested against it), one finding, and the whole report."""

from __future__ import annotations

from kubectl_kvcache.record import Record


ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITIES = (ERROR, WARNING, INFO)

class Code(Record):
    """One finding code's row: its usual severity, the kind of object it is about (as docs/check.md's
    table names it), what it means, and whether it makes `bindings` exit 1. `check` exits 1 on an
    error finding (a warning too with --strict), whatever its code."""

    __slots__ = ("code", "severity", "about", "title", "fails_bindings")

    def __init__(self, code: str, severity: str, about: str, title: str, fails_bindings: bool = False):
        self.code = code
        self.severity = severity
        self.about = about
        self.title = title
        self.fails_bindings = fails_bindings


# The registry: one row per finding code (docs/check.md "Finding codes" is held to it by a test). A new
# finding is a row here and the judge module that emits it (finding(code, ...)).
CODES = {c.code: c for c in (
    Code("binding-dtype-rejected", ERROR, "KVCachePoolBinding",
         "a Binding's dtype is a spelling an engine that will receive it rejects", fails_bindings=True),
    Code("binding-missing", ERROR, "the ModelDeployment, Pod or workload naming it",
         "a deployment, Pod or template names a Binding that does not exist", fails_bindings=True),
    Code("binding-auto", WARNING, "KVCachePoolBinding",
         "a stored Binding declares auto: it keeps working, a new one may not"),
    Code("binding-domain-claimed", ERROR, "KVCachePoolBinding",
         "a Binding reuses a domain.name another Binding still claims on the same pool: the operator will not "
         "bind it", fails_bindings=True),
    Code("binding-unused", INFO, "KVCachePoolBinding", "a Binding nobody in the input names"),
    Code("role-own-flag", WARNING, "ModelDeployment",
         "a role passes --kv-cache-dtype itself in extraArgs (error when its value differs from the Binding's or "
         "the engine rejects it)"),
    Code("takeover-role", INFO, "ModelDeployment",
         "a take-over role (command set) on a pool: what it runs with (warning when it is not the Binding's "
         "dtype, error when the engine rejects it)"),
    Code("injection-refused", ERROR, "Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob",
         "an injection opt-in (Pod or workload template) the webhook refuses"),
    Code("unchecked", WARNING, "any", "something the check needs is not in the input or not decidable"),
    Code("setting", INFO, "Setting", "the Setting's current value"),
)}
BINDING_FAILURES = frozenset(c.code for c in CODES.values() if c.fails_bindings)


class Finding(Record):
    __slots__ = ("severity", "code", "namespace", "kind", "name", "message", "fix")

    def __init__(self, severity: str, code: str, namespace: str | None, kind: str, name: str, message: str,
                 fix: str = ""):
        self.severity = severity
        self.code = code
        self.namespace = namespace
        self.kind = kind
        self.name = name
        self.message = message
        self.fix = fix

    def to_dict(self):
        return {"severity": self.severity, "code": self.code, "namespace": self.namespace, "kind": self.kind,
                "name": self.name, "message": self.message, "fix": self.fix}


def finding(code, obj, message, fix="", severity=None):
    """A Finding for `obj` = (namespace, kind, name); the severity defaults to the code's."""
    namespace, kind, name = obj
    return Finding(severity or CODES[code].severity, code, namespace, kind, name, message, fix)


class Report(Record):
    __slots__ = ("setting", "findings", "bindings", "roles", "checked")
    __hash__ = None     # mutable: not hashable

    def __init__(self, setting: dict, findings: list[Finding], bindings: list, roles: list,
                 checked: dict[str, int]):
        self.setting = setting
        self.findings = findings
        self.bindings = bindings    # checks.bindings.BindingEntry
        self.roles = roles          # checks.roles.RoleEntry
        self.checked = checked

    def summary(self):
        return {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}

    def to_dict(self):
        return {"kind": "CheckReport", "setting": self.setting,
                "findings": [f.to_dict() for f in self.findings], "summary": self.summary()}
