"""engine/words.py on the formats whose lines cannot be produced by the real code here (the
conformance tier holds the reader to the lines it can: tests/conformance/test_engine_words.py).
Each typed line cites the format string it follows."""

from kubectl_kvcache.engine import words

# vllm/v1/engine/core.py EngineCore.__init__: "Initializing a V1 LLM engine (v%s) with config: %s"
# with VllmConfig.__str__ (vllm/config/vllm.py: f"... kv_cache_dtype={self.cache_config.cache_dtype}, ...")
ENGINE_CONFIG = ("INFO 12-03 07:00:02 [core.py:104] Initializing a V1 LLM engine (v0.18.0) with config: "
                 "model='Qwen/Qwen3-8B', speculative_config=None, tokenizer='Qwen/Qwen3-8B', "
                 "dtype=torch.bfloat16, max_seq_len=40960, kv_cache_dtype=fp8_e4m3, device_config=cuda, "
                 "hf_token=hf_abcdefSECRET, seed=0")
# sglang/srt/entrypoints/engine.py (0.5.23): logger.info(f"server_args={_server_args_for_logging(server_args)}")
SGLANG_DICT = ("[2026-12-03 07:00:03] server_args={'model_path': 'Qwen/Qwen3-8B', 'api_key': 'sk-SECRET', "
               "'kv_cache_dtype': 'fp8_e5m2', 'port': 30000}")
# sglang/srt/model_executor/model_runner.py: log_info_on_rank0(logger, f"Using KV cache dtype: {self.kv_cache_dtype}")
TORCH = "[2026-12-03 07:00:09 TP0] Using KV cache dtype: torch.float8_e4m3fn"
SGLANG_REPR = "[2026-12-03 07:00:03] server_args=ServerArgs(model_path='m', kv_cache_dtype='auto', api_key='sk-SECRET')"


def test_vllm_engine_config_line():
    seen = words.observe("vllm", "noise\n" + ENGINE_CONFIG + "\n")
    assert seen.dtype == "fp8_e4m3" and seen.format == "engine-config" and seen.source == "log"
    assert "SECRET" not in seen.line and "kv_cache_dtype=fp8_e4m3" in seen.line


def test_the_engines_config_wins_over_its_arguments():
    args = "non-default args: {'kv_cache_dtype': 'fp8'}"
    assert words.observe("vllm", args + "\n" + ENGINE_CONFIG.replace("fp8_e4m3", "fp8_ds_mla")).dtype == "fp8_ds_mla"


def test_sglang_dict_and_the_torch_dtype_auto_resolved_to():
    seen = words.observe("sglang", SGLANG_DICT + "\n" + TORCH)
    assert seen.dtype == "fp8_e5m2" and seen.resolved == "torch.float8_e4m3fn" and "SECRET" not in seen.line
    seen = words.observe("sglang", SGLANG_REPR + "\n" + TORCH)
    assert (seen.dtype, seen.resolved) == ("auto", "torch.float8_e4m3fn")
    only = words.observe("sglang", TORCH)
    assert only.dtype is None and only.resolved == "torch.float8_e4m3fn"


def test_metrics_only_from_metrics():
    page = 'vllm:cache_config_info{block_size="16",cache_dtype="fp8"} 1.0'
    assert words.observe("vllm", page) is None            # a log line that looks like it is not it
    assert words.observe("vllm", page, source="metrics").dtype == "fp8"


def test_untrusted_text_is_bounded_and_cleaned():
    huge = "\x1b[32mINFO\x1b[0m non-default args: {" + "'x': 'y', " * 100000 + "'kv_cache_dtype': 'fp8'}"
    seen = words.observe("vllm", huge)
    assert seen is not None and "\x1b" not in seen.line and len(seen.line) <= words.MAX_LINE
    assert words.observe("vllm", "kv_cache_dtype=fp8 said someone") is None     # no anchor: not the engine's report


def test_what_a_release_writes_is_data_from_its_code():
    assert "non-default-args" in words.writes("vllm", "0.18.0")
    assert words.writes("vllm", "0.0.1") is None
    assert "torch-dtype" in words.writes("sglang", "0.5.12") and "torch-dtype" not in words.writes("sglang", "0.5.13")
