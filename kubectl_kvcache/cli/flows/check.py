"""`check`, `bindings` and `roles`: one judgement (`checks`), three views.

Exit codes: the verdict's (judge/verdict.py, the one place that says what fails each view):
check 1 on an error finding (a warning too with --strict); bindings 1 on a finding whose code's
registry row says so (checks.CODES: rejected, missing, domain claimed); roles 1 on an error role.
"""

from __future__ import annotations

from kubectl_kvcache import render
from kubectl_kvcache.cli.flows import JUDGED, judged_context
from kubectl_kvcache.kube import selector as label_selector
from kubectl_kvcache.judge import checks, policy as judge_policy, verdict as judge_verdict
from kubectl_kvcache.judge.checks import recovery as recovery_check
from kubectl_kvcache.load import reader
from kubectl_kvcache.render import checks as views

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up

if TYPE_CHECKING:
    from kubectl_kvcache.cli.options import CheckOptions


def decide(options: CheckOptions, report, snapshot=None):
    """`report` with the verdict of the command's view (judge/verdict.py: check, bindings or roles),
    a scope not read part of it (a namespace asked for that does not exist, or that held nothing
    check reads: the three views share one judgement, so one rule; each fails on it)."""
    nothing = views.CHECK.empty if not any(report.checked.values()) else None
    reasons = judge_verdict.unread(snapshot, nothing=nothing, selector=options.selector) \
        if snapshot is not None else ()
    return report.replace(verdict=judge_verdict.of_check_view(options.view, report, options.strict, reasons))


def exit_code(options: CheckOptions, report) -> int:
    """The verdict's exit code (decided here when the report was not yet: decide)."""
    return (report.verdict or decide(options, report).verdict).code


# check's three views of one judgement: whether each ends with check's counts (its severities;
# "No ... found" only when nothing was checked) or, having no counts, with "No ... found" when it
# has no rows. What fails each is judge/verdict.py's.
COUNTED = {"check": True, "bindings": False, "roles": False}
# the findings a view says in words after its verdict: bindings fails on a recovery stopped part-way,
# which its table (Bindings, not findings) does not show
SAID = {"check": (), "bindings": (recovery_check.CODE,), "roles": ()}


def _nothing(options: CheckOptions, report) -> bool:
    """Whether the run found nothing to report ("No ... found"): nothing checked, or no rows."""
    counted = COUNTED[options.view]
    return not any(report.checked.values()) if counted else not list(view_of(options).rows(report))


def select(report, snapshot, selector):
    """-l: keep what is about the objects verify's -l selects too. Everything in scope was read and
    judged (a Binding's verdict needs all its users); the Setting's findings always stay. An
    object is selected when its labels match; a ModelDeployment also when one of its Pods' labels
    match (verify selects Pods: their app.kubernetes.io/instance is the deployment's name)."""
    if not selector:
        return report

    def match(labels):
        return label_selector.matches(labels or {}, selector)

    pods_of: dict = {}
    for p in snapshot.pods:
        if p.md_controlled:
            pods_of.setdefault((p.namespace, p.owner[2]), []).append(p)
    chosen_mds = {(d.namespace, d.name) for d in snapshot.deployments.values()
                  if match(d.labels) or any(match(p.labels) for p in pods_of.get((d.namespace, d.name), ()))}
    chosen = {("ModelDeployment",) + key for key in chosen_mds}
    chosen.update(("Pod", p.namespace, p.name) for p in snapshot.pods if match(p.labels))
    chosen.update((w.kind, w.namespace, w.name) for w in snapshot.workloads if match(w.labels))
    chosen.update(("KVCachePoolBinding", b.namespace, b.name) for b in snapshot.bindings.values() if match(b.labels))

    def picked(kind, namespace, name):
        return (kind, namespace, name) in chosen

    return checks.Report(
        report.setting,
        [f for f in report.findings if f.kind == "Setting" or picked(f.kind, f.namespace, f.name)],
        [e for e in report.bindings if picked("KVCachePoolBinding", e.namespace, e.name)],
        [e for e in report.roles if picked("ModelDeployment", e.namespace, e.deployment)],
        report.checked if chosen else {key: 0 for key in report.checked})     # -l chose nothing: nothing checked


def judged(options: CheckOptions, snapshot):
    """The report of `snapshot`: checked, narrowed by -l, then the policy applied (judge/policy.py)."""
    report = select(checks.check(snapshot, skipped_workloads=options.scope.workloads_skipped), snapshot,
                    options.selector)
    if options.policy is None:
        return report
    return judge_policy.apply(report, options.policy, judge_policy.labels_of(snapshot))


def run(options: CheckOptions, io) -> int:
    snapshot = reader.read(options.connection, options.scope, io.stdin, render.tracer(io.stderr))
    render.notes(snapshot, io.stderr)
    report = judged(options, snapshot)
    if getattr(options, "observe", False):      # check's flag (bindings and roles have none)
        report = _observed_fixes(options, report, snapshot, io.stderr)
    view = view_of(options)
    report = decide(options, report, snapshot)
    code = report.verdict.code
    output = options.output.about(snapshot, options.scope.files, options.connection.context, failing(options),
                                  code)
    render.show(view, report, output, io.stdout, io.stderr)
    if getattr(options, "publish", None) is not None:
        from kubectl_kvcache.cli.flows import reports

        return reports.run(options, view, report, output, snapshot, code, io)
    if not options.output.structured:
        if _nothing(options, report):
            render.nothing_found(snapshot, view.empty, io.stderr)
            plain = judge_verdict.not_opted_in(snapshot)
            if plain:
                render.note(io.stderr, plain)
        if COUNTED[options.view]:
            render.line(io.stderr, views.summary(report))
        render.verdict_line(io.stderr, report.verdict)      # what fails the run, as the exit code reads it
        for f in report.findings:
            if f.code in SAID[options.view]:
                render.line(io.stderr, f"{f.message}; next: {f.fix}")
        hint = views.fix_hint(report, options.scope, options.output) if COUNTED[options.view] else None
        if hint:
            render.line(io.stderr, hint)
    return code


def _observed_fixes(options: CheckOptions, report, snapshot, err):
    """--observe: each fix that moves replicas to another dtype says what that does to their KV
    caches (judge/capacity), their capacity read bounded (cli/flows/capacity)."""
    from kubectl_kvcache.cli.flows import capacity as capacity_flow

    client = None
    if snapshot.source == "cluster":
        client = reader.open_client(options.connection, render.tracer(err))
    else:
        render.note(err, "--observe reads the engines' logs from a cluster: saved objects hold none (the fixes "
                         "say the capacity was not read)")
    return capacity_flow.check_fixes(report, snapshot, client, err)


# -- one context of several (cli/flows/__init__.py: the read flows' face) --------------------

PRELOAD = JUDGED


def view_of(options: CheckOptions):
    return views.VIEWS[options.view]


def failing(options: CheckOptions) -> tuple[str, ...]:
    """The severities that fail the run: errors; warnings too with --strict."""
    return judge_verdict.check_fails_on(options.strict)


def read_context(options: CheckOptions, conn, trace):
    return judged_context(options, conn, trace, judged, decide)


def context_lines(result, options: CheckOptions, err):
    from kubectl_kvcache.render import fleet

    if _nothing(options, result.report):
        fleet.nothing_found(err, result.context, view_of(options).empty, result.namespace)
    if COUNTED[options.view]:
        fleet.context_line(err, result.context, views.summary(result.report))
