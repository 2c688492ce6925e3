"""The engine's own word (engine/words.py) against the real releases.

1. engine/writes.json (which reports of its KV-cache dtype each release writes) equals what the
   released code holds (tools/enginedata/words_data.py, the generator, run here).
2. The reader on lines the releases' own code writes for an argv (oracle.py `words`: vLLM's
   log_non_default_args on the parsed namespace; SGLang's f"{server_args=}" of a ServerArgs
   holding the parsed values), and on the parser's own error output for a refused dtype.
"""

import os
import sys

import pytest

from kubectl_kvcache.engine import crash, knowledge, words

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import words_data  # noqa: E402  (tools/enginedata: conftest.py puts it on the path)
from releases import TIER as RELEASES  # noqa: E402  (this run's slice: docs/tests.md)

WRITES = knowledge.load("writes")
# the releases whose code writes a report this reader reads from the argv (the ones whose lines
# the oracle can produce: vLLM from log_non_default_args' first release, SGLang's dataclass repr)
VLLM = [v for v in RELEASES["vllm"] if "non-default-args" in WRITES["vllm"][v]]
SGLANG = [v for v in RELEASES["sglang"] if "server-args-repr" in WRITES["sglang"][v]]
ENTRY = {"vllm": ("serve", ["m"]), "sglang": ("launch_server", ["--model-path", "m"])}
SECRET = "sk-do-not-print-4242"


def test_the_shipped_reports_per_release_equal_the_wheels():
    """This run's slice of releases (the tier's TIER) read again from their wheels; every release
    of the data has an entry."""
    read = words_data.generate(RELEASES)
    for engine, versions in read.items():
        for version, formats in versions.items():
            assert WRITES[engine].get(version) == formats, \
                f"{engine} {version}: writes.json differs from the wheel: run scripts/engine-data --words --write"
    from releases import RELEASES as EVERY
    assert {e: sorted(v) for e, v in WRITES.items()} == {e: sorted(v) for e, v in EVERY.items()}


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
    seen = words.observe(engine, text)
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
