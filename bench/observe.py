#!/usr/bin/env python3
"""`verify --observe` at scale, side by side with `verify` alone and with what a person does
without it: a `kubectl logs` loop over the same Pods (issue 36; the goal: at most half the
loop's time).

    bench/observe.py --pods 1000 --runs 3 --markdown /tmp/observe.md

Starts one etcd + kube-apiserver through tests/cluster/harness.py and the kubelet stand-in
(tests/cluster/kubelet_standin.py) as the kubelet of the Node the seeded Pods run on, seeds
--pods engine Pods with bench/seed.py, and gives every engine container a start-up log shaped
as its engine writes it (a vLLM `non-default args` line, an SGLang `server_args=ServerArgs(...)`
line: the formats of kubectl_kvcache/engine/words.py) and every crashed one a previous log with
argparse's error. Then times, in fresh processes, after one warm-up each:
  verify            kubectl-kvcache verify -A -o json
  verify --observe  kubectl-kvcache verify -A --observe -o json
  kubectl logs loop `kubectl logs -n NS POD -c C --limit-bytes=65536` for each running engine
                    container, one after another (once: it is the slow one)
The real API server proxies every log read to the stand-in kubelet over HTTPS, as it would to a
node's; the stand-in's own cost (it looks up each Pod) is the same for both readers.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))

import seed as seeding  # noqa: E402
from run import _harness, log  # noqa: E402

NON_DEFAULT = "INFO 12-03 07:00:01 [utils.py:233] non-default args: {'model_tag': '%s', 'kv_cache_dtype': '%s'}\n"
SERVER_ARGS = "[2026-12-03 07:00:03] server_args=ServerArgs(model_path='%s', kv_cache_dtype='%s', port=30000)\n"
REFUSED = ("usage: launch_server.py [-h] --model-path MODEL_PATH ...\n"
           "launch_server.py: error: argument --kv-cache-dtype: invalid choice: '%s' (choose from 'auto', "
           "'fp8_e5m2', 'fp8_e4m3')\n")
FILLER = "INFO 12-03 07:00:02 [loader.py:12] Loading weights took 41.20 seconds\n" * 40


def _value(argv, flag, default):
    for i, token in enumerate(argv):
        if token == flag and i + 1 < len(argv):
            return argv[i + 1]
        if token.startswith(flag + "="):
            return token.split("=", 1)[1]
    return default


def engine_logs(api, kubelet):
    """A start-up log for every engine container of every seeded Pod (and a previous one for a
    crashed container); returns the running ones as (namespace, pod, container)."""
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
                if "vllm" in text:
                    line = NON_DEFAULT % (_value(argv, "serve", "m"), _value(argv, "--kv-cache-dtype", "auto"))
                elif "sglang" in text:
                    line = SERVER_ARGS % (_value(argv, "--model-path", "m"), _value(argv, "--kv-cache-dtype", "auto"))
                else:
                    continue
                state = states.get(c["name"]) or {}
                crashed = "terminated" in (state.get("lastState") or {})
                previous = REFUSED % _value(argv, "--kv-cache-dtype", "x") if crashed else None
                kubelet.set_log(ns, name, c["name"], line + FILLER, previous=previous)
                if "running" in (state.get("state") or {}):
                    running.append((ns, name, c["name"]))
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return running


def timed(argv, env):
    start = time.monotonic()
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    return time.monotonic() - start, p


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--markdown", help="write the table here too")
    opts = ap.parse_args(argv)
    harness = _harness()
    import kubelet_standin

    workdir = tempfile.mkdtemp(prefix="kvcache-observe-bench-")
    cluster = harness.Cluster(harness.find_binaries(stream=True), name="kvcache-observe-bench")
    cluster.start()
    kubelet = kubelet_standin.KubeletStandIn(cluster, node="gpu-h100-03")     # bench/seed.py's nodeName
    kubelet.start()
    try:
        api = seeding.Api.from_kubeconfig(cluster.admin_kubeconfig)
        seeding.ensure_setting(api, log=log)
        seeding.seed(api, opts.pods, 0, log=log, with_workloads=False)
        running = engine_logs(api, kubelet)
        log(f"{len(running)} running engine containers have a start-up log")
        env = {k: v for k, v in os.environ.items() if not k.startswith("KVCACHE_")}
        env.update(KUBECONFIG=cluster.admin_kubeconfig, KUBECACHEDIR=cluster.cache_dir, PYTHONPATH=ROOT)
        plugin = [sys.executable, "-m", "kubectl_kvcache", "verify", "-A", "-o", "json"]
        rows = {}
        for name, cmd in (("verify", plugin), ("verify --observe", plugin + ["--observe"])):
            timed(cmd, env)     # warm-up
            walls, observed = [], 0
            for _ in range(opts.runs):
                wall, p = timed(cmd, env)
                walls.append(wall)
                observed = sum(1 for i in json.loads(p.stdout)["items"] if i.get("observed"))
            rows[name] = (statistics.median(walls), observed)
            log(f"{name}: {statistics.median(walls):.2f} s median of {opts.runs}, {observed} observed")
        start = time.monotonic()
        read = 0
        for ns, pod, container in running:
            p = subprocess.run([cluster.kubectl_path, "logs", "-n", ns, pod, "-c", container,
                                "--limit-bytes=65536"], env=env, capture_output=True, text=True)
            read += p.returncode == 0 and ("kv_cache_dtype" in p.stdout)
        rows["kubectl logs loop"] = (time.monotonic() - start, read)
        log(f"kubectl logs loop: {rows['kubectl logs loop'][0]:.2f} s, {read} logs read")
        loop = rows["kubectl logs loop"][0]
        lines = [f"{opts.pods:,} engine Pods, {len(running):,} running engine containers with a start-up log; "
                 f"median of {opts.runs} runs (the loop: once)", "",
                 "| command | wall s | containers whose dtype was read | vs the kubectl logs loop |",
                 "|---|---|---|---|"]
        for name, (wall, n) in rows.items():
            lines.append(f"| {name} | {wall:.2f} | {n:,} | {wall / loop:.2f}x |")
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
