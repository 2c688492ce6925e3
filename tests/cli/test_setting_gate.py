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
    header, row = out.splitlines()[1:3]          # check -A -o wide's table: each finding with its fix
    assert header.split() == ["NAMESPACE", "SEVERITY", "CODE", "OBJECT", "MESSAGE", "FIX"]
    assert row.split()[:4] == ["a", "error", "binding-dtype-rejected", "kvcachepoolbinding/b1"]
    assert "bfloat16" in row and "kubectl kvcache recover b1 -n a" in row
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
    patched = next(n for n, c in enumerate(api.calls) if c.method == "PATCH")
    # nothing judged first: the gate's check reads the workload templates (apps/v1, batch/v1); `off`
    # reads only the replicas whose KV cache the roll changes (judge/capacity), never those
    assert not [c for c in api.calls[:patched] if "/apis/apps/" in c.path or "/apis/batch/" in c.path]
    assert [c for c in api.calls[:patched] if c.path.endswith("kvcachepoolbindings")]      # the replicas' snapshot


def _undo(out):
    """The undo command `setting off` printed, as argv (without `kubectl kvcache`)."""
    line = next(x for x in out.splitlines() if x.startswith("To undo: "))
    argv = line[len("To undo: "):].split()
    assert argv[:2] == ["kubectl", "kvcache"], line
    return argv[2:]


def test_the_undo_of_off_is_accepted_where_the_gate_refuses_on(run):
    """Issue 48 item 5: `setting off` because a Binding's spelling is rejected; its undo hint, run
    as printed, is accepted (the gate refuses plain `setting on` there), and says why --force."""
    api = ts._cluster_api(bindings=[ts._binding("a", "b1", "bf16")], operator="at-once")
    code, out, err = run(api, ["setting", "off", "--yes"])
    assert code == 0, err
    argv = _undo(out)
    assert argv == ["setting", "on", "--yes", "--force"], out
    assert "without it `setting on` refuses now" in out and "1 binding-dtype-rejected" in out
    code, _, err = run(api, ["setting", "on", "--yes"])           # the hint without --force: refused
    assert code == 1 and "refusing to turn the Setting on" in err
    code, out, err = run(api, argv)                                # the hint as printed: accepted
    assert code == 0, err
    assert api.setting["spec"]["value"] == "true"


def test_the_undo_of_off_on_a_clean_cluster_needs_no_force(run):
    api = ts._cluster_api(operator="at-once")
    code, out, err = run(api, ["setting", "off", "--yes"])
    assert code == 0, err
    argv = _undo(out)
    assert argv == ["setting", "on", "--yes"] and "--force" not in out
    code, _, err = run(api, argv)
    assert code == 0, err


def test_the_undo_of_off_when_the_gate_cannot_run_names_force(run):
    api = ts._cluster_api(forbidden={("GET", "kvcachepoolbindings")}, operator="at-once")
    code, out, err = run(api, ["setting", "off", "--yes"])
    assert code == 0, err
    assert _undo(out) == ["setting", "on", "--yes", "--force"] and "could not run here" in out
    code, _, _ = run(api, ["setting", "on", "--yes"])
    assert code == 2
    code, _, err = run(api, _undo(out))
    assert code == 0, err


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


def test_errors_that_exist_with_the_setting_off_too_do_not_hold_it_back(run):
    """A deployment naming a Binding that does not exist is an error with the Setting off as
    much as on: the gate lists it as not changed by turning it on, and turns it on."""
    api = ts._cluster_api(setting=ts._setting_obj("false"), bindings=[ts._binding("a", "b1")], operator="at-once")
    code, out, err = run(api, ["setting", "on", "--yes"])
    assert code == 0, err
    assert out.startswith("Before turning it on, check -A: no errors that turning it on causes")
    assert "\nTurning it on does not change 1 error that exists with the Setting off too:\n" in out
    assert "binding-missing" in out and "m3" in out
    assert [p.body["spec"] for p in api.patches] == [{"value": "true"}]


def test_a_rejected_binding_s_fix_is_its_recover_command(run):
    api = rejected_api()
    code, out, err = run(api, ["setting", "on", "--yes"])
    assert code == 1
    assert "kubectl kvcache recover b1 -n a" in out
    assert "Turning it on does not change" not in out


def test_one_gate_for_setting_on_and_recover(monkeypatch):
    """Both ask read_gate (the same judgement) and say it with the same view."""
    from kubectl_kvcache.cli.flows import recover as recover_flow, setting as setting_flow

    calls = []
    real = setting_flow.read_gate

    def spy(*a, **kw):
        calls.append(kw.get("namespace"))
        return real(*a, **kw)
    monkeypatch.setattr(setting_flow, "read_gate", spy)
    assert recover_flow.setting_flow is setting_flow
    run = lambda api, argv: ts.run_cli(api, argv, None, monkeypatch)      # noqa: E731
    run(rejected_api(), ["setting", "on", "--yes"])
    assert calls == [None]
