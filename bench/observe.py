#!/usr/bin/env python3
"""`verify --observe` at scale, side by side with `verify` alone, with the guide's `kubectl get
pods` listing and with what a person does without it: a `kubectl logs` loop over the same Pods
(issue 36; the goal: at most half the loop's time), and with the Node reads of issue 49 (the GPU
each replica runs on).

    bench/observe.py --pods 1000 --nodes 250 --runs 3 --markdown /tmp/observe.md

Starts one etcd + kube-apiserver through tests/cluster/harness.py and the kubelet stand-in
(tests/cluster/kubelet_standin.py) as the kubelet of --nodes GPU Nodes (an H100 or, every fourth,
an A100, each with the labels GPU Feature Discovery writes: tests/cluster/gpus.py), seeds --pods
engine Pods with bench/seed.py bound to those Nodes (spec.nodeName, by a hash of the Pod's name),
and gives every engine container the log its release writes (tests/cluster/engine_lines.py, from
the cached wheels: vLLM 0.29.0's `non-default args` line and its KV-cache capacity line, SGLang
0.5.18's `server_args=ServerArgs(...)` repr, its memory pool's and scheduler's capacity lines,
sized for the Node's GPU) after ~3 KiB of other start-up lines, and every crashed one a previous
log with argparse's error. Then times, in fresh processes, after one warm-up each:
  kubectl get pods  the guide's Verify listing (bench/run.py's `kubectl pods`, without the grep)
  verify            kubectl-kvcache verify -A -o json
  verify -o wide    kubectl-kvcache verify -A -o wide (its GPU column reads the Nodes)
  verify --observe  kubectl-kvcache verify -A --observe -o json (each replica's log: dtype, capacity)
  verify --observe -o wide   the same, as the table with CAPACITY and GPU
  kubectl logs loop `kubectl logs -n NS POD -c C --limit-bytes=65536` for each running engine
                    container, one after another (once: it is the slow one)
and counts each plugin row's API requests (KVCACHE_TRACE) and, of them, the Node reads. The real
API server proxies every log read to the stand-in kubelet over HTTPS, as it would to a node's; the
stand-in's own cost (it looks up each Pod) is the same for both readers.
"""

import argparse
import json
import shlex
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))

import seed as seeding  # noqa: E402
from run import POD_JSONPATH, _harness, log  # noqa: E402

FILLER = "INFO 12-03 07:00:02 [loader.py:12] Loading weights took 41.20 seconds\n" * 40
VERSIONS = {"vllm": "0.29.0", "sglang": "0.5.18"}       # bench/seed.py's releases


def gpu_nodes(n):
    """{Node name: gpus.Device}: n GPU Nodes, every fourth an A100, the others H100s."""
    import gpus
    return {f"gpu-{i:03d}": (gpus.A100 if i % 4 == 3 else gpus.H100) for i in range(n)}


def _own(engine, argv):
    """The engine's own arguments (after `vllm serve` / `-m sglang.launch_server`; inside a
    take-over role's `bash -c "exec vllm serve ..."`)."""
    if len(argv) >= 3 and argv[1] == "-c":
        argv = shlex.split(argv[2])
    if engine == "vllm" and "serve" in argv:
        return argv[argv.index("serve") + 1:]
    return argv[argv.index("sglang.launch_server") + 1:] if "sglang.launch_server" in argv else argv


def refusal(engine, argv):
    """The parser's stderr for an argv the release refuses (engine_lines: its own parser/choices)."""
    import engine_lines
    own = _own(engine, argv)
    if engine == "sglang":
        return engine_lines.sglang_rejection(VERSIONS[engine], own)[0]
    return engine_lines.vllm_rejection(VERSIONS[engine], _value(own, "--kv-cache-dtype", ""))[0]


def engine_log(engine, argv, device):
    """What the release writes: its start-up line, FILLER, its capacity lines for `device`."""
    import engine_lines
    version = VERSIONS[engine]
    own = _own(engine, argv)
    dtype = _value(own, "--kv-cache-dtype", None)
    head = engine_lines.startup_log(engine, version, own, dtype)
    return head + FILLER + engine_lines.capacity_lines(engine, version, device, own, dtype)


def _value(argv, flag, default):
    for i, token in enumerate(argv):
        if token == flag and i + 1 < len(argv):
            return argv[i + 1]
        if token.startswith(flag + "="):
            return token.split("=", 1)[1]
    return default


def engine_logs(api, kubelet):
    """A start-up log for every engine container of every seeded Pod (and a previous one for a
    crashed container), sized for its Node's GPU; returns the running ones as (namespace, pod,
    container)."""
    running = []
    token = None
    while True:
        query = {"labelSelector": seeding.POD_SELECTOR, "limit": "500"}
        if token:
            query["continue"] = token
        page = api.call("GET", "/api/v1/pods", query=query)
        for pod in page["items"]:
            ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            states = {s["name"]: s for s in (pod.get("status") or {}).get("containerStatuses") or []}
            for c in pod["spec"]["containers"]:
                argv = [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]
                text = " ".join(argv)
                engine = "vllm" if "vllm" in text else "sglang" if "sglang" in text else None
                if engine is None:
                    continue
                state = states.get(c["name"]) or {}
                if "terminated" in (state.get("lastState") or {}):      # refused by its parser
                    kubelet.set_log(ns, name, c["name"], "", previous=refusal(engine, argv))
                else:
                    kubelet.set_log(ns, name, c["name"],
                                    engine_log(engine, argv, kubelet.nodes.get(pod["spec"].get("nodeName"))))
                if "running" in (state.get("state") or {}):
                    running.append((ns, name, c["name"]))
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return running


def timed(argv, env):
    start = time.monotonic()
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    return time.monotonic() - start, p


def _items(stdout):
    try:
        return json.loads(stdout)["items"]
    except (ValueError, KeyError):
        return []


def _trace(stderr):
    """(API requests, of them Node reads) of a KVCACHE_TRACE=1 run."""
    lines = [ln for ln in stderr.splitlines() if ln.startswith("trace: ")]
    return len(lines), sum(1 for ln in lines if "/api/v1/nodes" in ln)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--nodes", type=int, default=250, help="GPU Nodes the Pods are spread over")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-loop", action="store_true", help="skip the kubectl logs loop (minutes at 1,000 Pods)")
    ap.add_argument("--markdown", help="write the table here too")
    opts = ap.parse_args(argv)
    harness = _harness()
    import kubelet_standin

    nodes = gpu_nodes(opts.nodes)
    seeding.NODES = tuple(nodes)
    cluster = harness.Cluster(harness.find_binaries(stream=True), name="kvcache-observe-bench")
    cluster.start()
    kubelet = kubelet_standin.KubeletStandIn(cluster, node=seeding.NODES[0], nodes=nodes)
    kubelet.start()
    try:
        api = seeding.Api.from_kubeconfig(cluster.admin_kubeconfig)
        seeding.ensure_setting(api, log=log)
        seeding.seed(api, opts.pods, 0, log=log, with_workloads=False)
        running = engine_logs(api, kubelet)
        log(f"{len(running)} running engine containers have a start-up log with capacity lines, "
            f"on {len(nodes)} GPU Nodes")
        env = {k: v for k, v in os.environ.items() if not k.startswith("KVCACHE_")}
        env.update(KUBECONFIG=cluster.admin_kubeconfig, KUBECACHEDIR=cluster.cache_dir, PYTHONPATH=ROOT)
        plugin = [sys.executable, "-m", "kubectl_kvcache", "verify", "-A"]
        listing = [cluster.kubectl_path, "get", "pods", "-A", "-l", seeding.POD_SELECTOR, "-o",
                   f"jsonpath={POD_JSONPATH}"]
        commands = (("kubectl get pods", listing, None),
                    ("verify -A -o json", plugin + ["-o", "json"], plugin + ["-o", "json"]),
                    ("verify -A -o wide", plugin + ["-o", "wide"], plugin + ["-o", "json"]),
                    ("verify -A --observe -o json", plugin + ["--observe", "-o", "json"],
                     plugin + ["--observe", "-o", "json"]),
                    ("verify -A --observe -o wide", plugin + ["--observe", "-o", "wide"],
                     plugin + ["--observe", "-o", "json"]))
        rows = {}
        for name, cmd, as_json in commands:
            timed(cmd, env)     # warm-up
            walls = [timed(cmd, env)[0] for _ in range(opts.runs)]
            requests = nodes_read = observed = capacity = gpu = None
            if as_json is not None:
                _, p = timed(cmd if cmd[-1] == "json" else as_json, env)
                items = _items(p.stdout)
                observed = sum(1 for i in items if i.get("observed"))
                capacity = sum(1 for i in items if i.get("capacity"))
                gpu = sum(1 for i in items if i.get("gpu"))
                _, p = timed(cmd, dict(env, KVCACHE_TRACE="1"))
                requests, nodes_read = _trace(p.stderr)
            rows[name] = (statistics.median(walls), min(walls), max(walls), requests, nodes_read, observed,
                          capacity, gpu)
            log(f"{name}: {statistics.median(walls):.2f} s median of {opts.runs}; requests {requests} "
                f"(Node reads {nodes_read}); items with observed/capacity/gpu {observed}/{capacity}/{gpu}")
        if not opts.no_loop:
            start = time.monotonic()
            read = 0
            for ns, pod, container in running:
                p = subprocess.run([cluster.kubectl_path, "logs", "-n", ns, pod, "-c", container,
                                    "--limit-bytes=65536"], env=env, capture_output=True, text=True)
                read += p.returncode == 0 and ("kv_cache_dtype" in p.stdout)
            wall = time.monotonic() - start
            rows["kubectl logs loop"] = (wall, wall, wall, len(running), 0, read, None, None)
            log(f"kubectl logs loop: {wall:.2f} s, {read} logs read")
        base = rows["kubectl get pods"][0]
        lines = [f"{opts.pods:,} engine Pods on {len(nodes)} GPU Nodes (GFD labels), {len(running):,} running "
                 f"engine containers with a start-up log and capacity lines; median of {opts.runs} runs "
                 f"(the loop: once)", "",
                 "| command | wall s (range) | vs kubectl get pods | API requests (Node reads) | "
                 "items observed / with capacity / with gpu |",
                 "|---|---|---|---|---|"]
        for name, (wall, lo, hi, requests, nodes_read, observed, capacity, gpu) in rows.items():
            said = "" if observed is None else f"{observed:,} / {'' if capacity is None else f'{capacity:,}'} / " \
                                                f"{'' if gpu is None else f'{gpu:,}'}"
            req = "" if requests is None else f"{requests:,} ({nodes_read})"
            lines.append(f"| {name} | {wall:.2f} ({lo:.2f}-{hi:.2f}) | {wall / base:.2f}x | {req} | {said} |")
        text = "\n".join(lines) + "\n"
        print(text)
        if opts.markdown:
            with open(opts.markdown, "w") as f:
                f.write(text)
    finally:
        kubelet.stop()
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
