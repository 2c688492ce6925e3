"""vLLM's check after the parse: which attention backends each platform may pick, and which
--kv-cache-dtype values each lists, read statically (ast) from a release's wheel source.

Why static: the selection runs at start-up on the GPU (vllm/platforms/<platform>.py
get_attn_backend_cls -> get_valid_backends -> AttentionBackend.validate_configuration, which adds
"kv_cache_dtype not supported" when supports_kv_cache_dtype is false; the error is "No valid
attention backend found"). No GPU runs here, so the facts are read from the source:

- a backend's list: the class attribute `supported_kv_cache_dtypes` (vllm/v1/attention/backend.py
  AttentionBackend holds the default), followed through the class's bases;
- a backend whose class (or a base below AttentionBackend) defines its own supports_kv_cache_dtype
  decides at run time (e.g. flash_attn: fp8 only with FA3, a GPU fact): recorded as None;
- a platform's candidates: the AttentionBackendEnum members named in its priority function
  (cuda.py `_get_backend_priorities`, rocm.py `_get_backend_priorities`), split MLA / not by name;
  a platform whose module never calls validate_configuration does not check the dtype at
  selection (cpu.py, xpu.py in the releases read): recorded as None (UNKNOWN).

A release whose backend.py has no `supported_kv_cache_dtypes` (before the attribute existed)
is left out: the model says UNKNOWN for it. Writes kubectl_kvcache/engine/backends.json.
Run: scripts/engine-data --backends [--write]
"""

from __future__ import annotations

import ast
import functools
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("KVCACHE_ENGINE_CACHE") or os.path.expanduser("~/.cache/kubectl-kvcache/engines")
PLATFORMS = {"cuda": "cuda.py", "rocm": "rocm.py", "cpu": "cpu.py", "xpu": "xpu.py"}
# Where the base class and the backend enum live: moved in 0.14 (0.13: vllm/attention/backends/).
LAYOUTS = (("vllm/v1/attention/backend.py", "vllm/v1/attention/backends/registry.py"),
           ("vllm/attention/backends/abstract.py", "vllm/attention/backends/registry.py"))


@functools.lru_cache(maxsize=512)
def _tree(root, rel):
    """The parsed module (cached: every backend and dtype walks the same files)."""
    path = os.path.join(root, rel)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), rel)


def _strings(node):
    """The list literal's strings, or None when an element is not a string constant."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    out = []
    for e in node.elts:
        if not (isinstance(e, ast.Constant) and isinstance(e.value, str)):
            return None
        out.append(e.value)
    return out


def _class(tree, name):
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _imported(tree, name):
    """The module path `name` is imported from in `tree`, or None."""
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module:
            for a in n.names:
                if (a.asname or a.name) == name:
                    return n.module, a.name
    return None


def _module_file(module):
    return module.replace(".", "/") + ".py"


class _Undecided(Exception):
    """The check depends on something only the running engine knows (the GPU, a kernel's build)."""


def _find(root, rel, cls_name, depth=0):
    """(rel, ClassDef) of a class named in `rel`, following `from x import Name`."""
    tree = _tree(root, rel)
    if tree is None or depth > 8:
        raise _Undecided
    cls = _class(tree, cls_name)
    if cls is not None:
        return rel, cls
    found = _imported(tree, cls_name)
    if not found:
        raise _Undecided
    return _find(root, _module_file(found[0]), found[1], depth + 1)


def _listed(root, rel, cls_name, base):
    """The class's supported_kv_cache_dtypes, through its bases (the base class holds the default)."""
    rel, cls = _find(root, rel, cls_name)
    for stmt in cls.body:
        target = stmt.target if isinstance(stmt, ast.AnnAssign) else (
            stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id == "supported_kv_cache_dtypes":
            got = _strings(stmt.value)
            if got is None:
                raise _Undecided
            return got
    if (rel, cls_name) == base or not cls.bases or not isinstance(cls.bases[0], ast.Name):
        raise _Undecided
    return _listed(root, rel, cls.bases[0].id, base)


def _method(root, rel, cls_name, base):
    """(rel, class name, FunctionDef) of the supports_kv_cache_dtype that applies."""
    rel, cls = _find(root, rel, cls_name)
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "supports_kv_cache_dtype":
            return rel, cls_name, stmt
    if (rel, cls_name) == base or not cls.bases or not isinstance(cls.bases[0], ast.Name):
        raise _Undecided
    return _method(root, rel, cls.bases[0].id, base)


def _eval(node, dtype, arg, listed, sup):
    """An expression of supports_kv_cache_dtype for one dtype: True/False, or _Undecided."""
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        if isinstance(node.operand, ast.Attribute) and node.operand.attr == "supported_kv_cache_dtypes":
            return not listed()  # AttentionBackend.supports_kv_cache_dtype: an empty list accepts all
        return not _eval(node.operand, dtype, arg, listed, sup)
    if isinstance(node, ast.BoolOp):
        vals = [_eval(v, dtype, arg, listed, sup) for v in node.values]
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.left, ast.Name) \
            and node.left.id == arg:
        op, right = node.ops[0], node.comparators[0]
        if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
            return isinstance(op, ast.IsNot)
        if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
            return (dtype == right.value) == isinstance(op, ast.Eq)
        if isinstance(op, (ast.In, ast.NotIn)):
            if isinstance(right, ast.Attribute) and right.attr == "supported_kv_cache_dtypes":
                values = listed()
            else:
                values = _strings(right)
                if values is None:
                    raise _Undecided
            return (dtype in values) == isinstance(op, ast.In)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        f = node.func
        if f.attr == "startswith" and isinstance(f.value, ast.Name) and f.value.id == arg \
                and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
            return dtype.startswith(node.args[0].value)
        if f.attr == "supports_kv_cache_dtype" and isinstance(f.value, ast.Call) \
                and isinstance(f.value.func, ast.Name) and f.value.func.id == "super":
            return sup()
    raise _Undecided


def _run(body, dtype, arg, listed, sup):
    """supports_kv_cache_dtype's statements for one dtype: `if <test>: return <x>` and `return <x>`."""
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            return _eval(stmt.value, dtype, arg, listed, sup)
        if isinstance(stmt, ast.If):
            if _eval(stmt.test, dtype, arg, listed, sup):
                return _run(stmt.body, dtype, arg, listed, sup)
            if stmt.orelse:
                return _run(stmt.orelse, dtype, arg, listed, sup)
            continue
        raise _Undecided
    raise _Undecided


def supports(root, rel, cls_name, dtype, base, start=None):
    """Does the backend class accept `dtype`: True, False, or None (decided at run time).
    `start`: (rel, class) where the method is looked up (a super() call: the base's method, with
    `cls` still the backend class, so cls.supported_kv_cache_dtypes is the backend's list)."""
    try:
        mrel, mcls, fn = _method(root, *(start or (rel, cls_name)), base)
        arg = fn.args.args[1].arg

        def listed():
            return _listed(root, rel, cls_name, base)

        def sup():
            _, cls = _find(root, mrel, mcls)
            if not cls.bases or not isinstance(cls.bases[0], ast.Name):
                raise _Undecided
            found = supports(root, rel, cls_name, dtype, base, start=(mrel, cls.bases[0].id))
            if found is None:
                raise _Undecided
            return found
        return _run(fn.body, dtype, arg, listed, sup)
    except (_Undecided, IndexError):
        return None


def _registry(root, rel):
    tree = _tree(root, rel)
    out = {}
    # 0.13+: AttentionBackendEnum; 0.11.2 keeps an empty deprecated `_Backend` beside it; read both
    for name in ("_Backend", "AttentionBackendEnum"):
        enum = _class(tree, name) if tree else None
        for stmt in enum.body if enum else ():
            if (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)):
                out[stmt.targets[0].id] = stmt.value.value
    return out


def _enum_refs(node):
    names = []
    for n in ast.walk(node):
        if (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id == "AttentionBackendEnum" and n.attr not in names and n.attr.isupper()):
            names.append(n.attr)
    return names


def platform_candidates(root, filename):
    """Sorted candidate backend names of one platform, or None when it does not check the dtype."""
    tree = _tree(root, "vllm/platforms/" + filename)
    if tree is None:
        return None
    calls = any(isinstance(n, ast.Attribute) and n.attr == "validate_configuration" for n in ast.walk(tree))
    prio = [n for n in tree.body if isinstance(n, ast.FunctionDef) and "priorit" in n.name]
    if not calls or not prio:
        return None
    return sorted({name for f in prio for name in _enum_refs(f)})


def describe(root, accepted):
    """{"backends": {name: {"starts": [...], "refuses": [...]}}, "platforms": {platform: [names]|None}}
    over the release's accepted values (a value in neither list is decided at run time), or None
    when the release has no supported_kv_cache_dtypes (not modelled)."""
    layout = next((pair for pair in LAYOUTS if os.path.exists(os.path.join(root, pair[0]))), None)
    if layout is None:
        return None
    base = (layout[0], "AttentionBackend")
    try:
        _listed(root, *base, base)
    except _Undecided:
        return None
    registry = _registry(root, layout[1])
    platforms = {p: platform_candidates(root, f) for p, f in PLATFORMS.items()}
    backends = {}
    for names in platforms.values():
        for name in names or ():
            path = registry.get(name)
            facts = {"starts": [], "refuses": []}
            if path is not None:
                module, _, cls_name = path.rpartition(".")
                for dtype in accepted:
                    found = supports(root, _module_file(module), cls_name, dtype, base)
                    if found is not None:
                        facts["starts" if found else "refuses"].append(dtype)
            backends[name] = facts
    if not any("auto" in facts["starts"] for facts in backends.values()):
        return None  # the checks could not be read (0.11.x: no list on the base class): not modelled
    return {"backends": dict(sorted(backends.items())), "platforms": platforms}


def releases():
    out = []
    for d in sorted(os.listdir(CACHE)):
        if d.startswith("vllm-"):
            out.append(d[len("vllm-"):])
    return sorted(out, key=lambda v: tuple(int(p) if p.isdigit() else 0 for p in v.split(".")))


def accepted(version):
    """The release's --kv-cache-dtype values (engine/data.py, itself checked against the parsers)."""
    sys.path.insert(0, ROOT)
    from kubectl_kvcache.engine import releases as rel
    return sorted(rel.profile("vllm", rel.parse_version(version)).accepted)


def build():
    data = {}
    for v in releases():
        described = describe(os.path.join(CACHE, "vllm-" + v), accepted(v))
        if described is not None:
            data[v] = described
    return data


def render(data):
    """backends.json: one line per release (the lists repeat from release to release)."""
    from generated import render as render_json
    return render_json(data, "scripts/engine-data (backends_data.py)", expand=1)


def render_gpus(data):
    """gpus.json: per release, per compute capability (tools/enginedata/gpus_data.py)."""
    from generated import render as render_json
    return render_json(data, "scripts/engine-data (backends_data.py, gpus_data.py)", expand=2)


def main(argv):
    import gpus_data
    from generated import write_or_compare
    return (write_or_compare(argv, "backends", render(build()), "scripts/engine-data --backends")
            or write_or_compare(argv, "gpus", render_gpus(gpus_data.build()), "scripts/engine-data --backends"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
