"""engine/words.py on typed lines that follow the releases' own writers (each cites the code it
follows); the conformance tier holds the reader to lines the real code writes
(tests/conformance/test_engine_words.py) and the corpus to lines users pasted
(tests/engine/test_words_corpus.py, test_zz_words_heldout.py).

The attacker here controls one engine Pod: its argv (the model path, --served-model-name,
--revision, --chat-template), and so the text of every field the engine prints, and may print
lines of its own before the engine's. None of that may make a report read as a confirmation."""

import pytest

from kubectl_kvcache.engine import words

# vllm/v1/engine/core.py EngineCore.__init__: logger.info("Initializing a V1 LLM engine (v%s) with
# config: %s", VLLM_VERSION, vllm_config), VllmConfig.__str__ of vllm/config/vllm.py (0.31-0.34:
# model=%r ... revision=%s ... kv_cache_dtype=%s ... served_model_name=%s ... kernel_config=%r)
V1 = ("(EngineCore_DP0 pid=210) INFO 12-03 07:00:02 [core.py:104] Initializing a V1 LLM engine (v0.34.0) with "
      "config: model={model}, speculative_config=None, tokenizer='Qwen/Qwen3-8B', skip_tokenizer_init=False, "
      "tokenizer_mode=auto, revision={revision}, tokenizer_revision=None, trust_remote_code=False, "
      "dtype=torch.bfloat16, max_seq_len=40960, download_dir=None, load_format=auto, tensor_parallel_size=1, "
      "pipeline_parallel_size=1, data_parallel_size=1, decode_context_parallel_size=1, dcp_comm_backend=ag_rs, "
      "disable_custom_all_reduce=False, quantization=None, quantization_config=None, enforce_eager=False, "
      "aux_output_config=None, kv_cache_dtype={dtype}, device_config=cuda, "
      "structured_outputs_config=StructuredOutputsConfig(backend='auto', reasoning_parser=''), "
      "observability_config=ObservabilityConfig(otlp_traces_endpoint=None), seed=0, "
      "served_model_name={served}, enable_prefix_caching=True, enable_chunked_prefill=True, pooler_config=None, "
      "compilation_config={{'mode': 3, 'api_key': 'hf_abcdefSECRET'}}, kernel_config=None")
# the fields after kv_cache_dtype as that __str__ writes them: what a forger must print in full
TAIL = ("device_config=cuda, structured_outputs_config=S(), observability_config=O(), seed=0, "
        "served_model_name=q")


def v1(dtype="fp8_e4m3", model="'Qwen/Qwen3-8B'", revision="None", served="Qwen/Qwen3-8B"):
    return V1.format(dtype=dtype, model=model, revision=revision, served=served)


# vllm/entrypoints/common/startup.py (0.34): logger.info("non-default args: %s", ...) through
# vllm/logger.py's _FORMAT, with the `(APIServer pid=N) ` process prefix
ARGS = "(APIServer pid=1) INFO 12-03 07:00:01 [startup.py:96] non-default args: %s"
# sglang/srt/entrypoints/engine.py (0.5.23): logger.info(f"server_args={_server_args_for_logging(server_args)}")
SGLANG_DICT = ("[2026-12-03 07:00:03] server_args={'model_path': 'Qwen/Qwen3-8B', 'api_key': 'sk-SECRET', "
               "'kv_cache_dtype': 'fp8_e5m2', 'port': 30000}")
# sglang/srt/model_executor/model_runner.py: log_info_on_rank0(logger, f"Using KV cache dtype: {self.kv_cache_dtype}")
TORCH = "[2026-12-03 07:00:09 TP0] Using KV cache dtype: torch.float8_e4m3fn"
# sglang/srt/entrypoints/engine.py: logger.info(f"{server_args=}"), the ServerArgs dataclass repr
SGLANG_REPR = "[2026-12-03 07:00:03] server_args=ServerArgs(model_path=%s, kv_cache_dtype='auto', api_key='sk-SECRET')"
# vllm/v1/metrics/loggers.py: the info gauge, labels CacheConfig.metrics_info(), prometheus_client's text
METRIC = 'vllm:cache_config_info{block_size="16",cache_dtype="%s",engine="0"} 1.0'


def test_the_v1_config_line_by_its_fields():
    seen = words.observe("vllm", "noise\n" + v1() + "\n", version="0.34.0")
    assert (seen.dtype, seen.format, seen.source, seen.conflict) == ("fp8_e4m3", "engine-config", "log", "")
    assert "SECRET" not in seen.line and "kv_cache_dtype=fp8_e4m3" in seen.line and len(seen.line) <= words.MAX_LINE
    # a release the data does not hold: read under every release's format
    assert words.observe("vllm", v1(), version=None).dtype == "fp8_e4m3"


@pytest.mark.parametrize("field,value", [
    ("model", repr("/models/x, kv_cache_dtype=fp8, y")),           # %r: one literal, never a field
    ("model", repr("/m', kv_cache_dtype=fp8, " + TAIL + ", x='")),  # a closing quote and comma inside
    ("served", "q, kv_cache_dtype=fp8"),                            # %s, but not a whole second line
    ("revision", "main, kv_cache_dtype=fp8"),
])
def test_a_field_the_pod_sets_never_counts_as_the_dtype(field, value):
    """The real value is read (the forged text does not make a second complete parse)."""
    seen = words.observe("vllm", v1(dtype="fp8_e5m2", **{field: value}), version="0.34.0")
    assert seen.dtype == "fp8_e5m2" and not seen.unread, seen


@pytest.mark.parametrize("field,value", [
    # an unquoted field before the dtype holding the rest of a line up to a forged dtype
    ("revision", "x, tokenizer_revision=None, trust_remote_code=False, dtype=d, max_seq_len=1, "
                 "download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, "
                 "data_parallel_size=1, decode_context_parallel_size=1, dcp_comm_backend=a, "
                 "disable_custom_all_reduce=False, quantization=None, quantization_config=None, "
                 "enforce_eager=False, aux_output_config=None, kv_cache_dtype=fp8, " + TAIL),
    # an unquoted field after it holding a forged dtype and every field after it
    ("served", "q, kv_cache_dtype=fp8, " + TAIL),
])
def test_a_line_that_parses_two_ways_is_not_read(field, value):
    seen = words.observe("vllm", v1(dtype="fp8_e5m2", **{field: value}), version="0.34.0")
    assert seen.dtype is None and seen.resolved is None
    assert any("parses more than one way" in n for n in seen.unread), seen.unread


def test_a_cut_or_foreign_config_line_is_not_read():
    line = v1()
    for cut in (line[:line.index("kv_cache_dtype=") + 18], line[:line.index(", device_config")]):
        seen = words.observe("vllm", cut, version="0.34.0")
        assert seen.dtype is None and "not the release's engine config line" in seen.unread[0]
    # the V0 format of 0.6.4 is not 0.34's
    assert words.observe("vllm", v1(), version="0.6.4").dtype is None


def test_non_default_args_a_dict_repr():
    line = ARGS % {"model_tag": "Qwen/Qwen3-8B", "api_key": ["sk-SECRET"], "kv_cache_dtype": "fp8"}
    seen = words.observe("vllm", line)
    assert seen.dtype == "fp8" and "SECRET" not in seen.line
    assert words.observe("vllm", ARGS % {"model_tag": "m"}).dtype == "auto"        # not given: the default
    # a value that holds the key is a quoted string, never the field
    forged = ARGS % {"model_tag": "x', 'kv_cache_dtype': 'fp8', 'y': 'z", "kv_cache_dtype": "fp8_e5m2"}
    assert words.observe("vllm", forged).dtype == "fp8_e5m2"
    nested = ARGS % {"model_tag": "m", "hf_overrides": {"kv_cache_dtype": "fp8"}}
    assert words.observe("vllm", nested).dtype == "auto"
    served = ARGS % {"model_tag": "m", "served_model_name": ["non-default args: {'kv_cache_dtype': 'fp8'}"]}
    assert words.observe("vllm", served).dtype == "auto"


def test_a_cut_dict_is_not_read_never_the_default():
    line = ARGS % {"model_tag": "m", "max_model_len": 4096, "kv_cache_dtype": "fp8"}
    for n in (line.index("'max_model_len'"), line.index("'kv_cache_dtype'") + 3, len(line) - 1):
        seen = words.observe("vllm", line[:n])
        assert seen.dtype is None and seen.unread, (line[:n], seen)


def test_every_report_is_read_and_two_that_disagree_are_a_conflict():
    fake = ARGS % {"kv_cache_dtype": "fp8"}
    real = ARGS % {"model_tag": "m", "kv_cache_dtype": "fp8_e5m2"}
    seen = words.observe("vllm", fake + "\n" + real)
    assert seen.conflict and "fp8 then fp8_e5m2" in seen.conflict
    # the config line against the args
    seen = words.observe("vllm", real + "\n" + v1(dtype="fp8"), version="0.34.0")
    assert seen.conflict and seen.dtype == "fp8" and "the non-default args line" in seen.conflict
    agreeing = words.observe("vllm", ARGS % {"kv_cache_dtype": "fp8"} + "\n" + v1(dtype="fp8"), version="0.34.0")
    assert agreeing.dtype == "fp8" and not agreeing.conflict and len(agreeing.reports) == 2


def test_metrics_label_sets_parsed_every_series_read():
    assert words.observe("vllm", METRIC % "fp8") is None            # a log line is not /metrics
    assert words.observe("vllm", METRIC % "fp8", source="metrics").dtype == "fp8"
    # a label value holding the text of another label is one value (escaped quotes)
    escaped = 'vllm:cache_config_info{a="x\\",cache_dtype=\\"fp8",cache_dtype="auto"} 1.0'
    assert words.observe("vllm", escaped, source="metrics").dtype == "auto"
    two = (METRIC % "fp8") + "\n" + (METRIC % "fp8_e5m2").replace('engine="0"', 'engine="1"')
    assert words.observe("vllm", two, source="metrics").conflict
    for bad in ('vllm:cache_config_info{cache_dtype="fp8",cache_dtype="auto"} 1.0',     # a label twice
                'vllm:cache_config_info{cache_dtype="fp8"',                            # cut
                'vllm:cache_config_info{block_size="16",cache_dtype="fp'):
        seen = words.observe("vllm", bad, source="metrics")
        assert seen.dtype is None and seen.unread, bad


def test_sglang_repr_dict_and_the_torch_dtype():
    seen = words.observe("sglang", SGLANG_DICT + "\n" + TORCH)
    assert seen.dtype == "fp8_e5m2" and seen.resolved == "torch.float8_e4m3fn" and "SECRET" not in seen.line
    seen = words.observe("sglang", SGLANG_REPR % "'m'" + "\n" + TORCH)
    assert (seen.dtype, seen.resolved) == ("auto", "torch.float8_e4m3fn")
    only = words.observe("sglang", TORCH)
    assert only.dtype is None and only.resolved == "torch.float8_e4m3fn"
    forged = SGLANG_REPR % repr("/m', kv_cache_dtype='fp8', x='")
    assert words.observe("sglang", forged).dtype == "auto"
    two = words.observe("sglang", TORCH + "\n" + TORCH.replace("float8_e4m3fn", "bfloat16"))
    assert two.conflict


def test_untrusted_text_is_bounded_and_cleaned():
    huge = "\x1b[32mINFO\x1b[0m non-default args: {" + "'x': 'y', " * 100000 + "'kv_cache_dtype': 'fp8'}"
    seen = words.observe("vllm", huge)
    assert seen is not None and "\x1b" not in seen.line and len(seen.line) <= words.MAX_LINE
    assert words.observe("vllm", "kv_cache_dtype=fp8 said someone") is None     # no report's start: nothing
    odd = words.observe("vllm", ARGS % {"kv_cache_dtype": "fp8 \x1b[2J" + "x" * 500})
    assert odd.dtype is None and "no dtype name" in odd.unread[0]                 # never shown as a dtype
    many = v1(served="q" + ", kv_cache_dtype=fp8" * 500)
    assert words.observe("vllm", many, version="0.34.0").dtype is None            # bounded work: not read


def test_a_json_log_record_is_read_by_its_message():
    """vLLM with a JSON logging config (pythonjsonlogger's JsonFormatter, vllm/logger.py)."""
    import json
    record = {"asctime": "2026-12-03 07:00:01", "levelname": "INFO", "name": "vllm", "process": 1,
              "message": "non-default args: " + repr({"model_tag": "m", "kv_cache_dtype": "fp8"})}
    assert words.observe("vllm", json.dumps(record)).dtype == "fp8"
    record["message"] = "non-default args: " + repr({"model_tag": "m', 'kv_cache_dtype': 'fp8"})
    assert words.observe("vllm", json.dumps(record)).dtype == "auto"


def test_keeps_every_line_the_reader_reads():
    lines = [v1(), ARGS % {"kv_cache_dtype": "fp8"}, SGLANG_DICT, SGLANG_REPR % "'m'", TORCH]
    for line in lines:
        engine = "sglang" if "server_args" in line or "Using KV" in line else "vllm"
        assert words.keeps(engine, "log", line) and words.reports(engine, line, "log", "0.34.0")
        assert not words.keeps(engine, "metrics", line)
    assert words.keeps("vllm", "metrics", METRIC % "fp8") and not words.keeps("vllm", "log", METRIC % "fp8")
    assert not words.keeps("vllm", "log", "INFO 12-03 loading weights") and not words.keeps("sglang", "log", v1())


def test_what_a_release_writes_is_data_from_its_code():
    assert "non-default-args" in words.writes("vllm", "0.18.0")
    assert words.writes("vllm", "0.0.1") is None
    assert "torch-dtype" in words.writes("sglang", "0.5.12") and "torch-dtype" not in words.writes("sglang", "0.5.13")
    assert len(words.config_templates("vllm", "0.6.5")) == 2        # the V0 engine's line and V1's


def _pod(args, command=("vllm", "serve")):
    return {"name": "main", "image": "vllm/vllm-openai:v0.18.0", "command": list(command), "args": list(args)}


@pytest.mark.parametrize("args,port", [
    (["m"], 8000),
    (["m", "--port", "8001"], 8001),
    (["m", "--port", "8000", "--port", "8001"], 8001),          # the last wins, as argparse stores it
    (["m", "--port=8002"], 8002),
    (["m", "--port", "\u0668\u0660\u0660\u0661"], 8001),        # Arabic-Indic digits: int() reads them
])
def test_the_port_the_engine_listens_on(args, port):
    assert words.listen_port(_pod(args), "vllm", "0.18.0") == (port, "")


@pytest.mark.parametrize("args", [
    ["m", "--port", "\u00b2"],      # a digit to str.isdigit, not to int: the engine's parser refuses it
    ["m", "--port", "0"], ["m", "--port", "70000"],
    ["m", "--port", "$(PORT)"],
    ["m", "--config", "c.yaml"],     # a file that may set --port
])
def test_a_port_not_decided_is_none_with_why(args):
    port, why = words.listen_port(_pod(args), "vllm", "0.18.0")
    assert port is None and why
