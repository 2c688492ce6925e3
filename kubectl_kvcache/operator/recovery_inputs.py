"""What `recover` plans from, one record from the read to the plan: the full objects around one
Binding and the snapshot read with them (filled by load/recovery.py, which reads), then checks'
report on that snapshot and the verified anchor (judge/recover.judged, which is pure). Here, apart
from both, so that each layer imports it and neither imports the other."""

from __future__ import annotations

from kubectl_kvcache.operator.records import Pod, Setting, Snapshot
from kubectl_kvcache.record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any


class Recovery(Record):
    """The full objects around one Binding (records drop fields a re-created object copies), the
    snapshot read with them (what checks judge), and that judgement."""

    __slots__ = ("namespace", "binding_name", "binding", "binding_gone", "bindings", "deployments", "workloads",
                 "snapshot", "backups", "notes", "record", "referrers", "objects", "pools", "backends",
                 "pools_complete", "report", "anchor", "record_ref", "record_used", "bindings_everywhere")
    __hash__ = None     # mutable: filled in as it is read, then judged

    def __init__(self, namespace: str, binding_name: str, binding: dict | None, bindings: list[dict],
                 deployments: list[dict], workloads: list[dict], snapshot: Snapshot,
                 notes: list[str] | None = None):
        # -- read (load/recovery.py)
        self.namespace = namespace
        self.binding_name = binding_name
        self.binding = binding              # the old Binding (from a backup when `binding_gone`)
        self.binding_gone = False           # already deleted by an earlier run (known from its backup)
        self.bindings = bindings            # Bindings whose domain claims are known (other namespaces too)
        self.bindings_everywhere = True     # `bindings` holds every namespace's (False: RBAC allowed one)
        self.deployments = deployments      # every ModelDeployment of the namespace
        self.workloads = workloads          # workload objects of the namespace whose template opts in
        self.snapshot = snapshot
        self.backups: list = []             # objects an earlier run backed up (resume)
        self.notes = [] if notes is None else notes
        self.record: Any = None             # load.recovery.RecoveryRecord of an earlier run (cluster only)
        self.referrers: Any = None               # load.recovery.Referrers: what may point at a renamed deployment
        self.objects: list[dict] | None = None      # files: every object read (what load_referrers filters)
        # What the Binding webhook reads besides Bindings (operator/webhooks.py: Cluster): the pools
        # and backends by name, None when they could not be read; complete False for files (an
        # absent pool is not known absent).
        self.pools: dict | None = {}
        self.backends: dict | None = {}
        self.pools_complete = False
        # -- judged (judge/recover.judged), and set by the flow
        self.report: Any = None             # checks.Report on the snapshot (suggestion, rejecting engines)
        self.anchor: Any = None             # judge.anchor.Anchor: the Binding an earlier run created
        self.record_ref = f"ConfigMap {namespace}/kvcache-recover-{binding_name}"
        self.record_used = 0                # bytes the record holds already

    @property
    def hints(self):
        """The earlier run's record the planner follows: None when there is none or it is stale
        (a finished recovery of an earlier Binding of the same name)."""
        return None if self.record is None or self.record.stale else self.record

    @property
    def setting(self) -> Setting | None:
        return self.snapshot.setting

    @property
    def pods(self) -> list[Pod]:
        """Pods of the namespace that opt in."""
        return [p for p in self.snapshot.pods if p.namespace == self.namespace and p.opted_in]

    @property
    def md_pods(self) -> list[Pod]:
        """Pods of the namespace a ModelDeployment controls (their labels)."""
        return [p for p in self.snapshot.pods if p.namespace == self.namespace and p.md_controlled]
