"""`kubectl kvcache verify`: what every pool-attached engine container runs with; with
--watch/--wait, followed through the rollout (list, then watch Pods, ModelDeployments,
KVCachePoolBindings and the Setting)."""

from __future__ import annotations

import threading
import time

from kubectl_kvcache import render
from kubectl_kvcache.cli.flows import JUDGED, judged_context
from kubectl_kvcache.kube import selector as label_selector, watch as kube_watch
from kubectl_kvcache.judge import live, rollout
from kubectl_kvcache.judge import verdict as judge_verdict, verify
from kubectl_kvcache.load import cluster as cluster_lists, reader, scope as load_scope
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.engine import CachedPredict
from kubectl_kvcache.errors import Forbidden
from kubectl_kvcache.render import verify as view

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up

if TYPE_CHECKING:
    from kubectl_kvcache.cli.options import VerifyOptions

TICK = 1.0                  # how often the live progress line's clock moves


def decide(options: VerifyOptions, report, snapshot=None):
    """`report` with its verdict (judge/verdict.py): each replica by --fail-on and the policy, and
    the run's own reasons (run_reasons)."""
    return report.replace(verdict=judge_verdict.verify(report, options.fail_on, run_reasons(options, report, snapshot)))


def run_reasons(options: VerifyOptions, report, snapshot=None) -> tuple:
    """What fails a run besides its rows, the one-shot verify's and every --wait/--watch ending's
    alike: a named Pod or a namespace asked for that does not exist, a scope that held no
    pool-attached engine Pod nor replica (nothing was verified there), a recovery stopped part-way,
    a create refused. None without a snapshot (nothing read to say it)."""
    if snapshot is None:
        return ()
    missing = set(getattr(snapshot, "missing_pods", ()))
    named = [n for n in options.scope.names if n not in missing]     # a Pod named that does not exist says so
    nothing = None
    if not (report.items or report.suppressed) and (named or not options.scope.names):
        nothing = view.VIEW.empty + (f" among the Pods named ({', '.join(named)})" if named else "")
    return judge_verdict.unread(snapshot, nothing=nothing, selector=options.scope.selector) + \
        judge_verdict.recoveries(snapshot) + judge_verdict.refused(report, snapshot)


def exit_code(options: VerifyOptions, report) -> int:
    """The verdict's exit code (decided here when the report was not yet: decide)."""
    return (report.verdict or decide(options, report).verdict).code


def judged(options: VerifyOptions, snapshot):
    """The report of `snapshot`: judged, then the policy applied (judge/policy.py)."""
    report = verify.verify(snapshot, account=looks_for_podless_replicas(options), roles=selected_roles(options))
    if options.policy is None:
        return report
    from kubectl_kvcache.judge import policy as judge_policy     # only then: it loads check's registry

    return judge_policy.apply_verify(report, options.policy, options.fail_on, judge_policy.labels_of(snapshot))


def looks_for_podless_replicas(options: VerifyOptions) -> bool:
    """Replicas without a Pod are looked for unless the Pods were filtered by name."""
    return not options.scope.names


def selected_roles(options: VerifyOptions):
    """With -l, the roles whose replicas are accounted: those whose operator labels (the labels
    the operator gives every Pod of the role: live.operator_labels) the selector matches, so that
    every Pod of theirs was listed (the selector is applied by the server) and a replica without
    one is a replica without a Pod, never one the filter left out (a selector on any other label
    accounts no role: the Pods it leaves out may be replicas). `-l
    app.kubernetes.io/instance=NAME` selects a deployment as `-n` would show it, NO-POD rows and
    a missing Binding included. None: every role."""
    selector = options.scope.selector
    if not selector or options.scope.names:
        return None
    if any(key not in live.OPERATOR_LABEL_KEYS for key, _, _ in label_selector.parse(selector)):
        return lambda md, role: False   # other labels: a Pod the selector skips may still be a replica
    return lambda md, role: label_selector.matches(live.operator_labels(md, role), selector)


def about(options: VerifyOptions, snapshot, code=None):
    """The output, knowing what was read and the exit code (the document formats say so)."""
    return options.output.about(snapshot, options.scope.files, options.connection.context, failing(options), code)


def run(options: VerifyOptions, io) -> int:
    if options.watch or options.wait:
        return follow(options, io)
    snapshot = reader.read(options.connection, options.scope, io.stdin, render.tracer(io.stderr))
    render.notes(snapshot, io.stderr)
    report = judged(options, snapshot)
    if snapshot.source == "cluster":
        report = refusals(options, report, snapshot, io.stderr)
        read_gpus(options, report.items, io.stderr)
        listen(options, report.items, io.stderr)
    elif options.observe:
        render.note(io.stderr, "--observe reads the engines' logs from a cluster: saved objects hold none "
                               "(OBSERVED stays -)")
    # decided once, after the engines' own word: a named Pod or a namespace that does not exist
    # is part of it (nothing was verified there, never green)
    report = decide(options, report, snapshot)
    code = report.verdict.code
    output = about(options, snapshot, code)
    render.show(view_of(options), report, output, io.stdout, io.stderr)
    newer_than_data(report, io.stderr)
    if options.publish is not None:
        from kubectl_kvcache.cli.flows import reports

        return reports.run(options, view_of(options), report, output, snapshot, code, io)
    names = options.scope.names
    if not options.output.structured:
        if names and options.output.for_people and not options.output.describe:   # describe: printed
            view.pod_details(report, io.stdout)
        view.deployment_lines(report, io.stderr)
        if report.items or report.suppressed:
            render.line(io.stderr, view.summary(report))
            render.verdict_line(io.stderr, report.verdict)      # what fails the run, as the exit code reads it
            step = view.next_step(report, options.scope)
            if step:
                render.line(io.stderr, step)
        elif not (names and set(names) <= set(snapshot.missing_pods)):
            render.nothing_found(snapshot, view.VIEW.empty, io.stderr)
            if not options.scope.all_namespaces and not names:
                render.line(io.stderr, view.all_namespaces_step(options.scope))
            if snapshot.source == "file" and not names and not any(k[0] == "Pod" for k in snapshot.origins):
                # no Pod in the whole input (origins: every object read), as in a rendered chart
                render.line(io.stderr, view.check_step(options.scope))
    listed = {i.pod for i in report.items}
    for name in names:
        if name not in listed and name not in snapshot.missing_pods:
            render.note(io.stderr, f"pod {name} is neither controlled by a pool-attached ModelDeployment role nor "
                                   f"labelled {api.INJECT_LABEL}=true")
    where = "in the input" if snapshot.source == "file" else f"in namespace {snapshot.namespace or 'default'}"
    for name in snapshot.missing_pods:      # kubectl get: `Error from server (NotFound): pods "x" not found`, exit 1
        render.error(io.stderr, f'pods "{name}" not found {where}')
    if not options.output.structured and not (report.items or report.suppressed):
        render.verdict_line(io.stderr, report.verdict)
        step = view.next_step(report, options.scope)     # no rows: only a recovery stopped part-way names one
        if step:
            render.line(io.stderr, step)
    return code


def short_of_pods(report, snapshot, deployments=None, controllers: bool = True) -> list:
    """The objects whose controller's refusals to create are read (load/events.py): each followed
    pool-attached deployment with replicas that have no Pod (`deployments`: only these keys), and
    (`controllers`) the controller of each Pod opted into injection in the report."""
    from kubectl_kvcache.load import events

    wanted: list[tuple] = []
    for d in report.deployments:
        if d.counts.get(verify.NOT_CREATED) and (deployments is None or (d.namespace, d.name) in deployments):
            md = snapshot.deployments.get((d.namespace, d.name))
            wanted.append((d.namespace, "ModelDeployment", d.name, md.uid if md else None,
                           (events.FAILED_CREATE, events.RENDER_FAILED)))
    if controllers:
        pods = {(p.namespace, p.name): p for p in snapshot.pods}
        owners = sorted({(i.namespace, pod.owner[1], pod.owner[2]) for i in report.items if i.owner is None
                         for pod in [pods.get((i.namespace, i.pod))] if pod is not None and pod.owner is not None})
        wanted += [(ns, kind, name, None, (events.FAILED_CREATE,)) for ns, kind, name in owners]
    return wanted


def refusals(options: VerifyOptions, report, snapshot, err, client=None):
    """`report` judged again with what the controllers say they cannot create (load/events.py),
    when something in it is short of Pods; as it was when nothing is, or nothing was said."""
    from kubectl_kvcache.load import events

    wanted = short_of_pods(report, snapshot)
    if not wanted:
        return report
    client = client or reader.open_client(options.connection, render.tracer(err))
    found = events.read(client, wanted)
    view.refusal_notes(found, wanted, err)
    if not found.refusals:
        return report
    snapshot.refusals = dict(found.refusals)
    return judged(options, snapshot)


def read_gpus(options: VerifyOptions, items, err, client=None) -> None:
    """Each row's GPU from its Node's labels (judge/gpu.py): the Nodes of rows whose verdict the GPU
    decides (a plain verify too: the verdict is right without a flag), and with -o wide, describe,
    json or yaml every row's Node (the GPU column, "gpu"); bounded and said once (load/nodes.py).
    A Node not read leaves the prediction standing."""
    from kubectl_kvcache.judge import gpu
    from kubectl_kvcache.load import nodes

    every = getattr(options.output, "format", None) in ("wide", "describe", "json", "yaml")
    wanted = gpu.targets(items, every=every)
    if not wanted:
        return
    client = client or reader.open_client(options.connection, render.tracer(err))
    found = nodes.read(client, wanted)
    gpu.apply(items, found.labels)
    view.node_notes(found, err)


def listen(options: VerifyOptions, items, err, client=None) -> None:
    """The engines' own word on `items` (judge/observed.py): with --observe every running engine's
    log head, then every running vLLM one's /metrics (held together); a crashed container's previous
    log, for at most observed.CRASH_READS of them (observed.crash_choice; the rest are named in a
    note, their predictions standing). Bounded (load/engine_words.py): one budget, its deadline
    and the bytes kept, for both rounds; what was refused, failed or cut is said once."""
    from kubectl_kvcache.judge import observed
    from kubectl_kvcache.load import engine_words

    crashes, unread = observed.crash_choice(items)
    if unread:
        first = unread[0]
        render.note(err, f"{len(unread)} more crashed engine {'container' if len(unread) == 1 else 'containers'}: "
                         f"previous {'log' if len(unread) == 1 else 'logs'} not read (at most "
                         f"{observed.CRASH_READS} a run; the prediction stands); one Pod's is read by "
                         f"kubectl kvcache verify -n {first.namespace} {first.pod} -o describe")
    wanted = observed.targets(items, options.observe, crashes=crashes)
    if not wanted:
        return
    client = client or reader.open_client(options.connection, render.tracer(err))
    budget = engine_words.Budget()
    read = engine_words.read(client, wanted, budget=budget, keeps=keeps)
    observed.apply(items, read)
    rest = observed.targets(observed.unread(items, read), options.observe, metrics=True)
    if rest:
        more = engine_words.read(client, rest, budget=budget, keeps=keeps)
        observed.apply(items, more)
        read.merge(more)
    view.observation_notes(read, err)


def keeps(engine_name, source, line) -> bool:
    """Whether a line read from an engine container may hold its report (engine.words.keeps) or
    its capacity (engine.capacity.keeps; an engine not named: any engine's), for
    load/engine_words to keep only those."""
    from kubectl_kvcache import engine

    return any(engine.keeps_line(e, source, line) or engine.keeps_capacity(e, source, line)
               for e in ((engine_name,) if engine_name else engine.ENGINES))


def newer_than_data(report, err):
    """One note per engine release newer than the engine data, naming the release that judged it."""
    from kubectl_kvcache.engine import DISPLAY_NAMES

    found = {(i.engine, i.engine_version, i.engine_data["judgedWith"]) for i in report.items if i.engine_data}
    # a field may be None (an engine or release not read): ordered as "" rather than compared to a str
    for engine, version, judged in sorted(found, key=lambda t: tuple("" if x is None else str(x) for x in t)):
        name = DISPLAY_NAMES.get(engine, engine)
        render.note(err, f"{name} {version} is newer than the engine data: judged with {name} {judged}'s parser "
                         f"(add its release: scripts/engine-data --release {engine}=={version}, see docs/engines.md)")


# -- --watch / --wait ----------------------------------------------------------------------------

_KINDS = {"deployments": live.DEPLOYMENT, "bindings": live.BINDING, "setting": live.SETTING}


def judge_events(judge: live.LiveJudge, key, kind, payload, targets):
    """One watch event as the judge's events: (kind, key, record or None when deleted)."""
    what = _KINDS.get(key, live.POD)
    if what == live.SETTING:
        found = (payload[:1] or [None])[0] if kind == "RELIST" else (None if kind == "DELETED" else payload)
        return [(live.SETTING, None, found or records.default_setting())]
    if kind == "RELIST":
        if what == live.POD:
            selector = targets[key].selector
            had = [k for k, p in judge.pods.items() if label_selector.matches(p.labels, selector)]
        else:
            had = list(judge.snapshot.deployments if what == live.DEPLOYMENT else judge.snapshot.bindings)
        now = {(r.namespace, r.name): r for r in payload}
        return [(what, k, None) for k in had if k not in now] + [(what, k, r) for k, r in now.items()]
    return [(what, (payload.namespace, payload.name), None if kind == "DELETED" else payload)]


def selection(options: VerifyOptions) -> live.Selection:
    """The deployments followed: those named (md/NAME), those -l selects, or every one."""
    if options.deployments:
        return live.Selection(names=frozenset(options.deployments))
    selector = options.scope.selector
    if selector:
        return live.Selection(matches=lambda labels: label_selector.matches(labels, selector))
    return live.Selection()


def namespace_missing(client, namespace) -> bool:
    """Whether the namespace asked for does not exist (False when it cannot be told: not allowed
    to read namespaces)."""
    from kubectl_kvcache.kube.client import object_path

    if not namespace:
        return False
    try:
        return client.get_or_none(object_path("", "v1", "namespaces", None, namespace),
                                  what=f"get namespace {namespace}") is None
    except Forbidden:
        return False


def follow(options: VerifyOptions, io, clock=time.monotonic) -> int:
    """List, then watch; print changed rows (--watch) and the progress (--wait) until the rollout
    completes, a replica is confirmed REJECTED or every replica left is settled (--wait), or
    --timeout passes. Pods, ModelDeployments, Bindings and the Setting are all watched: a row is
    judged again whenever what it depends on changes (judge/live.py)."""
    import queue    # here: a plain verify does not pay for it

    client = reader.open_client(options.connection, render.tracer(io.stderr))
    scope = options.scope.replace(namespace=load_scope.resolve_namespace(options.scope, client))
    if options.deployments or scope.selector:
        scope = scope.replace(selector=None)    # every replica of a selected deployment counts: selected here
    if options.wait and namespace_missing(client, scope.namespace):
        render.line(io.stderr, f"namespace {scope.namespace} does not exist: nothing to wait for")
        return _not_followed(options, io, records.Snapshot(namespace=scope.namespace),
                             judge_verdict.not_found("Namespace", scope.namespace, None, "in the cluster"))
    versions: dict = {}
    snapshot = cluster_lists.load_cluster(client, scope, chunk=options.connection.chunk_size, versions=versions)
    snapshot.namespace = scope.namespace
    render.notes(snapshot, io.stderr)
    options = options.replace(output=about(options, snapshot))
    missing = [n for n in options.deployments if (scope.namespace, n) not in snapshot.deployments]
    if missing:
        render.line(io.stderr, f"ModelDeployment {missing[0]} was not found in namespace {scope.namespace}: "
                               f"nothing to {'wait for' if options.wait else 'watch'}")
        return _not_followed(options, io, snapshot, judge_verdict.not_found(
            "ModelDeployment", missing[0], scope.namespace, f"in namespace {scope.namespace}"))
    targets = {t.key: t for t in cluster_lists.watch_targets(client, scope)}
    if "setting" in targets and "setting" not in versions:      # it could be read, not listed
        del targets["setting"]
        render.note(io.stderr, f"the Setting {api.setting_ref()} is not watched (list on settings is not allowed): "
                               f"rows are judged with its value as read at the start")
    events: queue.Queue = queue.Queue()
    stop = threading.Event()
    watchers = [kube_watch.Watcher(client, t, versions[t.key], events, stop, kube_watch.watch_seconds(),
                                   options.connection.chunk_size) for t in targets.values()]
    for w in watchers:
        w.start()
    line = view.ProgressLine(io.stderr) if options.wait else None
    try:
        return _follow(options, io, snapshot, targets, events, clock, line, scope, client)
    except BaseException:
        if line:
            line.done()      # the error line (or "interrupted") starts on a line of its own
        raise
    finally:
        stop.set()


def _not_followed(options, io, snapshot, reason) -> int:
    """Nothing to follow (the namespace, or a deployment named, does not exist): exit 1; a
    structured output still prints its report, empty, whose verdict names what was not found."""
    report = verify.Report(None, "not read", [], [], False,  # type: ignore[arg-type]
                           verdict=judge_verdict.Verdict("verify", (), (), (reason,)))
    if options.output.structured:
        render.show(view.VIEW, report, about(options, snapshot, report.verdict.code), io.stdout)
    else:
        render.verdict_line(io.stderr, report.verdict)      # what fails the run, as the exit code reads it
    return report.verdict.code


def crash_causes(options, left, causes: dict, client, err) -> list:
    """The replicas left whose engine died for a reason rolling will not change, in the engine's
    words: each crashed container's previous log is read once per restart (`causes`), and a
    replica rendered from the spec as it is now whose log names argparse's error or a start-up
    failure ends the wait (judge/rollout.rejects)."""
    from kubectl_kvcache.judge import observed
    from kubectl_kvcache.load import engine_words

    crashed = [i for i in left if i.pod is not None and observed.crashed(i)]
    fresh = [i for i in crashed if (i.namespace, i.pod, (i.state or {}).get("restarts")) not in causes]
    if fresh:
        read = engine_words.read(client, observed.targets(fresh, observe=False), keeps=keeps)
        observed.apply(fresh, read)
        for i in fresh:
            causes[(i.namespace, i.pod, (i.state or {}).get("restarts"))] = i.exit_cause
        if read.denied or read.failed or read.partial or read.skipped:
            view.observation_notes(read, err)
    for i in crashed:
        i.exit_cause = causes.get((i.namespace, i.pod, (i.state or {}).get("restarts")))
    return [i for i in crashed if rollout.rejects(i)]


def _follow(options, io, snapshot, targets, events, clock, line, scope, client=None):
    import queue

    causes: dict = {}
    judge = live.LiveJudge(snapshot, selection(options), CachedPredict())
    refused = _Refused(client, io.stderr)
    changed = judge.first
    rows = view.RowPrinter(io.stdout, options.output, options.output.headers, clock=time.time) \
        if options.watch else None
    start = clock()
    deadline = None if options.timeout is None else start + options.timeout
    if rows is not None and not changed:
        render.nothing_found(snapshot, view.VIEW.empty + " (yet: watching)", io.stderr)
    try:
        while True:
            now = judge.progress()
            gone = judge.take_gone()
            if rows is not None and (changed or gone):
                if line:
                    line.clear()
                rows.emit(changed, gone)
            if line:
                line.show(view.progress_line(now, clock() - start, line.width))
            if options.wait and now.pending is None and refused.due(judge, now, clock()):
                said, moved = refused.poll(judge, now, clock())
                if moved:           # what a controller says it cannot create: judged at once
                    changed = judge.apply(said)
                    continue
            if options.wait and now.outcome:
                outcome = now.outcome
                if client is not None and outcome in (rollout.REJECTED, rollout.SETTLED):
                    if line:
                        line.clear()
                    # the engine's own words for the crashed replicas it ends on (a start-up failure
                    # predicted REJECTED settles the wait before any log was read)
                    failed = crash_causes(options, tuple(now.left) + tuple(now.rejected), causes, client, io.stderr)
                    if failed:
                        now, outcome = now.replace(rejected=tuple({i.key: i for i in failed}.values())), rollout.REJECTED
                return _end(options, io, judge.report(), now, outcome, clock() - start, line, scope, client,
                            judge.current())
            if options.wait and client is not None and now.pending is None and now.left:
                if line:
                    line.clear()
                failed = crash_causes(options, now.left, causes, client, io.stderr)
                if failed:
                    now = now.replace(rejected=tuple(failed))
                    return _end(options, io, judge.report(), now, rollout.REJECTED, clock() - start, line, scope, client,
                                judge.current())
            # wait for the next events (the live line's clock ticks meanwhile)
            batch: list = []
            while not batch:
                remaining = None if deadline is None else deadline - clock()
                if remaining is not None and remaining <= 0:
                    if not options.wait:    # --watch alone ends as verify does: what controllers refuse, read now
                        said, _ = refused.poll(judge, now, clock(), force=True)
                        judge.apply(said)
                        now = judge.progress()
                    return _end(options, io, judge.report(), now, rollout.TIMEOUT, options.timeout, line, scope, client,
                                judge.current())
                step = TICK if remaining is None else min(TICK, remaining)
                try:
                    batch.append(events.get(timeout=max(0.01, step)))
                except queue.Empty:
                    if line:
                        line.show(view.progress_line(now, clock() - start, line.width), tick=True)
                    if options.wait and now.pending is None and refused.due(judge, now, clock()):
                        break       # no event came: the refusals are read again all the same
                    continue
                while True:
                    try:
                        batch.append(events.get_nowait())
                    except queue.Empty:
                        break
            updates = []
            for key, kind, payload in batch:
                if kind == "ERROR":
                    raise payload
                if kind == "RECONNECT":
                    if line:
                        line.clear()
                    view.watch_reconnect(targets[key].what, payload, io.stderr)
                    continue
                if kind == "RELIST":
                    if line:
                        line.clear()
                    view.watch_relist(targets[key].what, io.stderr)
                updates.extend(judge_events(judge, key, kind, payload, targets))
            changed = judge.apply(updates)
    except KeyboardInterrupt:
        if options.wait:        # Ctrl-C: where every replica stands, then `error: interrupted`, exit 130
            _interrupted(options, io, judge, clock() - start, line)
        raise


class _Refused:
    """--wait's reads of what the controllers say they cannot create (load/events.py), for the
    objects the one-shot verify reads them for (short_of_pods): the followed deployments with
    replicas that have no Pod, and the controllers of the opt-in Pods shown; at once and then
    every EVERY seconds while there are any; a namespace whose events may not be listed is said
    once and not asked again."""

    EVERY = 5.0

    def __init__(self, client, err):
        self.client, self.err = client, err
        self.next = 0.0
        self.denied: set = set()
        self.said: set = set()

    @staticmethod
    def _short(now) -> set:
        return {(i.namespace, i.deployment) for i in now.left if i.status == verify.NO_POD and i.owner}

    @staticmethod
    def _opted_in(judge) -> bool:
        return any(p.opted_in and p.owner is not None for p in judge.injected_pods())

    def due(self, judge, now, moment) -> bool:
        """Whether a read is due: EVERY seconds have passed, and replicas without a Pod are left or
        an opt-in Pod's controller is in scope."""
        return self.client is not None and moment >= self.next and bool(self._short(now) or self._opted_in(judge))

    def poll(self, judge, now, moment, force: bool = False) -> tuple[list, bool]:
        """The judge's events for the deployments whose refusal changed, and whether any refusal
        read changed (an opt-in controller's is no event: judge.progress reads it). `force`: read
        now, due or not (--watch alone, as it ends)."""
        from kubectl_kvcache.load import events

        if self.client is None or (moment < self.next and not force):
            return [], False
        snapshot = judge.snapshot
        wanted = short_of_pods(judge.report(), judge.current(), deployments=self._short(now))
        if not wanted:
            return [], False
        self.next = moment + self.EVERY
        found = events.read(self.client, wanted, denied=self.denied)
        fresh = found.denied - self.denied
        self.denied |= found.denied
        if fresh or (found.failed and found.failed not in self.said):
            found.denied = fresh
            view.refusal_notes(found, [w for w in wanted if w[0] in fresh] if fresh else wanted, self.err)
            if found.failed:
                self.said.add(found.failed)
        changed, moved = [], False
        for namespace, kind, name, _, _ in wanted:
            key = (namespace, kind, name)
            if namespace in self.denied:
                continue
            if snapshot.refusals.get(key) != found.refusals.get(key):
                moved = True
                if key in found.refusals:
                    snapshot.refusals[key] = found.refusals[key]
                else:
                    snapshot.refusals.pop(key, None)
                md = snapshot.deployments.get((namespace, name)) if kind == "ModelDeployment" else None
                if md is not None:
                    changed.append((live.DEPLOYMENT, (namespace, name), md))
        return changed, moved


def _interrupted(options, io, judge, elapsed, line):
    """Ctrl-C during --wait: the state the wait was interrupted in, as a timeout prints it (the
    replicas left on stdout, unless --watch already printed every row; the deployment lines and
    what is left on stderr). No report document and no verdict line: an interrupted wait decided
    nothing, and its exit code (130) is not a verdict. A judge caught mid-batch may not give a
    report: then nothing more is printed than before (`error: interrupted`)."""
    try:
        report, now = judge.report(), judge.progress()
    except Exception:       # noqa: BLE001 - interrupted inside a batch: its state is not whole
        return
    if line:
        line.done()
    if not options.output.structured and not options.watch:
        render.show(view.VIEW, _Rows(now.left), options.output, io.stdout)
        io.stdout.flush()
    view.deployment_lines(report, io.stderr)
    view.wait_interrupted(elapsed, now, io.stderr)


def _ended(options, report, now, outcome, snapshot=None):
    """`report` with the verdict the run ends with. --wait: the rollout's (judge/verdict.wait: 0
    when it completed, 1 when it cannot or did not in time), failed too by the run's own reasons
    (run_reasons: a scope that held nothing to wait for, a recovery in scope stopped part-way, a
    create refused). --watch alone, at --timeout: the one-shot verify's
    (decide: a scope not read, a recovery, a refused create, a Setting in flight). `snapshot`: as
    the run ends (LiveJudge.current, its recoveries read again); None: no run reasons."""
    if not options.wait:
        return decide(options, report, snapshot)
    left = tuple(now.left) + tuple(now.rejected)
    verdict = judge_verdict.wait(report, outcome, left, options.fail_on)
    if snapshot is None:
        return report.replace(verdict=verdict)
    return report.replace(verdict=verdict.replace(reasons=verdict.reasons + run_reasons(options, report, snapshot)))


def _recoveries_now(client, scope, options, snapshot) -> None:
    """The recovery records in scope read again as the run ends (one may have finished, or
    stopped, meanwhile) into `snapshot` (judge/verdict.recoveries reads them)."""
    from kubectl_kvcache.load import recovery_state

    if client is None or not scope.recoveries or snapshot is None:
        return
    states, _ = recovery_state.list_states(client, scope.namespace, options.connection.chunk_size)  # noted at the start
    snapshot.recoveries = states


def _end(options, io, report, now, outcome, elapsed, line, scope, client=None, snapshot=None):
    if line:
        line.done()
    _recoveries_now(client, scope, options, snapshot)
    report = _ended(options, report, now, outcome, snapshot)
    unfinished = tuple(r for r in report.verdict.reasons if r.code == judge_verdict.RECOVERY)
    code = report.verdict.code
    if options.output.structured:
        subject = options.output.subject
        output = options.output.replace(subject=subject.replace(exit_code=code)) if subject else options.output
        render.show(view.VIEW, report, output, io.stdout)
    elif options.wait and outcome == rollout.UNBOUND:
        unbound = {(ns, md) for ns, md, _ in now.unbound}
        render.show(view.VIEW, _Rows(i for i in report.items if (i.namespace, i.deployment) in unbound),
                    options.output, io.stdout)
    elif options.wait and outcome != rollout.COMPLETE:
        render.show(view.VIEW, _Rows(now.left), options.output, io.stdout)
    elif options.wait and not options.watch:
        render.show(view.VIEW, report, options.output, io.stdout)
    if not options.output.structured:
        view.deployment_lines(report, io.stderr)
    if outcome == rollout.COMPLETE and unfinished:     # not complete while a recovery is not done
        view.wait_recovery_unfinished(unfinished, io.stderr)
    elif outcome == rollout.COMPLETE:
        view.wait_complete(report, elapsed, io.stderr)
    elif outcome == rollout.UNBOUND:
        view.wait_unbound(now.unbound, io.stderr)
    elif outcome == rollout.HELD:
        view.wait_held(now.held, io.stderr)
    elif outcome == rollout.REFUSED:
        view.wait_refused(now.refused, io.stderr, [judge_verdict.injection_refused(k, r) for k, r in now.injection])
    elif outcome == rollout.REJECTED:
        view.wait_rejected(now.rejected, io.stderr)
    elif outcome == rollout.SETTLED:
        view.wait_settled(now, elapsed, io.stderr)
        step = view.next_step(_Rows(now.left), scope)
        if step:
            render.line(io.stderr, step)
    elif options.wait:
        view.wait_timeout(elapsed, now, io.stderr)
    if not options.output.structured:        # --watch alone at --timeout: as verify's
        render.verdict_line(io.stderr, report.verdict)
    return code


class _Rows:
    """The rows still left (a report's `items` only), for the table view."""

    def __init__(self, items):
        self.items = list(items)


# -- one context of several (cli/flows/__init__.py: the read flows' face) --------------------

PRELOAD = JUDGED + ("judge.live", "judge.rollout", "render.verify", "render.terminal", "kube.watch", "judge.observed",
                    "load.engine_words", "judge.gpu", "load.nodes")


def view_of(options: VerifyOptions):
    """The view of this run: --observe puts OBSERVED in the default columns (render/verify.view_for)."""
    return view.view_for(options.observe)


def failing(options: VerifyOptions) -> tuple[str, ...]:
    """The statuses that fail the run (--fail-on; none given: every status but OK)."""
    return tuple(options.fail_on or ())


def read_context(options: VerifyOptions, conn, trace):
    """One context as `--context` alone reads it: the engines' own word included (listen: a
    crashed replica's cause, --observe), its notes the context's."""
    import io as _io

    heard = _io.StringIO()

    def judged_and_heard(options: VerifyOptions, snapshot):
        report = judged(options, snapshot)
        if snapshot.source == "cluster":
            read_gpus(options.replace(connection=conn), report.items, heard)
            listen(options.replace(connection=conn), report.items, heard)
        return report

    result = judged_context(options, conn, trace, judged_and_heard, decide)
    said = tuple(text[len("note: "):] for text in heard.getvalue().splitlines() if text.startswith("note: "))
    return result.replace(notes=result.notes + said) if said else result


def context_lines(result, options: VerifyOptions, err):
    from kubectl_kvcache.render import fleet

    for d in result.report.deployments:
        fleet.context_line(err, result.context, view.deployment_line(d))
    if result.report.items or result.report.suppressed:
        fleet.context_line(err, result.context, view.summary(result.report))
    else:
        fleet.nothing_found(err, result.context, view.VIEW.empty, result.namespace)
