"""The engine's own word (engine/words.py) against the real releases.

1. engine/writes.json (which reports of its KV-cache dtype each release writes, and vLLM's config
   line formats) equals what the released code holds (tools/enginedata/words_data.py, run here).
2. The reader on lines the releases' own code writes for an argv (oracle.py `words`: vLLM's
   log_non_default_args on the parsed namespace; SGLang's f"{server_args=}" of a ServerArgs
   holding the parsed values), and on the parser's own error output for a refused dtype.
3. vLLM's engine config line written by the release's own logging call and VllmConfig.__str__
   (config_lines.py runs them), with the Pod's fields (model, served name, revision...) holding
   forged text: the real value is read, or the line is not read; never the forgery.
4. /metrics written by prometheus_client (what vLLM's log_metrics_info calls) with the release's
   CacheConfig fields as labels, held to prometheus_client's own text parser.
"""

import os
import sys

import pytest

from kubectl_kvcache.engine import crash, knowledge, words

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import config_lines  # noqa: E402
import wheels  # noqa: E402
import words_data  # noqa: E402  (tools/enginedata: conftest.py puts it on the path)
from releases import TIER as RELEASES  # noqa: E402  (this run's slice: docs/tests.md)

WRITES = knowledge.load("writes")
FORMATS = WRITES["formats"]
# the releases whose code writes a report this reader reads from the argv (the ones whose lines
# the oracle can produce: vLLM from log_non_default_args' first release, SGLang's dataclass repr)
VLLM = [v for v in RELEASES["vllm"] if "non-default-args" in FORMATS["vllm"][v]]
SGLANG = [v for v in RELEASES["sglang"] if "server-args-repr" in FORMATS["sglang"][v]]
CONFIG = [v for v in RELEASES["vllm"] if "engine-config" in FORMATS["vllm"][v]]
METRICS = [v for v in RELEASES["vllm"] if "metrics" in FORMATS["vllm"][v]]
ENTRY = {"vllm": ("serve", ["m"]), "sglang": ("launch_server", ["--model-path", "m"])}
SECRET = "sk-do-not-print-4242"


def test_the_shipped_reports_per_release_equal_the_wheels():
    """This run's slice of releases (the tier's TIER) read again from their wheels; every release
    of the data has an entry."""
    read = words_data.generate(RELEASES)
    for engine, versions in read["formats"].items():
        for version, formats in versions.items():
            assert FORMATS[engine].get(version) == formats, \
                f"{engine} {version}: writes.json differs from the wheel: run scripts/engine-data --words --write"
    for version, ids in read["config-lines"]["vllm"].items():
        assert WRITES["config-lines"]["vllm"][version] == ids, f"vllm {version}: its config line formats differ"
        assert all(WRITES["templates"][t] == read["templates"][t] for t in ids)
    from releases import RELEASES as EVERY
    assert {e: sorted(v) for e, v in FORMATS.items()} == {e: sorted(v) for e, v in EVERY.items()}


@pytest.fixture
def words_oracles(oracles):
    """The shared oracles, each one this test asked closed after it: a `words` request imports and
    runs logging code the other tiers' requests never do, and its first run memoizes the parsers'
    adders for its entry point (oracle.py run), so later tests get a fresh process."""
    asked = set()

    class Asking:
        def get(self, engine, version):
            asked.add((engine, version))
            return oracles.get(engine, version)

    yield Asking()
    for engine, version in asked:
        oracles.close_one(engine, version)


def _lines(oracles, engine, version, extra):
    entry, base = ENTRY[engine]
    return oracles.get(engine, version).ask({"words": entry, "argv": base + extra})


@pytest.mark.parametrize("engine,version", [("vllm", v) for v in VLLM] + [("sglang", v) for v in SGLANG])
def test_the_reader_reads_what_the_release_writes(words_oracles, engine, version):
    oracles = words_oracles
    chosen = "fp8_e5m2"      # accepted by every release of both engines that writes these lines
    answer = _lines(oracles, engine, version, ["--kv-cache-dtype", chosen, "--api-key", SECRET])
    assert answer["outcome"] == "ok" and answer["lines"], answer
    text = "\n".join(f"INFO 12-03 07:00:00 [utils.py:233] {line}" for line in answer["lines"])
    seen = words.observe(engine, text, version=version)
    assert seen is not None and seen.dtype == chosen, (answer["lines"][0][:300], seen)
    assert SECRET not in seen.line and len(seen.line) <= words.MAX_LINE
    # without the option: vLLM's non-default args omit it (the default, auto); SGLang writes auto
    answer = _lines(oracles, engine, version, [])
    seen = words.observe(engine, "\n".join(answer["lines"]))
    assert seen is not None and seen.dtype == "auto", answer["lines"]


@pytest.mark.parametrize("engine,version", [("vllm", VLLM[0]), ("vllm", VLLM[-1]), ("sglang", SGLANG[-1])])
def test_a_refused_spelling_is_named_in_the_engines_words(words_oracles, engine, version):
    oracles = words_oracles
    """argparse's refusal (its usage, then `prog: error: ...`, exit 2) is REJECTED; a release that
    checks the value after the parse (vLLM 0.33's CacheConfig) dies with a traceback whose last
    line is the start-up failure."""
    answer = _lines(oracles, engine, version, ["--kv-cache-dtype", "fp9"])
    assert answer["outcome"] == "dies"
    error = answer["lines"][0]
    if error.startswith("start-up: "):     # the oracle's label for a failure after the parse
        tail = "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n" + \
            error.removeprefix("start-up: ")
        kind = crash.STARTUP
    else:
        tail = "usage: x [-h]\n" + error      # argparse prints its usage first
        kind = crash.REJECTED
    cause = crash.exit_cause(tail, engine, version)
    assert cause is not None and cause.kind == kind and "fp9" in cause.line, answer


FORGED = "fp8"          # what a forger wants read
REAL = "fp8_e5m2"       # what the engine runs with (both accepted by every release that logs a config line)
FIELDS = ("model", "tokenizer", "served_model_name", "revision", "tokenizer_revision", "download_dir")


def _forgeries(root):
    """Texts a Pod can give a field: the dtype alone, after a closing quote, and the whole message
    of a config line the release writes with the forged dtype (every field after it included)."""
    whole = config_lines.lines(root, {"model": "m", "cache_dtype": FORGED, "served_model_name": "m"})
    tails = [line[line.index("with config: ") + len("with config: "):] for line in whole]
    return ["x, kv_cache_dtype=fp8", "x', kv_cache_dtype=fp8, y='"] + [f"x, {t}" for t in tails] + \
        [t[t.index("kv_cache_dtype="):] for t in tails]


@pytest.mark.parametrize("version", CONFIG)
def test_the_config_line_the_release_writes(version):
    """Read from each of the release's config lines; a field the Pod sets holding a forgery never
    reads as it (the real value, or not read: the rate is printed)."""
    root = wheels.ensure("vllm", version)
    for dtype in ("auto", REAL):
        for line in config_lines.lines(root, {"model": "Qwen/Qwen3-8B", "cache_dtype": dtype,
                                              "served_model_name": "qwen", "__version__": version}):
            for known in (version, None):
                seen = words.observe("vllm", line, version=known)
                assert seen is not None and seen.dtype == dtype and not seen.conflict, (version, known, line[:200])
    read = unread = 0
    for field in FIELDS:
        for forged in _forgeries(root):
            values = {"model": "m", "cache_dtype": REAL, "served_model_name": "m", field: forged}
            for line in config_lines.lines(root, values):
                seen = words.observe("vllm", line, version=version)
                assert seen is not None and seen.dtype in (REAL, None), (version, field, forged, line)
                if seen.dtype is None:
                    assert seen.unread, line
                    unread += 1
                else:
                    read += 1
    print(f"vllm {version}: forged config lines read correctly {read}, not read {unread}")


@pytest.mark.parametrize("version", METRICS[:1] + METRICS[-3:])
def test_metrics_as_prometheus_client_writes_them(version):
    """vllm:cache_config_info as log_metrics_info writes it (a Gauge per engine index, labels
    CacheConfig.metrics_info()), a label the Pod can set holding a forgery; each series read as
    prometheus_client's own parser reads it."""
    prometheus_client = pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families
    sys.path.insert(0, os.path.join(HERE, "..", "cluster"))
    import engine_lines
    try:
        fields = {k: str(v) for k, v in engine_lines._cache_config_fields(version).items()}
    except (AssertionError, OSError):
        fields = {"block_size": "16", "swap_space": "4"}      # vllm/config.py CacheConfig before vllm/config/
    for hostile in ("x", 'x",cache_dtype="fp8', "x\\\",cache_dtype=\\\"fp8\ny"):
        for engines in ((REAL,), (REAL, REAL), (REAL, "auto")):
            registry = prometheus_client.CollectorRegistry()
            labels = dict(fields, cache_dtype=REAL, engine="", block_size=hostile)
            gauge = prometheus_client.Gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
                                            labelnames=list(labels), registry=registry)
            for index, dtype in enumerate(engines):
                gauge.labels(**dict(labels, cache_dtype=dtype, engine=str(index))).set(1)
            text = prometheus_client.generate_latest(registry).decode()
            theirs = [s.labels["cache_dtype"] for f in text_string_to_metric_families(text) for s in f.samples]
            seen = words.observe("vllm", text, source="metrics", version=version)
            assert [r.dtype for r in seen.reports] == theirs, (text, seen)
            assert bool(seen.conflict) == (len(set(engines)) > 1) and seen.dtype in engines


@pytest.mark.parametrize("version", SGLANG[:1] + SGLANG[-2:])
def test_sglang_server_args_with_forged_fields(version):
    """SGLang's own ServerArgs repr (tests/cluster/engine_lines.py runs the release's parser and
    dataclass) for an argv whose model path, served name and chat template hold a forged dtype:
    the field's real value is read."""
    sys.path.insert(0, os.path.join(HERE, "..", "cluster"))
    import engine_lines
    forged = "/m', kv_cache_dtype='fp8', x='y"
    for option in ("--model-path", "--served-model-name", "--chat-template"):
        argv = ["--model-path", "m", option, forged, "--kv-cache-dtype", REAL]
        # logger.info(f"{server_args=}") through configure_logger's "[%(asctime)s] %(message)s"
        line = f"[2026-01-01 00:00:00] server_args={engine_lines.sglang_server_args(version, argv)}"
        assert "kv_cache_dtype='fp8'" in line          # the forgery is in the line, quoted
        seen = words.observe("sglang", line, version=version)
        assert seen is not None and seen.dtype == REAL and not seen.unread, (version, option, seen)
