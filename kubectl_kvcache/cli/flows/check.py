"""`check`, `bindings` and `roles`: one judgement (`checks`), three views.

Exit codes: check 1 on an error finding (a warning too with --strict); bindings 1 on a finding
whose code's registry row says so (checks.CODES: rejected, missing, domain claimed); roles 1 on
an error role.
"""

from __future__ import annotations

from kubectl_kvcache import exitcodes, render
from kubectl_kvcache.kube import selector as label_selector
from kubectl_kvcache.judge import checks
from kubectl_kvcache.load import reader
from kubectl_kvcache.render import checks as views


def exit_code(options: CheckOptions, report) -> int:
    if options.view == "check":
        counts = report.summary()
        bad = counts[checks.ERROR] or (options.strict and counts[checks.WARNING])
    elif options.view == "bindings":
        bad = any(f.code in checks.BINDING_FAILURES for f in report.findings)
    else:
        bad = any(e.severity == checks.ERROR for e in report.roles)
    return exitcodes.FINDINGS if bad else exitcodes.OK


def select(report, snapshot, selector):
    """-l: keep what is about objects with those labels. Everything in scope was read and judged
    (a Binding's verdict needs all its users); the Setting's finding always stays."""
    if not selector:
        return report
    labels = {("KVCachePoolBinding", b.namespace, b.name): b.labels for b in snapshot.bindings.values()}
    labels.update({("ModelDeployment", d.namespace, d.name): d.labels for d in snapshot.deployments.values()})
    labels.update({("Pod", p.namespace, p.name): p.labels for p in snapshot.pods})
    labels.update({(w.kind, w.namespace, w.name): w.labels for w in snapshot.workloads})

    def chosen(kind, namespace, name):
        return label_selector.matches(labels.get((kind, namespace, name)) or {}, selector)

    return checks.Report(
        report.setting,
        [f for f in report.findings if f.code == "setting" or chosen(f.kind, f.namespace, f.name)],
        [e for e in report.bindings if chosen("KVCachePoolBinding", e.namespace, e.name)],
        [e for e in report.roles if chosen("ModelDeployment", e.namespace, e.deployment)],
        report.checked)


def run(options: CheckOptions, io) -> int:
    snapshot = reader.read(options.connection, options.scope, io.stdin, render.tracer(io.stderr))
    render.notes(snapshot, io.stderr)
    report = select(checks.check(snapshot, skipped_workloads=options.scope.workloads_skipped), snapshot,
                    options.selector)
    view = views.VIEWS[options.view]
    listed = render.show(view, report, options.output, io.stdout, io.stderr)
    if not options.output.structured:
        if options.view == "check":
            if not any(report.checked.values()):
                render.nothing_found(snapshot, view.empty, io.stderr)
            render.line(io.stderr, views.summary(report))
        elif not listed:
            render.nothing_found(snapshot, view.empty, io.stderr)
    return exit_code(options, report)
