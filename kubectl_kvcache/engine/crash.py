"""Why a crashed engine container died, in its own words, and whether its KV-cache dtype is to blame.

The tail of a crashed container's previous log is read as the engines write it: each line loses
the prefixes their writers put before the message (vLLM V1's `(EngineCore_DP0 pid=N) `, set by
vllm/utils decorate_logs / vllm/logger.py _FORMAT's `(%(vllm_process_name)s pid=%(process)d) `;
vllm/logger.py's `LEVEL mm-dd hh:mm:ss [file.py:N] ` (`file.py:N] ` before 0.5); SGLang's
configure_logger `[%Y-%m-%d %H:%M:%S ...] `; torch's `[rankN]:`), then the tracebacks are found
and the exception that killed the process is the last one that is not a pointer to another
process's error (crashes.json "wrappers": "Engine core initialization failed. See root cause
above.").

Whether the dtype caused it is read from the message's structure, per release (crashes.json,
generated from the wheels by scripts/engine-data --crashes), never from a substring:
- vLLM's attention selector (vllm/platforms/cuda.py get_attn_backend_cls): "No valid attention
  backend found ... Reasons: {BACKEND: [reason, ...], ...}" is the dtype's doing only where some
  backend's reasons are the dtype's alone (a different dtype would have let that backend be
  chosen: the rule get_attn_backend_cls itself applies to --block-size, `reasons == ["block_size
  not supported"]`, from 0.2x); where every backend has a reason that is not the dtype's, it is
  not. "Selected backend X is not valid ... Reason: [...]" alike, for the one backend.
- a message the release raises about the KV-cache dtype (CacheConfig's "Unknown kv cache dtype",
  a backend's "does not support fp8 kv-cache on this device", SGLang's equivalents): the dtype's,
  matched whole against the release's own template (a formatted value is one token, so text a
  tenant controls, a model path or a served name, cannot complete a template).
- anything else: the engine's words do not name the dtype (None), and nothing blames it.
Pure: text in, an ExitCause out.
"""

from __future__ import annotations

import ast
import re

from kubectl_kvcache.engine.words import redact
from kubectl_kvcache.record import Record

REJECTED, STARTUP = "rejected", "startup"
DTYPE, NOT_DTYPE = "kv-cache-dtype", "not-kv-cache-dtype"     # ExitCause.blame; None: not said
MAX_SCANNED_LINE = 1 << 20

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# vllm/utils (decorate_logs/_add_prefix; 0.8-0.10 executor/multiproc_worker_utils) and
# vllm/logger.py _FORMAT: "(NAME pid=N) "; Ray's "(NAME pid=N, ip=A) "
_PROCESS = re.compile(r"^\((?P<proc>[^()\n]{1,80}?) pid=(?P<pid>\d+)(?:, ip=[0-9A-Fa-f.:]+)?\) ?")
# vllm/logger.py _FORMAT "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] " (datefmt %m-%d
# %H:%M:%S); 0.4's "%(filename)s:%(lineno)d] "
_VLLM_LOGGER = re.compile(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
                          r"(?:\[[^\]\s]+:\d+\]|[^\s\]]+:\d+\]) ?")
# sglang/srt/utils configure_logger "[%(asctime)s{ms}{prefix}] " (datefmt %Y-%m-%d %H:%M:%S)
_SGLANG_LOGGER = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?(?: [^\]\n]{0,40})?\] ?")
_RANK = re.compile(r"^\[rank\d+\]: ?")
_USAGE = re.compile(r"^usage: ")
_ARGPARSE_ERROR = re.compile(r"^[\w.\-/ ]{1,80}: error: (.+)$")
# argparse's own messages (Lib/argparse.py): named even where its usage is cut off a bounded tail
_ARGPARSE_MESSAGES = ("argument ", "unrecognized arguments: ", "the following arguments are required: ",
                      "one of the arguments ", "ambiguous option: ", "expected one argument", "invalid choice: ")
_EXCEPTION = re.compile(r"^(?P<cls>(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit))(?::\s?(?P<msg>.*))?$")
_TRACEBACK = "Traceback (most recent call last):"
_STARTUP_MARKERS = ("No valid attention backend found", "invalid tool call parser", "validation error for")
# vllm/platforms/cuda.py get_attn_backend_cls
_NO_VALID = re.compile(r"^No valid attention backend found for (?P<device>\S+) with (?P<config>.*?)\. "
                       r"Reasons: \{(?P<reasons>.*)\}\.?$")
_SELECTED = re.compile(r"^Selected backend (?P<backend>\S+) is not valid for this configuration\. "
                       r"Reason: (?P<reasons>\[.*\])$")
_BACKEND = re.compile(r"(?P<name>[A-Z][A-Z0-9_]*): \[(?P<reasons>.*?)\](?=, [A-Z][A-Z0-9_]*: \[|$)")
# pydantic's ValidationError of vLLM's CacheConfig (a pydantic dataclass): the field on the next line
_VALIDATION = re.compile(r"^\d+ validation errors? for CacheConfig$")


class ExitCause(Record):
    """Why a container exited, in the engine's own words (its previous log)."""

    __slots__ = ("kind", "line", "blame", "why")

    def __init__(self, kind: str, line: str, blame: str | None = None, why: str | None = None):
        self.kind = kind            # REJECTED (its argument parser refused the argv) or STARTUP (after the parse)
        self.line = line            # the engine's error line, redacted and cut
        self.blame = blame          # DTYPE, NOT_DTYPE, or None: its words do not say
        self.why = why              # what in its words decided `blame`

    def to_dict(self):
        return {"kind": self.kind, "line": self.line, "kvCacheDtype": self.blame, "why": self.why}


def strip(line: str) -> tuple[str | None, str]:
    """(the writing process, the message) of one log line: the writers' prefixes removed."""
    line = _ANSI.sub("", line[:MAX_SCANNED_LINE]).rstrip("\r\n")
    proc = None
    m = _PROCESS.match(line)
    if m:
        proc, line = f"{m.group('proc')} pid={m.group('pid')}", line[m.end():]
    for prefix in (_RANK, _VLLM_LOGGER, _SGLANG_LOGGER, _RANK):
        m = prefix.match(line)
        if m:
            line = line[m.end():]
    return proc, line.rstrip()


class _Raised(Record):
    __slots__ = ("proc", "cls", "message", "line", "after")

    def __init__(self, proc, cls, message, line, after):
        self.proc, self.cls, self.message, self.line, self.after = proc, cls, message, line, after


def _exceptions(lines: list[tuple[str | None, str]]) -> list[_Raised]:
    """Each traceback's exception, in order: the first unindented line after its frames, in the
    lines of the process that printed the traceback (other processes' lines interleave)."""
    found = []
    open_tb: dict = {}       # process -> in a traceback's frames
    for i, (proc, text) in enumerate(lines):
        if text.strip().endswith(_TRACEBACK):    # SGLang: "Scheduler hit an exception: Traceback ..."
            open_tb[proc] = True
            continue
        if not open_tb.get(proc):
            continue
        if not text or text[0] in " \t" or text.startswith(("File ", "^", "~")):
            continue
        open_tb[proc] = False
        m = _EXCEPTION.match(text.strip())
        if m:
            after = [t for p, t in lines[i + 1:i + 4] if p == proc]
            found.append(_Raised(proc, m.group("cls"), m.group("msg") or "", text.strip(), after))
    return found


def _template_re(parts, slot_all: bool = False) -> re.Pattern:
    """A message template as a regex matched whole: a formatted value is one token (no spaces),
    so only the engine's own literal words can make it match."""
    out = []
    for p in parts:
        out.append(re.escape(p) if isinstance(p, str) else (r".+?" if slot_all else r"\S+?"))
    return re.compile("".join(out) + r"\Z", re.S)


def _in(spans, version, newest) -> bool:
    from kubectl_kvcache.engine.releases import parse_version

    if version is None:
        return True
    for first, last in spans:
        lo, hi = parse_version(first), parse_version(last)
        if lo is None or hi is None:
            continue
        if lo <= version and (version <= hi or last == newest):
            return True
    return False


_COMPILED: dict = {}


def _facts(engine: str | None, version):
    """The release's (messages, wrappers, reasons): compiled templates of crashes.json; every
    release's where the engine or release is not known (a release newer than the data: the newest's)."""
    key = (engine, str(version) if version is not None else None)
    if key in _COMPILED:
        return _COMPILED[key]
    from kubectl_kvcache.engine import knowledge
    from kubectl_kvcache.engine.releases import parse_version

    data = knowledge.load("crashes")
    messages, wrappers, reasons = [], [], []
    for name, table in data.items():
        if engine is not None and name != engine:
            continue
        newest, newest_v = None, None       # the newest release the data read
        for kind in table.values():
            for e in kind:
                last = e["releases"][-1][1]
                at = parse_version(last)
                if at is not None and (newest_v is None or at > newest_v):
                    newest, newest_v = last, at
        ver = version if engine is not None else None
        for e in table.get("messages", []):
            if _in(e["releases"], ver, newest):
                messages.append((e["exception"], _template_re(e["template"])))
        for e in table.get("wrappers", []):
            if _in(e["releases"], ver, newest):
                wrappers.append(_template_re(e["template"], slot_all=True))
        for e in table.get("reasons", []):
            if _in(e["releases"], ver, newest) and any(isinstance(p, str) and p.strip() for p in e["template"]):
                reasons.append((e["dtype"], _template_re(e["template"], slot_all=True)))
    _COMPILED[key] = (messages, wrappers, reasons)
    return _COMPILED[key]


def _reason_kind(text: str, reasons) -> str | None:
    """"dtype" or "other" for one reason a backend gave; None: not a reason the release writes."""
    kinds = {("dtype" if dtype else "other") for dtype, rx in reasons if rx.match(text)}
    return "dtype" if kinds == {"dtype"} else "other" if kinds == {"other"} else None


def _split(text: str, reasons) -> list[str]:
    """A backend's `', '.join(reasons)` split back into reasons: from the left, the longest run of
    pieces that is a reason the release writes (a reason may itself hold ", "), else one piece (a
    reason this release's data does not hold: its kind stays unknown)."""
    pieces, out, i = text.split(", "), [], 0
    while i < len(pieces):
        j = next((j for j in range(len(pieces), i, -1)
                  if _reason_kind(", ".join(pieces[i:j]), reasons) is not None), i + 1)
        out.append(", ".join(pieces[i:j]))
        i = j
    return out


def _backends_verdict(backends: list[tuple[str, list[str]]], reasons) -> tuple[str | None, str]:
    """From each refused backend's reasons: DTYPE where one was refused for the dtype alone (a
    different dtype would have let it be chosen), NOT_DTYPE where each has a reason that is not the
    dtype's (no dtype would have), else None (a reason this release's data does not hold decides)."""
    kinds = [(name, [_reason_kind(r, reasons) for r in got]) for name, got in backends]
    for name, said in kinds:
        if said and all(k == "dtype" for k in said):
            return DTYPE, f"{name} was refused for the KV-cache dtype alone"
    if kinds and all("other" in said for _, said in kinds):
        return NOT_DTYPE, "every attention backend was refused for a reason other than the KV-cache dtype"
    return None, "the attention backends' reasons are not all ones this release writes"


def _selector(message: str, reasons) -> tuple[str | None, str] | None:
    """The selector's verdict on its own error; None: the message is not the selector's."""
    m = _NO_VALID.match(message)
    if m:
        backends: list[tuple[str, list[str]]] = []
        body, pos = m.group("reasons"), 0
        for b in _BACKEND.finditer(body):
            if b.start() != pos:
                return None, "the Reasons mapping is not the one vLLM writes"
            backends.append((b.group("name"), _split(b.group("reasons"), reasons)))
            pos = b.end() + 2           # ", " between two backends
        if body and pos - 2 != len(body):
            return None, "the Reasons mapping is not the one vLLM writes"
        return _backends_verdict(backends, reasons)
    m = _SELECTED.match(message)
    if m:
        try:
            listed = ast.literal_eval(m.group("reasons"))
        except (ValueError, SyntaxError):
            listed = [m.group("reasons")[1:-1]]      # "[ImportError: ...]": the backend did not import
        if not isinstance(listed, list) or not all(isinstance(r, str) for r in listed):
            return None, "the Reason list is not the one vLLM writes"
        return _backends_verdict([(m.group("backend"), listed)], reasons)
    return None


def classify(cls: str, message: str, after: list[str], engine: str | None, version) -> tuple[str | None, str | None]:
    """(blame, why) of one exception: see the module's docstring."""
    messages, _, reasons = _facts(engine, version)
    said = _selector(message, reasons) if engine in (None, "vllm") else None
    if said is not None:
        return said
    short = cls.rsplit(".", 1)[-1]
    for exc, rx in messages:
        if exc == short and rx.match(message):
            return DTYPE, f"a {exc} the release raises about the KV-cache dtype"
    if short == "ValidationError" and _VALIDATION.match(message) and after and after[0].strip() == "cache_dtype":
        return DTYPE, "CacheConfig's validation refused cache_dtype"
    return None, None


# Lib/argparse.py ArgumentError: "argument %(argument_name)s: %(message)s", the name "-x/--long"
_ARGUMENT = re.compile(r": error: argument (?P<names>[-\w]+(?:/[-\w]+)*): ")


def _refused_option(line: str) -> tuple[str | None, str | None]:
    m = _ARGUMENT.search(line)
    if m is None:
        return None, None
    if {"--kv-cache-dtype", "--kv_cache_dtype"} & set(m.group("names").split("/")):
        return DTYPE, "its argument parser refused --kv-cache-dtype"
    return NOT_DTYPE, f"its argument parser refused {m.group('names')}"


def _wrapper(raised: _Raised, wrappers) -> bool:
    return any(rx.match(raised.message) for rx in wrappers)


def exit_cause(text: str, engine: str | None = None, version=None) -> ExitCause | None:
    """The engine's error in a crashed container's log tail: argparse's `prog: error: ...` after
    its usage (the argument parser refused the argv), else the exception that killed the process,
    else a known start-up failure's line. None: the tail says nothing recognisable. `engine` and
    `version` (a release string or engine.Version) choose the release's messages; None: every release's."""
    if isinstance(version, str):
        from kubectl_kvcache.engine.releases import parse_version
        version = parse_version(version)        # None for a tag it cannot read: every release's messages
    lines = [strip(raw) for raw in text.splitlines()]
    usage = False
    rejected = None
    for _, line in lines:
        if _USAGE.match(line):
            usage = True
            continue
        m = _ARGPARSE_ERROR.match(line)
        if m and (usage or m.group(1).startswith(_ARGPARSE_MESSAGES)):
            rejected = line
    if rejected is not None:
        return ExitCause(REJECTED, redact(rejected), *_refused_option(rejected))
    _, wrappers, _ = _facts(engine, version)
    raised = _exceptions(lines)
    if not raised:      # a tail cut before its traceback's header: the last exception line
        for i in range(len(lines) - 1, -1, -1):
            proc, line = lines[i]
            m = _EXCEPTION.match(line.strip()) if line[:1] not in " \t" else None
            if m:
                raised = [_Raised(proc, m.group("cls"), m.group("msg") or "", line.strip(),
                                  [t for p, t in lines[i + 1:i + 4] if p == proc])]
                break
    killer = next((r for r in reversed(raised) if not _wrapper(r, wrappers)), raised[-1] if raised else None)
    if killer is not None:
        blame, why = classify(killer.cls, killer.message, killer.after, engine, version)
        return ExitCause(STARTUP, redact(killer.line), blame, why)
    for marker in _STARTUP_MARKERS:
        for _, line in reversed(lines):
            if marker in line:
                return ExitCause(STARTUP, redact(line.strip()))
    return None
