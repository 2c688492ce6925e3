"""Following a rollout (`verify --watch` / `verify --wait`): the pure parts.

A report in, what changed since the last one and how far the rollout is: counts by status over
the replicas of the pool-attached ModelDeployments in scope, deployments complete out of all,
replicas confirmed REJECTED (their engine already exited with code 2: the wait ends early) and
the replicas left. No I/O; the loop is in cli/flows/verify.py and the words in render/verify.py.
"""

from __future__ import annotations

from kubectl_kvcache.judge import verify
from kubectl_kvcache.record import Record
from kubectl_kvcache.judge.verify import DONE, STATUSES, Item, Report

COMPLETE, REJECTED, TIMEOUT = "complete", "rejected", "timeout"


class Progress(Record):
    __slots__ = ("counts", "done", "total", "rejected", "left")

    def __init__(self, counts: dict[str, int], done: int, total: int, rejected: tuple[Item, ...],
                 left: tuple[Item, ...]):
        self.counts = counts        # status -> replicas (NO-POD rows included); "terminating": old Pods going away
        self.done = done            # deployments whose every replica runs the expected value
        self.total = total          # pool-attached deployments in scope
        self.rejected = rejected    # replicas confirmed REJECTED
        self.left = left            # replicas not done (in table order)

    @property
    def complete(self) -> bool:
        return self.done == self.total and not self.left

    @property
    def outcome(self):
        """COMPLETE, REJECTED (end early), or None (keep waiting)."""
        if self.rejected:
            return REJECTED
        return COMPLETE if self.complete else None


def replicas(report: Report) -> list[Item]:
    """The rows that are replicas of a pool-attached deployment in scope (not injected Pods)."""
    deployments = {(d.namespace, d.name) for d in report.deployments}
    return [i for i in report.items if i.owner and (i.namespace, i.deployment) in deployments]


def progress(report: Report) -> Progress:
    rows = replicas(report)
    counts = {s: sum(1 for i in rows if i.status == s) for s in STATUSES}
    counts["terminating"] = sum(1 for i in rows if i.terminating)
    done = sum(1 for d in report.deployments if d.complete)
    return Progress(counts, done, len(report.deployments), tuple(i for i in rows if i.confirmed_rejected),
                    tuple(i for i in rows if i.progress != DONE))


class Changes:
    """Which rows are new or changed since the last report: verdict, values, or Pod state (what the
    table and -o wide show; not the reason, whose counts move with other replicas)."""

    def __init__(self):
        self._seen = {}

    @staticmethod
    def signature(item: Item):
        state = item.state or {}
        return (item.status, item.expected, item.effective, verify.state_label(item), state.get("ready"),
                state.get("restarts"))

    def update(self, report: Report) -> list[Item]:
        now = {i.key: self.signature(i) for i in report.items}
        changed = [i for i in report.items if self._seen.get(i.key) != now[i.key]]
        self._seen = now
        return changed
