#!/usr/bin/env python3
"""Many clusters in one run: `--all-contexts` over N real API servers against the same N runs
one after another and against the slowest single one (the goal: at most 1.3x the slowest).

    bench/fleet.py --clusters 4 --pods 1000 --runs 5 --markdown /tmp/fleet.md

Starts N etcd + kube-apiserver pairs through tests/cluster/harness.py (one shared PKI), seeds each
with bench/seed.py (--pods engine Pods in namespaces of 100, their ModelDeployments, Bindings and
workloads, as bench/run.py seeds one), writes one kubeconfig with a context per server, and then
times, in fresh processes, runs interleaved, after one warm-up of each:
  fleet        kubectl-kvcache CMD --all-contexts -A -o json        (one process, N contexts)
  one by one   kubectl-kvcache CMD --context cI -A -o json, for I in 0..N-1, one after another
  slowest one  the slowest context's run alone (the median of each context's runs, the largest)
for CMD in verify and check. The plugin runs from this checkout (python -m kubectl_kvcache), so
every row pays the same start-up. Wall time from start to exit; CPU s is user + system. The
fleet's items are checked to be the sum of the single runs' items.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import seed as seeding  # noqa: E402
from run import _harness, log  # noqa: E402

COMMANDS = (("verify", "items"), ("check", "findings"))


def start_clusters(n, pods, keep_dir):
    harness = _harness()
    binaries = harness.find_binaries()
    clusters = []
    try:
        for i in range(n):
            c = harness.Cluster(binaries, name=f"fleet{i}", pki_from=clusters[0] if clusters else None)
            c.start()
            clusters.append(c)
            api = seeding.Api.from_kubeconfig(c.admin_kubeconfig)
            seeding.ensure_setting(api)
            seeding.seed(api, pods, log=log)
    except BaseException:
        for c in clusters:
            c.stop()
        raise
    return clusters


def kubeconfig(clusters, path):
    cfg = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": [],
           "current-context": "c0"}
    for i, c in enumerate(clusters):
        with open(c.admin_kubeconfig) as f:
            own = json.load(f)
        cfg["clusters"].append({"name": f"c{i}", "cluster": own["clusters"][0]["cluster"]})
        cfg["users"].append({"name": f"c{i}", "user": own["users"][0]["user"]})
        cfg["contexts"].append({"name": f"c{i}", "context": {"cluster": f"c{i}", "user": f"c{i}"}})
    with open(path, "w") as f:
        json.dump(cfg, f)
    os.chmod(path, 0o600)
    return path


def timed(argvs, env):
    """(wall s, cpu s, [(code, stdout)]): the argvs run one after another."""
    t0 = time.perf_counter()
    cpu, outs = 0.0, []
    for argv in argvs:
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL)
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        p.stdout.close()
        cpu += usage.ru_utime + usage.ru_stime
        outs.append((os.waitstatus_to_exitcode(status), out))
    return time.perf_counter() - t0, cpu, outs


def bench(names, env, runs):
    plugin = [sys.executable, "-m", "kubectl_kvcache"]
    rows = []
    for command, key in COMMANDS:
        fleet = [plugin + [command, "--all-contexts", "-A", "-o", "json"]]
        singles = {n: [plugin + [command, "--context", n, "-A", "-o", "json"]] for n in names}
        one_by_one = [argv[0] for argv in singles.values()]
        variants = {"fleet": fleet, "one by one": one_by_one, **{f"alone {n}": a for n, a in singles.items()}}
        times = {v: [] for v in variants}
        cpus = {v: [] for v in variants}
        # warm-up, and the check that the fleet's items are the single runs' items
        _, _, (fleet_out,) = timed(fleet, env)
        data = json.loads(fleet_out[1])
        alone = sum(len(json.loads(timed(a, env)[2][0][1])[key]) for a in singles.values())
        assert fleet_out[0] in (0, 1) and len(data[key]) == alone, (command, fleet_out[0], len(data[key]), alone)
        for _ in range(runs):
            for v, argvs in variants.items():
                wall, cpu, outs = timed(argvs, env)
                assert all(code in (0, 1) for code, _ in outs), (v, [c for c, _ in outs])
                times[v].append(wall)
                cpus[v].append(cpu)
        med = {v: statistics.median(t) for v, t in times.items()}
        slowest = max((v for v in variants if v.startswith("alone")), key=med.get)
        for v in ("fleet", "one by one", slowest):
            rows.append({"command": command, "variant": "slowest one (" + v.split()[1] + ")" if v == slowest else v,
                         "median": med[v], "range": (min(times[v]), max(times[v])),
                         "cpu": statistics.median(cpus[v]), "vs_slowest": med[v] / med[slowest],
                         "items": len(data[key]) if v != slowest else None})
    return rows


def markdown(rows, clusters, pods, runs):
    lines = [f"{clusters} API servers, {pods:,} engine Pods each ({clusters * pods:,} in all), {runs} runs; "
             f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}.", "",
             "| command | run | median s | range s | CPU s | vs slowest one | items |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['command']} | {r['variant']} | {r['median']:.2f} | {r['range'][0]:.2f}-{r['range'][1]:.2f} "
                     f"| {r['cpu']:.2f} | {r['vs_slowest']:.2f}x | {r['items'] if r['items'] is not None else ''} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clusters", type=int, default=4, help="API servers (default 4)")
    p.add_argument("--pods", type=int, default=1000, help="engine Pods seeded into each (default 1000)")
    p.add_argument("--runs", type=int, default=5, help="timed runs of each variant (default 5)")
    p.add_argument("--markdown", help="also write the table to this file")
    opts = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="kvcache-fleet-bench-")
    clusters = start_clusters(opts.clusters, opts.pods, work)
    try:
        env = dict(os.environ, KUBECONFIG=kubeconfig(clusters, os.path.join(work, "fleet.kubeconfig")),
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("KVCACHE_TRACE", None)
        rows = bench([f"c{i}" for i in range(opts.clusters)], env, opts.runs)
    finally:
        for c in clusters:
            c.stop()
    text = markdown(rows, opts.clusters, opts.pods, opts.runs)
    print(text)
    if opts.markdown:
        with open(opts.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
