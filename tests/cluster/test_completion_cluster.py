"""Shell completion through the real kubectl (kubectl 1.26+ plugin completion: `kubectl __complete
kvcache ...` runs kubectl_complete-kvcache from PATH) against a real kube-apiserver: namespaces,
Pods and contexts come from the cluster and the kubeconfig; a server that never answers
completes nothing, within the short timeout, instead of hanging the shell."""

import os
import socket
import subprocess
import sys
import threading
import time

import objects as o
import pytest
import yaml

from kubectl_kvcache.cli.flows import completion as completion_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "bin")


def _plugin_path(tmp_path, shipped_script=False):
    """A PATH folder with this checkout's kubectl-kvcache and kubectl_complete-kvcache (the
    Python launcher, or the sh script shipped next to the binary, which asks kubectl-kvcache)."""
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    plugin = folder / "kubectl-kvcache"
    plugin.write_text(f"#!/bin/sh\nexec {sys.executable} {BIN}/kubectl-kvcache \"$@\"\n")
    plugin.chmod(0o755)
    helper = folder / "kubectl_complete-kvcache"
    if shipped_script:
        helper.write_text((open(os.path.join(BIN, "kubectl_complete-kvcache.sh")).read()))
    else:
        helper.write_text(f"#!/bin/sh\nexec {sys.executable} {BIN}/kubectl_complete-kvcache \"$@\"\n")
    helper.chmod(0o755)
    return str(folder)


def kubectl_complete(cluster, tmp_path, *words, kubeconfig=None, shipped_script=False, env_extra=None):
    env = cluster.env(kubeconfig)
    env["PATH"] = _plugin_path(tmp_path, shipped_script) + os.pathsep + cluster.bin_dir + os.pathsep + "/usr/bin:/bin"
    env.update(env_extra or {})
    p = subprocess.run([cluster.kubectl_path, "__complete", "kvcache", *words], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    return [line.split("\t", 1)[0] for line in lines[:-1]], lines[-1]


@pytest.fixture(scope="module")
def completion_namespace(cluster):
    ns = cluster.new_namespace("complete")
    cluster.apply([o.binding("chat-fp8", "fp8", ns=ns), o.binding("spare", "fp8", ns=ns, domain="spare"),
                   o.deployment("llama", binding_name="chat-fp8", ns=ns),
                   o.md_pod("llama-server-0", "llama", o.vllm_argv("fp8"), ns=ns),
                   o.md_pod("llama-server-1", "llama", o.vllm_argv("fp8"), ns=ns),
                   # a router Pod of the deployment: labelled and owned like a replica, but no role of
                   # its spec, so verify does not judge it (judge/verify._deployment_candidate)
                   o.md_pod("llama-router-0", "llama", ["router"], ns=ns, role="router"),
                   # a Pod of a deployment with no kvCache: not pool-attached, verify skips it
                   o.deployment("plain", binding_name=None, ns=ns),
                   o.md_pod("plain-server-0", "plain", o.vllm_argv(None), ns=ns),
                   o.injected_pod("notebook", "chat-fp8", ns=ns,
                                  containers=[o.container("main", command=["vllm", "serve", "m"], args=[])]),
                   {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "unrelated", "namespace": ns},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}}])
    return ns


def test_pods_of_the_typed_namespace_through_kubectl(cluster, completion_namespace, tmp_path):
    ns = completion_namespace
    names, directive = kubectl_complete(cluster, tmp_path, "verify", "-n", ns, "")
    # the Pods verify judges (a role replica of a pool-attached ModelDeployment, or opted into
    # injection): not the router, not a Pod of a deployment without a pool, not an unrelated Pod
    assert names == ["llama-server-0", "llama-server-1", "notebook"] and directive == ":4"
    code, out, _ = run_verify(cluster, ns)
    assert sorted(i["pod"] for i in out["items"] if i["pod"]) == names     # exactly the Pods verify lists
    names, _ = kubectl_complete(cluster, tmp_path, "verify", "--namespace", ns, "llama-server-0", "llama")
    assert names == ["llama-server-1"]       # a prefix, and a Pod already named is not offered again


def run_verify(cluster, ns):
    env = cluster.env()
    p = subprocess.run([sys.executable, os.path.join(BIN, "kubectl-kvcache"), "verify", "-n", ns, "-o", "json"],
                       capture_output=True, text=True, env=env, timeout=60)
    import json
    return p.returncode, json.loads(p.stdout), p.stderr


def test_the_shipped_sh_helper_asks_the_plugin(cluster, completion_namespace, tmp_path):
    names, directive = kubectl_complete(cluster, tmp_path, "verify", f"--namespace={completion_namespace}", "no",
                                        shipped_script=True)
    assert names == ["notebook"] and directive == ":4"


def test_namespaces_contexts_subcommands_and_flags(cluster, completion_namespace, tmp_path):
    names, _ = kubectl_complete(cluster, tmp_path, "check", "-n", "")
    assert completion_namespace in names and "gpustack-system" in names and "kube-system" in names
    names, _ = kubectl_complete(cluster, tmp_path, "check", "-n", completion_namespace[:8])
    assert completion_namespace in names and "kube-system" not in names
    names, _ = kubectl_complete(cluster, tmp_path, "roles", "--context", "")
    with open(cluster.admin_kubeconfig) as f:
        assert names == sorted(c["name"] for c in yaml.safe_load(f)["contexts"]) and names
    names, directive = kubectl_complete(cluster, tmp_path, "ver")
    assert names == ["verify", "version"] and directive == ":4"
    names, _ = kubectl_complete(cluster, tmp_path, "bindings", "--all")
    # the flags bindings takes that start so: kubectl get's own three (-A, --allow-missing-template-keys
    # for -o jsonpath/custom-columns) and --all-contexts
    assert names == ["--all-namespaces", "--allow-missing-template-keys", "--all-contexts"], names
    names, _ = kubectl_complete(cluster, tmp_path, "setting", "")
    assert names == ["status", "on", "off"]


def test_bindings_are_listed_from_the_cluster(cluster, completion_namespace):
    given = {"kubeconfig": cluster.admin_kubeconfig, "namespace": completion_namespace}
    assert completion_command.cluster_names("bindings", given) == ["chat-fp8", "spare"]


def test_a_cluster_that_refuses_completes_nothing(cluster, completion_namespace, tmp_path):
    names, directive = kubectl_complete(cluster, tmp_path, "verify", "-n", completion_namespace, "",
                                        kubeconfig=cluster.nobody_kubeconfig)
    assert names == [] and directive == ":4"


def test_a_server_that_never_answers_does_not_hang_the_shell(cluster, tmp_path):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    held = []
    stop = threading.Event()

    def accept():          # accept and say nothing, ever
        silent.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(silent.accept()[0])
            except OSError:
                pass
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    kubeconfig = tmp_path / "silent.kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: silent\n"
        f"clusters: [{{name: silent, cluster: {{server: 'http://127.0.0.1:{silent.getsockname()[1]}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: silent, context: {cluster: silent, user: u, namespace: x}}]\n")
    try:
        start = time.monotonic()
        names, directive = kubectl_complete(cluster, tmp_path, "verify", "-n", "x", "",
                                            kubeconfig=str(kubeconfig),
                                            env_extra={"KVCACHE_COMPLETION_TIMEOUT": "1"})
        elapsed = time.monotonic() - start
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        silent.close()
    assert names == [] and directive == ":4" and held      # it did ask, and got no answer
    assert elapsed < 15, elapsed                            # bounded by the timeout, not the server
