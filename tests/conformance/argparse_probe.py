"""Run argparse behaviours the model relies on under one CPython; print one JSON line of results.

Used by test_python_versions.py with every interpreter it finds (pyenv, PATH). Stdlib only."""

import argparse
import contextlib
import io
import json
import sys

CASES = {
    "trailing-dd": ["m", "--kv-cache-dtype", "x", "--"],
    "dd-before-value": ["m", "--kv-cache-dtype", "--", "x"],
    "dd-then-option": ["m", "--", "--kv-cache-dtype", "x"],
    "dd-first": ["--", "m", "--kv-cache-dtype", "x"],
    "model-last": ["--kv-cache-dtype", "x", "m"],
    "model-after-dd": ["--kv-cache-dtype", "x", "--", "m"],
    "two-dd": ["m", "--", "--"],
    "abbrev-equals": ["m", "--kv-cache-dt=x"],
    "abbrev-ambiguous": ["m", "--kv-c", "x"],
    "abbrev-alias-same-action": ["m", "--tensor-parallel", "2", "--kv-cache-dtype", "x"],
    "negative-value": ["m", "--kv-cache-dtype", "-1"],
    "option-like-value": ["m", "--kv-cache-dtype", "-x"],
    "space-value": ["m", "--kv-cache-dtype", "-x y"],
    "nargs-plus": ["m", "--kv-cache-dtype-skip-layers", "0", "1", "--kv-cache-dtype", "x"],
    "nargs-plus-dd": ["m", "--kv-cache-dtype-skip-layers", "0", "--", "1", "--kv-cache-dtype", "x"],
    "short-attached": ["m", "-tp2", "--kv-cache-dtype", "x"],
    "single-dash-long-prefix": ["m", "-t", "2", "--kv-cache-dtype", "x"],
    "empty-equals": ["m", "--kv-cache-dtype="],
    "switch-equals": ["m", "--kv-sharing-fast-prefill=1", "--kv-cache-dtype", "x"],
    "positional-dd-value": ["--kv-cache-dtype", "x", "--", "--m"],
}


def parser():
    p = argparse.ArgumentParser(prog="probe")
    p.add_argument("model", nargs="?")
    p.add_argument("--kv-cache-dtype", choices=["x", "-1", "y"])
    p.add_argument("--kv-cache-dtype-skip-layers", nargs="+")
    p.add_argument("--kv-canary")
    p.add_argument("--kv-sharing-fast-prefill", action="store_true")
    p.add_argument("--tensor-parallel-size", "-tp", "--tensor-parallel-size-alias", type=int, dest="tp")
    return p


def run(argv):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = parser().parse_args(argv)
        return f"ok model={ns.model} kv={ns.kv_cache_dtype}"
    except SystemExit:
        line = [ln for ln in err.getvalue().splitlines() if "error:" in ln]
        return "dies: " + (line[-1].split("error:", 1)[1].strip() if line else "?")


if __name__ == "__main__":
    print(json.dumps({"python": sys.version.split()[0], "results": {k: run(v) for k, v in CASES.items()}}))
