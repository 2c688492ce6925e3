"""Following a rollout (`verify --watch` / `verify --wait`): the pure parts.

A report in, what changed since the last one and how far the rollout is: counts by status over
the replicas of the pool-attached ModelDeployments in scope, deployments complete out of all,
replicas confirmed REJECTED (their engine already exited with code 2: the wait ends early), the
replicas left, and whether rolling can still change any of them (when none, the wait ends too).
No I/O; the loop is in cli/flows/verify.py, the re-judging in live.py, the words in render/verify.py.
"""

from __future__ import annotations

from kubectl_kvcache.judge import verify
from kubectl_kvcache.record import Record
from kubectl_kvcache.judge.verify import DONE, MISMATCH, STATUSES, Item, Report

COMPLETE, REJECTED, TIMEOUT, SETTLED = "complete", "rejected", "timeout", "settled"


class Progress(Record):
    __slots__ = ("counts", "done", "total", "rejected", "left", "settled")

    def __init__(self, counts: dict[str, int], done: int, total: int, rejected: tuple[Item, ...],
                 left: tuple[Item, ...], settled: bool = False):
        self.counts = counts        # status -> replicas (NO-POD rows included); "terminating": old Pods going away
        self.done = done            # deployments whose every replica runs the expected value
        self.total = total          # pool-attached deployments in scope
        self.rejected = rejected    # replicas confirmed REJECTED
        self.left = left            # replicas not done (in table order)
        self.settled = settled      # replicas are left, and rolling changes none of them (settled())

    @property
    def complete(self) -> bool:
        return self.done == self.total and not self.left

    @property
    def outcome(self):
        """COMPLETE, REJECTED or SETTLED (the wait ends early), or None (keep waiting)."""
        if self.rejected:
            return REJECTED
        if self.complete:
            return COMPLETE
        return SETTLED if self.settled and self.left else None


def replicas(report: Report) -> list[Item]:
    """The rows that are replicas of a pool-attached deployment in scope (not injected Pods)."""
    deployments = {(d.namespace, d.name) for d in report.deployments}
    return [i for i in report.items if i.owner and (i.namespace, i.deployment) in deployments]


def progress(report: Report, deployments=None) -> Progress:
    """`deployments`: the snapshot's ModelDeployments by (namespace, name), to tell the replicas
    left that rolling will not change (without them, none is taken as settled)."""
    rows = replicas(report)
    counts = {s: sum(1 for i in rows if i.status == s) for s in STATUSES}
    counts["terminating"] = sum(1 for i in rows if i.terminating)
    done = sum(1 for d in report.deployments if d.complete)
    left = tuple(i for i in rows if i.progress != DONE)
    stays = deployments is not None and all(settled(i, deployments.get((i.namespace, i.deployment))) for i in left)
    return Progress(counts, done, len(report.deployments), tuple(i for i in rows if i.confirmed_rejected), left,
                    bool(left) and stays)


def settled(item: Item, md) -> bool:
    """Whether rolling will not change this replica's verdict: a MISMATCH or REJECTED Pod rendered
    from its deployment's spec as the spec is now, so that the replica replacing it is rendered
    the same.

    "As the spec is now": the operator's own --kv-cache-dtype (the last one before the role's
    extraArgs, which the operator appends after its own arguments; operator.md "Pods rendered
    for a ModelDeployment") is the Binding's current dtype, and the role's current extraArgs sit
    in the argv; a take-over role's Pod runs the role's current command. While status.roles
    reports fewer updated replicas than replicas the operator is still rolling the role, and
    nothing of it is settled. Anything else (NO-POD, MISSING, UNKNOWN, Pending, terminating, a
    crash loop that is not a rejection) may still change."""
    if item.status not in (MISMATCH, verify.REJECTED) or md is None or item.pod is None or item.terminating:
        return False
    role = md.role(item.role) if item.role else None
    if role is None:
        return False
    status = md.role_status(role.name)
    if status is not None and status.updated is not None and status.replicas is not None \
            and status.updated < status.replicas:
        return False
    command = list((item.container_spec or {}).get("command") or ())
    if role.command:
        return command == list(role.command)
    start = verify.extra_args_start(role, command)
    if role.extra_args and start is None:
        return False                    # rendered from other extraArgs: its successor differs
    own = [o for o in item.occurrences if o.get("source") == "command" and (start is None or o["index"] < start)]
    return bool(own) and item.expected is not None and own[-1].get("value") == item.expected


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
