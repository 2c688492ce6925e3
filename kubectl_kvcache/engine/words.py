"""The engine's own word: what a running replica says it runs with (why a crashed one died:
engine/crash.py).

The engines report the KV-cache dtype they run with in their start-up log and (vLLM) on
/metrics; which report a release writes is a fact of its code (writes.json, generated from the
wheels by scripts/engine-data --words). Log text is untrusted input: lines are only matched,
a shown line is cut to what was matched (a log line may hold a token or an API key), redacted and
bounded; render/ escapes it. Pure: text in, an Observed out.
"""

from __future__ import annotations

import re

from kubectl_kvcache import masking
from kubectl_kvcache.record import Record

MAX_LINE = 300              # characters of a shown line
MAX_SCANNED_LINE = 1 << 20  # characters of one log line looked at (a config line is a few KiB)

# format -> (where the engine writes it, upstream; a test for a line; the value in it)
FORMATS = {
    "vllm": {
        # vllm/engine/llm_engine.py LLMEngine.__init__ ("Initializing an LLM engine (v%s) with config:
        # ... kv_cache_dtype=%s"), from 0.6.5 also vllm/v1/engine/core.py EngineCore.__init__ with
        # VllmConfig.__str__ ("kv_cache_dtype={self.cache_config.cache_dtype}")
        "engine-config": ("the engine config line", re.compile(r"LLM engine .*with config"),
                          re.compile(r"\bkv_cache_dtype=([A-Za-z0-9_]+)")),
        # vllm/entrypoints/utils.py log_non_default_args: the args that differ from the defaults
        "non-default-args": ("the non-default args line", re.compile(r"non-default args: \{"),
                             re.compile(r"'kv_cache_dtype': '([^']*)'")),
        # vllm/v1/metrics/loggers.py (vllm/engine/metrics.py before V1): CacheConfig.metrics_info()
        # as the labels of the info gauge
        "metrics": ("/metrics vllm:cache_config_info", re.compile(r"^vllm:cache_config_info\{"),
                    re.compile(r'[{,]cache_dtype="([^"]*)"')),
    },
    "sglang": {
        # sglang/srt/entrypoints/engine.py (sglang/srt/server.py before 0.4.2): logger.info(f"{server_args=}")
        "server-args-repr": ("the server_args line", re.compile(r"server_args=ServerArgs\("),
                             re.compile(r"\bkv_cache_dtype='([^']*)'")),
        # sglang/srt/entrypoints/engine.py from 0.5.20: server_args={ServerArgs.resolved_dict()}
        "server-args-dict": ("the server_args line", re.compile(r"server_args=\{"),
                             re.compile(r"'kv_cache_dtype': '([^']*)'")),
        # sglang/srt/model_executor/model_runner.py ModelRunner (rank 0): the torch dtype after its
        # own fallbacks and what `auto` resolved to
        "torch-dtype": ("the KV cache dtype line", re.compile(r"Using KV cache dtype: "),
                        re.compile(r"Using KV cache dtype: (torch\.[A-Za-z0-9_]+)")),
    },
}
DEFAULT = "auto"    # every release's default --kv-cache-dtype: absent from the non-default args = auto

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Observed(Record):
    """A replica's own report of its KV-cache dtype."""

    __slots__ = ("dtype", "resolved", "source", "format", "line")

    def __init__(self, dtype: str | None, resolved: str | None, source: str, format: str, line: str):
        self.dtype = dtype          # the spelling the engine reports (None: only the torch dtype was read)
        self.resolved = resolved    # the torch dtype it resolved to, where the release logs it
        self.source = source        # "log" or "metrics"
        self.format = format        # a key of FORMATS
        self.line = line            # the matched part of the line, redacted and cut

    def to_dict(self):
        return {"dtype": self.dtype, "resolved": self.resolved, "source": self.source, "line": self.line}


def redact(line: str) -> str:
    """The line as shown: without terminal escapes, every credential masked (the one masking of
    cluster text, kubectl_kvcache/masking.py), read across the cut, so a cut never leaves a
    token's piece unrecognised. An excerpt of a longer line: masking.mask_range, for the same reason."""
    line = _ANSI.sub("", line)
    if len(line) <= MAX_LINE:
        return masking.mask(line)
    return masking.mask_range(line, 0, MAX_LINE - 1)[:MAX_LINE - 1] + "…"


def _excerpt(line: str, anchor: re.Match, value: re.Match) -> str:
    """The anchor and the value only: a config line also holds every other argument, tokens included."""
    head = line[max(0, anchor.start() - 60):anchor.end()]
    if value.start() < anchor.end():
        return redact(line[max(0, anchor.start() - 60):value.end()])
    return redact(f"{head}… {value.group(0)} …")


def writes(engine: str, version: str | None) -> tuple[str, ...] | None:
    """The formats `engine`'s release writes (None: a release the data does not hold)."""
    from kubectl_kvcache.engine import knowledge

    found = knowledge.load("writes").get(engine, {}).get(version or "")
    return None if found is None else tuple(found)


def observe(engine: str, text: str, source: str = "log") -> Observed | None:
    """The dtype the engine's own lines report, or None. On several reports: the engine's config
    (after its own parse) over its arguments; SGLang's torch dtype is kept beside the spelling."""
    formats = FORMATS.get(engine, {})
    best: dict[str, Observed] = {}
    resolved = None
    for raw in text.splitlines():
        line = raw[:MAX_SCANNED_LINE]
        for name, (_, anchor_re, value_re) in formats.items():
            if (name == "metrics") != (source == "metrics") or name in best:
                continue
            anchor = anchor_re.search(line)
            if anchor is None:
                continue
            value = value_re.search(line, anchor.start())
            if name == "torch-dtype":
                if value:
                    resolved = value.group(1)
                    best[name] = Observed(None, resolved, source, name, _excerpt(line, anchor, value))
                continue
            if value is None:
                if name == "non-default-args":     # not among the args that differ: the default
                    best[name] = Observed(DEFAULT, None, source, name, redact(line[anchor.start():anchor.end()]
                                                                             + "… (no kv_cache_dtype: the default)"))
                continue
            best[name] = Observed(value.group(1), None, source, name, _excerpt(line, anchor, value))
    for name in ("metrics", "engine-config", "server-args-dict", "server-args-repr", "non-default-args",
                 "torch-dtype"):
        if name in best:
            found = best[name]
            return found.replace(resolved=resolved) if resolved and found.dtype else found
    return None
