"""The CPythons engine images may run, obtained here, and argparse run under each of them.

Where they come from:
- the host's python3 (the conformance oracle's Python, data.ARGPARSE_PYTHON) and, when present,
  pyenv's builds (~/.pyenv/versions/3.1x.y): extras, never required;
- Pyodide from the npm registry: CPython compiled to WebAssembly with its standard library,
  run under Node (pythons_pyodide.cjs). PYODIDE pins one release per CPython it carries. Each is
  installed once with `npm install` into the user cache,
      ${KVCACHE_PYTHON_CACHE:-${XDG_CACHE_HOME:-~/.cache}/kubectl-kvcache/pythons}/pyodide-<release>/
  never into the checkout (nothing of it is committed).

    scripts/engine-data --pythons            # fetch, measure, check engine/pythons.json
    scripts/engine-data --pythons --write    # ... and regenerate it

What is measured: argparse_probe.py's BEHAVIOURS (the argparse behaviours kvparse replays),
grouped by the Python difference each belongs to (GROUPS); the generated module records, per
difference, which measured Pythons behave alike. kvparse answers UNKNOWN where the Pythons an
image may run disagree (see kvparse.python_dependence).
"""

import concurrent.futures
import fcntl
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
sys.path.insert(1, os.path.join(ROOT, "tools", "enginedata"))   # the release list, the data files' writer
PROBE = os.path.join(HERE, "argparse_probe.py")
RUNNER = os.path.join(HERE, "pythons_pyodide.cjs")

import argparse_probe  # noqa: E402

# Pyodide release -> the CPython it carries (checked when it runs). One per distinct CPython:
# 0.21-0.22 carry 3.10.2, 0.23 3.11.2, 0.24-0.25 3.11.3, 0.26 3.12.1, 0.27 3.12.7, 0.28-0.29
# 3.13.2, 314.0.x 3.14.2 (pyodide/pyodide@<release>: Makefile.envs PYVERSION).
PYODIDE = {"0.22.1": "3.10.2", "0.23.4": "3.11.2", "0.25.1": "3.11.3", "0.26.4": "3.12.1",
           "0.27.7": "3.12.7", "0.29.5": "3.13.2", "314.0.8": "3.14.2"}

# The differences between Pythons the model knows, each with the BEHAVIOURS cases that show it.
# A probe case that differs across Pythons and is in no group fails the tier: a new difference
# needs a detector in kvparse.python_dependence and a group here.
GROUPS = {
    # `--name=--`: before CPython 3.12.7 / 3.13.0 argparse drops a `--` even from an explicit
    # value, stores [] and skips the choices check (python/cpython Lib/argparse.py: _get_values)
    "explicit-double-dash": ("equals-dd", "equals-dd-then-value", "equals-dd-after-value", "abbrev-equals-dd",
                             "equals-dd-plus", "equals-dd-other", "short-equals-dd"),
    # `-1e5`, `-1_000`, `-1x`: from CPython 3.14 anything starting `-<digit>` or `-.<digit>` is a
    # negative number (a value), not an option, when the parser has no option that looks like one
    # (Lib/argparse.py: _negative_number_matcher)
    "negative-number-forms": ("negative-exponent-value", "negative-underscore-value", "negative-positional",
                              "negative-dot-value", "negative-value"),
}


def cache_base():
    base = os.environ.get("KVCACHE_PYTHON_CACHE")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "kubectl-kvcache", "pythons")
    os.makedirs(base, exist_ok=True)
    return os.path.abspath(base)


MARKER = ".complete"


class FetchError(RuntimeError):
    pass


def pyodide_dir(release):
    """The installed npm package of a Pyodide release; installed first when missing (flock'd,
    filled in a temporary folder and renamed into place: never a half entry)."""
    base = cache_base()
    final = os.path.join(base, f"pyodide-{release}")
    package = os.path.join(final, "node_modules", "pyodide")
    if os.path.exists(os.path.join(final, MARKER)):
        return package
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise FetchError("node and npm are needed to run Pyodide (apt-get install nodejs npm)")
    with open(os.path.join(base, f".pyodide-{release}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(final, MARKER)):
            return package
        work = tempfile.mkdtemp(prefix=f".pyodide-{release}-", dir=base)
        with open(os.path.join(work, "package.json"), "w") as f:
            f.write('{"private": true}\n')
        out = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-save",
                              f"pyodide@{release}"], cwd=work, capture_output=True, text=True, timeout=600)
        if out.returncode != 0 or not os.path.exists(os.path.join(work, "node_modules", "pyodide", "pyodide.js")):
            shutil.rmtree(work, ignore_errors=True)
            tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
            raise FetchError(f"npm install pyodide@{release} failed: {tail}")
        open(os.path.join(work, MARKER), "w").close()
        shutil.rmtree(final, ignore_errors=True)
        os.rename(work, final)
    return package


class Interpreter:
    """One CPython that runs argparse_probe.py: a native executable or a Pyodide release."""

    def __init__(self, label, native=None, pyodide=None, extra=False):
        self.label, self.native, self.pyodide, self.extra = label, native, pyodide, extra

    def run(self, request):
        """argparse_probe's answer ({"python", "results"}) for a request (dict, or None: BEHAVIOURS)."""
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write(json.dumps(request) if request is not None else "")
            f.flush()
            if self.native:
                with open(f.name) as stdin:
                    out = subprocess.run([self.native, PROBE], stdin=stdin, capture_output=True, text=True,
                                         timeout=600)
            else:
                out = subprocess.run(["node", RUNNER, pyodide_dir(self.pyodide), PROBE, f.name],
                                     stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(f"{self.label}: the probe failed: {out.stderr.strip()[-400:]}")
        return json.loads(out.stdout)


def interpreters(extras=True):
    """The CPythons to measure: Pyodide's (required, pinned: what the generated module records),
    then with `extras` the ones this machine happens to have (the host's, pyenv's, /usr/bin's)."""
    found = [Interpreter(f"pyodide {release}", pyodide=release) for release in PYODIDE]
    if not extras:
        return found
    natives = [sys.executable] + sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))
    natives += sorted(glob.glob("/usr/bin/python3.[0-9]*"))
    seen = set()
    for path in natives:
        real = os.path.realpath(path)
        if real in seen or path.endswith("-config") or not os.access(path, os.X_OK):
            continue
        seen.add(real)
        found.append(Interpreter(path, native=path, extra=True))
    return found


def version_key(text):
    return tuple(int(p) for p in text.split("."))


def measure(request=None, workers=2, extras=True):
    """({python version: results} of the required Pythons, {version: results} of the extras, the
    seconds it took), running `workers` at a time. A required Python that cannot be fetched or
    run raises; an extra that fails to run is left out."""
    start = time.monotonic()
    found, extra = {}, {}

    def one(interp):
        try:
            return interp, interp.run(request), None
        except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as err:
            return interp, None, err

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for interp, answer, err in pool.map(one, interpreters(extras)):
            if answer is None:
                if not interp.extra:
                    raise FetchError(f"{interp.label}: {err}")
                continue
            if interp.pyodide and answer["python"] != PYODIDE[interp.pyodide]:
                raise FetchError(f"{interp.label} carries Python {answer['python']}, not {PYODIDE[interp.pyodide]}")
            into = extra if interp.extra else found
            if version_key(answer["python"]) >= (3, 10) and answer["python"] not in found:
                into.setdefault(answer["python"], answer["results"])
    ordered = lambda d: dict(sorted(d.items(), key=lambda kv: version_key(kv[0])))  # noqa: E731
    return ordered(found), ordered(extra), time.monotonic() - start


def answer_class(answer):
    """What decides a verdict in a probe answer: `ok <value>` or `dies <class>` (not the wording,
    which changes between Pythons: 3.12.7 names the wrong token in an ambiguity, 3.13 unquotes
    choices)."""
    return answer.split(":", 1)[0] if answer.startswith("dies ") else answer


def partition(results, case_indices):
    """[[versions...], ...]: the measured Pythons grouped by their answers to those cases."""
    groups = {}
    for version, answers in results.items():
        key = tuple(answer_class(answers[k]) for k in case_indices)
        groups.setdefault(key, []).append(version)
    return sorted(groups.values(), key=lambda vs: version_key(vs[0]))


def differences(results):
    """The generated PYTHON_DIFFERENCES from BEHAVIOURS results, and the cases that differ but
    belong to no group."""
    names = list(argparse_probe.BEHAVIOURS)
    grouped = {name for cases in GROUPS.values() for name in cases}
    stray = [name for k, name in enumerate(names) if name not in grouped and len(partition(results, [k])) > 1]
    out = {}
    for key, cases in GROUPS.items():
        indices = [names.index(c) for c in cases]
        parts = partition(results, indices)
        if len(parts) > 1:
            example = cases[0]
            out[key] = {"alike": parts, "example": " ".join(argparse_probe.BEHAVIOURS[example]),
                        "answers": [answer_class(results[part[0]][names.index(example)]) for part in parts]}
    return out, stray


# --- the conformance cases that meet argparse behaviours, per release -----------------------

def _touches(argv):
    """A prepared argv that meets a behaviour Pythons could differ on: `--`, explicit `=` values,
    negative-number-like words, words with spaces."""
    return any(a == "--" or (a.startswith("-") and ("=" in a or a[1:2].isdigit() or a[1:3].startswith(".")
                                                     or " " in a)) for a in argv if a)


# argv tails added for every release: the differences found, on the real option tables
TARGETED = [["--kv-cache-dtype=--"], ["--kv-cache-dtype=--", "--kv-cache-dtype", "auto"],
            ["--kv-cache-dtype", "auto", "--kv-cache-dtype=--"], ["--kv-cache-dt=--"],
            ["--kv-cache-dtype=--", "--kv-cache-dtype", "bogus"], ["--host=--", "--kv-cache-dtype", "auto"],
            ["--port=--", "--kv-cache-dtype", "auto"], ["--host", "-1e5", "--kv-cache-dtype", "auto"],
            ["--kv-cache-dtype", "-1_0"], ["-1e5", "--kv-cache-dtype", "auto"], ["--host", "-1x", "--", "m"]]


class Case:
    __slots__ = ("engine", "version", "entry", "argv", "prepared")

    def __init__(self, engine, version, entry, argv, prepared):
        self.engine, self.version, self.entry, self.argv, self.prepared = engine, version, entry, argv, prepared


def parser_spec(prof, entry):
    """A release's parser as argparse_probe builds it: every option with its arity, the dtype's
    choices where the release checks them while parsing, other options' string choices."""
    choices = dict(prof.choices)
    options = []
    for name, arity in sorted(prof.options_for(entry).items()):
        if name == "--kv-cache-dtype":
            found = None if prof.final_value_only else sorted(prof.accepted)
        else:
            found = list(choices[name]) if name in choices else None
        options.append([[name], arity, found])
    return {"options": options, "positionals": list(prof.positionals(entry) or ())}


def conformance_cases(sample_every=10, touching_every=3, targeted_every=3):
    """(parsers, [Case]): the conformance tier's table and generated cases of every release, after
    the engine's own preparation (kvparse replays it; argparse gets its output): TARGETED on every
    `targeted_every`-th release and the last, every `touching_every`-th of the cases that meet a
    behaviour in _touches and every `sample_every`-th of the others. (All of them, 11,371 cases
    per Python, took 320 s of a CI run under Pyodide; BEHAVIOURS and TARGETED hold each known
    difference, the sample the rest.)"""
    from kubectl_kvcache.engine import kvparse
    from kubectl_kvcache.engine.argv import Token
    from kubectl_kvcache.engine.releases import parse_version, profile
    import test_conformance as tc
    from releases import RELEASES

    files = {k: f"/nonexistent/{k}.yaml" for k in ("dash", "under", "bad", "other")}
    parsers, cases, seen, others, touching = {}, [], set(), 0, 0
    for engine, versions in RELEASES.items():
        for k, version in enumerate(versions):
            prof = profile(engine, parse_version(version))
            # the known differences on every third release and the last (each Python era of the
            # images: releases.image_pythons); every release was 4,290 of the cases
            targeted = k % targeted_every == 0 or k == len(versions) - 1
            extra = [(entry, tc.MODEL[entry] + tail) for entry in tc.ENTRIES[engine]
                     for tail in TARGETED] if targeted else []
            for entry, argv in extra + tc.table(engine, version, files) + tc.generated(engine, files):
                tokens = [Token(a, "args", i) for i, a in enumerate(argv)]
                try:
                    items, _ = kvparse._prepare(tokens, prof, entry)
                except kvparse._Stop:
                    continue   # the engine refuses it before argparse runs
                prepared = [it.text for it in items]
                key = (engine, version, entry, tuple(prepared))
                if key in seen:
                    continue
                seen.add(key)
                if (entry, argv) not in extra and not _touches(prepared):
                    others += 1
                    if others % sample_every:
                        continue
                elif (entry, argv) not in extra:
                    touching += 1
                    if touching % touching_every:
                        continue
                pid = f"{engine} {version} {entry}"
                if pid not in parsers:
                    parsers[pid] = parser_spec(prof, entry)
                cases.append(Case(engine, version, entry, argv, prepared))
    return parsers, cases


def verdict(answer, prof):
    """What a probe answer means for the engine: ("ok", value), ("ok", []) for argparse's dropped
    `--`, or ("dies",). vLLM 0.33 checks the stored value at start-up, not while parsing."""
    if answer.startswith("dies "):
        return ("dies",)
    value = json.loads(answer[3:])
    if isinstance(value, str) and prof.final_value_only and value not in prof.accepted:
        return ("dies",)
    return ("ok", json.dumps(value))


def render(results, diffs):
    """pythons.json: {"measured": the CPython versions measured, "differences": difference ->
    {"alike": the measured versions grouped by identical behaviour, oldest first; "answers": what
    each group's argparse does with "example", an argv that shows it}}. kvparse.python_dependence
    detects each difference in an argv and answers UNKNOWN where the Pythons an image may run fall
    in more than one group."""
    from generated import render as render_json
    data = {"measured": list(results),
            "differences": {key: {field: diffs[key][field] for field in sorted(diffs[key])} for key in sorted(diffs)}}
    return render_json(data, "tests/conformance/pythons.py (scripts/engine-data --pythons)", expand=2)


def main(argv):
    results, extra, seconds = measure(extras=False)
    diffs, stray = differences(results)
    text = render(results, diffs)
    print(f"pythons: {', '.join(results)} ({seconds:.0f} s)", file=sys.stderr)
    if stray:
        print("differences in no group (add a detector and a group): " + ", ".join(stray), file=sys.stderr)
        return 1
    from generated import write_or_compare
    return write_or_compare(argv, "pythons", text, "scripts/engine-data --pythons")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
