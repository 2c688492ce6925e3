"""The engine's own word: what a running replica says it runs with (why a crashed one died:
engine/crash.py).

The engines report the KV-cache dtype they run with in their start-up log and (vLLM) on
/metrics; which report a release writes, and how (the config line's fields in order, which are
repr-quoted), is a fact of its code (writes.json, generated from the wheels by scripts/engine-data
--words). A Pod's output is written by whoever runs the Pod, so every report is parsed by its
structure as the release's code writes it (a format string's fields, a dict or dataclass repr, a
metric's label set), never searched for a substring: a value inside a quoted or nested field
never counts as the field; a line that parses two ways, or does not close (cut), is not read,
and says why. Every report is read; two that disagree are a conflict, never a confirmation.
Shown text is cut to what was matched (a log line may hold a token or an API key), redacted and
bounded; render/ escapes it. Pure: text in, an Observed out.
"""

from __future__ import annotations

import json
import re

from kubectl_kvcache import masking
from kubectl_kvcache.engine import reprs
from kubectl_kvcache.engine.reprs import MAX_STARTS, Unread
from kubectl_kvcache.record import Record

MAX_LINE = 300              # characters of a shown line
MAX_SCANNED_LINE = 1 << 20  # characters of one log line looked at (a config line is a few KiB)

# engine -> format -> (what it is, where it is read, the text that starts it in a line: keeps())
FORMATS = {
    "vllm": {
        # vllm/engine/llm_engine.py LLMEngine.__init__'s own format string ("Initializing an LLM
        # engine (v%s) with config: model=%r, ... kv_cache_dtype=%s, ..."), from 0.6.5 the same call
        # and vllm/v1/engine/core.py EngineCore.__init__ logging VllmConfig.__str__ (vllm/config.py,
        # later vllm/config/vllm.py): its fields, order and quoting per release are writes.json's
        "engine-config": ("the engine config line", "log", "with config: "),
        # vllm/entrypoints/utils.py log_non_default_args (later vllm/entrypoints/openai/cli_args.py,
        # vllm/entrypoints/common/startup.py): logger.info("non-default args: %s", dict): a dict repr
        "non-default-args": ("the non-default args line", "log", "non-default args: {"),
        # vllm/v1/metrics/loggers.py (vllm/engine/metrics.py before V1): CacheConfig.metrics_info()
        # as the labels of the info gauge, in the Prometheus text format
        "metrics": ("/metrics vllm:cache_config_info", "metrics", "vllm:cache_config_info"),
    },
    "sglang": {
        # sglang/srt/entrypoints/engine.py (sglang/srt/server.py before 0.4.2): logger.info(f"{server_args=}"),
        # ServerArgs' dataclass repr (every field repr()'d, in declaration order)
        "server-args-repr": ("the server_args line", "log", "server_args=ServerArgs("),
        # sglang/srt/entrypoints/engine.py from 0.5.20: server_args={...} (a dict repr)
        "server-args-dict": ("the server_args line", "log", "server_args={"),
        # sglang/srt/model_executor/model_runner.py ModelRunner (rank 0): the torch dtype after its
        # own fallbacks and what `auto` resolved to
        "torch-dtype": ("the KV cache dtype line", "log", "Using KV cache dtype: "),
    },
}
# when several reports are read and agree, the one shown
PRIORITY = ("metrics", "engine-config", "server-args-dict", "server-args-repr", "non-default-args", "torch-dtype")
DEFAULT = "auto"    # every release's default --kv-cache-dtype: absent from the non-default args = auto

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Report(Record):
    """One report read from one line: the spelling (or SGLang's torch dtype), or why it was not read."""

    __slots__ = ("source", "format", "dtype", "resolved", "line", "why")

    def __init__(self, source: str, format: str, dtype: str | None, resolved: str | None, line: str, why: str = ""):
        self.source = source        # "log" or "metrics"
        self.format = format        # a key of FORMATS
        self.dtype = dtype          # the spelling it reports
        self.resolved = resolved    # torch-dtype: the torch dtype
        self.line = line            # the matched part of the line, redacted and cut
        self.why = why              # not "": the line is this format's but was not read, and why


class Observed(Record):
    """A replica's own reports of its KV-cache dtype: the one shown, a conflict when they disagree,
    and what was seen and not read (why). `dtype` and `resolved` both None: nothing was read."""

    __slots__ = ("dtype", "resolved", "source", "format", "line", "conflict", "reports", "unread")

    def __init__(self, dtype: str | None, resolved: str | None, source: str, format: str, line: str,
                 conflict: str = "", reports: tuple = (), unread: tuple = ()):
        self.dtype = dtype          # the spelling the engine reports (None: only the torch dtype was read)
        self.resolved = resolved    # the torch dtype it resolved to, where the release logs it
        self.source = source        # "log" or "metrics"
        self.format = format        # a key of FORMATS
        self.line = line            # the matched part of the line, redacted and cut (a conflict: it)
        self.conflict = conflict    # not "": its reports disagree, each named with what it said
        self.reports = reports      # every Report (kept: a later read is held against them)
        self.unread = unread        # why a report seen was not read (ambiguous, cut, a bad port)

    def to_dict(self):
        return {"dtype": self.dtype, "resolved": self.resolved, "source": self.source, "line": self.line} | (
            {"conflict": self.conflict} if self.conflict else {}) | (
            {"notRead": list(self.unread)} if self.unread else {})


def redact(line: str) -> str:
    """The line as shown: without terminal escapes, every credential masked (the one masking of
    cluster text, kubectl_kvcache/masking.py), read across the cut, so a cut never leaves a
    token's piece unrecognised. An excerpt of a longer line: masking.mask_range, for the same reason."""
    line = _ANSI.sub("", line)
    if len(line) <= MAX_LINE:
        return masking.mask(line)
    return masking.mask_range(line, 0, MAX_LINE - 1)[:MAX_LINE - 1] + "…"


_START = {name: start for formats in FORMATS.values() for name, (_, _, start) in formats.items()}
FORMATS_LABEL = {name: what for formats in FORMATS.values() for name, (what, _, _) in formats.items()}
_DTYPE = re.compile(r"[A-Za-z0-9_.\-]{1,40}")     # every release's choices (auto, fp8_e4m3, nvfp4...)
_TORCH = re.compile(r"Using KV cache dtype: (torch\.[A-Za-z0-9_]+)[ \t]*$")


def writes(engine: str, version: str | None) -> tuple[str, ...] | None:
    """The formats `engine`'s release writes (None: a release the data does not hold)."""
    from kubectl_kvcache.engine import knowledge

    found = knowledge.load("writes")["formats"].get(engine, {}).get(version or "")
    return None if found is None else tuple(found)


def config_templates(engine: str, version: str | None) -> list[list]:
    """The release's engine config line formats (writes.json: literal, field kind, literal, ...);
    a release the data does not hold: every release's, each line read under all of them."""
    from kubectl_kvcache.engine import knowledge

    data = knowledge.load("writes")
    ids = data["config-lines"].get(engine, {})
    chosen = ids.get((version or "").strip().lstrip("v"))
    wanted = sorted({t for v in ids.values() for t in v}) if chosen is None else chosen
    return [data["templates"][t] for t in wanted]


def keeps(engine: str, source: str, line: str) -> bool:
    """May this line of a log head (`source` "log") or of /metrics ("metrics") hold a report this
    module reads? A cheap pre-filter for a reader that streams and keeps only such lines."""
    return any(where == source and start in line for _, where, start in FORMATS.get(engine, {}).values())


def _repr_dtype(line: str, start: int, keyed: bool, fmt: str) -> str:
    fields = reprs.bracketed(line, start, keyed)
    value = fields.get("kv_cache_dtype")
    if value is None:
        if fmt == "non-default-args":
            return DEFAULT          # not among the args that differ from the defaults
        raise Unread("it has no kv_cache_dtype")
    dtype = reprs.literal(value)
    if dtype is None:
        raise Unread("its kv_cache_dtype is not one quoted string")
    return dtype


def _read_line(engine: str, fmt: str, start: str, line: str, version: str | None):
    """(dtype, resolved) the line reports in format `fmt`; Unread when it is not read."""
    if fmt == "metrics":
        if not line.startswith(start):
            return None
        labels = reprs.metric_labels(line, start)
        if "cache_dtype" not in labels:
            raise Unread("it has no cache_dtype label")
        return labels["cache_dtype"], None
    if fmt == "torch-dtype":
        m = _TORCH.search(line)
        if m is None:
            raise Unread("it does not end with one torch dtype")
        return None, m.group(1)
    if fmt == "engine-config":
        values: set[str] = set()
        for template in config_templates(engine, version):
            values |= reprs.config_values(line, template)
        if not values:
            raise Unread("it is not the release's engine config line as its code writes it (cut, or not the "
                          "engine's)")
        if len(values) > 1:
            raise Unread("it parses more than one way (kv_cache_dtype=" + " or ".join(_short(v) for v in sorted(values)) +
                          "): an unquoted field the Pod sets holds the line's separators")
        return values.pop(), None
    starts = [m.start() + len(start) - 1 for m in re.finditer(re.escape(start), line)]
    if len(starts) > MAX_STARTS:
        raise Unread(f"it holds {start!r} {len(starts)} times")
    found, why = set(), ""
    for s in starts:
        try:
            found.add(_repr_dtype(line, s, fmt != "server-args-repr", fmt))
        except Unread as e:
            why = why or str(e)
    if len(found) > 1:
        raise Unread("it parses more than one way (kv_cache_dtype " + " or ".join(_short(v) for v in sorted(found)) + ")")
    if not found:
        raise Unread(why)
    return found.pop(), None


def _part(line: str, start: int, end: int) -> str:
    """`line[start:end]` as shown: masked as the whole line would be (masking.mask_range: a cut
    never leaves a token's piece unrecognised), then redacted."""
    start, end = max(0, start), min(len(line), end)
    return redact(masking.mask_range(line, start, end))


def _short(value: str) -> str:
    return value if len(value) <= 24 else value[:23] + "…"


def _excerpt(line: str, start: int, dtype: str | None, resolved: str | None, fmt: str) -> str:
    """The start of the report and its value only: a config line also holds every other argument,
    tokens included."""
    end = (line.find(" ", start) % (len(line) + 1)) if fmt == "metrics" else start + len(_START[fmt])
    head = _part(line, start - 60, end)
    if fmt == "torch-dtype":
        return _part(line, start - 60, len(line))
    value = {"engine-config": f"kv_cache_dtype={dtype}", "metrics": f'cache_dtype="{dtype}"',
             "server-args-repr": f"kv_cache_dtype={dtype!r}"}.get(fmt, f"'kv_cache_dtype': {dtype!r}")
    if fmt == "non-default-args" and dtype == DEFAULT:
        value = "(no kv_cache_dtype: the default)"
    return f"{head}… {redact(value)} …"


def _lines(text: str, formats):
    """The lines that may hold a report: as they are, or a JSON log record's message (vLLM's
    VLLM_LOGGING_CONFIG with pythonjsonlogger's JsonFormatter, vllm/logger.py)."""
    for raw in text.splitlines():
        if not any(start in raw for _, start in formats):
            continue
        if raw.startswith("{") and len(raw) <= MAX_SCANNED_LINE:
            try:
                record = json.loads(raw)
            except ValueError:
                record = None
            if isinstance(record, dict) and isinstance(record.get("message"), str):
                yield from record["message"].splitlines()
                continue
        yield raw


def reports(engine: str, text: str, source: str = "log", version: str | None = None) -> list[Report]:
    """Every report `text` holds (a log head, or /metrics), each read by its structure, in order;
    a line of a format's start that is not read is a Report with `why`."""
    formats = [(name, start) for name, (_, where, start) in FORMATS.get(engine, {}).items() if where == source]
    found = []
    for raw in _lines(text, formats):
        line = _ANSI.sub("", raw[:MAX_SCANNED_LINE]).rstrip()
        for name, start in formats:
            at = line.find(start)
            if at < 0:
                continue
            try:
                if len(raw) > MAX_SCANNED_LINE:
                    raise Unread(f"the line is longer than the {MAX_SCANNED_LINE} characters read")
                got = _read_line(engine, name, start, line, version)
            except Unread as e:
                found.append(Report(source, name, None, None, _part(line, at - 60, at + 80), str(e)))
                continue
            if got is not None and got[0] is not None and not _DTYPE.fullmatch(got[0]):
                found.append(Report(source, name, None, None, _part(line, at - 60, at + 80),
                                    "its kv_cache_dtype is no dtype name an engine writes"))
            elif got is not None:
                found.append(Report(source, name, got[0], got[1], _excerpt(line, at, got[0], got[1], name)))
    return found


def combine(read: list[Report], unread_notes: tuple = ()) -> Observed | None:
    """One Observed from every report read: the first of PRIORITY shown; reports whose spellings
    (or torch dtypes) differ are a conflict naming what each said. None: nothing seen."""
    good = [r for r in read if not r.why]
    notes = tuple(dict.fromkeys([redact(f"{FORMATS_LABEL.get(r.format, r.format)} ({_where(r)}) not read: {r.why}")
                                 for r in read if r.why] + list(unread_notes)))
    if not good:
        if not notes:
            return None
        first = next((r for r in read if r.why), None)
        return Observed(None, None, first.source if first else "log", first.format if first else "", notes[0],
                        reports=tuple(read), unread=notes)
    conflict = ""
    for attr in ("dtype", "resolved"):
        said = {getattr(r, attr) for r in good if getattr(r, attr) is not None}
        if len(said) > 1:
            seen: dict = {}
            for r in good:
                if getattr(r, attr) is not None:
                    seen.setdefault(f"{FORMATS_LABEL.get(r.format, r.format)} ({_where(r)})", []).append(
                        getattr(r, attr))
            conflict = "its reports disagree: " + "; ".join(
                f"{k} says {' then '.join(dict.fromkeys(v))}" for k, v in seen.items())
            break
    shown = min((r for r in good if r.dtype is not None), key=lambda r: PRIORITY.index(r.format), default=None)
    resolved = next((r.resolved for r in good if r.resolved), None)
    if shown is None:
        torch = next(r for r in good if r.resolved)
        return Observed(None, torch.resolved, torch.source, torch.format, conflict or torch.line, conflict,
                        tuple(read), notes)
    return Observed(shown.dtype, resolved, shown.source, shown.format, redact(conflict) if conflict else shown.line,
                    conflict, tuple(read), notes)


def _where(report: Report) -> str:
    return "its /metrics" if report.source == "metrics" else "its log"


def observe(engine: str, text: str, source: str = "log", version: str | None = None) -> Observed | None:
    """What the engine's own lines in `text` report, every one of them (see combine), or None."""
    return combine(reports(engine, text, source, version))


DEFAULT_PORT = {"vllm": 8000, "sglang": 30000}   # vllm/entrypoints/openai/cli_args.py --port (FrontendArgs.port
                                                # later); sglang/srt/server_args.py ServerArgs.port
_PORTS: dict = {}


def listen_port(container: dict | None, engine: str, version: str | None) -> tuple[int | None, str]:
    """The port the engine's API server listens on, as the release's own parser reads the Pod's
    argv (engine/kvparse.option_values: the last --port wins, `--port=N`, an abbreviation the
    release accepts), converted as its type=int converts it; the default when none is given.
    (None, why) when that is not decided: the argv or the release not known, a value int() refuses
    (`--port ²`), or one that is no port."""
    key = (repr(container), engine, version)
    if key not in _PORTS:
        if len(_PORTS) > 256:
            _PORTS.clear()
        _PORTS[key] = _listen_port(container or {}, engine, version)
    return _PORTS[key]


def _listen_port(container: dict, engine: str, version: str | None) -> tuple[int | None, str]:
    from kubectl_kvcache.engine import kvparse, releases
    from kubectl_kvcache.engine.launch import engine_launch

    known = releases.parse_version(version) if version else None
    launch, why = engine_launch(container, engine, known)
    if launch is None:
        return None, why
    given: set[str | None] = set()
    for release in (known,) if known is not None else releases.all_releases(engine):
        values = kvparse.option_values(launch.args, releases.profile(engine, release), entry=launch.entry)
        if values is None:
            return None, "the argv replay does not read its argv to the end (an element not known from the " \
                         "spec, a refusal, or a --config file that may set --port)"
        stored = values.get("--port")
        given.add(None if not stored else str(stored[-1]))
    if len(given) > 1:
        return None, "its release decides which --port it reads, and the release is not known"
    text = given.pop()
    if text is None:
        return DEFAULT_PORT[engine], ""
    try:
        port = int(text)            # the option's type=int
    except ValueError:
        return None, f"--port {text!r} is no number to the engine's int()"
    if not 0 < port < 65536:
        return None, f"--port {port} is no port it can listen on"
    return port, ""
