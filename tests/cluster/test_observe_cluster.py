"""`verify --observe` end to end (issue 36, the observation contract): the real API server proxies
pods/log to the kubelet stand-in of Node kvcache-node and pods/proxy to the Pod IP, where the
engines' own lines (engine_lines.py: SGLang's ServerArgs repr and parser, vLLM's logging and
metrics formats) are served for Pods the operator stand-in rendered and placed there.

Skipped with reason "needs observe" while `verify --help` lacks `--observe` (the plugin side is
built in parallel); once merged they must pass: CI forbids skips."""

import json
import os
import subprocess
import sys
import time

import pytest

import objects as o

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def plugin(cluster, *args, timeout=120):
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *args, "--kubeconfig", cluster.admin_kubeconfig],
                       cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    return p.returncode, p.stdout, p.stderr


def _has_observe():
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", "verify", "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=ROOT))
    return "--observe" in p.stdout




@pytest.fixture(scope="module")
def scene(cluster, kubelet):
    """One namespace: SGLang 0.5.12 running fp8_e4m3; SGLang 0.5.12 whose parser refuses `fp8`
    (exit 2); vLLM 0.11.2 with bfloat16, which its parser accepts and no attention backend lists
    (exit 1); vLLM 0.18.0 running fp8 (log and /metrics)."""
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                   "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                   "spec": {"value": "true"}}, with_status=False)
    ns = cluster.new_namespace("observe")
    cluster.apply([o.binding("e4", "fp8_e4m3", ns=ns), o.binding("f8", "fp8", ns=ns),
                   o.binding("bf", "bfloat16", ns=ns),
                   o.deployment("sg-run", ns=ns, engine="sglang", version="0.5.12", binding_name="e4"),
                   o.deployment("sg-bad", ns=ns, engine="sglang", version="0.5.12", binding_name="f8"),
                   o.deployment("vl-bf", ns=ns, version="0.11.2", binding_name="bf"),
                   o.deployment("vl-run", ns=ns, version="0.18.0", binding_name="f8")],
                  with_status=False)
    standin = cluster.operator_standin([ns], kubelet=kubelet)
    for _ in range(6):
        standin.reconcile()
    assert not standin.errors, standin.errors
    return ns


def items(out):
    return {i["pod"].rsplit("-", 2)[0]: i for i in json.loads(out)["items"]}


def test_observed_dtypes_and_crash_causes_in_json(cluster, scene):
    code, out, err = plugin(cluster, "verify", "-n", scene, "--observe", "-o", "json")
    by = items(out)
    assert set(by) == {"sg-run", "sg-bad", "vl-bf", "vl-run"}, err
    sg = by["sg-run"]["observed"]
    assert sg["dtype"] == "fp8_e4m3" and sg["source"] == "log"
    # the server_args line is 11 KB long (ServerArgs of 0.5.12): the 300 characters shown must
    # hold the value read
    assert "fp8_e4m3" in sg["line"] and len(sg["line"]) <= 300
    vl = by["vl-run"]["observed"]
    assert vl["dtype"] == "fp8" and vl["source"] in ("log", "metrics")
    assert 'cache_dtype="fp8"' in vl["line"] or "'kv_cache_dtype': 'fp8'" in vl["line"]
    rejected = by["sg-bad"]["exitCause"]
    assert rejected["kind"] == "rejected"
    assert "argument --kv-cache-dtype: invalid choice: 'fp8'" in rejected["line"]
    startup = by["vl-bf"]["exitCause"]
    assert startup["kind"] == "startup"
    assert "No valid attention backend found" in startup["line"]
    assert by["vl-bf"]["status"] != "OK"
    assert code == 1


def test_wide_shows_the_observed_column(cluster, scene):
    code, out, err = plugin(cluster, "verify", "-n", scene, "--observe", "-o", "wide")
    lines = out.splitlines()
    assert "OBSERVED" in lines[0].split(), out
    col = lines[0].split().index("OBSERVED")
    row = next(ln for ln in lines if ln.startswith("sg-run"))
    assert "fp8_e4m3" in row.split()[col:], out
    # the short columns stay short; CAUSE, free text and last, is a crashed replica's own line
    # (issue 48 item 6: at most engine.words.MAX_LINE characters)
    cause = lines[0].index("CAUSE")
    assert max(len(ln[:cause]) for ln in lines) <= 275       # 200 before NODE (`kvcache-node`), 220 before GPU,
    # 245 before CAPACITY and MAX-LEN (issue 49: at most `<not-read>` and a max length), then GPU's cell
    assert max(len(ln[cause:]) for ln in lines) <= 300


def test_wide_shows_each_pods_node_as_kubectl_does_and_the_engines_line(cluster, scene):
    """Issue 48 items 6 and 9: -o wide's NODE is each Pod's spec.nodeName (the kubelet stand-in's
    Node, where the operator stand-in's Pods were bound), the same as the real kubectl's `get pods
    -o wide` NODE; the crashed replica's CAUSE is SGLang 0.5.12's own argparse line, which its
    previous log holds, and so are csv, markdown, junit and sarif."""
    code, out, err = plugin(cluster, "verify", "-n", scene, "-o", "wide")
    lines = out.splitlines()
    heads = lines[0].split()
    node = heads.index("NODE")
    real = cluster.kubectl("get", "pods", "-n", scene, "-o", "wide", check=True).stdout.splitlines()
    at = real[0].index(" NODE ") + 1        # kubectl's cells may hold spaces (RESTARTS `1 (3s ago)`): by position
    kubectl_node = {r.split()[0]: r[at:].split()[0] for r in real[1:]}
    rows = {ln.split()[0]: ln for ln in lines[1:]}
    assert set(rows) == set(kubectl_node), (out, real)
    for pod, row in rows.items():
        assert row.split()[node] == kubectl_node[pod] != "<none>", (row, real)
    spec = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in cluster.get("pods", namespace=scene)["items"]}
    assert {p: r.split()[node] for p, r in rows.items()} == spec
    bad = next(r for p, r in rows.items() if p.startswith("sg-bad"))
    said = json.loads(plugin(cluster, "verify", "-n", scene, "-o", "json")[1])
    line = next(i for i in said["items"] if i["pod"].startswith("sg-bad"))["exitCause"]["line"]
    assert line.startswith("launch_server.py: error: argument --kv-cache-dtype: invalid choice: 'fp8'")
    assert bad.replace("\\x20", " ").endswith(line), bad
    for fmt in ("csv", "markdown", "junit", "sarif"):
        _, doc, _ = plugin(cluster, "verify", "-n", scene, "-o", fmt)
        readable = doc.replace("&apos;", "'").replace("&#39;", "'").replace('""', '"')
        assert "invalid choice: 'fp8' (choose from" in readable, (fmt, doc[:2000])


def test_observe_puts_observed_in_the_default_table(cluster, scene):
    code, out, err = plugin(cluster, "verify", "-n", scene, "--observe")
    heads = out.splitlines()[0].split()
    assert heads[heads.index("EFFECTIVE") + 1] == "OBSERVED", out
    row = next(ln for ln in out.splitlines() if ln.startswith("sg-run"))
    assert row.split()[heads.index("OBSERVED")].startswith("fp8_e4m3"), out


def test_without_observe_only_crashed_containers_previous_logs_are_read(cluster, kubelet, scene):
    """Without --observe no running engine's log is read; a crashed one's previous log tail is
    (bounded: tailLines and limitBytes), so its cause is named (docs/verify.md)."""
    before = len(kubelet.requests)
    code, out, err = plugin(cluster, "verify", "-n", scene, "-o", "json")
    asked = kubelet.requests[before:]
    assert asked and all(q.get("previous") == ["true"] and "tailLines" in q and "limitBytes" in q
                         for _, q in asked), asked
    assert all(not i.get("observed") for i in json.loads(out)["items"])


@pytest.fixture(scope="module")
def startup_failure(cluster, kubelet):
    """A namespace whose only replica fails after the parse: vLLM 0.11.2 accepts
    `--kv-cache-dtype bfloat16` (its CacheDType) but no attention backend of the release lists it,
    so the engine exits 1 at backend selection; today's prediction calls it OK."""
    ns = cluster.new_namespace("observe-startup")
    cluster.apply([o.binding("bf", "bfloat16", ns=ns),
                   o.deployment("vl-bf", ns=ns, version="0.11.2", binding_name="bf")], with_status=False)
    standin = cluster.operator_standin([ns], kubelet=kubelet)
    for _ in range(4):
        standin.reconcile()
    assert not standin.errors, standin.errors
    return ns


def test_wait_ends_at_once_on_a_start_up_failure(cluster, startup_failure):
    # without the engine's word, --wait waits for a crash-looping replica whose exit code is 1
    # until --timeout; with it, the start-up failure ends the wait at once (exit 1), in its words
    t0 = time.monotonic()
    code, out, err = plugin(cluster, "verify", "-n", startup_failure, "--observe", "--wait",
                            "--timeout=60s", timeout=120)
    took = time.monotonic() - t0
    assert code == 1 and took < 30, (took, out, err)
    assert "No valid attention backend found" in out + err


def test_a_user_without_pods_log_gets_one_note_and_the_prediction(cluster, scene):
    code, out, err = plugin(cluster, "verify", "-n", scene, "--observe", "-o", "json",
                            "--as", "kvcache-reader")
    report = json.loads(out)
    assert {i["status"] for i in report["items"]}
    assert all(not i.get("observed") for i in report["items"])
    notes = [ln for ln in err.splitlines() if "pods/log" in ln]
    assert len(notes) == 1, err


# -- issue 47: blame only what the engine blamed ----------------------------------------------------

@pytest.fixture(scope="module")
def crash_causes(cluster, kubelet):
    """Two vLLM replicas crash-looping after the parse. vl-ds (0.18.0, Binding fp8_e4m3) dies as
    DeepSeek-V3.2 does on a GPU without a sparse backend (vllm issue 31480): get_attn_backend_cls's
    "No valid attention backend found ... kv_cache_dtype=fp8_e4m3 ... Reasons: {...}" with every
    backend refused for sparsity or compute capability, in V1's prefixed lines, followed by other
    processes' lines (engine_lines.vllm_v1_crash, the release's own formats). vl-bf (0.11.2,
    bfloat16) dies because no backend of the release lists bfloat16: the dtype's doing."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import engine_lines
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                   "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                   "spec": {"value": "true"}}, with_status=False)
    ns = cluster.new_namespace("crash-causes")
    cluster.apply([o.binding("e4", "fp8_e4m3", ns=ns), o.binding("bf", "bfloat16", ns=ns),
                   o.deployment("vl-ds", ns=ns, version="0.18.0", binding_name="e4"),
                   o.deployment("vl-bf", ns=ns, version="0.11.2", binding_name="bf")], with_status=False)
    deepseek = engine_lines.vllm_v1_crash("0.18.0", engine_lines.vllm_selector_error(
        "0.18.0", {"FLASH_ATTN_MLA": ["sparse not supported", "compute capability not supported"],
                   "FLASHINFER_MLA": ["sparse not supported", "compute capability not supported"],
                   "TRITON_MLA": ["sparse not supported"], "FLASHMLA_SPARSE": ["compute capability not supported"]},
        "fp8_e4m3", head_size=576, use_mla=True, use_sparse=True))
    fails, failure = engine_lines.vllm_startup_fails, engine_lines.vllm_backend_failure
    engine_lines.vllm_startup_fails = lambda v, d: v == "0.18.0" or fails(v, d)
    engine_lines.vllm_backend_failure = lambda v, d: deepseek if v == "0.18.0" else failure(v, d)
    try:
        standin = cluster.operator_standin([ns], kubelet=kubelet)
        for _ in range(4):
            standin.reconcile()
    finally:
        engine_lines.vllm_startup_fails, engine_lines.vllm_backend_failure = fails, failure
    assert not standin.errors, standin.errors
    return ns


def _replica_lines(err, name):
    """The --wait stderr lines about one deployment's replica (its line and the indented ones after)."""
    out, mine = [], False
    for ln in err.splitlines():
        if ln.startswith("replica "):
            mine = f" of ModelDeployment {name} " in ln
        if mine:
            out.append(ln)
    return out


def test_a_crash_the_engine_blames_on_something_else_offers_no_recover(cluster, crash_causes):
    code, out, err = plugin(cluster, "verify", "-n", crash_causes, "-o", "json")
    by = items(out)
    ds, bf = by["vl-ds"], by["vl-bf"]
    assert ds["status"] != "REJECTED" and "recover" not in (ds["fix"] or ""), ds
    assert ds["exitCause"]["line"].startswith("ValueError: No valid attention backend found"), ds
    assert ds["exitCause"]["kind"] == "startup" and ds["exitCause"]["kvCacheDtype"] == "not-kv-cache-dtype", ds
    assert bf["exitCause"]["kvCacheDtype"] == "kv-cache-dtype", bf
    assert bf["status"] == "REJECTED" and "kubectl kvcache recover bf" in bf["fix"], bf
    assert code == 1
    code, out, err = plugin(cluster, "verify", "-n", crash_causes, "--wait", "--timeout=60s", timeout=120)
    assert code == 1, (out, err)
    ds_lines, bf_lines = _replica_lines(err, "vl-ds"), _replica_lines(err, "vl-bf")
    assert ds_lines and not any("recover" in ln for ln in ds_lines), err
    assert any("not the KV-cache dtype" in ln for ln in ds_lines), err
    assert any("kubectl kvcache recover bf" in ln for ln in bf_lines), err


# -- issue 47: what a tenant who runs the engine Pod can make it say (engine/words.py) ----------------

@pytest.fixture(scope="module")
def hostile(cluster, kubelet):
    """vLLM 0.18.0 replicas predicted to run fp8 that really run fp8_e5m2, each Pod trying to make
    the engine's word confirm fp8: a model path holding `'kv_cache_dtype': 'fp8'` in the real
    non-default args line; a fake line printed before the real one; a sidecar answering /metrics
    on the first --port while the engine listens on the last (the operator appends --port 8000)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import engine_lines
    ns = cluster.new_namespace("observe-hostile")
    cluster.apply([o.binding("f8", "fp8", ns=ns),
                   o.deployment("vl-model", ns=ns, version="0.18.0", binding_name="f8"),
                   o.deployment("vl-fake", ns=ns, version="0.18.0", binding_name="f8"),
                   o.deployment("vl-port", ns=ns, version="0.18.0", binding_name="f8",
                                roles=[o.role(extra_args=["--port", "8001"])])], with_status=False)
    standin = cluster.operator_standin([ns], kubelet=kubelet)
    for _ in range(6):
        standin.reconcile()
    assert not standin.errors, standin.errors
    pods = {p["metadata"]["name"].rsplit("-", 2)[0]: p for p in cluster.get("pods", namespace=ns)["items"]}
    real = engine_lines.vllm_startup_log("0.18.0", {"model_tag": "m", "kv_cache_dtype": "fp8_e5m2"})
    forged_model = engine_lines.vllm_startup_log(
        "0.18.0", {"model_tag": "x', 'kv_cache_dtype': 'fp8', 'y': 'z", "kv_cache_dtype": "fp8_e5m2"})
    fake = engine_lines.vllm_startup_log("0.18.0", {"kv_cache_dtype": "fp8"})
    logs = {"vl-model": forged_model, "vl-fake": fake + real, "vl-port": "INFO starting\n"}
    for name, pod in pods.items():
        ip = pod["status"]["podIP"]
        kubelet.set_log(ns, pod["metadata"]["name"], "main", logs[name])
        kubelet.set_metrics(ip, 8000, engine_lines.vllm_metrics("0.18.0", "fp8_e5m2"))
        if name == "vl-port":
            kubelet.set_metrics(ip, 8001, engine_lines.vllm_metrics("0.18.0", "fp8"))     # the sidecar
    return ns


def test_a_tenant_cannot_forge_a_confirmation(cluster, hostile):
    code, out, err = plugin(cluster, "verify", "-n", hostile, "--observe", "-o", "json")
    by = items(out)
    assert set(by) == {"vl-model", "vl-fake", "vl-port"}, err
    for name, item in by.items():
        assert item["effective"] == "fp8" and item["observed"]["agrees"] is False, (name, item["observed"])
    assert by["vl-model"]["observed"]["dtype"] == "fp8_e5m2"
    assert "fp8 then fp8_e5m2" in by["vl-fake"]["observed"]["conflict"]
    assert by["vl-port"]["observed"]["dtype"] == "fp8_e5m2" and by["vl-port"]["observed"]["source"] == "metrics"
    assert code == 1, (out, err)


# a per-commit nightly image as pinned in public Dockerfiles (its tag names no release)
NIGHTLY = "vllm/vllm-openai:nightly-7f1a5398e9610d96c473931a26c0e12bbe0d0423"


@pytest.fixture(scope="module")
def nightly(cluster, kubelet):
    """A namespace whose engines run a nightly image: one role rendered by the operator, one
    take-over role (its own command, no --kv-cache-dtype: the judgement of a replica the flag is
    missing from, across every release the image may be). The kubelet stand-in serves vLLM 0.11.2's
    lines for both (spec.engine.version; the stated image wins for what the plugin reads)."""
    ns = cluster.new_namespace("observe-nightly")
    own = ["vllm", "serve", "Qwen/Qwen3-8B", "--host", "0.0.0.0", "--port", "8000"]
    cluster.apply([o.binding("f8", "fp8", ns=ns),
                   o.deployment("vl-night", ns=ns, version="0.11.2", binding_name="f8", image=NIGHTLY),
                   o.deployment("vl-own", ns=ns, version="0.11.2", binding_name="f8",
                                roles=[o.role("server", command=own, image=NIGHTLY)])], with_status=False)
    standin = cluster.operator_standin([ns], kubelet=kubelet)
    for _ in range(4):
        standin.reconcile()
    assert not standin.errors, standin.errors
    return ns


def test_a_nightly_image_read_live_is_judged_with_its_release_said(cluster, nightly):
    """Before: `TypeError: '>=' not supported between instances of 'NoneType' and 'Version'`
    (engine/releases.py _at, through judge/verify's profile of no release), exit 2."""
    code, out, err = plugin(cluster, "verify", "-n", nightly, "--observe", "-o", "json")
    assert "Traceback" not in err and "internal error" not in err, err
    assert code in (0, 1), err
    by = items(out)
    assert set(by) == {"vl-night", "vl-own"}, out
    for row in by.values():
        assert row["status"] == "UNKNOWN" or "release unknown" in row["reason"], row
        assert row.get("engineVersion") is None, row
    own = by["vl-own"]      # vLLM before 0.7.0 has no fp8 in its choices: the release decides what the fix does
    assert own["status"] == "MISSING" and "of the" in own["reason"] and "reject 'fp8'" in own["reason"], own
    # the engine's own word is read as for any release: the head's non-default args line
    assert own["observed"]["dtype"] == "auto" and by["vl-night"]["observed"]["dtype"] == "fp8"
    code, out, err = plugin(cluster, "verify", "-n", nightly, "--observe", "-o", "wide")
    assert "Traceback" not in err and code in (0, 1), err


SLOW_PODS = 1000


def test_one_deadline_for_every_read_at_a_thousand_slow_pods(cluster, kubelet):
    """1,000 vLLM Pods on a node whose every answer (the kubelet's logs, the Pods' /metrics, through
    the real API server's pods/log and pods/proxy) drips a byte a second: `verify --observe` ends
    within the one deadline of every read (50 s) plus the listing and judging: within the minute
    docs/verify.md promises for the whole run, and says which reads were not made. Before: the
    /metrics round started a fresh deadline (121.7 s at 1,000 Pods)."""
    from concurrent.futures import ThreadPoolExecutor

    ns = cluster.new_namespace("observe-slow")
    pods = []
    for n in range(SLOW_PODS):
        pod = o.md_pod(f"md-server-{n}", "md", o.vllm_argv("fp8"), ns=ns)
        pod["spec"]["nodeName"] = kubelet.node
        pods.append(pod)
    created = cluster.apply([o.binding("b1", "fp8", ns=ns),
                             o.deployment("md", ns=ns, roles=[o.role("server", replicas=SLOW_PODS)]), *pods],
                            with_status=False)
    ip = kubelet.next_ip()      # one endpoint serves every Pod's /metrics (one server, not 1,000)
    kubelet.set_metrics(ip, 8000, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n")

    def run(pod):
        name = pod["metadata"]["name"]
        if not name.startswith("md-server-"):
            return
        kubelet.set_log(ns, name, "main", "INFO 12-03 07:00:01 [api_server.py:1] vLLM API server\n")
        cluster.request_ok("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status",
                           {"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "127.0.0.1",
                                       "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                                                              "image": pod["spec"]["containers"][0]["image"],
                                                              "imageID": "", "started": True,
                                                              "state": {"running": {"startedAt": NOW}}}]}},
                           content_type="application/merge-patch+json")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(run, created))
    kubelet.slow = 1.0
    try:
        t0 = time.monotonic()
        code, out, err = plugin(cluster, "verify", "-n", ns, "--observe", "-o", "json", timeout=300)
        took = time.monotonic() - t0
    finally:
        kubelet.slow = None
    assert "Traceback" not in err and code in (0, 1), err
    assert len(json.loads(out)["items"]) == SLOW_PODS
    assert took < 60, (took, err)     # the deadline (50 s), and the listing and judging of 1,000 Pods
    assert "reads of the engines' logs were not made: the time for them ran out" in err, err
    assert "reads of the engines' log failed, the prediction stands" in err, err


NOW = "2026-01-01T00:00:00Z"
