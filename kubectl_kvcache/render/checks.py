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


# check's columns, each defined once: the table's header, -o wide's, -o describe's label
F_SEVERITY, F_CODE = Column("severity", lambda f: f.severity, status=True), Column("code", lambda f: f.code)
F_OBJECT = Column("object", lambda f: object_ref(f.kind, f.name))
F_MESSAGE, F_FIX = Column("message", lambda f: f.message, text=True), Column("fix", lambda f: f.fix, text=True)


def _finding_fields(f):
    return [("Name", f.name), ("Namespace", f.namespace), ("Kind", f.kind), (F_SEVERITY.label, f.severity),
            (F_CODE.label, f.code), (F_OBJECT.label, object_ref(f.kind, f.name)), (F_MESSAGE.label, f.message)] + (
        [("Cause", f"{f.cause} ({f.replicas} {'replica' if f.replicas == 1 else 'replicas'})")]
        if f.cause is not None else []) + [(F_FIX.label, f.fix)] + (
        [("Policy", policy_text(f.policy))] if f.policy is not None else [])


CHECK = View(
    columns=(_namespace(lambda f: f.namespace), F_SEVERITY, F_CODE, F_OBJECT, F_MESSAGE),
    wide=(F_FIX,),
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


# bindings' columns, each defined once: the table's header, -o wide's, -o describe's label
B_DTYPE, B_ENGINES = Column("dtype", _binding_field("dtype")), Column("engines", _engines)
B_VERDICT = Column("verdict", lambda e: e.words, status=True)
B_POOL, B_DOMAIN = Column("pool", _binding_field("pool")), Column("domain", _binding_field("domain"))
B_USED_BY = Column("used by", _used_by)


def _binding_fields(e):
    b = e.binding
    return [("Name", e.name), ("Namespace", e.namespace), ("Exists", "yes" if b else "no"),
            (B_POOL.label, b.pool if b else None), (B_DOMAIN.label, b.domain if b else None),
            (B_DTYPE.label, b.dtype if b else None), (B_VERDICT.label, e.verdict), ("Suggested dtype", e.suggestion),
            (B_ENGINES.label, [[engine_source(a)] for a in e.engines()]),
            (B_USED_BY.label, [[u.kind, u.name] + ([f"({u.problem})"] if u.problem else []) for u in e.uses]),
            ("Rejected by", [[f"{u.kind}/{u.name}", engine_token(at), why] for u, at, why in e.rejected_by])]


BINDINGS = View(
    columns=(_namespace(lambda e: e.namespace), Column("binding", lambda e: e.name), B_DTYPE, B_ENGINES,
             Column("users", _users), B_VERDICT),
    wide=(B_POOL, B_DOMAIN, Column("suggested", lambda e: e.suggestion), B_USED_BY),
    rows=lambda report: report.bindings,
    to_dict=lambda report: {"setting": report.setting, "items": report.rows("bindings", report.bindings)}
    | report.verdict_dict(),
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


# roles' columns, each defined once: the table's header, -o wide's, -o describe's label
R_DEPLOYMENT, R_ROLE = Column("deployment", lambda e: e.deployment), Column("role", lambda e: e.role)
R_DTYPE, R_AFTER = Column("dtype", lambda e: e.dtype), Column("after upgrade", after_token)
R_VERDICT, R_TODAY = Column("verdict", lambda e: e.verdict, status=True), Column("today", lambda e: e.today, text=True)
R_TYPE = Column("type", lambda e: e.type)
R_ENGINE = Column("engine", lambda e: engine_token(e.engine) if e.engine else None)
R_BINDING = Column("binding", lambda e: e.binding)


def _role_fields(e):
    return [(R_DEPLOYMENT.label, e.deployment), ("Namespace", e.namespace), (R_ROLE.label, e.role),
            (R_TYPE.label, e.type), (R_ENGINE.label, engine_source(e.engine) if e.engine else None),
            (R_BINDING.label, e.binding), (R_DTYPE.label, e.dtype), (R_TODAY.label, e.today),
            (R_AFTER.label, e.after), (R_VERDICT.label, e.verdict), ("Severity", e.severity), ("Reason", e.reason),
            ("Flags", [[f["path"], _flag_text(f)] + ([f["ambiguous"]] if f.get("ambiguous") else [])
                       for f in e.flags])]


ROLES = View(
    columns=(_namespace(lambda e: e.namespace), R_DEPLOYMENT, R_ROLE, R_DTYPE, R_AFTER, R_VERDICT, R_TODAY),
    wide=(R_TYPE, R_ENGINE, R_BINDING, Column("role flag", _role_flag, text=True)),
    rows=lambda report: report.roles,
    to_dict=lambda report: {"setting": report.setting, "items": report.rows("roles", report.roles)}
    | report.verdict_dict(),
    empty="pool-attached roles that pass --kv-cache-dtype themselves or take over the command",
    describe=_role_fields,
    document="roles",
    kind="RoleList",
)

VIEWS = {"check": CHECK, "bindings": BINDINGS, "roles": ROLES}
