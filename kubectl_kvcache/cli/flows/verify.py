"""`kubectl kvcache verify`: what every pool-attached engine container runs with; with
--watch/--wait, followed through the rollout (list, then watch Pods and ModelDeployments)."""

from __future__ import annotations

import os
import threading
import time

from kubectl_kvcache import exitcodes, render
from kubectl_kvcache.kube import selector as label_selector
from kubectl_kvcache.judge import rollout
from kubectl_kvcache.judge import verify
from kubectl_kvcache.load import cluster as cluster_lists, reader, scope as load_scope
from kubectl_kvcache.operator import api
from kubectl_kvcache.engine import CachedPredict
from kubectl_kvcache.errors import ExpiredContinue, Forbidden, NotFound, PluginError
from kubectl_kvcache.render import verify as view

WATCH_SECONDS = 300         # the server ends each watch after this long; it is then resumed
MAX_RECONNECTS = 5          # consecutive failed watch connections before giving up
MAX_RELISTS = 5             # consecutive 410 Gone (resourceVersion too old) before giving up
BACKOFF = 0.5               # seconds before the first reconnect; doubled each time, at most 10 s
TICK = 1.0                  # how often the live progress line's clock moves


def exit_code(options: VerifyOptions, report) -> int:
    """1 when an item's status is one of --fail-on (default: every status but OK)."""
    fail_on = set(options.fail_on or (s for s in verify.STATUSES if s != verify.OK))
    return exitcodes.FINDINGS if any(i.status in fail_on for i in report.items) else exitcodes.OK


def looks_for_podless_replicas(options: VerifyOptions) -> bool:
    """Replicas without a Pod are looked for unless the Pods were filtered (by name or label)."""
    return not (options.scope.names or options.scope.selector)


def run(options: VerifyOptions, io) -> int:
    if options.watch or options.wait:
        return follow(options, io)
    snapshot = reader.read(options.connection, options.scope, io.stdin, render.tracer(io.stderr))
    render.notes(snapshot, io.stderr)
    report = verify.verify(snapshot, account=looks_for_podless_replicas(options))
    render.show(view.VIEW, report, options.output, io.stdout, io.stderr)
    names = options.scope.names
    if not options.output.structured:
        if names:
            view.pod_details(report, io.stdout)
        view.deployment_lines(report, io.stderr)
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
                                   f"labelled {api.INJECT_LABEL}=true")
    return exit_code(options, report)


# -- --watch / --wait ----------------------------------------------------------------------------

def _watch_seconds():
    value = os.environ.get("KVCACHE_WATCH_SECONDS", "")
    return int(value) if value.isdigit() and int(value) > 0 else WATCH_SECONDS


class Watcher(threading.Thread):
    """Follows one collection from a list's resourceVersion: events go to `events` as
    (key, type, record); bookmarks only move the resourceVersion; a watch the server ends is
    resumed; 410 Gone lists again (a RELIST event with every record); connection failures are
    retried with backoff, MAX_RECONNECTS in a row at most; a refusal ends it with an error event."""

    def __init__(self, client, target, version, events, stop, seconds, chunk=None):
        super().__init__(daemon=True, name=f"watch-{target.key}")
        self.client, self.target, self.version = client, target, version
        self.events, self.stop, self.seconds, self.chunk = events, stop, seconds, chunk

    def run(self):
        failures = relists = 0
        target = self.target
        while not self.stop.is_set():
            started, seen = time.monotonic(), 0
            try:
                for kind, obj in self.client.watch(target.path, self.version, target.selector, self.seconds,
                                                   what=target.what):
                    seen += 1
                    version = (obj.get("metadata") or {}).get("resourceVersion")
                    if version:
                        self.version = version
                    failures = 0
                    if kind in ("ADDED", "MODIFIED", "DELETED"):
                        relists = 0
                        try:
                            record = target.convert(obj)
                        except PluginError as exc:      # a malformed object: no reconnect mends it
                            self._fail(exc)
                            return
                        self.events.put((target.key, kind, record))
                    if self.stop.is_set():
                        return
                if not seen and time.monotonic() - started < 1.0:
                    # the server ended the watch at once (client-go's "very short watch"): back off
                    raise PluginError(f"{target.what}: the API server ended the watch at once")
            except ExpiredContinue:
                relists += 1
                if relists > MAX_RELISTS:
                    self._fail(PluginError(f"{target.what}: the resourceVersion kept expiring (410 Gone "
                                           f"{MAX_RELISTS} times in a row)"))
                    return
                try:
                    kw = {} if self.chunk is None else {"chunk": self.chunk}
                    records, self.version = self.client.list_versioned(
                        target.path, target.convert, selector=target.selector,
                        what=target.what.replace("watch", "list", 1), **kw)
                except PluginError as exc:
                    self._fail(exc)
                    return
                self.events.put((target.key, "RELIST", records))
            except (Forbidden, NotFound) as exc:
                self._fail(exc)
                return
            except PluginError as exc:
                failures += 1
                if failures > MAX_RECONNECTS:
                    self._fail(PluginError(f"{exc} (gave up after {MAX_RECONNECTS} reconnects)"))
                    return
                self.events.put((target.key, "RECONNECT", str(exc)))
                self.stop.wait(min(BACKOFF * 2 ** failures, 10.0))

    def _fail(self, exc):
        self.events.put((self.target.key, "ERROR", exc))


class Live:
    """The snapshot a watch keeps current: ModelDeployments and Pods replaced as events come."""

    def __init__(self, snapshot):
        self.snapshot = snapshot
        self.pods = {(p.namespace, p.name): p for p in snapshot.pods}

    def apply(self, key, kind, record, targets):
        if key == "deployments":
            if kind == "RELIST":
                self.snapshot.deployments = {(d.namespace, d.name): d for d in record}
            elif kind == "DELETED":
                self.snapshot.deployments.pop((record.namespace, record.name), None)
            else:
                self.snapshot.deployments[(record.namespace, record.name)] = record
            return
        if kind == "RELIST":
            selector = targets[key].selector
            self.pods = {k: p for k, p in self.pods.items() if not label_selector.matches(p.labels, selector)}
            self.pods.update({(p.namespace, p.name): p for p in record})
        elif kind == "DELETED":
            self.pods.pop((record.namespace, record.name), None)
        else:
            self.pods[(record.namespace, record.name)] = record
        self.snapshot.pods = sorted(self.pods.values(), key=lambda p: (p.namespace, p.name))


def follow(options: VerifyOptions, io, clock=time.monotonic) -> int:
    """List, then watch; print changed rows (--watch) and the progress (--wait) until the rollout
    completes, a replica is confirmed REJECTED (--wait), or --timeout passes."""
    import queue    # here: a plain verify does not pay for it

    client = reader.open_client(options.connection, render.tracer(io.stderr))
    scope = options.scope.replace(namespace=load_scope.resolve_namespace(options.scope, client))
    versions = {}
    snapshot = cluster_lists.load_cluster(client, scope, chunk=options.connection.chunk_size, versions=versions)
    snapshot.namespace = scope.namespace
    render.notes(snapshot, io.stderr)
    targets = {t.key: t for t in cluster_lists.watch_targets(client, scope)}
    events, stop = queue.Queue(), threading.Event()
    watchers = [Watcher(client, t, versions[t.key], events, stop, _watch_seconds(), options.connection.chunk_size)
                for t in targets.values()]
    for w in watchers:
        w.start()
    line = view.ProgressLine(io.stderr) if options.wait else None
    try:
        return _follow(options, io, snapshot, targets, events, clock, line)
    except BaseException:
        if line:
            line.done()      # the error line (or "interrupted") starts on a line of its own
        raise
    finally:
        stop.set()


def _follow(options, io, snapshot, targets, events, clock, line):
    import queue

    live = Live(snapshot)
    predictor = CachedPredict()
    account = looks_for_podless_replicas(options)
    changes = rollout.Changes()
    rows = view.RowPrinter(io.stdout, options.output.wide, options.output.headers) if options.watch else None
    start = clock()
    deadline = None if options.timeout is None else start + options.timeout
    first = True
    while True:
        report = verify.verify(live.snapshot, account=account, predictor=predictor)
        changed = changes.update(report)
        now = rollout.progress(report)
        if first and rows is not None and not report.items:
            render.nothing_found(live.snapshot, view.VIEW.empty + " (yet: watching)", io.stderr)
        first = False
        if rows is not None and changed:
            if line:
                line.clear()
            rows.emit(changed)
        if line:
            line.show(view.progress_line(now, clock() - start))
        if options.wait and now.outcome:
            return _end(options, io, report, now, now.outcome, clock() - start, line)
        # wait for the next events (the live line's clock ticks meanwhile)
        batch = []
        while not batch:
            remaining = None if deadline is None else deadline - clock()
            if remaining is not None and remaining <= 0:
                return _end(options, io, report, now, rollout.TIMEOUT, options.timeout, line)
            step = TICK if remaining is None else min(TICK, remaining)
            try:
                batch.append(events.get(timeout=max(0.01, step)))
            except queue.Empty:
                if line:
                    line.show(view.progress_line(now, clock() - start), tick=True)
                continue
            while True:
                try:
                    batch.append(events.get_nowait())
                except queue.Empty:
                    break
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
            live.apply(key, kind, payload, targets)


def _end(options, io, report, now, outcome, elapsed, line):
    if line:
        line.done()
    if options.output.structured:
        render.show(view.VIEW, report, options.output, io.stdout)
    elif options.wait and outcome != rollout.COMPLETE:
        render.table(view.VIEW.headers(options.output.wide), view.VIEW.cells(_Rows(now.left), options.output.wide),
                     io.stdout, not options.output.headers)
    elif options.wait and not options.watch:
        render.show(view.VIEW, report, options.output, io.stdout)
    if not options.output.structured:
        view.deployment_lines(report, io.stderr)
    if outcome == rollout.COMPLETE:
        view.wait_complete(report, elapsed, io.stderr)
        return exitcodes.OK
    if outcome == rollout.REJECTED:
        view.wait_rejected(now.rejected, io.stderr)
        return exitcodes.FINDINGS
    if options.wait:
        view.wait_timeout(elapsed, now, io.stderr)
        return exitcodes.FINDINGS
    return exit_code(options, report)      # --watch alone, at --timeout


class _Rows:
    """The rows still left (a report's `items` only), for the table view."""

    def __init__(self, items):
        self.items = list(items)
