"""verify's view: one row per engine container (table, wide, describe), the per-Pod blocks after
the table of named Pods, the summary and deployment lines, --watch rows and the progress line."""

from __future__ import annotations


from kubectl_kvcache import masking
from kubectl_kvcache.engine import CRASH_DTYPE, CRASH_NOT_DTYPE, UNREAD
from kubectl_kvcache.render.checks import policy_text, release_source
from kubectl_kvcache.render.labels import engine_said
from kubectl_kvcache.render.core import (NONE, Column, View, cell, column_widths, line, live_clear, live_line,
                                         scope_args, table_line, token)
from kubectl_kvcache.judge import capacity_sum
from kubectl_kvcache.judge.statuses import DELETED
from kubectl_kvcache.judge.verdict import RECOVERY
from kubectl_kvcache.judge.verify import (CRASHING, DONE, NO_POD, NOT_CREATED, OK, REJECTED, STATUSES, STUCK,
                                          TO_ROLL, Item, recover_command, refused_fix, refused_lead, state_label)


def _owner(item):
    return f"{item.owner['kind'].lower()}/{item.owner['name']}" if item.owner else None


def _owner_long(item):
    return f"{item.owner['kind']}/{item.owner['name']}" if item.owner else None


def _pod(item):
    """The Pod's name; a replica that has no Pod shows whose it is, as one word (angle brackets:
    never a Pod name)."""
    return item.pod if item.pod is not None else f"<no-pod:{item.deployment}>"


def _state(item):
    """`Running`, `CrashLoopBackOff`, `Terminating`: one word (READY, RESTARTS and EXIT are columns)."""
    state = item.state
    if not state:
        return None
    if state["terminating"]:
        return "Terminating"
    return state["waiting"] or state["phase"] or "Unknown"


def _exit(item):
    code = item.state.get("lastExitCode") if item.state else None
    return None if code is None else str(code)


def _ready(item):
    if not item.state or item.state["ready"] is None:
        return None
    return "true" if item.state["ready"] else "false"


def _restarts(item):
    return item.state["restarts"] if item.state and item.state["restarts"] is not None else None


def _cause(item):
    """UNKNOWN: what would decide it, `code: subject` (engine/cause.py); a crashed replica: the
    engine's own line (engine_said). Both, `; ` apart, for an UNKNOWN that crashed."""
    parts = [str(item.cause)] if item.cause is not None and item.status == "UNKNOWN" else []
    said = engine_said(item)
    return "; ".join(parts + ([said] if said else [])) or None


NOT_OBSERVED, CONFLICT, NOT_READ = "-", "<conflict>", "<not-read>"


def _observed(item):
    """OBSERVED: the dtype the engine reports, SGLang's torch dtype beside it; `<conflict>` when its
    reports disagree (never a confirmation), `<not-read>` when a report was seen and not read
    (ambiguous, cut, a port not decided); `-` when nothing was read (no --observe, not running,
    nothing found). One word each (angle brackets: never a dtype). Held against EFFECTIVE in
    describe and the exit code."""
    seen = item.observed
    if seen is None:
        return NOT_OBSERVED
    if seen.conflict:
        return CONFLICT
    if seen.dtype is None and seen.resolved is None:
        return NOT_READ
    text = seen.dtype if seen.dtype is not None else seen.resolved
    if seen.dtype is not None and seen.resolved:
        text += f"({seen.resolved.removeprefix('torch.')})"
    return text


def _observed_long(item):
    seen = item.observed
    if seen is None:
        return None
    if seen.dtype is None and seen.resolved is None:
        return "not read: " + "; ".join(seen.unread)
    agrees = item.observed_agrees
    said = f"{seen.dtype or seen.resolved} ({'its /metrics' if seen.source == 'metrics' else 'its log'})"
    if seen.dtype is not None and seen.resolved:
        said += f", resolved to {seen.resolved}"
    if seen.conflict:
        said += f": {seen.conflict}: never a confirmation"
    elif agrees is True:
        said += ": the engine confirms the prediction"
    elif agrees is False:
        said += f": the engine contradicts the prediction ({item.effective}): the model is wrong or the engine " \
                f"rewrote the value after the parse"
    return said + (f" (not read: {'; '.join(seen.unread)})" if seen.unread else "")


def _capacity(item):
    """CAPACITY: the tokens the replica's KV cache holds, in its engine's words (`-`: not read;
    `<conflict>`: its reports disagree; `<not-read>`: a report seen and not read), never 0."""
    cap = item.capacity
    if cap is None:
        return NOT_OBSERVED
    if cap.conflict:
        return CONFLICT
    return NOT_READ if cap.tokens is None else str(cap.tokens)


def _max_len(item):
    """MAX-LEN: the longest request the engine said it serves (`-`: not said)."""
    cap = item.capacity
    return str(cap.max_len) if cap is not None and cap.max_len is not None else NOT_OBSERVED


BASIS = {"tokens": "the engine's own token figure", "blocks": "num_gpu_blocks x block_size"}


def _capacity_long(item):
    """`652,144 tokens (the engine's own token figure, its log); 19.90x requests of 32,768 tokens`."""
    cap = item.capacity
    where = "its /metrics" if cap.source == "metrics" else "its log"
    if cap.conflict:
        said = f"not read: {cap.conflict}"
    elif cap.tokens is None:
        said = "not read: " + "; ".join(cap.unread)
    else:
        said = f"{cap.tokens:,} tokens ({BASIS.get(cap.basis, cap.basis)}, {where})"
        if cap.blocks is not None:
            said += f"; {cap.blocks:,} blocks" + (f" of {cap.block_size} tokens" if cap.block_size else "")
        if cap.concurrency is not None and cap.max_len is not None:
            said += f"; {cap.concurrency:.2f}x requests of {cap.max_len:,} tokens"
    if cap.unread and cap.tokens is not None:
        said += f" (not read: {'; '.join(cap.unread)})"
    return said


def _exit_cause(item):
    cause = item.exit_cause
    if cause is None:
        return None
    kind = "its argument parser refused the argv" if cause.kind == "rejected" else "a start-up failure after the parse"
    blame = {CRASH_DTYPE: " (the KV-cache dtype, in its words)",
             CRASH_NOT_DTYPE: " (not the KV-cache dtype)"}.get(cause.blame or "", "")
    return f"{kind}{blame}: {cause.line}"


def _engine_long(item):
    """`vllm:0.29.0 (version from spec.engine.version)`; a release read nowhere says so
    (`vllm:? (version from nowhere: release unknown)`), never "from None"."""
    if item.engine_version:
        return release_source(item.engine, item.engine_version, item.version_source) if item.version_source \
            else f"{item.engine}:{item.engine_version}"
    if item.version_source == UNREAD and item.engine:
        return release_source(item.engine, "?", UNREAD)
    return item.engine


def _argv_rows(item):
    return [[pos, element] + ([mark] if mark else []) for pos, element, mark in argv_listing(item)]


def _item_fields(item):
    """One engine container of a Pod (or a replica without one), every field in full; a field
    that is also a column is labelled by it."""
    return [("Name", _pod(item)), ("Namespace", item.namespace), (CONTAINER.label, item.container),
            (OWNER.label, _owner_long(item)), (ROLE.label, item.role),
            (ENGINE.label, _engine_long(item)),
            (BINDING.label, item.binding), (EXPECTED.label, item.expected), (EFFECTIVE.label, item.effective),
            (STATUS.label, item.status), (STATE.label, state_label(item)), (NODE.label, item.node), ("GPU", _gpu_long(item)),
            (READY.label, _ready(item)),
            (RESTARTS.label, _restarts(item)), ("Reason", item.reason)] + (
        [(OBSERVED.label, _observed_long(item)), ("Engine said", item.observed.line)] if item.observed else []) + (
        [(CAPACITY.label, _capacity_long(item)), (MAX_LEN.label, _max_len(item)), ("Capacity said", item.capacity.line)]
        if item.capacity is not None else []) + (
        [("Exit cause", _exit_cause(item))] if item.exit_cause else []) + (
        [(CAUSE.label, _cause(item))] if _cause(item) else []) + [
            ("Fix", item.fix or None)] + (
        [("Policy", f"{policy_text(item.policy)}, now {item.policy.now}")] if item.policy is not None else []) + [
            ("Argv", _argv_rows(item))]


# The columns, each defined once: the table's header, -o wide's, -o describe's label.
BINDING, EXPECTED = Column("binding", lambda i: i.binding), Column("expected", lambda i: i.expected)
EFFECTIVE, STATUS = Column("effective", lambda i: i.effective), Column("status", lambda i: i.status, status=True)
ROLE, ENGINE = Column("role", lambda i: i.role), Column("engine", lambda i: i.engine)
CONTAINER, OWNER, STATE = Column("container", lambda i: i.container), Column("owner", _owner), Column("state", _state)
READY, RESTARTS = Column("ready", _ready), Column("restarts", _restarts)
OBSERVED, CAUSE = Column("observed", _observed), Column("cause", _cause, text=True)
NODE = Column("node", lambda i: i.node)     # the Pod's spec.nodeName, as kubectl get pods -o wide's NODE
CAPACITY, MAX_LEN = Column("capacity", _capacity), Column("max-len", _max_len)   # --observe -o wide (tokens)
GPU = Column("gpu", lambda i: i.gpu.cell if i.gpu is not None else None)     # its Node's labels (judge/gpu.py)


def _gpu_long(item):
    """describe's GPU: the product and compute capability its Node's labels say, and the labels
    that would decide and are absent (None: the Node was not read)."""
    if item.gpu is None:
        return None
    said = item.gpu.named if (item.gpu.product or item.gpu.compute or item.gpu.vendor) else "no GPU label"
    return said + (f" (absent: {', '.join(item.gpu.missing)})" if item.gpu.missing else "")


# Default: what a replica runs and whether that is what it should (fits 80 columns with -n);
# wide: its engine, Pod and container state; describe: the reason, the fix and the argv.
def _view(observe: bool = False) -> View:
    columns = (Column("namespace", lambda i: i.namespace, namespace=True), Column("pod", _pod),
               BINDING, EXPECTED, EFFECTIVE) + ((OBSERVED,) if observe else ()) + (STATUS,)
    wide = (ROLE, ENGINE, Column("version", lambda i: i.engine_version), CONTAINER, OWNER, STATE, READY, RESTARTS,
            Column("exit", _exit), NODE, GPU) + (() if observe else (OBSERVED,)) + (
        (CAPACITY, MAX_LEN) if observe else ()) + (CAUSE,)
    return View(columns=columns, wide=wide, rows=lambda report: report.items, to_dict=lambda report: report.to_dict(),
                empty="pool-attached engine pods", describe=_item_fields, document="verify", kind="VerifyReport")


VIEW = _view()
# --observe: what the engines said is a column of the default table too, beside EFFECTIVE (as
# kubectl's -L adds a column when asked for), so the run that read it shows it without -o wide.
OBSERVE_VIEW = _view(observe=True)


def view_for(observe: bool) -> View:
    """The view of a run: with --observe, OBSERVED in the default columns."""
    return OBSERVE_VIEW if observe else VIEW


def summary(report):
    counts = report.summary()
    parts = [f"{counts[s]} {s}" for s in STATUSES if counts[s]]
    rolling = sum(1 for i in report.items if i.rolling)
    if rolling:     # OK as rendered, not done: never a green summary in the middle of a rollout
        parts[0 if counts[OK] else len(parts)] += f" ({rolling} of them still rolling)"
    pods = counts["total"] - counts[NO_POD]
    head = f"{pods} {'pod' if pods == 1 else 'pods'}"
    if counts[NO_POD]:
        head += f", {counts[NO_POD]} {'replica' if counts[NO_POD] == 1 else 'replicas'} without a Pod"
    text = f"{head}: " + ", ".join(parts) if parts else head
    if report.policy is not None:
        text += "; policy " + report.policy.text()
    return text


def deployment_line(d) -> str:
    """`deployment llm-prod/qwen-chat: 2/2 replicas run 'fp8', 0 to roll, 0 crash-looping`."""
    if d.unbound:
        where = "is not in the input" if d.unread else f"does not exist in namespace {d.namespace}"
        return (f"deployment {d.namespace}/{d.name}: its KVCachePoolBinding {d.binding} {where} "
                f"(spec.kvCache.poolRef.name): none of its {d.desired} "
                f"{'replica' if d.desired == 1 else 'replicas'} can run a Binding's dtype"
                + (f"; {d.domain}" if d.domain else ""))
    if d.expected is not None:
        value = f"{d.expected!r}"
    elif d.setting_on:
        value = "as expected (nothing is expected: no store is rendered)"
    else:
        value = "as expected (nothing is expected: the Setting is off)"
    text = (f"deployment {d.namespace}/{d.name}: {d.counts[DONE]}/{d.desired} "
            f"{'replica runs' if d.desired == 1 else 'replicas run'} {value}, {d.counts[TO_ROLL]} to roll, "
            + (f"{d.counts[NOT_CREATED]} without a Pod (NO-POD), " if d.counts[NOT_CREATED] else "")
            + f"{d.counts[CRASHING]} crash-looping")
    if d.counts[STUCK]:
        which = ", ".join(f"{n} {s}" for s, n in sorted(d.stuck.items()))
        text += f", {which} that rolling will not fix"
    terminating = sum(r.terminating for r in d.roles)
    if terminating:
        text += f" ({terminating} old {'Pod' if terminating == 1 else 'Pods'} terminating)"
    if d.hold is not None:
        text += f"; {d.hold.text}"
    if d.domain and (d.hold is None or d.domain not in d.hold.text):
        text += f"; {d.domain}"
    if d.refused is not None:
        text += f"; {refused_lead(d.refused, d.counts[NOT_CREATED] != 1)}: {d.refused.said}"
    return text


def deployment_lines(report, err):
    """One line per deployment; after an --observe run that read capacity, its sum (and one line
    per Binding: the capacity its replicas hold together, judge/capacity_sum.py)."""
    sums = capacity_sum.totals(report.items) if capacity_sum.observed(report.items) else None
    per = {(g["namespace"], g["name"]): g for g in sums["deployments"]} if sums else {}
    for d in report.deployments:
        got = per.get((d.namespace, d.name))
        line(err, deployment_line(d) + (f"; capacity {capacity_sum.text(got)}" if got else ""))
    for g in sums["bindings"] if sums else ():
        line(err, f"binding {g['namespace']}/{g['name']}: capacity {capacity_sum.text(g)}")


def check_step(scope):
    """Saved objects without a Pod in scope (a rendered chart holds Pod templates, not Pods):
    `check` judges the templates."""
    return f"next: kubectl kvcache check {' '.join(scope_args(scope))}   (no Pods to verify: check judges " \
           f"Pod templates, e.g. a rendered chart's)"


def all_namespaces_step(scope):
    """Nothing found in one namespace (or it does not exist): where to look next."""
    args = ["-A"] + scope_args(scope.replace(namespace=None, all_namespaces=False))
    return f"next: kubectl kvcache verify {' '.join(args)}   (every namespace)"


def next_step(report, scope):
    """After a summary with non-OK items: the one command to run next. On a cluster, the guide's
    recovery when exactly one Binding's dtype is what the engines reject; else check's findings
    with their fixes, on the same scope and input."""
    verdict = getattr(report, "verdict", None)
    for reason in verdict.reasons if verdict is not None else ():
        if reason.code == RECOVERY:     # nothing is done until that recovery is: its command first
            return f"next: {reason.fix}"
    bad = [i for i in report.items if i.status != OK]
    if not bad:
        if any(i.rolling for i in report.items):
            return f"next: kubectl kvcache verify {' '.join(scope_args(scope) + ['--wait'])}   " \
                   f"(follows the rollout until every replica is done)"
        return None
    recover = sorted({(i.namespace, i.binding) for i in bad if i.recover})
    if len(recover) == 1 and not scope.files:      # recovery acts on the cluster, not on saved files
        return f"next: {recover_command(*recover[0])}   (the guide's recovery for Binding {recover[0][1]})"
    return f"next: kubectl kvcache check {' '.join(scope_args(scope) + ['-o', 'describe'])}   (the fix for each finding)"


def argv_listing(item: Item) -> list[tuple[str, str, str]]:
    """(position, element, mark) rows for a Pod's engine container, each occurrence marked."""
    spec = item.container_spec or {}
    marks: dict = {}
    for n, occ in enumerate(item.occurrences):
        mark = f"<- kv-cache-dtype #{n + 1} = {occ['value']!r}"
        if n == item.winner and item.status != REJECTED:
            mark += "  (wins)"
        elif n == item.winner:
            mark += "  (fatal)"
        key = (occ["source"], occ["index"])
        marks[key] = marks[key] + "; " + mark if key in marks else mark
    rows = []
    for source in ("command", "args"):     # the Pod's own argv may hold a token (masking.mask_argv)
        for index, element in enumerate(masking.mask_argv(spec.get(source) or ())):
            rows.append((f"{source}[{index}]", element, marks.get((source, index), "")))
    return rows


def pod_details(report, out):
    """For named Pods, after the table: each one's describe block (the argv with every
    kv-cache-dtype occurrence marked), as -o describe prints it."""
    from kubectl_kvcache.render.formats import describe

    for item in report.items:
        if item.pod is None:
            continue
        line(out)
        describe.block(_item_fields(item), out)


# -- following a rollout (--watch / --wait) ------------------------------------------------------

class RowPrinter:
    """Table rows printed as they come (kubectl get -w): kubectl's tabwriter with RememberWidths,
    so later rows line up under the header, a column growing only when a later cell is longer.
    `output`: an Output (or, as before, the bare `wide` flag). `clock` (time.time; the flow passes
    it): each row says when it was seen, first, in a `TIME` column (`15:04:05`, local time) and in
    -o json/yaml as `time` (RFC 3339, UTC). Why a clock and not kubectl events' LAST SEEN age: a
    row of a stream is printed when the change is seen, so an age printed with it is always `0s`
    and is wrong the moment it scrolls; the time it was seen stays true in the scrollback and can
    be held against `kubectl events` and the engines' logs. -o json|yaml: one watch event per
    change, as `kubectl get -w --output-watch-events` prints them (`type` ADDED, MODIFIED or
    DELETED, `object` the row as -o json has it) with `time` beside them; json one per line."""

    def __init__(self, out, output=False, headers=True, clock=None):
        self.out, self.output, self.headers, self.clock = out, output, headers, clock
        self.widths = None
        self.printed: dict = {}      # row key -> the cells last printed for it

    @property
    def _data(self):
        """-o json or yaml (else table rows)."""
        return getattr(self.output, "format", None) in ("json", "yaml")

    def _cells(self, item):
        wide = getattr(self.output, "wide", self.output is True)
        return [cell(c.cell(item, wide)) if c.text else token(c.cell(item, wide)) for c in VIEW.layout(self.output)]

    def emit(self, items, gone=()):
        """Rows that changed in what this table shows (a change only -o wide shows, or none of the
        columns, prints no identical row again), then each deleted Pod's last row with STATUS
        DELETED (kubectl get -w prints a deleted object once more)."""
        columns = VIEW.layout(self.output)
        rows, events = [], []
        before = dict(self.printed)
        for item in items:
            cells = self._cells(item) if not self._data else [item.to_dict()]
            # replicas without a Pod are told apart by nothing the table shows (their slot moves as
            # Pods come and go): such a row is not printed again once printed
            key = item.key if item.pod is not None else (item.namespace, item.deployment, item.role,
                                                         repr(cells))
            if before.get(key) != cells:
                self.printed[key] = cells
                rows.append(cells)
                events.append(("MODIFIED" if key in before else "ADDED", item))
        status = next((n for n, c in enumerate(columns) if c is STATUS), None)
        for item in gone:
            cells = self.printed.pop(item.key, None) or (self._cells(item) if not self._data else [item.to_dict()])
            if status is not None and not self._data:
                cells = cells[:status] + [DELETED] + cells[status + 1:]
            rows.append(cells)
            events.append(("DELETED", item))
        if not rows:
            return
        seen = self.clock() if self.clock is not None else None
        if self._data:
            self._write_events(events, seen)
            return
        if seen is not None:
            import time

            stamp = time.strftime("%H:%M:%S", time.localtime(seen))
            rows = [[stamp] + row for row in rows]
        if self.widths is None:
            heads = ([] if seen is None else ["TIME"]) + [c.header.upper() for c in columns]
            if self.headers:
                rows.insert(0, heads)
        self.widths = column_widths(rows, self.widths)
        for row in rows:
            line(self.out, table_line(row, self.widths), wrap=False)
        self.out.flush()

    def _write_events(self, events, seen):
        import time

        from kubectl_kvcache.render import kubeobject
        from kubectl_kvcache.render.formats import FORMATS

        printer = FORMATS[self.output.format].printer()
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seen if seen is not None else time.time()))
        for kind, item in events:
            row = item.to_dict()        # the object as -o json's items name it (render/kubeobject.py)
            printer.write_line({"type": kind, "time": when, "object": kubeobject.named(row, "Pod", row.get("pod"))},
                               self.out)
        self.out.flush()


def _clock(seconds):
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s"


def progress_line(p, elapsed, width=None) -> str:
    """`rollout: 3 OK, 1 MISSING, 1 NO-POD, 1 terminating | deployments 2/4 done | 0m42s`.

    `width` (a live line on a terminal): the line never wraps, since a wrapped line is not erased
    by the next rewrite and reads as a cut one. Shorter words first, then the counts clipped."""
    counts = [(p.counts[s], s) for s in STATUSES if p.counts[s]]
    if p.counts["terminating"]:
        counts.append((p.counts["terminating"], "terminating"))
    pending = "" if p.pending is None else ("true" if p.pending else "false")
    listed = ", ".join(f"{n} {s}" for n, s in counts) or "no replicas"
    setting = f" | Setting: status.value not yet {pending}" if pending else ""
    full = f"rollout: {listed} | deployments {p.done}/{p.total} done{setting} | {_clock(elapsed)}"
    if width is None or len(full) < width:
        return full
    listed = ", ".join(f"{n} {'term.' if s == 'terminating' else s}" for n, s in counts) or "no replicas"
    setting = f" | Setting not yet {pending}" if pending else ""
    short = f"{listed} | {p.done}/{p.total} done{setting} | {_clock(elapsed)}"
    if len(short) < width:
        return short
    tail = f" | {p.done}/{p.total} done{setting} | {_clock(elapsed)}"
    if len(tail) + 12 >= width:
        tail = f" | {p.done}/{p.total} | {_clock(elapsed)}"
    words = [f"{n} {'term.' if s == 'terminating' else s}" for n, s in counts]
    for k in range(len(words) - 1, -1, -1):
        head = ", ".join(words[:k] + [f"+{sum(n for n, _ in counts[k:])} more"])
        if len(head + tail) < width:
            return head + tail
    return (head + tail)[-(width - 1):]


class ProgressLine:
    """On a terminal one live line, rewritten in place; piped, a plain line whenever it changes."""

    def __init__(self, err):
        self.err = err
        isatty = getattr(err, "isatty", None)
        self.live = bool(isatty and isatty())
        self.last = None
        self.shown = False

    @property
    def width(self):
        """The terminal's width for a live line (None when piped: a plain line is never clipped)."""
        if not self.live:
            return None
        import shutil
        return shutil.get_terminal_size((80, 24)).columns

    def show(self, text, tick=False):
        if self.live:
            live_line(self.err, text)
            self.shown = True
        elif not tick and text.split(" | ")[:2] != (self.last or "").split(" | ")[:2]:
            line(self.err, text)
            self.err.flush()
        self.last = text

    def clear(self):
        """Before other output on a terminal: take the live line away (show() puts it back)."""
        if self.live and self.shown:
            live_clear(self.err)
            self.shown = False

    def done(self):
        if self.live and self.shown:
            line(self.err)
            self.err.flush()
            self.shown = False


def wait_complete(report, elapsed, err):
    n = len(report.deployments)
    if n == 0:
        line(err, "nothing to wait for: no pool-attached ModelDeployment in scope")
        return
    line(err, f"rollout complete after {_clock(elapsed)}: every replica of {n} pool-attached "
              f"{'ModelDeployment' if n == 1 else 'ModelDeployments'} runs its expected value")


def wait_recovery_unfinished(reasons, err):
    """The replicas followed are rolled, but a recovery in scope stopped part-way (or runs): the
    rollout is not done until it is; each one with the command that continues it."""
    line(err, "the replicas followed are rolled, but the rollout is not done: a recovery stopped part-way")
    for r in reasons:
        line(err, f"  {r.message}; {r.fix}")


def wait_unbound(unbound, err):
    """Followed deployments whose Binding does not exist: no rollout brings one, so the wait ends."""
    for namespace, name, binding in unbound:
        line(err, f"ModelDeployment {namespace}/{name} names KVCachePoolBinding {binding} "
                  f"(spec.kvCache.poolRef.name), which does not exist in namespace {namespace}: no rollout can "
                  f"bring its replicas to a Binding's dtype; create the Binding, or recreate the deployment on an "
                  f"existing one")


def wait_held(held, err):
    """Followed deployments whose rollout the operator holds (judge/holds.py): waiting does not end
    a hold, its cause has to, so the wait ends at once and names what holds it."""
    for h in held:
        line(err, f"ModelDeployment {h.namespace}/{h.deployment}: {h.text}")
        if h.message:
            line(err, f"  the operator says: {masking.mask(h.message)}")


def wait_refused(deployments, err, controllers=()):
    """Followed deployments whose replicas the operator says it cannot create, and opt-in Pods'
    controllers whose Pods the injection webhook refuses (`controllers`: their Reasons,
    judge/verdict.injection_refused): the wait ends at once (waiting does not create them),
    quoting what is said and what to do."""
    for d in deployments:
        r = d.refused
        n = d.counts[NOT_CREATED]
        many = f"{n} {'replica' if n == 1 else 'replicas'} without a Pod"
        if r.spec:
            line(err, f"ModelDeployment {d.namespace}/{d.name}: {many}, and none can be created as the spec stands: "
                      f"{r.said}")
        else:
            line(err, f"ModelDeployment {d.namespace}/{d.name}: {many} that the operator cannot create; it says: "
                      f"{r.said}")
            if r.webhook:
                line(err, f"  the API server refuses the Pods: admission webhook {r.webhook} denied the request: "
                          f"{r.denied or '(no explanation)'}")
        line(err, f"  fix: {refused_fix(d, r)}")
    for reason in controllers:
        line(err, reason.message)
        line(err, f"  fix: {reason.fix}")


def node_notes(read, err):
    """What could not be read of the Nodes (load/nodes.py), once each; the predictions stand."""
    from kubectl_kvcache.render.core import note

    if read.denied:
        note(err, "not allowed to get nodes: the GPU each replica runs on is not read and the predictions stand "
                  "(kubectl auth can-i get nodes)")
    if read.missing:
        note(err, f"{len(read.missing)} {'node' if len(read.missing) == 1 else 'nodes'} not found "
                  f"({', '.join(read.missing[:3])}{', ...' if len(read.missing) > 3 else ''}): their GPU is not read")
    if read.failed:
        note(err, f"the nodes' GPU labels could not be read: {read.failed}")
    if read.skipped:
        n = len(read.skipped)
        note(err, f"{n} more {'node' if n == 1 else 'nodes'}: their GPU labels are not read (at most {read.bound} a run); "
                  f"the predictions stand")


def refusal_notes(read, wanted, err):
    """What could not be read of the controllers' refusals (load/events.py), once each: a
    namespace whose events may not be listed (the replicas without a Pod are then waited for, and
    the user is told why nothing says whether their create is refused), a failed read, and the
    objects or events beyond the read's bounds."""
    from kubectl_kvcache.render.core import note

    for ns in sorted(read.denied):
        n = sum(1 for w in wanted if w[0] == ns)
        note(err, f"not allowed to list events in namespace {ns}: whether the Pods of {n} "
                  f"{'object' if n == 1 else 'objects'} short of Pods are refused creation (FailedCreate) is not "
                  f"read; replicas without a Pod are waited for (kubectl auth can-i list events -n {ns})")
    if read.failed:
        note(err, f"the events that say whether a create is refused could not be read: {read.failed}")
    if read.skipped:
        note(err, f"{read.skipped} more objects short of Pods: their events are not read (at most "
                  f"{read.bounds.MAX_OBJECTS} a read)")


def wait_rejected(items, err):
    for item in items:
        if not item.confirmed_rejected:         # a start-up failure after the parse (judge/rollout.rejects)
            line(err, f"replica {item.namespace}/{item.pod} of ModelDeployment {item.deployment} fails at start-up "
                      f"after its arguments were parsed: {item.exit_cause.line if item.exit_cause else item.reason}")
            blame = item.exit_cause.blame if item.exit_cause else None
            if blame == CRASH_NOT_DTYPE:     # engine/crash.py: never `recover` for it
                line(err, f"  not the KV-cache dtype: {item.exit_cause.why}")
            elif item.recover:      # its words blame the dtype (judge/observed.dtype_failure)
                line(err, f"  the Binding's dtype ({item.expected}) does not start: recover with: "
                          f"kubectl kvcache recover {item.binding} -n {item.namespace}")
            elif blame is None and item.binding and item.expected:
                line(err, f"  if the Binding's dtype ({item.expected}) is the cause, recover with: kubectl kvcache "
                          f"recover {item.binding} -n {item.namespace}")
            continue
        line(err, f"replica {item.namespace}/{item.pod} of ModelDeployment {item.deployment} is confirmed REJECTED "
                  f"({'its engine said: ' + item.exit_cause.line if item.exit_cause else 'its engine exited with code 2: ' + item.reason}): the rollout crash-loops every replica it "
                  f"replaces. Recover with: kubectl kvcache recover {item.binding or NONE} -n {item.namespace}")


def wait_settled(p, elapsed, err):
    """Every replica left is one rolling will not change: the wait ends, it would only time out."""
    counts: dict = {}
    for item in p.left:
        counts[item.status] = counts.get(item.status, 0) + 1
    which = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    n = len(p.left)
    line(err, f"stopped waiting after {_clock(elapsed)}: rolling will not change the {n} "
              f"{'replica' if n == 1 else 'replicas'} left ({which}: rendered from the spec as it is now), "
              f"listed on stdout")


def wait_timeout(timeout, p, err):
    if p.pending is not None:
        word = "true" if p.pending else "false"
        line(err, f"timed out after {_clock(timeout)}: the Setting's spec.value asks for {word!r} and its "
                  f"status.value does not report it yet (the operator has not taken the change); "
                  f"{len(p.left)} {'replica' if len(p.left) == 1 else 'replicas'} not done, listed on stdout")
        return
    line(err, f"timed out after {_clock(timeout)}: {len(p.left)} "
              f"{'replica has' if len(p.left) == 1 else 'replicas have'} not rolled to the expected value "
              f"({p.done}/{p.total} deployments done); listed on stdout")


def wait_interrupted(elapsed, p, err):
    """Ctrl-C during --wait: where the rollout stood (then `error: interrupted`, exit 130)."""
    n = len(p.left)
    left = (f"{n} {'replica has' if n == 1 else 'replicas have'} not rolled to the expected value, listed on stdout"
            if n else "every replica followed runs its expected value")
    pending = "" if p.pending is None else \
        f"; the Setting's status.value does not report {'true' if p.pending else 'false'} yet"
    line(err, f"interrupted after {_clock(elapsed)}: {left} ({p.done}/{p.total} deployments done{pending})")


def watch_reconnect(what, why, err):
    """`why` names what failed (the watch, or the API server it could not reach)."""
    line(err, f"note: {why if what in why else what + ': ' + why}; reconnecting")


def watch_relist(what, err):
    line(err, f"note: {what}: its resourceVersion expired (410 Gone); listed again")


def observation_notes(read, err):
    """What could not be read of the engines' own word, once per kind and cause (the prediction
    stands): refused, failed (a redirect, an encoding, a port, a timeout), skipped at the
    deadline, and a line that may hold a report not read whole (load/engine_words.Read.partial)."""
    from kubectl_kvcache.render.core import note

    ew = read.bounds        # load/engine_words: its bounds and names, said as they are
    names = {ew.LOG: "log heads", ew.PREVIOUS: "previous logs", ew.METRICS: "/metrics pages"}
    for what in sorted({"pods/proxy (vLLM's /metrics)" if kind == "metrics" else "pods/log" for kind in read.denied}):
        note(err, f"not allowed to get {what}: the engines' own reports are not read; the prediction stands")
    for kind, (count, first) in sorted(read.failed.items()):
        note(err, f"{count} {'read' if count == 1 else 'reads'} of the engines' {kind} failed, the prediction "
                  f"stands (first: {masking.mask(first)})")
    if read.skipped:
        note(err, f"{read.skipped} reads of the engines' logs were not made: the time for them ran out "
                  f"({ew.DEADLINE:g}s for every read of a run); the prediction stands")
    whys = {ew.LONG: f"a line that may hold a report is longer than {ew.LINE_BYTES >> 10} KiB",
            ew.UTF8: "a line is not UTF-8",
            ew.KEPT: "more lines that may hold a report than a read may keep (its share of the run's "
                     f"{ew.TOTAL_KEEP_BYTES >> 20} MiB, {ew.KEEP_BYTES >> 10} KiB at most)"}
    limits = {ew.LOG: ew.HEAD_BYTES, ew.PREVIOUS: ew.TAIL_BYTES, ew.METRICS: ew.METRICS_BYTES}
    for (kind, why), count in sorted((getattr(read, "partial", None) or {}).items()):
        said = whys.get(why) or (f"the {'page goes on' if kind == ew.METRICS else 'last line is cut'} past the "
                                 f"{limits.get(kind, 0) >> 10} KiB read")
        note(err, f"{count} of the engines' {names.get(kind, kind)}: {said}; "
                  + ("those lines are not read" if why == ew.UTF8 else "that report is not read")
                  + ", the prediction stands")
