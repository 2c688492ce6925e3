"""The views of check, bindings and roles, and check's summary line.

Default tables are short columns, at most one free-text column last (check's MESSAGE, as
`kubectl get events` prints its MESSAGE); -o wide adds short columns; -o describe has every
field in full, the fixes included. No cell but the free-text one holds a space."""

from kubectl_kvcache.judge.checks import SEVERITIES
from kubectl_kvcache.render.core import Column, View, scope_args
from kubectl_kvcache.render.labels import engine_label, engine_source, engine_token, release_label, release_source

__all__ = ["engine_label", "engine_source", "engine_token", "release_label", "release_source"]

def object_ref(kind, name):
    """`kvcachepoolbinding/sgl-fp8`: kind/name as kubectl's OBJECT column writes it (and kubectl
    get/describe accept)."""
    return f"{kind.lower()}/{name}"


def _namespace(get):
    return Column("namespace", get, namespace=True)


# -- check -----------------------------------------------------------------------------------

def policy_text(effect) -> str:
    """What a policy rule did to a result: `--severity: was warning (why)`."""
    return f"{effect.where}: was {effect.was}" + (f" ({effect.reason})" if effect.reason else "")


def _finding_fields(f):
    return [("Name", f.name), ("Namespace", f.namespace), ("Kind", f.kind), ("Severity", f.severity),
            ("Code", f.code), ("Object", object_ref(f.kind, f.name)), ("Message", f.message)] + (
        [("Cause", f"{f.cause} ({f.replicas} {'replica' if f.replicas == 1 else 'replicas'})")]
        if f.cause is not None else []) + [("Fix", f.fix)] + (
        [("Policy", policy_text(f.policy))] if f.policy is not None else [])


CHECK = View(
    columns=(_namespace(lambda f: f.namespace), Column("severity", lambda f: f.severity, status=True),
             Column("code", lambda f: f.code), Column("object", lambda f: object_ref(f.kind, f.name)),
             Column("message", lambda f: f.message, text=True)),
    wide=(Column("fix", lambda f: f.fix, text=True),),
    rows=lambda report: report.findings,
    to_dict=lambda report: report.to_dict(),
    empty="KVCachePoolBindings, pool-attached ModelDeployments or injection opt-ins",
    describe=_finding_fields,
    document="check",
    kind="CheckReport",
    items="findings",
)


def summary(report):
    counts = report.summary()

    def plural(n, word):
        return f"{n} {word}" + ("" if n == 1 or word == "info" else "s")

    text = ", ".join(plural(counts[s], s) for s in SEVERITIES)
    causes = report.unknown_by_cause()
    if causes:
        text += "; UNKNOWN replicas by what would decide them: " + ", ".join(
            f"{n} {cause}" for cause, n in causes)
    if report.policy is not None:
        text += "; policy " + report.policy.text()
    return text


def fix_hint(report, scope, output) -> str | None:
    """The default table has no FIX column (80 columns): where findings carry a fix, say where it
    is, on the same scope and input."""
    if output.format != "table" or not any(getattr(f, "fix", None) and f.severity in SEVERITIES[:2]
                                                 for f in VIEWS["check"].rows(report)):
        return None
    return f"next: kubectl kvcache check {' '.join(scope_args(scope) + ['-o', 'wide'])}   (adds the FIX column)"


# -- bindings --------------------------------------------------------------------------------

def _users(entry):
    return str(len(entry.uses))


def _used_by(entry):
    return ",".join(u.ref for u in entry.uses) if entry.uses else None


def _binding_field(name):
    return lambda e: getattr(e.binding, name) if e.binding else None


def _engines(entry):
    return ",".join(engine_token(a) for a in entry.engines()) or None


def _binding_fields(e):
    b = e.binding
    return [("Name", e.name), ("Namespace", e.namespace), ("Exists", "yes" if b else "no"),
            ("Pool", b.pool if b else None), ("Domain", b.domain if b else None), ("Dtype", b.dtype if b else None),
            ("Verdict", e.verdict), ("Suggested dtype", e.suggestion),
            ("Engines", [[engine_source(a)] for a in e.engines()]),
            ("Used by", [[u.kind, u.name] + ([f"({u.problem})"] if u.problem else []) for u in e.uses]),
            ("Rejected by", [[f"{u.kind}/{u.name}", engine_token(at), why] for u, at, why in e.rejected_by])]


BINDINGS = View(
    columns=(_namespace(lambda e: e.namespace), Column("binding", lambda e: e.name),
             Column("dtype", _binding_field("dtype")), Column("engines", _engines),
             Column("users", _users), Column("verdict", lambda e: e.words, status=True)),
    wide=(Column("pool", _binding_field("pool")), Column("domain", _binding_field("domain")),
          Column("suggested", lambda e: e.suggestion), Column("used by", _used_by)),
    rows=lambda report: report.bindings,
    to_dict=lambda report: {"setting": report.setting, "items": [e.to_dict() for e in report.bindings]},
    empty="KVCachePoolBindings",
    describe=_binding_fields,
    document="bindings",
    kind="BindingList",
)


# -- roles -----------------------------------------------------------------------------------

def _flag_text(f):
    return f["text"] if "=" in f["text"] or f.get("value") is None else f"{f['text']} {f['value']}"


def _role_flag(entry):
    """`--kv-cache-dtype=fp8_e5m2 (roles[0].extraArgs[2])`: each spelling and where it is."""
    if not entry.flags:
        return "none in its command" if entry.type == "take-over" else None
    return "; ".join(f"{_flag_text(f)} ({f['path'].split('.', 1)[1]})" for f in entry.flags)


_ENGINE_DEFAULT = "auto (engine default)"     # judge/checks/roles._shown: no flag, the engine's default


def after_token(entry):
    """What the role runs after the upgrade, as one word: `auto` for the engine's default."""
    return "auto" if entry.after == _ENGINE_DEFAULT else entry.after


def _role_fields(e):
    return [("Deployment", e.deployment), ("Namespace", e.namespace), ("Role", e.role),
            ("Type", e.type), ("Engine", engine_source(e.engine) if e.engine else None),
            ("Binding", e.binding), ("Dtype", e.dtype), ("Today", e.today), ("After upgrade", e.after),
            ("Verdict", e.verdict), ("Severity", e.severity), ("Reason", e.reason),
            ("Flags", [[f["path"], _flag_text(f)] + ([f["ambiguous"]] if f.get("ambiguous") else [])
                       for f in e.flags])]


ROLES = View(
    columns=(_namespace(lambda e: e.namespace), Column("deployment", lambda e: e.deployment),
             Column("role", lambda e: e.role), Column("dtype", lambda e: e.dtype),
             Column("after upgrade", after_token), Column("verdict", lambda e: e.verdict, status=True),
             Column("today", lambda e: e.today, text=True)),
    wide=(Column("type", lambda e: e.type), Column("engine", lambda e: engine_token(e.engine) if e.engine else None),
          Column("binding", lambda e: e.binding), Column("role flag", _role_flag, text=True)),
    rows=lambda report: report.roles,
    to_dict=lambda report: {"setting": report.setting, "items": [e.to_dict() for e in report.roles]},
    empty="pool-attached roles that pass --kv-cache-dtype themselves or take over the command",
    describe=_role_fields,
    document="roles",
    kind="RoleList",
)

VIEWS = {"check": CHECK, "bindings": BINDINGS, "roles": ROLES}
