"""`kubectl kvcache verify`: what every pool-attached engine container runs with; with
--watch/--wait, followed through the rollout (the loop is in commands/rollout.py)."""

from kubectl_kvcache import exitcodes, render, snapshot as snap, sources, verify
from kubectl_kvcache.options import VerifyOptions
from kubectl_kvcache.render import verify as view


def exit_code(options: VerifyOptions, report) -> int:
    """1 when an item's status is one of --fail-on (default: every status but OK)."""
    fail_on = set(options.fail_on or (s for s in verify.STATUSES if s != verify.OK))
    return exitcodes.FINDINGS if any(i.status in fail_on for i in report.items) else exitcodes.OK


def accounts(options: VerifyOptions) -> bool:
    """Replicas without a Pod are looked for unless the Pods were filtered (by name or label)."""
    return not (options.scope.names or options.scope.selector)


def run(options: VerifyOptions, io) -> int:
    if options.watch or options.wait:
        from kubectl_kvcache.commands import rollout

        return rollout.run(options, io)
    snapshot = sources.load(options.connection, options.scope, io.stdin, render.tracer(io.stderr))
    render.notes(snapshot, io.stderr)
    report = verify.verify(snapshot, account=accounts(options))
    render.show(view.VIEW, report, options.output, io.stdout)
    names = options.scope.names
    if not options.output.structured:
        if names:
            view.pod_details(report, io.stdout)
        view.deployment_lines(report, io.stderr)
        if report.items:
            render.line(io.stderr, view.summary(report))
        else:
            render.nothing_found(snapshot, view.VIEW.empty, io.stderr)
    listed = {i.pod for i in report.items}
    for name in names:
        if name not in listed:
            render.note(io.stderr, f"pod {name} is neither controlled by a pool-attached ModelDeployment role nor "
                                   f"labelled {snap.INJECT_LABEL}=true")
    return exit_code(options, report)
