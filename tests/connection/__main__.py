"""python -m tests.connection --seed S --count N [--case K] [--show] [--workers W]

Runs the kubectl parity cases and prints every difference (the case's files, environment and
flags, and both observations); with --case K only that case, and --show prints both observations
even when they agree; --summary prints one line per class of differences instead. Exit 1 when there is a difference or a case that proves nothing."""

import argparse
import sys
import time

from tests.connection import generate, runner


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.connection")
    ap.add_argument("--seed", type=int, default=generate.DEFAULT_SEED)
    ap.add_argument("--count", type=int, default=generate.DEFAULT_COUNT)
    ap.add_argument("--case", type=int, action="append", help="only this case (repeatable)")
    ap.add_argument("--category", help="only cases of this category")
    ap.add_argument("--show", action="store_true", help="print both observations of every case run")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--summary", action="store_true",
                    help="print the classes of differences (one line each) instead of every case")
    args = ap.parse_args(argv)
    try:
        kubectl, plugin = runner.find_kubectl(), runner.find_plugin()
    except runner.Unavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cases = ([generate.case(args.seed, k) for k in args.case] if args.case
             else generate.cases(args.seed, args.count))
    if args.category:
        cases = [c for c in cases if c["category"] == args.category]
    start = time.monotonic()
    results = runner.run_cases(cases, kubectl, plugin, workers=args.workers)
    bad = [r for r in results if r["differences"]]
    if bad or args.show:
        print(runner.LEGEND + "\n")
    for r in results:
        if args.show or (r["differences"] and not args.summary):
            print(runner.describe(r, both=True))
            print()
    if bad:
        print("classes of differences (count, what, the refusing side's error, example cases):")
        print(runner.summary(results) + "\n")
    print(runner.tally(results))
    empty = runner.vacuous(results)
    for r in empty:
        print(f"case {r['case']['id']}: kubectl exited 0 and sent nothing (the case proves nothing)")
    print(f"{len(bad)} of {len(results)} cases differ (seed {args.seed}); {time.monotonic() - start:.0f}s")
    return 1 if bad or empty else 0


if __name__ == "__main__":
    sys.exit(main())
