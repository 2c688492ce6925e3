"""What an engine container writes, per release, for the kubelet stand-in to serve: start-up log
lines, crash output and vLLM's /metrics text, produced by the engines' own code from the cached
wheels (tools/enginedata/wheels.py's cache, as the conformance tier reads them) where that code runs
here, else a typed fallback that cites the upstream file and format it follows and checks, in the
wheel, that the format is really there (so a release that changed it fails loudly, not silently).

Real code:
- SGLang `server_args=ServerArgs(...)`: the release's own ServerArgs dataclass __repr__ over the
  namespace its own ServerArgs.add_cli_args parser produces (sglang/srt/entrypoints/engine.py
  `logger.info(f"{server_args=}")`). The instance is built without __post_init__ (that resolves
  hardware and model defaults and would load the model), so fields it resolves (tokenizer_path,
  mem_fraction_static...) keep their parsed values; kv_cache_dtype is the parsed value either way.
- SGLang's argparse rejection: that same parser, prog `launch_server.py` (`python -m
  sglang.launch_server`), its real stderr (usage, then `launch_server.py: error: ...`), exit 2.
- vLLM's argparse rejection: Python's argparse with the release's own choices (the
  `CacheDType` Literal of vllm/config/cache.py, read from the wheel), prog `vllm serve`.
Typed (the vLLM stack does not import here without a GPU build):
- `non-default args: {...}`: vllm/entrypoints/utils.py log_non_default_args,
  `logger.info("non-default args: %s", non_default_args)`, through vllm/logger.py's _FORMAT
  `%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s`, datefmt `%m-%d %H:%M:%S`,
  and the `(APIServer pid=N) ` prefix of vllm/utils/system_utils.py decorate_logs where the
  release has it;
- `vllm:cache_config_info`: vllm/v1/metrics/loggers.py log_metrics_info, a gauge set to 1 whose
  labels are CacheConfig.metrics_info() (every field, str()) plus `engine`, in prometheus_client's
  text format;
- `No valid attention backend found for cuda with ... Reasons: {...}.`: vllm/platforms/cuda.py
  get_attn_backend_cls, raised as ValueError (the traceback's last line is what stays); its text
  is the release's own f-strings evaluated (vllm_selector_error), as are vllm_log's prefixes.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CONFORMANCE = os.path.join(ROOT, "tools", "enginedata")   # the wheels cache, as the conformance tier reads it
STAMP_SGLANG = "2026-01-01 00:00:00"       # configure_logger's datefmt %Y-%m-%d %H:%M:%S
STAMP_VLLM = "01-01 00:00:00"              # vllm/logger.py _DATE_FORMAT %m-%d %H:%M:%S


class Unavailable(RuntimeError):
    """The release is not in the engine cache (scripts/engine-wheels ENGINE==VERSION)."""


# tests download a release that is not cached yet (wheels.ensure: pip download, .py files kept);
# the demo does not (a vLLM wheel is hundreds of MB): it serves no log and says so
download = True


def root(engine, version):
    """The release's cached .py files (tools/enginedata/wheels.py's cache)."""
    if CONFORMANCE not in sys.path:
        sys.path.insert(0, CONFORMANCE)
    import wheels
    hit = wheels.cached(engine, version)
    if hit:
        return hit
    if not download:
        raise Unavailable(f"{engine}=={version} is not in the engine cache: scripts/engine-wheels "
                          f"{engine}=={version}")
    try:
        return wheels.ensure(engine, version)
    except RuntimeError as e:
        raise Unavailable(f"{engine}=={version}: {e}") from None


def _source(engine, version, rel):
    with open(os.path.join(root(engine, version), rel), encoding="utf-8") as f:
        return f.read()


def _require(engine, version, rel, needle):
    """The line number of `needle` in the release's file; AssertionError when the release does
    not have it (the format this module types is not that release's)."""
    for n, line in enumerate(_source(engine, version, rel).splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(f"{engine}=={version}: {rel} has no {needle!r}")


# -- SGLang, from its own code (in a subprocess: the stand-in modules stay out of this process) ---

@functools.lru_cache(maxsize=None)
def _sglang(version, argv):
    root("sglang", version)                 # cached (or fetched) here, where `download` is decided
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "sglang", version, json.dumps(list(argv))],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONWARNINGS="ignore"))
    if p.returncode != 0 or not p.stdout:
        raise RuntimeError(f"sglang=={version} helper failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout)


def sglang_server_args(version, argv):
    """The release's `ServerArgs(...)` repr for `argv` (raises when the parser rejects it)."""
    out = _sglang(version, tuple(argv))
    if out["exit"] is not None:
        raise ValueError(f"sglang=={version} rejects {argv}: {out['stderr'][-300:]}")
    return out["repr"]


def sglang_startup_log(version, argv):
    """The head of a running SGLang container's log: the `server_args=` line as configure_logger
    formats it (`[%(asctime)s] %(message)s`) after the line that names it."""
    _require("sglang", version, "sglang/srt/entrypoints/engine.py", 'logger.info(f"{server_args=}")')
    return f"[{STAMP_SGLANG}] server_args={sglang_server_args(version, argv)}\n"


def sglang_rejection(version, argv):
    """(stderr, exit code) of `python -m sglang.launch_server ARGV` when its parser refuses it."""
    out = _sglang(version, tuple(argv))
    if out["exit"] is None:
        raise ValueError(f"sglang=={version} accepts {argv}")
    return out["stderr"], out["exit"]


def _sglang_main(version, argv):
    """Runs in the helper process: the release's parser and ServerArgs, stand-ins for the rest."""
    import argparse
    import contextlib
    import dataclasses
    import io
    sys.path.insert(0, CONFORMANCE)
    sys.path.insert(0, root("sglang", version))
    import standins
    standins.install(refuse=("sglang",))
    standins.install_tolerant(["sglang"], ["sglang.srt.server_args"], ())
    from sglang.srt.server_args import ServerArgs
    parser = argparse.ArgumentParser(prog="launch_server.py")
    ServerArgs.add_cli_args(parser)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = parser.parse_args(argv)
    except SystemExit as e:
        return {"exit": e.code, "stderr": err.getvalue(), "repr": None}
    sa = object.__new__(ServerArgs)
    for f in dataclasses.fields(ServerArgs):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        object.__setattr__(sa, f.name, getattr(ns, f.name, default))
    return {"exit": None, "stderr": "", "repr": repr(sa)}


# -- vLLM ------------------------------------------------------------------------------------------

def vllm_cache_dtypes(version):
    """The release's kv-cache-dtype choices: vllm/config/cache.py's CacheDType Literal."""
    tree = ast.parse(_source("vllm", version, "vllm/config/cache.py"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "CacheDType" for t in node.targets)
                and isinstance(node.value, ast.Subscript)):
            elts = node.value.slice.elts if isinstance(node.value.slice, ast.Tuple) else [node.value.slice]
            return [e.value for e in elts]
    raise AssertionError(f"vllm=={version}: no CacheDType in vllm/config/cache.py")


def vllm_rejection(version, value):
    """(stderr, 2) of `vllm serve M --kv-cache-dtype VALUE` refused by argparse: this Python's
    argparse message over the release's choices (usage reduced to its first line)."""
    import argparse
    import contextlib
    import io
    parser = argparse.ArgumentParser(prog="vllm serve")
    parser.add_argument("--kv-cache-dtype", choices=vllm_cache_dtypes(version))
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(["--kv-cache-dtype", value])
    except SystemExit as e:
        return err.getvalue(), e.code
    raise ValueError(f"vllm=={version} accepts --kv-cache-dtype {value}")


def _prefix(version):
    has = "def decorate_logs" in _source("vllm", version, "vllm/utils/system_utils.py") \
        if os.path.exists(os.path.join(root("vllm", version), "vllm/utils/system_utils.py")) else False
    return "(APIServer pid=1) " if has else ""


def vllm_startup_log(version, non_default):
    """The `non-default args:` line (vllm/entrypoints/utils.py), `non_default` the dict of the
    arguments the Pod set (their parsed values), with the release's real line number."""
    needle = 'logger.info("non-default args: %s"'
    for rel in NON_DEFAULT_FILES:
        if os.path.exists(os.path.join(root("vllm", version), rel)) and \
                needle in _source("vllm", version, rel):
            n = _require("vllm", version, rel, needle)
            return (f"{_prefix(version)}INFO {STAMP_VLLM} [{os.path.basename(rel)}:{n}] "
                    f"non-default args: {non_default!r}\n")
    raise AssertionError(f"vllm=={version}: no {needle!r} in {NON_DEFAULT_FILES}")


# where log_non_default_args lives: vllm/entrypoints/utils.py (to 0.2x), then
# vllm/entrypoints/serve/utils/api_utils.py (0.29.0, through redact_sensitive_args: the Pod's
# arguments here hold no secret, so the dict prints as it is)
NON_DEFAULT_FILES = ("vllm/entrypoints/utils.py", "vllm/entrypoints/serve/utils/api_utils.py")


def _cache_config_fields(version):
    """CacheConfig's fields in declaration order with their literal defaults (vllm/config/cache.py)."""
    tree = ast.parse(_source("vllm", version, "vllm/config/cache.py"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "CacheConfig":
            out = {}
            for st in node.body:
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) \
                        and not st.target.id.startswith("_") and "ClassVar" not in ast.unparse(st.annotation):
                    try:
                        out[st.target.id] = ast.literal_eval(st.value) if st.value is not None else None
                    except ValueError:
                        out[st.target.id] = None
            return out
    raise AssertionError(f"vllm=={version}: no CacheConfig")


def vllm_metrics(version, cache_dtype, engine="0"):
    """/metrics text with `vllm:cache_config_info` as log_metrics_info writes it."""
    _require("vllm", version, "vllm/v1/metrics/loggers.py", 'name = "vllm:cache_config_info"')
    labels = {k: str(v) for k, v in _cache_config_fields(version).items()}
    labels["cache_dtype"] = cache_dtype
    labels["engine"] = engine

    def esc(v):
        return v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r'\"')
    body = ",".join(f'{k}="{esc(v)}"' for k, v in labels.items())
    return ("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
            "# TYPE vllm:cache_config_info gauge\n"
            f"vllm:cache_config_info{{{body}}} 1.0\n")


def vllm_backend_failure(version, cache_dtype, reasons=None):
    """The last lines of a vLLM start-up that no attention backend accepts: cuda.py's ValueError,
    its message built by the release's own f-strings (vllm_selector_error)."""
    _require("vllm", version, "vllm/platforms/cuda.py", 'f"No valid attention backend found for {cls.device_name} "')
    reasons = reasons or {"FLASH_ATTN": ["kv_cache_dtype not supported"]}
    return ("Traceback (most recent call last):\n"
            '  File "/usr/local/bin/vllm", line 10, in <module>\n'
            "    sys.exit(main())\n"
            f"ValueError: {vllm_selector_error(version, reasons, cache_dtype)}\n")


def startup_log(engine, version, argv, dtype):
    """A running replica's log head for `engine` at `version` launched with `argv`."""
    if engine == "sglang":
        return sglang_startup_log(version, argv)
    # the dict log_non_default_args prints: what differs from the parser's defaults, in the
    # parser's dest order; typed here for the positional model and the Pod's value flags that
    # differ from vLLM's defaults (--port 8000 is the default and so absent)
    nd = {}
    if argv and not argv[0].startswith("-"):
        nd["model_tag"] = argv[0]
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag.startswith("--") and "=" not in flag and not value.startswith("--"):
            if (flag, value) != ("--port", "8000"):
                nd[flag[2:].replace("-", "_")] = int(value) if value.isdigit() else value
    if dtype:
        nd["kv_cache_dtype"] = dtype
    return vllm_startup_log(version, nd)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "sglang":
        print(json.dumps(_sglang_main(sys.argv[2], json.loads(sys.argv[3]))))
    else:
        sys.exit("usage: engine_lines.py sglang VERSION JSON_ARGV")


def vllm_listed_dtypes(version):
    """Every dtype some attention backend of the release lists in `supported_kv_cache_dtypes`
    (the base class's default included: vllm/v1/attention/backend.py, or
    vllm/attention/backends/abstract.py before it; each backend under */attention/backends/),
    on any platform: a dtype outside it has no backend anywhere and start-up fails in
    get_attn_backend_cls. None when the release has no such list (older selectors)."""
    base = root("vllm", version)
    listed, found = set(), False
    for sub in ("vllm/attention", "vllm/v1/attention"):
        for dirpath, _, files in os.walk(os.path.join(base, sub)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    text = f.read()
                if "supported_kv_cache_dtypes" not in text:
                    continue
                for node in ast.walk(ast.parse(text)):
                    target = getattr(node, "target", None) if isinstance(node, ast.AnnAssign) else (
                        node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
                    if getattr(target, "id", None) == "supported_kv_cache_dtypes" and node.value is not None:
                        found = True
                        listed |= {c.value for c in ast.walk(node.value)
                                   if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return listed if found else None


def vllm_startup_fails(version, dtype):
    """Whether vLLM `version` fails at backend selection with --kv-cache-dtype `dtype`."""
    listed = vllm_listed_dtypes(version)
    return bool(dtype) and dtype != "auto" and listed is not None and dtype not in listed


# -- vLLM's attention selector error and its log lines, evaluated from the release's own source ---

class _Backend:
    """An AttentionBackendEnum member as the selector's f-strings use it (.name; str() of an Enum)."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"AttentionBackendEnum.{self.name}"


class _Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def _eval(node, names):
    """One expression of the release's own code (an f-string, a join) evaluated on `names`."""
    return eval(compile(ast.Expression(body=node), "<wheel>", "eval"), {"__builtins__": {"str": str}}, names)


def _function(tree, name):
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)


def _selector_config_repr(version, fields):
    """AttentionSelectorConfig(...) as the release's own __repr__ writes it (0.14+: its f-string;
    the NamedTuple's default repr where it has none), `fields` over the class's literal defaults."""
    for rel in ("vllm/v1/attention/selector.py", "vllm/attention/selector.py"):
        path = os.path.join(root("vllm", version), rel)
        if not os.path.exists(path):
            continue
        tree = ast.parse(_source("vllm", version, rel))
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "AttentionSelectorConfig"), None)
        if cls is None:
            continue
        values = {}
        for st in cls.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                try:
                    values[st.target.id] = ast.literal_eval(st.value) if st.value is not None else None
                except ValueError:
                    values[st.target.id] = "decoder" if st.target.id == "attn_type" else None
        values.update(fields)
        rep = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__repr__"), None)
        if rep is None:
            return "AttentionSelectorConfig(" + ", ".join(f"{k}={v!r}" for k, v in values.items()) + ")"
        ret = next(n for n in ast.walk(rep) if isinstance(n, ast.Return))
        return _eval(ret.value, {"self": _Obj(**values)})
    raise AssertionError(f"vllm=={version}: no AttentionSelectorConfig")


def vllm_selector_error(version, reasons, kv_cache_dtype="auto", selected=None, **config):
    """The message of the ValueError vllm/platforms/cuda.py get_attn_backend_cls raises, built by
    the release's own f-strings: "No valid attention backend found for cuda with {config}.
    Reasons: {reasons}." for `reasons` {BACKEND: [reason, ...]}, or (`selected`, a backend name)
    "Selected backend ... is not valid for this configuration. Reason: [...]" for its one list."""
    tree = ast.parse(_source("vllm", version, "vllm/platforms/cuda.py"))
    fn = _function(tree, "get_attn_backend_cls")
    fields = {"head_size": 128, "dtype": "torch.bfloat16", "kv_cache_dtype": kv_cache_dtype, "block_size": None,
              "use_mla": False, "has_sink": False, "use_sparse": False, "attn_type": "decoder", **config}
    raised = [n.exc.args[0] for n in ast.walk(fn) if isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call)
              and n.exc.args and isinstance(n.exc.args[0], ast.JoinedStr)]
    if selected is not None:
        node = next(r for r in raised if "is not valid for " in ast.unparse(r) and "{invalid_reasons}" in ast.unparse(r))
        return _eval(node, {"selected_backend": _Backend(selected), "invalid_reasons": list(reasons[selected])})
    names = dict(fields, cls=_Obj(device_name="cuda"))
    assigned = {n.targets[0].id: n.value for n in ast.walk(fn)
                if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)}
    comp = next(n for n in ast.walk(assigned["reasons_str"]) if isinstance(n, ast.GeneratorExp))
    target, source = comp.generators[0].target, comp.generators[0].iter.func.value.id
    paired = isinstance(target, ast.Tuple) and isinstance(target.elts[1], ast.Tuple)
    names[source] = {_Backend(b): ((i, list(r)) if paired else list(r)) for i, (b, r) in enumerate(reasons.items())}
    names["attn_selector_config"] = _Obj(__repr__=None)
    if "attn_selector_config" in ast.unparse(assigned["config_str"]):
        text = _selector_config_repr(version, fields)
        names["attn_selector_config"] = _Obj(__repr__=lambda: text)
    names["reasons_str"] = _eval(assigned["reasons_str"], names)
    names["config_str"] = _eval(assigned["config_str"], names)
    node = next(r for r in raised if "No valid attention backend found for " in ast.unparse(r))
    return _eval(node, names)


def vllm_log(version, level, message, process="EngineCore_DP0", pid=7, fileinfo="core.py", lineno=1):
    """`message` logged by vLLM `version`: vllm/logger.py's _FORMAT (VLLM_LOGGING_PREFIX unset),
    its datefmt, NewLineFormatter's prefix on every line of a multi-line message, and the process
    prefix the release writes: in _FORMAT (`(%(vllm_process_name)s pid=%(process)d) `) or, where
    decorate_logs wraps stdout (vllm/utils _add_prefix), before every physical line."""
    import logging
    tree = ast.parse(_source("vllm", version, "vllm/logger.py"))
    fmt = next(n.value for n in tree.body if isinstance(n, ast.Assign)
               and getattr(n.targets[0], "id", None) == "_FORMAT")
    fmt = _eval(fmt, {"envs": _Obj(VLLM_LOGGING_PREFIX=""), "VLLM_LOGGING_PREFIX": ""})
    record = logging.LogRecord("vllm", getattr(logging, level), fileinfo, lineno, message, None, None)
    record.fileinfo, record.vllm_process_name, record.process = fileinfo, process, pid
    record.created = 1767225600.0       # 01-01 00:00:00 (UTC)
    formatter = logging.Formatter(fmt, datefmt="%m-%d %H:%M:%S")
    formatter.converter = __import__("time").gmtime
    text = formatter.format(record)
    head = text.split(message)[0]
    text = text.replace("\n", "\r\n" + head)           # vllm/logging_utils/formatter.py NewLineFormatter
    if "pid=" not in fmt and _prefix(version):
        text = "\n".join(f"({process} pid={pid}) {ln}" for ln in text.split("\n"))
    return text + "\n"


def vllm_core_wrapper(version):
    """The API server's RuntimeError after an engine core died, from the release's own raise
    (vllm/v1/engine/utils.py wait_for_engine_startup: "Engine core initialization failed. See root
    cause above. ...")."""
    tree = ast.parse(_source("vllm", version, "vllm/v1/engine/utils.py"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args \
                and "Engine core initialization failed" in ast.unparse(node.exc.args[0]):
            return "RuntimeError: " + _eval(node.exc.args[0], {"finished": {"EngineCore_DP0": 1},
                                                               "failed_frontend_procs": {}})
    raise AssertionError(f"vllm=={version}: no wait_for_engine_startup raise")


def vllm_v1_crash(version, message, exception="ValueError"):
    """A V1 engine's crash tail as the release writes it: the engine core's traceback through its
    logger ("EngineCore failed to start.", every line prefixed), a worker's line after it, then the
    API server's own traceback ending in its pointer to the root cause."""
    tb = ("EngineCore failed to start.\nTraceback (most recent call last):\n"
          '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 866, in run_engine_core\n'
          "    engine_core = EngineCoreProc(*args, **kwargs)\n"
          "                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
          f"{exception}: {message}")
    return (vllm_log(version, "ERROR", tb, process="EngineCore_DP0", pid=91, fileinfo="core.py", lineno=866)
            + vllm_log(version, "INFO", "Parent process exited, terminating worker", process="Worker_TP1", pid=93,
                       fileinfo="multiproc_executor.py", lineno=709)
            + "(APIServer pid=1) Traceback (most recent call last):\n"
            + '(APIServer pid=1)   File "/usr/local/bin/vllm", line 10, in <module>\n'
            + "(APIServer pid=1)     sys.exit(main())\n"
            + f"(APIServer pid=1) {vllm_core_wrapper(version)}\n")
