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
  fleet (threads)  the fleet run with every context in a thread of one process
                   (KVCACHE_FLEET_WORKERS=threads: how it ran before issue #32)
for CMD in verify and check. The plugin runs from this checkout (python -m kubectl_kvcache), so
every row pays the same start-up. Wall time from start to exit; CPU s is the plugin's user +
system time, its worker processes included (wait4's rusage covers the children it reaped), never
the API servers'. "CPU per context" is a row's CPU over its contexts, against the single runs'
mean (the goal: the fleet within 1.1x).

--pin (default where the machine has 2 or more CPUs and taskset is there): the same runs again
with the API servers' CPU kept apart: every etcd and kube-apiserver (all their threads) pinned to
CPU 0, the plugin (and its workers) to CPU 1, so the plugin's figures are what the plugin costs
on one core, not what the loopback servers cost beside it. Without 2 CPUs or taskset it says so
and times only the shared runs.
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

import shutil  # noqa: E402

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


def pin_servers(clusters, cpu):
    """Every etcd and kube-apiserver thread onto `cpu` (taskset -a -p)."""
    for c in clusters:
        for p in c._procs.values():
            subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), str(p.pid)], check=True,
                           stdout=subprocess.DEVNULL)


def can_pin():
    """(True, "") or (False, why not)."""
    if (os.cpu_count() or 1) < 2:
        return False, f"{os.cpu_count()} CPU: nothing to keep the servers apart on"
    if shutil.which("taskset") is None:
        return False, "no taskset on this machine"
    return True, ""


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


def bench(names, env, runs, prefix=(), mode="shared"):
    plugin = list(prefix) + [sys.executable, "-m", "kubectl_kvcache"]
    threads_env = dict(env, KVCACHE_FLEET_WORKERS="threads")
    rows = []
    for command, key in COMMANDS:
        fleet = [plugin + [command, "--all-contexts", "-A", "-o", "json"]]
        singles = {n: [plugin + [command, "--context", n, "-A", "-o", "json"]] for n in names}
        one_by_one = [argv[0] for argv in singles.values()]
        variants = {"fleet": (fleet, env), "fleet (threads)": (fleet, threads_env), "one by one": (one_by_one, env),
                    **{f"alone {n}": (a, env) for n, a in singles.items()}}
        times = {v: [] for v in variants}
        cpus = {v: [] for v in variants}
        # warm-up, and the check that the fleet's items are the single runs' items
        _, _, (fleet_out,) = timed(fleet, env)
        data = json.loads(fleet_out[1])
        _, _, (threads_out,) = timed(fleet, threads_env)
        assert threads_out == fleet_out, (command, "threads and processes differ")
        alone = sum(len(json.loads(timed(a, env)[2][0][1])[key]) for a in singles.values())
        assert fleet_out[0] in (0, 1) and len(data[key]) == alone, (command, fleet_out[0], len(data[key]), alone)
        for _ in range(runs):
            for v, (argvs, e) in variants.items():
                wall, cpu, outs = timed(argvs, e)
                assert all(code in (0, 1) for code, _ in outs), (v, [c for c, _ in outs])
                times[v].append(wall)
                cpus[v].append(cpu)
        med = {v: statistics.median(t) for v, t in times.items()}
        cpu_med = {v: statistics.median(c) for v, c in cpus.items()}
        alones = [v for v in variants if v.startswith("alone")]
        slowest = max(alones, key=med.get)
        single_cpu = statistics.mean(cpu_med[v] for v in alones)
        for v in ("fleet", "fleet (threads)", "one by one", slowest):
            per = cpu_med[v] / (1 if v == slowest else len(names))
            rows.append({"mode": mode, "command": command,
                         "variant": "slowest one (" + v.split()[1] + ")" if v == slowest else v,
                         "median": med[v], "range": (min(times[v]), max(times[v])),
                         "cpu": cpu_med[v], "cpu_per_context": per,
                         "cpu_vs_single": per / (cpu_med[v] if v == slowest else single_cpu),
                         "vs_slowest": med[v] / med[slowest],
                         "items": len(data[key]) if v != slowest else None})
    return rows


def markdown(rows, clusters, pods, runs, pinned_note):
    load = os.getloadavg()
    lines = [f"{clusters} API servers, {pods:,} engine Pods each ({clusters * pods:,} in all), {runs} runs; "
             f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; load average at the "
             f"end {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}.", ""]
    if pinned_note:
        lines += [pinned_note, ""]
    lines += ["| CPUs | command | run | median s | range s | CPU s | CPU per context | vs one run's CPU | vs slowest one "
              "| items |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['command']} | {r['variant']} | {r['median']:.2f} "
                     f"| {r['range'][0]:.2f}-{r['range'][1]:.2f} | {r['cpu']:.2f} | {r['cpu_per_context']:.2f} "
                     f"| {r['cpu_vs_single']:.2f}x | {r['vs_slowest']:.2f}x "
                     f"| {r['items'] if r['items'] is not None else ''} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clusters", type=int, default=4, help="API servers (default 4)")
    p.add_argument("--pods", type=int, default=1000, help="engine Pods seeded into each (default 1000)")
    p.add_argument("--runs", type=int, default=5, help="timed runs of each variant (default 5)")
    p.add_argument("--markdown", help="also write the table to this file")
    p.add_argument("--pin", action=argparse.BooleanOptionalAction, default=None,
                   help="also time with the servers on CPU 0 and the plugin on CPU 1 (default: where possible)")
    opts = p.parse_args(argv)
    pinnable, why = can_pin()
    if opts.pin and not pinnable:
        p.error(f"--pin: {why}")
    pin = pinnable if opts.pin is None else opts.pin
    note = "" if pin else f"Not pinned: {why or '--no-pin'}; the servers' CPU is on the same cores as the plugin's."
    work = tempfile.mkdtemp(prefix="kvcache-fleet-bench-")
    clusters = start_clusters(opts.clusters, opts.pods, work)
    try:
        env = dict(os.environ, KUBECONFIG=kubeconfig(clusters, os.path.join(work, "fleet.kubeconfig")),
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("KVCACHE_TRACE", None)
        names = [f"c{i}" for i in range(opts.clusters)]
        rows = bench(names, env, opts.runs, mode="shared")
        if pin:
            pin_servers(clusters, 0)
            rows += bench(names, env, opts.runs, prefix=("taskset", "-c", "1"), mode="apart")
    finally:
        for c in clusters:
            c.stop()
    text = markdown(rows, opts.clusters, opts.pods, opts.runs, note)
    print(text)
    if opts.markdown:
        with open(opts.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
