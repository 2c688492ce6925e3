"""issue 48 item 5, offline: a recovery's record (recover --apply's ConfigMap) in scope that is not
finished fails verify (a reason of its one verdict, in every format), check and bindings (a
finding), naming the Binding, the step and the command that continues it; a finished one, or one
out of scope, changes nothing; a ConfigMap with the record's label and name that is not a record
recover writes is parsed strictly and named (whether a recovery stopped there is not known). The
records are the executor's own (cli/flows/recovery_record.Journal's state), saved as `kubectl get
configmap -o json` writes them, beside examples/cluster.json."""

import copy
import json
import os
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.load import recovery_state
from runcli import kvcache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")
NS = "llm-research"     # every replica there is OK: verify exits 0 without a record
RESUME = f"kubectl kvcache recover research-fp8 -n {NS} --apply"


def state(**over):
    """A record's data.recovery.json as the executor writes it (flows/recover._state, then update())."""
    base = {"binding": {"namespace": NS, "name": "research-fp8", "uid": "0e5c6f0a-1111-4222-8333-944455556666"},
            "target": {"name": "research-fp8-e4m3", "domain": "research-fp8-e4m3", "dtype": "fp8_e4m3",
                       "strategy": "side-by-side"},
            "settingTurnedOff": False, "finished": False, "holder": None, "expires": None,
            "progress": {"step": 5, "steps": 8, "doing": "Delete ModelDeployment llm-research/notebook-vllm"}}
    base.update(over)
    return base


def configmap(data_state, name="kvcache-recover-research-fp8", namespace=NS, raw=None):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "kubectl-kvcache"},
                         "annotations": {"kvcache.gpustack.ai/recovery-of": f"KVCachePoolBinding {namespace}/x"}},
            "data": {"recovery.json": raw if raw is not None else json.dumps(data_state, sort_keys=True)}}


def dump(tmp_path, *extra):
    with open(EXAMPLE, encoding="utf-8") as f:
        doc = json.load(f)
    doc["items"] += list(extra)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_without_a_record_the_namespace_passes(tmp_path):
    code, _, err = kvcache("verify", "-n", NS, "-f", dump(tmp_path))
    assert code == 0, err


def test_an_unfinished_record_fails_verify_with_the_step_and_the_command(tmp_path):
    path = dump(tmp_path, configmap(state(settingTurnedOff=True)))
    code, out, err = kvcache("verify", "-n", NS, "-f", path)
    assert code == 1, err
    verdict_line, next_line = err.strip().splitlines()[-2:]
    assert verdict_line == (
        f"verdict: FAILED (exit code 1): the recovery of KVCachePoolBinding {NS}/research-fp8 is unfinished: it "
        f"stopped at step 5 of 8 (Delete ModelDeployment llm-research/notebook-vllm) (its record: ConfigMap "
        f"{NS}/kvcache-recover-research-fp8); its record says it turned the Setting off")
    assert next_line == f"next: continue it: {RESUME}"


@pytest.mark.parametrize("fmt", ["json", "yaml", "markdown", "junit", "sarif", "csv", "describe"])
def test_every_format_reads_the_one_verdict(tmp_path, fmt):
    code, out, err = kvcache("verify", "-n", NS, "-f", dump(tmp_path, configmap(state())), "-o", fmt)
    assert code == 1, err
    if fmt in ("csv", "describe"):      # rows only: the verdict goes to stderr, as the table's
        assert "is unfinished: it stopped at step 5 of 8" in out + err, out + err
        return
    if fmt in ("json", "yaml"):
        (reason,) = (json.loads(out) if fmt == "json" else yaml.safe_load(out))["verdict"]["reasons"]
        assert "is unfinished: it stopped at step 5 of 8" in reason["message"]
        assert reason == {"code": "recovery-unfinished", "kind": "KVCachePoolBinding", "name": "research-fp8",
                          "namespace": NS, "message": reason["message"], "fix": f"continue it: {RESUME}",
                          "fails": True}
    else:
        assert "is unfinished: it stopped at step 5 of 8" in out, out
    if fmt == "sarif":
        assert json.loads(out)["runs"][0]["invocations"][0]["exitCode"] == 1
    if fmt == "junit":
        assert 'failures="0"' not in out.splitlines()[1]


def test_check_and_bindings_name_it_as_a_failing_finding(tmp_path):
    path = dump(tmp_path, configmap(state()))
    code, out, err = kvcache("check", "-n", NS, "-f", path, "-o", "json")
    assert code == 1, err
    (found,) = [f for f in json.loads(out)["findings"] if f["code"] == "recovery-unfinished"]
    assert (found["severity"], found["kind"], found["name"], found["namespace"], found["outcome"]) == \
        ("error", "KVCachePoolBinding", "research-fp8", NS, "failed")
    assert found["fix"] == f"continue it: {RESUME}"
    code, out, err = kvcache("bindings", "-n", NS, "-f", path)
    assert code == 1 and "recovery-unfinished" in err, out + err
    assert err.strip().splitlines()[-1].endswith(f"; next: continue it: {RESUME}"), err    # its words, last
    _, out, _ = kvcache("check", "-n", NS, "-f", dump(tmp_path), "-o", "json")     # without it: not there
    assert "recovery-unfinished" not in out


@pytest.mark.parametrize("extra", [
    configmap(state(finished=True, progress=None)),                       # finished: nothing to say
    configmap(state(binding={"namespace": "llm-prod", "name": "sgl-fp8", "uid": "u"}), name="kvcache-recover-sgl-fp8",
              namespace="llm-prod"),                                      # another namespace than -n
    dict(configmap(state()), metadata={"name": "kvcache-recover-research-fp8", "namespace": NS}),  # no label
    dict(configmap(state()), metadata={"name": "other", "namespace": NS,
                                       "labels": {"app.kubernetes.io/managed-by": "kubectl-kvcache"}}),
])
def test_what_is_not_an_unfinished_record_in_scope_changes_nothing(tmp_path, extra):
    code, _, err = kvcache("verify", "-n", NS, "-f", dump(tmp_path, extra))
    assert code == 0, err


def test_a_record_a_run_holds_says_it_may_be_running_and_how_to_take_over(tmp_path):
    until = (datetime.now(timezone.utc) + timedelta(minutes=4)).strftime("%Y-%m-%dT%H:%M:%SZ")
    held = state(holder={"id": "ab", "agent": "kubectl-kvcache", "host": "ops-1", "pid": 4242,
                         "since": "2026-12-05T14:00:00Z"}, expires=until)
    code, out, err = kvcache("check", "-n", NS, "-f", dump(tmp_path, configmap(held)), "-o", "json")
    (found,) = [f for f in json.loads(out)["findings"] if f["code"] == "recovery-unfinished"]
    assert code == 1
    assert f"a run holds its record (ConfigMap {NS}/kvcache-recover-research-fp8: kubectl-kvcache on host ops-1 " \
           f"pid 4242 since 2026-12-05T14:00:00Z, until {until}): it may still be running" in found["message"]
    assert found["fix"].startswith(f"let it finish; if that run is gone: {RESUME}")
    expired = state(holder=held["holder"], expires="2026-01-01T00:00:00Z")    # its lease is over: stopped
    _, out, _ = kvcache("check", "-n", NS, "-f", dump(tmp_path, configmap(expired)), "-o", "json")
    (found,) = [f for f in json.loads(out)["findings"] if f["code"] == "recovery-unfinished"]
    assert "it stopped at step 5 of 8" in found["message"] and found["fix"] == f"continue it: {RESUME}"


@pytest.mark.parametrize("raw, words", [
    ("{not json", "data.recovery.json: "),
    (json.dumps(state(progress={"step": 9, "steps": 8, "doing": "x"})), "1 <= step <= steps"),
    (json.dumps(state(progress={"step": True, "steps": 8, "doing": "x"})), "whole numbers"),
    (json.dumps(state(finished="yes")), "finished must be true or false"),
    (json.dumps(state(binding={"namespace": NS, "name": "sgl-fp8", "uid": "u"})), "not the Binding its name says"),
    (json.dumps(state(binding={"namespace": NS, "name": "a b;rm -rf", "uid": "u"})), "not a valid name"),
])
def test_a_configmap_that_is_not_a_record_recover_writes_is_named(tmp_path, raw, words):
    code, out, err = kvcache("check", "-n", NS, "-f", dump(tmp_path, configmap(None, raw=raw)), "-o", "json")
    assert code == 1, err
    (found,) = [f for f in json.loads(out)["findings"] if f["code"] == "recovery-unfinished"]
    assert (found["kind"], found["name"]) == ("ConfigMap", "kvcache-recover-research-fp8")
    assert "is not one kubectl kvcache recover writes" in found["message"] and words in found["message"], found
    assert "rm -rf" not in found["fix"]
    assert found["fix"] == f"review it (kubectl get configmap kvcache-recover-research-fp8 -n {NS} -o yaml); " \
                           f"delete it if no recovery wrote it"


def test_recover_refuses_a_record_with_a_malformed_progress():
    """recover reads the same record strictly: one it does not write is refused, naming the key."""
    bad = configmap(state(progress={"step": 1, "steps": 2, "doing": 7}))
    with pytest.raises(PluginError, match="progress.doing must be a string"):
        recovery_state.parse_record(copy.deepcopy(bad))
    assert recovery_state.parse_record(configmap(state())).progress == state()["progress"]


def test_a_saved_record_without_a_namespace_is_in_the_namespace_asked_for(tmp_path):
    """kubectl puts an object that names no namespace into -n (issue 48 item 1): so does the record."""
    cm = configmap(state())
    del cm["metadata"]["namespace"]
    code, out, err = kvcache("verify", "-n", NS, "-f", dump(tmp_path, cm), "-o", "json")
    (reason,) = json.loads(out)["verdict"]["reasons"]
    assert code == 1 and reason["namespace"] == NS and reason["fix"] == f"continue it: {RESUME}", err


def test_one_code_for_the_finding_and_the_reason():
    """check's finding and verify's reason are the same meaning under one code, in the registry."""
    from kubectl_kvcache.judge import checks, verdict
    from kubectl_kvcache.judge.checks import recovery

    assert verdict.RECOVERY == recovery.CODE and checks.CODES[recovery.CODE].severity == checks.ERROR
    assert not checks.CODES[recovery.CODE].with_setting_on      # it exists with the Setting off: never the gate's


def test_without_a_replica_in_scope_the_recovery_still_fails_and_is_named_last(tmp_path):
    path = tmp_path / "only.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [configmap(state())]}))
    code, out, err = kvcache("verify", "-n", NS, "-f", str(path))
    assert code == 1 and out == "", err
    assert err.strip().splitlines()[-1] == f"next: continue it: {RESUME}", err
