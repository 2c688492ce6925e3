"""Which argparse behaviours the model relies on differ across the Pythons engine images ship?

The model replays argparse as the conformance oracle's Python runs it (data.ARGPARSE_PYTHON).
This runs argparse_probe.py (the behaviours the model relies on: `--` anywhere, abbreviations with
and without `=`, aliases of one action, negative numbers, option-like values, nargs='+', short
options with attached values, explicit values on switches, a '?' positional after options) on
every CPython >= 3.10 found here (pyenv, /usr/bin) and requires that each agrees with the
oracle's. A Python that disagrees must be modelled per image or answered UNKNOWN: this test says
which behaviour, on which Python.
"""

import glob
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "argparse_probe.py")


def interpreters():
    found = {}
    candidates = [sys.executable] + sorted(glob.glob("/root/.pyenv/versions/3.*/bin/python3"))
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))
    candidates += sorted(glob.glob("/usr/bin/python3.[0-9]*"))
    for path in candidates:
        if not os.access(path, os.X_OK) or path.endswith("-config"):
            continue
        try:
            out = subprocess.run([path, PROBE], capture_output=True, text=True, timeout=60)
        except OSError:
            continue
        if out.returncode != 0:
            continue
        result = json.loads(out.stdout)
        major_minor = tuple(int(x) for x in result["python"].split(".")[:2])
        if major_minor >= (3, 10):
            found[result["python"]] = result["results"]
    return found


def test_argparse_behaviours_agree_across_pythons(request):
    results = interpreters()
    mine = results[sys.version.split()[0]]
    if len(results) < 2:
        pytest.skip(f"only {sorted(results)} found here: nothing to compare")
    differences = [f"{python}: {case}: {answer!r} (oracle's {sys.version.split()[0]}: {mine[case]!r})"
                   for python, answers in sorted(results.items()) for case, answer in answers.items()
                   if answer != mine[case]]
    request.config._kvcache_pythons = sorted(results)
    assert not differences, "argparse differs across Pythons:\n" + "\n".join(differences)
