"""A seeded differential fuzzer: random argv from each release's REAL option table, through the
real parser (oracle.py) and through the plugin's model (engine.predict); a definite answer of the
plugin that the real parser contradicts is a failure, UNKNOWN is allowed and counted.

    python -m tests.conformance.fuzz [--seed S] [--count N] [--release vllm==0.33.0 ...] [--all]

Each case is one entry point of one release (vllm serve, python -m vllm.entrypoints.openai.
api_server, python -m sglang.launch_server, sglang serve) and an argv drawn from the option table
that release's own parser reports (`describe`: every option with its arity, action, choices and
what its `type=` accepts): options with values right and wrong for their type, choices and values
outside them, the dtype in every spelling (`--kv-cache-dtype X`, `=X`, abbreviations, `_`,
repeats), `--`, positionals before and after options, unknown options, `-h`, and `--config`
files (good, broken, empty, missing, `port: abc`). Every disagreement is minimized (delta
debugging over the argv, asking the real parser again) and printed.
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(ROOT, "tools", "enginedata"))   # the oracle and the release list
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import fuzz_types  # noqa: E402
from client import OracleProcess  # noqa: E402
from releases import BETWEEN, LISTED, RELEASES  # noqa: E402

from kubectl_kvcache.engine import kvparse, predict  # noqa: E402

# in the order engine_data and the tier ask (the oracle memoizes make_arg_parser across entry points)
ENTRIES = {"vllm": ("api_server", "serve"), "sglang": ("launch_server", "sglang_serve")}
COMMAND = {"serve": ["vllm", "serve"], "api_server": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
           "launch_server": ["python3", "-m", "sglang.launch_server"], "sglang_serve": ["sglang", "serve"]}
DEFAULT_SEED = 20261201
CONFIGS = {"good": "max-num-seqs: 8\n", "dtype": "kv-cache-dtype: fp8\n", "dtype_under": "kv_cache_dtype: auto\n",
           "bad_dtype": "kv-cache-dtype: bogus\n", "broken": "port: [1\n  x: : :\n", "empty": "",
           "port_abc": "port: abc\n", "list": "- a\n- b\n"}
BOGUS = ["bogus", "FP8", "Auto", "fp16", "half", "", "fp8 ", "-1", "x"]


def config_files(folder):
    files = {}
    for name, text in CONFIGS.items():
        path = os.path.join(folder, f"{name}.yaml")
        with open(path, "w") as f:
            f.write(text)
        files[name] = path
    files["missing"] = os.path.join(folder, "missing.yaml")
    files["json"] = os.path.join(folder, "c.json")
    with open(files["json"], "w") as f:
        f.write("{}")
    return files


class Table:
    """One entry point's real option table, as the release's own parser describes it."""

    def __init__(self, described, accepted):
        self.options = described["options"]
        self.actions = described.get("actions", {})
        self.required = described["required"]
        self.positionals = described["positionals"]
        self.accepted = accepted
        self.names = sorted(n for n in self.options if n.startswith("--") and n != "--kv-cache-dtype")
        self.short = sorted(n for n in self.options if not n.startswith("--"))

    def good_value(self, rng, name):
        row = self.actions.get(name, {})
        if row.get("choices"):
            return rng.choice(row["choices"])
        taken = row.get("action_probes")
        if taken and rng.random() < 0.7:
            # the engine's own Action (--lora-modules): the items it takes, and the ones it refuses
            items = fuzz_types.ACTION_PROBES
            ok = [items[k] for k, c in enumerate(taken[:len(items)]) if c == "1"]
            return rng.choice(ok if ok and rng.random() < 0.7 else items)
        probes = row.get("probes")
        if probes:
            ok = [fuzz_types.PROBES[k] for k, c in enumerate(probes) if c == "1"]
            if ok:
                return rng.choice(ok)
        return rng.choice(["1", "m", "x"])

    def wrong_value(self, rng, name):
        row = self.actions.get(name, {})
        probes = row.get("probes")
        if probes and "0" in probes and rng.random() < 0.8:
            return rng.choice([fuzz_types.PROBES[k] for k, c in enumerate(probes) if c == "0"])
        return rng.choice(fuzz_types.PROBES + BOGUS)


def option_words(rng, table, name):
    arity = table.options[name]
    if arity == "0":
        return [name]
    count = {"1": 1, "?": rng.choice([0, 1]), "*": rng.choice([0, 1, 2]), "+": rng.choice([1, 2])}.get(
        arity, int(arity) if arity.isdigit() else 1)
    wrong = rng.random() < 0.25
    values = [table.wrong_value(rng, name) if wrong else table.good_value(rng, name) for _ in range(count)]
    if count == 1 and rng.random() < 0.3:
        return [f"{name}={values[0]}"]
    return [name] + values


def dtype_words(rng, table, engine):
    value = rng.choice(sorted(table.accepted)) if rng.random() < 0.7 else rng.choice(BOGUS)
    full = "--kv-cache-dtype"
    spelling = rng.random()
    if spelling < 0.5:
        name = full
    elif spelling < 0.7:
        name = full[:rng.randrange(4, len(full))]
    elif spelling < 0.85:
        name = "--kv_cache_dtype" if rng.random() < 0.7 else "--kv-cache_dtype"
    else:
        name = rng.choice(["--KV-CACHE-DTYPE", "--kv-cache-dtype-", "--kv", "--kv-cache-dtype.x"])
    if rng.random() < 0.35:
        return [f"{name}={value}"]
    return [name, value]


def respelled(rng, table, name):
    """`name` as people also write it, whether or not the parser registers that spelling: the `--no-`
    form of a flag (or the flag without its `--no-`), and `_` for `-` in the name. Drawn apart from
    the option table, so a spelling the table lacks but the release accepts (or the reverse) shows."""
    if table.options.get(name) == "0" and rng.random() < 0.5:
        name = "--" + name[5:] if name.startswith("--no-") else "--no-" + name[2:]
    if rng.random() < 0.5:
        name = "--" + name[2:].replace("-", "_")
    return name


O_FORMS = [["-O3"], ["-O", "3"], ["-O=2"], ["-O0"], ["-O", "1"], ["-Odecode"], ["-O.level=3"], ["-O.mode=3"],
           ["-O"], ["-O", "x"], ["-O4"], ["-O", "4"], ["-O="], ['-O{"level": 3}'], ["-O", '{"mode": 3}']]


def draw(rng, engine, entry, table, files):
    """One argv for `entry`, without the command words."""
    items = []
    for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4, 6])):
        pick = rng.random()
        if pick < 0.55 and table.names:
            name = rng.choice(table.names)
            if rng.random() < 0.08:
                name = name[:rng.randrange(3, len(name))] if len(name) > 4 else name  # an abbreviation
            elif rng.random() < 0.15:
                spelled, words = respelled(rng, table, name), option_words(rng, table, name)
                items.append([spelled + words[0][len(name):]] + words[1:])
                continue
            items.append(option_words(rng, table, name) if name in table.options else [name, "1"])
        elif pick < 0.6 and table.short:
            name = rng.choice(table.short)
            items.append(option_words(rng, table, name))
        elif pick < 0.68:
            items.append(rng.choice([["--"], ["extra"], ["--zz-unknown"], ["--zz-unknown=1"], ["-1"], ["-x"],
                                     ["--port", "abc"], ["--port=1.5"]]))
        elif pick < 0.72:
            key = rng.choice(sorted(files))
            items.append(["--config", files[key]] if rng.random() < 0.85 else [f"--config={files[key]}"])
        elif pick < 0.73:
            items.append([rng.choice(["-h", "--help"])])
        elif pick < 0.76 and engine == "vllm":
            items.append(list(rng.choice(O_FORMS)))
        else:
            items.append(dtype_words(rng, table, engine))
    if rng.random() < 0.5:
        items.append(dtype_words(rng, table, engine))
    model = {"serve": [["m"], ["m"], ["--model", "m"], ["--model=m"], []],
             "api_server": [["--model", "m"], ["--model=m"], []],
             "launch_server": [["--model-path", "m"], ["--model-path=m"], ["--model", "m"], []],
             "sglang_serve": [["--model-path", "m"], ["m"], ["--model", "m"], []]}[entry]
    chosen = rng.choice(model) if rng.random() < 0.95 else rng.choice(model[-1:])
    rng.shuffle(items)
    at = 0 if rng.random() < 0.6 else rng.randrange(len(items) + 1)
    items.insert(at, chosen)
    return [w for it in items for w in it]


# --- comparing ---------------------------------------------------------------------------------

def real_answer(res):
    if res["outcome"] == "ok":
        return ("ok", res["value"] if res["value"] is not None else "auto")
    if res["outcome"] in ("dies", "exit0", "noparse"):
        # exit0/noparse: help printed, the entry point returned without starting the engine
        return ("dies", None)
    return (res["outcome"], res.get("error"))


def model_answer(engine, version, entry, argv):
    p = predict({"name": "c", "image": "", "command": COMMAND[entry] + list(argv)}, engine, version)
    p = p.parsed or p   # the parser is the oracle here; the attention-backend check is test_backends_data's
    if p.outcome == kvparse.OK:
        return ("ok", p.effective or "auto"), p
    if p.outcome == kvparse.REJECTED:
        return ("dies", None), p
    return ("unknown", None), p


def differs(mine, real):
    return mine[0] != "unknown" and mine != real


def minimize(argv, still_fails):
    """ddmin over the argv's words: a smallest argv (1-minimal) for which still_fails holds."""
    n = 2
    while len(argv) >= 2:
        chunk = max(1, len(argv) // n)
        parts = [argv[k:k + chunk] for k in range(0, len(argv), chunk)]
        reduced = False
        for k in range(len(parts)):
            candidate = [w for j, p in enumerate(parts) if j != k for w in p]
            if still_fails(candidate):
                argv, n, reduced = candidate, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(argv):
                break
            n = min(len(argv), n * 2)
    if len(argv) == 1 and still_fails([]):
        return []
    return argv


class Result:
    def __init__(self, engine, version):
        self.engine, self.version = engine, version
        self.cases = self.unknown = self.agree = self.absent = 0
        self.failures = []      # (entry, argv, minimized argv, model answer, reason, real answer, error)
        self.seconds = 0.0

    def line(self):
        return (f"{self.engine} {self.version}: {self.cases} cases, {self.agree} agree, {self.unknown} UNKNOWN, "
                f"{len(self.failures)} definite disagreements ({self.seconds:.1f} s)")


def judge(result, engine, version, cases, answers):
    """Count and collect the plugin's answers against the real ones."""
    for (entry, argv), res in zip(cases, answers):
        if res["outcome"] == "absent":
            result.absent += 1
            continue
        real = real_answer(res)
        if real[0] not in ("ok", "dies"):
            raise RuntimeError(f"{engine} {version} {entry} {argv}: the harness failed: {res}")
        mine, pred = model_answer(engine, version, entry, argv)
        result.cases += 1
        if mine[0] == "unknown":
            result.unknown += 1
        elif differs(mine, real):
            result.failures.append([entry, argv, None, mine, pred.reason, real, res.get("error", "")])
        else:
            result.agree += 1


MINIMIZE = int(os.environ.get("KVCACHE_FUZZ_MINIMIZE", "12"))
SAVE = None   # {release: [[entry, argv, real answer], ...]} when --save is given


def with_start_up_combinations(cases, engine, version, seed):
    """A quarter of the cases also get options the start-up checks read together (combo_draw.py),
    drawn from a stream of their own so the other cases stay as they were."""
    import combo_draw
    rng = random.Random(f"{seed}:{engine}:{version}:start-up")
    options = {}
    out = []
    for entry, argv in cases:
        if rng.random() < 0.25:
            if entry not in options:
                options[entry] = combo_draw.read_options(engine, version, entry)
            extra = combo_draw.words(rng, engine, version, entry, options[entry])
            at = len(argv) if rng.random() < 0.7 else rng.randrange(len(argv) + 1)
            argv = argv[:at] + extra + argv[at:]
        out.append((entry, argv))
    return out


def fuzz_release(engine, version, count, seed, files, minimize_at_most=None):
    """Fuzz one release: `count` cases split over its entry points."""
    from kubectl_kvcache.engine.releases import parse_version, profile
    start = time.monotonic()
    result = Result(engine, version)
    rng = random.Random(f"{seed}:{engine}:{version}")
    oracle = OracleProcess(engine, version)
    try:
        accepted = profile(engine, parse_version(version)).accepted
        tables = {}
        for entry in ENTRIES[engine]:
            described = oracle.ask({"describe": entry})
            if described and "options" in described:
                real_accepted = described["choices"] or described["validator"] or accepted
                tables[entry] = Table(described, set(real_accepted))
        entries = sorted(tables)
        cases = [(entries[k % len(entries)], None) for k in range(count)]
        cases = [(e, draw(rng, engine, e, tables[e], files)) for e, _ in cases]
        cases = with_start_up_combinations(cases, engine, version, seed)
        answers = oracle.ask_many([{"entry": e, "argv": a} for e, a in cases])
        if SAVE is not None:
            SAVE[f"{engine}=={version}"] = [[e, a, r] for (e, a), r in zip(cases, answers)]
        judge(result, engine, version, cases, answers)
        for failure in result.failures[:MINIMIZE if minimize_at_most is None else minimize_at_most]:
            entry, argv, _, mine, _, real, _ = failure

            def still_fails(candidate, entry=entry, kind=(mine[0], real[0])):
                res = oracle.ask({"entry": entry, "argv": candidate})
                if res["outcome"] not in ("ok", "dies", "exit0", "noparse"):
                    return False
                r = real_answer(res)
                m, _ = model_answer(engine, version, entry, candidate)
                return differs(m, r) and (m[0], r[0]) == kind
            small = minimize(list(argv), still_fails)
            res = oracle.ask({"entry": entry, "argv": small})
            m, p = model_answer(engine, version, entry, small)
            failure[2:] = [small, m, p.reason, real_answer(res), res.get("error", "")]
    finally:
        oracle.close()
    result.seconds = time.monotonic() - start
    return result


def report(result, out=sys.stdout):
    print(result.line(), file=out)
    for entry, argv, small, mine, reason, real, error in result.failures:
        shown = small if small is not None else argv
        print(f"  {' '.join(COMMAND[entry])} {' '.join(repr(w) if not w or ' ' in w else w for w in shown)}\n"
              f"    plugin: {mine[0]} {mine[1] or ''} ({reason})\n"
              f"    real:   {real[0]} {real[1] or ''} {error}", file=out)


def parse_release(text):
    engine, _, version = text.replace(" ", "==").partition("==")
    if engine not in RELEASES or version not in RELEASES[engine]:
        raise argparse.ArgumentTypeError(f"{text!r} is not a conformance release (tools/enginedata/releases.py)")
    return engine, version


def ci_releases():
    """The releases the CI run fuzzes: the ones issue 13 lists by name, and the ones issue 38
    names between the old samples (each judged by its own table now, not a neighbour's)."""
    return [(e, v) for e in ("vllm", "sglang") for v in LISTED[e] + BETWEEN[e]]


def run_all(releases, count, seed, jobs=2, out=sys.stdout):
    import concurrent.futures
    results = []
    with tempfile.TemporaryDirectory() as folder:
        files = config_files(folder)
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            futures = [pool.submit(fuzz_release, e, v, count, seed, files) for e, v in releases]
            for fut in futures:
                results.append(fut.result())
                report(results[-1], out)
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.conformance.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=int(os.environ.get("KVCACHE_FUZZ_SEED", DEFAULT_SEED)))
    ap.add_argument("--count", type=int, default=1000, help="cases per release (default 1000)")
    ap.add_argument("--release", type=parse_release, action="append", help="ENGINE==VERSION (repeatable)")
    ap.add_argument("--all", action="store_true", help="every conformance release (default: the CI set)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--save", metavar="FILE", help="also write the cases and the real answers to FILE (JSON)")
    ap.add_argument("--replay", metavar="FILE", help="judge the plugin on the cases and answers saved in FILE, "
                                                     "without running the real parsers")
    args = ap.parse_args(argv)
    if args.replay:
        return replay(args.replay)
    global SAVE
    if args.save:
        SAVE = {}
    releases = args.release or ([(e, v) for e in RELEASES for v in RELEASES[e]] if args.all else ci_releases())
    results = run_all(releases, args.count, args.seed, args.jobs)
    cases = sum(r.cases for r in results)
    wrong = sum(len(r.failures) for r in results)
    unknown = sum(r.unknown for r in results)
    print(f"total: {len(results)} releases, {cases} cases, {unknown} UNKNOWN, {wrong} definite disagreements "
          f"(seed {args.seed})")
    if args.save:
        with open(args.save, "w") as f:
            json.dump(SAVE, f)
    return 1 if wrong else 0


def replay(path):
    with open(path) as f:
        saved = json.load(f)
    cases = unknown = wrong = 0
    for release, rows in saved.items():
        engine, version = release.split("==")
        result = Result(engine, version)
        judge(result, engine, version, [(e, a) for e, a, _ in rows], [r for _, _, r in rows])
        report(result)
        cases, unknown, wrong = cases + result.cases, unknown + result.unknown, wrong + len(result.failures)
    print(f"total: {len(saved)} releases, {cases} cases, {unknown} UNKNOWN, {wrong} definite disagreements")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
