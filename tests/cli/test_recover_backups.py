"""cli/flows/recover.py's backup folder: one per recovery (named by the old Binding's uid, so a
resumed run writes where the first one did), and a file there is never overwritten: one of that
name with other content is kept and the new one named apart (issue 30 #4)."""

import json
import os
from datetime import datetime, timezone

from kubectl_kvcache.cli.flows.recover import default_backup_dir, keep_json


def test_the_folder_is_a_function_of_the_recovery_not_of_the_time():
    early = datetime(2026, 1, 1, tzinfo=timezone.utc)
    late = datetime(2026, 6, 1, 12, 30, tzinfo=timezone.utc)
    assert default_backup_dir("ns", "b", "u-1", now=early) == default_backup_dir("ns", "b", "u-1", now=late) \
        == "kvcache-recover-ns-b-u-1"
    assert default_backup_dir("ns", "b", "u-2") != default_backup_dir("ns", "b", "u-1")
    # no uid (a Binding from files without one): the time, as before
    assert default_backup_dir("ns", "b", None, now=late) == "kvcache-recover-ns-b-20260601T123000Z"
    # a uid or name is a path part, never a path
    assert "/" not in default_backup_dir("ns", "b", "../../etc")


def test_the_same_content_is_not_written_twice(tmp_path):
    path = str(tmp_path / "ModelDeployment.ns.a.rv1.json")
    obj = {"kind": "ModelDeployment", "metadata": {"name": "a", "resourceVersion": "1"}}
    assert keep_json(path, obj) == (path, None)
    assert keep_json(path, json.loads(json.dumps(obj))) == (path, None)
    assert os.listdir(tmp_path) == ["ModelDeployment.ns.a.rv1.json"]


def test_a_different_file_of_that_name_is_kept_and_the_new_one_named_apart(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text('{"kind": "RecoveryPlan", "planted": true}')
    mine = {"kind": "RecoveryPlan", "steps": []}
    where, why = keep_json(str(path), mine)
    assert where == str(tmp_path / "plan.2.json")
    assert why == f"{path} holds other content: kept; this one is written to {where}"
    assert json.loads(path.read_text()) == {"kind": "RecoveryPlan", "planted": True}
    assert json.loads((tmp_path / "plan.2.json").read_text()) == mine
    # a rerun with the same content finds its own copy; with other content, the next free name
    assert keep_json(str(path), mine) == (where, f"{path} holds other content: kept; this one is in {where}")
    assert keep_json(str(path), {"kind": "RecoveryPlan", "steps": [1]})[0] == str(tmp_path / "plan.3.json")
    # a file that is not JSON is other content too
    (tmp_path / "x.json").write_text("not json")
    assert keep_json(str(tmp_path / "x.json"), {"a": 1})[0] == str(tmp_path / "x.2.json")
