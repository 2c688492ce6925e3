"""How many bytes one KV-cache element takes for each --kv-cache-dtype value, per release, read
statically (ast) from the release's own code.

    scripts/engine-data --kvbytes [--write]

Why: a dtype change moves a replica's KV-cache capacity by the ratio of the two sizes (the
memory left for the cache does not depend on the cache's dtype), and judge/capacity predicts the
new capacity from the observed one with it. What is read, per engine:

- vLLM: STR_DTYPE_TO_TORCH_DTYPE (vllm/utils.py, vllm/utils/__init__.py, later
  vllm/utils/torch_utils.py): each value's torch dtype; its size is the dtype's itemsize
  (get_dtype_size = torch.tensor([], dtype=d).element_size(), listed in TORCH_ITEMSIZE below).
  The page layout (vllm/v1/kv_cache_interface.py): get_kv_quant_mode maps a value to a mode;
  NONE and FP8_PER_TENSOR keep the plain layout (num_kv_heads x head_size x itemsize per token and
  side, AttentionSpec.real_page_size_bytes); NVFP4 packs each head into
  nvfp4_kv_cache_full_dim(head_size) bytes (fp4 data + fp8 block scales: read from that function,
  evaluated for head sizes that are multiples of 16); the per-token-head modes add float32 scales
  per token and head (the ratio then needs the head size: not modelled, None); the MLA specs
  give some values a fixed number of bytes per token (`if self.cache_dtype_str == "fp8_ds_mla":
  return self.block_size * 656`): recorded as perToken, the ratio to a 16-bit cache needs the
  model's shape (None). Any other mode: layout "other", size None.
- SGLang: the if/elif chain on the server argument kv_cache_dtype that sets the torch dtype of the
  pool (ModelRunner in sglang/srt/model_executor/model_runner.py; later
  sglang/srt/mem_cache/kv_cache_dtype.py configure_kv_cache_dtype); each value's torch dtypes
  (the HIP and CUDA branches name two of the same size); fp4 values keep scale buffers beside
  the data (mem_cache/memory_pool.py): size None.

"auto" is the model's dtype (vLLM get_kv_cache_torch_dtype; SGLang `self.dtype`), unless the
checkpoint's quantization config names a KV-cache dtype (newer releases of both): recorded as
"auto"; engine/kvbytes asks the caller for the dtype the engine reported.
Writes kubectl_kvcache/engine/kvbytes.json: {engine: {release: {"source": file, "dtypes": {value:
entry}}}}, entry "1" | "2" | "4" (plain: bytes per element) or {"bytes": "9/16" | null, "layout":
"auto" | "nvfp4" | "per-token" | "per-token-head-scales" | "conditional" | "fp4-with-scales" | "other",
"perToken": [bytes per token and layer], "source": its own file}.
"""

from __future__ import annotations

import ast
import os
import sys
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import generated  # noqa: E402
import wheels  # noqa: E402
from releases import RELEASES  # noqa: E402

# torch's itemsize of each dtype the maps name (torch/_tensor element_size; a fact of torch).
# float4_e2m1fn_x2 holds two fp4 values in one byte.
TORCH_ITEMSIZE = {"uint8": Fraction(1), "int8": Fraction(1), "float8_e4m3fn": Fraction(1),
                  "float8_e4m3fnuz": Fraction(1), "float8_e5m2": Fraction(1), "float8_e5m2fnuz": Fraction(1),
                  "half": Fraction(2), "float16": Fraction(2), "bfloat16": Fraction(2),
                  "float": Fraction(4), "float32": Fraction(4), "float4_e2m1fn_x2": Fraction(1, 2)}
PLAIN_MODES = (None, "NONE", "FP8_PER_TENSOR")
# The 1-byte values whose cache holds one element per byte with per-tensor scales kept outside the
# cache (the Attention layer's k_scale/v_scale): the per-tensor fp8 spellings and int8. Another
# 1-byte value (turboquant_*, octave_*, ...) has a layout of its own in its backend, read only
# where a reader below follows it; otherwise its size is None (UNKNOWN), never assumed.
PER_TENSOR = ("fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "int8")
VLLM_MAPS = ("vllm/utils/torch_utils.py", "vllm/utils/__init__.py", "vllm/utils.py")
SGLANG_CHAINS = ("sglang/srt/mem_cache/kv_cache_dtype.py", "sglang/srt/model_executor/model_runner.py")


def _parse(root, rel):
    path = os.path.join(root, rel)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), rel)


def _fraction(value: Fraction | None) -> str | None:
    return None if value is None else str(value)


# --- vLLM -------------------------------------------------------------------------------------

def vllm_map(root):
    """(file, {value: torch dtype name}) of STR_DTYPE_TO_TORCH_DTYPE; (None, {}) when absent."""
    for rel in VLLM_MAPS:
        tree = _parse(root, rel)
        for node in ast.walk(tree) if tree else ():
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
                node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(target, ast.Name) and target.id == "STR_DTYPE_TO_TORCH_DTYPE" \
                    and isinstance(node.value, ast.Dict):
                out = {}
                for k, v in zip(node.value.keys, node.value.values):
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Attribute):
                        out[k.value] = v.attr
                return rel, out
    return None, {}


def _test_matches(test, value) -> bool | None:
    """Whether get_kv_quant_mode's `if` test holds for `value` (None: not a test read here)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        results = [_test_matches(t, value) for t in test.values]
        results = [r for r in results if r is not None]       # isinstance(kv_cache_dtype, str): true
        return all(results) if results else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) \
            and isinstance(test.comparators[0], ast.Constant):
        return value == test.comparators[0].value
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "startswith" \
            and test.args and isinstance(test.args[0], ast.Constant):
        return value.startswith(test.args[0].value)
    return None


def _mode(node) -> str:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "KVQuantMode":
        return node.attr
    return "?"


def vllm_mode(tree, value) -> str | None:
    """The KVQuantMode get_kv_quant_mode gives `value` (None: no such function in the release;
    "?": a branch this reader does not follow)."""
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.FunctionDef) and node.name == "get_kv_quant_mode":
            for st in node.body:
                if isinstance(st, ast.If):
                    hit = _test_matches(st.test, value)
                    if hit and isinstance(st.body[-1], ast.Return):
                        return _mode(st.body[-1].value)
                elif isinstance(st, ast.Return):
                    return _mode(st.value)
            return "?"
    return None


def nvfp4_fraction(root) -> Fraction | None:
    """Bytes per element of nvfp4_kv_cache_full_dim(head_size) / head_size, when the same for
    every head size that is a multiple of 16."""
    for rel in VLLM_MAPS:
        tree = _parse(root, rel)
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.FunctionDef) and node.name == "nvfp4_kv_cache_full_dim":
                ret = [s for s in node.body if isinstance(s, ast.Return)]
                if not ret:
                    return None
                code = compile(ast.Expression(ret[0].value), rel, "eval")
                seen = {Fraction(eval(code, {"__builtins__": {}}, {"head_size": h}), h)  # noqa: S307 (arithmetic only)
                        for h in (64, 80, 128, 192, 256, 512)}
                return seen.pop() if len(seen) == 1 else None
    return None


def per_token_bytes(tree) -> dict[str, list[int]]:
    """{value: [bytes per token]} from `if self.cache_dtype_str == "X": return <block size> * N`."""
    out: dict[str, list[int]] = {}
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) \
                and isinstance(node.test.left, ast.Attribute) and node.test.left.attr == "cache_dtype_str" \
                and isinstance(node.test.ops[0], ast.Eq) and isinstance(node.test.comparators[0], ast.Constant):
            value = node.test.comparators[0].value
            for st in ast.walk(node):
                if isinstance(st, ast.Return) and isinstance(st.value, ast.BinOp) \
                        and isinstance(st.value.op, ast.Mult) and isinstance(st.value.right, ast.Constant) \
                        and isinstance(st.value.right.value, int):
                    found = out.setdefault(value, [])
                    if st.value.right.value not in found:
                        found.append(st.value.right.value)
    return {k: sorted(v) for k, v in out.items()}


def ds_mla_row_bytes(root) -> list[int]:
    """Later releases: MLAAttentionImpl.get_fp8_ds_mla_row_bytes (vllm/v1/attention/backend.py)
    returns the fp8_ds_mla row's bytes per token."""
    found: list[int] = []
    for node in ast.walk(_parse(root, "vllm/v1/attention/backend.py") or ast.Module(body=[], type_ignores=[])):
        if isinstance(node, ast.FunctionDef) and node.name == "get_fp8_ds_mla_row_bytes":
            found += [st.value.value for st in ast.walk(node) if isinstance(st, ast.Return)
                      and isinstance(st.value, ast.Constant) and isinstance(st.value.value, int)]
    return found


MLA_LAYER = "vllm/model_executor/layers/attention/mla_attention.py"


def state_bytes(root) -> dict[str, list[int]]:
    """Later releases (0.28 on): the MLA layer's spec takes state_content_bytes by the dtype
    (vllm/model_executor/layers/attention/mla_attention.py): `656 if self.kv_cache_dtype ==
    "fp8_ds_mla" else None` (0.28), `{"fp8_ds_mla": 656, "nvfp4_ds_mla": 352}.get(...)` (0.30), an
    IfExp of both (0.34): every int constant keyed by a dtype inside that argument."""
    out: dict[str, list[int]] = {}
    for node in ast.walk(_parse(root, MLA_LAYER) or ast.Module(body=[], type_ignores=[])):
        if not (isinstance(node, ast.keyword) and node.arg == "state_content_bytes"):
            continue
        for sub in ast.walk(node.value):
            if isinstance(sub, ast.IfExp) and isinstance(sub.body, ast.Constant) and isinstance(sub.body.value, int) \
                    and isinstance(sub.test, ast.Compare) and isinstance(sub.test.ops[0], ast.Eq) \
                    and isinstance(sub.test.left, ast.Attribute) and sub.test.left.attr == "kv_cache_dtype" \
                    and isinstance(sub.test.comparators[0], ast.Constant):
                out.setdefault(sub.test.comparators[0].value, []).append(sub.body.value)
            if isinstance(sub, ast.Dict):
                for k, v in zip(sub.keys, sub.values):
                    if isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Constant) \
                            and isinstance(v.value, int):
                        out.setdefault(k.value, []).append(v.value)
    return {k: sorted(set(v)) for k, v in out.items()}


def vllm_release(root) -> dict:
    rel, values = vllm_map(root)
    interface = _parse(root, "vllm/v1/kv_cache_interface.py")
    nvfp4 = nvfp4_fraction(root)
    tokens = per_token_bytes(interface)
    row = ds_mla_row_bytes(root)
    state = state_bytes(root)
    where = {value: "vllm/v1/kv_cache_interface.py" for value in tokens}
    for value, sizes in state.items():
        if value not in tokens:
            tokens[value], where[value] = sizes, f"{MLA_LAYER} state_content_bytes"
    if row and "fp8_ds_mla" not in tokens:
        tokens["fp8_ds_mla"] = sorted(set(row))
        where["fp8_ds_mla"] = "vllm/v1/attention/backend.py get_fp8_ds_mla_row_bytes"
    out = {"auto": {"bytes": None, "layout": "auto", "source": rel}}
    for value, torch_name in values.items():
        size = TORCH_ITEMSIZE.get(torch_name)
        mode = vllm_mode(interface, value)
        entry: dict = {"torch": [torch_name], "source": rel}
        if value in tokens:
            entry |= {"bytes": None, "layout": "per-token", "perToken": tokens[value], "source": where[value]}
        elif mode in PLAIN_MODES and size is not None and (size >= 2 or value in PER_TENSOR):
            entry |= {"bytes": _fraction(size), "layout": "plain"}
        elif mode == "NVFP4" and nvfp4 is not None and size is not None:
            entry |= {"bytes": _fraction(size * nvfp4), "layout": "nvfp4",
                      "source": f"{rel} nvfp4_kv_cache_full_dim"}
        elif mode is not None and mode.endswith("PER_TOKEN_HEAD"):
            entry |= {"bytes": None, "layout": "per-token-head-scales", "source": "vllm/v1/kv_cache_interface.py"}
        else:
            entry |= {"bytes": None, "layout": "other", "source": "vllm/v1/kv_cache_interface.py"}
        out[value] = dict(sorted(entry.items()))
    return out


# --- SGLang -----------------------------------------------------------------------------------

def _server_value_test(test) -> list[str]:
    """The values an `<...>.kv_cache_dtype == "X"` / `in ("X", "Y")` test names, on the server
    argument (server_args.kv_cache_dtype or the function's server_args_kv_cache_dtype)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return []
    left = test.left
    named = (isinstance(left, ast.Attribute) and left.attr == "kv_cache_dtype"
             and isinstance(left.value, ast.Attribute) and left.value.attr == "server_args") \
        or (isinstance(left, ast.Name) and left.id == "server_args_kv_cache_dtype")
    if not named:
        return []
    right = test.comparators[0]
    if isinstance(test.ops[0], ast.Eq) and isinstance(right, ast.Constant):
        return [right.value]
    if isinstance(test.ops[0], ast.In) and isinstance(right, (ast.Tuple, ast.List)):
        return [e.value for e in right.elts if isinstance(e, ast.Constant)]
    return []


def _torch_assigned(body) -> list[str]:
    """torch dtypes assigned to kv_cache_dtype in a branch (both HIP and CUDA forms)."""
    names: list[str] = []
    for st in body:
        for node in ast.walk(st):
            if isinstance(node, ast.Assign) and any(
                    (isinstance(t, ast.Attribute) and t.attr == "kv_cache_dtype")
                    or (isinstance(t, ast.Name) and t.id == "kv_cache_dtype") for t in node.targets):
                for sub in ast.walk(node.value):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "torch" \
                            and sub.attr not in names:
                        names.append(sub.attr)
                if isinstance(node.value, ast.Attribute) and isinstance(node.value.value, ast.Name) \
                        and node.value.value.id == "self" and node.value.attr == "dtype":
                    names.append("<model dtype>")
    return names


def sglang_release(root) -> dict:
    for rel in SGLANG_CHAINS:
        tree = _parse(root, rel)
        found: dict[str, list[str]] = {}
        for node in ast.walk(tree) if tree else ():       # the chain that starts at "auto"
            if isinstance(node, ast.If) and _server_value_test(node.test) == ["auto"]:
                branch = node
                while isinstance(branch, ast.If):
                    for value in _server_value_test(branch.test):
                        found.setdefault(value, _torch_assigned(branch.body))
                    orelse = branch.orelse
                    branch = orelse[0] if len(orelse) == 1 and isinstance(orelse[0], ast.If) else None
                break
        if found:
            out = {}
            for value, names in found.items():
                entry: dict = {"torch": names, "source": rel}
                sizes = {TORCH_ITEMSIZE.get(n) for n in names}
                if value == "auto":
                    entry |= {"bytes": None, "layout": "auto"}
                elif "<model dtype>" in names:     # falls back on the model's dtype in some setups
                    entry |= {"bytes": None, "layout": "conditional"}
                elif any("float4" in n for n in names):
                    entry |= {"bytes": None, "layout": "fp4-with-scales"}   # mem_cache/memory_pool.py scale buffers
                elif len(sizes) == 1 and None not in sizes:
                    entry |= {"bytes": _fraction(sizes.pop()), "layout": "plain"}
                else:
                    entry |= {"bytes": None, "layout": "other"}
                out[value] = dict(sorted(entry.items()))
            return out
    return {}


def compact(read: dict) -> dict:
    """A release as {"source": the map's file, "dtypes": {value: entry}}: a plain value is its size
    ("2"), any other {"bytes", "layout", "perToken"?, "source"?} (its own file, where not the map's)."""
    sources = [e["source"] for e in read.values() if e.get("layout") in ("plain", "auto")]
    source = sources[0] if sources else ""
    out = {}
    for value, entry in read.items():
        if entry["layout"] == "plain":
            out[value] = entry["bytes"]
        else:
            out[value] = {k: v for k, v in entry.items() if k != "torch" and not (k == "source" and v == source)}
    return {"source": source, "dtypes": out}


def generate(releases=RELEASES) -> dict:
    data: dict = {}
    for engine, versions in releases.items():
        read = vllm_release if engine == "vllm" else sglang_release
        data[engine] = {}
        for version in versions:
            root = wheels.cached(engine, version)
            if root is None:
                raise SystemExit(f"{engine} {version} is not cached: run scripts/engine-wheels")
            data[engine][version] = compact(read(root))
    return data


def main(argv) -> int:
    text = generated.render(generate(), "scripts/engine-data --kvbytes --write", expand=3)
    return generated.write_or_compare(argv, "kvbytes", text, "scripts/engine-data --kvbytes")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
