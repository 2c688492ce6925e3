"""Run argparse, as the Python running this file has it, over parsers described as data.

Used by pythons.py under every CPython it can obtain (the host's, pyenv's, Pyodide's CPython
compiled to WebAssembly). Stdlib only and Python 3.10 syntax: it runs unchanged in all of them.

Input (JSON): {"parsers": {ID: SPEC}, "cases": [[ID, [argv...]], ...]}, where SPEC is
    {"options": [[[names...], arity, choices-or-null], ...], "positionals": [arity, ...]}
(arity as in parsers.py: "0" a switch, "1" one value, "?", "*", "+", a count, "..." REMAINDER).
Output (JSON): {"python": "3.12.7", "results": [answer, ...]}, one answer per case:
    "ok <json of the stored --kv-cache-dtype>"  or  "dies <class>: <argparse's message>".
Without input, the built-in BEHAVIOURS run on a small parser (`python argparse_probe.py`).
"""

import argparse
import contextlib
import io
import json
import sys

# The argparse behaviours the model replays, on a parser shaped like an engine's: one answer each.
BEHAVIOURS = {
    "trailing-dd": ["m", "--kv-cache-dtype", "x", "--"],
    "dd-before-value": ["m", "--kv-cache-dtype", "--", "x"],
    "dd-then-option": ["m", "--", "--kv-cache-dtype", "x"],
    "dd-first": ["--", "m", "--kv-cache-dtype", "x"],
    "model-last": ["--kv-cache-dtype", "x", "m"],
    "model-after-dd": ["--kv-cache-dtype", "x", "--", "m"],
    "two-dd": ["m", "--", "--"],
    "dd-value-then-dd": ["m", "--", "--", "--kv-cache-dtype", "x"],
    "equals-dd": ["m", "--kv-cache-dtype=--"],
    "equals-dd-then-value": ["m", "--kv-cache-dtype=--", "--kv-cache-dtype", "x"],
    "equals-dd-after-value": ["m", "--kv-cache-dtype", "x", "--kv-cache-dtype=--"],
    "equals-dd-then-bogus": ["m", "--kv-cache-dtype=--", "--kv-cache-dtype", "bogus"],
    "abbrev-equals-dd": ["m", "--kv-cache-dt=--"],
    "equals-dd-plus": ["m", "--kv-cache-dtype-skip-layers=--", "--kv-cache-dtype", "x"],
    "equals-dd-other": ["m", "--kv-canary=--", "--kv-cache-dtype", "x"],
    "dd-after-plus": ["m", "--kv-cache-dtype-skip-layers", "0", "--", "--kv-cache-dtype", "x"],
    "abbrev-equals": ["m", "--kv-cache-dt=x"],
    "abbrev-ambiguous": ["m", "--kv-c", "x"],
    "abbrev-alias-same-action": ["m", "--tensor-parallel", "2", "--kv-cache-dtype", "x"],
    "abbrev-alias-same-action-equals": ["m", "--tensor-parallel=2", "--kv-cache-dtype", "x"],
    "negative-value": ["m", "--kv-cache-dtype", "-1"],
    "negative-exponent-value": ["m", "--kv-canary", "-1e5", "--kv-cache-dtype", "x"],
    "negative-underscore-value": ["m", "--kv-canary", "-1_000", "--kv-cache-dtype", "x"],
    "negative-dot-value": ["m", "--kv-canary", "-.5", "--kv-cache-dtype", "x"],
    "negative-positional": ["-1e5", "--kv-cache-dtype", "x"],
    "option-like-value": ["m", "--kv-cache-dtype", "-x"],
    "space-value": ["m", "--kv-cache-dtype", "-x y"],
    "space-dash-value": ["m", "--kv-canary", "--x y", "--kv-cache-dtype", "x"],
    "space-equals-value": ["m", "--kv-canary", "-x=a b", "--kv-cache-dtype", "x"],
    "nargs-plus": ["m", "--kv-cache-dtype-skip-layers", "0", "1", "--kv-cache-dtype", "x"],
    "nargs-plus-dd": ["m", "--kv-cache-dtype-skip-layers", "0", "--", "1", "--kv-cache-dtype", "x"],
    "short-attached": ["m", "-tp2", "--kv-cache-dtype", "x"],
    "short-equals": ["m", "-tp=2", "--kv-cache-dtype", "x"],
    "short-equals-dd": ["m", "-tp=--", "--kv-cache-dtype", "x"],
    "single-dash-long-prefix": ["m", "-t", "2", "--kv-cache-dtype", "x"],
    "single-dash-abbrev-equals": ["m", "-kv-c=x"],
    "empty-equals": ["m", "--kv-cache-dtype="],
    "switch-equals": ["m", "--kv-sharing-fast-prefill=1", "--kv-cache-dtype", "x"],
    "switch-equals-empty": ["m", "--kv-sharing-fast-prefill=", "--kv-cache-dtype", "x"],
    "positional-dd-value": ["--kv-cache-dtype", "x", "--", "--m"],
    "repeat-last-wins": ["m", "--kv-cache-dtype", "y", "--kv-cache-dtype", "x"],
    "invalid-then-valid": ["m", "--kv-cache-dtype", "bogus", "--kv-cache-dtype", "x"],
}

BEHAVIOUR_PARSER = {
    "options": [
        [["--kv-cache-dtype"], "1", ["x", "-1", "y"]],
        [["--kv-cache-dtype-skip-layers"], "+", None],
        [["--kv-canary"], "1", None],
        [["--kv-sharing-fast-prefill"], "0", None],
        [["--tensor-parallel-size", "-tp", "--tensor-parallel-size-alias"], "1", None],
    ],
    "positionals": ["?"],
}

_NARGS = {"?": "?", "*": "*", "+": "+", "...": argparse.REMAINDER, "A...": argparse.PARSER}


def build(spec):
    p = argparse.ArgumentParser(prog="probe", add_help=False)
    for k, arity in enumerate(spec["positionals"]):
        kwargs = {"nargs": _NARGS[arity]} if arity in _NARGS else ({"nargs": int(arity)} if arity != "1" else {})
        p.add_argument(f"positional{k}", **kwargs)
    for names, arity, choices in spec["options"]:
        dest = "kv_cache_dtype" if "--kv-cache-dtype" in names else None
        kwargs = {"dest": dest} if dest else {}
        if arity == "0":
            kwargs["action"] = "store_true"
        elif arity in _NARGS:
            kwargs["nargs"] = _NARGS[arity]
        elif arity != "1":
            kwargs["nargs"] = int(arity)
        if choices is not None:
            kwargs["choices"] = choices
        p.add_argument(*names, **kwargs)
    return p


def classify(message):
    for key, name in (("invalid choice", "invalid-choice"), ("ambiguous option", "ambiguous"),
                      ("ignored explicit argument", "ignored-explicit"), ("unrecognized arguments", "unrecognized"),
                      ("arguments are required", "required"), ("expected", "missing-value")):
        if key in message:
            return name
    return "other"


def run(parser, argv):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = parser.parse_args(argv)
        return "ok " + json.dumps(getattr(ns, "kv_cache_dtype", None))
    except SystemExit:
        lines = [ln for ln in err.getvalue().splitlines() if "error:" in ln]
        message = lines[-1].split("error:", 1)[1].strip() if lines else "?"
        return f"dies {classify(message)}: {message}"


def main(text):
    request = json.loads(text) if text.strip() else {
        "parsers": {"b": BEHAVIOUR_PARSER}, "cases": [["b", argv] for argv in BEHAVIOURS.values()]}
    built = {}
    results = []
    for pid, argv in request["cases"]:
        if pid not in built:
            built[pid] = build(request["parsers"][pid])
        results.append(run(built[pid], argv))
    return json.dumps({"python": sys.version.split()[0], "results": results})


if __name__ == "__main__":
    print(main(sys.stdin.read() if not sys.stdin.isatty() else ""))
