"""Replica accounting (NO-POD, Terminating, Pod state), the per-deployment progress, the rollout's
pure judgement (rollout.py), --fail-on, and the flag rules of --watch/--wait, on saved objects."""

import io
import json

import pytest

import objects as o
from kubectl_kvcache import cli
from kubectl_kvcache.judge import rollout
from kubectl_kvcache.judge import verify
from kubectl_kvcache.load import manifests
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.render import verify as view


def snapshot_of(*objs, tmp_path):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(*objs)))
    return manifests.load_files([str(path)], Scope())


def cli_run(argv, tmp_path, *objs):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(*objs)))
    out, err = io.StringIO(), io.StringIO()
    code = cli.main([a if a != "FILE" else str(path) for a in argv], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def two_replicas(*pods):
    return (o.binding("b1", "fp8"),
            o.deployment("md", roles=[{"name": "server", "kind": "server", "replicas": 2}]), *pods)


def terminating(pod):
    pod["metadata"]["deletionTimestamp"] = "2026-03-10T09:00:00Z"
    return pod


def status(pod, **state):
    cs = {"name": "main", "ready": state.get("ready", True), "restartCount": state.get("restarts", 0),
          "state": {"waiting": {"reason": state["waiting"]}} if state.get("waiting") else {"running": {}}}
    if "exit" in state:
        cs["lastState"] = {"terminated": {"exitCode": state["exit"]}}
    pod["status"] = {"phase": state.get("phase", "Running"), "containerStatuses": [cs]}
    return pod


def test_a_replica_without_a_pod_is_no_pod_and_not_ok(tmp_path):
    report = verify.verify(snapshot_of(*two_replicas(status(o.md_pod("md-server-0", "md", o.vllm_argv("fp8")))),
                                       tmp_path=tmp_path))
    assert [(i.pod, i.status) for i in report.items] == [("md-server-0", "OK"), (None, "NO-POD")]
    no_pod = report.items[1]
    assert no_pod.owner == {"kind": "ModelDeployment", "name": "md"} and no_pod.expected == "fp8"
    assert "replica 2 of 2 (spec.roles[0].replicas) has no Pod: 1 exists" in no_pod.reason
    d, = report.deployments
    assert (d.desired, d.counts[verify.DONE], d.counts[verify.TO_ROLL], d.counts[verify.NOT_CREATED],
            d.complete) == (2, 1, 0, 1, False)


def test_a_replica_without_a_pod_is_counted_as_what_it_is_not_to_roll(tmp_path):
    """Issue 48 item 7: a missing replica was counted "to roll" (nothing is there to roll); its
    count is its own, in the status's words, in the line and in -o json."""
    report = verify.verify(snapshot_of(*two_replicas(status(o.md_pod("md-server-0", "md", o.vllm_argv("fp8")))),
                                       tmp_path=tmp_path))
    d, = report.deployments
    assert report.items[1].progress == verify.NOT_CREATED
    assert view.deployment_line(d) == ("deployment team/md: 1/2 replicas run 'fp8', 0 to roll, "
                                       "1 without a Pod (NO-POD), 0 crash-looping")
    assert (d.to_dict()["toRoll"], d.to_dict()["notCreated"]) == (0, 1)


def test_a_deployment_with_no_pods_at_all_does_not_vanish(tmp_path):
    md = o.deployment("md")
    md["status"] = {"roles": [{"name": "server", "desired": 1, "ready": 0, "quotaReserved": 0,
                               "unmanaged": False, "kind": "server"}]}
    report = verify.verify(snapshot_of(o.binding("b1", "fp8"), md, tmp_path=tmp_path))
    item, = report.items
    assert item.status == "NO-POD" and "status.roles reports 1 desired, 0 ready" in item.reason
    assert report.deployments[0].roles[0].status.desired == 1


def test_replicas_default_to_one_and_zero_wants_none(tmp_path):
    zero = o.deployment("z", roles=[{"name": "server", "kind": "server", "replicas": 0}])
    unset = o.deployment("u", roles=[{"name": "server", "kind": "server"}])
    report = verify.verify(snapshot_of(o.binding("b1", "fp8"), zero, unset, tmp_path=tmp_path))
    assert [(i.deployment, i.status) for i in report.items] == [("u", "NO-POD")]
    assert [(d.name, d.desired, d.complete) for d in report.deployments] == [("u", 1, False), ("z", 0, True)]


def test_a_terminating_pod_is_judged_with_its_state_but_is_not_a_replica(tmp_path):
    old = terminating(status(o.md_pod("md-server-0", "md", o.vllm_argv(None))))
    new = status(o.md_pod("md-server-1", "md", o.vllm_argv("fp8")))
    report = verify.verify(snapshot_of(*two_replicas(old, new), tmp_path=tmp_path))
    assert [(i.pod, i.status, verify.state_label(i)) for i in report.items] == [
        ("md-server-0", "MISSING", "Terminating"), ("md-server-1", "OK", "Running"), (None, "NO-POD", None)]
    d, = report.deployments
    assert d.roles[0].pods == 1 and d.roles[0].terminating == 1
    assert view.deployment_line(d) == ("deployment team/md: 1/2 replicas run 'fp8', 1 to roll, "
                                       "1 without a Pod (NO-POD), 0 crash-looping (1 old Pod terminating)")


@pytest.mark.parametrize("pod, progress, label", [
    (status(o.md_pod("p", "md", o.vllm_argv("fp8"))), verify.DONE, "Running"),
    (status(o.md_pod("p", "md", o.vllm_argv("fp8")), ready=False), verify.TO_ROLL, "Running, not ready"),
    (status(o.md_pod("p", "md", o.vllm_argv("fp8")), phase="Pending"), verify.TO_ROLL, "Pending"),
    (status(o.md_pod("p", "md", o.vllm_argv(None))), verify.TO_ROLL, "Running"),
    (status(o.md_pod("p", "md", o.vllm_argv("fp8")), waiting="CrashLoopBackOff", exit=1, ready=False),
     verify.CRASHING, "CrashLoopBackOff (exit 1)"),
    (status(o.md_pod("p", "md", o.vllm_argv("fp8_e5m2"))), verify.STUCK, "Running"),
    (status(o.md_pod("p", "md", o.vllm_argv("bf16"))), verify.STUCK, "Running"),
    (status(o.md_pod("p", "md", o.vllm_argv("bf16")), exit=2, ready=False), verify.CRASHING,
     "Running, not ready (exit 2)"),
])
def test_how_a_replica_stands_in_the_rollout(pod, progress, label, tmp_path):
    report = verify.verify(snapshot_of(o.binding("b1", "fp8"), o.deployment("md"), pod, tmp_path=tmp_path))
    item, = report.items
    assert (item.progress, verify.state_label(item)) == (progress, label)


def test_json_state_of_a_crash_looping_pod(tmp_path):
    pod = status(o.md_pod("p", "md", o.vllm_argv("bf16")), waiting="CrashLoopBackOff", exit=2, ready=False,
                 restarts=4)
    report = verify.verify(snapshot_of(o.binding("b1", "bf16"), o.deployment("md"), pod, tmp_path=tmp_path))
    item = report.to_dict()["items"][0]
    assert item["state"] == {"phase": "Running", "terminating": False, "ready": False, "restarts": 4,
                             "waiting": "CrashLoopBackOff", "lastExitCode": 2}
    progress = rollout.progress(report)
    assert progress.outcome == rollout.REJECTED and [i.pod for i in progress.rejected] == ["p"]


def test_progress_and_changes_over_a_rollout(tmp_path):
    before = snapshot_of(*two_replicas(status(o.md_pod("md-server-0", "md", o.vllm_argv(None)))),
                         tmp_path=tmp_path)
    changes = rollout.Changes()
    first = verify.verify(before)
    assert [i.status for i in changes.update(first)] == ["MISSING", "NO-POD"]
    p = rollout.progress(first)
    assert (p.counts["MISSING"], p.counts["NO-POD"], p.done, p.total, p.outcome) == (1, 1, 0, 1, None)
    assert view.progress_line(p, 75) == "rollout: 1 MISSING, 1 NO-POD | deployments 0/1 done | 1m15s"
    assert changes.update(verify.verify(before)) == []          # nothing changed: no row
    after = snapshot_of(*two_replicas(status(o.md_pod("md-server-1", "md", o.vllm_argv("fp8"))),
                                      status(o.md_pod("md-server-2", "md", o.vllm_argv("fp8")))), tmp_path=tmp_path)
    done = verify.verify(after)
    assert [(i.pod, i.status) for i in changes.update(done)] == [("md-server-1", "OK"), ("md-server-2", "OK")]
    assert rollout.progress(done).outcome == rollout.COMPLETE


def test_injected_pods_are_listed_but_not_waited_for(tmp_path):
    pod = o.injected_pod("inj", "b1", containers=[o.container("main", args=["--kv-cache-dtype", "bf16"],
                                                               image="vllm/vllm-openai:v0.29.0")])
    report = verify.verify(snapshot_of(o.binding("b1", "fp8"), pod, tmp_path=tmp_path))
    assert [i.status for i in report.items] == ["REJECTED"]
    assert rollout.progress(report).outcome == rollout.COMPLETE and rollout.replicas(report) == []


def test_row_printer_keeps_the_first_widths(tmp_path):
    report = verify.verify(snapshot_of(*two_replicas(status(o.md_pod("md-server-0", "md", o.vllm_argv("fp8")))),
                                       tmp_path=tmp_path))
    out = io.StringIO()
    rows = view.RowPrinter(out)
    rows.emit(report.items)
    later = verify.verify(snapshot_of(*two_replicas(status(o.md_pod("md-server-1", "md", o.vllm_argv("fp8")))),
                                      tmp_path=tmp_path))
    rows.emit(later.items[:1])
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("NAMESPACE   POD") and len(lines) == 4
    assert [line.index("OK") for line in (lines[1], lines[3])] == [lines[0].index("STATUS")] * 2
    assert lines[2].split()[1] == "<no-pod:md>" and lines[2].rstrip().endswith("NO-POD")


class TTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_line_live_on_a_terminal_plain_when_piped():
    piped, tty = io.StringIO(), TTY()
    for err in (piped, tty):
        line = view.ProgressLine(err)
        line.show("rollout: 1 NO-POD | deployments 0/1 done | 0m00s")
        line.show("rollout: 1 NO-POD | deployments 0/1 done | 0m01s", tick=True)
        line.show("rollout: 1 OK | deployments 1/1 done | 0m02s")
        line.done()
    assert piped.getvalue().splitlines() == ["rollout: 1 NO-POD | deployments 0/1 done | 0m00s",
                                             "rollout: 1 OK | deployments 1/1 done | 0m02s"]
    assert tty.getvalue().count("\r\x1b[K") == 3 and tty.getvalue().endswith("0m02s\n")


def test_fail_on_chooses_the_statuses_that_fail(tmp_path):
    objs = two_replicas(status(o.md_pod("md-server-0", "md", o.vllm_argv("fp8"))))
    code, out, err = cli_run(["verify", "-f", "FILE"], tmp_path, *objs)
    assert code == 1 and "NO-POD" in out and "1 pod, 1 replica without a Pod: 1 OK, 1 NO-POD" in err
    assert cli_run(["verify", "-f", "FILE", "--fail-on", "rejected,MISMATCH,UNKNOWN"], tmp_path, *objs)[0] == 0
    assert cli_run(["verify", "-f", "FILE", "--fail-on", "NO-POD"], tmp_path, *objs)[0] == 1


def test_a_selector_on_the_operators_labels_accounts_the_roles_it_selects(tmp_path):
    """-l on the labels the operator gives a role's Pods lists every Pod of that role, so a
    replica without a Pod is one: the same verdict and exit code as -n gives."""
    objs = two_replicas(status(o.md_pod("md-server-0", "md", o.vllm_argv("fp8"))))
    plain = cli_run(["verify", "-f", "FILE", "-o", "json"], tmp_path, *objs)
    for selector in ("app.kubernetes.io/component=server", "app.kubernetes.io/instance=md",
                     "app.kubernetes.io/instance in (md,other),modeldeployment.gpustack.ai/role-kind=server"):
        code, out, _ = cli_run(["verify", "-f", "FILE", "-l", selector, "-o", "json"], tmp_path, *objs)
        report = json.loads(out)
        assert (code, out) == plain[:2], selector
        assert [i["status"] for i in report["items"]] == ["OK", "NO-POD"]
    code, out, _ = cli_run(["verify", "-f", "FILE", "-l", "app.kubernetes.io/instance=else", "-o", "json"],
                           tmp_path, *objs)
    assert json.loads(out)["deployments"] == [] and code == 1      # -l selected nothing: nothing verified (issue 48)
    assert [r["code"] for r in json.loads(out)["verdict"]["reasons"]] == ["nothing-found"]


def test_a_selector_on_other_labels_accounts_no_role(tmp_path):
    """A label the operator does not put on every Pod of a role: a Pod it skips may be a replica,
    so no replica is counted missing."""
    objs = two_replicas(status(o.md_pod("md-server-0", "md", o.vllm_argv("fp8"))))
    objs[2]["metadata"]["labels"]["team"] = "a"
    code, out, _ = cli_run(["verify", "-f", "FILE", "-l", "team=a", "-o", "json"], tmp_path, *objs)
    report = json.loads(out)
    assert code == 0 and report["deployments"] == [] and [i["status"] for i in report["items"]] == ["OK"]


def test_a_selected_deployment_whose_binding_is_missing_is_reported_not_nothing_found(tmp_path):
    """The orphan: a deployment naming a Binding that does not exist, no Pod (the operator cannot
    render one). -n and -l app.kubernetes.io/instance=orphan agree: exit 1, its line names the
    Binding, and it never says the Setting is off when it is on."""
    setting = {"apiVersion": "gpustack.ai/v1", "kind": "Setting",
               "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
               "spec": {"value": "true"}, "status": {"value": "true"}}
    objs = (o.binding("b1", "fp8"), o.deployment("orphan", binding_name="gone"), setting)
    for extra in ([], ["-l", "app.kubernetes.io/instance=orphan"]):
        code, out, err = cli_run(["verify", "-f", "FILE", *extra], tmp_path, *objs)
        assert code == 1, (extra, out, err)
        assert "NO-POD" in out and "No pool-attached" not in err
        # saved files: a Binding not in them is not known not to exist (verify's deployment line)
        assert "KVCachePoolBinding gone is not in the input" in err
        assert "does not exist" not in err
        assert "the Setting is off" not in err


@pytest.mark.parametrize("argv, message", [
    (["verify", "--fail-on", "OK,BOGUS"], "--fail-on: 'BOGUS' is not a status"),
    (["verify", "--wait", "-f", "x.json"], "cannot be used with -f/--filename"),
    (["verify", "--watch", "-n", "a", "pod-0"], "follow deployments, not Pods: name one as md/pod-0"),
    (["verify", "--wait", "-n", "a", "pod/pod-0"], "follow ModelDeployments: use md/NAME, not pod/"),
    (["verify", "--wait", "md/a", "-l", "a=b"], "md/NAME and -l/--selector cannot be used together"),
    (["verify", "--wait", "md/a", "-A"], "use -n, not -A"),
    (["verify", "--wait", "md/A_b"], "invalid ModelDeployment name 'A_b'"),
    (["verify", "md/a"], "md/a: md/NAME needs --watch or --wait"),
    (["verify", "pod/a"], "invalid Pod name 'pod/a'"),
    (["verify", "--watch", "-o", "csv"], "--watch prints rows as they come: use -o table or -o wide or -o json"),
    (["verify", "--timeout", "5m"], "--timeout needs --wait or --watch"),
    (["verify", "--wait", "--timeout", "soon"], "invalid duration 'soon' for --timeout"),
])
def test_flag_rules_are_one_error_line(argv, message):
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(argv, stdin=io.StringIO(""), stdout=out, stderr=err) == 2
    line, = err.getvalue().splitlines()
    assert line.startswith("error: ") and message in line and out.getvalue() == ""


def test_skip_workloads_does_not_read_templates_from_files_and_says_so(tmp_path):
    refused = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "team"},
               "spec": {"template": {"metadata": {"labels": {"kvcache.gpustack.ai/inject": "true"},
                                                  "annotations": {"kvcache.gpustack.ai/binding": "b1",
                                                                  "kvcache.gpustack.ai/engine": "vLLM"}},
                                     "spec": {"containers": [{"name": "c", "image": "vllm/vllm-openai:v0.29.0"}]}}}}
    code, out, err = cli_run(["check", "-f", "FILE"], tmp_path, o.binding("b1", "fp8"), refused)
    assert code == 1 and "injection-refused" in out
    code, out, err = cli_run(["check", "-f", "FILE", "--skip-workloads"], tmp_path, o.binding("b1", "fp8"), refused)
    assert code == 0 and "injection-refused" not in out
    assert "note: --skip-workloads: the Pod templates of Deployments" in err
    code, out, err = cli_run(["check", "-f", "FILE", "--skip-workloads", "-o", "json"], tmp_path,
                             o.binding("b1", "fp8"), refused)
    unchecked = [f for f in json.loads(out)["findings"] if f["code"] == "unchecked"]
    assert [(f["severity"], f["kind"], f["name"]) for f in unchecked] == [("warning", "Workloads", "--skip-workloads")]
    assert cli_run(["check", "-f", "FILE", "--skip-workloads", "--strict"], tmp_path, o.binding("b1", "fp8"))[0] == 1


def test_a_waiting_reason_with_control_characters_is_escaped(tmp_path):
    pod = status(o.md_pod("p", "md", o.vllm_argv("fp8")), waiting="Evil\x1b[2J", ready=False)
    report = verify.verify(snapshot_of(o.binding("b1", "fp8"), o.deployment("md"), pod, tmp_path=tmp_path))
    out = io.StringIO()
    view.RowPrinter(out, True).emit(report.items)
    assert "\x1b" not in out.getvalue() and "Evil^[[2J" in out.getvalue()     # as kubectl's EscapeTerminal


def test_a_no_pod_row_is_not_repeated_when_another_replica_appears(tmp_path):
    changes = rollout.Changes()
    three = o.deployment("md", roles=[{"name": "server", "kind": "server", "replicas": 3}])
    first = verify.verify(snapshot_of(o.binding("b1", "fp8"), three, tmp_path=tmp_path))
    assert [i.status for i in changes.update(first)] == ["NO-POD"] * 3
    second = verify.verify(snapshot_of(o.binding("b1", "fp8"), three,
                                       status(o.md_pod("md-server-0", "md", o.vllm_argv("fp8"))), tmp_path=tmp_path))
    assert [(i.pod, i.status) for i in changes.update(second)] == [("md-server-0", "OK")]


def test_a_role_asking_for_millions_of_replicas_is_one_summary_row():
    """Replicas are counted, not listed one by one past MAX_NO_POD_ROWS: a malformed or hostile
    `replicas` cannot make the plugin allocate a row per replica."""
    from kubectl_kvcache.judge import verify as judge
    from kubectl_kvcache.load import manifests
    from kubectl_kvcache.load.scope import Scope

    md = o.deployment("big", binding_name="b1", roles=[o.role(replicas=(1 << 31) - 1)])
    snap = manifests.snapshot_of([(x, "<test>", "") for x in (md, o.binding("b1", "fp8"))], Scope())
    report = judge.verify(snap)
    rows = [i for i in report.items if i.status == judge.NO_POD]
    assert len(rows) == judge.MAX_NO_POD_ROWS
    assert rows[-1].reason.startswith(f"replicas {judge.MAX_NO_POD_ROWS}-{(1 << 31) - 1} of {(1 << 31) - 1}")
    progress = report.deployments[0]
    assert progress.counts[judge.NOT_CREATED] == (1 << 31) - 1 and progress.counts[judge.TO_ROLL] == 0


# -- done means done: the Setting converged, every replica rendered from the spec as it is now ----------

def setting(spec, status_value):
    from kubectl_kvcache.operator import records
    return records.Setting(status_value, spec, True, "", False, "1", "cluster")


def off(tmp_path, *pods, roles=None):
    snap = snapshot_of(o.binding("b1", "fp8"), o.deployment("md", roles=roles), *pods, tmp_path=tmp_path)
    snap.setting = setting("false", "false")
    return snap


@pytest.mark.parametrize("argv, done", [
    (o.vllm_argv(None), True),                      # rolled back: the operator renders no flag
    (o.vllm_argv("fp8"), False),                    # still the operator's flag from when the Setting was on
    (o.vllm_argv("fp8", extra=["--kv-cache-dtype", "fp8_e5m2"]), False),    # the role's own flag after it
])
def test_with_the_setting_off_a_replica_carrying_the_operators_flag_has_not_rolled_back(argv, done, tmp_path):
    extra = ["--kv-cache-dtype", "fp8_e5m2"] if "fp8_e5m2" in argv else []
    roles = [{"name": "server", "kind": "server", "replicas": 1, **({"extraArgs": extra} if extra else {})}]
    report = verify.verify(off(tmp_path, status(o.md_pod("md-server-0", "md", argv)), roles=roles))
    item, = report.items
    assert item.status == "OK"                      # the engine starts: nothing is wrong with its value
    assert (item.progress == verify.DONE) == done and report.deployments[0].complete == done
    if not done:
        assert "still carries the operator's --kv-cache-dtype 'fp8' (command[3])" in item.stale
        assert "not rolled yet" in item.reason and item.to_dict()["notRolled"] == item.stale
        assert "0/1 replica runs as expected (nothing is expected: the Setting is off), 1 to roll" in \
            view.deployment_line(report.deployments[0])
    assert (rollout.progress(report).outcome == rollout.COMPLETE) == done


def test_with_the_setting_on_the_role_s_own_equal_flag_is_not_the_operator_s_render(tmp_path):
    """Its value is right (OK) but the operator renders its own pair too: it has not rolled."""
    roles = [{"name": "server", "kind": "server", "replicas": 1, "extraArgs": ["--kv-cache-dtype", "fp8"]}]
    pod = status(o.md_pod("md-server-0", "md", o.vllm_argv(None, extra=["--kv-cache-dtype", "fp8"])))
    report = verify.verify(snapshot_of(o.binding("b1", "fp8"), o.deployment("md", roles=roles), pod,
                                       tmp_path=tmp_path))
    item, = report.items
    assert item.status == "OK" and item.progress == verify.TO_ROLL
    assert "rendered before the Setting went on" in item.stale
    pod = status(o.md_pod("md-server-1", "md", o.vllm_argv("fp8", extra=["--kv-cache-dtype", "fp8"])))
    report = verify.verify(snapshot_of(o.binding("b1", "fp8"), o.deployment("md", roles=roles), pod,
                                       tmp_path=tmp_path))
    assert report.items[0].stale == "" and rollout.progress(report).outcome == rollout.COMPLETE


def test_a_rejected_replica_rendered_from_the_spec_as_it_is_now_is_settled(tmp_path):
    """The role's own rejected flag with the Setting off: rolling renders the same, the wait ends."""
    roles = [{"name": "server", "kind": "server", "replicas": 1, "extraArgs": ["--kv-cache-dtype", "bf16"]}]
    pod = status(o.md_pod("md-server-0", "md", o.vllm_argv(None, extra=["--kv-cache-dtype", "bf16"])),
                 ready=False)
    snap = off(tmp_path, pod, roles=roles)
    report = verify.verify(snap)
    assert report.items[0].status == "REJECTED" and report.items[0].stale == ""
    assert rollout.progress(report, snap.deployments).outcome == rollout.SETTLED


@pytest.mark.parametrize("setting_value, outcome", [("true", rollout.REJECTED), ("false", None)])
def test_a_confirmed_rejection_ends_the_wait_only_when_rolling_renders_it_again(setting_value, outcome, tmp_path):
    """SGLang 0.5.18 refuses 'fp8' and the replica already exited with code 2. With the Setting on it
    was rendered from the spec as it is now: the wait ends. After `setting off` the same crash-looping
    Pod is the old render the rollback replaces (its successor has no flag): the wait goes on."""
    sgl = o.deployment("md", engine="SGLang", version="0.5.18",
                       roles=[{"name": "server", "kind": "server", "replicas": 2}])
    old = o.md_pod("md-server-0", "md", o.sglang_argv("fp8"), exit_code=2, image="lmsysorg/sglang:v0.5.18")
    new = status(o.md_pod("md-server-1", "md", o.sglang_argv(None), image="lmsysorg/sglang:v0.5.18"))
    snap = snapshot_of(o.binding("b1", "fp8"), sgl, old, new, tmp_path=tmp_path)
    snap.setting = setting(setting_value, setting_value)
    report = verify.verify(snap)
    rejected = next(i for i in report.items if i.pod == "md-server-0")
    assert rejected.status == "REJECTED" and rejected.confirmed_rejected and rejected.progress == verify.CRASHING
    assert bool(rejected.stale) == (setting_value == "false")
    p = rollout.progress(report, snap.deployments, snap.setting)
    assert p.outcome == outcome and [i.pod for i in p.rejected] == (["md-server-0"] if outcome else [])


@pytest.mark.parametrize("spec, status_value, pending", [
    ("true", "false", True), ("false", "true", False), ("true", "true", None), (None, "false", None),
    ("yes", "false", None),                         # spec.value the operator refuses: nothing is pending
])
def test_nothing_is_done_before_the_setting_reports_what_its_spec_asks_for(spec, status_value, pending, tmp_path):
    snap = snapshot_of(o.binding("b1", "fp8"), o.deployment("md"),
                       status(o.md_pod("md-server-0", "md", o.vllm_argv(None))), tmp_path=tmp_path)
    snap.setting = setting(spec, status_value)
    report = verify.verify(snap)
    p = rollout.progress(report, snap.deployments, snap.setting)
    assert p.pending == pending
    if pending is not None:
        assert p.outcome is None and not p.complete
        assert f"| Setting: status.value not yet {'true' if pending else 'false'} |" in view.progress_line(p, 1)
        err = io.StringIO()
        view.wait_timeout(60, p, err)
        assert "spec.value asks for" in err.getvalue() and "status.value does not report it yet" in err.getvalue()
    else:
        assert "Setting:" not in view.progress_line(p, 1)


def test_a_setting_read_from_a_file_is_never_pending(tmp_path):
    from kubectl_kvcache.operator import records
    assert rollout.pending_value(records.Setting("false", "true", True, "", False, "1", "file")) is None


def test_a_followed_deployment_whose_binding_does_not_exist_ends_the_wait(tmp_path):
    snap = snapshot_of(o.binding("b1", "fp8"), o.deployment("orphan", binding_name="gone"), tmp_path=tmp_path)
    report = verify.verify(snap)
    p = rollout.progress(report, snap.deployments)
    assert p.outcome == rollout.UNBOUND and p.unbound == (("team", "orphan", "gone"),)
    row, = report.items
    assert row.status == "NO-POD" and "its Binding gone is not in the input" in row.reason
    assert "create KVCachePoolBinding gone in namespace team" in row.fix
    err = io.StringIO()
    view.wait_unbound(p.unbound, err)
    assert "ModelDeployment team/orphan names KVCachePoolBinding gone" in err.getvalue()


def test_a_live_progress_line_never_wraps_at_80_columns():
    """Issue 39 item 5: a live line longer than the terminal wraps, the next rewrite erases only its
    last row, and what stays reads as a cut line ("... deployments 0/2 don"). Every state fits."""
    import collections
    counts = collections.Counter({s: 1 for s in verify.STATUSES})
    counts["terminating"] = 3
    p = rollout.Progress(counts=counts, done=0, total=12, rejected=(), left=(), pending=True)
    full = view.progress_line(p, 601)
    assert len(full) > 80 and full.startswith("rollout: ")
    for width in (80, 60, 40):
        live = view.progress_line(p, 601, width)
        assert len(live) < width, (width, live)
        assert live.endswith("| 10m01s"), live
    assert "0/" in view.progress_line(p, 601, 80) and "done" in view.progress_line(p, 601, 80)
    assert view.progress_line(p, 601, 200) == full


def test_a_watch_prints_no_identical_row_and_a_deleted_pods_last_one(tmp_path):
    """Issue 39 item 5: a change in a field the table does not show (restarts, readiness: -o wide
    shows them) printed the same row again; a deleted Pod's row vanished without a line."""
    def report(restarts):
        pod = status(o.md_pod("md-server-0", "md", o.vllm_argv("fp8")), restarts=restarts)
        return verify.verify(snapshot_of(o.binding("b1", "fp8"), o.deployment("md"), pod, tmp_path=tmp_path))

    first, second = report(0), report(1)
    out, wide = io.StringIO(), io.StringIO()
    rows, wide_rows = view.RowPrinter(out), view.RowPrinter(wide, True)
    for r in (first, second):
        rows.emit(r.items)
        wide_rows.emit(r.items)
    assert len(out.getvalue().splitlines()) == 2                 # header, the row once
    assert len(wide.getvalue().splitlines()) == 3                # -o wide shows RESTARTS: printed again
    rows.emit([], gone=second.items)
    last = out.getvalue().splitlines()[-1]
    assert last.split()[1:3] == ["md-server-0", "b1"] and last.split()[-1] == "DELETED"
    assert "DELETED" not in out.getvalue().splitlines()[1]


def test_a_watch_lists_every_replica_first_and_a_moved_no_pod_row_not_again(tmp_path):
    three = o.deployment("md", roles=[{"name": "server", "kind": "server", "replicas": 3}])
    first = verify.verify(snapshot_of(o.binding("b1", "fp8"), three, tmp_path=tmp_path))
    second = verify.verify(snapshot_of(o.binding("b1", "fp8"), three,
                                       status(o.md_pod("md-server-0", "md", o.vllm_argv("fp8"))), tmp_path=tmp_path))
    out = io.StringIO()
    rows = view.RowPrinter(out)
    rows.emit(first.items)
    assert [ln.split()[-1] for ln in out.getvalue().splitlines()[1:]] == ["NO-POD"] * 3
    rows.emit(second.items)            # the NO-POD rows' slots moved; what the table shows did not
    assert [ln.split()[-1] for ln in out.getvalue().splitlines()[4:]] == ["OK"]


def test_watch_rows_say_when_they_were_seen_and_json_is_a_watch_event_a_line(tmp_path):
    """Issue 48 item 9: --watch rows had no time. The table's rows start with TIME (local clock,
    when the change was seen); -o json prints one watch event per line (type, RFC 3339 `time`,
    the row as -o json has it), -o yaml one document each."""
    import time as _time

    def report(dtype):
        pod = status(o.md_pod("md-server-0", "md", o.vllm_argv(dtype)))
        return verify.verify(snapshot_of(o.binding("b1", "fp8"), o.deployment("md"), pod, tmp_path=tmp_path))

    seen = iter([1_767_000_000.0, 1_767_000_042.0, 1_767_000_043.0])
    first, second = report(None), report("fp8")
    out = io.StringIO()
    rows = view.RowPrinter(out, clock=lambda: next(seen))
    rows.emit(first.items)
    rows.emit(second.items)
    header, a, b = out.getvalue().splitlines()
    assert header.split()[:3] == ["TIME", "NAMESPACE", "POD"]
    assert [a.split()[0], b.split()[0]] == [_time.strftime("%H:%M:%S", _time.localtime(t))
                                            for t in (1_767_000_000.0, 1_767_000_042.0)]
    assert a.split()[1:3] == ["team", "md-server-0"] and a.index("MISSING") == header.index("STATUS")
    assert b.index("OK") == header.index("STATUS")

    from kubectl_kvcache.render.output import Output

    for fmt in ("json", "yaml"):
        seen = iter([1_767_000_000.0, 1_767_000_042.0, 1_767_000_043.0])
        data = io.StringIO()
        printer = view.RowPrinter(data, Output(fmt), clock=lambda: next(seen))
        printer.emit(first.items)
        printer.emit(second.items)
        printer.emit([], gone=second.items)
        if fmt == "json":
            events = [json.loads(line) for line in data.getvalue().splitlines()]
        else:
            import yaml
            events = list(yaml.safe_load_all(data.getvalue()))
        assert [(e["type"], e["time"]) for e in events] == [("ADDED", "2025-12-29T09:20:00Z"),
                                                            ("MODIFIED", "2025-12-29T09:20:42Z"),
                                                            ("DELETED", "2025-12-29T09:20:43Z")]
        row = second.items[0].to_dict()        # named as -o json's items are (render/kubeobject.py)
        assert events[1]["object"] == {"apiVersion": "v1", "kind": "Pod",
                                       "metadata": {"name": row["pod"], "namespace": row["namespace"]}, **row}


@pytest.mark.parametrize("written, last, refused", [
    (None, "2026-12-05T10:05:00Z", True),                       # no managedFields: the event stands
    ("2026-12-05T10:00:00Z", "2026-12-05T10:05:00Z", True),     # said after the spec was written
    ("2026-12-05T10:05:00Z", "2026-12-05T10:05:00Z", True),     # the same second
    ("2026-12-05T10:06:00Z", "2026-12-05T10:05:00Z", False),    # the spec changed since: about an older spec
])
def test_a_refused_create_ends_the_wait_and_names_what_to_do(tmp_path, written, last, refused):
    """Issue 48 item 4: a deployment whose replicas the operator says it cannot create ended
    nowhere (`wait for the operator to create it` to the timeout); now its NO-POD rows quote it,
    the deployment carries it, and the wait's outcome is REFUSED, in verify's judgement and the
    live judge's alike. An event from before the spec was last written is not the spec's."""
    from kubectl_kvcache.judge import live
    from kubectl_kvcache.load.events import Refusal

    md = o.deployment("md")
    if written:
        md["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update", "time": written},
                                           {"manager": "op", "operation": "Update", "subresource": "status",
                                            "time": "2026-12-05T11:00:00Z"}]
    snap = snapshot_of(o.binding("b1", "fp8"), md, tmp_path=tmp_path)
    said = Refusal("team", "ModelDeployment", "md", "RenderFailed", 'role "server": has no runner backend', 3, last,
                   "gpustack-worker")
    snap.refusals = {("team", "ModelDeployment", "md"): said}
    report = verify.verify(snap)
    item, = report.items
    d, = report.deployments
    assert (d.refused is said) == refused and (rollout.progress(report).outcome == rollout.REFUSED) == refused
    assert ("the operator cannot create it: RenderFailed (x3, last " in item.reason) == refused
    assert item.fix.startswith("the operator cannot create it (RenderFailed)") == refused
    judge = live.LiveJudge(snap)
    assert (judge.progress().outcome == rollout.REFUSED) == refused
    assert judge.report().to_dict() == report.to_dict()
    if refused:
        assert "; the operator cannot create it: RenderFailed (x3" in view.deployment_line(d)
        assert d.to_dict()["createRefused"]["message"] == said.message


@pytest.mark.parametrize("extra, pods, setting, refused", [
    (["--kv-cache-dtype", "fp8_e5m2"], 0, "true", ("spec.roles[0].extraArgs[0]", "spec.roles[0].extraArgs[1]")),
    (["--kv_cache_dtype=fp8_e5m2"], 0, "true", ("spec.roles[0].extraArgs[0]",)),    # vLLM's spelling, one entry
    (["--kv-cache-dt=fp8"], 0, "true", ("spec.roles[0].extraArgs[0]",)),            # a prefix argparse resolves
    (["--kv-cache-dtype-skip-layers", "2"], 0, "true", None),                       # another flag
    (["--kv-cache-dtype", "fp8_e5m2"], 0, "false", None),                           # the Setting off refuses nothing
    (["--kv-cache-dtype", "fp8_e5m2"], 1, "true", None),                            # stored before: it has Pods
])
def test_a_deployment_with_no_pod_whose_spec_the_webhook_refuses_is_not_waited_for(tmp_path, extra, pods, setting,
                                                                                   refused):
    """Issue 48 item 4, the ModelDeployment webhook's half (model_deployment_kv_cache_dtype_test.go's
    rule, operator/webhooks.model_deployment_refusals): a deployment with no Pod at all whose spec
    the webhook refuses on create cannot get its replicas as the spec stands: the wait ends at once
    (REFUSED) with the entries to remove; one with Pods is judged by them."""
    from kubectl_kvcache.operator import records

    md = o.deployment("md", roles=[{"name": "server", "kind": "server", "replicas": 2, "extraArgs": extra}])
    objs = [o.binding("b1", "fp8"), md] + [status(o.md_pod(f"md-server-{n}", "md", o.vllm_argv("fp8", extra=extra)))
                                           for n in range(pods)]
    snap = snapshot_of(*objs, tmp_path=tmp_path)
    snap.setting = records.Setting(setting, setting, True, "", False, "1", "cluster")
    report = verify.verify(snap)
    d, = report.deployments
    assert (d.refused.removal if d.refused else None) == refused
    assert (rollout.progress(report).outcome == rollout.REFUSED) == bool(refused)
    if refused:
        no_pod = [i for i in report.items if i.status == verify.NO_POD]
        assert len(no_pod) == 2 and all("; its spec is refused: admission webhook" in i.reason for i in no_pod)
        assert no_pod[0].fix.startswith(f"remove {' and '.join(refused)} from ModelDeployment md")


@pytest.mark.parametrize("setting", ["true", "false"])
def test_a_deployment_with_no_pod_passing_an_owned_argument_is_refused_whatever_the_setting(tmp_path, setting):
    """gpustack/gpustack-operator model_deployment.go at 049325a5dfca3da815de7decdd4360bbb238ba15,
    validateModelDeploymentRoleExtraArgs (operator/webhooks.owned_arg_refusals): SGLang's
    disaggregation keys are refused on create whatever the Setting, so a deployment with no Pod
    passing them is not waited for."""
    from kubectl_kvcache.operator import records

    extra = ["--disaggregation-mode", "prefill", "--disaggregation-bootstrap-port=8998"]
    md = o.deployment("pd", engine="SGLang", version="0.5.19",
                      roles=[{"name": "prefill", "kind": "prefill", "replicas": 1, "extraArgs": extra}])
    snap = snapshot_of(o.binding("b1", "bf16"), md, tmp_path=tmp_path)
    snap.setting = records.Setting(setting, setting, True, "", False, "1", "cluster")
    report = verify.verify(snap)
    d, = report.deployments
    assert d.refused.removal == ("spec.roles[0].extraArgs[0]", "spec.roles[0].extraArgs[1]",
                                 "spec.roles[0].extraArgs[2]")
    assert "--disaggregation-mode, --disaggregation-bootstrap-port are set by the operator for this engine, " \
           "whatever the Setting" in d.refused.message
    assert rollout.progress(report).outcome == rollout.REFUSED
    no_pod, = [i for i in report.items if i.status == verify.NO_POD]
    assert no_pod.fix.startswith("remove spec.roles[0].extraArgs[0] and spec.roles[0].extraArgs[1] and "
                                 "spec.roles[0].extraArgs[2] from ModelDeployment pd (the operator sets")
