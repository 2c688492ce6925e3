"""Which reports of its KV-cache capacity each release writes, and their exact formats, read from
the release's own code.

    scripts/engine-data --capacity [--write]

For every cached conformance release (scripts/engine-wheels), every logging call at INFO or above
(logger.info/info_once/warning/warning_once, SGLang's log_info_on_rank0) whose message holds one of
ANCHORS' texts is read as its format: its %-format (with its arguments) or f-string split into
literals and typed fields. The file the call is in moves between releases (vLLM's
vllm/executor/gpu_executor.py, vllm/v1/core/kv_cache_utils.py; SGLang's tp_worker.py,
scheduler.py, mem_cache/memory_pool.py), so the text is matched, never the path. Each field is
named by the literal before it (FIELD_AFTER: "KV cache size: " -> tokens) and typed by how the
code writes it: `d` (%d, an int), `,` (f"{x:,}": digits grouped by commas), `f2` (%.2f, f"{x:.2f}"),
`s` (%s of anything else, f"{x}"). /metrics: vLLM's `vllm:cache_config_info` is
CacheConfig.metrics_info() (every field of CacheConfig as a label), so the labels it holds are
CacheConfig's fields; `kv_cache_size_tokens` among them from the release whose CacheConfig declares it.

The result is kubectl_kvcache/engine/capacity.json: {"formats": engine -> release -> [format ids],
"labels": release -> [capacity labels of vllm:cache_config_info], "templates": id ->
{"kind": ..., "template": [literal, field, literal, ...]}} with each field {"name", "type", "arg"}.
Without --write it prints the difference and exits 1 when the shipped file differs (the
conformance tier runs the same comparison: tests/conformance/test_engine_capacity.py).
"""

import ast
import hashlib
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import wheels  # noqa: E402
from releases import RELEASES  # noqa: E402

# engine -> format kind -> texts, any of which in a logging call's message makes it that kind's
ANCHORS = {
    "vllm": {
        # V1: vllm/v1/core/kv_cache_utils.py (_get_kv_cache_config_uniform_type, later
        # get_kv_cache_configs / update_kv_cache_capacity): "GPU KV cache size: %s tokens", from
        # 0.34 "%s KV cache size: %s tokens, Maximum concurrency for ..." in one line
        "kv-cache-size": ("KV cache size: ",),
        # V0 vllm/executor/executor_base.py and V1 kv_cache_utils.py
        "max-concurrency": ("Maximum concurrency for ",),
        # V0: vllm/engine/llm_engine.py (0.3), vllm/executor/gpu_executor.py and
        # distributed_gpu_executor.py, later executor_base.py; V1 0.7's kv_cache_utils.py
        "gpu-blocks": ("# GPU blocks: ",),
        # vllm/config.py (later vllm/config/model.py) ModelConfig: the max length it settled on
        "max-model-len": ("Using max model len ",),
    },
    "sglang": {
        # sglang/srt/managers/tp_worker.py (0.2), scheduler.py later: the scheduler's start-up line
        "scheduler": ("max_total_num_tokens=",),
        # sglang/srt/mem_cache/memory_pool.py: the pool's allocation
        "kv-allocated": ("KV Cache is allocated. ",),
    },
}
LOGGING = {"info", "info_once", "warning", "warning_once"}   # printed at the engines' default level
RANK0 = {"log_info_on_rank0"}                                # SGLang: log_info_on_rank0(logger, msg)

# the literal a field follows -> the field's meaning (fields after anything else are kept, unnamed)
FIELD_AFTER = (
    ("KV cache size: ", "tokens"),
    ("Maximum concurrency for ", "max_len"),
    (" tokens per request: ", "concurrency"),
    ("# GPU blocks: ", "blocks"),
    ("# CPU blocks: ", "cpu_blocks"),
    ("# cpu blocks: ", "cpu_blocks"),
    ("Using max model len ", "max_len"),
    ("full_max_total_num_tokens=", "full_tokens"),     # a hybrid pool's parts: not the capacity
    ("swa_max_total_num_tokens=", "swa_tokens"),
    ("max_total_num_tokens=", "tokens"),
    ("context_len=", "max_len"),
    ("#tokens: ", "tokens"),
)
# vllm:cache_config_info's labels that say the capacity (CacheConfig fields)
LABELS = ("num_gpu_blocks", "block_size", "kv_cache_size_tokens", "kv_cache_max_concurrency")

_PERCENT = re.compile(r"%(?:%|[-#0 +]*\d*(?:\.(\d+))?([sdrfi]))")


def _message(node):
    """A message expression as [literal, field-node-info, ...]: a str constant, an f-string, or
    constants joined with +. Fields are (conversion, spec, expression)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        out: list = [""]
        for part in node.values:
            if isinstance(part, ast.Constant):
                out[-1] += part.value
            elif isinstance(part, ast.FormattedValue):
                spec = ""
                if part.format_spec is not None:
                    spec = "".join(v.value for v in part.format_spec.values if isinstance(v, ast.Constant))
                out += [("fstr", spec, part.value), ""]
            else:
                return None
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _message(node.left), _message(node.right)
        if left is None or right is None:
            return None
        return left[:-1] + [left[-1] + right[0]] + right[1:]
    return None


def _assigned(func, name):
    """The expression `name` is last assigned in `func` (a Name argument's own format), or None."""
    found = None
    for st in ast.walk(func):
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in st.targets):
            found = st.value
    return found


def _type(conversion, spec, expr, func) -> str:
    """How the code writes a field: d, ',', f<n>, or s."""
    if conversion == "fstr":
        if spec == ",":
            return ","
        m = re.fullmatch(r"\.(\d+)f", spec)
        return f"f{m.group(1)}" if m else "s"
    if conversion in "di":
        return "d"
    if conversion == "f":
        return f"f{spec or 6}"
    if conversion == "s" and isinstance(expr, ast.JoinedStr):
        inner = _message(expr)
        if inner is not None and len(inner) == 3 and inner[0] == inner[2] == "":
            return _type("fstr", inner[1][1], inner[1][2], func)
    if conversion == "s" and isinstance(expr, ast.Name) and func is not None:
        value = _assigned(func, expr.id)
        if isinstance(value, ast.JoinedStr):
            return _type("s", "", value, None)
    return "r" if conversion == "r" else "s"


def _template(parts, func) -> list:
    """[literal, field, literal, ...] with each field {"name", "type", "arg"}."""
    out: list = [parts[0]]
    for i in range(1, len(parts), 2):
        conversion, spec, expr = parts[i]
        before = out[-1]
        name = next((n for lit, n in FIELD_AFTER if before.endswith(lit)), "")
        out += [{"name": name, "type": _type(conversion, spec, expr, func),
                 "arg": ast.unparse(expr) if expr is not None else ""}, parts[i + 1]]
    return out


def _percent(fmt: str, args) -> list:
    """A %-format and its arguments as the parts _message gives."""
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
        out += [(m.group(2), m.group(1) or "", arg), ""]
    out[-1] += fmt[pos:]
    return out


def _calls(tree):
    """(call, enclosing function) for every call in the module."""
    def walk(node, func):
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Call):
                yield child, func
            yield from walk(child, inner)
    yield from walk(tree, None)


def templates_in(engine, source: str) -> list:
    """(kind, template) of every capacity logging call in one file's source."""
    return [(kind, template) for kind, template, _, _ in calls_in(engine, source)]


def calls_in(engine, source: str) -> list:
    """(kind, template, call, enclosing function) of every capacity logging call in one file's
    source (the conformance tier runs the call's own message formatting on values it chooses)."""
    anchors = ANCHORS[engine]
    if not any(a in source for texts in anchors.values() for a in texts):
        return []
    found = []
    for call, func in _calls(ast.parse(source)):
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        if name in LOGGING and call.args:
            msg, rest = call.args[0], call.args[1:]
        elif name in RANK0 and len(call.args) >= 2:
            msg, rest = call.args[1], call.args[2:]
        else:
            continue
        if isinstance(msg, ast.Constant) and isinstance(msg.value, str) or (
                isinstance(msg, ast.BinOp) and _message(msg) is not None and len(_message(msg)) == 1):
            parts = _percent(_message(msg)[0], rest) if rest else [_message(msg)[0]]
        else:
            parts = _message(msg)
        if parts is None:
            continue
        text = "".join(p for p in parts[0::2])
        kinds = [k for k, texts in anchors.items() if any(a in text for a in texts)]
        if not kinds:
            continue
        template = _template(parts, func)
        if not any(isinstance(f, dict) and f["name"] in ("tokens", "blocks", "max_len") for f in template[1::2]):
            continue        # mentions the text, reports no figure (a debug dump, an error)
        found.append((kinds[0], template, call, func))
    return found


def _cache_labels(root) -> list:
    """The capacity labels of vllm:cache_config_info: CacheConfig's fields (metrics_info() is its
    __dict__) among LABELS, where the release has metrics_info at all."""
    for rel in ("vllm/config/cache.py", "vllm/config.py", "vllm/config/__init__.py"):
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == "CacheConfig":
                if not any(isinstance(fn, ast.FunctionDef) and fn.name == "metrics_info" for fn in node.body):
                    return []
                names = set()
                for st in ast.walk(node):
                    if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                        names.add(st.target.id)
                    elif isinstance(st, ast.Attribute) and isinstance(st.value, ast.Name) and st.value.id == "self":
                        names.add(st.attr)
                return [label for label in LABELS if label in names]
    return []


def _sources(tree):
    for base, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in ("tests", "test", "benchmarks"))
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(base, name), encoding="utf-8", errors="replace") as f:
                    yield f.read()


def template_id(kind, template) -> str:
    return kind + "-" + hashlib.sha256(repr(template).encode()).hexdigest()[:8]


def release_formats(engine, root) -> list:
    """(id, kind, template) of the release's capacity logging calls, each once, in id order."""
    seen: dict = {}
    pkg = os.path.join(root, engine)
    for source in _sources(pkg):
        try:
            for kind, template in templates_in(engine, source):
                seen[template_id(kind, template)] = (kind, template)
        except SyntaxError:
            continue
    return [(i, *seen[i]) for i in sorted(seen)]


def generate(releases=None) -> dict:
    """capacity.json's data for `releases` (default: every release the data holds)."""
    out: dict = {"formats": {}, "labels": {}, "templates": {}}
    for engine, versions in (releases or RELEASES).items():
        out["formats"][engine] = {}
        for version in versions:
            root = wheels.ensure(engine, version)
            ids = []
            for tid, kind, template in release_formats(engine, root):
                out["templates"][tid] = {"kind": kind, "template": template}
                ids.append(tid)
            out["formats"][engine][version] = ids
            if engine == "vllm":
                out["labels"][version] = _cache_labels(root)
    out["templates"] = dict(sorted(out["templates"].items()))
    return out


def render(data) -> str:
    from generated import render as render_json
    return render_json(data, "scripts/engine-data --capacity (capacity_data.py)", expand=3)


def main(argv):
    from generated import write_or_compare
    return write_or_compare(argv, "capacity", render(generate()), "scripts/engine-data --capacity")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
