"""kubectl_kvcache/engine/kvbytes.json against the released code.

1. It equals what tools/enginedata/kvbytes_data.py reads from this run's slice of the cached
   wheels (releases.TIER), and it names every release of the data.
2. Independently of that reader, the sizes come out of the release's own code run, not parsed:
   STR_DTYPE_TO_TORCH_DTYPE's dict literal evaluated with a stand-in `torch` whose dtypes are
   their element sizes, nvfp4_kv_cache_full_dim called, the fp8_ds_mla page size's constant.
"""

import ast
import os
from fractions import Fraction

import pytest

import kvbytes_data  # noqa: E402  (tools/enginedata: conftest.py puts it on the path)
import wheels  # noqa: E402
from releases import RELEASES as EVERY, TIER  # noqa: E402

from kubectl_kvcache.engine import knowledge, kvbytes

SHIPPED = knowledge.load("kvbytes")


def test_the_shipped_sizes_per_release_equal_the_wheels():
    read = kvbytes_data.generate(TIER)
    for engine, versions in read.items():
        for version, table in versions.items():
            assert SHIPPED[engine][version] == table, \
                f"{engine} {version}: kvbytes.json differs from the wheel: run scripts/engine-data --kvbytes --write"
    assert {e: sorted(v) for e, v in SHIPPED.items()} == {e: sorted(v) for e, v in EVERY.items()}


class _Torch:
    """`torch` as the map's literal names it: each dtype is its element size (torch's own itemsize)."""
    uint8 = int8 = float8_e4m3fn = float8_e5m2 = 1
    half = float16 = bfloat16 = 2
    float = float32 = 4


def _map_run(root):
    """STR_DTYPE_TO_TORCH_DTYPE as the release's module evaluates it (its dict literal run)."""
    for rel in ("vllm/utils/torch_utils.py", "vllm/utils/__init__.py", "vllm/utils.py"):
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        start = text.find("\nSTR_DTYPE_TO_TORCH_DTYPE = {")
        if start < 0:
            continue
        end = text.index("\n}", start) + 2
        scope = {"torch": _Torch}
        exec(compile(text[start:end], rel, "exec"), scope)  # noqa: S102 (a dict literal of the release)
        return scope["STR_DTYPE_TO_TORCH_DTYPE"]
    return None


@pytest.mark.parametrize("version", sorted(set(TIER["vllm"]) | {"0.3.3", "0.11.0", "0.20.0", "0.34.0"}))
def test_vllm_plain_sizes_are_the_release_s_own_torch_dtypes(version):
    root = wheels.cached("vllm", version)
    assert root, f"vllm {version} is not cached (scripts/engine-wheels)"
    sizes = _map_run(root)
    assert sizes
    for value, entry in SHIPPED["vllm"][version]["dtypes"].items():
        if isinstance(entry, str):              # a plain size: the torch dtype's
            assert Fraction(entry) == sizes[value], (version, value)
            assert kvbytes.element_bytes("vllm", version, value) == sizes[value]
    for value in ("bfloat16", "half"):
        assert kvbytes.element_bytes("vllm", version, value) == 2


def test_nvfp4_is_the_release_s_packed_head_over_the_head_size():
    root = wheels.cached("vllm", "0.34.0")
    with open(os.path.join(root, "vllm/utils/torch_utils.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "nvfp4_kv_cache_full_dim")
    scope: dict = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "torch_utils.py", "exec"), scope)  # noqa: S102
    for head in (64, 128, 256):
        assert Fraction(scope["nvfp4_kv_cache_full_dim"](head), head) == kvbytes.element_bytes("vllm", "0.34.0", "nvfp4")


def test_fp8_ds_mla_keeps_the_release_s_bytes_per_token():
    root = wheels.cached("vllm", "0.11.0")
    with open(os.path.join(root, "vllm/v1/kv_cache_interface.py"), encoding="utf-8") as f:
        text = f.read()
    assert 'if self.cache_dtype_str == "fp8_ds_mla":' in text and "return self.block_size * 656" in text
    assert SHIPPED["vllm"]["0.11.0"]["dtypes"]["fp8_ds_mla"]["perToken"] == [656]
    assert kvbytes.element_bytes("vllm", "0.11.0", "fp8_ds_mla") is None


def test_the_ds_mla_rows_follow_their_release_s_layer():
    root = wheels.cached("vllm", "0.30.0")
    with open(os.path.join(root, "vllm/model_executor/layers/attention/mla_attention.py"), encoding="utf-8") as f:
        text = f.read()
    assert '{"fp8_ds_mla": 656, "nvfp4_ds_mla": 352}' in text
    dtypes = SHIPPED["vllm"]["0.30.0"]["dtypes"]
    assert (dtypes["fp8_ds_mla"]["perToken"], dtypes["nvfp4_ds_mla"]["perToken"]) == ([656], [352])
    # 0.20-0.27: DeepseekV4's 584-byte rows beside V3.2's 656 (MLAAttentionSpec.real_page_size_bytes)
    assert SHIPPED["vllm"]["0.20.0"]["dtypes"]["fp8_ds_mla"]["perToken"] == [584, 656]
