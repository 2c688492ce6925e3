"""The engine's own word held against the prediction: which containers to read, and what was read
made part of each row (Item.observed, Item.exit_cause). Pure: the reads are load/engine_words.py's.

A prediction the engine confirms stays as it is; one the engine contradicts keeps both (the row's
EFFECTIVE is the model's, OBSERVED the engine's) and fails the run (judge/verify.severity), never
preferring either in silence. A crashed container's previous log names why it died: argparse's
error confirms REJECTED, anything after the parse is a start-up failure (`verify --wait` ends on
either), REJECTED only where the engine's words blame the KV-cache dtype (engine/crash.py).
"""

from __future__ import annotations

from kubectl_kvcache import engine
from kubectl_kvcache.judge import fixes
from kubectl_kvcache.judge.verify import CRASH_LOOP, NO_POD, REJECTED, Item

def _port(item: Item) -> int | None:
    """The port the engine really listens on (engine.listen_port: its own parser's replay of the
    Pod's argv, the last --port winning); None when that is not decided (apply says why)."""
    return engine.listen_port(item.container_spec, item.engine or "", item.engine_version)[0]


CRASH_READS = 8     # previous logs read by a plain verify: one round of load/engine_words.WORKERS


def crashed(item: Item) -> bool:
    """Its engine container is crashing now, as kubectl shows it: the kubelet backs off restarting
    it (state.waiting.reason CrashLoopBackOff: `kubectl get pods` STATUS), or its last run ended
    with a non-zero exit code (`kubectl describe`'s Last State: Terminated, Exit Code) and it has
    not been ready since (restarting, or failed). A container running ready after an old crash is
    not: its previous log says why it died once, not why it does not run."""
    state = item.state or {}
    if state.get("waiting") == CRASH_LOOP:
        return True
    code = state.get("lastExitCode")
    return code is not None and code != 0 and state.get("ready") is not True


def crash_choice(items, cap: int = CRASH_READS) -> tuple[set, list]:
    """Which crashed rows' previous logs a plain verify reads: at most `cap`, and the crashed rows
    left unread (their predictions stand). First those whose verdict the cause can change (not
    REJECTED: a start-up failure on the dtype makes them REJECTED), then REJECTED ones the exit
    code does not confirm yet; one replica per deployment role before a second (they run one
    argv, so they die alike), in namespace and Pod order."""
    rows = [i for i in items if i.pod is not None and i.container is not None and i.status != NO_POD
            and crashed(i)]

    def weight(i: Item) -> int:
        if i.status != REJECTED:
            return 0
        return 1 if not i.confirmed_rejected else 2

    seen: dict = {}
    ranked = []
    for i in sorted(rows, key=lambda i: (weight(i), i.namespace or "", i.pod or "", i.container or "")):
        group = (i.namespace, i.deployment or i.pod, i.role, i.container)
        nth = seen[group] = seen.get(group, -1) + 1
        ranked.append((weight(i), nth, i.namespace or "", i.pod or "", i.container or "", i))
    ranked.sort(key=lambda r: r[:5])
    chosen = {(r[-1].namespace, r[-1].pod, r[-1].container) for r in ranked[:cap]}
    return chosen, [r[-1] for r in ranked[cap:]]


def running(item: Item) -> bool:
    state = item.state or {}
    return state.get("phase") == "Running" and not state.get("waiting") and not state.get("terminating")


def targets(items, observe: bool, metrics: bool = False, crashes: set | None = None):
    """What to read for `items`: with `observe`, every running engine container's log head (or,
    `metrics`, vLLM's /metrics); a crashed container's previous log tail (those in `crashes`,
    (namespace, pod, container) keys, when given: crash_choice). Each one as
    load.engine_words.Target's fields: (namespace, pod, container, log, previous, metrics port,
    engine: whose lines to keep)."""
    found = []
    for item in items:
        if item.pod is None or item.container is None or item.status == NO_POD:
            continue
        written = engine.reports_written(item.engine or "", item.engine_version)   # None: a release not in the data
        log = observe and running(item) and not metrics and (written is None or any(f != "metrics" for f in written))
        previous = crashed(item) and not metrics and (
            crashes is None or (item.namespace, item.pod, item.container) in crashes)
        port = _port(item) if (metrics and item.engine == "vllm" and running(item) and observe
                               and (written is None or "metrics" in written)) else None
        if log or previous or port is not None:
            found.append((item.namespace, item.pod, item.container, log, previous, port, item.engine))
    return found


def apply(items, read) -> None:
    """Set each row's observed dtype and exit cause from what was read (`read.words`). Every report
    read for the row (its log head, its /metrics, an earlier round's) is held together: reports
    that disagree are a conflict (Item.observed_agrees is False), never a confirmation. A source
    the reader cut at its byte limit (Words.cut) loses its last, partial line: a report cut there
    is not read, never the default."""
    for item in items:
        got = read.words.get((item.namespace, item.pod)) if item.pod is not None else None
        if got is None:
            continue
        if got.previous is not None and crashed(item):
            item.exit_cause = engine.exit_cause(got.previous, item.engine, item.engine_version)
            dtype_failure(item)
        cut: frozenset = getattr(got, "cut", frozenset())
        kind = item.engine or ""
        found = list(item.observed.reports) if item.observed is not None else []
        notes = list(item.observed.unread) if item.observed is not None else []
        for source, text in (("log", got.log), ("metrics", got.metrics)):
            if text is None:
                continue
            if source in cut:       # the reader dropped a line that may hold a report (load/engine_words)
                text = text[:text.rfind("\n") + 1]
                notes.append(f"{'its /metrics' if source == 'metrics' else 'its log head'} was cut at the "
                             f"read limit inside a report: that report is not read")
            found += engine.reports(kind, text, source, item.engine_version)
        if got.log is not None and kind == "vllm" and running(item):
            port, why = engine.listen_port(item.container_spec, kind, item.engine_version)
            written = engine.reports_written(kind, item.engine_version)
            if port is None and (written is None or "metrics" in written):
                notes.append(f"its /metrics is not read: the port it listens on is not decided: {why}")
        seen = engine.combine(found, tuple(notes))
        if seen is not None:
            item.observed = seen
        capacity_of(item, got, cut, read)


def capacity_of(item: Item, got, cut: frozenset, read) -> None:
    """Set the row's capacity from every capacity report read for it (this round's and an
    earlier one's: its log head, then its /metrics), held together as engine.capacity.combine
    holds them. A running engine whose log head holds no capacity line, and nothing else says it:
    not read, saying the line may lie beyond the head the reader reads (the engine writes it after
    loading the model), never 0."""
    kind = item.engine or ""
    had = item.capacity
    found = list(had.reports) if had is not None else []
    notes = [n for n in (had.unread if had is not None else ()) if not n.startswith(BEYOND_HEAD)]
    head_seen = got.log is not None or (had is not None and len(notes) < len(had.unread))
    for source, text in (("log", got.log), ("metrics", got.metrics)):
        if text is None:
            continue
        if source in cut:
            text = text[:text.rfind("\n") + 1]
            notes.append(f"{'its /metrics' if source == 'metrics' else 'its log head'} was cut at the read limit "
                         f"inside a line that may hold a report: that report is not read")
        found += engine.capacity_reports(kind, text, source, item.engine_version)
    seen = engine.combine_capacity(found, tuple(dict.fromkeys(notes)))
    if head_seen and running(item) and (seen is None or seen.tokens is None) and not (seen and seen.conflict) \
            and engine.capacity_formats(kind, item.engine_version):
        bounds = getattr(read, "bounds", None)
        head = f"the first {bounds.HEAD_BYTES // 1024} KiB" if bounds is not None else "the head read"
        notes.append(f"{BEYOND_HEAD} ({head} of its log): the engine writes it after loading the model, so it "
                     f"may be beyond the head, or not written yet")
        seen = engine.combine_capacity(found, tuple(dict.fromkeys(notes)))
    if seen is not None:
        seen.reports = tuple(found)
        item.capacity = seen


BEYOND_HEAD = "no capacity line in its log head"


def dtype_failure(item: Item) -> None:
    """A start-up failure the engine's own words blame on the KV-cache dtype (engine/crash.py:
    the attention selector refused a backend for the dtype alone, a message the release raises
    about the dtype) is the engine refusing the dtype after its parse: REJECTED, whatever the parse
    predicted, with `recover` as the fix where the Binding's dtype is the one refused. A failure
    its words blame on something else says so and never gets `recover`; one whose words do not
    name the dtype leaves the dtype's verdict alone (the replica still fails: judge/verify.severity)."""
    cause = item.exit_cause
    if cause is None or cause.kind != "startup" or item.status == REJECTED:
        return
    if cause.blame == engine.CRASH_NOT_DTYPE:
        item.reason = f"{item.reason}; its engine exits at start-up, not on the KV-cache dtype ({cause.why})"
        return
    if cause.blame != engine.CRASH_DTYPE:
        return
    item.status = REJECTED
    item.reason = f"the engine exits at start-up after its parse, on the KV-cache dtype ({cause.why}): {cause.line}"
    if item.binding and item.expected and item.effective == item.expected and not item.takeover:
        item.fix = f"the Binding's dtype {item.expected!r} does not start on this release: " + \
            fixes.recover_fix(item.namespace, item.binding)
        item.recover = True


def unread(items, read) -> list[Item]:
    """Running vLLM rows whose log head was read: their /metrics is read too (a second round), every
    report held against the others."""
    return [i for i in items if i.engine == "vllm" and running(i) and (i.namespace, i.pod) in read.words
            and read.words[(i.namespace, i.pod)].log is not None]


def verdict(item: Item) -> str | None:
    """`confirmed`, `differs` (the prediction, or another of its reports), `seen` (observed, nothing
    to hold it against), `not read` (a report seen and not read, and nothing else) or None."""
    if item.observed is None:
        return None
    if item.observed.dtype is None and item.observed.resolved is None:
        return "not read"
    agrees = item.observed_agrees
    return "seen" if agrees is None else ("confirmed" if agrees else "differs")
