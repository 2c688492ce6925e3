"""`verify -A --observe` at scale against the loopback fake server (tests/fakeserver.py): N vLLM
Pods whose log head says nothing (so /metrics is read too), each answer either slow (`--slow S`:
every log and /metrics answer sends its head, then drips a byte every S seconds, never ending) or
large (`--metrics-bytes B`: a /metrics page of B bytes, the report on its last lines). Runs the
plugin in a subprocess and prints its wall time and peak RSS (getrusage of the child), and the
notes it said. A measurement, not a test (tests/load/test_engine_words.py holds the bounds):

    python tests/load/observe_scale.py --pods 1000 --slow 1
    python tests/load/observe_scale.py --pods 1000 --metrics-bytes 1040000
    python tests/load/observe_scale.py --pods 1000 --hostile       # every line of every head may be a report
    PYTHONPATH=/other/checkout python tests/load/observe_scale.py ...   # another build of the plugin
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import objects as o  # noqa: E402
from fakeserver import Fake, serve  # noqa: E402

LOG_HEAD = b"INFO 12-03 07:00:01 [api_server.py:1] vLLM API server version 0.29.0\n"
HELP = (b"# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
        b"# TYPE vllm:cache_config_info gauge\n"
        b'vllm:cache_config_info{block_size="16",cache_dtype="fp8",enable_prefix_caching="True"} 1.0\n')


def metrics_page(size: int) -> bytes:
    """A /metrics page of about `size` bytes: histogram buckets (as vLLM writes them), then the report."""
    filler = []
    n = 0
    total = len(HELP)
    while total < size:
        line = (f'vllm:e2e_request_latency_seconds_bucket{{engine="0",le="{n * 0.01:.2f}",'
                f'model_name="Qwen/Qwen3-8B"}} {n}.0\n').encode()
        if total + len(line) > size:
            break
        filler.append(line)
        total += len(line)
        n += 1
    return b"".join(filler) + HELP


def pods(n):
    out = []
    for i in range(n):
        pod = o.md_pod(f"md-server-{i}", "md", o.vllm_argv("fp8"), ns="team")
        pod["status"]["containerStatuses"] = [{"name": "main", "ready": True, "restartCount": 0,
                                               "state": {"running": {}}}]
        out.append(pod)
    return out


def hostile_head(size=64 << 10):
    """A log head of nothing but short lines that may each hold a report (every one is kept)."""
    line = b"non-default args: {}\n"
    return line * (size // len(line))


def route_for(n, slow=None, metrics_bytes=0, hostile=False):
    listing = {"kind": "List", "metadata": {"resourceVersion": "10"}, "items": pods(n)}
    deployment = o.deployment("md", ns="team", roles=[o.role("server", replicas=n)])
    page = metrics_page(metrics_bytes) if metrics_bytes else HELP

    def drip(head):
        yield head, 0
        while True:
            yield b" ", slow

    def route(req):
        path = req["path"]
        if path.startswith("/api/v1/namespaces/") and path.count("/") == 4:
            return 200, {}, {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "team"}}
        if path.endswith("/log"):
            head = hostile_head() if hostile else LOG_HEAD
            return (200, {"Content-Type": "text/plain"}, drip(head)) if slow else \
                (200, {"Content-Type": "text/plain"}, head)
        if path.endswith("/proxy/metrics"):
            return (200, {"Content-Type": "text/plain"}, drip(page[:100])) if slow else \
                (200, {"Content-Type": "text/plain"}, page)
        if path.endswith("/modeldeployments"):
            return 200, {}, {"kind": "List", "metadata": {"resourceVersion": "10"}, "items": [deployment]}
        if path.endswith("/kvcachepoolbindings"):
            return 200, {}, {"kind": "List", "metadata": {"resourceVersion": "10"}, "items": [o.binding("b1", "fp8")]}
        if path.endswith("/pods"):
            return 200, {}, listing
        return 200, {}, {"kind": "List", "metadata": {"resourceVersion": "10"}, "items": []}
    return route


def kubeconfig(fake, directory):
    path = os.path.join(directory, "kubeconfig")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "fake",
                   "clusters": [{"name": "fake", "cluster": {"server": fake.url}}],
                   "users": [{"name": "u", "user": {"token": "t"}}],
                   "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u", "namespace": "team"}}]},
                  f)
    return path


def measure(n, slow=None, metrics_bytes=0, extra=(), env=None, hostile=False):
    """(seconds, peak RSS in MiB, exit code, stderr) of `verify -A --observe -o json` at `n` Pods."""
    fake = Fake(serve(route_for(n, slow, metrics_bytes, hostile)))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = kubeconfig(fake, tmp)
            code = ("import resource, subprocess, sys, time\n"
                    "t = time.monotonic()\n"
                    "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
                    "took = time.monotonic() - t\n"
                    "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
                    "sys.stdout.write(f'{took} {rss} {p.returncode}\\n')\n"
                    "sys.stdout.write(p.stderr.decode('utf-8', 'replace'))\n")
            argv = [sys.executable, "-c", code, sys.executable, "-m", "kubectl_kvcache", "verify", "-A", "--observe",
                    "-o", "json", "--kubeconfig", config, *extra]
            p = subprocess.run(argv, capture_output=True, text=True, env=env or dict(os.environ), timeout=900)
            head, _, err = p.stdout.partition("\n")
            took, rss, rc = head.split()
            return float(took), int(rss) / 1024, int(rc), err
    finally:
        fake.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--slow", type=float, default=None, help="seconds between the dripped bytes")
    parser.add_argument("--metrics-bytes", type=int, default=0)
    parser.add_argument("--hostile", action="store_true", help="log heads of 64 KiB of short lines that may each "
                                                                 "hold a report")
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096)) if hasattr(resource, "RLIMIT_NOFILE") else None
    t0 = time.monotonic()
    took, rss, code, err = measure(args.pods, args.slow, args.metrics_bytes, hostile=args.hostile)
    print(f"pods={args.pods} slow={args.slow} metrics_bytes={args.metrics_bytes} hostile={args.hostile}: {took:.1f}s, "
          f"peak RSS {rss:.0f} MiB, "
          f"exit {code} (all: {time.monotonic() - t0:.1f}s)")
    print("\n".join(line[:300] for line in err.splitlines() if line.startswith(("note", "error"))))


if __name__ == "__main__":
    main()
