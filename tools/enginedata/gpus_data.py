"""Which attention backend vLLM's CUDA platform picks on each GPU, and whether it starts with a
--kv-cache-dtype there: read statically (ast) from each release's wheel, per compute capability.

The selection (vllm/platforms/cuda.py) runs on the GPU at start-up; here the functions it runs are
interpreted with the GPU's compute capability known and what the Pod spec does not say (the
model's head size, sinks, multimodal prefix, which FlashAttention version is built) unknown: a
condition on an unknown value follows both branches, and an answer is definite only where every
branch agrees. What is read, per release:

- the candidates in order: cuda.py `_get_backend_priorities(use_mla, device_capability, ...)`
  (0.11.1+), or before the lists (0.11.0) `get_attn_backend_cls` itself, whose V1 branch returns
  the backend's class path (e.g. fp8 on SM 8.x but not 9.0 -> TRITON_ATTN);
- each candidate's `supports_compute_capability(capability)` (e.g. `capability >=
  DeviceCapability(8, 0)`) and `supports_kv_cache_dtype(kv_cache_dtype)` with the capability known
  (FLASH_ATTN: fp8 only when fa_utils says FA3 and `is_device_capability_family(90)`): the first
  candidate both accept is the one picked (validate_configuration's other reasons are the
  model's: not read);
- the Triton backend's fp8 limit (vllm/v1/attention/backends/triton_attn.py): 0.24.0+ raises
  "FP8 KV cache is not supported by the Triton attention backend ... requires SM89+" in
  TritonAttentionImpl.__init__ when `kv_cache_dtype.startswith("fp8")` and not
  `has_device_capability(89)`; before, every fp8 spelling's cache is viewed as
  `current_platform.fp8_dtype()` (torch.float8_e4m3fn on CUDA, platforms/interface.py), which
  Triton lowers to fp8e4nv and refuses to compile below SM 8.9 ("type fp8e4nv not supported in
  this architecture", vLLM issue 26431, PR 43914).

Written to kubectl_kvcache/engine/gpus.json: {release: {capability: {"standard"|"mla": {dtype:
[outcome, backend]}}}} for the dtypes whose answer differs between GPUs (the others are not the
GPU's to decide), outcome "starts", "refused" (no candidate: "No valid attention backend
found"), "fails" (the backend picked dies at start-up on this GPU) or null (not decided: the
model or the build decides). Releases whose arg_utils falls back to V0 on the dtype
(is_kv_cache_dtype_supported, 0.10.x and older) are left out: not modelled.
"""

from __future__ import annotations

import ast
import itertools
import json
import os

import backends_data as bd

# The NVIDIA compute capabilities vLLM's selection is read for (CUDA GPUs table): V100 7.0,
# Xavier 7.2, T4 7.5, A100 8.0, RTX 30xx/A10 8.6, Orin 8.7, L4/RTX 40xx 8.9, H100 9.0,
# B200 10.0, B300 10.3, Thor 11.0, RTX 50xx 12.0, GB10 12.1.
CAPABILITIES = ("7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.3", "11.0", "12.0", "12.1")
UNK = "<unknown>"           # a value only the running engine knows
RAISES = "<raises>"
FALLS = "<falls through>"
MAX_PATHS = 512


class Cap(tuple):
    """DeviceCapability(major, minor)."""


class Enum(str):
    """AttentionBackendEnum.X / _Backend.X: the member's name."""


class _Opaque(Exception):
    pass


class Ctx:
    def __init__(self, root, rel, cc, depth=0):
        self.root, self.rel, self.cc, self.depth = root, rel, cc, depth


def _both():
    return [True, False]


def _uniq(values):
    out = []
    for v in values:
        if not any(type(v) is type(o) and v == o for o in out):
            out.append(v)
    return out


def _truth(v):
    if v is UNK:
        return _both()
    if isinstance(v, (bool, int, str, tuple, list)) or v is None:
        return [bool(v)]
    return _both()


def _function(ctx, name):
    """(rel, FunctionDef) of a module-level function named in ctx.rel (through `from x import`)."""
    rel = ctx.rel
    for _ in range(6):
        tree = bd._tree(ctx.root, rel)
        if tree is None:
            return None
        fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
        if fn is not None:
            return rel, fn
        found = bd._imported(tree, name)
        if not found:
            return None
        rel, name = bd._module_file(found[0]), found[1]
    return None


def _platform_call(ctx, attr, args):
    cc = ctx.cc
    if attr in ("is_cuda", "is_cuda_alike"):
        return [True]
    if attr in ("is_rocm", "is_xpu", "is_cpu", "is_tpu", "is_out_of_tree"):
        return [False]
    if attr == "get_device_capability":
        return [cc]
    if attr in ("has_device_capability", "is_device_capability", "is_device_capability_family") and len(args) == 1:
        want = args[0]
        if isinstance(want, tuple):
            want_int = want[0] * 10 + want[1]
        elif isinstance(want, int) and not isinstance(want, bool):
            want_int = want
        else:
            return [UNK]
        have = cc[0] * 10 + cc[1]
        if attr == "has_device_capability":
            return [have >= want_int]
        if attr == "is_device_capability":
            return [have == want_int]
        return [have // 10 == want_int // 10]
    return [UNK]


def ev(node, env, ctx):
    """The possible values of an expression (UNK: opaque; a bool on UNK: both)."""
    if isinstance(node, ast.Constant):
        return [node.value]
    if isinstance(node, ast.Name):
        return env.get(node.id, [UNK])
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id in ("AttentionBackendEnum", "_Backend"):
            return [Enum(node.attr)]
        out = []
        for base in ev(node.value, env, ctx):
            if isinstance(base, Cap) and node.attr in ("major", "minor"):
                out.append(base[0] if node.attr == "major" else base[1])
            else:
                out.append(UNK)
        return _uniq(out)
    if isinstance(node, (ast.List, ast.Tuple)):
        parts = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                parts.append([tuple(v) if isinstance(v, (list, tuple)) else (UNK,) for v in ev(e.value, env, ctx)])
            else:
                parts.append([(v,) for v in ev(e, env, ctx)])
        combos = list(itertools.islice(itertools.product(*parts), MAX_PATHS + 1))
        if len(combos) > MAX_PATHS:
            return [UNK]
        return _uniq([tuple(x for part in c for x in part) for c in combos])
    if isinstance(node, ast.IfExp):
        out = []
        for t in _uniq([b for v in ev(node.test, env, ctx) for b in _truth(v)]):
            out += ev(node.body if t else node.orelse, env, ctx)
        return _uniq(out)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _uniq([not b for v in ev(node.operand, env, ctx) for b in _truth(v)])
    if isinstance(node, ast.BoolOp):
        return _boolop(node, env, ctx)
    if isinstance(node, ast.Compare):
        return _compare(node, env, ctx)
    if isinstance(node, ast.NamedExpr):
        return [UNK]
    if isinstance(node, ast.Call):
        return _call(node, env, ctx)
    return [UNK]


def _boolop(node, env, ctx):
    is_and = isinstance(node.op, ast.And)
    results = []
    pending = [()]
    for value in node.values:
        nxt = []
        got = ev(value, env, ctx)
        for _ in pending:
            for v in got:
                for t in _truth(v):
                    if t != is_and:         # and: a false one ends it; or: a true one
                        results.append(v if v is not UNK else t)
                    else:
                        nxt.append(())
        pending = nxt[:1] if nxt else []
        if not pending:
            break
    if pending:
        last = ev(node.values[-1], env, ctx)
        results += [v if v is not UNK else b for v in last for b in _truth(v)]
    return _uniq(results)


def _compare(node, env, ctx):
    left_values = ev(node.left, env, ctx)
    out = []
    for left in left_values:
        ok = [True]
        cur = [left]
        for op, comp in zip(node.ops, node.comparators):
            rights = ev(comp, env, ctx)
            nxt_ok = []
            nxt_cur = []
            for a in cur:
                for b in rights:
                    r = _cmp(op, a, b)
                    for t in ([True, False] if r is UNK else [r]):
                        nxt_ok.append(t)
                        nxt_cur.append(b)
            ok = [all(p) for p in itertools.product(ok, nxt_ok)]
            cur = _uniq(nxt_cur)
        out += ok
    return _uniq(out)


def _cmp(op, a, b):
    if isinstance(op, ast.Is):
        return UNK if UNK in (a, b) else a is b if (a is None or b is None) else a == b
    if isinstance(op, ast.IsNot):
        return UNK if UNK in (a, b) else (a is not b) if (a is None or b is None) else a != b
    if a is UNK or b is UNK:
        return UNK
    try:
        if isinstance(op, ast.Eq):
            return a == b
        if isinstance(op, ast.NotEq):
            return a != b
        if isinstance(op, ast.In):
            return UNK if UNK in b else a in b
        if isinstance(op, ast.NotIn):
            return UNK if UNK in b else a not in b
        if isinstance(op, ast.GtE):
            return a >= b
        if isinstance(op, ast.Gt):
            return a > b
        if isinstance(op, ast.LtE):
            return a <= b
        if isinstance(op, ast.Lt):
            return a < b
    except TypeError:
        return UNK
    return UNK


def _call(node, env, ctx):
    f = node.func
    try:
        args = [_one(ev(a, env, ctx)) for a in node.args]
    except _Opaque:
        args = None
    if isinstance(f, ast.Name) and f.id == "DeviceCapability" and args and len(args) == 2:
        return [Cap(args)]
    if isinstance(f, ast.Attribute):
        if isinstance(f.value, ast.Name) and f.value.id in ("current_platform", "cls"):
            return _platform_call(ctx, f.attr, args or []) if args is not None else [UNK]
        if f.attr in ("startswith", "endswith") and args and len(args) == 1:
            out = []
            for s in ev(f.value, env, ctx):
                out.append(getattr(s, f.attr)(args[0]) if isinstance(s, str) and isinstance(args[0], (str, tuple))
                           else UNK)
            return _uniq(out)
        return [UNK]
    if isinstance(f, ast.Name) and ctx.depth < 6:
        found = _function(ctx, f.id)
        if found is None or args is None:
            return [UNK]
        rel, fn = found
        bound = _bind(fn, args, node.keywords, env, ctx)
        if bound is None:
            return [UNK]
        return _uniq([v if v not in (RAISES, FALLS) else UNK for v in run(fn.body, bound, Ctx(ctx.root, rel, ctx.cc,
                                                                                             ctx.depth + 1))])
    return [UNK]


def _one(values):
    if len(values) != 1 or values[0] is UNK:
        raise _Opaque
    return values[0]


def _bind(fn, args, keywords, env, ctx):
    params = fn.args.args + fn.args.kwonlyargs
    defaults = dict(zip([a.arg for a in fn.args.args[len(fn.args.args) - len(fn.args.defaults):]], fn.args.defaults))
    defaults |= {a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None}
    bound = {}
    for p, v in zip(fn.args.args, args):
        bound[p.arg] = [v]
    for k in keywords:
        if k.arg is None:
            return None
        bound[k.arg] = ev(k.value, env, ctx)
    for p in params:
        if p.arg not in bound:
            d = defaults.get(p.arg)
            bound[p.arg] = ev(d, {}, ctx) if d is not None else [UNK]
    return bound


def run(body, env, ctx, budget=None):
    """The possible outcomes of a function body: returned values, RAISES, FALLS, UNK."""
    budget = budget if budget is not None else [MAX_PATHS]
    for i, stmt in enumerate(body):
        if budget[0] <= 0:
            return [UNK]
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Assert, ast.Pass)) or (
                isinstance(stmt, ast.Expr) and not isinstance(stmt.value, ast.NamedExpr)):
            continue
        if isinstance(stmt, ast.Return):
            return ev(stmt.value, env, ctx) if stmt.value is not None else [None]
        if isinstance(stmt, ast.Raise):
            return [RAISES]
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
            if not isinstance(target, ast.Name) or stmt.value is None:
                env = dict(env)
                continue
            values = ev(stmt.value, env, ctx)
            rest = body[i + 1:]
            out = []
            for v in values:
                budget[0] -= 1
                out += run(rest, env | {target.id: [v]}, ctx, budget)
            return _uniq(out)
        if isinstance(stmt, ast.If):
            rest = body[i + 1:]
            out = []
            for t in _uniq([b for v in ev(stmt.test, env, ctx) for b in _truth(v)]):
                budget[0] -= 1
                branch = stmt.body if t else stmt.orelse
                got = run(branch, env, ctx, budget)
                for g in got:
                    out += run(rest, env, ctx, budget) if g is FALLS else [g]
            return _uniq(out)
        return [UNK]        # a loop, a with, a try: not interpreted
    return [FALLS]


# -- the selection per release ------------------------------------------------------------------

def _cuda(root):
    return "vllm/platforms/cuda.py", bd._tree(root, "vllm/platforms/cuda.py")


def _priorities(root, cc, mla, dtype):
    """The possible ordered candidate lists (0.11.1+), or None when the release has no such function."""
    rel, tree = _cuda(root)
    fn = next((n for n in (tree.body if tree else ()) if isinstance(n, ast.FunctionDef)
               and n.name == "_get_backend_priorities"), None)
    if fn is None:
        return None
    env = {a.arg: [UNK] for a in fn.args.args + fn.args.kwonlyargs}
    env |= {"use_mla": [mla], "device_capability": [Cap(cc)], "kv_cache_dtype": [dtype]}
    defaults = {a.arg: d for a, d in zip(fn.args.args[len(fn.args.args) - len(fn.args.defaults):], fn.args.defaults)}
    for name in ("use_non_causal", "use_mm_prefix"):       # unknown: the model says (both followed)
        if name in defaults:
            env[name] = [True, False]
    return run(fn.body, env, Ctx(root, rel, cc))


def _class_of(root, registry, name):
    path = registry.get(name)
    if path is None:
        return None
    module, _, cls_name = path.rpartition(".")
    return bd._module_file(module), cls_name


def _classmethod(root, rel, cls_name, method, base):
    """(rel, FunctionDef) of `method` as the class (or a base below AttentionBackend) defines it."""
    try:
        rel, cls = bd._find(root, rel, cls_name)
    except bd._Undecided:
        return None
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == method:
            return rel, stmt
    if (rel, cls_name) == base or not cls.bases or not isinstance(cls.bases[0], ast.Name):
        return None
    return _classmethod(root, rel, cls.bases[0].id, method, base)


def supports_capability(root, rel, cls_name, cc, base):
    """True / False / None: the backend's supports_compute_capability on `cc`."""
    found = _classmethod(root, rel, cls_name, "supports_compute_capability", base)
    if found is None:
        return None
    mrel, fn = found
    arg = fn.args.args[1].arg if len(fn.args.args) > 1 else "capability"
    got = _uniq(run(fn.body, {arg: [Cap(cc)]}, Ctx(root, mrel, cc)))
    return got[0] if len(got) == 1 and isinstance(got[0], bool) else None


def supports_dtype(root, rel, cls_name, dtype, cc, base):
    """True / False / None: supports_kv_cache_dtype on `cc` (the static answer first, then with
    the capability known for what the static read leaves to run time)."""
    static = bd.supports(root, rel, cls_name, dtype, base)
    if static is not None:
        return static
    found = _classmethod(root, rel, cls_name, "supports_kv_cache_dtype", base)
    if found is None:
        return None
    mrel, fn = found
    arg = fn.args.args[1].arg if len(fn.args.args) > 1 else "kv_cache_dtype"
    try:
        listed = bd._listed(root, rel, cls_name, base)
    except bd._Undecided:
        listed = None
    env = {arg: [dtype]}
    got = _uniq(run(_with_listed(fn.body, listed, dtype, arg), env, Ctx(root, mrel, cc)))
    return got[0] if len(got) == 1 and isinstance(got[0], bool) else None


def _with_listed(body, listed, dtype, arg):
    """`kv_cache_dtype not in cls.supported_kv_cache_dtypes` read as the list says (a constant)."""
    class Sub(ast.NodeTransformer):
        def visit_Compare(self, node):
            self.generic_visit(node)
            if (len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn))
                    and isinstance(node.comparators[0], ast.Attribute)
                    and node.comparators[0].attr == "supported_kv_cache_dtypes" and listed is not None
                    and isinstance(node.left, ast.Name) and node.left.id == arg):
                inside = dtype in listed
                return ast.Constant(inside if isinstance(node.ops[0], ast.In) else not inside)
            return node
    return [Sub().visit(ast.parse(ast.unparse(s)).body[0]) for s in body]


def triton_fp8_floor(root):
    """The compute capability below which the Triton backend dies on an fp8 KV cache, and how the
    release says it: ((8, 9), "raises") for the explicit guard, ((8, 9), "fp8e4nv") for the cast
    to the platform's fp8 type Triton cannot lower there; (None, why) when neither is read."""
    rel = "vllm/v1/attention/backends/triton_attn.py"
    tree = bd._tree(root, rel)
    if tree is None:
        return None, "no triton_attn.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in ast.walk(node)):
            text = ast.unparse(node.test)
            if 'startswith("fp8")' in text.replace("'", '"') and "has_device_capability(" in text:
                for call in ast.walk(node.test):
                    if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                            and call.func.attr == "has_device_capability" and call.args
                            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, int)):
                        n = call.args[0].value
                        return (n // 10, n % 10), "raises"
    fp8_cast = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "view"
                   and len(n.args) == 1 and isinstance(n.args[0], ast.Attribute) and n.args[0].attr == "fp8_dtype"
                   for n in ast.walk(tree))
    assigned = any(isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                   and isinstance(n.value.func, ast.Attribute) and n.value.func.attr == "fp8_dtype"
                   and isinstance(n.value.func.value, ast.Name) and n.value.func.value.id == "current_platform"
                   for n in ast.walk(tree))
    if fp8_cast and assigned and _platform_fp8(root) == "float8_e4m3fn":
        return (8, 9), "fp8e4nv"
    return None, "the cast of an fp8 cache is not read"


def triton_bf16_floor(root):
    """The compute capability below which TritonAttentionImpl raises for a bfloat16 KV cache
    (0.24.0+: `kv_cache_dtype == "bfloat16" and not has_device_capability(80)`), or None when the
    release has no such guard (Triton's bf16 below SM 8.0 is then not read: undecided)."""
    tree = bd._tree(root, "vllm/v1/attention/backends/triton_attn.py")
    for node in ast.walk(tree) if tree else ():
        if not (isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body)):
            continue
        compares = [c for c in ast.walk(node.test) if isinstance(c, ast.Compare) and len(c.ops) == 1
                    and isinstance(c.ops[0], ast.Eq) and isinstance(c.comparators[0], ast.Constant)
                    and c.comparators[0].value == "bfloat16" and isinstance(c.left, ast.Attribute)
                    and c.left.attr == "kv_cache_dtype"]
        calls = [c for c in ast.walk(node.test) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                 and c.func.attr == "has_device_capability" and c.args and isinstance(c.args[0], ast.Constant)
                 and isinstance(c.args[0].value, int)]
        if compares and calls:
            n = calls[0].args[0].value
            return (n // 10, n % 10)
    return None


def _platform_fp8(root):
    """CUDA's fp8_dtype(): Platform's default (interface.py) unless cuda.py overrides it."""
    for rel in ("vllm/platforms/cuda.py", "vllm/platforms/interface.py"):
        tree = bd._tree(root, rel)
        for n in ast.walk(tree) if tree else ():
            if isinstance(n, ast.FunctionDef) and n.name == "fp8_dtype":
                rets = [r for r in ast.walk(n) if isinstance(r, ast.Return)]
                if len(rets) == 1 and isinstance(rets[0].value, ast.Attribute):
                    return rets[0].value.attr
                return None
    return None


def _falls_back_to_v0(root):
    """Before 0.11.0 arg_utils sends a dtype the platform calls unsupported on V1 to V0."""
    tree = bd._tree(root, "vllm/engine/arg_utils.py")
    return tree is not None and any(isinstance(n, ast.Attribute) and n.attr == "is_kv_cache_dtype_supported"
                                    for n in ast.walk(tree))


BACKEND_MODULES = {"triton_attn": "TRITON_ATTN", "flash_attn": "FLASH_ATTN", "flashinfer": "FLASHINFER",
                   "flex_attention": "FLEX_ATTENTION", "tree_attn": "TREE_ATTN", "xformers": "XFORMERS",
                   "triton_mla": "TRITON_MLA", "flashmla": "FLASHMLA", "flashattn_mla": "FLASH_ATTN_MLA",
                   "cutlass_mla": "CUTLASS_MLA", "flashinfer_mla": "FLASHINFER_MLA",
                   "flashmla_sparse": "FLASHMLA_SPARSE"}


def _legacy_picks(root, cc, mla, dtype):
    """0.11.0: get_attn_backend_cls's V1 branch, interpreted: the class paths it may return."""
    rel, tree = _cuda(root)
    fn = None
    for n in ast.walk(tree) if tree else ():
        if isinstance(n, ast.FunctionDef) and n.name == "get_attn_backend_cls":
            fn = n
    if fn is None or "use_v1" not in [a.arg for a in fn.args.args]:
        return None
    env = {a.arg: [UNK] for a in fn.args.args}
    env |= {"selected_backend": [None], "use_v1": [True], "use_mla": [mla], "kv_cache_dtype": [dtype],
            "has_sink": [True, False], "use_sparse": [True, False] if mla else [False]}
    out = []
    for v in run(fn.body, env, Ctx(root, rel, cc)):
        if isinstance(v, str) and v not in (UNK, RAISES, FALLS):
            module = v.rpartition(".")[0].rpartition(".")[2]
            out.append(BACKEND_MODULES.get(module, UNK))
        else:
            out.append(UNK)
    return _uniq(out)


def _outcome(picked, dtype, cc, floor):
    """[outcome, backend] for the backend picked (None: the backend's own limit is not read).
    `floor`: (fp8 floor, its form, bfloat16 floor) of the Triton backend."""
    if picked == "TRITON_ATTN" and dtype.startswith("fp8") and floor[0] is not None:
        return ["fails", picked] if tuple(cc) < floor[0] else ["starts", picked]
    if picked == "TRITON_ATTN" and dtype == "bfloat16" and tuple(cc) < (8, 0):
        # 0.24.0+ raises below its guard; before, Triton's bf16 below SM 8.0 is not read here
        return ["fails", picked] if floor[2] is not None and tuple(cc) < floor[2] else None
    return ["starts", picked]


def _same(answers):
    """One outcome every possibility shares (the backend then unnamed), else None."""
    outcomes = {a[0] if a else None for a in answers}
    return [outcomes.pop(), None] if len(outcomes) == 1 and None not in outcomes else None


def decide(root, cc, mla, dtype, registry, base, floor):
    """[outcome, backend] (or None) for one release, GPU, attention kind and dtype."""
    lists = _priorities(root, cc, mla, dtype)
    answers = []
    if lists is None:
        picks = _legacy_picks(root, cc, mla, dtype)
        if picks is None:
            return None
        for p in picks:
            if p is UNK:
                return None
            # before the lists nothing checks the dtype at selection: only the Triton floor is read
            answers.append(_outcome(p, dtype, cc, floor) if p == "TRITON_ATTN" else None)
    else:
        for order in lists:
            if not isinstance(order, tuple) or UNK in order:
                return None
            # the first candidate that takes (GPU, dtype) is picked; one that may or may not take it
            # leaves both its own outcome and the rest of the list possible
            possible = []
            for name in order:
                where = _class_of(root, registry, name)
                if where is None:
                    possible.append(None)
                    break
                ok_cc = supports_capability(root, *where, cc, base)
                ok_dtype = supports_dtype(root, *where, dtype, cc, base) if ok_cc is not False else False
                if ok_cc is False or ok_dtype is False:
                    continue
                possible.append(_outcome(name, dtype, cc, floor))
                if ok_cc and ok_dtype:
                    break
            else:
                possible.append(["refused", None])
            possible = _uniq(possible)
            answers.append(possible[0] if len(possible) == 1 else _same(possible))
    answers = _uniq(answers)
    # the model decides which list applies; the same outcome on every list is still definite
    return answers[0] if len(answers) == 1 else _same(answers)


def describe(root, accepted):
    """{capability: {"standard": {dtype: answer}, "mla": {...}}, "tritonFp8Floor": "8.9", ...} or
    None when the release is not modelled (V0 fallback on the dtype, or no selection read)."""
    if _falls_back_to_v0(root):
        return None
    layout = next((pair for pair in bd.LAYOUTS if os.path.exists(os.path.join(root, pair[0]))), None)
    registry = bd._registry(root, layout[1]) if layout else {}
    base = (layout[0], "AttentionBackend") if layout else ("", "")
    floor = (*triton_fp8_floor(root), triton_bf16_floor(root))
    dtypes = [d for d in accepted if d != "auto"]
    out: dict = {}
    for cap in CAPABILITIES:
        cc = tuple(int(p) for p in cap.split("."))
        per = {}
        for kind, mla in (("standard", False), ("mla", True)):
            per[kind] = {d: decide(root, cc, mla, d, registry, base, floor) for d in dtypes}
        out[cap] = per
    if all(a is None for per in out.values() for kind in per.values() for a in kind.values()):
        return None
    # a dtype whose outcome is alike on every GPU is not the GPU's to decide: left out (attention.on_gpu)
    for d in dtypes:
        if len({json.dumps([per[k][d] and per[k][d][0] for k in ("standard", "mla")]) for per in out.values()}) == 1:
            for per in out.values():
                for kind in per.values():
                    del kind[d]
    return {"tritonFp8Floor": None if floor[0] is None else f"{floor[0][0]}.{floor[0][1]}",
            "tritonFp8Form": floor[1],
            "tritonBf16Floor": None if floor[2] is None else f"{floor[2][0]}.{floor[2][1]}", "capabilities": out}


def build():
    data = {}
    for v in bd.releases():
        if tuple(int(p) for p in v.split(".")[:2]) < (0, 11):
            continue    # 0.10.x and older: V0/V1 chosen by arg_utils' oracle, not modelled
        got = describe(os.path.join(bd.CACHE, "vllm-" + v), bd.accepted(v))
        if got is not None:
            data[v] = got
    return data
