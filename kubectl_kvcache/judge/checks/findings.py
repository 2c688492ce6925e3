"""What a check reports: severities, the finding codes (README "Finding codes" mirrors them), one
finding, and the whole report."""

from __future__ import annotations

from kubectl_kvcache.record import Record


ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITIES = (ERROR, WARNING, INFO)

# Every finding code, its usual severity and what it means (README "Finding codes" mirrors it).
CODES = {
    "binding-dtype-rejected": (ERROR, "a Binding's dtype is a spelling an engine that will receive it rejects"),
    "binding-missing": (ERROR, "a deployment, Pod or template names a Binding that does not exist"),
    "binding-auto": (WARNING, "a stored Binding declares auto: it keeps working, a new one may not"),
    "binding-domain-claimed": (ERROR, "a Binding reuses a domain.name another Binding still claims on the same "
                                      "pool: the operator will not bind it"),
    "binding-unused": (INFO, "a Binding nobody in the input names"),
    "role-own-flag": (WARNING, "a role passes --kv-cache-dtype itself in extraArgs (error when its value "
                               "differs from the Binding's or the engine rejects it)"),
    "takeover-role": (INFO, "a take-over role (command set) on a pool: what it runs with (warning when it is "
                            "not the Binding's dtype, error when the engine rejects it)"),
    "injection-refused": (ERROR, "an injection opt-in (Pod or workload template) the webhook refuses"),
    "unchecked": (WARNING, "something the check needs is not in the input or not decidable"),
    "setting": (INFO, "the Setting's current value"),
}



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
    return Finding(severity or CODES[code][0], code, namespace, kind, name, message, fix)


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
