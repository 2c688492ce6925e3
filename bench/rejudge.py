#!/usr/bin/env python3
"""`verify --watch/--wait` at scale, in process: what one batch of watch events costs the loop.

    bench/rejudge.py                      # 10,000 Pods, batches of 10 events, 20 batches
    bench/rejudge.py --pods 1000 --batches 50

The objects are bench/seed.py's (the same Pods, ModelDeployments and Bindings bench/run.py seeds
into a real API server, with status), read into a snapshot as `-f` reads them. Rows:

  full judge        what the loop did for every batch before judge/live.py: verify.verify of the
                    whole snapshot (the argv parses cached, as the loop kept them), then
                    rollout.Changes and rollout.progress over every row
  live: 10 Pods     judge/live.py's apply() for 10 Pod events (a container's restart count and
                    readiness moving, Pods of 10 deployments), then progress()
  live: mixed       10 events: 8 Pods, one ModelDeployment (replicas moved), one Binding (its
                    dtype rewritten: every deployment naming it is judged again)

Each batch is timed alone, wall (time.perf_counter) and this process's CPU (time.process_time,
steadier on a loaded machine), interleaved with a full judge every 4th batch; medians after one
warm-up; the ratio is the median batch against the median full judge (goal: <= 5%).
"""

import argparse
import copy
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import seed  # noqa: E402

from kubectl_kvcache.engine import CachedPredict  # noqa: E402
from kubectl_kvcache.judge import live, rollout, verify  # noqa: E402
from kubectl_kvcache.load.manifests import snapshot_of  # noqa: E402
from kubectl_kvcache.load.scope import Scope  # noqa: E402
from kubectl_kvcache.operator import decode  # noqa: E402


def objects(pods):
    """bench/seed.py's namespaces, 100 engine Pods (+10 injected) each, `pods` engine Pods in all."""
    out = []
    for index in range((pods + 99) // 100):
        ns, bindings, deployments, injected = seed.namespace_plan(index, min(100, pods - 100 * index), 0.1)
        users = {}
        for md in deployments:
            users.setdefault(md["binding"], []).append(md["name"])
        for b in bindings:
            out.append(dict(b, status=seed.binding_status(b, users.get(b["metadata"]["name"], ()))))
        dtypes = {b["metadata"]["name"]: b["spec"]["domain"]["dtype"] for b in bindings}
        for md in deployments:
            obj = seed.deployment_object(ns, md)
            obj["status"] = seed.deployment_status(md, dtypes[md["binding"]], ns)
            out.append(obj)
            uid = "6f1d7a52-" + seed._hex(ns + md["name"], 27)
            for pod, status in seed.deployment_pods(ns, md, uid)[:md["limit"]]:
                out.append(dict(pod, status=status))
        for i in range(injected):
            pod, status = seed.injected_pod(ns, i)
            out.append(dict(pod, status=status))
    out.append({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                "spec": {"value": "true"}, "status": {"value": "true", "editable": True}})
    return out


def load(objs):
    snap = snapshot_of([(o, "bench", None) for o in objs], Scope())
    snap.namespace = None
    return snap


def pod_events(pod_objs, n, turn):
    """n Pod MODIFIED events, each on a Pod of another deployment: its engine's restarts move."""
    events, owners = [], set()
    step = max(1, len(pod_objs) // (n * 3))
    for obj in pod_objs[turn % step::step]:
        owner = (obj["metadata"].get("ownerReferences") or [{}])[0].get("name")
        if owner in owners:
            continue
        owners.add(owner)
        obj = copy.deepcopy(obj)
        for cs in obj["status"].get("containerStatuses") or ():
            cs["restartCount"] = cs.get("restartCount", 0) + 1 + turn
            cs["ready"] = bool(turn % 2)
        record = decode.pod_record(obj)
        events.append((live.POD, (record.namespace, record.name), record))
        if len(events) == n:
            break
    return events


def mixed_events(pod_objs, md_objs, binding_objs, turn):
    events = pod_events(pod_objs, 8, turn)
    md = copy.deepcopy(md_objs[turn % len(md_objs)])
    md["spec"]["roles"][0]["replicas"] = md["spec"]["roles"][0].get("replicas", 1) + 1 + turn % 2
    record = decode.deployment_record(md)
    events.append((live.DEPLOYMENT, (record.namespace, record.name), record))
    binding = copy.deepcopy(binding_objs[turn % len(binding_objs)])
    binding["metadata"]["annotations"] = {"bench/turn": str(turn)}
    record = decode.binding_record(binding)
    events.append((live.BINDING, (record.namespace, record.name), record))
    return events


def timed(fn):
    """(wall, CPU) seconds of one call: CPU time (this process's) moves less on a loaded machine."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=10_000)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--events", type=int, default=10)
    args = ap.parse_args(argv)
    objs = objects(args.pods)
    pod_objs = [o for o in objs if o["kind"] == "Pod" and o["metadata"].get("ownerReferences", [{}])[0].get("kind")
                == "ModelDeployment"]
    md_objs = [o for o in objs if o["kind"] == "ModelDeployment"]
    binding_objs = [o for o in objs if o["kind"] == "KVCachePoolBinding"]
    snap = load(objs)
    print(f"{len(snap.pods):,} Pods ({len(pod_objs):,} of ModelDeployments), {len(snap.deployments):,} "
          f"ModelDeployments, {len(snap.bindings):,} Bindings; batches of {args.events} events")

    predictor = CachedPredict()
    changes = rollout.Changes()

    def full():
        report = verify.verify(snap, account=True, predictor=predictor)
        changes.update(report)
        rollout.progress(report, snap.deployments)

    full()                                          # warm-up: every argv parsed once, as in the loop
    judge = live.LiveJudge(load(objs), predictor=CachedPredict())
    makers = {"10 Pods": lambda t: pod_events(pod_objs, args.events, t),
              "mixed": lambda t: mixed_events(pod_objs, md_objs, binding_objs, t)}
    for make in makers.values():                    # warm-up: the batches' argvs parsed once
        judge.apply(make(0))
        judge.progress()
    times = {"full judge": [], **{name: [] for name in makers}}
    for t in range(1, args.batches + 1):            # interleaved: a loaded machine slows all rows alike
        if t % 4 == 1:
            times["full judge"].append(timed(full))
        for name, make in makers.items():
            batch = make(t)
            times[name].append(timed(lambda b=batch: (judge.apply(b), judge.progress())))

    base = [statistics.median(x[i] for x in times["full judge"]) for i in (0, 1)]
    for name, rows in times.items():
        wall, cpu = (statistics.median(x[i] for x in rows) for i in (0, 1))
        ratio = "" if name == "full judge" else \
            f"  {wall / base[0]:6.1%} / {cpu / base[1]:6.1%} of a full judge"
        print(f"{name if name == 'full judge' else 'live: ' + name:<16} wall {wall * 1000:8.1f} ms  "
              f"CPU {cpu * 1000:8.1f} ms{ratio}  ({len(rows)} runs)")

if __name__ == "__main__":
    main()
