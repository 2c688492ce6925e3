"""The views of check, bindings and roles, and check's summary line."""

from kubectl_kvcache.judge.checks import SEVERITIES
from kubectl_kvcache.engine import IMAGE_TAG, MINIMUM, POD_IMAGE, SPEC_IMAGE, SPEC_VERSION
from kubectl_kvcache.render.core import Column, View

_USED_BY_NAMES = 3   # up to this many users are named in the table; more are counted (wide: all named)
_SHORT_SOURCE = {SPEC_VERSION: "", SPEC_IMAGE: "image", POD_IMAGE: "pods", IMAGE_TAG: "image", MINIMUM: "minimum"}


def engine_label(at):
    """`vllm 0.29.0`, `sglang 0.5.19 (image)`: an engine release, short, for tables."""
    short = _SHORT_SOURCE.get(at.source, "")
    return f"{at.engine} {at.version}" + (f" ({short})" if short else "")


# -- check -----------------------------------------------------------------------------------

CHECK = View(
    columns=(Column("severity", lambda f: f.severity), Column("code", lambda f: f.code),
             Column("namespace", lambda f: f.namespace), Column("kind", lambda f: f.kind),
             Column("name", lambda f: f.name), Column("message", lambda f: f.message, shorten=True)),
    wide=(Column("fix", lambda f: f.fix),),
    rows=lambda report: report.findings,
    to_dict=lambda report: report.to_dict(),
    empty="KVCachePoolBindings, pool-attached ModelDeployments or injection opt-ins",
)


def summary(report):
    counts = report.summary()

    def plural(n, word):
        return f"{n} {word}" + ("" if n == 1 or word == "info" else "s")

    return ", ".join(plural(counts[s], s) for s in SEVERITIES)


# -- bindings --------------------------------------------------------------------------------

def _used_by(entry, wide=False):
    if not entry.uses:
        return "0"
    names = [u.ref for u in entry.uses]
    if wide or len(names) <= _USED_BY_NAMES:
        return ", ".join(names)
    return str(len(names))


def _binding_field(name):
    return lambda e: getattr(e.binding, name) if e.binding else None


BINDINGS = View(
    columns=(Column("namespace", lambda e: e.namespace), Column("binding", lambda e: e.name),
             Column("pool", _binding_field("pool")), Column("domain", _binding_field("domain")),
             Column("dtype", _binding_field("dtype")),
             Column("engines", lambda e: ", ".join(engine_label(a) for a in e.engines()), shorten=True),
             Column("used by", _used_by, lambda e: _used_by(e, wide=True), shorten=True),
             Column("verdict", lambda e: e.verdict)),
    wide=(Column("suggested dtype", lambda e: e.suggestion),),
    rows=lambda report: report.bindings,
    to_dict=lambda report: {"kind": "BindingList", "setting": report.setting,
                            "items": [e.to_dict() for e in report.bindings]},
    empty="KVCachePoolBindings",
)


# -- roles -----------------------------------------------------------------------------------

def _role_flag(entry):
    """`--kv-cache-dtype=fp8_e5m2 (roles[0].extraArgs[2])`: each spelling and where it is."""
    if not entry.flags:
        return "none in its command" if entry.type == "take-over" else None
    shown = []
    for f in entry.flags:
        text = f["text"] if "=" in f["text"] or f.get("value") is None else f"{f['text']} {f['value']}"
        shown.append(f"{text} ({f['path'].split('.', 1)[1]})")
    return "; ".join(shown)


ROLES = View(
    columns=(Column("namespace", lambda e: e.namespace), Column("deployment", lambda e: e.deployment),
             Column("role", lambda e: e.role), Column("engine", lambda e: engine_label(e.engine) if e.engine else None),
             Column("binding", lambda e: e.binding), Column("dtype", lambda e: e.dtype),
             Column("role flag", _role_flag, shorten=True), Column("today", lambda e: e.today),
             Column("after upgrade", lambda e: e.after), Column("verdict", lambda e: e.verdict)),
    wide=(Column("type", lambda e: e.type), Column("reason", lambda e: e.reason)),
    rows=lambda report: report.roles,
    to_dict=lambda report: {"kind": "RoleList", "setting": report.setting,
                            "items": [e.to_dict() for e in report.roles]},
    empty="pool-attached roles that pass --kv-cache-dtype themselves or take over the command",
)

VIEWS = {"check": CHECK, "bindings": BINDINGS, "roles": ROLES}
