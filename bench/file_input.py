#!/usr/bin/env python3
"""File input (`-f`) at scale: the plugin's reader against a bare `json.load` / libyaml load of
the same file, with the revision before the input hardening beside it.

    bench/file_input.py                         # a ~200 MB `kubectl get -o json`-shaped dump, 3 runs
    bench/file_input.py --mb 50 --runs 5 --yaml-mb 20
    bench/file_input.py --before 2f611a6        # the revision to compare with (default: 2f611a6)
    bench/file_input.py --micro                 # also: snapshot.pod_record per Pod, in process

The dump is built in memory from bench/seed.py's objects (the same Pods, ModelDeployments and
Bindings `bench/run.py` seeds into a real API server, with status), as one List the way
`kubectl get -o json` prints it (4-space indent). YAML: the same objects through libyaml's
dumper, one List document (`kubectl get -o yaml`).

Each measurement is a fresh process; wall time and its peak RSS (os.wait4 ru_maxrss), median of
--runs after one warm-up. Rows:
  json.load                 python -c 'json.load(open(F))'           (the bar: "at most 2x its time")
  yaml CSafeLoader          python -c 'yaml.load(F, CSafeLoader)'    (the bar for YAML)
  load_files (this)         manifests.load_files([F]): read, decode, records (what -f costs)
  verify -A -o json (this)  the whole command, output to /dev/null
  ... (before)              the same at --before
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import seed  # noqa: E402


def objects(target_bytes):
    """bench/seed.py's namespaces, 100 engine Pods (+10 injected) each, until ~target bytes."""
    out, size, index = [], 0, 0
    while size < target_bytes:
        ns, bindings, deployments, injected = seed.namespace_plan(index, 100, 0.1)
        users = {}
        for md in deployments:
            users.setdefault(md["binding"], []).append(md["name"])
        batch = []
        for b in bindings:
            batch.append(dict(b, status=seed.binding_status(b, users.get(b["metadata"]["name"], ()))))
        dtypes = {b["metadata"]["name"]: b["spec"]["domain"]["dtype"] for b in bindings}
        for md in deployments:
            obj = seed.deployment_object(ns, md)
            obj["status"] = seed.deployment_status(md, dtypes[md["binding"]], ns)
            batch.append(obj)
            uid = "6f1d7a52-" + seed._hex(ns + md["name"], 27)
            for pod, status in seed.deployment_pods(ns, md, uid)[:md["limit"]]:
                batch.append(dict(pod, status=status))
        for i in range(injected):
            pod, status = seed.injected_pod(ns, i)
            batch.append(dict(pod, status=status))
        size += sum(len(json.dumps(o)) for o in batch) * 185 // 100     # ~ kubectl's 4-space indent
        out.extend(batch)
        index += 1
    return out


def write_dump(objs, path, fmt):
    doc = {"apiVersion": "v1", "items": objs, "kind": "List", "metadata": {"resourceVersion": ""}}
    with open(path, "w", encoding="utf-8") as f:
        if fmt == "json":
            json.dump(doc, f, indent=4)
        else:
            import yaml

            class Dumper(yaml.CSafeDumper):      # as kubectl writes it: no anchors for shared values
                def ignore_aliases(self, data):
                    return True

            yaml.dump(doc, f, Dumper=Dumper, default_flow_style=False)
    return os.path.getsize(path)


def timed(argv, env=None):
    t0 = time.monotonic()
    with open(os.devnull, "w") as null:
        proc = subprocess.Popen(argv, stdout=null, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        err = proc.stderr.read().decode()
        proc.stderr.close()
    wall = time.monotonic() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {code}: {err}")
    return wall, usage.ru_maxrss / 1024


def measure(rows, runs):
    results = {name: [] for name, _ in rows}
    for name, argv in rows:                 # warm-up (page cache, .pyc)
        timed(*argv)
    for _ in range(runs):
        for name, argv in rows:
            results[name].append(timed(*argv))
    return results


def tree_at(rev, workdir):
    dest = os.path.join(workdir, f"src-{rev}")
    os.makedirs(dest)
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "kubectl_kvcache"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    return dest


def micro(repeat=7):
    """decode.pod_record per Pod, this checkout vs --before, in process (the cluster path);
    CPU time (process_time), so that other load on the machine counts less."""
    return ("import json,sys,time;sys.path.insert(0,sys.argv[1])\n"
            "try: from kubectl_kvcache.operator import decode as s\n"           # the decoders' home since issue 31
            "except ImportError: from kubectl_kvcache.operator import records as s\n"
            "pods=json.load(open(sys.argv[2]));best=1e9\n"
            f"for _ in range({repeat}):\n"
            " i=s.Interner();t=time.process_time()\n"
            " for p in pods: s.pod_record(p,i)\n"
            " best=min(best,time.process_time()-t)\n"
            "print(best/len(pods)*1e6)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=float, default=200, help="size of the JSON dump (MB)")
    p.add_argument("--yaml-mb", type=float, default=50, help="size of the YAML dump (MB; 0: no YAML)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--before", default="2f611a6", help="git revision to compare with ('' for none)")
    p.add_argument("--micro", action="store_true", help="also time snapshot.pod_record per Pod")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--write", nargs=2, metavar=("PATH", "FORMAT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.write:                 # the child that builds a dump (the measuring parent stays small:
        path, fmt = args.write     # a forked child's peak RSS counts the parent's pages)
        objs = objects(int(args.mb * 1e6 * (1 if fmt == "json" else 1.25)))
        size = write_dump(objs, path, fmt)
        pods = [o for o in objs if o["kind"] == "Pod"]
        if fmt == "json":
            with open(path + ".pods", "w") as f:
                json.dump(pods[:10000], f)
        print(f"{fmt.upper()} dump: {size / 1e6:.0f} MB, {len(objs)} objects ({len(pods)} Pods)", flush=True)
        return

    work = tempfile.mkdtemp(prefix="kvcache-file-bench-")
    try:
        py = args.python
        dump = os.path.join(work, "dump.json")
        subprocess.run([py, os.path.abspath(__file__), "--write", dump, "json", "--mb", str(args.mb)], check=True)
        size = os.path.getsize(dump)
        trees = [("this", ROOT)]
        if args.before:
            trees.append((f"before: {args.before}", tree_at(args.before, work)))

        def env(tree):
            return dict(os.environ, PYTHONPATH=tree)

        rows = [("json.load", ([py, "-c", "import json,sys; json.load(open(sys.argv[1]))", dump],))]
        for label, tree in trees:
            rows.append((f"load_files ({label})", ([py, "-c", "import sys; from kubectl_kvcache.load import manifests, scope; "
                                                   "manifests.load_files([sys.argv[1]], scope.Scope())", dump],
                                                  env(tree))))
            rows.append((f"verify -A -o json ({label})", ([py, "-m", "kubectl_kvcache", "verify", "-A", "-f", dump,
                                                           "-o", "json"], env(tree))))
        results = measure(rows, args.runs)
        report(results, size, "JSON")

        if args.yaml_mb:
            ydump = os.path.join(work, "dump.yaml")
            print()
            subprocess.run([py, os.path.abspath(__file__), "--write", ydump, "yaml", "--mb", str(args.yaml_mb)],
                           check=True)
            ysize = os.path.getsize(ydump)
            rows = [("yaml CSafeLoader", ([py, "-c", "import yaml,sys; yaml.load(open(sys.argv[1]), Loader=yaml.CSafeLoader)",
                                           ydump],))]
            for label, tree in trees:
                rows.append((f"load_files ({label})", ([py, "-c", "import sys; from kubectl_kvcache.load import manifests, "
                                                       "scope; manifests.load_files([sys.argv[1]], scope.Scope())",
                                                       ydump], env(tree))))
            results = measure(rows, args.runs)
            report(results, ysize, "YAML")

        if args.micro:
            code = micro()
            pods_path = dump + ".pods"
            print("\nsnapshot.pod_record, the first 10,000 Pods of the dump with one Interner (best of 7, CPU "
                  "time), us per Pod:")
            for label, tree in trees:
                us = subprocess.run([py, "-c", code, tree, pods_path], capture_output=True, text=True,
                                    check=True).stdout.strip()
                print(f"  {label:<24} {float(us):6.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(results, size, what):
    base_wall = statistics.median(w for w, _ in next(iter(results.values())))
    print(f"\n| {what} input ({size / 1e6:.0f} MB) | median s | range s | peak RSS MB | RSS / file size | time vs bare load |")
    print("|---|---|---|---|---|---|")
    for name, samples in results.items():
        walls = [w for w, _ in samples]
        rss = max(r for _, r in samples)
        med = statistics.median(walls)
        print(f"| {name} | {med:.2f} | {min(walls):.2f}-{max(walls):.2f} | {rss:.0f} | {rss * 2**20 / size:.2f}x "
              f"| {med / base_wall:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
