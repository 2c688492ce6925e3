"""tests/cluster/engine_lines.py (what the kubelet stand-in serves) held to the oracle: the SGLang
`server_args=` line and argparse rejection it builds from a release's own ServerArgs and parser
say what the real entry point (`python -m sglang.launch_server`, oracle.py) decides for the same
argv: the same kv_cache_dtype when it starts, the same error when it refuses."""

import importlib.util
import os

import pytest

from client import OracleProcess

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "kvcache_engine_lines", os.path.join(HERE, "..", "cluster", "engine_lines.py"))
engine_lines = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(engine_lines)

DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bf16", "bfloat16", "fp9")


@pytest.mark.parametrize("version", ["0.5.12", "0.5.18"])
def test_sglang_lines_agree_with_the_real_entry_point(version):
    oracle = OracleProcess("sglang", version)
    try:
        for dtype in DTYPES:
            argv = ["--model-path", "m", "--kv-cache-dtype", dtype]
            real = oracle.ask({"entry": "launch_server", "argv": argv})
            if real["outcome"] == "ok":
                line = engine_lines.sglang_startup_log(version, argv)
                assert f"kv_cache_dtype={real['value']!r}" in line, (dtype, line[:200])
            else:
                stderr, code = engine_lines.sglang_rejection(version, argv)
                assert code == 2
                ours = stderr.splitlines()[-1].split(": error: ", 1)[1]
                assert ours == real["error"].split(": error: ", 1)[1], dtype
    finally:
        oracle.close()


def test_vllm_choices_and_backend_lists_come_from_the_release():
    assert "bfloat16" in engine_lines.vllm_cache_dtypes("0.11.2")
    assert engine_lines.vllm_startup_fails("0.11.2", "bfloat16")      # no backend lists it
    assert not engine_lines.vllm_startup_fails("0.18.0", "bfloat16")  # the base class does from 0.15
    assert not engine_lines.vllm_startup_fails("0.11.2", "fp8")
    stderr, code = engine_lines.vllm_rejection("0.18.0", "fp9")
    assert code == 2 and "invalid choice: 'fp9'" in stderr.splitlines()[-1]
