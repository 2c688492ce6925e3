"""Judging while the cluster changes (`verify --watch` / `--wait`): a batch of events judges
again exactly the rows it affects, nothing else.

A Pod's row depends on the Pod, on its ModelDeployment (an operator Pod) and on its Binding; a
deployment's accounting (its NO-POD rows, its progress) on the deployment, its Pods and its
Binding; every row on the Setting. So a Pod event judges that Pod (and accounts its deployment);
a ModelDeployment event, its Pods and itself; a Binding event, the Pods and deployments that name
it; a Setting event that turns it on or off, everything. Rows come out as verify.verify gives
them for the same snapshot (tests/judge/test_live.py holds the two equal). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable

from kubectl_kvcache.engine import CachedPredict
from kubectl_kvcache.judge import rollout, verify
from kubectl_kvcache.operator import api, records
from kubectl_kvcache.record import Record

POD, DEPLOYMENT, BINDING, SETTING = "pod", "deployment", "binding", "setting"


class Selection(Record):
    """Which ModelDeployments are followed: every one (names and matches None), the ones named
    (`verify --wait md/NAME`), or the ones -l selects (`matches(labels)`: a deployment is selected
    by its own labels, by the labels the operator gives its Pods, or by one of its Pods' labels;
    once selected it stays selected, so that a deployment whose Pods are all replaced at once is
    not dropped from the wait). Pods opted into injection: only without names, and matching -l."""

    __slots__ = ("names", "matches")

    def __init__(self, names: frozenset | None = None, matches: Callable[[dict], bool] | None = None):
        self.names = names
        self.matches = matches

    @property
    def everything(self) -> bool:
        return self.names is None and self.matches is None

    def selects(self, labels: dict) -> bool:
        """Whether -l selects these labels (never without -l)."""
        return self.matches is not None and self.matches(labels)


OPERATOR_LABEL_KEYS = frozenset((api.MD_NAME_LABEL[0], "app.kubernetes.io/instance", api.COMPONENT_LABEL,
                                 api.ROLE_KIND_LABEL))


def operator_labels(md, role) -> dict:
    """The labels the operator gives a role's Pods (operator.md "Pods rendered for a ModelDeployment")."""
    return {api.MD_NAME_LABEL[0]: api.MD_NAME_LABEL[1], "app.kubernetes.io/instance": md.name,
            api.COMPONENT_LABEL: role.name, api.ROLE_KIND_LABEL: (role.kind or "server").lower()}


class _One:
    """The snapshot as account_replicas reads it, with one deployment."""

    __slots__ = ("deployments", "bindings", "pools", "namespace", "absent", "refusals", "setting", "source")

    def __init__(self, key, md, snapshot):
        self.deployments = {key: md}
        self.setting = snapshot.setting         # a Setting in flight leaves a NO-POD row's expected unsettled
        self.bindings = snapshot.bindings
        self.pools = snapshot.pools
        self.namespace = snapshot.namespace
        self.absent = snapshot.absent
        self.source = snapshot.source           # a Binding not there was looked for, or left out (judge/holds.py)
        self.refusals = getattr(snapshot, "refusals", None) or {}


class _Account:
    """One deployment's accounting: its rows (Pods and NO-POD rows) and what progress sums."""

    __slots__ = ("rows", "progress", "counts", "rejected", "left", "settled", "complete")

    def __init__(self, rows, progress, md):
        self.rows = rows
        self.progress = progress
        counts = dict.fromkeys(verify.STATUSES, 0)
        terminating = 0
        for row in rows:
            counts[row.status] += 1
            terminating += row.terminating
        counts["terminating"] = terminating
        self.counts = counts
        self.rejected = tuple(r for r in rows if rollout.rejects(r))
        self.left = tuple(r for r in rows if r.progress != verify.DONE)
        self.settled = all(rollout.settled(r, md) for r in self.left)
        self.complete = progress.complete


class LiveJudge:
    """The verdicts of a snapshot kept current as events come (apply), each batch judged where it
    lands. `predictor`: shared across batches (an unchanged argv is not parsed again)."""

    def __init__(self, snapshot: records.Snapshot, selection: Selection | None = None, predictor=None):
        self.snapshot = snapshot
        self.selection = selection or Selection()
        self.predictor = predictor or CachedPredict()
        self.pods = {(p.namespace, p.name): p for p in snapshot.pods}
        self.items: dict = {}             # pod key -> Item (pool-attached engine containers only)
        self.md_pods: dict = {}           # (namespace, deployment) -> pod keys of the Pods it controls
        self.binding_pods: dict = {}      # (namespace, binding) -> keys of injected Pods naming it
        self.binding_mds: dict = {}       # (namespace, binding) -> deployment keys naming it
        self.accounts: dict = {}          # deployment key -> _Account (pool-attached, in scope, selected)
        self.chosen: set = set()         # deployment keys -l selected (sticky)
        self.seen: dict = {}              # row key -> the signature last shown
        self.gone: list = []              # shown Pod rows whose Pod went away since take_gone()
        self.totals = dict.fromkeys((*verify.STATUSES, "terminating"), 0)
        self.done = 0
        self.unsettled = 0          # accounts with a row left that rolling may still change
        self.on, self.off, self.flight = self._setting()
        for key, pod in self.pods.items():
            self._index_pod(key, None, pod)
        for key, md in snapshot.deployments.items():
            self._index_md(key, None, md)
        self.first = self._judge_everything()

    # -- events ------------------------------------------------------------------------------

    def apply(self, events) -> list[verify.Item]:
        """Take a batch of (kind, key, record) events (record None: deleted; SETTING: key None)
        and return the rows shown that are new or changed, in table order."""
        pods, mds, bindings, setting = set(), set(), set(), False
        recount: set = set()             # deployments accounted again (their Pods judged again: `mds`)
        snap = self.snapshot
        for kind, key, record in events:
            if kind == POD:
                old = self.pods.get(key)
                recount.update((p.namespace, p.owner[2]) for p in (old, record)
                              if p is not None and p.md_controlled and p.owner is not None)
                self._index_pod(key, old, record)
                if record is None:
                    self.pods.pop(key, None)
                else:
                    self.pods[key] = record
                pods.add(key)
            elif kind == DEPLOYMENT:
                self._index_md(key, snap.deployments.get(key), record)
                if record is None:
                    snap.deployments.pop(key, None)
                else:
                    snap.deployments[key] = record
                mds.add(key)
            elif kind == BINDING:
                if record is None:
                    snap.bindings.pop(key, None)
                else:
                    snap.bindings[key] = record
                bindings.add(key)
            elif kind == SETTING:
                snap.setting = record
                setting = True
            else:
                raise ValueError(f"unknown event kind {kind!r}")
        if setting and self._setting() != (self.on, self.off, self.flight):
            self.on, self.off, self.flight = self._setting()
            return self._judge_everything()
        for key in bindings:
            pods.update(self.binding_pods.get(key, ()))
            mds.update(self.binding_mds.get(key, ()))
        for key in mds:
            pods.update(self.md_pods.get(key, ()))
        changed = {}
        for key in pods:
            item = self._judge_pod(key)
            md = self._pod_md(key)
            if md is not None:
                recount.add(md)
            if item is not None and self._shown(item, md):
                changed[item.key] = item
        for key in recount | mds:
            account = self._account(key)
            if account is not None:
                changed.update((r.key, r) for r in account.rows)
        return self._changed(changed.values())

    # -- what the loop reads -----------------------------------------------------------------

    def report(self) -> verify.Report:
        """The whole report, as verify.verify gives it (rows in table order)."""
        rows = [i for k, i in self.items.items() if not self._accounted(k) and self._shown(i, self._pod_md(k))]
        deployments = []
        for key in sorted(self.accounts):
            account = self.accounts[key]
            rows.extend(account.rows)
            deployments.append(account.progress)
        rows.sort(key=verify.row_order)
        setting = self.snapshot.setting
        return verify.Report(self.on, setting.source if setting else "default", rows, deployments, True,
                             in_flight=verify.in_flight(self.snapshot))

    def take_gone(self) -> list:
        """The shown Pod rows whose Pod was deleted (or stopped being a pool-attached engine) since
        the last call: a watch prints each once more, so that no row vanishes without a line."""
        gone, self.gone = self.gone, []
        return gone

    def progress(self) -> rollout.Progress:
        """The rollout's progress over the deployments followed, summed as the accounts change."""
        rejected, left = [], []
        for key in sorted(k for k, a in self.accounts.items() if a.rejected or a.left):
            account = self.accounts[key]
            rejected.extend(account.rejected)
            left.extend(account.left)
        unbound = tuple((a.progress.namespace, a.progress.name, a.progress.binding)
                        for _, a in sorted(self.accounts.items()) if a.progress.unbound)
        return rollout.Progress(dict(self.totals), self.done, len(self.accounts), tuple(rejected), tuple(left),
                                bool(left) and not self.unsettled, rollout.pending_value(self.snapshot.setting),
                                unbound, tuple(a.progress.hold for _, a in sorted(self.accounts.items())
                                               if a.progress.hold),
                                tuple(a.progress for _, a in sorted(self.accounts.items()) if a.progress.refused),
                                verify.injection_refusals(self.injected_pods(), self.snapshot.refusals)
                                if self.snapshot.refusals else ())

    def injected_pods(self) -> list:
        """The Pods of the rows shown that no deployment of ours controls (opted into injection):
        their controllers' refusals are read (cli/flows/verify.py) and end --wait."""
        return [self.pods[k] for k, i in self.items.items()
                if k in self.pods and self._pod_md(k) is None and self._shown(i, None)]

    def current(self) -> records.Snapshot:
        """The snapshot as the events have made it, for the run's own reasons (judge/verdict.py):
        its Pods those of the rows shown now (the snapshot's own list is the first one read)."""
        import copy

        snapshot = copy.copy(self.snapshot)
        snapshot.pods = [self.pods[k] for k, i in self.items.items()
                         if k in self.pods and self._shown(i, self._pod_md(k))]
        return snapshot

    # -- inside ------------------------------------------------------------------------------

    def _setting(self):
        snap = self.snapshot
        off = verify.NOT_SERVED_REASON if verify._not_served(snap) else verify.OFF_REASON
        return verify.setting_on(snap), off, verify.in_flight(snap)     # in flight: every row is judged again

    def _index_pod(self, key, old, new):
        for pod, add in ((old, False), (new, True)):
            if pod is None:
                continue
            if pod.md_controlled:
                _index(self.md_pods, (pod.namespace, pod.owner[2]), key, add)
            elif pod.opted_in:
                binding = pod.annotations.get(api.ANNOTATION_PREFIX + "binding")
                if binding:
                    _index(self.binding_pods, (pod.namespace, binding), key, add)

    def _index_md(self, key, old, new):
        for md, add in ((old, False), (new, True)):
            if md is not None and md.binding:
                _index(self.binding_mds, (md.namespace, md.binding), key, add)

    def _pod_md(self, key):
        pod = self.pods.get(key)
        if pod is None:
            item = self.items.get(key)
            return (item.namespace, item.deployment) if item is not None and item.owner else None
        return (pod.namespace, pod.owner[2]) if pod.md_controlled and pod.owner is not None else None

    def _judge_pod(self, key):
        pod = self.pods.get(key)
        cand = verify.candidate(pod, self.snapshot) if pod is not None else None
        if cand is None:
            item = self.items.pop(key, None)
            if self.seen.pop(key, None) is not None and item is not None:
                self.gone.append(item)
            return None
        item = verify.judge_candidate(cand, self.snapshot, self.on, self.predictor, self.off)
        self.items[key] = item
        return item

    def _accounted(self, key):
        md = self._pod_md(key)
        return md is not None and md in self.accounts

    def _selected(self, key, md) -> bool:
        sel = self.selection
        if sel.everything:
            return True
        if sel.names is not None:
            return md.name in sel.names
        if key in self.chosen:
            return True
        if sel.selects(md.labels) or any(sel.selects(operator_labels(md, r)) for r in md.roles) \
                or any(sel.selects(self.pods[k].labels) for k in self.md_pods.get(key, ()) if k in self.pods):
            self.chosen.add(key)
            return True
        return False

    def _shown(self, item, md) -> bool:
        """Whether a Pod's row is in the table: every row, else the selected deployments' Pods
        and the injected Pods -l matches."""
        sel = self.selection
        if sel.everything:
            return True
        if md is not None:
            if sel.names is not None:
                return md[1] in sel.names
            found = self.snapshot.deployments.get(md)
            if found is not None and self._selected(md, found):
                return True
            pod = self.pods.get((item.namespace, item.pod))
            return pod is not None and sel.selects(pod.labels)
        if sel.names is not None:
            return False
        pod = self.pods.get((item.namespace, item.pod))
        return pod is not None and sel.selects(pod.labels)

    def _account(self, key):
        old = self.accounts.pop(key, None)
        if old is not None:
            self._count(old, -1)
        account = None
        md = self.snapshot.deployments.get(key)
        if md is not None and md.kv_cache and records.in_namespace(md.namespace, self.snapshot.namespace) \
                and self._selected(key, md):
            items = [self.items[k] for k in self.md_pods.get(key, ()) if k in self.items]
            # _One has what account_replicas reads of a Snapshot: one deployment, the rest the snapshot's
            rows, (progress,) = verify.account_replicas(_One(key, md, self.snapshot), items, self.on)  # type: ignore[arg-type]
            account = self.accounts[key] = _Account(rows, progress, md)
            self._count(account, 1)
        if old is not None:         # NO-POD rows gone are no longer shown: shown again, they are new
            now = {r.key for r in account.rows} if account is not None else set()
            for row in old.rows:
                if row.pod is None and row.key not in now:
                    self.seen.pop(row.key, None)
        return account

    def _count(self, account, sign):
        for status, n in account.counts.items():
            self.totals[status] += sign * n
        self.done += sign * account.complete
        self.unsettled += sign * (bool(account.left) and not account.settled)

    def _judge_everything(self):
        """Every row judged again (the start, or the Setting turned on or off)."""
        shown = {}
        for key in [k for k in self.items if k not in self.pods]:
            self._judge_pod(key)    # gone: its row goes too
        for key in list(self.pods):
            item = self._judge_pod(key)
            if item is not None and self._shown(item, self._pod_md(key)):
                shown[item.key] = item
        for key in [k for k in self.accounts if k not in self.snapshot.deployments]:
            self._account(key)      # gone: its account goes too
        for key in self.snapshot.deployments:
            account = self._account(key)
            if account is not None:
                shown.update((r.key, r) for r in account.rows)
        return self._changed(shown.values())

    def _changed(self, rows):
        changed = []
        for row in rows:
            signature = rollout.Changes.signature(row)
            if self.seen.get(row.key) != signature:
                self.seen[row.key] = signature
                changed.append(row)
        changed.sort(key=verify.row_order)
        return changed


def _index(index, key, value, add):
    if add:
        index.setdefault(key, set()).add(value)
    else:
        found = index.get(key)
        if found is not None:
            found.discard(value)
            if not found:
                del index[key]
