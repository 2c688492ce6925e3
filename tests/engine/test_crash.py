"""engine/crash.py on lines the engines' own code writes: vLLM's attention-selector errors and
log prefixes evaluated from each release's source (tests/cluster/engine_lines.py), the messages its
raise sites format (read from the wheel by tools/enginedata/crash_data.py), and the tuned part of
the corpus of crash tails users pasted in public issues (tests/engine/crash_tails.py; the held-out
part runs last, test_zz_crash_heldout.py)."""

import os
import sys

import pytest

from kubectl_kvcache.engine import crash
from kubectl_kvcache.judge import observed
from kubectl_kvcache.judge.verify import OK, REJECTED, Item

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))
sys.path.insert(0, os.path.join(ROOT, "tools", "enginedata"))

import crash_data  # noqa: E402
import engine_lines  # noqa: E402

from tests.engine.crash_tails import TUNED  # noqa: E402

# one release of each selector format: 0.11.1 "head_size: ..., ..." config string, 0.13
# AttentionSelectorConfig's NamedTuple, 0.18 its own __repr__ with a per-head-scales field, 0.34 the newest
SELECTOR_RELEASES = ("0.11.1", "0.13.0", "0.18.0", "0.34.0")


def _reasons(version):
    """(the dtype's reason, another fixed reason, a third) of the release's validate_configuration."""
    dtype_reason, fixed = crash_data._validate_reasons(engine_lines.root("vllm", version))
    texts = [crash_data.literal(p) for p in fixed if not any(isinstance(x, dict) for x in p)]
    return dtype_reason, "sparse not supported", "compute capability not supported", texts


def _v1_tail(version, message):
    return engine_lines.vllm_v1_crash(version, message)


@pytest.mark.parametrize("version", SELECTOR_RELEASES)
def test_the_selector_blames_the_dtype_only_where_a_backend_was_refused_for_it_alone(version):
    dtype_reason, sparse, capability, fixed = _reasons(version)
    assert dtype_reason == "kv_cache_dtype not supported" and sparse in fixed and capability in fixed
    # DeepSeek-V3.2 on a GPU without a sparse backend (vllm issue 31480): kv_cache_dtype=auto in the
    # config, every backend refused for something else
    deepseek = engine_lines.vllm_selector_error(
        version, {"FLASH_ATTN_MLA": [sparse, capability], "FLASHMLA": [sparse, capability],
                  "TRITON_MLA": [sparse], "FLASHMLA_SPARSE": [capability]}, "auto", use_mla=True, use_sparse=True)
    refused = engine_lines.vllm_selector_error(
        version, {"FLASH_ATTN": [dtype_reason], "TRITON_ATTN": [dtype_reason, capability]}, "fp8_e5m2")
    mixed = engine_lines.vllm_selector_error(
        version, {"FLASH_ATTN": [dtype_reason, capability], "TRITON_ATTN": [sparse]}, "fp8_e5m2")
    for message, blame in ((deepseek, crash.NOT_DTYPE), (refused, crash.DTYPE), (mixed, crash.NOT_DTYPE)):
        for tail in (f"Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nValueError: {message}\n",
                     _v1_tail(version, message)):
            cause = crash.exit_cause(tail, "vllm", version)
            assert cause is not None and cause.kind == crash.STARTUP, tail[-300:]
            assert cause.line.startswith("ValueError: No valid attention backend found for cuda with "), cause
            assert cause.blame == blame, (message, cause)
            # the release unknown (an image tag it cannot read): every release's reasons
            assert crash.exit_cause(tail, "vllm").blame == blame


@pytest.mark.parametrize("version", SELECTOR_RELEASES)
def test_a_forced_backend_refused_for_the_dtype_alone(version):
    dtype_reason, sparse, _, _ = _reasons(version)
    alone = engine_lines.vllm_selector_error(version, {"CUTLASS_MLA": [dtype_reason]}, selected="CUTLASS_MLA")
    both = engine_lines.vllm_selector_error(version, {"CUTLASS_MLA": [dtype_reason, sparse]}, selected="CUTLASS_MLA")
    assert crash.exit_cause(f"ValueError: {alone}", "vllm", version).blame == crash.DTYPE
    assert crash.exit_cause(f"ValueError: {both}", "vllm", version).blame == crash.NOT_DTYPE


def _raised(engine, version, about_dtype):
    return [(name, parts) for name, parts in crash_data.raises(engine_lines.root(engine, version), engine)
            if crash_data.about_dtype(parts) == about_dtype and not crash_data._WRAPPER.search(crash_data.literal(parts))]


def _fill(parts, value):
    return "".join(p if isinstance(p, str) else value for p in parts)


@pytest.mark.parametrize("engine,version", [("vllm", "0.6.0"), ("vllm", "0.11.0"), ("vllm", "0.20.0"),
                                            ("sglang", "0.4.0"), ("sglang", "0.5.12")])
def test_every_message_a_release_raises_about_the_dtype_blames_it(engine, version):
    sites = _raised(engine, version, True)
    assert sites, f"{engine}=={version}: no raise site about the KV-cache dtype read"
    for name, parts in sites:
        line = f"{name}: {_fill(parts, 'fp8_e5m2')}"
        if "\n" in line:
            continue            # a multi-line message: its first line is what is matched (not a template)
        tail = f"Traceback (most recent call last):\n  File \"x.py\", line 3, in f\n{line}\n"
        cause = crash.exit_cause(tail, engine, version)
        assert cause is not None and cause.blame == crash.DTYPE, (line, cause)


@pytest.mark.parametrize("engine,version", [("vllm", "0.11.0"), ("vllm", "0.34.0"), ("sglang", "0.5.23")])
def test_text_a_tenant_controls_never_makes_it_the_dtypes_fault(engine, version):
    """Every raise site of the release that formats a model path, a served name or a tokenizer
    (text a tenant writes), filled with that text naming the dtype: never the dtype's fault."""
    hostile = "/models/kv_cache_dtype=fp8 Unknown kv cache dtype: fp8 kv_cache_dtype not supported"
    sites = [(n, p) for n, p in _raised(engine, version, False)
             if any(isinstance(x, dict) and any(w in x["slot"] for w in ("model", "served", "tokenizer", "path"))
                    for x in p)]
    assert len(sites) > 5, sites
    for name, parts in sites:
        line = f"{name}: {_fill(parts, hostile)}".split("\n")[0]
        for cause in (crash.exit_cause(line, engine, version), crash.exit_cause(line, engine)):
            assert cause is None or cause.blame != crash.DTYPE, line
    # and inside a message that is the dtype's, a path is one token too many
    assert crash.exit_cause(f"ValueError: Unknown kv cache dtype: {hostile}", "vllm", "0.6.0").blame is None


def test_argparse_refusals_name_the_option():
    usage = "usage: vllm serve [-h] ...\nvllm serve: error: argument --kv-cache-dtype: invalid choice: 'bf16'\n"
    cause = crash.exit_cause(usage)
    assert cause.kind == crash.REJECTED and "invalid choice: 'bf16'" in cause.line and cause.blame == crash.DTYPE
    other = crash.exit_cause("usage: vllm serve [-h]\nvllm serve: error: argument --port: invalid int value: 'x'\n")
    assert other.kind == crash.REJECTED and other.blame == crash.NOT_DTYPE
    tb = "Traceback (most recent call last):\n  File \"x\", line 1\npydantic_core._pydantic_core.ValidationError: " \
         "1 validation error for CacheConfig\ncache_dtype\n  Input should be 'auto' or 'fp8' [type=literal_error]\n"
    cause = crash.exit_cause(tb)
    assert cause.kind == crash.STARTUP and "ValidationError" in cause.line and cause.blame == crash.DTYPE
    secret = "RuntimeError: bad --api-key sk-SECRET given, token=abcSECRET"
    assert "SECRET" not in crash.exit_cause(secret).line
    assert crash.exit_cause("INFO all fine\n") is None


def test_prefixes_are_the_writers_own():
    assert crash.strip("(EngineCore_DP0 pid=1576517) ERROR 12-07 17:00:35 [core.py:867] ValueError: x") == \
        ("EngineCore_DP0 pid=1576517", "ValueError: x")
    assert crash.strip("(VllmWorker rank=0 pid=2445155) INFO 05-10 15:56:25 [utils.py:1055] hi") == \
        ("VllmWorker rank=0 pid=2445155", "hi")
    assert crash.strip("INFO 01-11 15:51:02 llm_engine.py:70] Initializing")[1] == "Initializing"
    assert crash.strip("[2025-02-21 22:59:28 TP0] Scheduler hit an exception: x")[1] == "Scheduler hit an exception: x"
    assert crash.strip("\x1b[36m(APIServer pid=1)\x1b[0m RuntimeError: y") == ("APIServer pid=1", "RuntimeError: y")


def _item(cause, status=OK):
    item = Item("ns", "p-0", "main", {"name": "md"}, "server", "vllm", "0.18.0", "b", "fp8_e5m2", "fp8_e5m2",
                status, "the parse accepts 'fp8_e5m2'", state={"waiting": "CrashLoopBackOff", "lastExitCode": 1})
    item.exit_cause = cause
    observed.dtype_failure(item)
    return item


def test_the_judge_blames_and_offers_recover_only_on_the_engines_word():
    version = "0.18.0"
    dtype_reason, sparse, capability, _ = _reasons(version)
    deepseek = engine_lines.vllm_selector_error(version, {"TRITON_MLA": [sparse], "FLASHMLA_SPARSE": [capability]},
                                                "fp8_e5m2", use_mla=True, use_sparse=True)
    item = _item(crash.exit_cause(_v1_tail(version, deepseek), "vllm", version))
    assert item.status == OK and not item.recover and "recover" not in item.fix
    assert "not on the KV-cache dtype" in item.reason
    refused = engine_lines.vllm_selector_error(version, {"FLASH_ATTN": [dtype_reason]}, "fp8_e5m2")
    item = _item(crash.exit_cause(_v1_tail(version, refused), "vllm", version))
    assert item.status == REJECTED and item.recover and "kubectl kvcache recover b" in item.fix
    # a crash whose words do not name the dtype leaves its verdict alone
    item = _item(crash.ExitCause(crash.STARTUP, "torch.OutOfMemoryError: CUDA out of memory."))
    assert item.status == OK and not item.recover


def _rate(rows):
    read = wrong = 0
    failures = []
    for row in rows:
        cause = crash.exit_cause(row["tail"], row["engine"], row["version"])
        line = cause.line if cause is not None else None
        same_line = line is not None and row["line"] is not None and line.startswith(row["line"][:100])
        if row["line"] is None:
            same_line = line is None
        blamed = cause.blame if cause is not None else None
        if (line is not None and not same_line) or (blamed is not None and blamed != row["blame"]):
            wrong += 1
            failures.append((row["url"], line, blamed))
        elif same_line and blamed == row["blame"]:
            read += 1
        else:
            failures.append((row["url"], line, blamed))
    return read, wrong, failures


def test_the_tuned_corpus():
    read, wrong, failures = _rate(TUNED)
    print(f"crash tails (tuned): {read}/{len(TUNED)} read, {wrong} wrong")
    assert wrong == 0, failures
    assert read >= 0.9 * len(TUNED), failures
