"""What a check reports: severities, the registry of finding codes (docs/check.md "Finding codes" is
tested against it), one finding, and the whole report."""

from __future__ import annotations

from kubectl_kvcache.record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from kubectl_kvcache.engine import Cause


ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITIES = (ERROR, WARNING, INFO)

class Code(Record):
    """One finding code's row: its usual severity, the kind of object it is about (as docs/check.md's
    table names it), what it means, and whether it makes `bindings` exit 1. `check` exits 1 on an
    error finding (a warning too with --strict), whatever its code."""

    __slots__ = ("code", "severity", "about", "title", "fails_bindings", "with_setting_on", "of_roles")

    def __init__(self, code: str, severity: str, about: str, title: str, fails_bindings: bool = False,
                 with_setting_on: bool = False, of_roles: bool = False):
        self.code = code
        self.severity = severity
        self.about = about
        self.title = title
        self.fails_bindings = fails_bindings
        # an error of this code is what the Setting on causes (off: the operator renders nothing and
        # refuses nothing, so it does not happen); the others exist either way (judge/gate.py)
        self.with_setting_on = with_setting_on
        # a finding about one role of a deployment: `roles` (its table, its report) shows it
        self.of_roles = of_roles


# The registry: one row per finding code (docs/check.md "Finding codes" is held to it by a test). A new
# finding is a row here and the judge module that emits it (finding(code, ...)).
CODES = {c.code: c for c in (
    Code("binding-dtype-rejected", ERROR, "KVCachePoolBinding",
         "a Binding's dtype is a spelling an engine that will receive it rejects", fails_bindings=True,
         with_setting_on=True),
    Code("binding-missing", ERROR, "the ModelDeployment, Pod or workload naming it",
         "a deployment, Pod or template names a Binding that does not exist", fails_bindings=True),
    Code("binding-auto", WARNING, "KVCachePoolBinding",
         "a stored Binding declares auto: it keeps working, a new one may not"),
    Code("binding-domain-claimed", ERROR, "KVCachePoolBinding",
         "a Binding claims a domain.name another Binding claims on the same master (a backend serving both "
         "their pools): the operator manages it for neither", fails_bindings=True),
    Code("binding-unused", INFO, "KVCachePoolBinding", "a Binding nobody in the input names"),
    Code("role-own-flag", WARNING, "ModelDeployment",
         "a role passes --kv-cache-dtype itself in extraArgs (error when its value differs from the Binding's or "
         "the engine rejects it)", with_setting_on=True, of_roles=True),
    Code("role-owned-arg", ERROR, "ModelDeployment",
         "a role's extraArgs name an argument the operator owns on its engine (SGLang's --disaggregation-* keys, "
         "the store's keys): the webhook refuses every create and update of the deployment, whatever the Setting"),
    Code("takeover-role", INFO, "ModelDeployment",
         "a take-over role (command set) on a pool: what it runs with (warning when it is not the Binding's "
         "dtype, error when the engine rejects it)", of_roles=True),
    Code("injection-refused", ERROR, "Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob",
         "an injection opt-in (Pod or workload template) the webhook refuses", with_setting_on=True),
    Code("injection-unresolved", ERROR, "Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob",
         "the injection webhook cannot resolve what to inject for an opt-in (an engine annotation ParseEngine does "
         "not take, a manufacturer rule, a domain annotation, a Binding being deleted, a pool without "
         "QuotaLedgerAvailable or a client endpoint): refused whatever the Setting"),
    Code("engine-newer-than-data", WARNING, "ModelDeployment, Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, "
         "Job, CronJob", "an engine release newer than the plugin's engine data: judged with the latest release "
         "the data has"),
    Code("recovery-unfinished", ERROR, "KVCachePoolBinding (ConfigMap: a record recover does not write)",
         "a recovery (recover --apply) stopped part-way: its record in the namespace is not finished",
         fails_bindings=True),
    Code("unchecked", WARNING, "any", "something the check needs is not in the input or not decidable"),
    Code("setting-in-flight", ERROR, "Setting",
         "the Setting's spec.value asks for a value its status.value does not report: the operator has not taken "
         "the change in, so nothing judged with it is settled"),
    Code("setting", INFO, "Setting", "the Setting's current value"),
)}
BINDING_FAILURES = frozenset(c.code for c in CODES.values() if c.fails_bindings)


def caused_by_setting_on(findings) -> list:
    """The error findings turning the Setting on causes: the rule judge/gate.py refuses `setting on`
    (and recover's last step) by, and the Setting finding words its fix with."""
    return [f for f in findings if f.severity == ERROR and CODES[f.code].with_setting_on]
ROLE_CODES = frozenset(c.code for c in CODES.values() if c.of_roles)


class Finding(Record):
    __slots__ = ("severity", "code", "namespace", "kind", "name", "message", "fix", "cause", "replicas", "policy")

    def __init__(self, severity: str, code: str, namespace: str | None, kind: str, name: str, message: str,
                 fix: str = "", cause=None, replicas: int = 0, policy=None):
        self.severity = severity
        self.code = code
        self.namespace = namespace
        self.kind = kind
        self.name = name
        self.message = message
        self.fix = fix
        self.cause = cause          # an UNKNOWN's engine.Cause: what would decide it
        self.replicas = replicas    # the replicas that UNKNOWN stands for
        self.policy = policy        # judge.policy.Effect: what a policy rule did to it (None: nothing)

    def to_dict(self):
        return {"severity": self.severity, "code": self.code, "namespace": self.namespace, "kind": self.kind,
                "name": self.name, "message": self.message, "fix": self.fix} | (
            {"cause": self.cause.to_dict(), "replicas": self.replicas} if self.cause is not None else {}) | (
            {"policy": self.policy.to_dict()} if self.policy is not None else {})


def finding(code, obj, message, fix="", severity=None, cause=None, replicas=0):
    """A Finding for `obj` = (namespace, kind, name); the severity defaults to the code's."""
    namespace, kind, name = obj
    return Finding(severity or CODES[code].severity, code, namespace, kind, name, message, fix, cause, replicas)


class Report(Record):
    __slots__ = ("setting", "findings", "bindings", "roles", "checked", "suppressed", "policy", "verdict")
    __hash__ = None     # mutable: not hashable

    def __init__(self, setting: dict, findings: list[Finding], bindings: list, roles: list,
                 checked: dict[str, int], suppressed: list[Finding] | None = None, policy=None, verdict=None):
        self.setting = setting
        self.findings = findings
        self.bindings = bindings    # checks.bindings.BindingEntry
        self.roles = roles          # checks.roles.RoleEntry
        self.checked = checked
        self.suppressed = [] if suppressed is None else suppressed  # findings a policy ignored (judge/policy.py)
        self.policy = policy        # judge.policy.Applied: the policy in force and what it changed (None: none)
        self.verdict = verdict      # judge.verdict.Verdict of the command it is shown for (None: not decided yet)

    def summary(self):
        return {s: sum(1 for f in self.findings if f.severity == s) for s in SEVERITIES}

    def unknown_by_cause(self) -> list[tuple[Cause, int]]:
        """[(cause, replicas)], most replicas first: what would decide the UNKNOWN replicas, so a
        fleet's owner sees what to fix first."""
        counts: dict = {}
        for f in self.findings:
            if f.cause is not None:
                counts[f.cause] = counts.get(f.cause, 0) + f.replicas
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].code, kv[0].subject))

    def rows(self, where: str, rows) -> list[dict]:
        """`rows` (this report's list `where`) as dicts, each with its outcome in the verdict."""
        verdict = self.verdict
        if verdict is None:
            return [r.to_dict() for r in rows]
        return [r.to_dict() | verdict.of(where, n).to_dict() for n, r in enumerate(rows)]

    def verdict_dict(self) -> dict:
        return {"verdict": self.verdict.to_dict()} if self.verdict is not None else {}

    def to_dict(self):
        causes = self.unknown_by_cause()
        return {"setting": self.setting, "findings": self.rows("findings", self.findings),
                "summary": self.summary()} | (
            {"unknownByCause": [c.to_dict() | {"replicas": n} for c, n in causes]} if causes else {}) | (
            {"policy": self.policy.to_dict(), "suppressed": self.rows("suppressed", self.suppressed)}
            if self.policy is not None else {}) | self.verdict_dict()
