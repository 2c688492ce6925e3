"""The recovery's record in the cluster, written by recover's executor (read: load/recovery.py).

One ConfigMap per recovery, `kvcache-recover-<binding>` in the Binding's namespace. Why a
ConfigMap: it exists before the first change (so whether this recovery turned the Setting off is
written down before the Setting is touched: the new Binding does not exist yet then, the old one
is deleted along the way), it holds the backups of what the recovery deletes (a `replace` resumed
on another machine re-creates a deployment from it), and no operator webhook guards it. Never a
Secret: nothing in it is secret, and the plugin never reads Secrets. It stays when the recovery
finishes, marked finished, so the backups stay findable (`kubectl get configmap ... -o yaml`).
"""

from __future__ import annotations

import json
import os
import platform
import uuid
from datetime import datetime, timedelta, timezone

from kubectl_kvcache.errors import Conflict, PluginError
from kubectl_kvcache.judge import anchor
from kubectl_kvcache.load import recovery as saved

LEASE_SECONDS = 300         # a run holds the record this long past its last write (renewed while it waits)
RETRIES = 5


def backup_key(obj) -> str:
    meta = obj.get("metadata") or {}
    parts = (obj.get("kind"), meta.get("namespace") or "cluster", meta.get("name"),
             "rv" + str(meta.get("resourceVersion") or "0"))
    safe = ".".join("".join(c if c.isalnum() or c in "-_." else "_" for c in str(p)) for p in parts)
    return f"{saved.BACKUP_PREFIX}{safe}.json"[:253]


def holder(agent, now) -> dict:
    """Who runs this recovery: shown to a second run, which refuses until the lease expires."""
    return {"id": uuid.uuid4().hex, "agent": agent, "host": platform.node() or "?", "pid": os.getpid(),
            "since": saved.format_time(now)}


def gone_here(h) -> bool:
    """The holder ran on this machine and its process is gone (a run stopped by Ctrl-C cannot write
    the record any more, so it cannot let go of it): its lease need not be waited for. A holder on
    another machine, or a pid that may be alive (or reused), waits for the expiry."""
    h = h or {}
    pid = h.get("pid")
    if h.get("host") != (platform.node() or "?") or not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def held(record, now=None) -> bool:
    """Held by another run that may still be running."""
    return record is not None and record.active(now) and not gone_here(record.holder)


class Taken(PluginError):
    """Another run holds (or changed) the record: nothing of this run was written."""


class Journal:
    """Writes the record: opened before the first change, updated before the Setting is turned
    off, with every backup before the object is deleted or patched, and at the end. One run at a
    time: every write carries the resourceVersion last read or written (a 409 is re-read, never
    overwritten), the record names its holder and when its lease expires (renewed as the run
    goes), and a run that finds it changed by another one stops without writing."""

    def __init__(self, client, namespace, binding_name, record, state, field_manager, agent="kubectl-kvcache",
                 clock=None):
        self.client, self.namespace, self.binding_name = client, namespace, binding_name
        self.record = record        # load.recovery.RecoveryRecord as read (stale included), or None
        self.state = state          # RecoveryRecord.state() of this run
        self.field_manager = field_manager
        self.name = saved.record_name(binding_name)
        self.path = saved.record_path(client, namespace, binding_name)
        self.collection = self.path.rsplit("/", 1)[0]
        self.what = f"configmaps {self.name} in namespace {namespace}"
        self.rv = record.resource_version if record is not None else None
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.agent = agent
        self.renewed = None
        self.holder_id = None       # this run's, once it wrote the record

    @property
    def ref(self) -> str:
        return f"ConfigMap {self.namespace}/{self.name}"

    def _object(self, data):
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": self.name, "namespace": self.namespace,
                             "labels": dict([saved.RECORD_LABEL]),
                             "annotations": {saved.RECORD_ANNOTATION:
                                             f"KVCachePoolBinding {self.namespace}/{self.binding_name}"}},
                "data": data}

    def _state_data(self):
        return {saved.RECORD_KEY: json.dumps(self.state, sort_keys=True)}

    def dry_run(self) -> str:
        """The API server admits the record (RBAC on configmaps included); nothing persisted."""
        if self.record is None:
            self.client.create(self.collection, self._object(self._state_data()), field_manager=self.field_manager,
                               dry_run=True, what=f"create {self.what}")
            return "accepted"
        self.client.patch_merge(self.path, self._body(self._state_data()), field_manager=self.field_manager,
                                dry_run=True, what=f"patch {self.what}")
        return "accepted (it continues the recovery recorded there)"

    def _body(self, data):
        body = {"data": data}
        if self.rv:
            body["metadata"] = {"resourceVersion": self.rv}
        return body

    def _lease(self):
        now = self.clock()
        if not self.state.get("holder"):
            self.state["holder"] = holder(self.agent, now)
            self.holder_id = self.state["holder"]["id"]
        self.state["expires"] = saved.format_time(now + timedelta(seconds=LEASE_SECONDS))
        self.renewed = now

    def open(self):
        """Take the record: create it, or continue (or replace, when stale) the one read at the start,
        only if nobody changed it since (resourceVersion). Changed or held by another run: Taken."""
        self._lease()
        if self.record is None:
            try:
                created = self.client.create(self.collection, self._object(self._state_data()),
                                             field_manager=self.field_manager, what=f"create {self.what}")
            except Conflict as exc:
                raise self._taken(self._read(), "was created by another run since this one read the cluster") from exc
            self.rv = (created.get("metadata") or {}).get("resourceVersion")
            return
        data = self._state_data()
        if self.record.stale:       # a finished recovery of an earlier Binding of the same name: replaced
            data = {**{k: None for k in self._keys(self.record)}, **data}
        try:
            self._write(data)
        except Conflict as exc:
            raise self._taken(self._read(), "changed since this run read it") from exc

    def _keys(self, record):
        keys = [saved.RECORD_KEY]
        for b in record.backups:
            keys.append(b.where.rsplit(" key ", 1)[-1])
        return keys

    def _read(self):
        try:
            return saved.parse_record(self.client.get(self.path, what=f"get {self.what}"))
        except PluginError:
            return None

    def _taken(self, current, what, started=False) -> Taken:
        if started:
            by = f" ({current.held_by()})" if current is not None and current.holder else ""
            return Taken(f"{self.ref} {what}{by}: this run stopped before its next change (the steps above are "
                         f"done); that run continues the recovery")
        if held(current, self.clock()):
            return Taken(f"{self.ref}: another run of this recovery holds it ({current.held_by()}); nothing was "
                         f"changed: let it finish; if it is gone, run this command again after {current.expires} "
                         f"to take over")
        done = " (it finished the recovery)" if current is not None and current.finished else ""
        return Taken(f"{self.ref} {what}{done}: another run of this recovery went ahead; nothing was changed: run "
                     f"this command again to see the recovery as it is now")

    def _write(self, data):
        answer = self.client.patch_merge(self.path, self._body(data), field_manager=self.field_manager,
                                         what=f"patch {self.what}")
        self.rv = ((answer or {}).get("metadata") or {}).get("resourceVersion") or self.rv

    def _guarded(self, data):
        """A write of ours with the resourceVersion as a precondition; on 409 re-read: still ours (a
        label, an annotation, someone's edit): again on the new version; another holder: Taken."""
        for _ in range(RETRIES):
            try:
                self._write(data)
                return
            except Conflict:
                current = self._read()
                if current is None or (current.holder or {}).get("id") != self.holder_id:
                    raise self._taken(current, "was taken over by another run", started=True) from None
                self.rv = current.resource_version
        raise Conflict(f"conflict: {self.ref} kept changing; the recovery stopped")

    def update(self, **changes):
        self.state.update(changes)
        if changes.get("finished"):
            self.state.update(holder=None, expires=None)
        else:
            self._lease()
        self._guarded(self._state_data())

    def renew(self):
        """While waiting: the lease again once half of it has passed."""
        if self.renewed is not None and (self.clock() - self.renewed).total_seconds() >= LEASE_SECONDS / 2:
            self.update()

    def release(self):
        """A stopped run lets go (its resume command then runs at once); best effort."""
        if not self.state.get("holder") or self.holder_id is None:
            return
        self.state.update(holder=None, expires=None)
        self._guarded(self._state_data())

    def backup(self, obj) -> str:
        """The object's backup in the record (done before it is deleted or patched)."""
        key = backup_key(obj)
        self._lease()
        self._guarded({key: anchor.canonical(obj), **self._state_data()})
        return key
