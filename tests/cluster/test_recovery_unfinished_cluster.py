"""issue 48 item 5: a recovery stopped part-way is named by verify, check and bindings until it is
done, on the real API server with the operator stand-in (operator_standin.py) playing the operator,
in the README's demo scene (examples/change-window: the Setting off, sgl-fp8 rejected by SGLang
0.5.18).

`recover --apply` runs in this process and is stopped (Ctrl-C) right after it created the new
ModelDeployment, as tests/cluster/test_recover_cluster.py's Interrupt stops it: the old deployment
still serves, the new one rolls, every replica runs (the Setting is off), so a rollout alone looks
complete. Before issue 48, `verify --wait` said "rollout complete" and `verify` exit 0 there.
Then the command the finding names continues the recovery; the recovery ends with the Setting off,
and its last lines say so with the one command accepted now, decided by the gate `setting on` asks:
`check -A -o describe` while another namespace's rejected Binding holds the gate (and `setting on`
is indeed refused then), `setting on` once that one is recovered too (and it is accepted)."""

import io
import json
import os
import shlex
import sys

import pytest

from kubectl_kvcache import cli
from kubectl_kvcache.operator.api import GROUP, VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENE = os.path.join(ROOT, "examples", "change-window")
API = f"/apis/{GROUP}/{VERSION}"
SETTING = "/apis/gpustack.ai/v1/namespaces/gpustack-system/settings/model-deployment-kv-cache-dtype-owned"
NS = "llm-prod"
RESUME = f"kubectl kvcache recover sgl-fp8 -n {NS} --apply"


@pytest.fixture(scope="module")
def demo(cluster_binaries):
    """A cluster of its own, as `scripts/demo-cluster up` gives one: the end of a recovery asks the
    gate about the whole cluster, so other tests' objects must not be in it."""
    harness = sys.modules["kvcache_test_harness"]
    c = harness.Cluster(cluster_binaries, with_crds=True, name="kvcache-unfinished")
    try:
        c.start()
    except harness.ClusterError as e:
        pytest.fail(f"could not start the cluster: {e}", pytrace=False)
    try:
        yield c
    finally:
        c.stop()


def _binding(ns, name, domain, dtype):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding", "metadata": {"name": name, "namespace": ns},
            "spec": {"poolRef": {"name": "shared-dram"}, "quotaCeiling": "10Gi",
                     "domain": {"name": domain, "blockSize": 64, "dtype": dtype}}}


def _deployment(ns, name, binding):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"engine": {"name": "sglang", "version": "0.5.18"}, "model": {"name": "Qwen/Qwen3-8B"},
                     "kvCache": {"poolRef": {"name": binding}},
                     "roles": [{"name": "server", "kind": "server", "replicas": 1, "instanceType": "gpu"}]}}


def run(cluster, *argv):
    """The plugin in this process (so recover can be stopped at a chosen step), as a user runs it."""
    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = cluster.admin_kubeconfig
    try:
        code = cli.main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    finally:
        if old is None:
            os.environ.pop("KUBECONFIG")
        else:
            os.environ["KUBECONFIG"] = old
    return code, out.getvalue(), err.getvalue()


def stop_after_the_new_deployment(monkeypatch):
    """Ctrl-C right after the step that creates the new ModelDeployment."""
    from kubectl_kvcache.cli.flows import recover as flow

    execute = flow.Executor.execute
    stopped = []

    def execute_then_stop(executor, n, step):
        outcome = execute(executor, n, step)
        if step.action == "create" and step.object["kind"] == "ModelDeployment":
            stopped.append((n, len(executor.steps)))
            raise KeyboardInterrupt
        return outcome
    monkeypatch.setattr(flow.Executor, "execute", execute_then_stop)
    monkeypatch.setattr(flow, "POLL_SECONDS", 0.1)
    return stopped


def test_an_unfinished_recovery_fails_verify_wait_check_and_bindings_until_it_is_continued(demo, monkeypatch,
                                                                                            tmp_path):
    cluster = demo
    cluster.load_examples(SCENE)
    # another team's namespace with a Binding SGLang 0.5.18 rejects too: while it is there, the gate
    # `setting on` asks refuses (check -A finds an error that turning the Setting on causes)
    other = cluster.new_namespace("team")
    cluster.apply([_binding(other, "team-fp8", "team", "fp8"), _deployment(other, "team-sgl", "team-fp8")])
    monkeypatch.chdir(tmp_path)
    with cluster.operator_standin([NS, other]) as standin:
        code, out, err = run(cluster, "verify", "-n", NS, "--wait", "--timeout", "2m")
        assert code == 0 and "rollout complete" in err, out + err      # the Setting off: every replica runs

        stopped = stop_after_the_new_deployment(monkeypatch)
        code, out, err = run(cluster, "recover", "sgl-fp8", "-n", NS, "--apply", "--yes", "--timeout", "60s")
        assert code == 130 and stopped, out + err
        step, total = stopped[0]
        monkeypatch.undo()
        monkeypatch.chdir(tmp_path)
        at = f"it stopped at step {step} of {total} (Create ModelDeployment {NS}/sgl-"

        # verify: every replica may be OK, the run is not: exit 1, in the table's last lines and in json
        code, out, err = run(cluster, "verify", "-n", NS)
        assert code == 1, out + err
        last = err.strip().splitlines()[-2:]
        assert last[0].startswith("verdict: FAILED (exit code 1)") and \
            f"the recovery of KVCachePoolBinding {NS}/sgl-fp8 is unfinished: {at}" in last[0], err
        assert last[1] == f"next: continue it: {RESUME}", err
        code, out, _ = run(cluster, "verify", "-n", NS, "-o", "json")
        verdict = json.loads(out)["verdict"]
        assert code == 1 and verdict["result"] == "FAILED"
        (reason,) = [r for r in verdict["reasons"] if r["code"] == "recovery-unfinished"]
        assert reason["fix"] == f"continue it: {RESUME}" and reason["fails"] is True
        code, out, _ = run(cluster, "verify", "-n", NS, "-o", "junit")
        assert code == 1 and "recovery-unfinished" in out and "failures=\"0\"" not in out.split("\n", 3)[1]

        # verify --wait: the replicas roll to the end, but it never says "rollout complete"
        code, out, err = run(cluster, "verify", "-n", NS, "--wait", "--timeout", "2m")
        assert code == 1, out + err
        assert "rollout complete" not in err
        assert "the replicas followed are rolled, but the rollout is not done: a recovery stopped part-way" in err
        assert RESUME in err

        # check and bindings: an error finding about the Binding, with the command that continues it
        code, out, err = run(cluster, "check", "-n", NS, "-o", "json")
        assert code == 1, err
        (found,) = [f for f in json.loads(out)["findings"] if f["code"] == "recovery-unfinished"]
        assert (found["kind"], found["name"], found["severity"]) == ("KVCachePoolBinding", "sgl-fp8", "error")
        assert at in found["message"] and found["fix"] == f"continue it: {RESUME}"
        code, out, err = run(cluster, "bindings", "-n", NS)
        assert code == 1 and err.strip().splitlines()[-1].endswith(f"next: continue it: {RESUME}"), out + err

        # the command it names is accepted in that state, and continues the recovery to its end
        code, out, err = run(cluster, *shlex.split(RESUME)[2:], "--yes", "--timeout", "60s")
        assert code == 0, out + err
        assert "Recovery finished" in out
        # it ends with the Setting off: said last, with the one command accepted now, decided by the
        # gate `setting on` asks: the other team's rejected Binding holds it, so not `setting on`
        last = out.strip().splitlines()[-2:]
        assert last[0].startswith("The Setting is off, as it was before this recovery"), out
        assert last[1].startswith("Turning it on now is refused by its gate: check -A finds 1 error that turning "
                                  "it on causes; each with its fix: kubectl kvcache check -A -o describe"), out
        code, out, err = run(cluster, "setting", "on", "--yes")
        assert code == 1 and "refusing to turn the Setting on" in err, out + err   # the hint was right
        code, out, err = run(cluster, "check", "-A", "-o", "describe")
        assert code == 1 and f"kubectl kvcache recover team-fp8 -n {other}" in out, out + err

        # that team recovers too; its recovery ends with the Setting off and nothing holding the
        # gate: the command it names last is `setting on`, which is run and succeeds
        code, out, err = run(cluster, "recover", "team-fp8", "-n", other, "--apply", "--yes", "--timeout", "60s")
        assert code == 0, out + err
        last = out.strip().splitlines()[-2:]
        assert last[0].startswith("The Setting is off, as it was before this recovery"), out
        assert last[1].startswith("check -A finds no errors that turning it on causes: kubectl kvcache setting on "
                                  "--wait (asks first"), out
        hint = shlex.split(last[1].split(": ", 1)[1].split(" (asks first", 1)[0])
        code, out, err = run(cluster, *hint[2:], "--yes", "--timeout", "2m")
        assert code == 0, out + err
        assert cluster.request_ok("GET", SETTING)["status"]["value"] == "true"

        # done: nothing names it any more
        code, out, err = run(cluster, "verify", "-n", NS, "--wait", "--timeout", "2m")
        assert code == 0 and "rollout complete" in err, out + err
        code, out, err = run(cluster, "check", "-n", NS)
        assert code == 0, out + err
    assert standin.errors == []
