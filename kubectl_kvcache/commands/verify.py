"""`kubectl kvcache verify`: what every pool-attached engine container runs with."""

from kubectl_kvcache import exitcodes, render, snapshot as snap, sources, verify
from kubectl_kvcache.options import VerifyOptions
from kubectl_kvcache.render import verify as view


def run(options: VerifyOptions, io) -> int:
    snapshot = sources.load(options.connection, options.scope, io.stdin, render.tracer(io.stderr))
    render.notes(snapshot, io.stderr)
    report = verify.verify(snapshot)
    render.show(view.VIEW, report, options.output, io.stdout, io.stderr)
    names = options.scope.names
    if not options.output.structured:
        if names:
            view.pod_details(report, io.stdout)
        if report.items:
            render.line(io.stderr, view.summary(report))
            step = view.next_step(report, options.scope)
            if step:
                render.line(io.stderr, step)
        else:
            render.nothing_found(snapshot, view.VIEW.empty, io.stderr)
    listed = {i.pod for i in report.items}
    for name in names:
        if name not in listed:
            render.note(io.stderr, f"pod {name} is neither controlled by a pool-attached ModelDeployment role nor "
                                   f"labelled {snap.INJECT_LABEL}=true")
    return exitcodes.OK if all(i.status == verify.OK for i in report.items) else exitcodes.FINDINGS
