"""Reads what the engines wrote: the head of each running engine container's log, the tail of a
crashed one's previous log, and (vLLM) its /metrics, all through the API server as kubectl logs
and kubectl get --raw would. Reads, never judges (judge/observed.py does).

Every read is bounded: bytes per Pod (the server's limitBytes and tailLines, and here), a pool
of WORKERS requests at a time, a timeout per request and a deadline for them all. A read the
server refuses (403: no pods/log or pods/proxy) is said once per kind and the rest of that kind
is not asked; the prediction stands.
"""

from __future__ import annotations

import time

from kubectl_kvcache.errors import Forbidden, PluginError
from kubectl_kvcache.record import Record

HEAD_BYTES = 64 << 10       # the start-up log head: the engines write their arguments and config early
TAIL_LINES = 40             # a crashed container's last lines: its traceback or argparse's error (the
TAIL_BYTES = 64 << 10       # kubelet cuts limitBytes from the start of the tail: room for the last line)
METRICS_BYTES = 1 << 20     # a vLLM /metrics page is some 100 KiB
WORKERS = 8                 # requests at a time (client-go's default QPS is 5, burst 10)
READ_TIMEOUT = 10.0         # seconds, one request
DEADLINE = 60.0             # seconds, every read of one run
LOG, PREVIOUS, METRICS = "log", "previous", "metrics"
DENIED_WHAT = {LOG: "pods/log", PREVIOUS: "pods/log", METRICS: "pods/proxy"}


class Target(Record):
    """One engine container to read: what to ask for."""

    __slots__ = ("namespace", "pod", "container", "log", "previous", "metrics_port")

    def __init__(self, namespace: str, pod: str, container: str, log: bool, previous: bool,
                 metrics_port: int | None):
        self.namespace = namespace
        self.pod = pod
        self.container = container
        self.log = log                      # the current container has run: read its head
        self.previous = previous            # a container exited before: read its previous log's tail
        self.metrics_port = metrics_port    # vLLM's API port: read /metrics (None: not asked)


class Words(Record):
    """What was read for one container (None: not read)."""

    __slots__ = ("log", "previous", "metrics")
    __hash__ = None

    def __init__(self, log: str | None = None, previous: str | None = None, metrics: str | None = None):
        self.log = log
        self.previous = previous
        self.metrics = metrics


class Read(Record):
    """Every read of a run: the words per (namespace, pod), and the notes to say once."""

    __slots__ = ("words", "denied", "failed", "skipped")
    __hash__ = None

    def __init__(self, words: dict, denied: set, failed: dict, skipped: int):
        self.words = words      # (namespace, pod) -> Words
        self.denied = denied    # kinds the server refused (LOG, PREVIOUS, METRICS)
        self.failed = failed    # kind -> (count, first error's message)
        self.skipped = skipped  # reads not made: the deadline passed


def read(client, targets: list, workers: int = WORKERS, deadline: float = DEADLINE,
         clock=time.monotonic) -> Read:
    """Every read `targets` asks for, a pool of `workers` at a time, none started after `deadline` s."""
    from concurrent.futures import ThreadPoolExecutor
    import threading

    targets = [t if isinstance(t, Target) else Target(*t) for t in targets]
    words = {(t.namespace, t.pod): Words() for t in targets}
    denied: set = set()
    failed: dict = {}
    skipped = [0]
    lock = threading.Lock()
    end = clock() + deadline

    def one(target: Target, kind: str):
        with lock:
            if kind in denied or (kind != METRICS and LOG in denied and PREVIOUS in denied):
                return
            if clock() >= end:
                skipped[0] += 1
                return
        timeout = max(0.5, min(READ_TIMEOUT, end - clock()))
        try:
            if kind == LOG:
                text = client.pod_log(target.namespace, target.pod, target.container, HEAD_BYTES, timeout=timeout)
            elif kind == PREVIOUS:
                text = client.pod_log(target.namespace, target.pod, target.container, TAIL_BYTES, previous=True,
                                      tail_lines=TAIL_LINES, timeout=timeout)
            else:
                text = client.pod_proxy_get(target.namespace, target.pod, target.metrics_port, "metrics",
                                            METRICS_BYTES, timeout=timeout)
        except Forbidden:
            with lock:
                denied.add(kind)
            return
        except PluginError as exc:
            with lock:
                count, first = failed.get(kind, (0, str(exc)))
                failed[kind] = (count + 1, first)
            return
        with lock:
            setattr(words[(target.namespace, target.pod)], kind, text)

    jobs = [(t, k) for t in targets for k, wanted in ((PREVIOUS, t.previous), (LOG, t.log),
                                                      (METRICS, t.metrics_port is not None)) if wanted]
    if jobs:
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs)))) as pool:
            for future in [pool.submit(one, t, k) for t, k in jobs]:
                future.result()
    return Read(words, denied, failed, skipped[0])
