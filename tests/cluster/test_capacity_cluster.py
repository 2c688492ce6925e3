"""Capacity and the GPU on the real API server (issue 49 item 4): the README's capacity scene
(examples/capacity) loaded as `scripts/demo-cluster up --examples examples/capacity` loads it, the
operator stand-in rendering its Pods onto the kubelet stand-in's GPU Nodes (gpus.py: an H100, an
A100, an RTX 3090, each labelled as GPU Feature Discovery labels it), whose engines log their
capacity as their releases write it (engine_lines.py, from the wheels' own logger calls).

Two kinds of test:
- the stand-ins themselves (the Nodes' labels, where the Pods went, the capacity lines served
  through pods/log and pods/proxy, vLLM refusing a max length its cache cannot hold): they hold
  on any plugin;
- what a user sees (`verify --observe -o wide` with CAPACITY and GPU, json's capacity and gpu,
  `recover --dtype bfloat16` warning before the change, a reader without Node rights getting one
  note): they need issue 49's plugin side (capacity reading, the change's prediction, Node
  reads), each test says whose.
"""

import ast
import json
import os
import re
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine_lines  # noqa: E402  (tests/cluster: the stand-ins' own modules)
import gpus  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENE = os.path.join(ROOT, "examples", "capacity")
NS = "llm-prod"
VLLM = "0.29.0"
SGLANG = "0.5.18"
LONG_ARGV = ["--max-model-len", "262144", "--gpu-memory-utilization", "0.485"]   # long-chat's extraArgs


def plugin(cluster, *args, kubeconfig=None, timeout=180):
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *args,
                        "--kubeconfig", kubeconfig or cluster.admin_kubeconfig],
                       cwd=cluster.workdir, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    return p.returncode, p.stdout, p.stderr


def number(text):
    """An integer as a cell or a line may print it: 300,416 or 300416."""
    return int(text.replace(",", ""))


def numbers(text):
    return {number(m) for m in re.findall(r"\d[\d,]*\d|\d", text)}


@pytest.fixture(scope="module")
def scene(cluster_binaries):
    """A cluster of its own (the scene is llm-prod with the Setting on, as the demo has it), its
    kubelet stand-in, the scene loaded and the operator stand-in settled."""
    harness = sys.modules["kvcache_test_harness"]
    import kubelet_standin
    c = harness.Cluster(cluster_binaries, with_crds=True, name="kvcache-capacity")
    try:
        c.start()
    except harness.ClusterError as e:
        pytest.fail(f"could not start the capacity scene's cluster: {e}", pytrace=False)
    kubelet = kubelet_standin.KubeletStandIn(c).start()
    try:
        c.load_examples(SCENE)
        standin = c.operator_standin([NS], kubelet=kubelet)
        assert standin.settle(timeout=90), "the operator stand-in did not settle"
        assert standin.errors == [], standin.errors
        yield c, kubelet, standin
    finally:
        kubelet.stop()
        c.stop()


def pods(cluster, ns=NS):
    return cluster.request_ok("GET", f"/api/v1/namespaces/{ns}/pods")["items"]


def owner(pod):
    return pod["metadata"]["labels"]["app.kubernetes.io/instance"]


def pod_of(cluster, deployment, ns=NS):
    return next(p for p in pods(cluster, ns) if owner(p) == deployment)


# -- the stand-ins ---------------------------------------------------------------------------------

def test_the_nodes_carry_the_labels_gpu_feature_discovery_writes(scene):
    """Every Node of the kubelet stand-in has nvidia.com/gpu.product, .compute.major/.minor and
    .family as NVIDIA's labeller spells them (internal/lm/resource.go: the NVML name with spaces
    as dashes, getArchFamily's family), and the real kubectl shows them as label columns."""
    cluster, kubelet, _ = scene
    shown = cluster.kubectl("get", "nodes", "-L", "nvidia.com/gpu.product", "-L", "nvidia.com/gpu.compute.major",
                            "-L", "nvidia.com/gpu.compute.minor", "-L", "nvidia.com/gpu.family",
                            check=True).stdout.splitlines()
    rows = {ln.split()[0]: ln.split()[-4:] for ln in shown[1:]}
    assert set(gpus.NODES) <= set(rows), shown
    want = {"kvcache-node": ["NVIDIA-H100-80GB-HBM3", "9", "0", "hopper"],
            "gpu-a100-01": ["NVIDIA-A100-SXM4-80GB", "8", "0", "ampere"],
            "gpu-rtx3090-01": ["NVIDIA-GeForce-RTX-3090", "8", "6", "ampere"]}
    assert {n: rows[n] for n in want} == want, shown
    for name in want:       # served by this kubelet: Ready, its address and port
        node = cluster.request_ok("GET", f"/api/v1/nodes/{name}")
        assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == kubelet.port
        assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"


def test_the_pods_are_spread_over_the_gpu_nodes(scene):
    cluster, _, _ = scene
    where = {}
    for p in pods(cluster):
        where.setdefault(owner(p), set()).add(p["spec"]["nodeName"])
    assert where == {"long-chat": {"kvcache-node"}, "chat": {"kvcache-node"}, "chat-a100": {"gpu-a100-01"},
                     "sgl": {"gpu-rtx3090-01"}}, where


def _format(engine, version, rel, words):
    """The release's own format string of the logger call holding `words`, as a regex whose groups
    are its conversions (%s, %d, %.2f; an f-string's fields)."""
    call, _ = engine_lines._logger_calls(engine, version, rel, words)[0]
    node = call.args[0]
    if isinstance(node, ast.JoinedStr):
        parts = [re.escape(v.value) if isinstance(v, ast.Constant) else "(.+?)" for v in node.values]
        return "".join(parts) + "$"
    fmt = ast.literal_eval(node)
    return re.sub(r"%(?:\\\.\d+)?[sdf]", "(.+?)", re.escape(fmt)) + "$"


def test_vllm_replicas_log_their_capacity_as_the_release_writes_it(scene):
    """long-chat's log, read through pods/log as kubectl reads it, holds vLLM 0.29.0's capacity
    line in the release's own format, with its tokens and max length; /metrics, read through
    pods/proxy, says the same capacity as num_gpu_blocks x block_size and kv_cache_size_tokens."""
    cluster, _, _ = scene
    pod = pod_of(cluster, "long-chat")
    log = cluster.kubectl("logs", "-n", NS, pod["metadata"]["name"], check=True).stdout
    rx = re.compile(_format("vllm", VLLM, "vllm/v1/core/kv_cache_utils.py", "KV cache size: "))
    hits = [m for m in (rx.search(ln.split("] ", 1)[-1]) for ln in log.splitlines()) if m]
    assert len(hits) == 1, log
    tokens, max_len = number(hits[0].group(1)), number(hits[0].group(2))
    assert max_len == 262144 and tokens > max_len, log       # fp8: one request of the max length fits
    assert tokens < 2 * max_len, log                         # ... and at 16 bits it would not
    metrics = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}:8000/proxy/metrics",
                              check=True).stdout
    info = next(ln for ln in metrics.splitlines() if ln.startswith("vllm:cache_config_info{"))
    labels = dict(re.findall(r'(\w+)="([^"]*)"', info))
    assert labels["cache_dtype"] == "fp8"
    assert int(labels["num_gpu_blocks"]) * int(labels["block_size"]) == tokens
    assert int(labels["kv_cache_size_tokens"]) == tokens


def test_sglang_replicas_log_their_capacity_as_the_release_writes_it(scene):
    """sgl's log holds SGLang 0.5.18's scheduler line (max_total_num_tokens=..., context_len=...)
    and its memory pool's "KV Cache is allocated" line, each in the release's own f-string."""
    cluster, _, _ = scene
    pod = pod_of(cluster, "sgl")
    log = cluster.kubectl("logs", "-n", NS, pod["metadata"]["name"], check=True).stdout
    messages = [ln.split("] ", 1)[1] for ln in log.splitlines() if ln.startswith("[") and "] " in ln]
    sched = re.compile(_format("sglang", SGLANG, "sglang/srt/managers/scheduler.py", "max_total_num_tokens="))
    pool = re.compile(_format("sglang", SGLANG, "sglang/srt/mem_cache/memory_pool.py", "#tokens: "))
    s = next(m for m in map(sched.match, messages) if m)
    a = next(m for m in map(pool.match, messages) if m)
    assert "max_total_num_tokens=" + s.group(1) in s.group(0) and "#tokens: " in a.group(0)
    assert int(s.group(1)) in numbers(a.group(0)), (s.group(0), a.group(0))
    assert "context_len=40960" in s.group(0)


def test_vllm_refuses_to_start_when_its_max_length_does_not_fit(scene):
    """The same deployment as long-chat with a 16-bit cache (what the recovery to bfloat16 would
    roll): the stand-in's vLLM 0.29.0 exits 1 with the release's own ValueError, the max length
    and the estimated maximum in it, and the replica crash-loops."""
    cluster, kubelet, _ = scene
    ns = cluster.new_namespace("capacity-bf16")
    import objects as o
    md = o.deployment("long-bf16", ns=ns, version=VLLM, binding_name="long-bf16")
    md["metadata"]["annotations"] = {"standin.kvcache.test/node": "kvcache-node"}
    md["spec"]["roles"][0]["extraArgs"] = LONG_ARGV
    cluster.apply([o.binding("long-bf16", "bfloat16", ns=ns), md], with_status=False)
    standin = cluster.operator_standin([ns], kubelet=kubelet)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        standin.reconcile()
        live = pods(cluster, ns)
        if live and all("--max-model-len" in p["spec"]["containers"][0]["command"] for p in live):
            break
    assert standin.errors == [], standin.errors
    pod = pods(cluster, ns)[0]
    cs = pod["status"]["containerStatuses"][0]
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff", cs
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    prev = cluster.kubectl("logs", "-n", ns, pod["metadata"]["name"], "--previous", check=True).stdout
    assert "ValueError: To serve at least one request with the model's max seq len (262144)" in prev, prev
    fp8 = engine_lines.capacity("vllm", VLLM, gpus.H100, LONG_ARGV, "fp8")["tokens"]
    bf16 = engine_lines.capacity("vllm", VLLM, gpus.H100, LONG_ARGV, "bfloat16")["tokens"]
    assert f"the estimated maximum model length is {bf16}." in prev
    assert bf16 < 262144 < fp8 and abs(fp8 - 2 * bf16) <= 16      # whole blocks of 16 tokens


# -- what a user sees (issue 49's plugin side) -----------------------------------------------------

def _served():
    """What the scene's replicas report, computed as the stand-in sized them."""
    return {"long-chat": engine_lines.capacity("vllm", VLLM, gpus.H100, ["Qwen/Qwen3-8B"] + LONG_ARGV, "fp8"),
            "chat": engine_lines.capacity("vllm", VLLM, gpus.H100, ["meta-llama/Llama-3.1-8B-Instruct"], "fp8"),
            "chat-a100": engine_lines.capacity("vllm", VLLM, gpus.A100, ["mistralai/Mistral-7B-Instruct-v0.3"], "bfloat16"),
            "sgl": engine_lines.capacity("sglang", SGLANG, gpus.RTX3090, ["--model-path", "Qwen/Qwen2.5-7B-Instruct"], "bf16")}


GPU_OF = {"long-chat": gpus.H100, "chat": gpus.H100, "chat-a100": gpus.A100, "sgl": gpus.RTX3090}


def _deployment(pod_name):
    return next(d for d in sorted(GPU_OF, key=len, reverse=True) if pod_name.startswith(d + "-"))


def test_verify_observe_wide_shows_capacity_and_gpu(scene):
    """The done-when's first half: `verify -n llm-prod --observe -o wide` has CAPACITY and GPU
    columns, each replica's CAPACITY the tokens its engine logged and its GPU the Node's labels'.
    Needs helper A (CAPACITY) and helper C (GPU)."""
    cluster, _, _ = scene
    code, out, err = plugin(cluster, "verify", "-n", NS, "--observe", "-o", "wide")
    assert code == 0, out + err
    lines = out.splitlines()
    heads = lines[0].split()
    assert "CAPACITY" in heads and "GPU" in heads, out
    served = _served()
    cap_at, gpu_at = lines[0].index("CAPACITY"), lines[0].index("GPU")
    rows = [ln for ln in lines[1:] if ln.split() and any(ln.startswith(d + "-") for d in GPU_OF)]
    assert len(rows) == 5, out
    for row in rows:
        d = _deployment(row.split()[0])
        cap_cell = row[cap_at:].split()[0]
        gpu_cell = row[gpu_at:].split()[0]
        assert number(cap_cell) == served[d]["tokens"], (d, row)
        dev = GPU_OF[d]
        assert dev.name.replace(" ", "-") in gpu_cell or f"{dev.major}.{dev.minor}" in gpu_cell, (d, row)


def test_json_carries_each_replicas_capacity_and_gpu(scene):
    """json: items[].capacity (tokens, maxLength, basis, the source line) and items[].gpu (the
    product and compute capability GFD labelled its Node with). Needs helpers A and C."""
    cluster, _, _ = scene
    code, out, err = plugin(cluster, "verify", "-n", NS, "--observe", "-o", "json")
    assert code == 0, out + err
    served = _served()
    items = json.loads(out)["items"]
    assert len(items) == 5
    for item in items:
        d = _deployment(item["pod"])
        cap, gpu = item["capacity"], item["gpu"]
        assert cap["tokens"] == served[d]["tokens"], (d, cap)
        assert cap["maxLength"] == served[d]["max_len"], (d, cap)
        assert cap["basis"] == "tokens", (d, cap)       # the engine's own figure where it logs one
        assert f"{served[d]['tokens']:,}" in cap["line"] or str(served[d]["tokens"]) in cap["line"], (d, cap)
        dev = GPU_OF[d]
        assert gpu["product"] == dev.name.replace(" ", "-"), (d, gpu)
        assert gpu["computeCapability"] == f"{dev.major}.{dev.minor}", (d, gpu)


def _not_start(line):
    low = line.lower()
    return "not start" in low or "won't start" in low or "fail to start" in low or "refuse" in low


def test_recover_to_16_bits_warns_in_the_plan_when_the_max_length_does_not_fit(scene):
    """The done-when's second half: the plan of `recover long-fp8 --dtype bfloat16` says, before
    anything changes, that vLLM would not start long-chat at 16 bits, naming the deployment, the
    capacity observed (fp8), the one predicted at 16 bits and the max length; chat-fp8's plan
    (max length 40,960, which fits either way) warns of no such thing. Nothing is changed (no
    --apply). Needs helper B (the prediction and the plan's warning) and helper A (the capacity
    read it predicts from)."""
    cluster, _, _ = scene
    served = _served()
    before = cluster.request_ok("GET", f"/apis/worker.gpustack.ai/v1alpha1/namespaces/{NS}/kvcachepoolbindings")
    code, out, err = plugin(cluster, "recover", "long-fp8", "-n", NS, "--dtype", "bfloat16")
    assert code != 2, out + err
    text = out + err
    old, new = served["long-chat"]["tokens"], engine_lines.capacity(
        "vllm", VLLM, gpus.H100, ["Qwen/Qwen3-8B"] + LONG_ARGV, "bfloat16")["tokens"]
    warned = [ln for ln in text.splitlines() if "long-chat" in ln and {old, 262144} <= numbers(ln)
              and any(abs(n - new) <= 16 for n in numbers(ln))]
    assert warned, text
    assert any(_not_start(ln) for ln in warned) or any(
        _not_start(ln) for ln in text.splitlines()), text
    code, out, err = plugin(cluster, "recover", "chat-fp8", "-n", NS, "--dtype", "bfloat16")
    assert code != 2, out + err
    assert not any(_not_start(ln) for ln in (out + err).splitlines()), out + err
    after = cluster.request_ok("GET", f"/apis/worker.gpustack.ai/v1alpha1/namespaces/{NS}/kvcachepoolbindings")
    assert [b["metadata"]["resourceVersion"] for b in after["items"]] == \
        [b["metadata"]["resourceVersion"] for b in before["items"]]


def test_a_reader_without_node_rights_gets_one_note_and_the_same_verdicts(scene):
    """The harness's reader (get/list/watch pods and the operator's kinds, no Nodes): the Node
    reads are forbidden (403), which is ONE note on stderr, and every replica's status is the
    admin's. Needs helper C (the bounded Node reads and their 403 note)."""
    cluster, _, _ = scene
    forbidden = cluster.kubectl("auth", "can-i", "get", "nodes", kubeconfig=cluster.reader_kubeconfig)
    assert forbidden.stdout.strip() == "no"
    code_a, out_a, err_a = plugin(cluster, "verify", "-n", NS, "-o", "json")
    code_r, out_r, err_r = plugin(cluster, "verify", "-n", NS, "-o", "wide", kubeconfig=cluster.reader_kubeconfig)
    assert code_r == code_a, (out_r, err_r)
    notes = [ln for ln in err_r.splitlines() if ln.startswith("note:") and "node" in ln.lower()]
    assert len(notes) == 1, err_r
    admin = {i["pod"]: i["status"] for i in json.loads(out_a)["items"]}
    heads = out_r.splitlines()[0].split()
    reader = {ln.split()[0]: ln.split()[heads.index("STATUS")] for ln in out_r.splitlines()[1:]
              if ln.split() and ln.split()[0] in admin}
    assert reader == admin, (out_r, admin)
