"""What each release says when it dies at start-up, read from the release's own raise sites.

    scripts/engine-data --crashes [--write]

engine/crash.py classes a crashed container's last exception by what the engine's message says
about the KV-cache dtype. The message texts are facts of each release's code, so they are read
here, statically (ast), from every cached conformance release (scripts/engine-wheels) and
written to kubectl_kvcache/engine/crashes.json:

- "messages": every `raise X(<message>)` whose message's literal text is about the KV-cache dtype
  (names kv_cache_dtype / cache_dtype, or a KV cache together with a dtype word: fp8, dtype, ...),
  or formats a value named like the dtype into a KV-cache text; as a template (its literal parts and
  the source of each formatted value), the exception's class and the releases that raise it.
  Examples: vllm/config/cache.py CacheConfig._verify_cache_dtype "Unknown kv cache dtype: {}",
  vllm/attention/backends/flash_attn.py "FlashAttention does not support fp8 kv-cache on this
  device.", sglang's attention backends' "... does not support kv cache dtype ...".
- "wrappers": raise sites that only point at another process's error ("Engine core initialization
  failed. See root cause above. ...", vllm/v1/engine/utils.py wait_for_engine_startup): the
  exception that killed the engine is the one before them.
- "selector": vLLM's attention selector (vllm/platforms/cuda.py get_attn_backend_cls, from 0.11.1):
  which of its two errors the release raises ("No valid attention backend found for {device} with
  {config}. Reasons: {reasons}." and "Selected backend {b} is not valid for this configuration.
  Reason: {list}") and every reason a backend can give: the fixed ones of
  AttentionBackend.validate_configuration (the one appended under `not
  cls.supports_kv_cache_dtype(...)` is the dtype's: "kv_cache_dtype not supported") and the texts
  the backends' supports_combination return, each marked whether it is about the KV-cache dtype.

Releases are kept as spans of consecutive releases (tools/enginedata/releases.py order). Without
--write it prints the difference and exits 1 when the shipped file differs (the conformance tier
runs the same comparison).
"""

from __future__ import annotations

import ast
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import wheels  # noqa: E402
from releases import RELEASES  # noqa: E402

# the message is about the KV-cache dtype: it names the option or field, or a KV cache with a dtype word
_NAMES = re.compile(r"(?i)\bkv_cache_dtype\b|\bcache_dtype\b|kv[ _-]?cache[ _-]dtype")
_KV = re.compile(r"(?i)\bkv[ _-]?cache\b|\bkvcache\b|\bkv\b")
_DTYPE_WORD = re.compile(r"(?i)\bdtype\b|\bdata ?type\b|\bfp8\w*|\bfp4\b|\bnvfp4\b|\bint8\b|\bint4\b|e4m3|e5m2|"
                         r"\bfloat16\b|\bbfloat16\b|\bbf16\b|\bfp16\b|\bquantiz")
_DTYPE_VALUE = re.compile(r"(?i)\b(kv_cache_dtype|cache_dtype|kv_dtype)\b")
# a message that points at another process's error ("See root cause above.", "See stack trace (above)
# for the root cause.", "please check the stack trace above for the root cause")
_WRAPPER = re.compile(r"(?i)\bsee (?:the )?(?:root cause|stack ?trace|logs?|error)(?: \(above\))?"
                      r"(?: above| for (?:the )?root cause)|check the stack trace above|"
                      r"initialization failed due to an exception in a background process")
_SKIP_DIRS = ("tests", "test", "benchmarks", "examples")


def _files(tree, package):
    top = os.path.join(tree, package)
    for base, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(base, name)


def _parse(path, wanted=None):
    """The module's tree; None when it is missing, not Python, or (`wanted`, a pattern) holds no
    text the caller reads (most of a wheel: parsing every file of 195 releases is an hour)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        return None if wanted is not None and not wanted.search(text) else ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return None


# a raise (or an exception built) whose next few hundred characters hold a word a kept message must hold
_RAISE_NEAR = re.compile(r"(?is)(raise\b|(?:Error|Exception)\().{0,600}?(kv|cache_dtype|root cause|background process)")


def template(node):
    """The message expression as parts: str for literal text, {"slot": source} for a formatted
    value; None when it is not a string built from literals and values (a variable, a call)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        out: list = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(v.value)
            elif isinstance(v, ast.FormattedValue):
                out.append({"slot": ast.unparse(v.value)})
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template(node.left), template(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
            and isinstance(node.left.value, str):
        values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        pieces = re.split(r"%[-#0 +]*\d*(?:\.\d+)?[sdrifx]", node.left.value)
        if len(pieces) != len(values) + 1:
            return None
        out = [pieces[0]]
        for value, piece in zip(values, pieces[1:], strict=True):
            out += [{"slot": ast.unparse(value)}, piece]
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
        pieces = re.split(r"\{[^{}]*\}", node.func.value.value)
        if len(pieces) != len(node.args) + 1 or node.keywords:
            return None
        out = [pieces[0]]
        for value, piece in zip(node.args, pieces[1:], strict=True):
            out += [{"slot": ast.unparse(value)}, piece]
        return out
    return [{"slot": ast.unparse(node)}]     # any other value: formatted, its text unknown here


def _merge(parts):
    """Adjacent literals joined, empty ones dropped (the same text, one spelling)."""
    out: list = []
    for p in parts:
        if isinstance(p, str):
            if not p:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += p
                continue
        out.append(p)
    return out


def literal(parts) -> str:
    return "".join(p for p in parts if isinstance(p, str))


def about_dtype(parts) -> bool:
    """The message is about the KV-cache dtype, by its own literal words and the values it formats."""
    text = literal(parts)
    if _NAMES.search(text):
        return True
    if _KV.search(text) and (_DTYPE_WORD.search(text)
                             or any(isinstance(p, dict) and _DTYPE_VALUE.search(p["slot"]) for p in parts)):
        return True
    return False


def _exception_name(call):
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def raises(tree, package):
    """(class, parts) of every raise site with a readable message."""
    for path in _files(tree, package):
        mod = _parse(path, _RAISE_NEAR)
        if mod is None:
            continue
        for node in ast.walk(mod):
            # `raise X(msg)`, and `e = X(msg)` raised later (vllm/v1/executor/multiproc_executor.py
            # wait_for_ready's "WorkerProc initialization failed ...")
            call = node.exc if isinstance(node, ast.Raise) else node.value if isinstance(node, ast.Assign) else None
            if not isinstance(call, ast.Call) or not call.args:
                continue
            name = _exception_name(call)
            if not name or (isinstance(node, ast.Assign) and not name.endswith(("Error", "Exception"))):
                continue
            parts = template(call.args[0])
            if parts is not None:
                parts = _merge(parts)
                if literal(parts).strip():
                    yield name, parts


def _validate_reasons(tree):
    """(the dtype's reason, every fixed reason) of AttentionBackend.validate_configuration."""
    for rel in ("vllm/v1/attention/backend.py", "vllm/attention/backends/abstract.py"):
        mod = _parse(os.path.join(tree, rel))
        if mod is None:
            continue
        for fn in ast.walk(mod):
            if isinstance(fn, ast.FunctionDef) and fn.name == "validate_configuration":
                dtype_reason, fixed = None, []
                for node in ast.walk(fn):
                    if isinstance(node, ast.If):
                        test = ast.unparse(node.test)
                        for st in node.body:
                            call = st.value if isinstance(st, ast.Expr) else None
                            if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "append" \
                                    and call.args and "supports_kv_cache_dtype" in test:
                                got = template(call.args[0])
                                if got and len(got) == 1:
                                    dtype_reason = got[0]
                    if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "append" and node.args \
                            and ast.unparse(node.func.value) == "invalid_reasons":
                        got = template(node.args[0])
                        if got and literal(got).strip():    # not the backend's own combination_reason
                            fixed.append(_merge(got))
                return dtype_reason, fixed
    return None, []


_COMBINATION = re.compile(r"def supports_combination")


def _combination_reasons(tree):
    """Every text a backend's supports_combination returns (None returns dropped)."""
    out = []
    for path in _files(tree, "vllm"):
        if "/attention/" not in path.replace(os.sep, "/"):
            continue
        mod = _parse(path, _COMBINATION)
        if mod is None:
            continue
        for fn in ast.walk(mod):
            if isinstance(fn, ast.FunctionDef) and fn.name == "supports_combination":
                for node in ast.walk(fn):
                    if isinstance(node, ast.Return) and node.value is not None:
                        got = template(node.value)
                        if got and literal(got).strip():
                            out.append(_merge(got))
    return out


def selector(tree):
    """The release's attention-selector facts, or None before get_attn_backend_cls raised them."""
    path = os.path.join(tree, "vllm/platforms/cuda.py")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        text = f.read()
    formats = [name for name, needle in (("no-valid", "No valid attention backend found for "),
                                         ("selected", "is not valid for \"\n")) if needle in text]
    if "Selected backend {selected_backend} is not valid for " in text:
        formats.append("selected")
    formats = sorted(set(f for f in formats if f != "selected" or "Reason: {invalid_reasons}" in text))
    if "no-valid" not in formats:
        return None
    dtype_reason, fixed = _validate_reasons(tree)
    if dtype_reason is None:
        return None
    reasons = [(parts, literal(parts) == dtype_reason) for parts in fixed]
    # get_valid_backends' own reason for a backend that does not import ("ImportError", later
    # f"{type(e).__name__}: {e}"): never the dtype's
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "invalid_reasons_i" \
                and isinstance(node.value, ast.List):
            reasons += [(_merge(got), False) for got in map(template, node.value.elts) if got]
    reasons += [(parts, about_dtype(parts)) for parts in _combination_reasons(tree)]
    return {"formats": formats, "reasons": reasons}


def read_release(engine, tree):
    """What one release says: ({key: entry} of messages, wrappers, selector facts)."""
    messages, wrappers = {}, {}
    for name, parts in raises(tree, engine):
        key = repr((name, parts))
        if _WRAPPER.search(literal(parts)):
            wrappers[key] = {"exception": name, "template": parts}
        elif about_dtype(parts):
            messages[key] = {"exception": name, "template": parts}
    return messages, wrappers, selector(tree) if engine == "vllm" else None


def _spans(present, order):
    """[[first, last], ...] of consecutive releases of `order` in `present`."""
    spans, run = [], None
    for v in order:
        if v in present:
            run = [run[0], v] if run else [v, v]
        elif run:
            spans.append(run)
            run = None
    if run:
        spans.append(run)
    return spans


def generate(releases=None) -> dict:
    releases = releases or RELEASES
    out: dict = {}
    for engine, versions in releases.items():
        table: dict = {"messages": {}, "wrappers": {}, "selector": {}, "reasons": {}}
        seen: dict = {k: {} for k in table}
        for version in versions:
            messages, wrappers, sel = read_release(engine, wheels.ensure(engine, version))
            for kind, found in (("messages", messages), ("wrappers", wrappers)):
                for key, entry in found.items():
                    table[kind].setdefault(key, entry)
                    seen[kind].setdefault(key, set()).add(version)
            if sel:
                for fmt in sel["formats"]:
                    table["selector"].setdefault(fmt, {"format": fmt})
                    seen["selector"].setdefault(fmt, set()).add(version)
                for parts, dtype in sel["reasons"]:
                    key = repr((parts, dtype))
                    table["reasons"].setdefault(key, {"template": parts, "dtype": dtype})
                    seen["reasons"].setdefault(key, set()).add(version)
        out[engine] = {kind: sorted(({**entry, "releases": _spans(seen[kind][key], versions)}
                                     for key, entry in entries.items()),
                                    key=lambda e: (repr(e.get("template", e.get("format"))), e.get("exception", "")))
                       for kind, entries in table.items() if entries}
    return out


def render(data) -> str:
    """crashes.json: engine -> kind -> entries, one entry a line (a new release is a reviewable diff)."""
    import json
    from generated import render as render_json
    marks = {}
    for engine, kinds in data.items():
        for kind, entries in kinds.items():
            mark = f"@@{engine}.{kind}@@"
            marks[json.dumps(mark)] = entries
            kinds[kind] = mark
    text = render_json(data, "scripts/engine-data (crash_data.py)", expand=2)
    for mark, entries in marks.items():
        body = ",\n".join("        " + json.dumps(e, ensure_ascii=False) for e in entries)
        text = text.replace(mark, "[\n" + body + "\n      ]")
    return text


def main(argv):
    from generated import write_or_compare
    return write_or_compare(argv, "crashes", render(generate()), "scripts/engine-data --crashes")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
