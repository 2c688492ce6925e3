#!/usr/bin/env python3
"""Profile one plugin command in this process against a live cluster (or -f files).

    bench/profile_cmd.py --kubeconfig K -- verify -A -o json            # cProfile, top 35 by own time
    bench/profile_cmd.py --kubeconfig K --sort cumulative -- check -A
    bench/profile_cmd.py --kubeconfig K --pyinstrument -- verify -A      # if pyinstrument is installed
    bench/profile_cmd.py --kubeconfig K --phases -- verify -A -o json    # wall time and RSS per phase

The command's output goes to /dev/null; the profile, wall time and peak RSS go to stderr.
Run the checkout's code: PYTHONPATH is set to the repository root.
"""

import argparse
import cProfile
import io
import os
import pstats
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def phases(argv, kubeconfig):
    """verify/check split into load (imports, client, lists), judge and render."""
    from kubectl_kvcache import cli, render
    from kubectl_kvcache.load import cluster as cluster_lists, reader
    from kubectl_kvcache.cli.flows import IO, check

    t0 = time.perf_counter()
    options = cli.options_for(cli.build_parser().parse_args(argv + ["--kubeconfig", kubeconfig]))
    name = "verify" if argv[0] == "verify" else "check"
    sink = open(os.devnull, "w")
    iot = IO(stdin=sys.stdin, stdout=sink, stderr=sys.stderr)
    marks = [("parse", time.perf_counter(), rss_mb())]
    if name == "verify":
        from kubectl_kvcache.judge import verify
        from kubectl_kvcache.render import verify as view

        snapshot = reader.read(options.connection, options.scope, sys.stdin)
        marks.append(("load", time.perf_counter(), rss_mb()))
        report = verify.verify(snapshot)
        marks.append(("judge", time.perf_counter(), rss_mb()))
        render.show(view.VIEW, report, options.output, sink)
        marks.append(("render", time.perf_counter(), rss_mb()))
        print(f"{len(snapshot.pods)} pods, {len(report.items)} items", file=sys.stderr)
    else:
        check.run(options, iot)
        marks.append(("all", time.perf_counter(), rss_mb()))
    prev = t0
    for name, t, rss in marks:
        print(f"{name:8s} {t - prev:7.3f} s   peak RSS so far {rss:6.1f} MB", file=sys.stderr)
        prev = t
    print(f"total    {prev - t0:7.3f} s", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    p.add_argument("--sort", default="tottime", help="pstats sort key (tottime, cumulative, ...)")
    p.add_argument("--top", type=int, default=35)
    p.add_argument("--pyinstrument", action="store_true")
    p.add_argument("--phases", action="store_true")
    p.add_argument("--out", help="also dump the cProfile stats to this file")
    p.add_argument("--serial", action="store_true",
                   help="run the concurrent lists one after the other, so cProfile sees them")
    p.add_argument("command", nargs=argparse.REMAINDER)
    opts = p.parse_args()
    argv = [a for a in opts.command if a != "--"]
    if opts.serial:
        from kubectl_kvcache.load import cluster as cluster_lists, reader

        cluster_lists._run_all = lambda jobs: {name: job() for name, job in jobs.items()}
    if opts.phases:
        return phases(argv, opts.kubeconfig)
    if opts.kubeconfig:
        argv += ["--kubeconfig", opts.kubeconfig]
    from kubectl_kvcache.cli import main as cli_main

    sink = open(os.devnull, "w")
    t0 = time.perf_counter()
    if opts.pyinstrument:
        from pyinstrument import Profiler

        prof = Profiler(interval=0.0005)
        prof.start()
        code = cli_main(argv, stdout=sink, stderr=sys.stderr)
        prof.stop()
        print(prof.output_text(unicode=False, color=False, show_all=False), file=sys.stderr)
    else:
        prof = cProfile.Profile()
        code = prof.runcall(cli_main, argv, stdout=sink, stderr=sys.stderr)
        buf = io.StringIO()
        stats = pstats.Stats(prof, stream=buf)
        stats.sort_stats(opts.sort).print_stats(opts.top)
        print(buf.getvalue(), file=sys.stderr)
        if opts.out:
            stats.dump_stats(opts.out)
    print(f"exit {code}, {time.perf_counter() - t0:.2f} s (profiled), peak RSS {rss_mb():.0f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
