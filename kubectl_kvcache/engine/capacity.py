"""A replica's KV-cache capacity in its engine's own words: how many tokens its cache holds, and
the longest request it serves (max length), read from its start-up log and /metrics as each
release writes them (capacity.json, generated from the wheels by scripts/engine-data --capacity:
every logging call of the release that reports a figure, its %-format or f-string as literals and
typed fields; the file it is in moves between releases, so the data holds the text, not the path).

A line is read only when it is one of its release's formats exactly: the format's literals and
fields in order, each field written as the code writes it (%d, f"{x:,}", %.2f), ending the line,
and starting it or following the logger's prefix ("] "); a line that parses two ways, or does not
parse, is "not read" with why, never a number. A model path holding "GPU KV cache size: 999
tokens" sits inside the config line, which goes on after it: it never ends a line as the report
does. Reports of one meaning that disagree are a conflict. Hybrid and MLA models: vLLM's own token
figure (its log line, /metrics' kv_cache_size_tokens) is taken over num_gpu_blocks x block_size,
which counts one group's blocks only (vLLM issues 51041, 51163); `basis` says which. Pure.
"""

from __future__ import annotations

import re

from kubectl_kvcache.engine import reprs
from kubectl_kvcache.engine.reprs import Unread
from kubectl_kvcache.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TOKENS, BLOCKS = "tokens", "blocks"     # Capacity.basis: the engine's own token figure, or blocks x block size
METRIC = "vllm:cache_config_info"       # CacheConfig.metrics_info() as labels (vllm/v1/metrics/loggers.py)

# what each kind of format is, as said in notes and describe
KIND_LABEL = {
    "kv-cache-size": "the KV cache size line", "max-concurrency": "the maximum concurrency line",
    "gpu-blocks": "the # GPU blocks line", "max-model-len": "the max model len line",
    "scheduler": "the max_total_num_tokens line", "kv-allocated": "the KV Cache is allocated line",
    "metrics": f"/metrics {METRIC}", "engine-config": "the engine config line's max_seq_len",
}
# per meaning, the kinds in the order taken: the first kind holding a value gives it; values of one
# group that differ are a conflict (a later kind of another group is not held against it: SGLang's
# per-pool allocation line differs from max_total_num_tokens for a hybrid model's pools)
TOKEN_GROUPS = (("kv-cache-size", "metrics"), ("scheduler",), ("kv-allocated",))
MAX_LEN_GROUPS = (("kv-cache-size", "max-concurrency"), ("max-model-len",), ("scheduler",), ("engine-config",))
CONFIG_START = "with config: "     # vLLM's engine config line (engine/words.py): its max_seq_len= field
FIELD = {
    "d": r"[0-9]+",                         # %d of a count
    ",": r"[0-9]{1,3}(?:,[0-9]{3})*",       # f"{x:,}"
    "s": r"[0-9]+",                         # a named count as %s / f"{x}": str(int)
}
_FLOAT = r"(?:[0-9]+\.[0-9]{%d}|inf|nan)"
_DEVICE = r"[A-Z][A-Za-z0-9_]*(?: \+ [a-z]+)?"   # vllm/v1/core/kv_cache_utils.py _kv_cache_device_name (+ " + host")
_PREFIX_END = "] "      # vLLM's "%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] " and SGLang's "[%(asctime)s TP0] "


class Report(Record):
    """One capacity report read from one line, or why it was not read (`why`)."""

    __slots__ = ("source", "kind", "format", "tokens", "blocks", "block_size", "max_len", "concurrency", "line",
                 "why")

    def __init__(self, source: str, kind: str, format: str, line: str, why: str = "", tokens: int | None = None,
                 blocks: int | None = None, block_size: int | None = None, max_len: int | None = None,
                 concurrency: float | None = None):
        self.source = source            # "log" or "metrics"
        self.kind = kind                # a key of KIND_LABEL
        self.format = format            # the format's id in capacity.json ("metrics" for the info gauge)
        self.line = line                # the line as shown (redacted, cut)
        self.why = why
        self.tokens, self.blocks, self.block_size = tokens, blocks, block_size
        self.max_len, self.concurrency = max_len, concurrency


def _data():
    from kubectl_kvcache.engine import knowledge
    return knowledge.load("capacity")


def formats(engine: str, version: str | None) -> list[tuple[str, str, list]]:
    """(id, kind, template) of the formats the release writes; a release the data does not hold:
    every release's of that engine (each line read under all of them)."""
    data = _data()
    per = data["formats"].get(engine, {})
    ids = per.get((version or "").strip().lstrip("v"))
    if ids is None:
        ids = sorted({i for v in per.values() for i in v})
    return [(i, data["templates"][i]["kind"], data["templates"][i]["template"]) for i in ids]


def labels(version: str | None) -> tuple[str, ...]:
    """The capacity labels of vllm:cache_config_info the release writes (unknown release: all of any)."""
    per = _data()["labels"]
    found = per.get((version or "").strip().lstrip("v"))
    return tuple(found) if found is not None else tuple(sorted({label for v in per.values() for label in v}))


_STARTS: dict = {}


def _starts(engine: str) -> tuple[str, ...]:
    """The first literal text of each of the engine's formats: what a line must hold to be kept."""
    if engine not in _STARTS:
        data = _data()
        found = set()
        for ids in data["formats"].get(engine, {}).values():
            for i in ids:
                template = data["templates"][i]["template"]
                found.add(next(lit for lit in template[0::2] if lit.strip()))
        _STARTS[engine] = tuple(sorted(found))
    return _STARTS[engine]


def keeps(engine: str | None, source: str, line: str) -> bool:
    """May this line of a log head ("log") or of /metrics ("metrics") hold a capacity report of
    `engine` (None: any engine's)? A cheap pre-filter for a reader that keeps only such lines."""
    if source == "metrics":
        return engine in (None, "vllm") and METRIC in line
    engines = (engine,) if engine else tuple(_data()["formats"])
    return any(start in line for e in engines for start in _starts(e))


_PATTERNS: dict = {}


def _pattern(template: list, greedy: bool):
    """The template as a regex ending the line: named count fields as the code writes them; other
    fields one word (lazily or greedily: the two extremes of every parse)."""
    key = (repr(template), greedy)
    if key not in _PATTERNS:
        out = []
        for i, part in enumerate(template):
            if i % 2 == 0:
                out.append(re.escape(part))
                continue
            name, kind = part["name"], part["type"]
            if i == 1 and template[0] == "":
                body = _DEVICE              # the pool's device name that starts the line (vLLM 0.30+)
            elif kind.startswith("f") and kind[1:].isdigit():
                body = _FLOAT % int(kind[1:])
            elif name in ("tokens", "blocks", "max_len", "cpu_blocks") and kind in FIELD:
                body = FIELD[kind]
            else:       # a setting or a dtype as str() writes it: one word, never a quote (a repr's)
                body = r"[^\s'\"]*" if greedy else r"[^\s'\"]*?"
            out.append(f"(?P<f{i}>{body})" if name else f"(?:{body})")
        _PATTERNS[key] = re.compile("".join(out) + r"[ \t]*$")
    return _PATTERNS[key]


def _number(text: str, kind: str) -> int | float:
    if kind.startswith("f") and kind[1:].isdigit():
        return float(text)
    return int(text.replace(",", ""))


def _values(line: str, template: list) -> tuple[dict, int] | None:
    """The named fields of `line` read under `template` and where the report starts, or None when
    the line is not this format."""
    got, start = [], 0
    for greedy in (False, True):
        m = _pattern(template, greedy).search(line)
        if m is None:
            return None
        if m.start() and not line[:m.start()].endswith(_PREFIX_END):
            return None     # something other than the logger's prefix comes before it
        start = m.start()
        got.append({template[i]["name"]: _number(m.group(f"f{i}"), template[i]["type"])
                    for i in range(1, len(template), 2) if template[i]["name"]})
    if got[0] != got[1]:
        raise Unread("it parses more than one way (" + " or ".join(
            ", ".join(f"{k}={v}" for k, v in g.items()) for g in got) + ")")
    return got[0], start


def _shown(line: str) -> str:
    from kubectl_kvcache.engine.words import redact
    return redact(line)


def _metric(line: str, version: str | None) -> Report | None:
    if not line.startswith(METRIC + "{"):
        return None
    try:
        found = reprs.metric_labels(line, METRIC)
    except Unread as e:
        return Report("metrics", "metrics", "metrics", _shown(line[:200]), str(e))
    values: dict = {}
    for label in ("num_gpu_blocks", "block_size", "kv_cache_size_tokens", "kv_cache_max_concurrency"):
        text = found.get(label)
        if text is None or text == "None":      # str(None): not set in the process that serves /metrics
            continue
        try:
            values[label] = float(text) if label == "kv_cache_max_concurrency" else int(text) \
                if re.fullmatch(r"[0-9]+", text) else None
        except ValueError:
            values[label] = None
        if values[label] is None:
            return Report("metrics", "metrics", "metrics", _shown(line[:200]), f"its {label} {text!r} is no number")
    shown = METRIC + "{" + ",".join(f'{k}="{found[k]}"' for k in
                                    ("num_gpu_blocks", "block_size", "kv_cache_size_tokens") if k in found) + ",…}"
    if not values:
        return None
    return Report("metrics", "metrics", "metrics", _shown(shown), tokens=values.get("kv_cache_size_tokens"),
                  blocks=values.get("num_gpu_blocks"), block_size=values.get("block_size"),
                  concurrency=values.get("kv_cache_max_concurrency"))


def reports(engine: str, text: str, source: str = "log", version: str | None = None) -> list[Report]:
    """Every capacity report `text` (a log head, or /metrics) holds, each read by its release's
    format, in order; a line holding a format's start that is not read is a Report with `why`."""
    from kubectl_kvcache.engine.words import MAX_SCANNED_LINE, _ANSI, _lines

    found: list[Report] = []
    if source == "metrics":
        if engine != "vllm":
            return found
        for raw in text.splitlines():
            got = _metric(raw.rstrip(), version) if METRIC in raw else None
            if got is not None:
                found.append(got)
        return found
    fmts = formats(engine, version)
    starts = _starts(engine)
    config = engine == "vllm"
    for raw in _lines(text, [(None, s) for s in starts + ((CONFIG_START,) if config else ())]):
        line = _ANSI.sub("", raw[:MAX_SCANNED_LINE]).rstrip()
        if config and CONFIG_START in raw and len(raw) <= MAX_SCANNED_LINE:
            found += _config_max_len(line, version)
        if not any(s in raw for s in starts):
            continue
        read, why, kind, fid, start = None, "", "", "", 0
        for fid_, kind_, template in fmts:
            try:
                parsed = _values(line, template)
            except Unread as e:
                why, kind, fid = str(e), kind_, fid_
                continue
            if parsed is not None:
                (read, start), kind, fid = parsed, kind_, fid_
                break
        at = min((line.find(s) for s in starts if s in line), default=0)
        if read is None:
            if not kind:
                kind = next((k for _, k, t in formats(engine, None)
                             if next(lit for lit in t[0::2] if lit.strip()) in line), "")
                why = "it is not one of the release's capacity lines as its code writes it (cut, or not the engine's)"
            found.append(Report(source, kind, fid, _shown(line[max(0, at - 60):]), why))
            continue
        found.append(Report(source, kind, fid, _shown(line[start:]), tokens=read.get("tokens"), blocks=read.get("blocks"),
                            max_len=read.get("max_len"), concurrency=read.get("concurrency")))
    return found


def _config_max_len(line: str, version: str | None) -> list[Report]:
    """The max_seq_len of vLLM's engine config line, parsed under the release's own format
    (engine/words.config_templates, reprs.config_values: every complete parse); a line that is not
    the engine's, or that parses two ways, gives nothing here (engine/words.py says why for the
    dtype it holds)."""
    from kubectl_kvcache.engine.words import config_templates

    values: set[str] = set()
    try:
        for template in config_templates("vllm", version):
            values |= reprs.config_values(line, template, "max_seq_len")
    except Unread:
        return []
    if len(values) != 1 or not re.fullmatch(r"[0-9]+", next(iter(values))):
        return []
    value = values.pop()
    at = line.find("max_seq_len=")
    return [Report("log", "engine-config", "engine-config", _shown(f"… max_seq_len={value} …"),
                   max_len=int(value))] if at >= 0 else []


def _pick(good: list[Report], attr: str, groups) -> tuple[Any, Report | None, str]:
    """(value, the report it came from, conflict) for one meaning, by `groups` (see TOKEN_GROUPS)."""
    for group in groups:
        said = [r for r in good if r.kind in group and getattr(r, attr) is not None]
        if not said:
            continue
        values = list(dict.fromkeys(getattr(r, attr) for r in said))
        if len(values) > 1:
            seen: dict = {}
            for r in said:
                seen.setdefault(f"{KIND_LABEL.get(r.kind, r.kind)} ({_where(r)})", []).append(str(getattr(r, attr)))
            return None, said[0], f"its {attr.replace('_', ' ')} reports disagree: " + "; ".join(
                f"{k} says {' then '.join(dict.fromkeys(v))}" for k, v in seen.items())
        return values[0], said[0], ""
    return None, None, ""


def _where(r: Report) -> str:
    return "its /metrics" if r.source == "metrics" else "its log"


def combine(read: list[Report], unread_notes: tuple = ()):
    """One Capacity from every report read: the engine's own token figure where one is read (basis
    TOKENS), else num_gpu_blocks x block_size of one report (BLOCKS); reports of one meaning that
    disagree are a conflict and give no number. None: nothing seen."""
    good = [r for r in read if not r.why]
    notes = tuple(dict.fromkeys([_shown(f"{KIND_LABEL.get(r.kind, 'a capacity line')} ({_where(r)}) not read: {r.why}")
                                 for r in read if r.why] + list(unread_notes)))
    if not good:
        if not notes:
            return None
        first = next((r for r in read if r.why), None)
        return Capacity(None, "", source=first.source if first else "log", format=first.format if first else "",
                        line=first.line if first else "", unread=notes)
    tokens, by, conflict = _pick(good, "tokens", TOKEN_GROUPS)
    max_len, len_by, len_conflict = _pick(good, "max_len", MAX_LEN_GROUPS)
    concurrency = next((r.concurrency for r in good if r.concurrency is not None and r.kind != "metrics"),
                       next((r.concurrency for r in good if r.concurrency is not None), None))
    blocks_from = next((r for r in good if r.blocks is not None and r.block_size is not None), None) or \
        next((r for r in good if r.blocks is not None), None)
    blocks = blocks_from.blocks if blocks_from else None
    block_size = blocks_from.block_size if blocks_from else None
    basis = TOKENS
    if tokens is None and not conflict and blocks is not None and block_size is not None:
        tokens, by, basis = blocks * block_size, blocks_from, BLOCKS
    shown = by or blocks_from or len_by or good[0]
    conflict = "; ".join(c for c in (conflict, len_conflict) if c)
    return Capacity(tokens if not conflict or not by or by.tokens is None else None, basis if tokens is not None else "",
                    blocks, block_size, None if len_conflict else max_len, concurrency, shown.source, shown.format,
                    _shown(conflict) if conflict else shown.line, conflict, notes)


def observe(engine: str, text: str, source: str = "log", version: str | None = None):
    """The capacity the engine's own lines in `text` report (see combine), or None."""
    return combine(reports(engine, text, source, version))


class Capacity(Record):
    """One replica's KV-cache capacity as its engine reported it (None fields: not reported)."""

    __slots__ = ("tokens", "basis", "blocks", "block_size", "max_len", "concurrency", "source", "format",
                 "line", "conflict", "unread", "reports")

    def __init__(self, tokens: int | None, basis: str, blocks: int | None = None, block_size: int | None = None,
                 max_len: int | None = None, concurrency: float | None = None, source: str = "log",
                 format: str = "", line: str = "", conflict: str = "", unread: tuple = ()):
        self.tokens = tokens            # tokens the KV cache holds (None: not reported)
        self.basis = basis              # TOKENS: the engine's own figure; BLOCKS: blocks x block_size
        self.blocks = blocks            # vLLM's num_gpu_blocks, where reported
        self.block_size = block_size    # tokens per block, where reported
        self.max_len = max_len          # the longest request the engine serves, as it logged it
        self.concurrency = concurrency  # vLLM: "Maximum concurrency for N tokens per request: X x"
        self.source = source            # "log" or "metrics"
        self.format = format            # the capacity format's id (capacity.json)
        self.line = line                # the matched part of the line, redacted and cut
        self.conflict = conflict        # not "": its reports disagree, each named with what it said
        self.unread = unread            # why a report seen was not read (cut, ambiguous)
        self.reports: tuple = ()        # every Report combined (kept: a later read is held against them)

    def to_dict(self):
        return {"tokens": self.tokens, "basis": self.basis, "blocks": self.blocks, "blockSize": self.block_size,
                "maxLength": self.max_len, "concurrency": self.concurrency, "source": self.source,
                "format": self.format, "line": self.line} | (
            {"conflict": self.conflict} if self.conflict else {}) | (
            {"notRead": list(self.unread)} if self.unread else {})
