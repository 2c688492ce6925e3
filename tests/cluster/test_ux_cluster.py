"""The wording of `setting` against a real kube-apiserver: a patch the API server finds to be a
no-op (spec.value already asks for it, status.value not yet) says "unchanged", never
"resourceVersion N -> N"; a confirmation declined on a real terminal changes nothing and exits 1
without an error line. And live-cluster wording: no "not in the input" for a cluster."""

import io
import os
import pty
import subprocess
import sys
import time

import objects as o

from kubectl_kvcache import cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN = os.path.join(ROOT, "bin", "kubectl-kvcache")
NS, NAME = "gpustack-system", "model-deployment-kv-cache-dtype-owned"


def _setting(cluster, spec, status):
    cluster.delete("settings.gpustack.ai", NAME, "-n", NS)
    deadline = time.monotonic() + 10
    while cluster.kubectl("get", "settings.gpustack.ai", NAME, "-n", NS).returncode == 0:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting", "metadata": {"name": NAME, "namespace": NS},
                   "spec": {"value": spec}, "status": {"value": status, "editable": True}})
    return cluster.get("settings.gpustack.ai", NAME, namespace=NS)


def in_process(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_a_no_op_patch_says_unchanged(cluster):
    before = _setting(cluster, "false", "true")      # asked off already; the operator has not reported it
    code, out, err = in_process("setting", "off", "--yes", "--kubeconfig", cluster.admin_kubeconfig)
    rv = before["metadata"]["resourceVersion"]
    assert code == 0, err
    assert f"unchanged: spec.value was already 'false' (resourceVersion {rv})" in out
    assert f"{rv} -> {rv}" not in out
    assert cluster.get("settings.gpustack.ai", NAME, namespace=NS)["metadata"]["resourceVersion"] == rv
    _setting(cluster, "true", "true")


def _on_a_terminal(argv, answer, env, stderr_on_terminal=True):
    """The plugin with stdin (and stderr, as in a person's shell) on a real pseudo-terminal:
    (exit code, stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, PLUGIN] + argv, stdin=slave, stdout=subprocess.PIPE,
                         stderr=slave if stderr_on_terminal else subprocess.PIPE, env=env)
    os.close(slave)
    os.write(master, answer)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:         # EIO: the plugin exited, the terminal's other end is closed
            break
        if not chunk:
            break
        shown += chunk
    out, err = p.communicate(timeout=60)
    os.close(master)
    return p.returncode, out, shown if stderr_on_terminal else err


def test_declining_on_a_real_terminal_changes_nothing_and_exits_1(cluster):
    before = _setting(cluster, "true", "true")
    code, out, err = _on_a_terminal(["setting", "off", "--kubeconfig", cluster.admin_kubeconfig], b"n\n",
                                    cluster.env())
    assert code == 1, err
    assert b"Turn the Setting off? [y/N]" in err and b"Cancelled: the Setting was not changed." in err
    assert b"error:" not in err and b"To undo" not in out
    after = cluster.get("settings.gpustack.ai", NAME, namespace=NS)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_question_nobody_sees_is_not_asked(cluster):
    """`setting off 2>&1 | tail` (issue 39 item 6): stdin is the terminal, the question would go
    down a pipe; the plugin refuses at once instead of waiting on an answer nobody is asked for."""
    before = _setting(cluster, "true", "true")
    code, out, err = _on_a_terminal(["setting", "off", "--kubeconfig", cluster.admin_kubeconfig], b"",
                                    cluster.env(), stderr_on_terminal=False)
    assert code == 2 and b"standard error is not a terminal" in err and b"--yes" in err, err
    assert b"[y/N]" not in err
    after = cluster.get("settings.gpustack.ai", NAME, namespace=NS)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_live_cluster_is_not_called_the_input(cluster):
    ns = cluster.new_namespace("wording")
    _setting(cluster, "true", "true")
    cluster.apply([o.deployment("md", binding_name="gone", ns=ns, roles=[
        {"name": "server", "kind": "server", "extraArgs": ["--kv-cache-dtype", "fp8"]}])])
    code, out, err = in_process("roles", "-n", ns, "-o", "describe", "--kubeconfig", cluster.admin_kubeconfig)
    assert f"Binding gone was not found in namespace {ns}" in out and "in the input" not in out + err
