"""The engine's own word: what a running replica says it runs with, and why a crashed one died.

The engines report the KV-cache dtype they run with in their start-up log and (vLLM) on
/metrics; which report a release writes is a fact of its code (writes.json, generated from the
wheels by scripts/engine-data --words). Log text is untrusted input: lines are only matched,
a shown line is cut to what was matched (a log line may hold a token or an API key), redacted and
bounded; render/ escapes it. Pure: text in, an Observed or an ExitCause out.
"""

from __future__ import annotations

import re
from functools import lru_cache

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
_SECRET_ASSIGN = re.compile(r"(?i)((?:api[_-]?key|[a-z_-]*token|[a-z_-]*secret|password|passwd|authorization)"
                            r"['\"]?\s*[:=]\s*\[?['\"]?)[^'\"\s,)}\]]+")
_SECRET_FLAG = re.compile(r"(?i)(--(?:api-key|[a-z-]*token|[a-z-]*secret|[a-z-]*password)[ =])\S+")
_USAGE = re.compile(r"^usage: ")
_ARGPARSE_ERROR = re.compile(r"^[\w.\-/ ]{1,80}: error: (.+)$")
# start-up failures named even where no traceback's last line made it into the tail
_ARGPARSE_MESSAGES = ("argument ", "unrecognized arguments: ", "the following arguments are required: ",
                      "one of the arguments ", "ambiguous option: ", "expected one argument", "invalid choice: ")
_STARTUP_MARKERS = ("No valid attention backend found", "invalid tool call parser", "validation error for")
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit)\b(?::\s.*)?$")
REJECTED, STARTUP = "rejected", "startup"


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


class ExitCause(Record):
    """Why a container exited, in the engine's own words (its previous log)."""

    __slots__ = ("kind", "line")

    def __init__(self, kind: str, line: str):
        self.kind = kind            # REJECTED (its argument parser refused the argv) or STARTUP (after the parse)
        self.line = line

    def to_dict(self):
        return {"kind": self.kind, "line": self.line}


def redact(line: str) -> str:
    """The line without what looks like a credential's value, without terminal escapes, cut."""
    line = _ANSI.sub("", line)
    line = _SECRET_FLAG.sub(r"\1***", _SECRET_ASSIGN.sub(r"\1***", line))
    return line if len(line) <= MAX_LINE else line[:MAX_LINE - 1] + "…"


def _excerpt(line: str, anchor: re.Match, value: re.Match) -> str:
    """The anchor and the value only: a config line also holds every other argument, tokens included."""
    head = line[max(0, anchor.start() - 60):anchor.end()]
    if value.start() < anchor.end():
        return redact(line[max(0, anchor.start() - 60):value.end()])
    return redact(f"{head}… {value.group(0)} …")


_METRIC_LINES = ("vllm:cache_config_info", "# HELP vllm:cache_config_info", "# TYPE vllm:cache_config_info")
_META = frozenset(".^$*+?{}[]|()")


@lru_cache(maxsize=None)
def _needles(anchor: re.Pattern) -> tuple[str, ...] | None:
    """The literal pieces an anchor's match must hold (`LLM engine .*with config` -> "LLM engine ",
    "with config"), tested with `in`: linear, where a regex with `.*` on a long line of many
    "LLM engine " is quadratic (a minute on 1 MiB). None: the anchor is no such pattern."""
    pieces = []
    for piece in anchor.pattern.split(".*"):
        plain = re.sub(r"\\(.)", "", piece)     # an escaped letter (\\b, \\d) is a class, no literal
        if _META.intersection(plain) or "\\" in plain or re.search(r"\\[A-Za-z0-9]", piece):
            return None
        pieces.append(re.sub(r"\\(.)", r"\1", piece))
    return tuple(p for p in pieces if p)


def keeps(engine: str, source: str, line: str) -> bool:
    """Whether `line` may hold a report of `engine` (source "log" or "metrics"): a cheap test of
    FORMATS' anchors, so that a reader keeps only these lines of a head or a /metrics page (the
    rest is never held). For /metrics: the cache_config_info samples and their # HELP / # TYPE
    lines. A line kept is parsed later (observe); one not kept can hold no report. Given several
    lines, whether any of them may (a reader drops a block of a page at once)."""
    if source == "metrics":
        return engine == "vllm" and (line.startswith(_METRIC_LINES) or "\nvllm:cache_config_info" in line
                                     or "\n# HELP vllm:cache_config_info" in line
                                     or "\n# TYPE vllm:cache_config_info" in line)
    for name, (_, anchor, _) in FORMATS.get(engine, {}).items():
        if name == "metrics":
            continue
        needles = _needles(anchor)
        if needles is None:
            if anchor.search(line) is not None:
                return True
        elif all(n in line for n in needles):
            return True
    return False


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


def exit_cause(text: str) -> ExitCause | None:
    """The engine's error line in a crashed container's log tail: argparse's `prog: error: ...`
    after its usage (the argument parser refused the argv), else the last exception line of a
    traceback, else a known start-up failure's line. None: the tail says nothing recognisable."""
    lines = [_ANSI.sub("", raw[:MAX_SCANNED_LINE]).rstrip() for raw in text.splitlines()]
    usage = False
    rejected = None
    for line in lines:
        if _USAGE.match(line):
            usage = True
            continue
        m = _ARGPARSE_ERROR.match(line)
        # argparse's own messages (Lib/argparse.py); its usage may be cut off a bounded tail
        if m and (usage or m.group(1).startswith(_ARGPARSE_MESSAGES)):
            rejected = line
    if rejected is not None:
        return ExitCause(REJECTED, redact(rejected))
    for line in reversed(lines):       # a traceback ends with the exception that killed the process
        if _EXCEPTION.match(line.strip()):
            return ExitCause(STARTUP, redact(line.strip()))
    for marker in _STARTUP_MARKERS:
        for line in reversed(lines):
            if marker in line:
                return ExitCause(STARTUP, redact(line.strip()))
    return None
