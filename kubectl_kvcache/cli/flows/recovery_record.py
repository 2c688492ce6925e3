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

import copy
import json

from kubectl_kvcache.errors import Conflict
from kubectl_kvcache.load import recovery as saved


def backup_key(obj) -> str:
    meta = obj.get("metadata") or {}
    parts = (obj.get("kind"), meta.get("namespace") or "cluster", meta.get("name"),
             "rv" + str(meta.get("resourceVersion") or "0"))
    safe = ".".join("".join(c if c.isalnum() or c in "-_." else "_" for c in str(p)) for p in parts)
    return f"{saved.BACKUP_PREFIX}{safe}.json"[:253]


def _compact(obj) -> str:
    obj = copy.deepcopy(obj)
    (obj.get("metadata") or {}).pop("managedFields", None)
    return json.dumps(obj, separators=(",", ":"), sort_keys=True)


class Journal:
    """Writes the record: opened before the first change, updated before the Setting is turned
    off (write-ahead: a run stopped right after the patch still knows it turned it off), after it
    is on again, with every backup before the object is deleted or patched, and at the end."""

    def __init__(self, client, namespace, binding_name, record, state, field_manager):
        self.client, self.namespace, self.binding_name = client, namespace, binding_name
        self.record = record        # load.recovery.RecoveryRecord of an earlier run, or None
        self.state = state          # RecoveryRecord.state() of this run
        self.field_manager = field_manager
        self.name = saved.record_name(binding_name)
        self.path = saved.record_path(client, namespace, binding_name)
        self.collection = self.path.rsplit("/", 1)[0]
        self.what = f"configmaps {self.name} in namespace {namespace}"

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
        self.client.patch_merge(self.path, {"data": self._state_data()}, field_manager=self.field_manager,
                                dry_run=True, what=f"patch {self.what}")
        return "accepted (it continues the recovery recorded there)"

    def open(self):
        """Create the record, or continue the one an earlier run wrote. A record left by a finished
        recovery of an earlier Binding of the same name is replaced."""
        if self.record is not None:
            self._patch(self._state_data())
            return
        try:
            self.client.create(self.collection, self._object(self._state_data()), field_manager=self.field_manager,
                               what=f"create {self.what}")
        except Conflict:        # a stale record (load ignored it): its keys go, ours come
            current = self.client.get(self.path, what=f"get {self.what}")
            data = {k: None for k in (current.get("data") or {})}
            data.update(self._state_data())
            self._patch(data, resource_version=(current.get("metadata") or {}).get("resourceVersion"))

    def _patch(self, data, resource_version=None):
        body = {"data": data}
        if resource_version:
            body["metadata"] = {"resourceVersion": resource_version}
        self.client.patch_merge(self.path, body, field_manager=self.field_manager, what=f"patch {self.what}")

    def update(self, **changes):
        self.state.update(changes)
        self._patch(self._state_data())

    def backup(self, obj) -> str:
        """The object's backup in the record (done before it is deleted or patched)."""
        key = backup_key(obj)
        self._patch({key: _compact(obj)})
        return key
