"""Reads what the engines wrote: the head of each running engine container's log, the tail of a
crashed one's previous log, and (vLLM) its /metrics, all through the API server as kubectl logs
and kubectl get --raw would. Reads, never judges (judge/observed.py does).

Every read is bounded, and so is the whole observation: one Budget (a deadline and the bytes
kept) for both rounds and the crash tails; bytes per Pod (the server's limitBytes and tailLines,
and here); each body streamed line by line, only the lines that may hold a report kept
(`keeps`: the caller hands in engine.words.keeps, load/ knows no engine; a crash tail's last
TAIL_LINES lines); a pool of WORKERS requests at a time
and a timeout per request. A line that may hold a report but could not be read whole (longer
than LINE_BYTES, cut by a byte limit, not UTF-8, past what may be kept) is dropped and its kind
put in Words.cut: not read, never "said nothing". A read the server refuses (403: no pods/log or
pods/proxy) is said once per kind and the rest of that kind is not asked; any other failure
(a redirect, an encoding not decoded, a bad port, a timeout) is a note. The prediction stands.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from types import SimpleNamespace

from kubectl_kvcache.errors import Forbidden, PluginError
from kubectl_kvcache.record import Record

HEAD_BYTES = 64 << 10       # the start-up log head: the engines write their arguments and config early
TAIL_LINES = 40             # a crashed container's last lines: its traceback or argparse's error (the
TAIL_BYTES = 64 << 10       # kubelet cuts limitBytes from the start of the tail: room for the last line)
METRICS_BYTES = 1 << 20     # a vLLM /metrics page is some 100 KiB
LINE_BYTES = 1 << 20        # one line (a config line is a few KiB, SGLang's ServerArgs some 11 KiB)
KEEP_BYTES = 256 << 10      # the lines kept of one read at most (the few report lines of a head or a page)
TOTAL_KEEP_BYTES = 64 << 20     # and of each round of an observation, shared fairly: every read of
                                # a round of 1,000 may keep 64 KiB, so one Pod's flood starves no other
LINE_COST = 64              # bytes a kept line costs beyond its text (a str object and its list slot)
WORKERS = 8                 # requests at a time (client-go's default QPS is 5, burst 10)
READ_TIMEOUT = 10.0         # seconds, one request
DEADLINE = 50.0             # seconds, every read of one observation (both rounds and the crash tails): with the
                            # listing and judging, a whole `verify -A --observe` of 1,000 slow Pods within a minute
LOG, PREVIOUS, METRICS = "log", "previous", "metrics"
DENIED_WHAT = {LOG: "pods/log", PREVIOUS: "pods/log", METRICS: "pods/proxy"}
# why a line that may hold a report was not read (Read.partial's second key)
LONG, LIMIT, UTF8, KEPT = "long", "limit", "utf8", "kept"


class Target(Record):
    """One engine container to read: what to ask for."""

    __slots__ = ("namespace", "pod", "container", "log", "previous", "metrics_port", "engine")

    def __init__(self, namespace: str, pod: str, container: str, log: bool, previous: bool,
                 metrics_port: int | None, engine: str | None = None):
        self.namespace = namespace
        self.pod = pod
        self.container = container
        self.log = log                      # the current container has run: read its head
        self.previous = previous            # a container exited before: read its previous log's tail
        self.metrics_port = metrics_port    # vLLM's API port: read /metrics (None: not asked)
        self.engine = engine                # whose lines to keep (None: any engine's)


class Words(Record):
    """What was read for one container (None: not read): the lines kept, joined."""

    __slots__ = ("log", "previous", "metrics", "cut")
    __hash__ = None

    def __init__(self, log: str | None = None, previous: str | None = None, metrics: str | None = None,
                 cut: frozenset = frozenset()):
        self.log = log
        self.previous = previous
        self.metrics = metrics
        # the kinds (LOG, PREVIOUS, METRICS) where a line that may hold a report was not read
        # whole (too long, cut by a byte limit, not UTF-8, past the bytes kept): that kind's
        # report is not read, never absent; a crash tail whose last line was cut
        self.cut = cut


class Read(Record):
    """Every read of a run: the words per (namespace, pod), and the notes to say once."""

    __slots__ = ("words", "denied", "failed", "skipped", "partial")
    __hash__ = None
    # the names and bounds the notes say (render/ reads them here: it imports no load/ module)
    bounds = SimpleNamespace(LOG=LOG, PREVIOUS=PREVIOUS, METRICS=METRICS, LONG=LONG, LIMIT=LIMIT, UTF8=UTF8,
                             KEPT=KEPT, HEAD_BYTES=HEAD_BYTES, TAIL_BYTES=TAIL_BYTES, METRICS_BYTES=METRICS_BYTES,
                             LINE_BYTES=LINE_BYTES, KEEP_BYTES=KEEP_BYTES, TOTAL_KEEP_BYTES=TOTAL_KEEP_BYTES,
                             DEADLINE=DEADLINE)

    def __init__(self, words: dict, denied: set, failed: dict, skipped: int, partial: dict | None = None):
        self.words = words      # (namespace, pod) -> Words
        self.denied = denied    # kinds the server refused (LOG, PREVIOUS, METRICS)
        self.failed = failed    # kind -> (count, first error's message)
        self.skipped = skipped  # reads not made: the deadline passed
        self.partial = partial if partial is not None else {}   # (kind, LONG|LIMIT|UTF8|KEPT) -> reads

    def merge(self, other: "Read") -> "Read":
        """This read with `other`'s (a second round of the same observation) added in."""
        for key, words in other.words.items():
            mine = self.words.setdefault(key, Words())
            for kind in (LOG, PREVIOUS, METRICS):
                if getattr(words, kind) is not None:
                    setattr(mine, kind, getattr(words, kind))
            mine.cut = mine.cut | words.cut
        self.denied |= other.denied
        for kind, (count, first) in other.failed.items():
            had = self.failed.get(kind)
            self.failed[kind] = (count + had[0], had[1]) if had else (count, first)
        self.skipped += other.skipped
        for key, count in other.partial.items():
            self.partial[key] = self.partial.get(key, 0) + count
        return self


class Budget:
    """One observation's bounds, shared by all its reads (both rounds, the crash tails): a
    deadline, and the bytes of lines its reads may keep, shared out fairly."""

    def __init__(self, seconds: float = DEADLINE, keep_bytes: int = TOTAL_KEEP_BYTES, clock=time.monotonic):
        self.seconds = seconds
        self.clock = clock
        self.end = clock() + seconds
        self.keep_bytes = keep_bytes
        self._planned = 0
        self._lock = threading.Lock()

    def left(self) -> float:
        """Seconds until the deadline (<= 0: passed)."""
        return self.end - self.clock()

    def share(self, reads: int) -> int:
        """The bytes each of `reads` more reads may keep: its share of the observation's reads so
        far (at most KEEP_BYTES). Each round keeps at most keep_bytes; two rounds, twice that."""
        with self._lock:
            self._planned += reads
            return min(KEEP_BYTES, self.keep_bytes // max(1, self._planned))


class _Lines:
    """One read's body, line by line (kube/transport.body_lines): only the lines that may hold a
    report are kept (a crash tail: its last TAIL_LINES lines); what could not be read whole is
    said (`why`), its text dropped."""

    max_line = LINE_BYTES

    def __init__(self, kind: str, engine: str | None, allowance: int, keeps=None):
        self.kind, self.allowance = kind, allowance
        source = "metrics" if kind == METRICS else "log"
        self._keeps = (lambda text: True) if keeps is None else (lambda text: keeps(engine, source, text))
        self.restart()

    def restart(self):
        self.kept: list | deque = deque(maxlen=TAIL_LINES) if self.kind == PREVIOUS else []
        self.size = 0
        self.why: set = set()       # LONG, LIMIT, KEPT met on a line that may hold a report; UTF8 on any
        self.cut = False            # that kind's report is not read whole

    def lines(self, block: bytes):
        """Whole lines: those that may hold a report kept (a block none of whose lines may is
        dropped at once: keeps() answers for a block too); a crash tail's last ones, whole."""
        try:
            text, clean = block.decode("utf-8"), True
        except UnicodeDecodeError:
            text, clean = block.decode("utf-8", "replace"), False
            self.why.add(UTF8)
        if self.kind == PREVIOUS:       # every line of a tail may be the cause
            for line in text.split("\n")[:-1]:
                if len(line) > self.max_line:
                    self.why.add(LONG)
                    continue
                self.kept.append(line)
            self.cut = False            # its last line so far is whole
            return
        if not self._keeps(text):
            return
        if clean:
            for line in text.split("\n")[:-1]:
                self._one(line)
            return
        for raw in block.split(b"\n")[:-1]:
            try:
                self._one(raw.decode("utf-8"))
            except UnicodeDecodeError:
                if self._keeps(raw.decode("utf-8", "replace")):
                    self.cut = True

    def _one(self, line: str):
        if not self._keeps(line):
            return
        if len(line) > self.max_line:
            self.why.add(LONG)
            self.cut = True
        elif self.size + len(line) + LINE_COST > self.allowance:
            self.why.add(KEPT)
            self.cut = True
        else:
            self.size += len(line) + LINE_COST
            self.kept.append(line)

    def cut_line(self, data: bytes):
        """The start of a line not read whole (too long, or cut by the byte limit or the body's end)."""
        text = data.decode("utf-8", "replace")
        if self.kind == PREVIOUS or self._keeps(text):
            self.why.add(LONG if len(data) >= self.max_line else LIMIT)
            self.cut = True

    def end(self, more: bool):
        if more and self.kind == METRICS:       # the page goes on past the bytes read: its report may be there
            self.why.add(LIMIT)
            self.cut = True

    def text(self) -> str:
        return "".join(line + "\n" for line in self.kept)


def read(client, targets: list, workers: int = WORKERS, deadline: float = DEADLINE,
         clock=time.monotonic, budget: Budget | None = None, keeps=None) -> Read:
    """Every read `targets` asks for, a pool of `workers` at a time, none started after the
    budget's deadline (`budget`: one shared by every read of an observation; else a new one of
    `deadline` seconds). `keeps(engine or None, "log"|"metrics", line)`: whether a line may hold
    a report (None: every line is kept, up to KEEP_BYTES a read)."""
    from concurrent.futures import ThreadPoolExecutor

    budget = budget or Budget(deadline, clock=clock)
    targets = [t if isinstance(t, Target) else Target(*t) for t in targets]
    words = {(t.namespace, t.pod): Words() for t in targets}
    cut: dict = {}
    denied: set = set()
    failed: dict = {}
    partial: dict = {}
    skipped = [0]
    lock = threading.Lock()

    def fail(kind, message):
        with lock:
            count, first = failed.get(kind, (0, message))
            failed[kind] = (count + 1, first)

    def one(target: Target, kind: str):
        with lock:
            if kind in denied or (kind != METRICS and LOG in denied and PREVIOUS in denied):
                return
        left = budget.left()
        if left <= 0:
            with lock:
                skipped[0] += 1
            return
        timeout = min(READ_TIMEOUT, left)
        sink = _Lines(kind, target.engine, allowance, keeps)
        try:
            if kind == LOG:
                client.pod_log(target.namespace, target.pod, target.container, HEAD_BYTES, sink, timeout=timeout)
            elif kind == PREVIOUS:
                client.pod_log(target.namespace, target.pod, target.container, TAIL_BYTES, sink, previous=True,
                               tail_lines=TAIL_LINES, timeout=timeout)
            else:
                client.pod_proxy_get(target.namespace, target.pod, target.metrics_port, "metrics",
                                     METRICS_BYTES, sink, timeout=timeout)
        except Forbidden:
            with lock:
                denied.add(kind)
            return
        except PluginError as exc:
            fail(kind, str(exc))
            return
        key = (target.namespace, target.pod)
        with lock:
            setattr(words[key], kind, sink.text())
            if sink.cut:
                cut.setdefault(key, set()).add(kind)
            for why in sink.why:
                partial[(kind, why)] = partial.get((kind, why), 0) + 1

    jobs = [(t, k) for t in targets for k, wanted in ((PREVIOUS, t.previous), (LOG, t.log),
                                                      (METRICS, t.metrics_port is not None)) if wanted]
    allowance = budget.share(len(jobs))
    if jobs:
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs)))) as pool:
            for future in [pool.submit(one, t, k) for t, k in jobs]:
                future.result()
    for key, kinds in cut.items():
        words[key].cut = frozenset(kinds)
    return Read(words, denied, failed, skipped[0], partial)
