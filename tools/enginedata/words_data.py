"""Which reports of its KV-cache dtype each release writes, and how, read from the release's own code.

    scripts/engine-data --words [--write]

For every cached conformance release (scripts/engine-wheels), the source is searched for the
logging calls and the metric engine/words.py reads (engine/words.FORMATS names each with the
upstream file and function), and vLLM's engine config line is read as its format: the
logger.info call whose message holds "with config: " (LLMEngine.__init__, EngineCore.__init__),
its %-format or f-string split into literals and fields, a `vllm_config` argument replaced by
VllmConfig.__str__'s own f-string. Each field is `r` (%r, !r: repr-quoted) or `s` (%s, %d, f"{x}":
written as it is, any text). The result is kubectl_kvcache/engine/writes.json:
{"formats": engine -> release -> formats, "config-lines": engine -> release -> template ids,
"templates": id -> [literal, kind, literal, ..., literal]}. Without --write it prints the
difference and exits 1 when the shipped file differs (the conformance tier runs the same
comparison: tests/conformance/test_engine_words.py).
"""

import ast
import hashlib
import os
import re
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


_PERCENT = re.compile(r"%(?:%|[-#0 +]*\d*(?:\.\d+)?([sdrfi]))")


def _joined(node) -> list | None:
    """An f-string as [literal, kind, literal, ...]; None when it is not one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if not isinstance(node, ast.JoinedStr):
        return None
    out: list = [""]
    for part in node.values:
        if isinstance(part, ast.Constant):
            out[-1] += part.value
        elif isinstance(part, ast.FormattedValue):
            out += ["r" if part.conversion == ord("r") else "s", ""]
        else:
            return None
    return out


def _str_of(tree) -> list | None:
    """VllmConfig.__str__'s returned f-string, as a template."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "VllmConfig":
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__str__":
                    for st in ast.walk(fn):
                        if isinstance(st, ast.Return) and isinstance(st.value, ast.BinOp) \
                                and isinstance(st.value.op, ast.Mod) and isinstance(st.value.left, ast.Constant):
                            args = st.value.right.elts if isinstance(st.value.right, ast.Tuple) else [st.value.right]
                            return _percent(st.value.left.value, args, None)      # "..." % (...)
                        if isinstance(st, ast.Return):
                            return _joined(st.value)
    return None


def _percent(fmt: str, args, vllm_str) -> list | None:
    """A logger's %-format with its arguments as a template; `vllm_config` as %s is VllmConfig's own."""
    out: list = [""]
    pos, n = 0, 0
    for m in _PERCENT.finditer(fmt):
        out[-1] += fmt[pos:m.start()]
        pos = m.end()
        if m.group(0) == "%%":
            out[-1] += "%"
            continue
        arg = args[n] if n < len(args) else None
        n += 1
        if m.group(1) == "s" and isinstance(arg, ast.Name) and arg.id == "vllm_config":
            if vllm_str is None:
                return None
            out[-1] += vllm_str[0]
            out += vllm_str[1:]
            continue
        out += ["r" if m.group(1) == "r" else "s", ""]
    out[-1] += fmt[pos:]
    return out


def config_lines(tree_root) -> list[list]:
    """The release's engine config line formats (see the module's docstring), each once."""
    found: list = []
    vllm_str = None
    for rel in ("vllm/config.py", "vllm/config/__init__.py", "vllm/config/vllm.py"):
        path = os.path.join(tree_root, rel)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                vllm_str = _str_of(ast.parse(f.read())) or vllm_str
    for rel in ("vllm/engine/llm_engine.py", "vllm/v1/engine/core.py"):
        path = os.path.join(tree_root, rel)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "info" and node.args):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                if "with config: " not in first.value:
                    continue
                template = _percent(first.value, node.args[1:], vllm_str)
            else:
                template = _joined(first)
                if template is None or not any("with config: " in t for t in template[0::2]):
                    continue
            if template is None or not any(isinstance(t, str) and t.endswith("kv_cache_dtype=")
                                           for t in template[0::2]):
                raise AssertionError(f"{path}: a config line without kv_cache_dtype=: {ast.unparse(first)[:200]}")
            if template not in found:
                found.append(template)
    return found


def template_id(template) -> str:
    return "c" + hashlib.sha256(repr(template).encode()).hexdigest()[:10]


def generate(releases=None) -> dict:
    """writes.json's data for `releases` (default: every release the data holds)."""
    out: dict = {"formats": {}, "config-lines": {}, "templates": {}}
    for engine, versions in (releases or RELEASES).items():
        out["formats"][engine] = {}
        if engine == "vllm":
            out["config-lines"][engine] = {}
        for version in versions:
            root = wheels.ensure(engine, version)
            out["formats"][engine][version] = list(formats_of(engine, root))
            if engine == "vllm":
                ids = []
                for template in config_lines(root):
                    out["templates"][template_id(template)] = template
                    ids.append(template_id(template))
                out["config-lines"][engine][version] = ids
    out["templates"] = dict(sorted(out["templates"].items()))
    return out


def render(data) -> str:
    """writes.json: engine -> release -> the formats it writes, one release per line."""
    from generated import render as render_json
    return render_json(data, "scripts/engine-data (words_data.py)", expand=3)


def main(argv):
    from generated import write_or_compare
    return write_or_compare(argv, "writes", render(generate()), "scripts/engine-data --words")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
