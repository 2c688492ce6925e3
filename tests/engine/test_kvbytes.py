"""engine/kvbytes: bytes per KV-cache element of each --kv-cache-dtype value per release, as the
shipped engine/kvbytes.json says (read from the wheels by tools/enginedata/kvbytes_data.py; the
conformance tier holds the file to the wheels: tests/conformance/test_kvbytes_data.py)."""

from fractions import Fraction

import pytest

from kubectl_kvcache.engine import knowledge, kvbytes


@pytest.mark.parametrize("engine, version, dtype, size", [
    ("vllm", "0.3.3", "fp8_e5m2", 1),           # vllm/utils.py STR_DTYPE_TO_TORCH_DTYPE: torch.uint8
    ("vllm", "0.3.3", "bfloat16", 2),
    ("vllm", "0.3.3", "float", 4),
    ("vllm", "0.5.0", "fp8", 1),                # fp8 and fp8_e4m3 from 0.4.x/0.5.0
    ("vllm", "0.11.0", "fp8_e4m3", 1),
    ("vllm", "0.14.0", "float16", 2),           # vllm/utils/torch_utils.py from 0.14
    ("vllm", "0.34.0", "fp8_inc", 1),           # torch.float8_e4m3fn
    ("vllm", "0.34.0", "nvfp4", Fraction(9, 16)),   # fp4 data + fp8 block scales: head_size // 2 + head_size // 16
    ("sglang", "0.4.8", "fp8_e5m2", 1),         # model_runner.py: torch.float8_e5m2 (HIP: ..fnuz, same size)
    ("sglang", "0.5.23", "bf16", 2),            # mem_cache/kv_cache_dtype.py configure_kv_cache_dtype
    ("sglang", "0.5.23", "fp8_e4m3", 1),
])
def test_element_bytes_of_the_release(engine, version, dtype, size):
    assert kvbytes.element_bytes(engine, version, dtype) == size


def test_fp8_to_a_16_bit_cache_halves_the_tokens_and_back_doubles_them():
    assert kvbytes.ratio("vllm", "0.11.0", "fp8", "bfloat16") == Fraction(1, 2)
    assert kvbytes.ratio("vllm", "0.11.0", "bfloat16", "fp8_e4m3") == 2
    assert kvbytes.ratio("vllm", "0.34.0", "nvfp4", "bfloat16") == Fraction(9, 32)


@pytest.mark.parametrize("model_dtype, size", [("torch.bfloat16", 2), ("bfloat16", 2), ("torch.float32", 4),
                                               ("torch.float8_e4m3fn", 1), (None, None), ("torch.complex64", None)])
def test_auto_is_the_model_dtype_only_where_the_engine_reported_it(model_dtype, size):
    assert kvbytes.element_bytes("vllm", "0.20.0", "auto", model_dtype) == size
    got, why = kvbytes.describe("sglang", "0.5.3", "auto", model_dtype)
    assert got == size and (size is not None or why)


def test_a_layout_that_is_not_one_size_per_element_is_unknown_and_says_why():
    size, why = kvbytes.describe("vllm", "0.11.0", "fp8_ds_mla")
    assert size is None and "656 bytes per token" in why and "model's shape" in why
    size, why = kvbytes.describe("vllm", "0.20.0", "fp8_per_token_head")
    assert size is None and "head size" in why
    size, why = kvbytes.describe("sglang", "0.5.23", "nvfp4")      # scale buffers beside the fp4 data
    assert size is None and why
    size, why = kvbytes.describe("sglang", "0.2.14", "fp8_e5m2")   # falls back on the model dtype with Triton/MLA
    assert size is None and "falls back" in why
    assert kvbytes.ratio("vllm", "0.11.0", "fp8_ds_mla", "bfloat16") is None


def test_a_value_the_release_does_not_size_and_a_release_not_in_the_data():
    assert kvbytes.describe("vllm", "0.3.3", "fp8")[0] is None          # fp8 came in a later release
    newest = max(knowledge.load("kvbytes")["vllm"], key=lambda v: tuple(int(p) for p in v.split(".")[:3]))
    assert kvbytes.release_table("vllm", "9.0.0")[1] == newest          # newer than the data: the newest's
    assert kvbytes.release_table("vllm", "0.3.2")[0] is None            # older than the data: not known
    assert kvbytes.element_bytes("vllm", None, "fp8") is None


def test_every_release_of_the_data_sizes_its_16_bit_and_fp8_spellings():
    data = knowledge.load("kvbytes")
    for engine, releases in data.items():
        for version, table in releases.items():
            dtypes = table["dtypes"]
            assert "auto" in dtypes, (engine, version)
            for value in ("bfloat16", "half", "float16", "bf16"):
                if value in dtypes:
                    assert kvbytes.element_bytes(engine, version, value) == 2, (engine, version, value)
            for value in ("fp8", "fp8_e4m3", "fp8_e5m2"):
                if value in dtypes and isinstance(dtypes[value], str):
                    assert kvbytes.element_bytes(engine, version, value) == 1, (engine, version, value)


def test_check_s_suggested_spellings_never_change_a_capacity():
    """check's fix for a rejected Binding moves its users to another spelling of the same cache
    format (engine/data.SAME_FORMAT, judge/checks/engines.suggest_dtype): in every release read both
    take the same bytes per element, which is why check reads no capacity (cli/flows/capacity.py).
    A pair that ever differs fails here: check's fixes would then need the capacity read."""
    from kubectl_kvcache.engine.data import SAME_FORMAT

    compared = 0
    for engine, releases in knowledge.load("kvbytes").items():
        for version in releases:
            for value, others in SAME_FORMAT.items():
                for other in others:
                    a = kvbytes.element_bytes(engine, version, value)
                    b = kvbytes.element_bytes(engine, version, other)
                    if a is not None and b is not None:
                        assert a == b, (engine, version, value, other)
                        compared += 1
    assert compared > 100
