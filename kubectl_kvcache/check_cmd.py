"""`check`, `bindings` and `roles`: load a snapshot, judge it (`checks`), render, pick the exit code.

Exit codes, as `verify`: 0 no errors (warnings too with --strict), 1 errors found, 2 the
plugin could not check (raised as PluginError by the sources and turned into 2 by the CLI).
"""

from kubectl_kvcache import checks, commands, render, sources

EXIT_OK, EXIT_FINDINGS = commands.EXIT_OK, commands.EXIT_FINDINGS

CHECK_COLUMNS = ("severity", "code", "namespace", "kind", "name", "message")
CHECK_WIDE = CHECK_COLUMNS + ("fix",)

BINDING_COLUMNS = ("namespace", "binding", "pool", "domain", "dtype", "engines", "used by", "verdict")
BINDING_WIDE = BINDING_COLUMNS + ("suggested dtype",)

ROLE_COLUMNS = ("namespace", "deployment", "role", "engine", "binding", "dtype", "role flag", "today",
                "after upgrade", "verdict")
ROLE_WIDE = ROLE_COLUMNS + ("type", "reason")

_USED_BY_NAMES = 3   # up to this many users are named in the table; more are counted (wide: all named)


# -- check -----------------------------------------------------------------------------------

def check_rows(report, wide):
    rows = []
    for f in report.findings:
        row = [f.severity, f.code, f.namespace, f.kind, f.name, f.message]
        rows.append(row + [f.fix] if wide else row)
    return rows


def summary_line(report):
    counts = report.summary()

    def plural(n, word):
        return f"{n} {word}" + ("" if n == 1 or word == "info" else "s")

    return ", ".join(plural(counts[s], s) for s in checks.SEVERITIES)


def check_exit(report, strict):
    counts = report.summary()
    if counts[checks.ERROR] or (strict and counts[checks.WARNING]):
        return EXIT_FINDINGS
    return EXIT_OK


# -- bindings --------------------------------------------------------------------------------

def used_by_cell(entry, wide=False):
    if not entry.uses:
        return "0"
    names = [u.ref for u in entry.uses]
    if wide or len(names) <= _USED_BY_NAMES:
        return ", ".join(names)
    return str(len(names))


def binding_rows(report, wide):
    rows = []
    for e in report.bindings:
        b = e.binding
        row = [e.namespace, e.name, b.pool if b else None, b.domain if b else None, b.dtype if b else None,
               ", ".join(a.label for a in e.engines()), used_by_cell(e, wide), e.verdict]
        rows.append(row + [e.suggestion] if wide else row)
    return rows


def binding_list(report):
    return {"kind": "BindingList", "setting": report.setting, "items": [e.to_dict() for e in report.bindings]}


def bindings_exit(report):
    bad = {"binding-dtype-rejected", "binding-missing"}
    return EXIT_FINDINGS if any(f.code in bad for f in report.findings) else EXIT_OK


# -- roles -----------------------------------------------------------------------------------

def role_flag_cell(entry):
    """`--kv-cache-dtype=fp8_e5m2 (roles[0].extraArgs[2])`: each spelling and where it is."""
    if not entry.flags:
        return "none in its command" if entry.type == "take-over" else None
    shown = []
    for f in entry.flags:
        text = f["text"] if "=" in f["text"] or f.get("value") is None else f"{f['text']} {f['value']}"
        shown.append(f"{text} ({f['path'].split('.', 1)[1]})")
    return "; ".join(shown)


def role_rows(report, wide):
    rows = []
    for e in report.roles:
        row = [e.namespace, e.deployment, e.role, e.engine.label if e.engine else None, e.binding, e.dtype,
               role_flag_cell(e), e.today, e.after, e.verdict]
        rows.append(row + [e.type, e.reason] if wide else row)
    return rows


def role_list(report):
    return {"kind": "RoleList", "setting": report.setting, "items": [e.to_dict() for e in report.roles]}


def roles_exit(report):
    return EXIT_FINDINGS if any(e.severity == checks.ERROR for e in report.roles) else EXIT_OK


# -- the command -----------------------------------------------------------------------------

_VIEWS = {
    # command: (columns, wide columns, rows, structured, exit code, what is listed)
    "bindings": (BINDING_COLUMNS, BINDING_WIDE, binding_rows, binding_list, bindings_exit, "KVCachePoolBindings"),
    "roles": (ROLE_COLUMNS, ROLE_WIDE, role_rows, role_list, roles_exit,
              "pool-attached roles that pass --kv-cache-dtype themselves or take over the command"),
}


def run(opts, io):
    snapshot = sources.load(opts, io, workloads=opts.command != "roles")
    commands.print_notes(snapshot, io)
    report = checks.check(snapshot)
    fmt = opts.output
    no_headers = getattr(opts, "no_headers", False)
    if opts.command == "check":
        if fmt in ("json", "yaml"):
            render.structured(report.to_dict(), fmt, io.stdout)
        else:
            render.table(CHECK_WIDE if fmt == "wide" else CHECK_COLUMNS, check_rows(report, fmt == "wide"),
                         io.stdout, no_headers)
            if not any(report.checked.values()):
                commands.print_nothing_found(snapshot, "KVCachePoolBindings, pool-attached ModelDeployments or "
                                                  "injection opt-ins", io)
            print(summary_line(report), file=io.stderr)
        return check_exit(report, getattr(opts, "strict", False))
    columns, wide_columns, rows, structured, exit_code, what = _VIEWS[opts.command]
    if fmt in ("json", "yaml"):
        render.structured(structured(report), fmt, io.stdout)
    else:
        listed = rows(report, fmt == "wide")
        render.table(wide_columns if fmt == "wide" else columns, listed, io.stdout, no_headers)
        if not listed:
            commands.print_nothing_found(snapshot, what, io)
    return exit_code(report)
