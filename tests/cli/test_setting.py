"""`kubectl kvcache setting status|on|off`: the pure parts (setting.py) and the command flow
(commands/setting.py) against a fake API server that sits behind the real kube.Client (paging,
discovery, merge patches and error mapping are the real code; only the HTTP round trip is faked).
"""

import io
import json
import shlex

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as hs

from kubectl_kvcache.judge import setting
from kubectl_kvcache.cli.flows import setting as setting_cmd
from kubectl_kvcache.cli.options import SettingOptions
from kubectl_kvcache.cli.flows.setting import reverse_command
from kubectl_kvcache.kube.connection import Connection
from kubectl_kvcache.render import setting as setting_view
from kubectl_kvcache.errors import Conflict, PluginError
from kubectl_kvcache.operator.records import Deployment, Pod, Role, Setting, default_setting
from kubectl_kvcache.operator.api import GROUP, VERSION

from fakeapi import (NAME, NS, FakeAPI, FakeClient, HTTPError, TTY, _binding, _cluster_api, _md, _one_error_line, _pod, _setting_obj, run_cli, run)  # noqa: F401
TRUE_SPELLINGS = ("1", "t", "T", "TRUE", "true", "True")
FALSE_SPELLINGS = ("0", "f", "F", "FALSE", "false", "False")


def _record(status_value="true", spec_value=None, editable=True, source="cluster"):
    return Setting(status_value, spec_value, editable, "d", False, "7", source)


# -- pure: values and status ------------------------------------------------------------------

@pytest.mark.parametrize("raw", TRUE_SPELLINGS + FALSE_SPELLINGS)
def test_every_parse_bool_spelling_is_normalised(raw):
    view = setting_view.status_view(_record(raw))
    assert view["value"] is (raw in TRUE_SPELLINGS)
    assert view["raw"] == raw and view["source"] == "cluster"
    value_line = next(line for line in setting_view.status_lines(_record(raw)) if "value:" in line)
    word = "true" if raw in TRUE_SPELLINGS else "false"
    assert f"({word})" in value_line
    assert (f"written {raw!r}" in value_line) is (raw != word)


@given(hs.text(max_size=6).filter(lambda t: t not in TRUE_SPELLINGS + FALSE_SPELLINGS))
def test_anything_else_is_unreadable(raw):
    assert setting.parse_bool(raw) is None
    view = setting_view.status_view(_record(raw))
    assert view["value"] is None and view["meaning"].startswith("unreadable")


def test_missing_object_and_unset_value_read_the_default():
    for record, says in ((default_setting(), "does not exist"), (_record(None), "status.value is unset")):
        view = setting_view.status_view(record)
        assert view["value"] is True and view["source"] == "default" and view["raw"] is None
        assert any(says in line for line in setting_view.status_lines(record))


def test_status_view_has_the_stable_shape():
    view = setting_view.VIEW.to_dict(setting_view.status_view(_record("F", editable=False)))
    assert view == {"kind": "SettingStatus", "name": NAME, "namespace": NS, "value": False, "raw": "F",
                    "source": "cluster", "editable": False, "description": "d", "meaning": setting_view.MEANING[False]}


def test_status_lines_show_a_setting_in_flight():
    lines = setting_view.status_lines(_record("true", spec_value="0"))
    flight = next(line for line in lines if line.lstrip().startswith("in flight:"))
    assert "spec.value asks '0' (off)" in flight and "status.value reports 'true' (on)" in flight
    assert any("kubectl kvcache setting status" in line and "--wait" in line for line in lines)
    assert not any("in flight" in line for line in setting_view.status_lines(_record("true", spec_value="T")))


# -- pure: decide, patch, blast radius, reverse command -----------------------------------------

@pytest.mark.parametrize("record,want,expected", [
    (_record("true"), True, setting.ALREADY),
    (_record("T"), True, setting.ALREADY),
    (_record("0"), False, setting.ALREADY),
    (_record(None), True, setting.ALREADY),              # unset reads true
    (_record(None), False, setting.PATCH),
    (_record("true"), False, setting.PATCH),
    (_record("yes"), True, setting.PATCH),               # unreadable: not known to be on
    (_record("true", spec_value="false"), True, setting.PATCH),   # a pending change to off
    (_record("true", spec_value="1"), True, setting.ALREADY),
    (_record("true", editable=False), False, setting.NOT_EDITABLE),
    (_record("true", editable=False), True, setting.NOT_EDITABLE),
    (_record("true", editable=None), False, setting.PATCH),       # unset editable is not a refusal
])
def test_decide(record, want, expected):
    assert setting.decide(record, want) == expected


@given(hs.text(min_size=1, max_size=20), hs.booleans())
def test_patch_body_is_exactly_value_and_precondition(rv, value):
    assert setting.patch_body(rv, value) == {"metadata": {"resourceVersion": rv},
                                             "spec": {"value": "true" if value else "false"}}


def _dep(ns, kv=True, replicas=(1,)):
    roles = tuple(Role(f"r{i}", "server", r, (), (), ()) for i, r in enumerate(replicas))
    return Deployment(ns, f"md-{ns}-{len(replicas)}", "vLLM", None, "b" if kv else None, kv, roles)


def test_blast_radius_counts_attached_deployments_replicas_namespaces_and_pods():
    deployments = [_dep("a", replicas=(2, 3)), _dep("a", replicas=(None,)), _dep("b", replicas=(4,)),
                   _dep("c", kv=False, replicas=(9,))]
    pods = [Pod("a", "p1", {}, {}, None, (), {}), Pod("x", "p2", {}, {}, None, (), {}),
            Pod("x", "p3", {}, {}, None, (), {})]
    radius = setting.blast_radius(deployments, pods)
    assert (radius.deployments, radius.replicas, radius.namespaces) == (3, 10, 2)
    assert (radius.injected_pods, radius.injected_namespaces) == (3, 2)
    text = "\n".join(setting_view.blast_radius_lines(radius, False))
    assert "3 pool-attached ModelDeployments (10 replicas) in 2 namespaces" in text
    assert "3 Pods opted into injection" in text and "turning the setting off" in text.lower()


@given(hs.lists(hs.tuples(hs.sampled_from("abc"), hs.booleans(),
                          hs.lists(hs.one_of(hs.none(), hs.integers(0, 5)), max_size=3)), max_size=8))
def test_blast_radius_property(specs):
    deployments = [_dep(ns, kv, tuple(reps)) for ns, kv, reps in specs]
    radius = setting.blast_radius(deployments, [])
    attached = [s for s in specs if s[1]]
    assert radius.deployments == len(attached)
    assert radius.replicas == sum(1 if r is None else r for s in attached for r in s[2])
    assert radius.namespaces == len({s[0] for s in attached})


def test_blast_radius_of_nothing():
    text = "\n".join(setting_view.blast_radius_lines(setting.blast_radius([_dep("a", kv=False)], []), True))
    assert "0 pool-attached ModelDeployments: nothing rolls" in text and "0 Pods opted into injection" in text


def test_blast_radius_unknown_parts_say_why():
    radius = setting.blast_radius(None, None, "forbidden: cannot list md", "forbidden: cannot list pods")
    text = "\n".join(setting_view.blast_radius_lines(radius, True))
    assert "unknown (forbidden: cannot list md)" in text and "unknown (forbidden: cannot list pods)" in text


def _conn(**kw):
    if "as_group" in kw:
        kw["as_groups"] = tuple(kw.pop("as_group"))
    return Connection(**kw)


def _opts(timeout=60.0, **kw):
    flow = {k: kw.pop(k) for k in ("yes", "dry_run", "wait", "field_manager") if k in kw}
    return SettingOptions("off", _conn(**kw), timeout=timeout, **flow)


def test_reverse_command_repeats_the_connection_flags_given():
    opts = _conn(kubeconfig="/tmp/my config", context="prod", as_user="alice", as_group=["ops", "sre"],
                 server="https://h:6443", insecure_skip_tls_verify=True, request_timeout="10s")
    cmd = reverse_command(True, opts)
    assert shlex.split(cmd) == ["kubectl", "kvcache", "setting", "on", "--yes", "--kubeconfig", "/tmp/my config",
                                "--context", "prod", "--server", "https://h:6443", "--as", "alice",
                                "--as-group", "ops", "--as-group", "sre", "--insecure-skip-tls-verify",
                                "--request-timeout", "10s"]
    assert reverse_command(False, _conn()) == "kubectl kvcache setting off --yes"


def test_reverse_command_never_echoes_a_token():
    cmd = reverse_command(False, _conn(token="s3cr3t"), "me")
    assert "s3cr3t" not in cmd and '--token "$KVCACHE_TOKEN"' in cmd and "--field-manager me" in cmd


# -- CLI: status ------------------------------------------------------------------------------

def test_status_text(run):
    code, out, err = run(FakeAPI(_setting_obj("FALSE")), ["setting", "status"])
    assert code == 0 and err == ""
    assert "off (false), written 'FALSE'" in out
    assert "editable:    yes" in out and "Hand the dtype to the engine" in out
    assert setting_view.MEANING[False] in out


def test_status_missing_object_reads_default_and_says_so(run):
    code, out, _ = run(FakeAPI(None), ["setting", "status", "-o", "json"])
    assert code == 0
    assert json.loads(out) == {"apiVersion": "kubectl-kvcache/v1alpha1", "kind": "SettingStatus", "name": NAME, "namespace": NS, "value": True, "raw": None,
                               "source": "default", "editable": None, "description": "",
                               "meaning": setting_view.MEANING[True]}
    code, out, _ = run(FakeAPI(None), ["setting", "status"])
    assert code == 0 and "does not exist" in out and "on (true)" in out


@pytest.mark.parametrize("fmt,load", [("json", json.loads), ("yaml", yaml.safe_load)])
def test_status_machine_output(run, fmt, load):
    code, out, _ = run(FakeAPI(_setting_obj("t", editable=False)), ["setting", "status", "-o", fmt])
    assert code == 0
    assert load(out) == {"apiVersion": "kubectl-kvcache/v1alpha1", "kind": "SettingStatus", "name": NAME, "namespace": NS, "value": True, "raw": "t",
                         "source": "cluster", "editable": False, "description": "Hand the dtype to the engine",
                         "meaning": setting_view.MEANING[True]}


def test_status_unreadable_value_is_a_finding(run):
    code, out, err = run(FakeAPI(_setting_obj("yes")), ["setting", "status"])
    assert code == 1 and "unreadable" in out and "'yes'" in err


def test_status_resolves_the_version_through_discovery(run):
    api = FakeAPI(_setting_obj("true"), setting_version="v2beta1")
    code, _, _ = run(api, ["setting", "status"])
    assert code == 0
    assert f"/apis/gpustack.ai/v2beta1/namespaces/{NS}/settings/{NAME}" in [c.path for c in api.calls]
    assert not any("/v1/" in c.path for c in api.calls if "settings" in c.path)


@pytest.mark.parametrize("action", ["status", "on", "off"])
def test_setting_api_not_served(run, action):
    code, out, err = run(FakeAPI(_setting_obj(), served=("worker.gpustack.ai",)), ["setting", action, "--yes"]
                         if action != "status" else ["setting", action])
    assert code == 2 and out == ""
    line = _one_error_line(err)
    assert "settings.gpustack.ai" in line and "not served" in line and "gpustack.ai" in line


def test_status_forbidden_names_get(run):
    code, _, err = run(FakeAPI(_setting_obj(), forbidden={("GET", "settings")}), ["setting", "status"])
    assert code == 2
    line = _one_error_line(err)
    assert "cannot get settings.gpustack.ai" in line and NS in line


# -- CLI: on/off --------------------------------------------------------------------------------

def test_off_with_yes_patches_only_spec_value_guarded_by_resource_version(run):
    api = _cluster_api()
    code, out, err = run(api, ["setting", "off", "--yes", "--kubeconfig", "/k/conf", "--context", "c1",
                               "--as", "bob"])
    assert code == 0, err
    patch, = api.patches
    assert patch.body == {"metadata": {"resourceVersion": "100"}, "spec": {"value": "false"}}
    assert patch.content_type == "application/merge-patch+json"
    assert patch.query == {"fieldManager": "kubectl-kvcache"}
    assert api.setting["spec"]["value"] == "false"
    assert "3 pool-attached ModelDeployments (5 replicas) in 2 namespaces" in out
    assert "2 Pods opted into injection" in out and "in 2 namespaces" in out
    assert "within about 30 s" in out and "next reconcile" in out
    assert "status.value still reports true" in out
    assert "To undo: kubectl kvcache setting on --yes --kubeconfig /k/conf --context c1 --as bob" in out
    assert "Turn the Setting" not in err      # --yes: no question


def test_on_reports_the_read_back_value_and_custom_field_manager(run):
    api = _cluster_api(setting=_setting_obj("False"), operator="at-once")
    code, out, _ = run(api, ["setting", "on", "--yes", "--field-manager", "ops-team"])
    assert code == 0
    assert api.patches[0].body["spec"] == {"value": "true"}
    assert api.patches[0].query == {"fieldManager": "ops-team"}
    assert "status.value reports true (on)" in out
    assert "To undo: kubectl kvcache setting off --yes --field-manager ops-team" in out


def test_blast_radius_lists_cluster_wide_and_paged(run):
    api = _cluster_api()
    code, out, _ = run(api, ["setting", "off", "--yes", "--chunk-size", "1"])
    assert code == 0
    patched = next(n for n, c in enumerate(api.calls) if c.method == "PATCH")
    before = api.calls[:patched]        # after it, the undo's gate reads check -A (paged the same)
    md_pages = [c for c in before if c.path.endswith("/modeldeployments")]
    # the blast radius's list, then `off`'s read of the replicas whose KV cache the roll changes
    # (judge/capacity: one snapshot of every namespace), each paged by --chunk-size
    assert len(md_pages) == 8 and all(c.query["limit"] == "1" for c in md_pages)
    assert [c.path for c in md_pages][0] == f"/apis/{GROUP}/{VERSION}/modeldeployments"
    pod_lists = [c for c in before if c.path == "/api/v1/pods"]
    assert "kvcache.gpustack.ai/inject=true" in {c.query.get("labelSelector") for c in pod_lists}
    assert all(c.query.get("labelSelector") for c in pod_lists)     # never every Pod of the cluster
    assert "3 pool-attached ModelDeployments (5 replicas) in 2 namespaces" in out


def test_blast_radius_that_cannot_be_read_is_unknown_not_fatal(run):
    api = _cluster_api(forbidden={("GET", "modeldeployments")})
    code, out, _ = run(api, ["setting", "off", "--yes"])
    assert code == 0 and "pool-attached ModelDeployments: unknown (forbidden" in out
    assert len(api.patches) == 1


def test_without_a_terminal_and_without_yes_it_refuses(run):
    api = _cluster_api()
    code, out, err = run(api, ["setting", "off"], stdin=io.StringIO("y\n"))
    assert code == 2
    line = _one_error_line(err)
    assert "not a terminal" in line and "--yes" in line
    assert api.patches == [] and api.setting["spec"]["value"] == "true"
    assert "pool-attached ModelDeployments" in out     # the blast radius was still shown first


@pytest.mark.parametrize("answer", ["y\n", "yes\n", "Y\n", " YES \n"])
def test_terminal_confirmation_yes(run, answer):
    api = _cluster_api()
    code, out, err = run(api, ["setting", "off"], stdin=TTY(answer))
    assert code == 0 and "Turn the Setting off? [y/N]" in err and "Turn the Setting" not in out
    assert len(api.patches) == 1


@pytest.mark.parametrize("answer", ["n\n", "\n", "", "yep\n"])
def test_terminal_confirmation_anything_else_cancels(run, answer):
    # declining is the user's choice, not a failure: exit 1 ("not done"), no error line, nothing sent
    api = _cluster_api()
    code, out, err = run(api, ["setting", "off"], stdin=TTY(answer))
    assert code == 1 and "Cancelled: the Setting was not changed." in err and "error:" not in err
    assert api.patches == [] and "To undo" not in out


def test_dry_run_client_sends_no_patch(run):
    api = _cluster_api()
    code, out, _ = run(api, ["setting", "off", "--dry-run"])
    assert code == 0 and api.patches == [] and all(c.method == "GET" for c in api.calls)
    assert '{"metadata": {"resourceVersion": "100"}, "spec": {"value": "false"}}' in out
    assert "application/merge-patch+json" in out and "nothing was sent" in out
    assert "3 pool-attached ModelDeployments" in out
    code, out, _ = run(api, ["setting", "off", "--dry-run=client"])
    assert code == 0 and api.patches == []


def test_dry_run_server_needs_no_confirmation_and_persists_nothing(run):
    api = _cluster_api()
    code, out, err = run(api, ["setting", "off", "--dry-run=server"])   # no terminal, no --yes
    assert code == 0, err
    patch, = api.patches
    assert patch.query == {"fieldManager": "kubectl-kvcache", "dryRun": "All"}
    assert patch.body == {"metadata": {"resourceVersion": "100"}, "spec": {"value": "false"}}
    assert api.setting["spec"]["value"] == "true" and api.setting["metadata"]["resourceVersion"] == "100"
    assert "accepted" in out and "nothing was persisted" in out


@pytest.mark.parametrize("raw", FALSE_SPELLINGS)
def test_already_off_changes_nothing(run, raw):
    api = _cluster_api(setting=_setting_obj(raw))
    code, out, _ = run(api, ["setting", "off"])      # no terminal needed: nothing to do
    assert code == 0 and "already off" in out and api.patches == []
    assert not any(c.path.endswith("modeldeployments") for c in api.calls)


def test_already_on_when_status_value_unset(run):
    api = _cluster_api(setting=_setting_obj(None, spec=None))
    api.setting["spec"] = {}
    code, out, _ = run(api, ["setting", "on"])
    assert code == 0 and "already on" in out and api.patches == []


def test_a_pending_opposite_spec_value_is_patched_back(run):
    api = _cluster_api(setting=_setting_obj("true", spec="false"))
    code, _, _ = run(api, ["setting", "on", "--yes"])
    assert code == 0 and api.patches[0].body["spec"] == {"value": "true"}


@pytest.mark.parametrize("action", ["on", "off"])
def test_not_editable_is_refused(run, action):
    api = _cluster_api(setting=_setting_obj("true" if action == "off" else "false", editable=False))
    code, _, err = run(api, ["setting", action, "--yes"])
    assert code == 2 and "not editable" in _one_error_line(err) and api.patches == []


@pytest.mark.parametrize("action", ["on", "off"])
def test_missing_setting_object_for_on_off(run, action):
    api = _cluster_api(setting=None)
    code, out, err = run(api, ["setting", action, "--yes"])
    line = _one_error_line(err)
    assert code == 2 and out == "" and "does not exist" in line and "operator" in line
    assert api.patches == []


def test_conflict_when_the_object_changed_between_read_and_patch(run):
    api = _cluster_api()
    api.before_patch = FakeAPI.bump            # a concurrent writer
    code, out, err = run(api, ["setting", "off", "--yes"])
    assert code == 2
    line = _one_error_line(err)
    assert line.startswith("error: conflict:") and "re-run to see the new state" in line
    assert api.setting["spec"]["value"] == "true"       # not overwritten
    assert "To undo" not in out


def test_conflict_is_a_conflict_error_from_the_flow():
    api = _cluster_api()
    api.before_patch = FakeAPI.bump
    opts = _opts(yes=True, dry_run="none", wait=False)
    with pytest.raises(Conflict, match="changed since it was read"):
        setting_cmd.run_toggle(FakeClient(api), opts, io_streams(), False)


def test_forbidden_patch_names_verb_resource_and_namespace(run):
    api = _cluster_api(forbidden={("PATCH", "settings")})
    code, _, err = run(api, ["setting", "off", "--yes"])
    line = _one_error_line(err)
    assert code == 2 and line.startswith("error: forbidden:")
    assert "patch settings.gpustack.ai" in line and "gpustack-system" in line
    assert "needs RBAC verb patch on settings.gpustack.ai in namespace gpustack-system" in line


def io_streams(stdin=""):
    from kubectl_kvcache.cli.flows import IO

    return IO(io.StringIO(stdin), io.StringIO(), io.StringIO())


def _fake_time():
    now = [0.0]
    return (lambda s: now.__setitem__(0, now[0] + s)), (lambda: now[0])


def test_wait_polls_until_status_reports_the_new_value():
    api = _cluster_api(operator=3)
    sleep, clock = _fake_time()
    opts = _opts(yes=True, dry_run="none", wait=True, timeout=60.0)
    streams = io_streams()
    code = setting_cmd.run_toggle(FakeClient(api), opts, streams, False, sleep, clock)
    assert code == 0
    assert "status.value reports false (off)" in streams.stdout.getvalue()
    assert "Waiting for status.value" in streams.stderr.getvalue()
    assert clock() == pytest.approx(2.0)     # two polls missed, the third saw it


def test_wait_times_out_with_a_clear_message():
    api = _cluster_api()                      # no operator: status never follows
    sleep, clock = _fake_time()
    opts = _opts(yes=True, dry_run="none", wait=True, timeout=5.0)
    streams = io_streams()
    code = setting_cmd.run_toggle(FakeClient(api), opts, streams, False, sleep, clock)
    assert code == 1            # not done yet, as verify --wait's timeout (issue 39 item 6); was exit 2
    assert "timed out after 5s waiting for status.value to report 'false'" in streams.stderr.getvalue()
    assert clock() == pytest.approx(5.0)
    assert api.setting["spec"]["value"] == "false"


def test_wait_timeout_through_the_cli(run, monkeypatch):
    monkeypatch.setattr(setting_cmd, "POLL_SECONDS", 0.01)
    code, out, err = run(_cluster_api(), ["setting", "off", "--yes", "--wait", "--timeout", "50ms"])
    assert code == 1 and "timed out after 0.05s" in _one_error_line(err, after=1)
    assert "patched" in out


def test_interrupt_during_wait_says_the_patch_is_applied():
    api = _cluster_api()

    def sleep(_):
        raise KeyboardInterrupt

    opts = _opts(yes=True, dry_run="none", wait=True, timeout=60.0)
    streams = io_streams()
    with pytest.raises(KeyboardInterrupt):
        setting_cmd.run_toggle(FakeClient(api), opts, streams, False, sleep, lambda: 0.0)
    assert "spec.value is patched to 'false'" in streams.stderr.getvalue()
    assert api.setting["spec"]["value"] == "false"


def test_wait_through_the_cli(run, monkeypatch):
    monkeypatch.setattr(setting_cmd, "POLL_SECONDS", 0.001)
    code, out, _ = run(_cluster_api(operator=2), ["setting", "off", "--yes", "--wait"])
    assert code == 0 and "status.value reports false (off)" in out


def test_invalid_timeout_fails_before_any_request(run):
    api = _cluster_api()
    code, _, err = run(api, ["setting", "off", "--yes", "--wait", "--timeout", "soon"])
    assert code == 2 and "--timeout" in _one_error_line(err) and api.calls == []


def test_token_is_not_echoed_in_the_undo_command(run):
    code, out, err = run(_cluster_api(), ["setting", "off", "--yes", "--token", "s3cr3t"])
    assert code == 0 and "s3cr3t" not in out + err and "$KVCACHE_TOKEN" in out


def test_results_on_stdout_diagnostics_on_stderr(run):
    code, out, err = run(_cluster_api(), ["setting", "off", "--yes", "--wait", "--timeout", "0.001s"])
    assert code == 1 and "error:" not in out and "Setting" in out and err.startswith("Waiting")


def test_only_spec_value_and_the_precondition_are_ever_sent(run):
    """Every PATCH any path of the command sends (FakeAPI asserts the same on each one)."""
    sent = []
    for argv, stdin in ((["setting", "off", "--yes"], None), (["setting", "on", "--yes"], None),
                        (["setting", "off", "--dry-run=server"], None), (["setting", "off"], TTY("y\n"))):
        api = _cluster_api(setting=_setting_obj("true" if "off" in argv else "false", rv="42"))
        assert run(api, argv, stdin)[0] == 0
        sent += [c.body for c in api.patches]
    assert len(sent) == 4
    for body in sent:
        assert body == {"metadata": {"resourceVersion": "42"}, "spec": {"value": body["spec"]["value"]}}


def test_patch_merge_sends_a_merge_patch():
    api = FakeAPI(_setting_obj("true"))
    client = FakeClient(api)
    path = f"/apis/gpustack.ai/v1/namespaces/{NS}/settings/{NAME}"
    client.patch_merge(path, setting.patch_body("100", False), field_manager="fm", dry_run=True)
    call, = api.patches
    assert call.content_type == "application/merge-patch+json"
    assert call.query == {"fieldManager": "fm", "dryRun": "All"}


def test_setting_without_action_is_a_usage_error(run):
    code, _, err = run(FakeAPI(), ["setting"])
    assert code == 2 and "needs an action" in err


def test_a_setting_without_resource_version_is_not_patched_unguarded(run):
    api = _cluster_api()
    del api.setting["metadata"]["resourceVersion"]
    code, _, err = run(api, ["setting", "off", "--yes"])
    assert code == 2 and "resourceVersion" in _one_error_line(err) and api.patches == []


def test_wait_is_ignored_on_dry_runs(run):
    api = _cluster_api()
    code, _, err = run(api, ["setting", "off", "--dry-run", "--wait"])
    assert code == 0 and "--wait has no effect with --dry-run" in err and api.patches == []


# -- during a recovery ----------------------------------------------------------------------------

def test_on_during_a_recovery_says_so_and_takes_the_recoverys_mark_away(run):
    """The Setting carries a recovery's mark (it turned it off), and another recovery's record is
    held by a running run: `setting on` says both on stderr before it asks, turns it on (the gate
    still judges), and its patch removes the mark (a resume no longer turns it on for the user)."""
    import json as _json

    setting = _setting_obj("false")
    setting["metadata"]["annotations"] = {"kvcache.gpustack.ai/turned-off-by-recovery":
                                          "KVCachePoolBinding llm-prod/sgl-fp8 uid u1"}
    api = _cluster_api(setting=setting, operator="at-once")
    held = {"binding": {"namespace": "team", "name": "b", "uid": "u2"}, "target": {}, "finished": False,
            "holder": {"id": "x", "agent": "kubectl-kvcache/1", "host": "laptop", "pid": 7, "since": "t"},
            "expires": "2999-01-01T00:00:00Z"}
    api.configmaps = [{"metadata": {"name": "kvcache-recover-b", "namespace": "team"},
                       "data": {"recovery.json": _json.dumps(held)}},
                      {"metadata": {"name": "kvcache-recover-c", "namespace": "team"},     # finished: not said
                       "data": {"recovery.json": _json.dumps(dict(held, finished=True))}},
                      {"metadata": {"name": "kvcache-recover-d", "namespace": "team"},     # not a record: not said
                       "data": {"recovery.json": "{"}}]
    code, out, err = run(api, ["setting", "on", "--yes"])
    assert code == 0, err
    assert ("note: the Setting was turned off by the recovery of KVCachePoolBinding llm-prod/sgl-fp8 uid u1 "
            "(annotation kvcache.gpustack.ai/turned-off-by-recovery)") in err
    assert "a recovery is running: ConfigMap team/kvcache-recover-b (kubectl-kvcache/1 on host laptop pid 7" in err
    assert "kvcache-recover-c" not in err and "kvcache-recover-d" not in err
    assert api.patches[0].body == {"metadata": {"resourceVersion": "100", "annotations": {
        "kvcache.gpustack.ai/turned-off-by-recovery": None}}, "spec": {"value": "true"}}


def test_without_a_recovery_nothing_is_said_and_a_forbidden_list_is_no_error(run):
    api = _cluster_api(setting=_setting_obj("false"), operator="at-once", forbidden={("GET", "configmaps")})
    code, out, err = run(api, ["setting", "on", "--yes"])
    assert code == 0, err
    assert "recovery" not in err
    assert api.patches[0].body == {"metadata": {"resourceVersion": "100"}, "spec": {"value": "true"}}


def test_recover_help_names_each_output_format_once(capsys):
    """issue 39 item 7: `recover --help` listed markdown twice, with two meanings."""
    from kubectl_kvcache.cli import app

    try:
        app.main(["recover", "--help"])
    except SystemExit:
        pass
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("markdown:") == 1, out


@pytest.mark.parametrize("command", ["verify", "check", "bindings", "roles", "setting", "recover"])
def test_help_fits_80_columns(command, capsys, monkeypatch):
    """issue 39 item 5: a help example 99 columns wide wrapped in an 80-column terminal."""
    from kubectl_kvcache.cli import app

    monkeypatch.setenv("COLUMNS", "80")
    try:
        app.main([command, "--help"])
    except SystemExit:
        pass
    wide = [line for line in capsys.readouterr().out.splitlines() if len(line) > 80]
    assert not wide, wide
