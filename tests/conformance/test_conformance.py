"""Differential tests: the model's answer equals the real parser's, for every conformance release.

An answer is: the value the engine runs with (or no flag: None), or that it dies. The model may
answer UNKNOWN (counted and printed); it may never give a definite answer the real parser does not
give. Table cases sit at every boundary the engine data names; the hypothesis cases mix every
--kv option, abbreviations with and without `=`, underscores, `--` anywhere, positionals, values
that look like options or negative numbers, repeated flags, dotted names and `--config` with a
real YAML file in either key spelling.
"""

import os
import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kubectl_kvcache.engine import kvparse, predict
from kubectl_kvcache.engine.releases import parse_version, profile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import tierstats as tier  # noqa: E402
from releases import LISTED, TIER as RELEASES  # noqa: E402  (this run's slice: releases.tier_releases)

ENTRIES = {"vllm": ("serve", "api_server"), "sglang": ("launch_server", "sglang_serve")}
COMMAND = {"serve": ["vllm", "serve"], "api_server": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
           "launch_server": ["python3", "-m", "sglang.launch_server"], "sglang_serve": ["sglang", "serve"]}
MODEL = {"serve": ["m"], "api_server": ["--model", "m"], "launch_server": ["--model-path", "m"],
         "sglang_serve": ["--model-path", "m"]}
PARAMS = [pytest.param(e, v, id=f"{e}-{v}") for e in RELEASES for v in RELEASES[e]]


def all_values(engine):
    from kubectl_kvcache.engine import data
    return sorted(data.parsers()[engine]["values"])


def kv_options(engine):
    from kubectl_kvcache.engine import data
    return sorted(n for n in data.parsers()[engine]["options"] if n.startswith("--kv"))


# values that are valid for the type of each non-dtype --kv option (its type conversion is not
# modelled; what is tested is which tokens it takes)
OPTION_VALUES = {"--kv-transfer-config": "{}", "--kv-events-config": "{}", "--kv-cache-memory-bytes": "1",
                 "--kv-cache-metrics-sample": "0.5", "--kv-offloading-size": "1",
                 "--kv-offloading-backend": "native", "--kv-canary": "none", "--kv-canary-sweep-interval": "1",
                 "--kv-canary-real-data": "none", "--kv-cache-dtype-skip-layers": "0"}


@pytest.fixture(scope="session")
def yaml_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("configs")
    files = {}
    for name, text in {"dash": "kv-cache-dtype: auto\n", "under": "kv_cache_dtype: auto\n",
                       "bad": "kv-cache-dtype: bogus\n", "other": "max-num-seqs: 8\n"}.items():
        path = d / f"{name}.yaml"
        path.write_text(text)
        files[name] = str(path)
    return files


def model_answer(engine, version, entry, argv):
    container = {"name": "c", "image": "", "command": COMMAND[entry] + list(argv)}
    p = predict(container, engine, version)
    p = p.parsed or p   # the parser is the oracle here; the attention-backend check is test_backends_data's
    if p.outcome == kvparse.OK:
        return ("ok", p.effective), p
    if p.outcome == kvparse.REJECTED:
        return ("dies", None), p
    return ("unknown", None), p


def oracle_answer(res):
    if res["outcome"] == "ok":
        return ("ok", res["value"])
    if res["outcome"] == "dies":
        return ("dies", None)
    return (res["outcome"], res.get("error"))


def check(oracles, engine, version, cases):
    """cases: [(entry, argv)]. Asserts no definite disagreement; counts."""
    tier.RELEASES_SEEN.add(f"{engine} {version}")
    oracle = oracles.get(engine, version)
    answers = oracle.ask_many([{"entry": e, "argv": a} for e, a in cases])
    wrong = []
    for (entry, argv), res in zip(cases, answers):
        if res["outcome"] == "absent":
            tier.STATS["absent"] += 1
            continue
        real = oracle_answer(res)
        assert real[0] in ("ok", "dies"), f"{engine} {version} {entry} {argv}: the harness failed: {res}"
        mine, pred = model_answer(engine, version, entry, argv)
        tier.STATS["cases"] += 1
        if mine[0] == "unknown":
            tier.STATS["unknown"] += 1
            tier.UNKNOWN_REASONS[re.sub(r"\[\d+\]|'[^']*'|\S+\.yaml|(vLLM|SGLang) [\w.]+", "_", pred.reason)[:110]] += 1
            continue
        if mine == real or (mine == ("ok", None) and real == ("ok", "auto")):  # flag absent: the default
            tier.STATS["agree"] += 1
            continue
        tier.STATS["disagree"] += 1
        wrong.append(f"{entry} {argv}: model {mine} ({pred.reason}); real {real} {res.get('error', '')}")
    if wrong:
        print(f"\n{engine} {version}: DISAGREEMENTS\n" + "\n".join(wrong), flush=True)
    assert not wrong, f"{engine} {version}: {len(wrong)} definite disagreements:\n" + "\n".join(wrong[:15])


def check_preparation(oracle, engine, version, cases):
    """The argv the release's own preparation hands to argparse (vLLM's FlexibleArgumentParser:
    `_` spellings, -O rewriting, dotted JSON, the --model move) equals the model's replay of it."""
    answers = oracle.ask_many([{"prepared": e, "argv": a} for e, a in cases])
    prof = profile(engine, parse_version(version))
    wrong = []
    for (entry, argv), res in zip(cases, answers):
        if res["outcome"] == "absent" or res["handed"] is None or "--config" in " ".join(argv):
            continue
        try:
            mine = kvparse.prepared_texts(argv, prof, entry)
        except kvparse._Stop as stop:
            if stop.parse.outcome == kvparse.UNKNOWN:
                continue
            mine = None
        if mine != res["handed"]:
            wrong.append(f"{entry} {argv}: model {mine}; real {res['handed']}")
    assert not wrong, f"{engine} {version}: the preparation differs:\n" + "\n".join(wrong[:15])


def table(engine, version, files):
    """Cases at every boundary: all values, the issue-13 findings, abbreviations, -- and positionals.
    The first entry point gets every case, the second the ones where entry points differ."""
    values = all_values(engine) + ["bf16", "FP8", "half", "", "Auto", "fp8 ", "bogus", "-1", "-x"]
    tails = [[]] + [["--kv-cache-dtype", v] for v in values]
    tails += [[f"--kv-cache-dtype={v}"] for v in ("auto", "", "bogus", "fp8", "bf16")]
    for name in kv_options(engine):
        if name != "--kv-cache-dtype":
            tails += [[name, OPTION_VALUES.get(name, "1"), "--kv-cache-dtype", "auto"],
                      [name, "--kv-cache-dtype", "auto"]]
    for n in range(len("--k"), len("--kv-cache-dtype")):
        prefix = "--kv-cache-dtype"[:n]
        tails += [[prefix, "auto"]] + ([[f"{prefix}=auto"]] if n in (4, 5, 10, 14) else [])
    findings = [
        ["--kv-cache-dtype", "bogus", "--kv-cache-dtype", "auto"],
        ["--kv-cache-dtype", "auto", "--kv-cache-dtype", "bogus"],
        ["--kv-cache-dtype", "auto", "--"], ["--", "--kv-cache-dtype", "auto"], ["--kv-cache-dtype", "--", "auto"],
        ["--"], ["extra", "--kv-cache-dtype", "auto"], ["--kv-cache-dtype", "auto", "extra"],
        ["--kv_cache_dtype", "auto"], ["--kv-cache_dtype=auto"], ["--KV-CACHE-DTYPE", "auto"],
        ["--kv-cache-dtype.x", "auto"], ["--kv-cache-dtype.x=auto"],
        ["--kv-cache-dtype-skip-layers", "0", "1", "--kv-cache-dtype", "auto"],
        ["--kv-canary", "x", "--kv-cache-dtype", "auto"], ["--kv-canary", "--kv-cache-dtype", "auto"],
        ["--host", "--kv-cache-dtype", "auto"], ["--host", "-1.5", "--kv-cache-dtype", "auto"],
        ["--host", "h", "--kv-cache-dtype", "auto"], ["--kv-cache-dtype fp8"],
        ["--config", files["dash"]], ["--config", files["under"]], ["--config", files["bad"]],
        ["--config", files["dash"], "--kv-cache-dtype", "auto"], ["--config", files["other"]],
        ["--config", files["bad"], "--kv-cache-dtype", "auto"], [f"--config={files['dash']}"], ["--config"],
        ["--config", files["other"], "--kv-cache-dtype", "bogus"], ["--config", "--kv-cache-dtype", "auto"],
    ]
    first, second = ENTRIES[engine]
    cases = [(first, MODEL[first] + tail) for tail in tails + findings]
    cases += [(second, MODEL[second] + tail) for tail in findings + [[], ["--kv-cache-dtype", "auto"],
                                                                      ["--kv-cache-dtype", "bogus"], ["--kv", "auto"]]]
    cases += [("serve", ["--kv-cache-dtype", "auto", "m"]), ("serve", ["--model", "m", "--kv-cache-dtype", "auto"]),
              ("serve", ["--kv-cache-dtype", "auto"]), ("serve", ["m", "n", "--kv-cache-dtype", "auto"]),
              ("api_server", ["m", "--kv-cache-dtype", "auto"])] if engine == "vllm" else [
              ("launch_server", ["--kv-cache-dtype", "auto"]), ("sglang_serve", ["--model", "m"]),
              ("sglang_serve", ["--model-path=m", "--kv-cache-dtype", "auto"])]
    return cases


NO_VALUE_KINDS = ("boolean", "flag", "store_true", "store_false", "store_const", "count")


def spellings(described, entry):
    """Cases for every no-value option of the real parser (`describe` of this entry point): each
    `--no-X` the parser registers, and `--no-X` for each `--X` it does not (argparse's
    BooleanOptionalAction, vllm@0.33 EnableDisableAction's hidden forms), each in the `_`
    spelling too, alone and with the dtype after it; and -O in every form vLLM rewrites."""
    actions = described.get("actions", {})
    flags = sorted(n for n, row in actions.items() if n.startswith("--") and row.get("action") in NO_VALUE_KINDS)
    names = set(flags)
    for name in flags:
        if not name.startswith("--no-"):
            names.add("--no-" + name[2:])
        else:
            names.add("--" + name[5:])
    tails = []
    for name in sorted(names):
        tails += [[name], [name.replace("-", "_").replace("__", "--", 1), "--kv-cache-dtype", "auto"]]
    tails += [["--no-enable-prefix", "--kv-cache-dtype", "auto"], ["--no_enable-prefix-caching=1"],
              ["-O3"], ["-O", "3"], ["-O=3"], ["-O", "x"], ["-O"], ["-Odecode"], ["-O.level=3"], ["-O.mode=3"],
              ["-O", "0", "--kv-cache-dtype", "fp8"], ["-O4"], ["-O", "4"], ["-O=", "x"], ["--port", "-O3"],
              ["-O3", "-O.x=1"], ["-O0", "--kv-cache-dtype", "bogus"]]
    return [(entry, MODEL[entry] + tail) for tail in tails]


# Items for the engines' own Actions that engine-data did not probe them with (held out of
# fuzz_types.ACTION_PROBES): LoRA adapters as people name them, documents with fields in another
# order, and near misses.
HELD_OUT_ITEMS = ["my-adapter=/data/lora/x", "a=b=c=d", "n=p,q", "a=b c", "=", "x", "{", "}", " { } ",
                  '{"path": "/q", "name": "z"}', '{"name": "z", "path": "/q", "base_model_name": "b"}',
                  '{"name": "z", "path": 3}', '{"name": "z", "path": "/q", "extra": 1}', '{"name": "z"}',
                  '{"lora_path": "/q", "lora_name": "z"}', '{"lora_name": "z", "lora_path": "/q", "extra": 1}',
                  '{"lora_name": "z"}', "None", "", "  ", "{}", "[]"]


def custom_actions(described, entry):
    """Cases for every option whose value the release's own argparse Action takes (kind "custom"):
    each held-out item alone, after another item, and two of them, with the dtype after."""
    names = sorted(n for n, row in described.get("actions", {}).items()
                   if n.startswith("--") and row.get("action") == "custom" and "action_probes" in row)
    cases = []
    for name in names:
        for k, item in enumerate(HELD_OUT_ITEMS):
            cases.append((entry, MODEL[entry] + [name, item, "--kv-cache-dtype", "auto"]))
            cases.append((entry, MODEL[entry] + [name, "a=b", item, HELD_OUT_ITEMS[k - 1]]))
        cases.append((entry, MODEL[entry] + [f"{name}=my-adapter=/data/lora/x"]))
    return cases


def argv_strategy(engine, files):
    names = kv_options(engine) + ["--kv-cache-dtype"] * 3
    abbreviations = [n[:k] for n in names for k in range(3, len(n))]
    values = all_values(engine) + ["bogus", "-1", "-0.5", "-x", "", "m", "extra", "fp8"]
    option = st.sampled_from(names + abbreviations)
    spelled = st.one_of(option, option.map(lambda n: n.replace("-", "_").replace("__", "--", 1)))
    value = st.sampled_from(values)
    word = st.one_of(
        spelled.map(lambda n: [n]),
        st.tuples(spelled, value).map(list),
        st.tuples(spelled, value).map(lambda t: [f"{t[0]}={t[1]}"]),
        value.map(lambda v: [v]),
        st.just(["--"]),
        st.sampled_from([["--host", "h"], ["--host"], ["--port", "8000"], ["--kv-cache-dtype.x", "auto"],
                         ["--config", files["dash"]], ["--config", files["under"]], ["--config", files["bad"]],
                         ["--kv-cache-dtype-skip-layers", "0", "1"]]),
    )
    return st.lists(word, max_size=6).map(lambda ws: [t for w in ws for t in w])


EXAMPLES = int(os.environ.get("KVCACHE_CONFORMANCE_EXAMPLES", "40"))


def generated(engine, files):
    """A batch of hypothesis-drawn argv, each for one of the engine's entry points."""
    found = []

    @settings(max_examples=1, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def draw(data):
        batch = data.draw(st.lists(argv_strategy(engine, files), min_size=EXAMPLES, max_size=EXAMPLES))
        entries = ENTRIES[engine]
        found[:] = [(entries[k % 2], MODEL[entries[k % 2]] + argv) for k, argv in enumerate(batch)]

    draw()
    return found


def release_facts(engine, version):
    """What parsers.py says about exactly this sampled release."""
    from kubectl_kvcache.engine import data
    real = data.parsers()[engine]
    v = parse_version(version)

    def at(rows):
        for value, first, until in rows:
            if v >= parse_version(first) and (until is None or v < parse_version(until)):
                return value
        return None
    options = {n: at(rows) for n, rows in real["options"].items() if at(rows) is not None}
    values = sorted(n for n, rows in real["values"].items() if at([[True] + r for r in rows]))
    extra = {"required": sorted(n for n, rows in real["required"].items() if at([[True] + r for r in rows])),
             "option_choices": {n: at(rows).split(" ") for n, rows in real["choices"].items() if at(rows)},
             "positionals": {e: at(rows) for e, rows in real["positionals"].items() if at(rows)}}
    return options, values, extra


@pytest.mark.parametrize("engine,version", PARAMS)
def test_release(oracles, yaml_files, engine, version):
    """One release: the checked-in data equals its real parser; table and generated cases agree."""
    oracle = oracles.get(engine, version)
    try:
        primary = {"vllm": "api_server", "sglang": "launch_server"}[engine]   # every release has it
        described = oracle.ask({"describe": primary})
        options, values, extra = release_facts(engine, version)
        drift = f"{engine} {version}: parsers.py differs from the real parser: run scripts/engine-data --write"
        assert options == described["options"], drift
        assert extra["required"] == described["required"], drift
        kv_choices = lambda c: {k: v for k, v in c.items() if k.startswith("--kv")}  # noqa: E731 - fixed ones
        assert kv_choices(extra["option_choices"]) == kv_choices(described["option_choices"]), drift
        assert extra["positionals"].get(primary) == (" ".join(described["positionals"]) or "-"), drift
        real_values = described["choices"] if described["choices"] is not None else described["validator"]
        assert values == sorted(real_values), f"{engine} {version}: accepted values differ from the real parser"
        check(oracles, engine, version, table(engine, version, yaml_files) + generated(engine, yaml_files)
              + spellings(described, primary) + custom_actions(described, primary))
        check_preparation(oracle, engine, version, table(engine, version, yaml_files)[::3]
                          + spellings(described, primary)[::4])
    finally:
        oracles.close_one(engine, version)


def test_listed_releases_are_covered():
    for engine, versions in LISTED.items():
        assert set(versions) <= set(RELEASES[engine])
