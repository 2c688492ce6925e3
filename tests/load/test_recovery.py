"""The recovery's record (load/recovery.py reads it, cli/flows/recovery_record.py writes it):
the same format both ways, a long name, and which record a rerun continues."""

import json
import os

import pytest

from kubectl_kvcache.cli.flows.recovery_record import Journal, Taken, backup_key
from kubectl_kvcache.errors import Conflict, NotFound, PluginError
from kubectl_kvcache.load import recovery


class Stub:
    """A client that stores the one ConfigMap it is given and applies merge patches to it as the
    API server does: a metadata.resourceVersion in the patch is a precondition (409 when it moved),
    every write moves it, a create of an existing name is a 409."""

    def __init__(self, obj=None):
        self.obj, self.calls, self.rv = obj, [], 1

    def get(self, path, what=None):
        self.calls.append(("GET", path))
        if self.obj is None:
            raise NotFound("not found")
        return json.loads(json.dumps(self.obj))

    def _bump(self):
        self.rv += 1
        self.obj["metadata"]["resourceVersion"] = str(self.rv)

    def create(self, collection, body, field_manager=None, dry_run=False, what=None):
        self.calls.append(("POST", collection, dry_run))
        if self.obj is not None:
            raise Conflict("already exists")
        if not dry_run:
            self.obj = json.loads(json.dumps(body))
            self._bump()
        return json.loads(json.dumps(self.obj or body))

    def patch_merge(self, path, body, field_manager=None, dry_run=False, what=None):
        self.calls.append(("PATCH", path, dry_run, json.loads(json.dumps(body))))
        want = (body.get("metadata") or {}).get("resourceVersion")
        if want is not None and want != self.obj["metadata"].get("resourceVersion"):
            raise Conflict("the object has been modified")
        if not dry_run:
            data = self.obj.setdefault("data", {})
            for k, v in body["data"].items():
                if v is None:
                    data.pop(k, None)
                else:
                    data[k] = v
            self._bump()
        return json.loads(json.dumps(self.obj))

    def other_run(self, **state):
        """Another run (or someone with ConfigMap rights) writes the record."""
        current = json.loads(self.obj["data"]["recovery.json"])
        current.update(state)
        self.obj["data"]["recovery.json"] = json.dumps(current)
        self._bump()


STATE = {"binding": {"namespace": "ns", "name": "b", "uid": "u1"},
         "target": {"name": "b-fp8-e4m3", "domain": "d", "dtype": "fp8_e4m3", "strategy": "replace"},
         "settingTurnedOff": False, "finished": False, "holder": None, "expires": None}


def _journal(client, record=None):
    return Journal(client, "ns", "b", record, json.loads(json.dumps(STATE)), "kubectl-kvcache")


def test_what_the_journal_writes_is_what_load_reads():
    client = Stub()
    journal = _journal(client)
    journal.open()
    assert client.calls[-1][0] == "POST" and client.calls[-1][1] == "/api/v1/namespaces/ns/configmaps"
    md = {"kind": "ModelDeployment", "apiVersion": "x/v1",
          "metadata": {"name": "alpha", "namespace": "ns", "resourceVersion": "7", "managedFields": [{"a": 1}]},
          "spec": {"kvCache": {"poolRef": {"name": "b"}}}}
    assert journal.backup(md) == "backup.ModelDeployment.ns.alpha.rv7.json" == backup_key(md)
    journal.update(settingTurnedOff=True)
    record = recovery.read_record(client, "ns", "b", {"metadata": {"uid": "u1"}})
    assert record.target == STATE["target"] and record.setting_turned_off and not record.finished
    assert [b.object for b in record.backups] == [dict(md, metadata={"name": "alpha", "namespace": "ns",
                                                                     "resourceVersion": "7"})]
    assert record.backups[0].where == "ConfigMap ns/kvcache-recover-b key backup.ModelDeployment.ns.alpha.rv7.json"
    assert client.obj["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "kubectl-kvcache"}
    # it names its holder, whose lease has not expired; every write after the create is guarded
    assert record.active() and record.holder["pid"] == os.getpid() and "pid" in record.held_by()
    assert all(c[3]["metadata"]["resourceVersion"] for c in client.calls if c[0] == "PATCH")
    journal.update(finished=True)
    assert not recovery.read_record(client, "ns", "b", None).active()


def test_a_record_of_an_earlier_binding_of_the_same_name():
    finished = dict(STATE, finished=True)
    cm = {"metadata": {"name": "kvcache-recover-b", "namespace": "ns"},
          "data": {"recovery.json": json.dumps(finished)}}
    assert recovery.read_record(Stub(cm), "ns", "b", {"metadata": {"uid": "u2"}}).stale     # finished: a new one
    assert recovery.read_record(Stub(cm), "ns", "b", None).finished        # the old Binding is gone: it is this one
    cm["data"]["recovery.json"] = json.dumps(STATE)
    with pytest.raises(PluginError, match="unfinished recovery of an earlier KVCachePoolBinding b"):
        recovery.read_record(Stub(cm), "ns", "b", {"metadata": {"uid": "u2"}})
    cm["data"]["recovery.json"] = "{not json"
    with pytest.raises(PluginError, match="ConfigMap ns/kvcache-recover-b: data.recovery.json"):
        recovery.read_record(Stub(cm), "ns", "b", None)


def test_a_record_for_another_binding_or_with_a_bad_key_is_refused_naming_it():
    other = dict(STATE, binding={"namespace": "ns", "name": "other", "uid": "u1"})
    cm = {"metadata": {"name": "kvcache-recover-b", "namespace": "ns"},
          "data": {"recovery.json": json.dumps(other)}}
    with pytest.raises(PluginError, match=r"^ConfigMap ns/kvcache-recover-b: data.recovery.json names "
                                          r"KVCachePoolBinding ns/other, not ns/b"):
        recovery.read_record(Stub(cm), "ns", "b", None)
    cm["data"] = {"recovery.json": json.dumps(STATE), "backup.x.json": "[1]"}
    with pytest.raises(PluginError, match=r"^ConfigMap ns/kvcache-recover-b: data.backup.x.json is not a backup"):
        recovery.read_record(Stub(cm), "ns", "b", None)


def test_a_stale_record_is_replaced_whole_under_its_resource_version():
    old = {"metadata": {"name": "kvcache-recover-b", "namespace": "ns", "resourceVersion": "5"},
           "data": {"recovery.json": json.dumps(dict(STATE, finished=True)), "backup.x.json": "{}"}}
    client = Stub(old)
    client.rv = 5
    record = recovery.read_record(client, "ns", "b", {"metadata": {"uid": "u2"}})
    _journal(client, record).open()
    assert set(client.obj["data"]) == {"recovery.json"}
    state = json.loads(client.obj["data"]["recovery.json"])
    assert {k: state[k] for k in STATE if k not in ("holder", "expires")} == {
        k: v for k, v in STATE.items() if k not in ("holder", "expires")}
    assert client.calls[-1][3]["metadata"] == {"resourceVersion": "5"}


def test_two_runs_at_once_the_second_refuses_and_writes_nothing():
    """B reads (no record yet) and waits at its question; A opens the record, backs up, finishes;
    B answers: its create is a 409, it re-reads and refuses, the record as A left it."""
    client = Stub()
    b_read = None                                   # what B read: nothing
    a = _journal(client)
    a.open()
    a.backup({"kind": "ModelDeployment", "metadata": {"name": "alpha", "namespace": "ns", "resourceVersion": "3"}})
    a.update(settingTurnedOff=True)
    b = _journal(client, b_read)
    with pytest.raises(Taken, match=r"^ConfigMap ns/kvcache-recover-b: another run of this recovery holds it \(.*pid "
                                    r"\d+ since .*until .*run this command again after "):
        b.open()
    a.update(finished=True)
    before = json.loads(json.dumps(client.obj))
    with pytest.raises(Taken, match=r"was created by another run since this one read the cluster \(it finished"):
        b.open()
    # B read the record while A held it (an expired lease, say), A wrote since: B's precondition fails
    record = recovery.read_record(client, "ns", "b", None)
    client.other_run(finished=False)
    with pytest.raises(Taken, match="changed since this run read it"):
        _journal(client, record).open()
    assert before["data"].keys() == client.obj["data"].keys()      # A's backup is still there


def test_a_write_that_meets_a_conflict_is_re_read_never_forced():
    client = Stub()
    a = _journal(client)
    a.open()
    client.other_run(note="someone touched it")     # same holder: written again on the new version
    a.update(settingTurnedOff=True)
    assert json.loads(client.obj["data"]["recovery.json"])["settingTurnedOff"] is True
    client.other_run(holder={"id": "another", "agent": "x", "host": "h", "pid": 1, "since": "t"})
    with pytest.raises(Taken, match="was taken over by another run"):
        a.backup({"kind": "ModelDeployment", "metadata": {"name": "alpha", "namespace": "ns"}})
    assert not any(k.startswith("backup.") for k in client.obj["data"])


def test_an_expired_lease_is_taken_over():
    client = Stub()
    a = _journal(client)
    a.open()
    client.other_run(expires="2000-01-01T00:00:00Z")
    record = recovery.read_record(client, "ns", "b", None)
    assert not record.active() and record.holder is not None
    b = _journal(client, record)
    b.open()
    assert json.loads(client.obj["data"]["recovery.json"])["holder"]["id"] == b.state["holder"]["id"]
    with pytest.raises(Taken):
        a.update(settingTurnedOff=True)


def test_a_long_binding_name_gives_a_valid_configmap_name():
    name = recovery.record_name("b" * 250)
    assert len(name) <= 253 and name.startswith("kvcache-recover-bbb") and name != recovery.record_name("b" * 251)
    assert recovery.record_name("sgl-fp8") == "kvcache-recover-sgl-fp8"


def test_a_holder_whose_process_is_gone_on_this_machine_holds_nothing():
    """Ctrl-C leaves the record naming its run (no request goes out after it): a rerun on the same
    machine sees that process gone and goes on; a holder elsewhere, or alive, waits for its lease."""
    import platform
    import subprocess
    import sys

    from kubectl_kvcache.cli.flows.recovery_record import gone_here, held

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(done.stdout)
    here = {"host": platform.node(), "pid": pid}
    assert gone_here(here)
    assert not gone_here(dict(here, host="elsewhere")) and not gone_here(dict(here, pid=os.getpid()))
    assert not gone_here(dict(here, pid=1)) and not gone_here(dict(here, pid="1"))
    record = recovery.parse_record({"metadata": {"name": "kvcache-recover-b", "namespace": "ns"},
                                    "data": {"recovery.json": json.dumps(dict(STATE, holder=dict(here, id="x"),
                                                                              expires="2999-01-01T00:00:00Z"))}})
    assert record.active() and not held(record)
    record.holder = dict(here, host="elsewhere", id="x")
    assert held(record)
