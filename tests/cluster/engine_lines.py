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


@functools.lru_cache(maxsize=256)
def _source(engine, version, rel):
    with open(os.path.join(root(engine, version), rel), encoding="utf-8") as f:
        return f.read()


@functools.lru_cache(maxsize=64)
def _tree(engine, version, rel):
    """The release's file parsed once (the bench builds a thousand Pods' lines from it)."""
    return ast.parse(_source(engine, version, rel))


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


def vllm_metrics(version, cache_dtype, engine="0", cap=None):
    """/metrics text with `vllm:cache_config_info` as log_metrics_info writes it: after the KV
    cache is sized (`cap`, capacity()), num_gpu_blocks and block_size set, and the fields newer
    releases add to CacheConfig (kv_cache_size_tokens, kv_cache_max_concurrency, 0.29 on) where
    the release's CacheConfig has them."""
    _require("vllm", version, "vllm/v1/metrics/loggers.py", 'name = "vllm:cache_config_info"')
    labels = {k: str(v) for k, v in _cache_config_fields(version).items()}
    labels["cache_dtype"] = cache_dtype
    if cap is not None:
        labels["num_gpu_blocks"] = str(cap["blocks"])
        labels["block_size"] = str(cap["block_size"])
        for field, value in (("kv_cache_size_tokens", cap["tokens"]), ("kv_cache_max_concurrency", cap["concurrency"])):
            if field in labels:
                labels[field] = str(value)
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


def _parsed(value):
    """A flag's value as argparse's int/float types leave it (the typed flags the Pods set:
    --max-model-len, --gpu-memory-utilization, --port), else the string."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


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
                nd[flag[2:].replace("-", "_")] = _parsed(value)
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


# -- capacity: what a running replica says its KV cache holds, from each release's own logger calls --
#
# The line TEXTS are the release's: each is its logger call (found in the wheel by the words of its
# format, since the call's file and line move every release) evaluated on the replica's numbers.
# The NUMBERS are the stand-in's: a token's KV-cache footprint (SHAPE: layers x KV heads x head
# size, K and V, times the bytes of one element of the cache dtype, the torch dtype the release maps
# the dtype to), and the memory a replica has for its cache (kv_memory: the GPU's memory (gpus.py)
# times --gpu-memory-utilization / --mem-fraction-static, less WEIGHTS_GIB for everything else).
# They are not any real model's; what they must keep is the engines' arithmetic: a token count that
# is whole blocks, fp8 holding twice the tokens of a 16-bit cache, the max length beside it.

SHAPE = {"layers": 36, "kv_heads": 8, "head_dim": 128}   # the stand-in's model (one for every Pod)
WEIGHTS_GIB = 18.0            # what a replica's GPU memory holds besides its KV cache (the stand-in's)
MAX_MODEL_LEN = 40960         # the stand-in model's own max length (used when the argv sets none)
BLOCK_SIZE = 16               # vLLM's block size on CUDA when none is set (CacheConfig, resolved)
GIB = 1 << 30
TORCH_BYTES = {"float32": 4, "float": 4, "half": 2, "float16": 2, "bfloat16": 2, "uint8": 1, "int8": 1,
               "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1}
# SGLang's kv cache dtype as the torch dtype its memory pool is made of (the stand-in's table;
# `auto` is the model's dtype, bfloat16 here)
SGLANG_TORCH = {"auto": "bfloat16", "bf16": "bfloat16", "bfloat16": "bfloat16", "fp8_e4m3": "float8_e4m3fn",
                "fp8_e5m2": "float8_e5m2"}


def _argv_value(argv, flag):
    """The last value of `flag` in an argv (`--flag V` or `--flag=V`), None when absent."""
    value = None
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(flag + "="):
            value = a.split("=", 1)[1]
    return value


def vllm_torch_dtype(version, dtype):
    """The torch dtype vLLM `version` makes its KV cache of for --kv-cache-dtype `dtype`: its
    STR_DTYPE_TO_TORCH_DTYPE (vllm/utils/torch_utils.py; vllm/utils/__init__.py or vllm/utils.py before), `auto`
    the model's dtype (bfloat16 for the stand-in model)."""
    if not dtype or dtype == "auto":
        return "bfloat16"
    for rel in ("vllm/utils/torch_utils.py", "vllm/utils/__init__.py", "vllm/utils.py"):
        path = os.path.join(root("vllm", version), rel)
        if not os.path.exists(path):
            continue
        for node in ast.walk(ast.parse(_source("vllm", version, rel))):
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "STR_DTYPE_TO_TORCH_DTYPE":
                table = {ast.literal_eval(k): ast.unparse(v).split(".")[-1] for k, v in zip(node.value.keys,
                                                                                           node.value.values,
                                                                                           strict=True)}
                if dtype in table:
                    return table[dtype]
    raise AssertionError(f"vllm=={version}: no torch dtype for kv-cache-dtype {dtype!r}")


def kv_memory(device, argv, engine):
    """Bytes a replica on `device` (gpus.Device) has for its KV cache: its memory times the
    fraction the argv gives the engine (vLLM --gpu-memory-utilization, default 0.9; SGLang
    --mem-fraction-static, the stand-in's 0.88 when unset) less WEIGHTS_GIB."""
    flag, default = ("--gpu-memory-utilization", 0.9) if engine == "vllm" else ("--mem-fraction-static", 0.88)
    fraction = float(_argv_value(argv, flag) or default)
    return max(0, int(device.memory_mib * (1 << 20) * fraction - WEIGHTS_GIB * GIB))


def token_bytes(torch_dtype):
    """Bytes one token's K and V take over every layer of the stand-in model."""
    return 2 * SHAPE["layers"] * SHAPE["kv_heads"] * SHAPE["head_dim"] * TORCH_BYTES[torch_dtype]


def capacity(engine, version, device, argv, dtype):
    """What the replica's engine computes: {"tokens", "blocks", "block_size", "max_len",
    "concurrency", "torch_dtype", "memory"} (vLLM V1: whole blocks of BLOCK_SIZE tokens,
    get_kv_cache_config's num_blocks = memory // page size // layers; SGLang: tokens =
    memory // cell size, profile_max_num_token)."""
    memory = kv_memory(device, argv, engine)
    if engine == "vllm":
        torch_dtype = vllm_torch_dtype(version, dtype)
        block_size = int(_argv_value(argv, "--block-size") or BLOCK_SIZE)
        blocks = memory // (block_size * token_bytes(torch_dtype))
        tokens = blocks * block_size
        max_len = int(_argv_value(argv, "--max-model-len") or MAX_MODEL_LEN)
    else:
        torch_dtype = SGLANG_TORCH[dtype or "auto"]
        block_size, tokens = 1, memory // token_bytes(torch_dtype)
        blocks = tokens
        max_len = int(_argv_value(argv, "--context-length") or MAX_MODEL_LEN)
    return {"tokens": tokens, "blocks": blocks, "block_size": block_size, "max_len": max_len,
            "concurrency": tokens / max_len, "torch_dtype": torch_dtype, "memory": memory}


@functools.lru_cache(maxsize=None)
def _logger_calls(engine, version, rel, words):
    """(call, enclosing function) of every logger call in the release's file whose message (its
    format, or its f-string's literal parts) holds `words`."""
    tree = _tree(engine, version, rel)
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args and \
                    node.func.attr in ("info", "info_once", "warning", "debug") and \
                    words in "".join(c.value for c in ast.walk(node.args[0])
                                     if isinstance(c, ast.Constant) and isinstance(c.value, str)):
                found.append((node, fn))
    return found


def _assigned(fn, names):
    """`names` plus what the function assigns before its log call, evaluated where it can be on
    `names` (a `num_tokens_str = f"{num_tokens:,}"`); a value given in `names` is kept."""
    env = dict(names)
    for st in ast.walk(fn):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and st.targets[0].id not in names:
            try:
                env[st.targets[0].id] = _eval(st.value, env)
            except Exception:  # noqa: BLE001 - a value this stand-in does not model: left out
                pass
    return env


def _message(call, fn, names):
    """The message the logger call writes: its f-string evaluated, or its %-format over its args."""
    env = _assigned(fn, names)
    env.setdefault("__builtins__", {"str": str, "int": int, "len": len})
    fmt = _eval(call.args[0], env)
    if len(call.args) == 1:
        return fmt
    return fmt % tuple(_eval(a, env) for a in call.args[1:])


def vllm_capacity_lines(version, cap):
    """vLLM's V1 capacity report (vllm/v1/core/kv_cache_utils.py: "GPU KV cache size: %s tokens"
    and "Maximum concurrency for %s tokens per request: %.2fx", two calls to 0.27, one from 0.28,
    "%s KV cache size" naming the device from 0.30), logged by the engine core through the release's format (vllm_log)."""
    rel = "vllm/v1/core/kv_cache_utils.py"
    if not os.path.exists(os.path.join(root("vllm", version), rel)) or \
            not _logger_calls("vllm", version, rel, "KV cache size: "):
        return vllm_v0_capacity_lines(version, cap)      # V1 absent, or not yet the engine that logs
    names = {"num_tokens": cap["tokens"], "max_model_len": cap["max_len"], "max_concurrency": cap["concurrency"],
             "vllm_config": _Obj(model_config=_Obj(max_model_len=cap["max_len"]),
                                 parallel_config=_Obj(decode_context_parallel_size=1),
                                 device_config=_Obj(device_type="cuda")),
             "pools": "GPU",        # 0.32: _kv_cache_device_name on CUDA, no hisparse host pool
             "_kv_cache_device_name": lambda cfg: "GPU"}
    out, seen = "", set()
    for words in ("KV cache size: ", "Maximum concurrency for "):
        calls = [c for c in _logger_calls("vllm", version, rel, words) if c[0].lineno not in seen]
        if not calls:
            if words == "KV cache size: ":
                raise AssertionError(f"vllm=={version}: {rel} logs no {words!r}")
            continue
        call, fn = calls[0]
        seen.add(call.lineno)
        out += vllm_log(version, "INFO", _message(call, fn, names), fileinfo=os.path.basename(rel),
                        lineno=call.lineno)
    return out


def vllm_v0_capacity_lines(version, cap):
    """A release whose engine is V0 (no V1 capacity line: before 0.8.0): its executor's "# GPU
    blocks: %d, # CPU blocks: %d" ("# %s blocks: ..." naming the device in 0.7; an f-string in
    0.4) and, where it has it, "Maximum concurrency for %s tokens per request: %.2fx"; the CPU
    blocks are what the stand-in's 4 GiB swap space holds."""
    rels = _files_logging("vllm", version, "vllm/executor", "# CPU blocks")
    if not rels:
        raise AssertionError(f"vllm=={version}: no executor logs '# CPU blocks'")
    rel = next((r for r in rels if os.path.basename(r) in ("executor_base.py", "gpu_executor.py")), rels[0])
    cpu = (4 << 30) // (cap["block_size"] * token_bytes(cap["torch_dtype"]))
    names = {"num_gpu_blocks": cap["blocks"], "num_cpu_blocks": cpu, "max_concurrency": cap["concurrency"],
             # CudaPlatform's device_name and dispatch_key (vllm/platforms/cuda.py)
             "vllm": _Obj(platforms=_Obj(current_platform=_Obj(device_name="cuda", dispatch_key="CUDA"))),
             "current_platform": _Obj(device_name="cuda", dispatch_key="CUDA"),
             "self": _Obj(cache_config=_Obj(block_size=cap["block_size"]),
                          model_config=_Obj(max_model_len=cap["max_len"]))}
    out = ""
    for words in ("# CPU blocks", "Maximum concurrency for "):     # the second from 0.6.5, beside the first
        calls = _logger_calls("vllm", version, rel, words)
        if calls:
            call, fn = calls[0]
            out += vllm_log(version, "INFO", _message(call, fn, names), fileinfo=os.path.basename(rel),
                            lineno=call.lineno)
    return out


def sglang_capacity_lines(version, cap, dtype):
    """SGLang's capacity reports: the memory pool's "KV Cache is allocated. ... #tokens: N ..."
    (sglang/srt/mem_cache/memory_pool.py, where the release has it: 0.4.3.post3 on) and the
    scheduler's "max_total_num_tokens=..., context_len=..." (sglang/srt/managers/scheduler.py,
    tp_worker.py in older releases), each the release's own f-string, logged by the TP0 scheduler
    through configure_logger's `[%(asctime)s TP0] %(message)s`."""
    kv = cap["tokens"] * token_bytes(cap["torch_dtype"]) / 2
    gb = 1 << 30
    names = {"num_tokens": cap["tokens"], "size": cap["tokens"], "k_size": kv, "v_size": kv, "GB": gb,
             "k_size_GB": kv / gb, "v_size_GB": kv / gb, "cache_name": "KV Cache",
             "self": _Obj(post_capture_active=False, num_tokens=cap["tokens"], size=cap["tokens"], dtype=f"torch.{cap['torch_dtype']}", allocation_label=None,
                          max_total_num_tokens=cap["tokens"], max_prefill_tokens=16384, max_running_requests=4096,
                          model_config=_Obj(context_len=cap["max_len"]), device="cuda",
                          startup_available_gpu_memory_gb=cap["memory"] / gb * 0.1, server_args=_Obj(
                              chunked_prefill_size=8192)),
             "get_schedule": lambda: _Obj(chunked_prefill_size=8192), "avail_mem": cap["memory"] / gb * 0.1,
             "server_args": _Obj(chunked_prefill_size=8192)}
    out = ""
    for words in ("#tokens: ", "max_total_num_tokens="):
        for rel in _files_logging("sglang", version, "sglang/srt", words):
            call, fn = _logger_calls("sglang", version, rel, words)[0]
            out += f"[{STAMP_SGLANG} TP0] {_message(call, fn, names)}\n"
            break
    if "max_total_num_tokens=" not in out:
        raise AssertionError(f"sglang=={version}: no logger call writes max_total_num_tokens=")
    return out


@functools.lru_cache(maxsize=None)
def _files_logging(engine, version, under, words):
    """The release's files under `under` with a logger call whose message holds `words` (the
    line's file moves between releases: the words are what stays), in path order."""
    base = root(engine, version)
    found = []
    for dirpath, dirs, files in os.walk(os.path.join(base, under)):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                if words not in f.read():
                    continue
            rel = os.path.relpath(path, base)
            if _logger_calls(engine, version, rel, words) and "hardware_backend" not in rel:
                found.append(rel)       # (hardware_backend/: other devices' stubs, not a CUDA replica's)
    # the scheduler's and the memory pool's own files first, then the other managers
    return tuple(sorted(found, key=lambda r: (0 if r.endswith(("managers/scheduler.py", "mem_cache/memory_pool.py"))
                                              else 1 if "/managers/" in r else 2, r)))


def capacity_lines(engine, version, device, argv, dtype):
    """The capacity lines a running replica on `device` writes after its start-up line."""
    cap = capacity(engine, version, device, argv, dtype)
    return vllm_capacity_lines(version, cap) if engine == "vllm" else sglang_capacity_lines(version, cap, dtype)


def vllm_too_small(version, cap):
    """The message of the ValueError vLLM `version` raises at start-up when the model's max length
    does not fit in the KV cache (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory /
    _check_enough_kv_cache_memory: "To serve at least one request with the model's max seq len
    (X), (Y GiB KV cache is needed, which is larger than the available KV cache memory (Z GiB).
    ..."), built by the release's own f-string on the replica's numbers."""
    rel = "vllm/v1/core/kv_cache_utils.py"
    tree = _tree("vllm", version, rel)
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args \
                    and "max seq len" in ast.unparse(node.exc.args[0]):
                gib = 1 << 30
                per_token = cap["memory"] / max(cap["tokens"], 1)
                needed = -(-cap["max_len"] // cap["block_size"]) * cap["block_size"] * per_token
                names = {"max_model_len": cap["max_len"], "needed_memory": needed, "available_memory": cap["memory"],
                         "estimated_max_len": cap["tokens"], "GiB_bytes": gib,
                         "format_gib": lambda b: f"{round(b / gib, 2)}",
                         "vllm_config": _Obj(model_config=_Obj(max_model_len=cap["max_len"]))}
                env = _assigned(fn, names)
                return _eval(node.exc.args[0], env)
    raise AssertionError(f"vllm=={version}: {rel} raises no 'max seq len' error")


def vllm_startup_too_small(version, cap):
    """A V1 start-up that stops on vllm_too_small: the engine core's traceback and the API
    server's pointer to it, as vllm_v1_crash writes them."""
    return vllm_v1_crash(version, vllm_too_small(version, cap))
