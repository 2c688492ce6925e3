"""Issue 48 item 3: a Setting whose spec.value asks for a value its status.value does not report is
in flight, a finding of its own that fails verify and check in every format until the two agree.

The dumps are the saved cluster of examples/ with the Setting's spec.value changed, nothing else:
the replicas of qwen-chat run the Binding's dtype and are OK with the Setting as status.value has
it (on). Before issue 48, `verify` said "2 OK", exit 0, and `check` "already on"."""

import copy
import importlib.util
import json
import os

import pytest
import yaml

from fakeapi import _cluster_api, _setting_obj, run_cli
from kubectl_kvcache.render import formats

def _matrix():
    """test_verdict_matrix.py's reading of each format's verdict (said) and its runner, shared."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "test_verdict_matrix.py")
    spec = importlib.util.spec_from_file_location("verdict_matrix_reading", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_M = _matrix()
ROOT, run, said, option = _M.ROOT, _M.run, _M.said, _M.option

EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")
QWEN = ["-n", "llm-prod", "-l", "app.kubernetes.io/instance=qwen-chat"]      # 2 replicas, OK with it on


def _dump(tmp_path, spec=None, status="true", name="cluster.json"):
    with open(EXAMPLE) as f:
        data = json.load(f)
    for obj in data["items"]:
        if obj["kind"] == "Setting":
            obj["spec"] = {} if spec is None else {"value": spec}
            if status is None:
                obj["status"].pop("value")
            else:
                obj["status"]["value"] = status
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


@pytest.fixture(autouse=True)
def report_time(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1773133200")


def test_the_settled_dump_passes(tmp_path):
    """The control: spec and status agree, the two replicas are OK and verify passes."""
    code, out, err = run(["verify", "-f", _dump(tmp_path, "true")] + QWEN)
    assert code == 0, err
    assert [line.split()[-1] for line in out.splitlines()[1:]] == ["OK", "OK"]


@pytest.mark.parametrize("fmt", formats.offered("verify"))
def test_verify_fails_in_every_format_while_the_setting_is_in_flight(tmp_path, fmt):
    code, out, err = run(["verify", "-f", _dump(tmp_path, "false")] + QWEN + ["-o", option(fmt)])
    assert code == 1, err
    fails, named = said(fmt, out, err)
    assert fails and named in (None, 1)


def test_verify_rows_are_not_ok_against_a_value_not_taken_in(tmp_path):
    code, out, err = run(["verify", "-f", _dump(tmp_path, "false")] + QWEN + ["-o", "json"])
    assert code == 1
    data = json.loads(out)
    assert data["setting"]["inFlight"] == {"specValue": "false", "statusValue": "true", "asks": "false",
                                           "reports": "true"}
    for item in data["items"]:
        assert item["status"] == "UNKNOWN" and item["expected"] is None
        assert item["cause"]["code"] == "setting"
        assert "judged with status.value it is OK (expected 'fp8')" in item["reason"]
        assert "with spec.value it would be OK (nothing expected)" in item["reason"]
    reason, = [r for r in data["verdict"]["reasons"] if r["code"] == "setting-in-flight"]
    assert reason["fails"] and "spec.value asks 'false' (off)" in reason["message"]
    assert "kubectl kvcache setting status" in reason["fix"] and "--wait" in reason["fix"]
    # the table says both values and what ends it
    code, out, err = run(["verify", "-f", _dump(tmp_path, "false")] + QWEN)
    assert code == 1 and "FAILED" in err and "the Setting is in flight" in err
    assert [line.split()[-1] for line in out.splitlines()[1:]] == ["UNKNOWN"] * 2
    assert "deployment llm-prod/qwen-chat: 0/2 replicas run 'fp8', 2 to roll" in err


def test_verify_fails_whatever_fail_on_tolerates(tmp_path):
    """--fail-on tolerates the UNKNOWN rows; the Setting in flight fails the run all the same."""
    code, out, err = run(["verify", "-f", _dump(tmp_path, "false")] + QWEN + ["--fail-on", "REJECTED", "-o", "json"])
    assert code == 1
    verdict = json.loads(out)["verdict"]
    assert verdict["failing"] == 0 and [r["code"] for r in verdict["reasons"]] == ["setting-in-flight"]


@pytest.mark.parametrize("fmt", formats.offered("check"))
def test_check_fails_in_every_format_while_the_setting_is_in_flight(tmp_path, fmt):
    code, out, err = run(["check", "-f", _dump(tmp_path, "false")] + QWEN + ["-o", option(fmt)])
    assert code == 1, err
    fails, named = said(fmt, out, err)
    assert fails and named in (None, 1)


def test_check_names_the_finding_and_never_says_already_on(tmp_path):
    code, out, err = run(["check", "-f", _dump(tmp_path, "false")] + QWEN + ["-o", "yaml"])
    assert code == 1
    data = yaml.safe_load(out)
    codes = {f["code"]: f for f in data["findings"]}
    flight = codes["setting-in-flight"]
    assert flight["severity"] == "error" and flight["kind"] == "Setting"
    assert "spec.value asks 'false' (off)" in flight["message"] and "status.value reports 'true' (on)" in \
        flight["message"]
    assert "already on" not in codes["setting"]["message"]
    assert data["setting"]["inFlight"]["asks"] == "false"
    code, out, err = run(["check", "-f", _dump(tmp_path, "true")] + QWEN)
    assert code == 0 and "already on" in out


@pytest.mark.parametrize("spec,status,fails", [
    ("false", "true", True), ("0", "1", True), ("true", "false", True),
    ("true", None, True),           # status never written: the operator has reported nothing
    ("False", "false", False),      # one value, two spellings: settled
    ("maybe", "true", False),       # an ask its admission refuses (AllowBool): never taken in, not in flight
    (None, "true", False),          # spec not returned (the operator's own handler): settled
])
def test_which_settings_are_in_flight(tmp_path, spec, status, fails):
    code, out, err = run(["verify", "-f", _dump(tmp_path, spec, status)] + QWEN + ["-o", "json"])
    data = json.loads(out)
    assert ("inFlight" in data["setting"]) is fails
    assert ("setting-in-flight" in [r["code"] for r in data["verdict"]["reasons"]]) is fails
    if fails:
        assert code == 1
    elif status == "true":       # settled on: the replicas run the Binding's dtype
        assert code == 0, out


# -- setting status -----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["table", "json", "yaml"])
def test_setting_status_exits_1_in_every_format_while_in_flight(monkeypatch, fmt):
    api = _cluster_api(setting=_setting_obj("true", spec="false"))
    code, out, err = run_cli(api, ["setting", "status", "-o", fmt], None, monkeypatch)
    assert code == 1, err
    if fmt == "table":
        assert "in flight:" in out and "spec.value asks 'false' (off)" in out
    else:
        data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
        assert data["inFlight"]["asks"] == "false" and data["inFlight"]["reports"] == "true"
    settled = _cluster_api(setting=_setting_obj("true", spec="true"))
    code, out, err = run_cli(settled, ["setting", "status", "-o", fmt], None, monkeypatch)
    assert code == 0 and "in flight" not in out and "inFlight" not in out


def test_the_gate_does_not_count_the_setting_in_flight(monkeypatch):
    """`setting on` resolves a Setting in flight (it asks what it will report): the gate judges what
    turning it on causes, and the Setting's own state is not among them."""
    api = _cluster_api(setting=_setting_obj("false", spec="true"), operator="at-once")
    code, out, err = run_cli(api, ["setting", "on", "--yes"], None, monkeypatch)
    assert code == 0, err
    assert "setting-in-flight" not in out and "no errors" in out


def test_the_same_dump_copied_keeps_its_values(tmp_path):
    """The fixture changes the Setting only (a guard on the dumps above)."""
    with open(EXAMPLE) as f:
        original = json.load(f)
    with open(_dump(tmp_path, "false")) as f:
        changed = json.load(f)
    strip = copy.deepcopy(changed)
    for obj in strip["items"]:
        if obj["kind"] == "Setting":
            obj["spec"]["value"] = "true"
    assert strip == original


def test_what_a_replica_runs_today_is_still_said_while_in_flight(tmp_path):
    """The argv is a fact whatever the Setting: check's role finding says what the Pod runs today
    (llama-long's own fp8_e5m2), not the UNKNOWN the in-flight verdict gives its row."""
    code, out, err = run(["check", "-A", "-f", _dump(tmp_path, "false"), "-o", "json"])
    role, = [f for f in json.loads(out)["findings"] if f["code"] == "role-own-flag" and f["name"] == "llama-long"]
    assert "Today: fp8_e5m2 (1 pod)" in role["message"], role["message"]


def test_checks_setting_on_hint_is_decided_by_the_gates_rule(tmp_path):
    """Issue 48 item 5: the Setting finding's fix names `setting on` as its gate decides it: an error
    that exists with the Setting off too (a Binding that does not exist) does not hold it back, so
    the hint is not 'fix the errors first'; one namespace read says the gate judges every one."""
    import objects as o

    path = tmp_path / "off.json"
    path.write_text(json.dumps(o.as_list(o.setting("false"), o.deployment("m1", binding_name="nope"))))
    code, out, err = run(["check", "-n", "team", "-f", str(path), "-o", "json"])
    findings = json.loads(out)["findings"]
    assert [f["code"] for f in findings if f["severity"] == "error"] == ["binding-missing"]
    fix, = [f["fix"] for f in findings if f["code"] == "setting"]
    assert fix == "kubectl kvcache setting on (its gate first judges every namespace: kubectl kvcache check -A)"


def test_a_replica_without_a_pod_expects_nothing_settled_while_in_flight(tmp_path):
    """A NO-POD row stays NO-POD (no Pod is a fact), but what its Pod will be rendered with is not
    settled: its expected value is null and its reason says why."""
    import objects as o

    path = tmp_path / "nopod.json"
    path.write_text(json.dumps(o.as_list(
        o.setting("true", spec_value="false"), o.binding("b1", "fp8"),
        o.deployment("m1", roles=[o.role(replicas=2)]), o.md_pod("m1-server-0", "m1", o.vllm_argv("fp8")))))
    code, out, err = run(["verify", "-n", "team", "-f", str(path), "-o", "json"])
    assert code == 1
    nopod, = [i for i in json.loads(out)["items"] if i["status"] == "NO-POD"]
    assert nopod["expected"] is None and "the Setting is in flight" in nopod["reason"]
    code, out, err = run(["verify", "-n", "team", "-f", str(path), "-o", "json",
                          "--assume-setting", "on"])
    nopod, = [i for i in json.loads(out)["items"] if i["status"] == "NO-POD"]
    assert nopod["expected"] == "fp8" and "in flight" not in nopod["reason"]


@pytest.mark.parametrize("command", ["bindings", "roles"])
@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "junit"])
def test_bindings_and_roles_fail_too_while_the_setting_is_in_flight(tmp_path, command, fmt):
    """Issue 48: the three views of one judgement; bindings and roles passed (exit 0) while check
    failed on the Setting in flight. Each fails now with the Setting's own reason, in every format;
    settled, the same views of the same scope pass (the control)."""
    argv = [command, "-f", None, "-n", "llm-prod", "-l", "app.kubernetes.io/instance=qwen-chat", "-o", fmt]
    argv[2] = _dump(tmp_path, "true")
    settled, out, err = run(argv)
    assert settled == 0 and not said(fmt, out, err)[0], (out, err)
    argv[2] = _dump(tmp_path, "false", name="flight.json")
    code, out, err = run(argv)
    assert code == 1 and said(fmt, out, err)[0], (out, err)
    if fmt == "json":
        reasons = [r["code"] for r in json.loads(out)["verdict"]["reasons"]]
        assert reasons == ["setting-in-flight"], reasons
    if fmt == "table":
        assert "the Setting is in flight" in err.splitlines()[-1] or any(
            line.startswith("verdict: FAILED (exit code 1): ") and "spec.value asks 'false'" in line
            for line in err.splitlines()), err
