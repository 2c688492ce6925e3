"""What a check reports: severities, the finding codes (README "Finding codes" mirrors them), one
finding, and the whole report."""

from dataclasses import dataclass
from typing import Dict, List, Optional


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



@dataclass(frozen=True)
class Finding:
    severity: str
    code: str
    namespace: Optional[str]
    kind: str
    name: str
    message: str
    fix: str = ""

    def to_dict(self):
        return {"severity": self.severity, "code": self.code, "namespace": self.namespace, "kind": self.kind,
                "name": self.name, "message": self.message, "fix": self.fix}


def finding(code, obj, message, fix="", severity=None):
    """A Finding for `obj` = (namespace, kind, name); the severity defaults to the code's."""
    namespace, kind, name = obj
    return Finding(severity or CODES[code][0], code, namespace, kind, name, message, fix)


@dataclass
class Report:
    setting: dict
    findings: List[Finding]
    bindings: List       # checks.bindings.BindingEntry
    roles: List          # checks.roles.RoleEntry
    checked: Dict[str, int]

    def summary(self):
        return {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}

    def to_dict(self):
        return {"kind": "CheckReport", "setting": self.setting,
                "findings": [f.to_dict() for f in self.findings], "summary": self.summary()}
