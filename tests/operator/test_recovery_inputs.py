"""The one record a recovery is planned from (operator/recovery_inputs.py): what it derives from
the snapshot read with it, and the earlier run's record it follows only when not stale."""

import objects as o
from kubectl_kvcache.load.recovery import RecoveryRecord
from kubectl_kvcache.operator import decode, records
from kubectl_kvcache.operator.recovery_inputs import Recovery


def _recovery():
    snapshot = records.Snapshot(source="file")
    snapshot.setting = records.default_setting()
    snapshot.pods = [decode.pod_record(o.md_pod("md-0", "md", o.vllm_argv("fp8"))),
                     decode.pod_record(o.md_pod("md-1", "md", o.vllm_argv("fp8"), ns="other")),
                     decode.pod_record(o.injected_pod("inj-0", "b", containers=[o.container("vllm")]))]
    return Recovery("team", "b", None, [], [], [], snapshot)


def test_pods_of_its_namespace_by_what_they_are():
    found = _recovery()
    assert [p.name for p in found.md_pods] == ["md-0"]
    assert [p.name for p in found.pods] == ["inj-0"]
    assert found.setting is found.snapshot.setting


def test_a_stale_record_is_no_hint():
    found = _recovery()
    assert found.hints is None
    found.record = RecoveryRecord("kvcache-recover-b", "team", "b", "u1", {}, True, False, [])
    assert found.hints is found.record
    found.record.stale = True
    assert found.hints is None
