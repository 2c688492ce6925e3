"""Issue 48 items 3 and 5 against a real kube-apiserver: the Setting in flight, and the undo that
`setting off` prints.

The harness's Setting is a CRD with a status subresource standing in for the operator's aggregated
API; the test plays the operator (tests/cluster/operator_standin.py, which copies a valid
spec.value into status.value and renders the replicas) and holds it back where the operator has
not acted yet. The guide's own command (`kubectl patch ... --type merge -p
'{"spec":{"value":"false"}}'`, run with the real kubectl) writes spec.value; until the stand-in
writes status.value, the Setting is in flight. Before issue 48, `verify` right after it said
"2 OK", exit 0, `check` "already on", exit 0, and `setting status` exit 0."""

import json
import os
import subprocess
import sys

import objects as o

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NS, NAME = "gpustack-system", "model-deployment-kv-cache-dtype-owned"


def set_setting(cluster, value):
    """Spec and status at `value`: settled (as the other cluster tests leave it)."""
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting", "metadata": {"name": NAME, "namespace": NS},
                   "spec": {"value": value}, "status": {"value": value, "editable": True}})


def run(cluster, *argv, timeout=120):
    """The plugin as a user runs it (a separate process, stdin not a terminal)."""
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *argv, "--kubeconfig", cluster.admin_kubeconfig],
                       cwd=ROOT, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    return p.returncode, p.stdout, p.stderr


def seed(cluster, dtype="fp8", replicas=2):
    ns = cluster.new_namespace("inflight")
    cluster.apply([o.binding("b1", dtype, ns=ns),
                   o.deployment("chat", ns=ns, roles=[{"name": "server", "kind": "server", "instanceType": "nvidia-h100", "replicas": replicas}])],
                  with_status=False)
    return ns


def guide_patch(cluster, value):
    """The upgrade guide's own toggle, with the real kubectl: spec.value only."""
    cluster.kubectl("-n", NS, "patch", "setting", NAME, "--type", "merge", "-p",
                    json.dumps({"spec": {"value": value}}), check=True)


def test_a_setting_in_flight_fails_verify_check_and_status_until_the_operator_takes_it_in(cluster):
    set_setting(cluster, "true")
    ns = seed(cluster)
    standin = cluster.operator_standin([ns])
    try:
        assert standin.settle()                     # the replicas run the Binding's dtype: settled, OK
        code, out, err = run(cluster, "verify", "-n", ns)
        assert code == 0 and [line.split()[-1] for line in out.splitlines()[1:]] == ["OK", "OK"], out + err

        guide_patch(cluster, "false")              # spec.value asks off; status.value still reports true
        setting = cluster.get("settings.gpustack.ai", NAME, namespace=NS)
        assert setting["spec"]["value"] == "false" and setting["status"]["value"] == "true"

        code, out, err = run(cluster, "verify", "-n", ns, "-o", "json")
        assert code == 1, err
        data = json.loads(out)
        assert data["setting"]["inFlight"]["asks"] == "false" and data["setting"]["inFlight"]["reports"] == "true"
        assert [(i["status"], i["cause"]["code"]) for i in data["items"]] == [("UNKNOWN", "setting")] * 2
        assert [r["code"] for r in data["verdict"]["reasons"]] == ["setting-in-flight"]

        code, out, err = run(cluster, "check", "-n", ns)
        assert code == 1, err
        assert "setting-in-flight" in out and "already on" not in out
        assert "setting-in-flight" in err.splitlines()[-2]          # the verdict line names it

        code, out, err = run(cluster, "setting", "status")
        assert code == 1 and "in flight:" in out and "spec.value asks 'false' (off)" in out, out + err

        # --wait keeps waiting while the Setting is in flight (the operator is held): it times out, not done
        code, out, err = run(cluster, "verify", "-n", ns, "--wait", "--timeout", "3s")
        assert code == 1 and "timed out" in err and "the Setting is in flight" in err, err

        standin.reconcile()                         # the operator takes it in: status.value reports false
        setting = cluster.get("settings.gpustack.ai", NAME, namespace=NS)
        assert setting["status"]["value"] == "false"
        code, out, err = run(cluster, "setting", "status")
        assert code == 0 and "in flight" not in out, out + err
        code, out, err = run(cluster, "verify", "-n", ns, "-o", "json")
        data = json.loads(out)
        assert "inFlight" not in data["setting"] and data["verdict"]["reasons"] == []
        # settled, and not done: the rollback has only begun (the stand-in replaces one replica a pass)
        assert code == 1 and data["verdict"]["failing"] >= 1, out
        assert all(i["status"] != "UNKNOWN" for i in data["items"]), out
        assert standin.errors == []
    finally:
        set_setting(cluster, "true")


def test_the_undo_setting_off_prints_is_accepted_where_the_gate_refuses(cluster):
    """Issue 48 item 5: `setting off` because the Binding's spelling is rejected (vLLM 0.29.0 does
    not take bf16); the undo it prints is accepted as printed, and plain `setting on` is not."""
    set_setting(cluster, "true")
    ns = seed(cluster, dtype="bf16", replicas=1)
    standin = cluster.operator_standin([ns])
    try:
        assert standin.settle()
        code, out, err = run(cluster, "setting", "off", "--yes")
        assert code == 0, err
        undo = next(line for line in out.splitlines() if line.startswith("To undo: "))[len("To undo: "):].split()
        assert undo[:6] == ["kubectl", "kvcache", "setting", "on", "--yes", "--force"], out
        assert "binding-dtype-rejected" in out and "without it `setting on` refuses now" in out
        standin.reconcile()
        code, out, err = run(cluster, "setting", "on", "--yes")
        assert code == 1 and "refusing to turn the Setting on" in err, err
        code, out, err = run(cluster, *undo[2:])
        assert code == 0, err
        assert cluster.get("settings.gpustack.ai", NAME, namespace=NS)["spec"]["value"] == "true"
    finally:
        set_setting(cluster, "true")
