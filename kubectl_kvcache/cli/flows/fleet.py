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


def _tracer(err, context):
    trace = render.tracer(err)
    return lambda text: trace(f"context {context}: {text}")


# -- the command ----------------------------------------------------------------------------------

def flow_of(options):
    """The flow module whose read-flow face runs each context (cli/flows/__init__.py); the
    command's record names it (contexts.wrap)."""
    import importlib

    return importlib.import_module("kubectl_kvcache.cli.flows." + options.flow)


def preload(flow):
    """Import what one context's read imports (the flow's PRELOAD) before the workers fork."""
    import importlib

    wanted = flow.PRELOAD
    for name in wanted:
        importlib.import_module("kubectl_kvcache." + name)
    if "engine" in wanted:            # the data every judge reads, parsed once for all workers
        from kubectl_kvcache.engine import load_knowledge
        for data in ("parsers", "backends"):
            load_knowledge(data)


def run(options, io) -> int:
    names = context_names(options)
    inner = options.inner
    flow = flow_of(options)

    def job(name):
        return flow.read_context(inner, inner.connection.replace(context=name), _tracer(io.stderr, name))

    conns = [inner.connection.replace(context=n) for n in names]
    if workers.usable(options.parallel, len(names), io.stderr) and not any(map(reader.may_prompt, conns)):
        preload(flow)
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
    code = exitcodes.worst(r.code for r in results)        # each context's verdict's; a context not read: 2
    fleet = view.Fleet(tuple(results), code)
    report(options, fleet, io, code)
    return code


def report(options, fleet, io, code=None):
    """The table (or JSON/YAML) on stdout; then, per context, its notes and summary lines; then
    one error line per context that failed. `code`: the exit code the run ends with."""
    flow = flow_of(options)
    inner = flow.view_of(options.inner)
    output = options.inner.output
    if formats.get(output.format).kind == formats.DOCUMENT:   # one document across the contexts
        view.document(inner, fleet, output, flow.failing(options.inner), io.stdout, code)
    else:
        render.show(view.view(inner), fleet, output, io.stdout, io.stderr)
    for r in fleet.read:
        for text in r.notes:
            view.note(io.stderr, r.context, text)
        if not output.structured:
            flow.context_lines(r, options.inner, io.stderr)
            verdict = getattr(r.report, "verdict", None)        # the context's exit code, in words
            if verdict is not None and (verdict.failed or verdict.reasons):
                view.context_line(io.stderr, r.context, f"verdict: {verdict.text()}")
    for r in fleet.results:
        if r.error is not None:
            view.failed(io.stderr, r.context, r.error)
