"""Following a rollout (`verify --watch` / `verify --wait`): the pure parts.

A report in, what changed since the last one and how far the rollout is: counts by status over
the replicas of the pool-attached ModelDeployments in scope, deployments complete out of all,
replicas confirmed REJECTED and rendered from the spec as it is now (their engine already exited
with code 2, and the replica replacing them would too: the wait ends early), the
replicas left, and whether rolling can still change any of them (when none, the wait ends too).
No I/O; the loop is in cli/flows/verify.py, the re-judging in live.py, the words in render/verify.py.
"""

from __future__ import annotations

from kubectl_kvcache.judge import holds, setting as setting_mod, verify
from kubectl_kvcache.record import Record
from kubectl_kvcache.judge.verify import DONE, MISMATCH, STATUSES, Item, Report

COMPLETE, REJECTED, TIMEOUT, SETTLED, UNBOUND = "complete", "rejected", "timeout", "settled", "unbound"
HELD = "held"
REFUSED = "refused"     # a followed deployment's replicas, or an opt-in controller's Pods, are refused creation


class Progress(Record):
    __slots__ = ("counts", "done", "total", "rejected", "left", "settled", "pending", "unbound", "held", "refused",
                 "injection")

    def __init__(self, counts: dict[str, int], done: int, total: int, rejected: tuple[Item, ...],
                 left: tuple[Item, ...], settled: bool = False, pending: bool | None = None,
                 unbound: tuple[tuple[str, str, str | None], ...] = (), held: tuple = (), refused: tuple = (),
                 injection: tuple = ()):
        self.counts = counts        # status -> replicas (NO-POD rows included); "terminating": old Pods going away
        self.done = done            # deployments whose every replica runs the expected value
        self.total = total          # pool-attached deployments in scope
        self.rejected = rejected    # replicas confirmed REJECTED that rolling will not replace (rejects())
        self.left = left            # replicas not done (in table order)
        self.settled = settled      # replicas are left, and rolling changes none of them (settled())
        self.pending = pending      # the value the Setting's spec.value asks for and status.value does not
                                    # report yet (None: converged): nothing is done before the operator has it
        self.unbound = unbound      # (namespace, deployment, binding): followed deployments whose Binding
                                    # does not exist (no rollout can bring it: the wait ends at once)
        self.held = held            # holds.Hold: followed deployments whose rollout the operator holds
                                    # (ReplicasUpToDate RolloutHeldByCache: the wait ends at once)
        self.refused = refused      # verify.DeploymentProgress: followed deployments whose missing replicas
                                    # their controller says it cannot create (a refused create: ends at once)
        self.injection = injection  # ((namespace, kind, name), Refusal): controllers of the opt-in Pods shown
                                    # whose Pods the injection webhook refuses (verify.injection_refusals: ends
                                    # at once, as the one-shot verify fails on them)

    @property
    def complete(self) -> bool:
        return (self.done == self.total and not self.left and self.pending is None and not self.unbound
                and not self.held and not self.refused and not self.injection)

    @property
    def outcome(self):
        """COMPLETE, REJECTED, UNBOUND or SETTLED (the wait ends early), or None (keep waiting).
        While the Setting has not converged nothing ends early: every verdict is about to change."""
        if self.pending is not None:
            return None
        if self.unbound:
            return UNBOUND
        if self.held:
            return HELD
        if self.refused or self.injection:
            return REFUSED
        if self.rejected:
            return REJECTED
        if self.complete:
            return COMPLETE
        return SETTLED if self.settled and self.left else None


def replicas(report: Report) -> list[Item]:
    """The rows that are replicas of a pool-attached deployment in scope (not injected Pods)."""
    deployments = {(d.namespace, d.name) for d in report.deployments}
    return [i for i in report.items if i.owner and (i.namespace, i.deployment) in deployments]


def progress(report: Report, deployments=None, setting=None) -> Progress:
    """`deployments`: the snapshot's ModelDeployments by (namespace, name), to tell the replicas
    left that rolling will not change (without them, none is taken as settled). `setting`: the
    Setting as read, to tell whether the operator reports what spec.value asks for."""
    rows = replicas(report)
    counts = {s: sum(1 for i in rows if i.status == s) for s in STATUSES}
    counts["terminating"] = sum(1 for i in rows if i.terminating)
    done = sum(1 for d in report.deployments if d.complete)
    left = tuple(i for i in rows if i.progress != DONE)
    stays = deployments is not None and all(settled(i, deployments.get((i.namespace, i.deployment))) for i in left)
    unbound = tuple((d.namespace, d.name, d.binding) for d in report.deployments if d.unbound)
    held = tuple(d.hold for d in report.deployments if d.hold)
    refused = tuple(d for d in report.deployments if d.refused)
    return Progress(counts, done, len(report.deployments), tuple(i for i in rows if rejects(i)), left,
                    bool(left) and stays, pending_value(setting), unbound, held, refused)


def rejects(item: Item) -> bool:
    """A replica confirmed REJECTED that ends the wait: its Pod was rendered from its deployment's
    spec as the spec is now (verify.stale_reason ""), or cannot be told apart (an injected Pod:
    None); so does a start-up failure after the parse its previous log names (Item.exit_cause). A
    rejected Pod of an older render -- the crash-looping replica a `setting off` or a new
    Binding is rolling away -- is waited for: the replica replacing it is rendered differently."""
    return (item.confirmed_rejected or item.startup_failed) and not item.stale


def pending_value(setting) -> bool | None:
    """The value the Setting's spec.value asks for while the operator's status.value does not report
    it yet, else None. The operator serves the Setting from its settings Secret: an update writes the
    Secret (pkg/setting/types.go, Setting.Configure) and status.value is read back from it; its
    controllers read values through a 30-second cache (types.go, _Cache), which is why a replica's
    argv, not the Setting, says when a rollout is done. A Setting whose spec.value is not returned
    (the operator's handler reports status only) is converged by definition."""
    if setting is None or getattr(setting, "source", None) not in ("cluster",):
        return None
    return setting_mod.pending_value(setting)


def settled(item: Item, md) -> bool:
    """Whether rolling will not change this replica's verdict: a MISMATCH or REJECTED Pod rendered
    from its deployment's spec as the spec is now (verify.stale_reason: the role's current
    extraArgs or command, the operator's own --kv-cache-dtype as the Setting and the Binding have
    it now), so that the replica replacing it is rendered the same. While status.roles reports
    fewer updated replicas than replicas the operator is still rolling the role, and nothing of it
    is settled. Anything else (NO-POD, MISSING, UNKNOWN, Pending, terminating, a crash loop that is
    not a rejection) may still change."""
    if item.status not in (MISMATCH, verify.REJECTED) or md is None or item.pod is None or item.terminating:
        return False
    role = md.role(item.role) if item.role else None
    if role is None:
        return False
    if holds.rolling(md):       # ReplicasUpToDate=False, RolloutInProgress/ReplacementInProgress
        return False
    return item.stale == ""


class Changes:
    """Which rows are new or changed since the last report: verdict, values, or Pod state (what the
    table and -o wide show; not the reason, whose counts move with other replicas)."""

    def __init__(self):
        self._seen = {}

    @staticmethod
    def signature(item: Item):
        state = item.state or {}
        return (item.status, item.expected, item.effective, verify.state_label(item), state.get("ready"),
                state.get("restarts"), item.node)     # node: -o wide's NODE, set when the Pod is scheduled

    def update(self, report: Report) -> list[Item]:
        now = {i.key: self.signature(i) for i in report.items}
        changed = [i for i in report.items if self._seen.get(i.key) != now[i.key]]
        self._seen = now
        return changed
