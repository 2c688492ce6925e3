"""The gate on `setting on` (check's judgement first) against the fake API server of
test_setting.py, which sits behind the real kube.Client: refusal with each fix, --force,
--dry-run, `off` ungated, and RBAC on the workload kinds (--skip-workloads). The same on the
real API server: tests/cluster/test_rollout_cluster.py."""

import pytest

import fakeapi as ts
from kubectl_kvcache.operator.api import GROUP, VERSION


@pytest.fixture
def run(monkeypatch):
    return lambda api, argv, stdin=None: ts.run_cli(api, argv, stdin, monkeypatch)


def rejected_api(**kw):
    """The fake cluster with its Binding b1 in namespace a spelled bf16, which vLLM rejects."""
    return ts._cluster_api(setting=ts._setting_obj("false"), bindings=[ts._binding("a", "b1", "bf16"),
                                                                       ts._binding("b", "b1")], **kw)


@pytest.mark.parametrize("extra", [["--yes"], ["--dry-run=client"], ["--dry-run=server"]])
def test_errors_refuse_on_with_each_fix(run, extra):
    api = rejected_api()
    code, out, err = run(api, ["setting", "on", *extra])
    assert code == 1, err
    assert "Before turning it on, check -A found 1 error: the Setting is not turned on" in out
    assert "binding-dtype-rejected" in out and "bfloat16" in out and "FIX" in out
    assert "Setting off first" not in out            # judged as it is now: off
    line = ts._one_error_line(err)
    assert line.startswith("error: refusing to turn the Setting on") and "--force" in line
    assert api.patches == [] and api.setting["spec"]["value"] == "false"


def test_force_turns_it_on_anyway(run):
    api = rejected_api(operator="at-once")
    code, out, err = run(api, ["setting", "on", "--yes", "--force"])
    assert code == 0, err
    assert "turning it on anyway (--force)" in out and "binding-dtype-rejected" in out
    assert [p.body["spec"] for p in api.patches] == [{"value": "true"}]


def test_off_is_never_gated(run):
    api = ts._cluster_api(bindings=[ts._binding("a", "b1", "bf16")])
    code, out, err = run(api, ["setting", "off", "--yes"])
    assert code == 0, err
    assert "Before turning it on" not in out and len(api.patches) == 1
    assert not [c for c in api.calls if c.path.endswith("kvcachepoolbindings")]


def test_a_clean_cluster_passes_the_gate(run):
    api = ts._cluster_api(setting=ts._setting_obj("false"), operator="at-once")
    code, out, err = run(api, ["setting", "on", "--yes"])
    assert code == 0, err
    assert out.startswith("Before turning it on, check -A: no errors") and len(api.patches) == 1
    listed = {c.path for c in api.calls if c.method == "GET"}
    assert {"/apis/apps/v1/deployments", "/apis/batch/v1/cronjobs",
            f"/apis/{GROUP}/{VERSION}/kvcachepoolbindings"} <= listed     # every namespace


def test_workloads_refused_names_skip_workloads_and_force(run):
    api = ts._cluster_api(setting=ts._setting_obj("false"), forbidden={("GET", "deployments")})
    code, out, err = run(api, ["setting", "on", "--yes"])
    assert code == 2 and out == ""
    line = ts._one_error_line(err)
    assert "forbidden" in line and "--skip-workloads" in line and "--force" in line and "not changed" in line
    assert api.patches == []
    code, out, err = run(api, ["setting", "on", "--yes", "--skip-workloads"])
    assert code == 0, err
    assert "note: --skip-workloads" in err and len(api.patches) == 1


def test_force_goes_ahead_when_the_check_cannot_run(run):
    api = ts._cluster_api(setting=ts._setting_obj("false"), forbidden={("GET", "kvcachepoolbindings")})
    code, out, err = run(api, ["setting", "on", "--yes", "--force"])
    assert code == 0, err
    assert "--force: check's judgement could not run (forbidden" in err and len(api.patches) == 1
