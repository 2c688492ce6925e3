"""Terminal escaping against a real kube-apiserver: control characters planted in a Pod's args and
annotations, a Binding's dtype, the Setting's status.description and the name asked for (echoed
in the server's error) reach the plugin's stdout/stderr escaped, as raw bytes on a real pipe;
`-o json` keeps them exactly."""

import json
import os
import re
import subprocess
import sys

import pytest

import objects as o

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGIN = os.path.join(REPO, "bin", "kubectl-kvcache")
NS = "escape-test"
SETTING = ("settings.gpustack.ai", "model-deployment-kv-cache-dtype-owned", "gpustack-system")
EVIL = "x\x1b]0;pwned\x07\x1b[2J\rFORGED row\nNEXT\tcol\x9b31m\u202eend"
SHORT = "f\x1b[5m\x07\r\n\u202e"          # a Binding's dtype is at most 32 characters
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def plugin(cluster, *args):
    proc = subprocess.run([sys.executable, PLUGIN, *args, "--kubeconfig", cluster.admin_kubeconfig],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
                          env=cluster.env(cluster.admin_kubeconfig))
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


@pytest.fixture(scope="module")
def hostile(cluster):
    pod = o.md_pod("p0", "md", o.vllm_argv("fp8", extra=["--served-model-name", EVIL]), ns=NS)
    pod["metadata"]["annotations"] = {"kvcache.gpustack.ai/role": EVIL}
    cluster.apply([o.binding("b1", "fp8", ns=NS), o.binding("b2", SHORT, ns=NS, domain="evil"),
                   o.deployment("md", ns=NS, roles=[{"name": "server", "kind": "server", "instanceType": "nvidia-h100", "replicas": 1,
                                                     "extraArgs": ["--kv-cache-dtype=" + EVIL]}]),
                   o.deployment("md2", ns=NS, binding_name="b2"),
                   o.md_pod("md2-0", "md2", o.vllm_argv(SHORT), ns=NS), pod])
    before = cluster.get(SETTING[0], SETTING[1], namespace=SETTING[2]) if cluster.kubectl(
        "get", SETTING[0], SETTING[1], "-n", SETTING[2]).returncode == 0 else None
    if before is None:
        cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                       "metadata": {"name": SETTING[1], "namespace": SETTING[2]}, "spec": {"value": "true"},
                       "status": {"value": "true", "editable": True}})
    cluster.set_status(SETTING[0], SETTING[1], namespace=SETTING[2], status={"description": EVIL})
    yield cluster
    old = (before or {}).get("status", {}).get("description")
    cluster.set_status(SETTING[0], SETTING[1], namespace=SETTING[2], status={"description": old})


def assert_safe(*texts):
    for text in texts:
        assert not RAW.search(text), repr(text)


@pytest.mark.parametrize("argv", [
    ["verify", "-n", NS], ["verify", "-n", NS, "-o", "wide"], ["verify", "-n", NS, "p0", "md2-0"],
    ["check", "-n", NS, "-o", "wide"], ["bindings", "-n", NS, "-o", "wide"], ["roles", "-n", NS, "-o", "wide"],
    ["verify", "-n", NS, "-o", "describe"], ["check", "-n", NS, "-o", "describe"],
    ["bindings", "-n", NS, "-o", "describe"], ["roles", "-n", NS, "-o", "describe"],
    ["setting", "status"],
], ids=lambda a: " ".join(a))
def test_live_human_output_is_escaped(hostile, argv):
    code, out, err = plugin(hostile, *argv)
    assert code in (0, 1), err
    assert_safe(out, err)
    assert "^[" in out + err or "\\x1b" in out     # escaped here, or in a message's quoted repr


def test_live_argv_view_and_setting_description(hostile):
    _, out, _ = plugin(hostile, "verify", "-n", NS, "p0")
    assert "x^[]0;pwned^G^[[2J\\rFORGED row\\nNEXT\\tcol\\x9b31m\\u202eend" in out
    _, out, _ = plugin(hostile, "setting", "status")
    assert "  description: x^[]0;pwned^G" in out
    code, out, _ = plugin(hostile, "setting", "status", "-o", "json")
    assert code == 0 and json.loads(out)["description"] == EVIL


def test_live_json_keeps_the_bytes_exactly(hostile):
    _, out, _ = plugin(hostile, "verify", "-n", NS, "-o", "json")
    items = {i["pod"]: i for i in json.loads(out)["items"]}
    assert items["md2-0"]["expected"] == SHORT
    assert "\x1b" not in out
    _, out, _ = plugin(hostile, "bindings", "-n", NS, "-o", "json")
    assert SHORT in {i["dtype"] for i in json.loads(out)["items"]}


def test_a_server_error_echoing_the_name_is_one_escaped_line(hostile):
    code, out, err = plugin(hostile, "verify", "-n", NS, "nope\x1b]0;x\x07\rforged")
    assert code == 2 and out == ""
    assert_safe(err)
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
