"""The recovery's record (load/recovery.py reads it, cli/flows/recovery_record.py writes it):
the same format both ways, a long name, and which record a rerun continues."""

import json

import pytest

from kubectl_kvcache.cli.flows.recovery_record import Journal, backup_key
from kubectl_kvcache.errors import Conflict, NotFound, PluginError
from kubectl_kvcache.load import recovery


class Stub:
    """A client that stores the one ConfigMap it is given and applies merge patches to it."""

    def __init__(self, obj=None):
        self.obj, self.calls = obj, []

    def get(self, path, what=None):
        self.calls.append(("GET", path))
        if self.obj is None:
            raise NotFound("not found")
        return json.loads(json.dumps(self.obj))

    def create(self, collection, body, field_manager=None, dry_run=False, what=None):
        self.calls.append(("POST", collection, dry_run))
        if not dry_run:
            self.obj = dict(body, metadata=dict(body["metadata"], resourceVersion="1"))
        return body

    def patch_merge(self, path, body, field_manager=None, dry_run=False, what=None):
        self.calls.append(("PATCH", path, dry_run))
        if not dry_run:
            data = self.obj.setdefault("data", {})
            for k, v in body["data"].items():
                if v is None:
                    data.pop(k, None)
                else:
                    data[k] = v
        return self.obj


STATE = {"binding": {"namespace": "ns", "name": "b", "uid": "u1"},
         "target": {"name": "b-fp8-e4m3", "domain": "d", "dtype": "fp8_e4m3", "strategy": "replace"},
         "settingTurnedOff": False, "finished": False}


def test_what_the_journal_writes_is_what_load_reads():
    client = Stub()
    journal = Journal(client, "ns", "b", None, json.loads(json.dumps(STATE)), "kubectl-kvcache")
    journal.open()
    assert client.calls[-1][0] == "POST" and client.calls[-1][1] == "/api/v1/namespaces/ns/configmaps"
    md = {"kind": "ModelDeployment", "apiVersion": "x/v1",
          "metadata": {"name": "alpha", "namespace": "ns", "resourceVersion": "7", "managedFields": [{"a": 1}]},
          "spec": {"kvCache": {"poolRef": {"name": "b"}}}}
    assert journal.backup(md) == "backup.ModelDeployment.ns.alpha.rv7.json" == backup_key(md)
    journal.update(settingTurnedOff=True)
    record = recovery.read_record(client, "ns", "b", {"metadata": {"uid": "u1"}})
    assert record.target == STATE["target"] and record.setting_turned_off and not record.finished
    assert record.backups == [dict(md, metadata={"name": "alpha", "namespace": "ns", "resourceVersion": "7"})]
    assert client.obj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "kubectl-kvcache"}


def test_a_record_of_an_earlier_binding_of_the_same_name():
    finished = dict(STATE, finished=True)
    cm = {"metadata": {"name": "kvcache-recover-b", "namespace": "ns"},
          "data": {"recovery.json": json.dumps(finished)}}
    assert recovery.read_record(Stub(cm), "ns", "b", {"metadata": {"uid": "u2"}}) is None     # finished: a new one
    assert recovery.read_record(Stub(cm), "ns", "b", None).finished        # the old Binding is gone: it is this one
    cm["data"]["recovery.json"] = json.dumps(STATE)
    with pytest.raises(PluginError, match="unfinished recovery of an earlier KVCachePoolBinding b"):
        recovery.read_record(Stub(cm), "ns", "b", {"metadata": {"uid": "u2"}})
    cm["data"]["recovery.json"] = "{not json"
    with pytest.raises(PluginError, match="ConfigMap ns/kvcache-recover-b: data.recovery.json"):
        recovery.read_record(Stub(cm), "ns", "b", None)


def test_a_stale_record_is_replaced_whole():
    old = {"metadata": {"name": "kvcache-recover-b", "namespace": "ns", "resourceVersion": "5"},
           "data": {"recovery.json": json.dumps(dict(STATE, finished=True)), "backup.x.json": "{}"}}
    client = Stub(old)

    def exists(*args, **kw):
        raise Conflict("already exists")
    client.create = exists
    Journal(client, "ns", "b", None, dict(STATE), "kubectl-kvcache").open()
    assert set(client.obj["data"]) == {"recovery.json"} and json.loads(client.obj["data"]["recovery.json"]) == STATE


def test_a_long_binding_name_gives_a_valid_configmap_name():
    name = recovery.record_name("b" * 250)
    assert len(name) <= 253 and name.startswith("kvcache-recover-bbb") and name != recovery.record_name("b" * 251)
    assert recovery.record_name("sgl-fp8") == "kvcache-recover-sgl-fp8"
