"""The engine model against /work/shared/reference/engines.md, one table per section of it.

Every case goes through `predict()` (container dict in, Prediction out) and states the outcome,
the value the engine runs with (None when the flag is absent) or the error class, and the
version it was judged against. Versions are chosen on both sides of every boundary engines.md
names, with at least one old and one current release of each engine.
"""

import pytest

from kubectl_kvcache.engine import kvparse, releases as engines
from kubectl_kvcache.engine.releases import parse_version, version_from_image
from kubectl_kvcache.engine.predict import predict

LAUNCH = {
    "vllm": ["vllm", "serve", "org/model"],
    "sglang": ["python3", "-m", "sglang.launch_server", "--model-path", "org/model"],
}


def run(argv, engine="vllm", version="0.29.0", *, env=None, env_from=None, image="", manufacturer=None):
    """predict() for `<engine launcher> ARGV` with the engine and version declared."""
    container = {"name": "engine", "image": image, "command": LAUNCH[engine] + list(argv)}
    if env:
        container["env"] = env
    if env_from:
        container["envFrom"] = env_from
    p = predict(container, engine, version, manufacturer)
    assert p.engine == engine
    if p.outcome != kvparse.UNKNOWN or p.version is not None:
        assert (p.version, p.version_source) == (str(parse_version(version)), engines.SPEC_VERSION)
    return p


def summary(p):
    """`ok:<effective>`, `rejected:<error class>` or `unknown`."""
    if p.outcome == kvparse.OK:
        assert p.error is None
        return f"ok:{p.effective}"
    assert p.effective is None
    if p.outcome == kvparse.REJECTED:
        assert p.error and p.reason
        return f"rejected:{p.error}"
    assert p.outcome == kvparse.UNKNOWN and p.error is None and p.reason
    return "unknown"


def cases(rows):
    """pytest params from (id, engine, version, argv, expected) rows."""
    return [pytest.param(*row[1:], id=f"{row[1]}-{row[2]}-{row[0]}") for row in rows]


OK = "ok:{}".format
INVALID = "rejected:invalid-value"
MISSING = "rejected:missing-value"
AMBIGUOUS = "rejected:ambiguous-option"
UNRECOGNIZED = "rejected:unrecognized-argument"
IGNORED = "rejected:ignored-explicit-argument"
UNKNOWN = "unknown"


# --- values each engine accepts, by release -------------------------------------------------

VLLM_BASE = {"auto", "fp8", "fp8_e4m3", "fp8_e5m2"}
VLLM_020 = {"turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc",
            "int8_per_token_head", "fp8_per_token_head", "nvfp4"}
VLLM_OCTAVE = {"octave_k3v4", "octave_k3v3", "octave_k3v3_compact"}
ACCEPTED_SETS = [
    # (engine, release, the whole accepted set, as engines.md lists it)
    ("vllm", "0.3.3", {"auto", "fp8_e5m2"}),
    ("vllm", "0.4.0", {"auto", "fp8_e5m2"}),
    ("vllm", "0.4.1", {"auto", "fp8"}),
    ("vllm", "0.4.2", {"auto", "fp8"}),
    ("vllm", "0.4.3", VLLM_BASE),
    ("vllm", "0.9.2", VLLM_BASE),
    ("vllm", "0.10.0", VLLM_BASE | {"fp8_inc"}),
    ("vllm", "0.11.0", VLLM_BASE | {"fp8_inc", "bfloat16"}),
    ("vllm", "0.11.1", VLLM_BASE | {"fp8_inc", "bfloat16", "fp8_ds_mla"}),
    ("vllm", "0.17.1", VLLM_BASE | {"fp8_inc", "bfloat16", "fp8_ds_mla"}),
    ("vllm", "0.18.0", VLLM_BASE | {"fp8_inc", "bfloat16", "fp8_ds_mla", "float16"}),
    ("vllm", "0.20.0", VLLM_BASE | {"fp8_inc", "bfloat16", "fp8_ds_mla", "float16"} | VLLM_020),
    ("vllm", "0.25.0", VLLM_BASE | {"fp8_inc", "bfloat16", "fp8_ds_mla", "float16", "int4_per_token_head"} | VLLM_020),
    ("vllm", "0.28.0", VLLM_BASE | {"fp8_inc", "bfloat16", "fp8_ds_mla", "float16", "int4_per_token_head",
                                    "nvfp4_4over6"} | VLLM_020),
    ("vllm", "0.29.0", VLLM_BASE | {"fp8_inc", "bfloat16", "fp8_ds_mla", "float16", "int4_per_token_head",
                                    "nvfp4_4over6"} | VLLM_020),
    ("vllm", "0.30.0", VLLM_BASE | {"fp8_inc", "bfloat16", "fp8_ds_mla", "float16", "int4_per_token_head",
                                    "nvfp4_4over6", "nvfp4_ds_mla"} | VLLM_020),
    ("vllm", "0.32.0", VLLM_BASE | {"fp8_inc", "bfloat16", "fp8_ds_mla", "float16", "int4_per_token_head",
                                    "nvfp4_4over6", "nvfp4_ds_mla", "ultraquant_4bit"} | VLLM_020),
    ("vllm", "0.33.0", VLLM_BASE | {"fp8_inc", "bfloat16", "fp8_ds_mla", "float16", "int4_per_token_head",
                                    "nvfp4_4over6", "nvfp4_ds_mla", "ultraquant_4bit"} | VLLM_020 | VLLM_OCTAVE),
    ("sglang", "0.2.13", set()),
    ("sglang", "0.2.14", {"auto", "fp8_e5m2"}),
    ("sglang", "0.4.1", {"auto", "fp8_e5m2"}),
    ("sglang", "0.4.2", {"auto", "fp8_e5m2", "fp8_e4m3"}),
    ("sglang", "0.5.3", {"auto", "fp8_e5m2", "fp8_e4m3"}),
    ("sglang", "0.5.4", {"auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16"}),
    ("sglang", "0.5.4.post2", {"auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16"}),
    ("sglang", "0.5.4.post3", {"auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"}),
    ("sglang", "0.5.15", {"auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"}),
    ("sglang", "0.5.16", {"auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1",
                          "mxfp8", "nvfp4", "fp4_mx_block16"}),
    ("sglang", "0.5.20", {"auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1",
                          "mxfp8", "nvfp4", "fp4_mx_block16"}),
    ("sglang", "0.5.21", {"auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "mxfp8", "nvfp4", "fp4_mx_block16"}),
    ("sglang", "0.5.23", {"auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "mxfp8", "nvfp4", "fp4_mx_block16"}),
]


@pytest.mark.parametrize("engine,version,expected", ACCEPTED_SETS, ids=[f"{e}-{v}" for e, v, _ in ACCEPTED_SETS])
def test_profile_accepted_values(engine, version, expected):
    assert engines.profile(engine, parse_version(version)).accepted == frozenset(expected)


# (engine, release, values that run, values that are rejected), through predict()
VALUE_ROWS = [
    ("vllm", "0.3.3", ["auto", "fp8_e5m2"], ["fp8", "fp8_e4m3"]),
    ("vllm", "0.4.0", ["fp8_e5m2"], ["fp8"]),
    ("vllm", "0.4.1", ["fp8"], ["fp8_e5m2", "fp8_e4m3"]),
    ("vllm", "0.4.2", ["auto", "fp8"], ["fp8_e5m2"]),
    ("vllm", "0.4.3", ["fp8", "fp8_e4m3", "fp8_e5m2"], ["fp8_inc"]),
    ("vllm", "0.9.2", ["fp8_e4m3"], ["fp8_inc"]),
    ("vllm", "0.10.0", ["fp8_inc"], ["bfloat16"]),
    ("vllm", "0.10.2", ["fp8_inc"], ["bfloat16"]),
    ("vllm", "0.11.0", ["bfloat16"], ["fp8_ds_mla", "float16"]),
    ("vllm", "0.11.1", ["fp8_ds_mla"], ["float16"]),
    ("vllm", "0.17.1", ["bfloat16"], ["float16"]),
    ("vllm", "0.18.0", ["float16"], ["nvfp4", "half"]),
    ("vllm", "0.19.0", ["float16"], ["nvfp4", "turboquant_k8v4"]),
    ("vllm", "0.20.0", sorted(VLLM_020), ["int4_per_token_head"]),
    ("vllm", "0.24.0", ["nvfp4"], ["int4_per_token_head"]),
    ("vllm", "0.25.0", ["int4_per_token_head"], ["nvfp4_4over6"]),
    ("vllm", "0.27.0", ["int4_per_token_head"], ["nvfp4_4over6"]),
    ("vllm", "0.28.0", ["nvfp4_4over6"], ["nvfp4_ds_mla"]),
    ("vllm", "0.29.0", ["auto", "fp8", "nvfp4_4over6"], ["nvfp4_ds_mla", "bf16", "FP8", "half", "fp16", ""]),
    ("vllm", "0.30.0", ["nvfp4_ds_mla"], ["ultraquant_4bit"]),
    ("vllm", "0.31.0", ["nvfp4_ds_mla"], ["ultraquant_4bit"]),
    ("vllm", "0.32.0", ["ultraquant_4bit"], sorted(VLLM_OCTAVE)),
    ("vllm", "0.33.0", sorted(VLLM_OCTAVE) + ["fp8", "auto"], ["bf16", "FP8", "half", "bogus"]),
    ("vllm", "0.4.3", [], ["bf16", "FP8", "half", "bfloat16", "Fp8"]),
    ("vllm", "0.11.0", [], ["bf16", "BFLOAT16"]),
    ("sglang", "0.2.14", ["auto", "fp8_e5m2"], ["fp8_e4m3", "fp8"]),
    ("sglang", "0.4.1", ["fp8_e5m2"], ["fp8_e4m3"]),
    ("sglang", "0.4.2", ["fp8_e4m3"], ["bf16"]),
    ("sglang", "0.5.3", ["fp8_e4m3"], ["bf16", "bfloat16"]),
    ("sglang", "0.5.4", ["bf16", "bfloat16"], ["fp4_e2m1"]),
    ("sglang", "0.5.4.post2", ["bf16"], ["fp4_e2m1"]),
    ("sglang", "0.5.4.post3", ["fp4_e2m1"], ["mxfp8"]),
    ("sglang", "0.5.15", ["fp4_e2m1"], ["mxfp8", "nvfp4", "fp4_mx_block16"]),
    ("sglang", "0.5.16", ["mxfp8", "nvfp4", "fp4_mx_block16", "fp4_e2m1"], []),
    ("sglang", "0.5.20", ["fp4_e2m1"], []),
    ("sglang", "0.5.21", ["nvfp4", "bf16"], ["fp4_e2m1"]),
    ("sglang", "0.5.18", ["auto", "bf16"], ["fp8", "float16", "fp16", "half", "BF16", "Auto", ""]),
    ("sglang", "0.5.23", ["auto", "fp8_e4m3"], ["fp8", "float16", "fp16", "half", "fp4_e2m1"]),
    ("sglang", "0.3.0", [], ["fp8", "float16", "fp16", "half", "bf16"]),
]
VALUE_CASES = (
    [pytest.param(e, v, value, OK(value), id=f"{e}-{v}-{value}-ok") for e, v, good, _ in VALUE_ROWS for value in good]
    + [pytest.param(e, v, value, INVALID, id=f"{e}-{v}-{value or 'empty'}-rejected")
       for e, v, _, bad in VALUE_ROWS for value in bad]
)


@pytest.mark.parametrize("engine,version,value,expected", VALUE_CASES)
def test_accepted_values(engine, version, value, expected):
    for argv in (["--kv-cache-dtype", value], [f"--kv-cache-dtype={value}"]):
        p = run(argv, engine, version)
        assert summary(p) == expected, argv
        if expected == INVALID:
            assert repr(value) in p.reason


def test_sglang_before_the_flag_existed():
    p = run(["--kv-cache-dtype", "auto"], "sglang", "0.2.13")
    assert summary(p) == UNRECOGNIZED
    assert summary(run([], "sglang", "0.2.13")) == OK(None)


PLATFORM_CASES = [
    # (id, version, manufacturer, image, value, expected): vLLM 0.33 plugins may add values
    ("ascend-unknown-value", "0.33.0", "ascend", "", "ascend_c8", UNKNOWN),
    ("ascend-manufacturer-case", "0.33.0", "Ascend", "", "ascend_c8", UNKNOWN),
    ("ascend-image", "0.33.0", None, "quay.io/ascend/vllm-ascend:v0.33.0", "ascend_c8", UNKNOWN),
    ("ascend-valid-value", "0.33.0", "ascend", "", "fp8", OK("fp8")),
    ("ascend-before-0.33", "0.32.0", "ascend", "", "ascend_c8", INVALID),
    ("nvidia-0.33", "0.33.0", "nvidia", "", "ascend_c8", INVALID),
]


@pytest.mark.parametrize("version,manufacturer,image,value,expected", [c[1:] for c in PLATFORM_CASES],
                         ids=[c[0] for c in PLATFORM_CASES])
def test_platform_plugin_values(version, manufacturer, image, value, expected):
    p = run(["--kv-cache-dtype", value], "vllm", version, image=image, manufacturer=manufacturer)
    assert summary(p) == expected
    if expected == UNKNOWN:
        assert "plugin" in p.reason


# --- parser behaviour -----------------------------------------------------------------------

D = "--kv-cache-dtype"
PARSER_ROWS = [
    # last occurrence wins
    ("last-wins", "vllm", "0.4.2", [D, "fp8", D, "auto"], OK("auto")),
    ("last-wins", "vllm", "0.29.0", [D, "fp8", D, "auto"], OK("auto")),
    ("last-wins", "vllm", "0.33.0", [D, "fp8", D, "auto"], OK("auto")),
    ("last-wins", "sglang", "0.4.0", [D, "fp8_e5m2", D, "auto"], OK("auto")),
    ("last-wins", "sglang", "0.5.18", [D, "auto", D + "=bf16"], OK("bf16")),
    ("last-wins-three", "vllm", "0.29.0", [D + "=auto", D, "fp8_e5m2", D, "fp8_e4m3"], OK("fp8_e4m3")),
    # every occurrence validated (vLLM <= 0.32, SGLang) vs only the final one (vLLM 0.33)
    ("invalid-earlier", "vllm", "0.4.2", [D, "bogus", D, "fp8"], INVALID),
    ("invalid-earlier", "vllm", "0.32.0", [D, "bogus", D, "fp8"], INVALID),
    ("invalid-earlier", "vllm", "0.33.0", [D, "bogus", D, "fp8"], OK("fp8")),
    ("bf16-earlier", "vllm", "0.33.0", [D, "bf16", D, "bfloat16"], OK("bfloat16")),
    ("invalid-earlier", "sglang", "0.4.0", [D, "bogus", D, "fp8_e5m2"], INVALID),
    ("invalid-earlier", "sglang", "0.5.23", [D, "fp8", D, "fp8_e4m3"], INVALID),
    ("invalid-final", "vllm", "0.29.0", [D, "fp8", D, "bogus"], INVALID),
    ("invalid-final", "vllm", "0.33.0", [D, "fp8", D, "bogus"], INVALID),
    ("invalid-final", "sglang", "0.5.18", [D, "bf16", D, "fp8"], INVALID),
    ("missing-earlier-still-fatal", "vllm", "0.33.0", [D, D, "fp8"], MISSING),
    # `=value` and a separate value are the same; `=` with nothing is the empty string
    ("equals", "vllm", "0.4.2", [D + "=fp8"], OK("fp8")),
    ("equals", "vllm", "0.29.0", [D + "=fp8"], OK("fp8")),
    ("equals", "sglang", "0.5.18", [D + "=fp8_e4m3"], OK("fp8_e4m3")),
    ("equals-then-separate", "vllm", "0.29.0", [D + "=fp8", D, "auto"], OK("auto")),
    ("equals-empty", "vllm", "0.4.2", [D + "="], INVALID),
    ("equals-empty", "vllm", "0.29.0", [D + "="], INVALID),
    ("equals-empty", "vllm", "0.33.0", [D + "="], INVALID),
    ("equals-empty", "sglang", "0.5.18", [D + "="], INVALID),
    ("equals-empty-then-valid", "vllm", "0.33.0", [D + "=", D, "fp8"], OK("fp8")),
    ("double-equals", "vllm", "0.29.0", [D + "==fp8"], INVALID),
    ("equals-token-as-value", "vllm", "0.29.0", [D, "=fp8"], INVALID),
    ("separate-empty-string", "vllm", "0.29.0", [D, ""], INVALID),
    # a missing value: at the very end, before an option-looking token
    ("missing-at-end", "vllm", "0.4.2", [D], MISSING),
    ("missing-at-end", "vllm", "0.29.0", [D], MISSING),
    ("missing-at-end", "vllm", "0.33.0", [D], MISSING),
    ("missing-at-end", "sglang", "0.4.0", [D], MISSING),
    ("missing-at-end", "sglang", "0.5.18", ["--port", "30000", D], MISSING),
    ("before-option", "vllm", "0.29.0", [D, "--port", "8000"], MISSING),
    ("before-option", "sglang", "0.5.18", [D, "--tp-size", "2"], MISSING),
    ("before-option-with-equals", "vllm", "0.29.0", [D, "--max-model-len=4096"], MISSING),
    ("before-short-option", "vllm", "0.29.0", [D, "-tp", "2"], MISSING),
    ("before-itself", "vllm", "0.29.0", [D, D + "=fp8"], MISSING),
    ("before-double-dash", "vllm", "0.29.0", [D, "--", "fp8"], MISSING),
    ("negative-number-is-a-value", "vllm", "0.29.0", [D, "-1"], INVALID),
    ("lone-dash-is-a-value", "sglang", "0.5.18", [D, "-"], INVALID),
    # `--` ends option parsing; what follows is a positional the engine rejects
    ("after-double-dash", "vllm", "0.29.0", ["--", D, "fp8"], UNRECOGNIZED),
    ("after-double-dash", "vllm", "0.4.2", ["--", D, "fp8"], UNRECOGNIZED),
    ("after-double-dash", "sglang", "0.5.18", ["--", D, "bf16"], UNRECOGNIZED),
    ("extra-after-double-dash", "vllm", "0.29.0", [D, "fp8", "--", "x"], UNRECOGNIZED),
    ("invalid-before-double-dash", "vllm", "0.29.0", [D, "bogus", "--", "x"], INVALID),
    # option names are case-sensitive, values too
    ("upper-case-name", "vllm", "0.29.0", ["--KV-CACHE-DTYPE", "fp8"], UNRECOGNIZED),
    ("upper-case-name", "vllm", "0.4.2", ["--KV-CACHE-DTYPE", "fp8"], UNRECOGNIZED),
    ("upper-case-name", "sglang", "0.5.18", ["--KV-CACHE-DTYPE", "bf16"], UNRECOGNIZED),
    ("mixed-case-name-equals", "vllm", "0.33.0", ["--Kv-Cache-Dtype=fp8"], UNRECOGNIZED),
    ("upper-case-underscores", "vllm", "0.29.0", ["--KV_CACHE_DTYPE", "fp8"], UNRECOGNIZED),
    ("upper-case-name-with-valid-flag", "vllm", "0.29.0", [D, "fp8", "--KV-CACHE-DTYPE", "fp8"], UNRECOGNIZED),
    ("upper-case-value", "vllm", "0.29.0", [D, "FP8"], INVALID),
    ("upper-case-value", "sglang", "0.5.18", [D, "BF16"], INVALID),
    # a single element holding a space is one token, not an option and its value
    ("one-token-with-space", "vllm", "0.29.0", ["--kv-cache-dtype fp8"], UNRECOGNIZED),
    ("one-token-with-space", "vllm", "0.4.2", ["--kv-cache-dtype fp8"], UNRECOGNIZED),
    ("one-token-with-space", "sglang", "0.5.18", ["--kv-cache-dtype bf16"], UNRECOGNIZED),
    ("one-token-with-space-abbrev", "vllm", "0.29.0", ["--kv fp8"], UNRECOGNIZED),
    ("one-token-with-space-other-option", "vllm", "0.29.0", ["--max-model-len 4096", D, "fp8"], UNRECOGNIZED),
    ("one-token-with-space-is-a-value", "vllm", "0.29.0", [D, "--kv-cache-dtype fp8"], INVALID),
    # the real 0.10.2 converts that value with human_readable_int and dies (issue 23's fuzzer)
    ("one-token-with-space-is-a-value", "vllm", "0.10.2", ["--kv-cache-memory-bytes", "--kv-cache-dtype fp8"],
     INVALID),
    ("one-token-equals-space-is-a-value", "vllm", "0.10.2", ["--kv-cache-memory-bytes", "--kv-x=a b", D, "fp8"],
     INVALID),
    ("value-with-space", "vllm", "0.29.0", [D, "fp8 "], INVALID),
    ("value-with-space-equals", "vllm", "0.29.0", [D + "=fp8 x"], INVALID),
    # --kv-cache-dtype-skip-layers is another option (vLLM >= 0.19); the exact name beats the prefix
    ("skip-layers-alone", "vllm", "0.20.0", ["--kv-cache-dtype-skip-layers", "0,1"], OK(None)),
    ("skip-layers-after", "vllm", "0.20.0", [D, "fp8", "--kv-cache-dtype-skip-layers", "0"], OK("fp8")),
    ("skip-layers-before", "vllm", "0.32.0", ["--kv-cache-dtype-skip-layers=0", D, "fp8"], OK("fp8")),
    ("skip-layers-value-not-checked", "vllm", "0.19.0", ["--kv-cache-dtype-skip-layers", "bogus"], OK(None)),
    ("skip-layers-missing-value", "vllm", "0.19.0", ["--kv-cache-dtype-skip-layers"], MISSING),
    ("skip-layers-before-0.19", "vllm", "0.18.0", ["--kv-cache-dtype-skip-layers", "0"], UNRECOGNIZED),
    ("exact-beats-prefix", "vllm", "0.19.0", [D, "fp8"], OK("fp8")),
    ("exact-beats-prefix-equals", "vllm", "0.33.0", [D + "=fp8"], OK("fp8")),
    # other --kv options: switches, value options, releases that lack them
    ("switch", "vllm", "0.11.2", ["--kv-sharing-fast-prefill", D, "fp8"], OK("fp8")),
    ("switch-with-value", "vllm", "0.11.2", ["--kv-sharing-fast-prefill=true", D, "fp8"], IGNORED),
    ("switch-metrics", "vllm", "0.18.0", ["--kv-cache-metrics", D, "fp8"], OK("fp8")),
    # the real 0.10.1 parser already has --kv-sharing-fast-prefill (issue 13), 0.10.0's does not
    ("switch-before-0.10.1", "vllm", "0.10.0", ["--kv-sharing-fast-prefill"], UNRECOGNIZED),
    ("switch-in-0.10.1", "vllm", "0.10.1", ["--kv-sharing-fast-prefill"], OK(None)),
    # KVTransferConfig refuses connector "X" (its pydantic validation, run by the parser's type=)
    ("value-option", "vllm", "0.10.2", ["--kv-transfer-config", '{"kv_connector":"X"}', D, "fp8"], INVALID),
    ("value-option-operator", "vllm", "0.10.2",
     ["--kv-transfer-config", '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}', D, "fp8"], OK("fp8")),
    ("value-option-missing", "vllm", "0.10.2", ["--kv-cache-memory-bytes", D, "fp8"], MISSING),
    ("value-option-eats-valid-value", "vllm", "0.10.2", ["--kv-cache-memory-bytes", "fp8"], INVALID),
    ("transfer-config-before-0.7", "vllm", "0.6.0", ["--kv-transfer-config", "{}"], UNRECOGNIZED),
    # dated by the real parsers: absent in 0.8.5, present in 0.9.0
    ("events-config-before-0.9", "vllm", "0.8.0", ["--kv-events-config", "{}", D, "fp8"], UNRECOGNIZED),
    ("events-config-0.9", "vllm", "0.9.0", ["--kv-events-config", "{}", D, "fp8"], OK("fp8")),
    ("events-config-dated", "vllm", "0.10.2", ["--kv-events-config", "{}", D, "fp8"], OK("fp8")),
    ("events-config", "sglang", "0.5.18", ["--kv-events-config", "{}", D, "bf16"], OK("bf16")),
    # the real 0.4.7 and 0.4.8 parsers already have --kv-events-config (issue 13)
    ("events-config-in-0.4.8", "sglang", "0.4.8", ["--kv-events-config", "{}"], OK(None)),
    ("events-config-before-0.4.7", "sglang", "0.4.2", ["--kv-events-config", "{}"], UNRECOGNIZED),
    # --kv-canary takes one value (issue 13): a following option is not it
    ("canary-takes-a-value", "sglang", "0.5.18", ["--kv-canary", D, "bf16"], MISSING),
    ("canary-with-value", "sglang", "0.5.18", ["--kv-canary", "log", D, "bf16"], OK("bf16")),
    ("canary-sweep-interval", "sglang", "0.5.18", ["--kv-canary-sweep-interval", "10", D, "bf16"], OK("bf16")),
    ("no-such-kv-option", "vllm", "0.29.0", ["--kv-foo", "1", D, "fp8"], UNRECOGNIZED),
    ("no-such-kv-option", "sglang", "0.5.18", ["--kv-foo", "1", D, "bf16"], UNRECOGNIZED),
    # argparse's order of errors: ambiguity first, then values left to right, unrecognized last
    ("invalid-before-unrecognized", "vllm", "0.29.0", ["--kv-foo", D, "bogus"], INVALID),
    ("missing-before-unrecognized", "sglang", "0.5.18", ["--kv-foo", D], MISSING),
    ("ambiguous-before-invalid", "vllm", "0.7.0", [D, "bogus", "--kv", "x"], AMBIGUOUS),
    ("ambiguous-as-value", "vllm", "0.29.0", [D, "--kv-cache"], AMBIGUOUS),
    # no flag at all: the engine's default
    ("absent", "vllm", "0.4.2", [], OK(None)),
    ("absent", "vllm", "0.29.0", ["--port", "8000", "--max-model-len", "4096"], OK(None)),
    ("absent", "sglang", "0.5.18", ["--port", "30000"], OK(None)),
]


@pytest.mark.parametrize("engine,version,argv,expected", cases(PARSER_ROWS))
def test_parser_behaviour(engine, version, argv, expected):
    assert summary(run(argv, engine, version)) == expected


def test_winner_and_occurrences_are_reported():
    p = run([D, "fp8", "--port", "8000", D + "=auto"], "vllm", "0.29.0")
    assert [o.value for o in p.occurrences] == ["fp8", "auto"]
    assert p.winner == 1 and p.occurrences[1].valid
    assert "command[7]" in p.reason and "1 earlier" in p.reason
    p = run([D, "bogus", D, "fp8"], "vllm", "0.29.0")
    assert p.occurrences[0].value == "bogus" and not p.occurrences[0].valid
    assert "'bogus'" in p.reason and "command[3]" in p.reason


# --- abbreviations --------------------------------------------------------------------------

ABBREV_ROWS = [
    # vLLM `--kv`: unique until 0.7.0 (--kv-transfer-config)
    ("kv", "vllm", "0.4.2", ["--kv", "fp8"], OK("fp8")),
    ("kv", "vllm", "0.6.0", ["--kv", "fp8"], OK("fp8")),
    # --kv-transfer-config is in the real 0.6.5 parser: --kv is ambiguous from there (issue 13)
    ("kv", "vllm", "0.6.6.post1", ["--kv", "fp8"], AMBIGUOUS),
    ("kv-equals", "vllm", "0.6.6", ["--kv=fp8_e4m3"], AMBIGUOUS),
    ("kv", "vllm", "0.6.5", ["--kv", "fp8"], AMBIGUOUS),
    ("kv", "vllm", "0.7.0", ["--kv", "fp8"], AMBIGUOUS),
    ("kv-equals", "vllm", "0.7.0", ["--kv=fp8"], AMBIGUOUS),
    ("kv", "vllm", "0.33.0", ["--kv", "fp8"], AMBIGUOUS),
    # vLLM `--kv-cache`: unique until 0.10.2 (--kv-cache-memory-bytes)
    ("kv-c", "vllm", "0.7.0", ["--kv-c", "fp8"], OK("fp8")),
    ("kv-cache", "vllm", "0.10.1", ["--kv-cache", "fp8"], OK("fp8")),
    ("kv-c", "vllm", "0.10.1", ["--kv-c", "fp8"], OK("fp8")),
    ("kv-cache", "vllm", "0.10.2", ["--kv-cache", "fp8"], AMBIGUOUS),
    ("kv-c", "vllm", "0.10.2", ["--kv-c", "fp8"], AMBIGUOUS),
    ("kv-cache-equals", "vllm", "0.29.0", ["--kv-cache=fp8"], AMBIGUOUS),
    ("kv-cache-d", "vllm", "0.10.2", ["--kv-cache-d", "fp8"], OK("fp8")),
    # vLLM `--kv-cache-d`...`--kv-cache-dtyp`: unique until 0.19.0 (--kv-cache-dtype-skip-layers)
    ("kv-cache-dt", "vllm", "0.18.0", ["--kv-cache-dt", "fp8"], OK("fp8")),
    ("kv-cache-dt", "vllm", "0.18.1", ["--kv-cache-dt", "fp8"], OK("fp8")),
    ("kv-cache-dtyp-equals", "vllm", "0.18.0", ["--kv-cache-dtyp=float16"], OK("float16")),
    ("kv-cache-dt", "vllm", "0.19.0", ["--kv-cache-dt", "fp8"], AMBIGUOUS),
    ("kv-cache-d", "vllm", "0.19.0", ["--kv-cache-d", "fp8"], AMBIGUOUS),
    ("kv-cache-dtyp", "vllm", "0.19.0", ["--kv-cache-dtyp", "fp8"], AMBIGUOUS),
    ("kv-cache-dtyp", "vllm", "0.33.0", ["--kv-cache-dtyp", "fp8"], AMBIGUOUS),
    ("kv-cache-dty-old", "vllm", "0.4.2", ["--kv-cache-dty", "fp8"], OK("fp8")),
    ("skip-layers-prefix", "vllm", "0.29.0", ["--kv-cache-dtype-s", "0", D, "fp8"], OK("fp8")),
    ("abbrev-invalid-value", "vllm", "0.6.0", ["--kv", "bf16"], INVALID),
    ("abbrev-missing-value", "vllm", "0.18.0", ["--kv-cache-dt"], MISSING),
    ("abbrev-last-wins", "vllm", "0.18.0", [D, "auto", "--kv-cache-dt", "fp8"], OK("fp8")),
    ("ambiguous-after-valid", "vllm", "0.29.0", [D, "fp8", "--kv", "x"], AMBIGUOUS),
    ("kv-cache-metrics-prefix", "vllm", "0.18.0", ["--kv-cache-me", D, "fp8"], AMBIGUOUS),
    # SGLang `--kv`: unique until 0.4.9 (--kv-events-config)
    ("kv", "sglang", "0.2.14", ["--kv", "fp8_e5m2"], OK("fp8_e5m2")),
    # --kv-events-config is in the real 0.4.7 parser (issue 13)
    ("kv", "sglang", "0.4.8", ["--kv", "fp8_e5m2"], AMBIGUOUS),
    ("kv", "sglang", "0.4.2", ["--kv", "fp8_e5m2"], OK("fp8_e5m2")),
    ("kv", "sglang", "0.4.9", ["--kv", "fp8_e5m2"], AMBIGUOUS),
    ("kv-equals", "sglang", "0.5.18", ["--kv=bf16"], AMBIGUOUS),
    # SGLang `--kv-c` / `--kv-ca`: unique until 0.5.13 (--kv-canary...)
    ("kv-c", "sglang", "0.4.9", ["--kv-c", "fp8_e4m3"], OK("fp8_e4m3")),
    ("kv-c", "sglang", "0.5.12", ["--kv-c", "bf16"], OK("bf16")),
    ("kv-ca", "sglang", "0.5.12", ["--kv-ca", "bf16"], OK("bf16")),
    ("kv-c", "sglang", "0.5.13", ["--kv-c", "bf16"], AMBIGUOUS),
    ("kv-ca", "sglang", "0.5.13", ["--kv-ca", "bf16"], AMBIGUOUS),
    ("kv-ca", "sglang", "0.5.23", ["--kv-ca=bf16"], AMBIGUOUS),
    # SGLang `--kv-cache` and `--kv-cache-d...`: unique in every release
    ("kv-cache", "sglang", "0.2.14", ["--kv-cache", "fp8_e5m2"], OK("fp8_e5m2")),
    ("kv-cache", "sglang", "0.4.9", ["--kv-cache", "fp8_e4m3"], OK("fp8_e4m3")),
    ("kv-cache", "sglang", "0.5.13", ["--kv-cache", "bf16"], OK("bf16")),
    ("kv-cache", "sglang", "0.5.23", ["--kv-cache=bf16"], OK("bf16")),
    ("kv-cache-d", "sglang", "0.5.23", ["--kv-cache-d", "bf16"], OK("bf16")),
    ("kv-cache-dtyp", "sglang", "0.5.18", ["--kv-cache-dtyp", "fp8"], INVALID),
]


@pytest.mark.parametrize("engine,version,argv,expected", cases(ABBREV_ROWS))
def test_abbreviations(engine, version, argv, expected):
    p = run(argv, engine, version)
    assert summary(p) == expected
    if expected == AMBIGUOUS:
        assert "ambiguous option" in p.reason


def test_ambiguity_names_the_candidates():
    p = run(["--kv-cache-dt", "fp8"], "vllm", "0.19.0")
    assert "--kv-cache-dtype" in p.reason and "--kv-cache-dtype-skip-layers" in p.reason
    p = run(["--kv", "bf16"], "sglang", "0.4.9")
    assert "--kv-events-config" in p.reason


# --- underscores, --config, dotted names ----------------------------------------------------

SPELLING_ROWS = [
    # vLLM >= 0.5.1 rewrites `_` to `-` in the name part of every `--` token, never in the value
    ("underscores-before-0.5.1", "vllm", "0.5.0", ["--kv_cache_dtype", "fp8"], UNRECOGNIZED),
    ("underscores", "vllm", "0.5.1", ["--kv_cache_dtype", "fp8"], OK("fp8")),
    ("underscores", "vllm", "0.29.0", ["--kv_cache_dtype", "fp8_e4m3"], OK("fp8_e4m3")),
    ("underscores-mixed-equals", "vllm", "0.29.0", ["--kv-cache_dtype=fp8"], OK("fp8")),
    ("underscores-value-kept", "vllm", "0.29.0", ["--kv_cache_dtype=fp8_e4m3"], OK("fp8_e4m3")),
    ("underscores-value-not-rewritten", "vllm", "0.29.0", ["--kv_cache_dtype=fp8-e4m3"], INVALID),
    ("dashes-in-value-invalid", "vllm", "0.29.0", [D, "fp8-e4m3"], INVALID),
    ("underscores-abbrev", "vllm", "0.10.1", ["--kv_cache", "fp8"], OK("fp8")),
    ("underscores-abbrev-ambiguous", "vllm", "0.10.2", ["--kv_cache", "fp8"], AMBIGUOUS),
    ("underscores-each-validated", "vllm", "0.29.0", ["--kv_cache_dtype", "bogus", D, "fp8"], INVALID),
    ("underscores-final-only", "vllm", "0.33.0", ["--kv_cache_dtype", "bogus", D, "fp8"], OK("fp8")),
    ("underscores-last-wins", "vllm", "0.33.0", [D, "fp8", "--kv_cache_dtype=auto"], OK("auto")),
    ("underscores", "sglang", "0.4.0", ["--kv_cache_dtype", "fp8_e5m2"], UNRECOGNIZED),
    ("underscores", "sglang", "0.5.18", ["--kv_cache_dtype", "bf16"], UNRECOGNIZED),
    ("underscores-equals", "sglang", "0.5.23", ["--kv_cache_dtype=bf16"], UNRECOGNIZED),
    ("underscores-mixed", "sglang", "0.5.18", ["--kv-cache_dtype", "bf16"], UNRECOGNIZED),
    ("underscores-with-valid-flag", "sglang", "0.5.18", [D, "bf16", "--kv_cache_dtype", "bf16"], UNRECOGNIZED),
    # --config FILE: only the exact separate token loads the file; its keys go first
    ("config-only", "vllm", "0.6.0", ["--config", "/etc/vllm/config.yaml"], UNKNOWN),
    ("config-only", "vllm", "0.29.0", ["--config", "/etc/vllm/config.yaml"], UNKNOWN),
    ("config-only", "vllm", "0.33.0", ["--config", "/etc/vllm/config.yaml"], UNKNOWN),
    ("config-only", "sglang", "0.5.3", ["--config", "/etc/sglang.yaml"], UNKNOWN),
    ("config-only", "sglang", "0.5.23", ["--config", "/etc/sglang.yaml"], UNKNOWN),
    ("config-equals-not-loaded", "vllm", "0.29.0", ["--config=/etc/vllm/config.yaml"], OK(None)),
    ("config-equals-not-loaded", "sglang", "0.5.18", ["--config=/etc/sglang.yaml"], OK(None)),
    ("config-equals-and-flag", "vllm", "0.29.0", ["--config=/c.yaml", D, "fp8"], OK("fp8")),
    # the file is not in the spec: missing, empty, broken or `port: abc` kills 0.33 too (issue 23)
    ("config-then-flag-final-only", "vllm", "0.33.0", ["--config", "/c.yaml", D, "fp8"], UNKNOWN),
    ("flag-then-config-final-only", "vllm", "0.33.0", [D, "fp8", "--config", "/c.yaml"], UNKNOWN),
    # <= 0.32 / SGLang validate the file's (earlier) value too: the flag wins, if the file is valid
    ("config-and-flag-file-validated", "vllm", "0.29.0", ["--config", "/c.yaml", D, "fp8"], UNKNOWN),
    ("config-and-flag-file-validated", "sglang", "0.5.18", [D, "bf16", "--config", "/c.yaml"], UNKNOWN),
    ("config-and-invalid-flag", "vllm", "0.29.0", ["--config", "/c.yaml", D, "bogus"], INVALID),
    ("config-and-invalid-flag", "vllm", "0.33.0", ["--config", "/c.yaml", D, "bogus"], INVALID),
    ("config-and-invalid-flag", "sglang", "0.5.18", ["--config", "/c.yaml", D, "fp8"], INVALID),
    ("config-as-missing-value", "vllm", "0.29.0", [D, "--config", "/c.yaml"], MISSING),
    ("config-without-file-at-end", "vllm", "0.33.0", [D, "fp8", "--config"], MISSING),
    ("config-without-file-at-end", "sglang", "0.5.18", [D, "bf16", "--config"], MISSING),
    # vLLM takes the next token as the file, whatever it is, and refuses a non-YAML name
    ("config-without-file-before-option", "vllm", "0.29.0", ["--config", D, "fp8"], "rejected:config-file"),
    # vLLM >= 0.9 turns `--name.key value` into JSON for --name: invalid for the dtype
    ("dotted-before-0.9", "vllm", "0.8.5", ["--kv-cache-dtype.x", "fp8"], UNRECOGNIZED),
    ("dotted", "vllm", "0.9.0", ["--kv-cache-dtype.x", "fp8"], INVALID),
    ("dotted-equals", "vllm", "0.29.0", ["--kv-cache-dtype.x=fp8"], INVALID),
    ("dotted", "vllm", "0.32.0", ["--kv-cache-dtype.x", "fp8", D, "fp8"], INVALID),
    # dotted names are appended at the END as JSON (FlexibleArgumentParser), so the dict wins and
    # dies at start-up even on 0.33
    ("dotted-final-only", "vllm", "0.33.0", ["--kv-cache-dtype.x", "fp8", D, "fp8"], INVALID),
    ("dotted-final", "vllm", "0.33.0", [D, "fp8", "--kv-cache-dtype.x", "fp8"], INVALID),
    ("dotted-other-option", "vllm", "0.29.0", ["--kv-transfer-config.kv_connector", "X", D, "fp8"], INVALID),
    ("dotted", "sglang", "0.5.18", ["--kv-cache-dtype.x", "bf16"], UNRECOGNIZED),
]


@pytest.mark.parametrize("engine,version,argv,expected", cases(SPELLING_ROWS))
def test_spellings_config_and_dotted_names(engine, version, argv, expected):
    p = run(argv, engine, version)
    assert summary(p) == expected
    if "config" in argv[0] and expected == UNKNOWN:
        assert "--config" in p.reason


def test_config_with_flag_reason_names_the_command_line_value():
    p = run(["--config", "/c.yaml", D, "fp8"], "vllm", "0.29.0")
    assert "'fp8'" in p.reason and "--config" in p.reason


# --- $(NAME) in the engine argv -------------------------------------------------------------

CM = {"configMapKeyRef": {"name": "engine-cfg", "key": "dtype"}}
ENV_ROWS = [
    # (id, engine, version, argv, env, envFrom, expected)
    ("defined", "vllm", "0.29.0", [D, "$(DTYPE)"], [{"name": "DTYPE", "value": "fp8"}], None, OK("fp8")),
    ("defined-equals", "vllm", "0.29.0", [D + "=$(DTYPE)"], [{"name": "DTYPE", "value": "fp8"}], None, OK("fp8")),
    ("defined-chain", "sglang", "0.5.18", [D, "$(B)"],
     [{"name": "A", "value": "bf"}, {"name": "B", "value": "$(A)16"}], None, OK("bf16")),
    ("defined-invalid", "sglang", "0.5.18", [D, "$(DTYPE)"], [{"name": "DTYPE", "value": "fp8"}], None, INVALID),
    ("defined-empty", "vllm", "0.29.0", [D, "$(DTYPE)"], [{"name": "DTYPE", "value": ""}], None, INVALID),
    ("undefined-literal", "vllm", "0.29.0", [D, "$(DTYPE)"], None, None, INVALID),
    ("escaped-literal", "vllm", "0.29.0", [D, "$$(DTYPE)"], [{"name": "DTYPE", "value": "fp8"}], None, INVALID),
    ("shell-syntax-not-expanded", "vllm", "0.29.0", [D, "${DTYPE}"], [{"name": "DTYPE", "value": "fp8"}], None,
     INVALID),
    ("configmap-value", "vllm", "0.29.0", [D, "$(DTYPE)"], [{"name": "DTYPE", "valueFrom": CM}], None, UNKNOWN),
    ("configmap-equals", "vllm", "0.29.0", [D + "=$(DTYPE)"], [{"name": "DTYPE", "valueFrom": CM}], None, UNKNOWN),
    ("configmap-suffix", "vllm", "0.29.0", [D, "fp8$(S)"], [{"name": "S", "valueFrom": CM}], None, UNKNOWN),
    ("configmap-suffix", "sglang", "0.5.18", [D, "bf$(S)"], [{"name": "S", "valueFrom": CM}], None, UNKNOWN),
    ("configmap-suffix-overridden", "vllm", "0.33.0", [D, "fp8$(S)", D, "auto"], [{"name": "S", "valueFrom": CM}],
     None, OK("auto")),
    ("configmap-suffix-final", "vllm", "0.33.0", [D, "auto", D, "fp8$(S)"], [{"name": "S", "valueFrom": CM}],
     None, UNKNOWN),
    ("configmap-whole-argument", "vllm", "0.29.0", ["$(EXTRA)"], [{"name": "EXTRA", "valueFrom": CM}], None, UNKNOWN),
    # their values are converted (human_readable_int, KVTransferConfig): not known, so not known
    ("unknown-value-of-other-option", "vllm", "0.29.0", ["--max-model-len=$(LEN)", D, "fp8"],
     [{"name": "LEN", "valueFrom": CM}], None, UNKNOWN),
    ("unknown-value-of-other-kv-option", "vllm", "0.29.0", ["--kv-transfer-config=$(KVT)", D, "fp8"],
     [{"name": "KVT", "valueFrom": CM}], None, UNKNOWN),
    ("unknown-value-of-a-string-option", "vllm", "0.29.0", ["--host=$(NAME)", D, "fp8"],
     [{"name": "NAME", "valueFrom": CM}], None, OK("fp8")),
    ("unknown-after-double-dash", "vllm", "0.29.0", ["--", "fp8$(S)"], [{"name": "S", "valueFrom": CM}], None,
     UNRECOGNIZED),
    ("env-from", "vllm", "0.29.0", [D, "$(DTYPE)"], None, [{"configMapRef": {"name": "engine-env"}}], UNKNOWN),
    ("env-from-explicit-env-wins", "vllm", "0.29.0", [D, "$(DTYPE)"], [{"name": "DTYPE", "value": "auto"}],
     [{"configMapRef": {"name": "engine-env"}}], OK("auto")),
    ("no-env-var-sets-the-dtype", "vllm", "0.29.0", [], [{"name": "VLLM_KV_CACHE_DTYPE", "value": "fp8"},
                                                          {"name": "KV_CACHE_DTYPE", "value": "fp8"}], None, OK(None)),
    ("no-env-var-sets-the-dtype", "sglang", "0.5.18", [], [{"name": "SGLANG_KV_CACHE_DTYPE", "value": "bf16"}], None,
     OK(None)),
    ("secret-prefix-of-dtype-flag", "vllm", "0.29.0", ["--kv-cache-dtype=$(T)"],
     [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "t"}}}], None, UNKNOWN),
]


@pytest.mark.parametrize("engine,version,argv,env,env_from,expected",
                         [pytest.param(*r[1:], id=f"{r[1]}-{r[2]}-{r[0]}") for r in ENV_ROWS])
def test_variables_in_argv(engine, version, argv, env, env_from, expected):
    p = run(argv, engine, version, env=env, env_from=env_from)
    assert summary(p) == expected
    if expected == UNKNOWN and env and any("valueFrom" in e for e in env):
        assert "engine-cfg" in p.reason or "hf-token" in p.reason


# --- which engine runs, and how it is reached -----------------------------------------------

KV = [D, "fp8_e4m3"]
ENTRY_ROWS = [
    # (id, container, declared engine, expected engine (None: unknown), expected summary, `via` holds)
    ("vllm-serve", {"command": ["vllm", "serve", "m"] + KV}, None, "vllm", OK("fp8_e4m3"), "vllm serve"),
    ("vllm-serve-path", {"command": ["/usr/local/bin/vllm", "serve", "m"] + KV}, None, "vllm", OK("fp8_e4m3"),
     "vllm serve"),
    ("vllm-api-server-module",
     {"command": ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"] + KV},
     None, "vllm", OK("fp8_e4m3"), "vllm.entrypoints.openai.api_server"),
    ("vllm-cli-main-module", {"command": ["python3", "-m", "vllm.entrypoints.cli.main", "serve", "m"] + KV},
     None, "vllm", OK("fp8_e4m3"), "vllm.entrypoints.cli.main"),
    ("vllm-module-attached", {"command": ["python", "-mvllm.entrypoints.openai.api_server"] + KV},
     None, "vllm", OK("fp8_e4m3"), "python -m"),
    ("python-options", {"command": ["/usr/bin/python3.12", "-u", "-X", "dev", "-W", "ignore", "-m",
                                    "vllm.entrypoints.openai.api_server"] + KV},
     None, "vllm", OK("fp8_e4m3"), "python3.12 -m"),
    ("sglang-module", {"command": ["python3", "-m", "sglang.launch_server", "--model-path", "m"] + KV},
     None, "sglang", OK("fp8_e4m3"), "sglang.launch_server"),
    ("sglang-module-unbuffered", {"command": ["python", "-u", "-m", "sglang.launch_server", "--model-path", "m"] + KV},
     None, "sglang", OK("fp8_e4m3"), "python -m sglang.launch_server"),
    ("sglang-serve", {"command": ["sglang", "serve", "--model-path", "m"] + KV}, None, "sglang", OK("fp8_e4m3"),
     "sglang serve"),
    ("exec", {"command": ["exec", "vllm", "serve", "m"] + KV}, None, "vllm", OK("fp8_e4m3"), "exec > vllm serve"),
    ("env-assignments", {"command": ["env", "HF_HOME=/cache", "-u", "FOO", "VLLM_LOGGING_LEVEL=DEBUG", "vllm",
                                     "serve", "m"] + KV}, None, "vllm", OK("fp8_e4m3"), "env > vllm serve"),
    ("tini", {"command": ["tini", "--", "python3", "-m", "sglang.launch_server", "--model-path", "m"] + KV}, None, "sglang",
     OK("fp8_e4m3"), "tini > python3 -m sglang.launch_server"),
    ("tini-options", {"command": ["/sbin/tini", "-s", "-g", "--", "vllm", "serve", "m"] + KV}, None, "vllm",
     OK("fp8_e4m3"), "tini"),
    ("dumb-init", {"command": ["dumb-init", "--single-child", "vllm", "serve", "m"] + KV}, None, "vllm",
     OK("fp8_e4m3"), "dumb-init > vllm serve"),
    ("nested-wrappers", {"command": ["dumb-init", "--", "env", "A=1", "exec", "python3", "-m",
                                     "sglang.launch_server", "--model-path", "m"] + KV}, None, "sglang", OK("fp8_e4m3"),
     "dumb-init > env > exec"),
    ("vllm-image-entrypoint", {"image": "vllm/vllm-openai:v0.29.0", "args": ["m"] + KV}, None, "vllm",
     OK("fp8_e4m3"), "vllm serve"),
    ("sglang-image", {"image": "lmsysorg/sglang:v0.5.18-cu129",
                      "args": ["python3", "-m", "sglang.launch_server", "--model-path", "m"] + KV}, None, "sglang", OK("fp8_e4m3"),
     "sglang.launch_server"),
    ("runner-image-tini", {"image": "gpustack/runner:cuda12.9-vllm0.29.0", "args": ["vllm", "serve", "m"] + KV},
     None, "vllm", OK("fp8_e4m3"), "tini > vllm serve"),
    # the declared engine is compared case-insensitively; a mismatch is unknown
    ("declared-vLLM", {"command": ["vllm", "serve", "m"] + KV}, "vLLM", "vllm", OK("fp8_e4m3"), "vllm serve"),
    ("declared-VLLM", {"command": ["vllm", "serve", "m"] + KV}, "VLLM", "vllm", OK("fp8_e4m3"), "vllm serve"),
    ("declared-SGLang", {"command": ["sglang", "serve", "--model-path", "m"] + KV}, "SGLang", "sglang", OK("fp8_e4m3"), "sglang serve"),
    ("declared-mismatch", {"command": ["vllm", "serve", "m"] + KV}, "SGLang", "sglang", UNKNOWN, "vllm serve"),
    ("declared-mismatch-sglang", {"command": ["python3", "-m", "sglang.launch_server"] + KV}, "vllm", "vllm",
     UNKNOWN, "sglang.launch_server"),
    # not an engine this plugin recognises
    ("unknown-program", {"command": ["/app/start-server", "--kv-cache-dtype", "fp8"]}, None, None, UNKNOWN, ""),
    ("python-script", {"command": ["python3", "serve.py", "--kv-cache-dtype", "fp8"]}, None, None, UNKNOWN, ""),
    ("python-inline", {"command": ["python3", "-c", "import vllm", "--kv-cache-dtype", "fp8"]}, None, None,
     UNKNOWN, ""),
    ("other-module", {"command": ["python3", "-m", "http.server"]}, None, None, UNKNOWN, ""),
    ("vllm-without-serve", {"command": ["vllm", "bench", "--kv-cache-dtype", "fp8"]}, None, None, UNKNOWN, ""),
    ("cli-main-without-serve", {"command": ["python3", "-m", "vllm.entrypoints.cli.main", "bench"]}, None, None,
     UNKNOWN, ""),
    ("unknown-program-from-secret",
     {"command": ["$(BIN)", "serve"],
      "env": [{"name": "BIN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]},
     None, None, UNKNOWN, ""),
    ("wrapper-only", {"command": ["tini", "--"]}, None, None, UNKNOWN, ""),
    ("unknown-image", {"image": "example.com/me/server:1", "args": ["--kv-cache-dtype", "fp8"]}, None, None,
     UNKNOWN, ""),
]


@pytest.mark.parametrize("container,declared,engine,expected,via", [r[1:] for r in ENTRY_ROWS],
                         ids=[r[0] for r in ENTRY_ROWS])
def test_engine_identification(container, declared, engine, expected, via):
    # the release is not what this test is about: the one of the engine identified (unknown ones are judged across)
    p = predict(container, declared, {"vllm": "0.29.0", "sglang": "0.5.18"}.get(engine))
    assert summary(p) == expected
    assert p.engine == engine
    assert via in p.via
    if declared and expected == UNKNOWN:
        assert "declared engine" in p.reason


# --- shell-wrapped commands ----------------------------------------------------------------
def FIELD(name, path):
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def SECRET(name):
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}



SHELL_ROWS = [
    # (id, command, args, env, expected summary, `via` holds)
    ("sh-c-exec", ["sh", "-c", "exec vllm serve m --kv-cache-dtype fp8"], None, None, OK("fp8"),
     "sh -c > exec > vllm serve"),
    ("shell-variable", ["sh", "-c", "vllm serve m --kv-cache-dtype $DTYPE"], None,
     [{"name": "DTYPE", "value": "fp8"}], OK("fp8"), "sh -c > vllm serve"),
    ("kubernetes-expands-first", ["sh", "-c", "vllm serve m --kv-cache-dtype=$(DTYPE)"], None,
     [{"name": "DTYPE", "value": "fp8"}], OK("fp8"), "vllm serve"),
    ("default-when-empty", ["sh", "-c", "vllm serve m --kv-cache-dtype ${DTYPE:-auto}"], None,
     [{"name": "DTYPE", "value": ""}], OK("auto"), "vllm serve"),
    ("variable-the-image-may-set", ["sh", "-c", "vllm serve m --kv-cache-dtype ${DTYPE:-auto}"], None, None,
     UNKNOWN, ""),
    ("login-shell-profiles-may-set-it", ["bash", "-lc", "vllm serve m --kv-cache-dtype $DTYPE"], None,
     [{"name": "DTYPE", "value": "fp8"}], UNKNOWN, ""),
    ("dollar-at", ["sh", "-c", 'exec vllm serve m "$@"', "sh", "--kv-cache-dtype", "fp8"], None, None, OK("fp8"),
     "vllm serve"),
    ("first-extra-element-is-dollar-0", ["sh", "-c", 'exec vllm serve m "$@"'], ["--kv-cache-dtype=fp8"], None,
     OK(None), "vllm serve"),
    ("separators-and-comment", ["sh", "-c", "echo hi; nvidia-smi && vllm serve m --kv-cache-dtype fp8_e4m3 "
                                "# --kv-cache-dtype bogus"], None, None, OK("fp8_e4m3"), "vllm serve"),
    ("line-continuations", ["/bin/bash", "-c", "vllm serve m \\\n  --kv-cache-dtype fp8 \\\n  --port 8000"], None,
     None, OK("fp8"), "bash -c > vllm serve"),
    ("single-quotes-keep-literal", ["sh", "-c", "vllm serve m --kv-cache-dtype '$(X)'"], None, None, INVALID, ""),
    ("undefined-kubernetes-reference-is-command-substitution", ["sh", "-c", "vllm serve m --kv-cache-dtype $(X)"],
     None, None, UNKNOWN, ""),
    ("quoted-space-is-one-word", ["sh", "-c", 'vllm serve m --kv-cache-dtype "fp8 x"'], None, None, INVALID, ""),
    ("unquoted-space-splits", ["sh", "-c", "vllm serve m $FLAG"], None,
     [{"name": "FLAG", "value": "--kv-cache-dtype fp8_e5m2"}], OK("fp8_e5m2"), "vllm serve"),
    ("wrappers-and-assignments", ["sh", "-c", "FOO=1 env BAR=2 nohup numactl -N 0 vllm serve m --kv-cache-dtype fp8"],
     None, None, OK("fp8"), "env > nohup > numactl > vllm serve"),
    ("sglang-in-shell", ["sh", "-c", "python3 -m sglang.launch_server --model-path m --kv-cache-dtype fp8_e4m3"], None, None,
     OK("fp8_e4m3"), "sh -c > python3 -m sglang.launch_server"),
    ("two-engines", ["sh", "-c", "vllm serve m --kv-cache-dtype fp8; vllm serve m --kv-cache-dtype auto"], None, None,
     UNKNOWN, ""),
    # variables the Pod sets through the Downward API: the value is not in the spec, its shape is
    ("field-quoted", ["sh", "-c", 'exec vllm serve m --host "$POD_IP" --kv-cache-dtype fp8'], None,
     [FIELD("POD_IP", "status.podIP")], OK("fp8"), "vllm serve"),
    ("field-unquoted-never-empty", ["sh", "-c", "exec vllm serve m --served-model-name $POD --kv-cache-dtype fp8"],
     None, [FIELD("POD", "metadata.name")], OK("fp8"), "vllm serve"),
    ("field-unquoted-may-be-empty", ["sh", "-c", "exec vllm serve m --host $POD_IP --kv-cache-dtype fp8"], None,
     [FIELD("POD_IP", "status.podIP")], UNKNOWN, ""),
    ("field-unquoted-after-a-prefix", ["sh", "-c", "exec vllm serve m --host=$POD_IP --kv-cache-dtype fp8"], None,
     [FIELD("POD_IP", "status.podIP")], OK("fp8"), "vllm serve"),
    ("field-through-assignment", ["sh", "-c", "set -e\nH=${POD:-x}\nexec vllm serve m --served-model-name $H "
                                              "--kv-cache-dtype fp8"], None, [FIELD("POD", "metadata.name")],
     OK("fp8"), "vllm serve"),
    ("field-label-is-any-text", ["sh", "-c", 'exec vllm serve m --served-model-name "$L" --kv-cache-dtype fp8'],
     None, [FIELD("L", "metadata.labels['app']")], UNKNOWN, ""),
    ("field-value-of-int-option", ["vllm", "serve", "m", "--port", "$(POD_IP)"], None,
     [FIELD("POD_IP", "status.podIP")], UNKNOWN, ""),
    # Kubernetes pastes $(NAME) into the script text before the shell parses it
    ("field-pasted-into-script", ["sh", "-c", "exec vllm serve m --served-model-name $(POD) --kv-cache-dtype fp8"],
     None, [FIELD("POD", "metadata.name")], OK("fp8"), "vllm serve"),
    ("field-pasted-as-the-dtype", ["sh", "-c", "exec vllm serve m --kv-cache-dtype $(POD)"], None,
     [FIELD("POD", "metadata.name")], UNKNOWN, ""),
    ("field-pasted-as-the-program", ["sh", "-c", "$(POD) serve m"], None, [FIELD("POD", "metadata.name")],
     UNKNOWN, ""),
    ("field-pasted-may-be-empty", ["sh", "-c", "exec vllm serve m --host $(IP) --kv-cache-dtype fp8"], None,
     [FIELD("IP", "status.podIP")], UNKNOWN, ""),
    # a Secret's value given where no value changes the parse: decided
    ("secret-explicit-string-value", ["sh", "-c", 'exec vllm serve m --api-key="$KEY" --kv-cache-dtype fp8'], None,
     [SECRET("KEY")], OK("fp8"), "vllm serve"),
    ("secret-after-a-known-prefix", ["sh", "-c", 'exec vllm serve /models/"$M" --kv-cache-dtype fp8'], None,
     [SECRET("M")], OK("fp8"), "vllm serve"),
    # ... and where one starting with '-' would be read as an option, or a choice is checked: not
    ("secret-separate-value", ["sh", "-c", 'exec vllm serve m --api-key "$KEY" --kv-cache-dtype fp8'], None,
     [SECRET("KEY")], UNKNOWN, ""),
    ("secret-explicit-choice-value", ["sh", "-c", 'exec vllm serve m --dtype="$KEY" --kv-cache-dtype fp8'], None,
     [SECRET("KEY")], UNKNOWN, ""),
    ("secret-explicit-choice-value-argv", ["vllm", "serve", "m", "--dtype=$(KEY)", "--kv-cache-dtype", "fp8"], None,
     [SECRET("KEY")], UNKNOWN, ""),
    ("secret-explicit-model-is-moved", ["vllm", "serve", "m", "--model=$(KEY)", "--kv-cache-dtype", "fp8"], None,
     [SECRET("KEY")], UNKNOWN, ""),      # vLLM moves --model=M to the positional: `m` is then refused
    ("secret-explicit-nargs-plus", ["vllm", "serve", "m", "--served-model-name=$(KEY)", "--kv-cache-dtype", "fp8"],
     None, [SECRET("KEY")], OK("fp8"), "vllm serve"),
    ("real-shape-sglang", ["bash", "-c", 'set -ex; pip install x && mkdir -p /d && echo start\n'
                                         'exec python3 -m sglang.launch_server --model-path "$MODEL" \\\n'
                                         '  --host "$POD_IP" --port ${PORT:-30000} "$@"', "sh",
                           "--kv-cache-dtype", "fp8_e4m3"], None,
     [{"name": "MODEL", "value": "org/m"}, FIELD("POD_IP", "status.podIP"), {"name": "PORT", "value": "8000"}],
     OK("fp8_e4m3"), "python3 -m sglang.launch_server"),
]



@pytest.mark.parametrize("command,args,env,expected,via", [r[1:] for r in SHELL_ROWS], ids=[r[0] for r in SHELL_ROWS])
def test_shell_wrapped(command, args, env, expected, via):
    container = {"command": command}
    if args:
        container["args"] = args
    if env:
        container["env"] = env
    engine = "sglang" if "sglang" in command[2] else "vllm"
    version = "0.5.18" if engine == "sglang" else "0.29.0"
    p = predict(container, engine, version)
    assert summary(p) == expected, p.reason
    assert via in p.via
    if expected == UNKNOWN:
        assert p.cause is not None and p.cause.subject, p


# --- which version is judged ----------------------------------------------------------------

VERSION_ROWS = [
    # (id, engine, image, declared version, expected version, source)
    ("declared", "vllm", "vllm/vllm-openai:v0.10.1", "0.29.0", "0.29.0", engines.SPEC_VERSION),
    ("declared-v-prefix", "sglang", "", "v0.5.4.post3", "0.5.4.post3", engines.SPEC_VERSION),
    ("runner-vllm", "vllm", "gpustack/runner:cuda12.9-vllm0.29.0", None, "0.29.0", engines.IMAGE_TAG),
    ("runner-vllm-variant", "vllm", "gpustack/runner:cuda12.8-custom-vllm0.11.2-x86", None, "0.11.2", engines.IMAGE_TAG),
    ("runner-sglang", "sglang", "gpustack/runner:cuda12.9-sglang0.5.18", None, "0.5.18", engines.IMAGE_TAG),
    ("runner-sglang-post", "sglang", "gpustack/runner:cann8.2-sglang0.5.4.post3", None, "0.5.4.post3", engines.IMAGE_TAG),
    ("runner-other-engine", "sglang", "gpustack/runner:cuda12.9-vllm0.29.0", None, None, engines.UNREAD),
    ("vllm-openai", "vllm", "vllm/vllm-openai:v0.29.0", None, "0.29.0", engines.IMAGE_TAG),
    ("vllm-openai-no-v", "vllm", "vllm/vllm-openai:0.10.1.1", None, "0.10.1.1", engines.IMAGE_TAG),
    ("vllm-openai-registry", "vllm", "docker.io/vllm/vllm-openai:v0.7.0", None, "0.7.0", engines.IMAGE_TAG),
    ("vllm-openai-registry-port", "vllm", "registry.local:5000/vllm/vllm-openai:v0.19.0", None, "0.19.0", engines.IMAGE_TAG),
    ("vllm-openai-mirror-path", "vllm", "harbor.example.com/mirror/vllm/vllm-openai:v0.18.0", None, "0.18.0",
     engines.IMAGE_TAG),
    ("vllm-openai-digest", "vllm", "vllm/vllm-openai:v0.11.0@sha256:" + "a" * 64, None, "0.11.0", engines.IMAGE_TAG),
    ("vllm-openai-digest-only", "vllm", "vllm/vllm-openai@sha256:" + "a" * 64, None, None, engines.UNREAD),
    ("vllm-openai-latest", "vllm", "vllm/vllm-openai:latest", None, None, engines.UNREAD),
    ("vllm-openai-rc", "vllm", "vllm/vllm-openai:v0.11.0rc1", None, None, engines.UNREAD),
    ("sglang", "sglang", "lmsysorg/sglang:v0.5.18-cu129", None, "0.5.18", engines.IMAGE_TAG),
    ("sglang-post", "sglang", "lmsysorg/sglang:v0.5.4.post3-cu126", None, "0.5.4.post3", engines.IMAGE_TAG),
    ("sglang-registry", "sglang", "docker.io/lmsysorg/sglang:v0.4.9", None, "0.4.9", engines.IMAGE_TAG),
    ("sglang-latest", "sglang", "lmsysorg/sglang:latest", None, None, engines.UNREAD),
    ("unknown-image", "vllm", "example.com/me/vllm:0.4.2", None, None, engines.UNREAD),
    ("no-image", "sglang", "", None, None, engines.UNREAD),
    ("declared-not-a-release", "vllm", "vllm/vllm-openai:v0.7.0", "nightly", "0.7.0", engines.IMAGE_TAG),
    ("declared-not-a-release-no-image", "vllm", "", "main", None, engines.UNREAD),
]


@pytest.mark.parametrize("engine,image,declared,version,source", [r[1:] for r in VERSION_ROWS],
                         ids=[r[0] for r in VERSION_ROWS])
def test_version_source(engine, image, declared, version, source):
    container = {"image": image, "command": LAUNCH[engine] + [D, "auto"]}
    for declared_engine in (engine, None):
        p = predict(container, declared_engine, declared)
        assert summary(p) == OK("auto")
        assert (p.engine, p.version, p.version_source) == (engine, version, source)
        if source == engines.UNREAD:      # judged across the releases it may be, said so
            assert "release unknown" in p.reason and "judged across" in p.reason
        if declared and source != engines.SPEC_VERSION:
            assert repr(declared) in p.reason


def test_version_from_image_decides_the_outcome():
    # args-only: the image's ENTRYPOINT then (python3 -m vllm.entrypoints.openai.api_server), which takes --model
    container = {"image": "vllm/vllm-openai:v0.6.0", "args": ["--model", "m", "--kv", "fp8"]}
    assert summary(predict(container, "vLLM", None)) == OK("fp8")
    container["image"] = "vllm/vllm-openai:v0.6.6"
    p = predict(container, "vLLM", None)
    assert summary(p) == AMBIGUOUS and (p.version, p.version_source) == ("0.6.6", engines.IMAGE_TAG)
    # the declared version beats the tag
    assert summary(predict(container, "vLLM", "0.6.0")) == OK("fp8")


def test_unknown_release_is_judged_across_the_releases_never_the_minimum():
    # fp8_ds_mla: accepted from vLLM 0.11.1 only, so an unknown release cannot say (the old code
    # judged the operator's minimum, 0.29.0, and said OK)
    p = predict({"command": ["vllm", "serve", "m", D, "fp8_ds_mla"]}, "vllm", None)
    assert (p.version, p.version_source) == (None, engines.UNREAD)
    assert summary(p) == UNKNOWN and "vLLM 0.3.3" in p.reason and p.cause.code == "image"
    # fp4_e2m1: accepted 0.5.4.post3-0.5.20 only
    p = predict({"command": ["sglang", "serve", "--model-path", "m", D, "fp4_e2m1"]}, None, None)
    assert summary(p) == UNKNOWN and "release unknown" in p.reason
    # what every release agrees on is answered: auto, and no flag at all
    p = predict({"command": ["vllm", "serve", "m", D, "auto"]}, "vllm", None)
    assert summary(p) == OK("auto") and p.version is None
    # a pre-release names the releases it may behave as: v0.11.0rc1 -> 0.10.2 or 0.11.0
    p = predict({"image": "vllm/vllm-openai:v0.11.0rc1", "command": ["vllm", "serve", "m", D, "bfloat16"]},
                "vllm", None)
    assert summary(p) == UNKNOWN and "vLLM 0.10.2: rejected" in p.reason and "0.11.0: runs bfloat16" in p.reason


PARSE_VERSION_ROWS = [
    ("0.29.0", (0, 29, 0, 0), 0),
    ("v0.5.18", (0, 5, 18, 0), 0),
    ("0.10.1.1", (0, 10, 1, 1), 0),
    ("0.5.4.post3", (0, 5, 4, 0), 4),
    ("0.5.4post3", (0, 5, 4, 0), 4),
    ("0.6.6.post1", (0, 6, 6, 0), 2),
    (" 0.4.2 ", (0, 4, 2, 0), 0),
    ("1", (1, 0, 0, 0), 0),
]


@pytest.mark.parametrize("text,parts,post", PARSE_VERSION_ROWS, ids=[r[0].strip() for r in PARSE_VERSION_ROWS])
def test_parse_version(text, parts, post):
    v = parse_version(text)
    assert (v.parts, v.post) == (parts, post)


@pytest.mark.parametrize("text", ["", None, "latest", "0.11.0rc1", "0.6.4.dev0", "v", "0.x", "1.2.3.4.5"])
def test_parse_version_rejects(text):
    assert parse_version(text) is None


def test_version_order():
    order = ["0.4.0", "0.4.1", "0.5.4", "0.5.4.post2", "0.5.4.post3", "0.5.5", "0.9.2", "0.10.0", "0.10.1.1",
             "0.10.2", "0.33.0"]
    parsed = [parse_version(v) for v in order]
    assert parsed == sorted(parsed) and len(set(parsed)) == len(parsed)
    assert parse_version("0.5.4.post0") > parse_version("0.5.4")
    assert parse_version("v0.29.0") == parse_version("0.29.0") and str(parse_version("v0.29.0")) == "0.29.0"


IMAGE_ROWS = [
    # (image, engine asked, expected (engine or None, version) or None)
    ("gpustack/runner:cuda12.9-vllm0.29.0", None, ("vllm", "0.29.0")),
    ("gpustack/runner:cuda12.9-vllm0.29.0", "vllm", ("vllm", "0.29.0")),
    ("gpustack/runner:cuda12.9-vllm0.29.0", "sglang", None),
    ("docker.io/gpustack/runner:rocm6.4-sglang0.5.18-dev", None, ("sglang", "0.5.18")),
    ("vllm/vllm-openai:v0.29.0", None, (None, "0.29.0")),
    ("vllm/vllm-openai:v0.29.0-cu130", None, (None, "0.29.0")),
    ("lmsysorg/sglang:v0.5.18-cu129", None, (None, "0.5.18")),
    ("lmsysorg/sglang:v0.5.4.post3-cu126-srt", None, (None, "0.5.4.post3")),
    ("quay.io/ascend/vllm-ascend:v0.11.0", None, (None, "0.11.0")),
    ("ghcr.io/acme/vllm-openai:v0.29.0", None, None),
    ("vllm/vllm-openai", None, None),
    ("vllm/vllm-openai:nightly", None, None),
    ("", None, None),
]


@pytest.mark.parametrize("image,engine,expected", IMAGE_ROWS, ids=[f"{r[0] or 'empty'}-{r[1]}" for r in IMAGE_ROWS])
def test_version_from_image(image, engine, expected):
    found = version_from_image(image, engine)
    if expected is None:
        assert found is None
    else:
        assert (found[0], str(found[1])) == expected


# --- --kv options per release (the table at the end of engines.md) --------------------------

KV_OPTION_ROWS = [
    ("vllm", "0.4.2", {"--kv-cache-dtype"}),
    ("vllm", "0.6.0", {"--kv-cache-dtype"}),
    # from the real parsers (issue 13): --kv-sharing-fast-prefill from 0.10.1, --kv-offloading-* from
    # 0.11.1, --kv-cache-metrics* from 0.16.0 (0.17.0 has them)
    ("vllm", "0.10.2", {"--kv-cache-dtype", "--kv-cache-memory-bytes", "--kv-events-config", "--kv-transfer-config",
                        "--kv-sharing-fast-prefill"}),
    ("vllm", "0.11.2", {"--kv-cache-dtype", "--kv-cache-memory-bytes", "--kv-events-config", "--kv-transfer-config",
                        "--kv-sharing-fast-prefill", "--kv-offloading-backend", "--kv-offloading-size"}),
    ("vllm", "0.18.0", {"--kv-cache-dtype", "--kv-cache-memory-bytes", "--kv-events-config", "--kv-transfer-config",
                        "--kv-sharing-fast-prefill", "--kv-cache-metrics", "--kv-cache-metrics-sample",
                        "--kv-offloading-backend", "--kv-offloading-size"}),
    ("vllm", "0.20.0", {"--kv-cache-dtype", "--kv-cache-memory-bytes", "--kv-events-config", "--kv-transfer-config",
                        "--kv-sharing-fast-prefill", "--kv-cache-metrics", "--kv-cache-metrics-sample",
                        "--kv-offloading-backend", "--kv-offloading-size", "--kv-cache-dtype-skip-layers"}),
    ("sglang", "0.2.15", {"--kv-cache-dtype"}),
    ("sglang", "0.4.3", {"--kv-cache-dtype"}),
    ("sglang", "0.5.3", {"--kv-cache-dtype", "--kv-events-config"}),
    ("sglang", "0.5.13", {"--kv-cache-dtype", "--kv-events-config", "--kv-canary", "--kv-canary-real-data",
                          "--kv-canary-sweep-interval"}),
]


@pytest.mark.parametrize("engine,version,names", KV_OPTION_ROWS, ids=[f"{e}-{v}" for e, v, _ in KV_OPTION_ROWS])
def test_kv_options_per_release(engine, version, names):
    prof = engines.profile(engine, parse_version(version))
    assert {o.name for o in prof.options} == names
    switches = {o.name for o in prof.options if o.takes_value is False}
    assert switches <= {"--kv-sharing-fast-prefill", "--kv-cache-metrics"}


def test_profile_features():
    p = lambda e, v: engines.profile(e, parse_version(v))  # noqa: E731
    assert not p("vllm", "0.5.0").underscores and p("vllm", "0.5.1").underscores
    assert not p("vllm", "0.5.4").config_file and p("vllm", "0.6.0").config_file
    assert not p("vllm", "0.8.5").dotted_json and p("vllm", "0.9.0").dotted_json
    assert not p("vllm", "0.32.0").final_value_only and p("vllm", "0.33.0").final_value_only
    assert not p("sglang", "0.5.2").config_file and p("sglang", "0.5.3").config_file
    assert not any((p("sglang", "0.5.23").underscores, p("sglang", "0.5.23").dotted_json,
                    p("sglang", "0.5.23").final_value_only))
    assert not p("sglang", "0.2.13").has_flag and p("sglang", "0.2.14").has_flag
