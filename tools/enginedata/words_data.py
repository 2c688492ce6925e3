"""Which reports of its KV-cache dtype each release writes, read from the release's own code.

    scripts/engine-data --words [--write]

For every cached conformance release (scripts/engine-wheels), the source is searched for the
logging calls and the metric engine/words.py reads (engine/words.FORMATS names each with the
upstream file and function); the result is kubectl_kvcache/engine/writes.json. Without
--write it prints the difference and exits 1 when the shipped file differs (the conformance
tier runs the same comparison: test_words_data.py).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import wheels  # noqa: E402
from releases import RELEASES  # noqa: E402


# format -> every string the release's code must hold for it to write that report; each one is a
# literal of the logging call or of the object it formats (see engine/words.FORMATS for the citations)
ANCHORS = {
    "vllm": {
        # vllm/engine/llm_engine.py LLMEngine.__init__ (its own format string lists kv_cache_dtype),
        # later vllm/v1/engine/core.py EngineCore.__init__ logging VllmConfig.__str__ (vllm/config*.py)
        "engine-config": [(head, field) for head in ("LLM engine with config", "LLM engine (v%s) with config",
                                                     "LLM engine (v{vllm.__version__}) with config")
                          for field in ("kv_cache_dtype=%s", "kv_cache_dtype={")],
        # vllm/entrypoints/utils.py log_non_default_args
        "non-default-args": [("non-default args: %s",)],
        # vllm/v1/metrics/loggers.py (PrometheusStatLogger.log_metrics_info): CacheConfig.metrics_info()
        "metrics": [('"vllm:cache_config_info"', "cache_dtype"), ("'vllm:cache_config_info'", "cache_dtype")],
    },
    "sglang": {
        # sglang/srt/{server,entrypoints/engine}.py: logger.info(f"{server_args=}") (a dataclass repr)
        "server-args-repr": [('logger.info(f"{server_args=}")', "kv_cache_dtype: str")],
        # sglang/srt/entrypoints/engine.py: logger.info(f"server_args={...resolved_dict()...}") (a dict)
        "server-args-dict": [("server_args={server_args.resolved_dict()", "kv_cache_dtype"),
                             ("server_args={_server_args_for_logging(server_args)}", "kv_cache_dtype")],
        # sglang/srt/model_executor/model_runner.py ModelRunner: log_info_on_rank0(...) on rank 0
        "torch-dtype": [("Using KV cache dtype: {self.kv_cache_dtype}",)],
    },
}


def _sources(tree):
    for base, _, files in os.walk(tree):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(base, name), encoding="utf-8", errors="replace") as f:
                    yield f.read()


def formats_of(engine, tree) -> tuple[str, ...]:
    """The formats whose every anchor string (of one alternative) the release's code holds."""
    found = set()
    texts = list(_sources(tree))
    for fmt, alternatives in ANCHORS[engine].items():
        for anchors in alternatives:
            if all(any(a in t for t in texts) for a in anchors):
                found.add(fmt)
                break
    return tuple(f for f in ANCHORS[engine] if f in found)


def generate(releases=None) -> dict:
    """{engine: {release: formats}} for `releases` (default: every release the data holds)."""
    out: dict = {}
    for engine, versions in (releases or RELEASES).items():
        out[engine] = {}
        for version in versions:
            root = wheels.ensure(engine, version)
            out[engine][version] = list(formats_of(engine, root))
    return out


def render(data) -> str:
    """writes.json: engine -> release -> the formats it writes, one release per line."""
    from generated import render as render_json
    return render_json(data, "scripts/engine-data (words_data.py)", expand=2)


def main(argv):
    from generated import write_or_compare
    return write_or_compare(argv, "writes", render(generate()), "scripts/engine-data --words")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
