"""One read command over several kubeconfig contexts (--contexts, --all-contexts): each context
read and judged in its own worker process (cli/flows/workers.py; else its own thread), at most
--parallel at once, each with its own connection as
`--context CTX` gives it (its cluster, user, namespace, exec plugin; every other flag applied to
it as kubectl applies it); then one report. A context that fails is one error line naming it,
after every other context was reported, and exit 2; the exit code is the worst over contexts."""

from __future__ import annotations

import threading

from kubectl_kvcache import exitcodes, render
from kubectl_kvcache.cli.flows import workers
from kubectl_kvcache.kube import kubeconfig
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.load import reader
from kubectl_kvcache.render import fleet as view
from kubectl_kvcache.render import formats


def context_names(options) -> tuple[str, ...]:
    """The contexts to read, checked against the merged kubeconfig before anything is sent."""
    known = kubeconfig.context_names(options.inner.connection)
    if options.contexts is None:
        if not known:
            raise PluginError("the kubeconfig has no contexts (--all-contexts)")
        return tuple(known)
    missing = [n for n in options.contexts if n not in known]
    if missing:
        raise PluginError(f"context {missing[0]!r} does not exist in the kubeconfig (--contexts)")
    return options.contexts


def fan_out(names, job, parallel) -> dict:
    """{name: (value, None) | (None, exception)}: job(name) for every name, at most `parallel` at
    once. Ctrl-C in the main thread closes every connection (kube.client.install_interrupt), so the
    running jobs end at once and the waiting ones do not start; nothing is raised in a thread."""
    reader.interruptible()
    outcomes: dict = {}
    slots, stop = threading.BoundedSemaphore(parallel), threading.Event()

    def work(name):
        with slots:
            if stop.is_set():
                outcomes[name] = (None, KeyboardInterrupt())
                return
            try:
                outcomes[name] = (job(name), None)
            except BaseException as exc:    # noqa: B902 - reported by the main thread, never here
                outcomes[name] = (None, exc)

    threads = [threading.Thread(target=work, args=(n,), name=f"kvcache-context-{i}", daemon=True)
               for i, n in enumerate(names)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    except BaseException:
        stop.set()
        raise
    return outcomes


# -- one context ---------------------------------------------------------------------------------

def _verify(inner, conn, trace):
    from kubectl_kvcache.cli.flows import verify as flow

    snapshot = reader.read(conn, inner.scope, None, trace)
    report = flow.judged(inner, snapshot)
    return view.Result(conn.context, report, code=flow.exit_code(inner, report), notes=tuple(snapshot.notes),
                       namespace=snapshot.namespace)


def _check(inner, conn, trace):
    from kubectl_kvcache.cli.flows import check as flow

    snapshot = reader.read(conn, inner.scope, None, trace)
    report = flow.judged(inner, snapshot)
    return view.Result(conn.context, report, code=flow.exit_code(inner, report), notes=tuple(snapshot.notes),
                       namespace=snapshot.namespace)


def _setting(inner, conn, trace):
    from kubectl_kvcache.cli.flows import setting as flow
    from kubectl_kvcache.judge import setting as st
    from kubectl_kvcache.operator import decode, records

    client = reader.open_client(conn, trace)
    obj = flow.read_setting(client, flow.setting_path(client))
    record = records.default_setting() if obj is None else decode.setting_record(obj, "cluster")
    notes: tuple[str, ...] = ()
    code = exitcodes.OK
    if st.effective_value(record) is None:
        notes, code = (f"status.value {record.status_value!r} is not a value the operator accepts",), \
            exitcodes.FINDINGS
    return view.Result(conn.context, view.setting_report(record), code=code, notes=notes)


def _tracer(err, context):
    trace = render.tracer(err)
    return lambda text: trace(f"context {context}: {text}")


# -- the command ----------------------------------------------------------------------------------

_NETWORK = ("kube.transport", "kube.proxyenv")
_JUDGED = _NETWORK + ("engine", "engine.shell", "operator.renderer", "judge.verify", "judge.checks",
                      "judge.checks.engines", "judge.fixes", "judge.nearest_dtype", "render.checks")
# What one context's read imports (measured: sys.modules before and after a run of each command),
# imported once in this process before the workers fork: else every worker imports it again (a
# third of a second of CPU each).
_PRELOAD = {"verify": _JUDGED + ("cli.flows.verify", "judge.live", "judge.rollout", "render.verify", "kube.watch"),
            "setting": _NETWORK + ("cli.flows.setting",)}


def preload(command):
    """Import what one context's read of `command` imports (_PRELOAD)."""
    import importlib

    wanted = _PRELOAD.get(command, _JUDGED + ("cli.flows.check",))
    for name in wanted:
        importlib.import_module("kubectl_kvcache." + name)
    if "engine" in wanted:            # the data every judge reads, parsed once for all workers
        from kubectl_kvcache.engine import load_knowledge
        for data in ("parsers", "backends"):
            load_knowledge(data)


def run(options, io) -> int:
    names = context_names(options)
    inner = options.inner
    read = {"verify": _verify, "setting": _setting}.get(options.command, _check)

    def job(name):
        return read(inner, inner.connection.replace(context=name), _tracer(io.stderr, name))

    conns = [inner.connection.replace(context=n) for n in names]
    if workers.usable(options.parallel, len(names), io.stderr) and not any(map(reader.may_prompt, conns)):
        preload(options.command)
        outcomes = workers.fan_out(names, job, options.parallel)
    else:
        outcomes = fan_out(names, job, options.parallel)
    results = []
    for name in names:
        result, exc = outcomes[name]
        if isinstance(exc, PluginError):
            result = view.Result(name, error=str(exc), code=exitcodes.ERROR)
        elif exc is not None:
            raise exc           # a bug, or Ctrl-C: the command line reports it as for one context
        results.append(result)
    fleet = view.Fleet(tuple(results))
    code = exitcodes.worst(r.code for r in results)
    report(options, fleet, io, code)
    return code


def _inner_view(command):
    if command == "verify":
        from kubectl_kvcache.render import verify

        return verify.VIEW, "VerifyReport"
    if command == "setting":
        return view.SETTING, "SettingStatus"
    from kubectl_kvcache.render import checks

    return checks.VIEWS[command], {"check": "CheckReport", "bindings": "BindingList", "roles": "RoleList"}[command]


def report(options, fleet, io, code=None):
    """The table (or JSON/YAML) on stdout; then, per context, its notes and summary lines; then
    one error line per context that failed. `code`: the exit code the run ends with."""
    inner, kind = _inner_view(options.command)
    output = options.inner.output
    if formats.get(output.format).kind == formats.DOCUMENT:   # one document across the contexts
        view.document(inner, fleet, output, _failing(options), io.stdout, code)
    else:
        render.show(view.view(inner, kind), fleet, output, io.stdout, io.stderr)
    for r in fleet.read:
        for text in r.notes:
            view.note(io.stderr, r.context, text)
        if not output.structured:
            _summary(options.command, r, inner, io.stderr)
    for r in fleet.results:
        if r.error is not None:
            view.failed(io.stderr, r.context, r.error)


def _failing(options):
    """What makes a case fail, as the one-context command decides it (verify's --fail-on, --strict)."""
    inner = options.inner
    if options.command == "verify":
        return tuple(inner.fail_on or ())
    if getattr(inner, "strict", False):
        return ("error", "warning")
    return ("error",)


def _summary(command, r, inner, err):
    if command == "verify":
        from kubectl_kvcache.render import verify

        for d in r.report.deployments:
            view.context_line(err, r.context, verify.deployment_line(d))
        if r.report.items or r.report.suppressed:
            view.context_line(err, r.context, verify.summary(r.report))
        else:
            view.nothing_found(err, r.context, inner.empty, r.namespace)
    elif command == "check":
        from kubectl_kvcache.render import checks

        if not any(r.report.checked.values()):
            view.nothing_found(err, r.context, inner.empty, r.namespace)
        view.context_line(err, r.context, checks.summary(r.report))
    elif command != "setting" and not inner.rows(r.report):
        view.nothing_found(err, r.context, inner.empty, r.namespace)
