"""engine/capacity.py on lines users pasted in public threads (each cited) and on hostile text:
a forged report inside another line's value, a cut line, reports that disagree. The conformance
tier holds the reader to every line each release's own code writes
(tests/conformance/test_engine_capacity.py); these are the lines as users saw them.

The attacker controls one engine Pod: its argv (a model path, a served name) and so text inside
the engine's own lines, and may print lines of its own. None of it may become a number here
except a whole line of the release's format."""

import os

import pytest

from kubectl_kvcache.engine import capacity

# LMCache/LMCache issue 1739 (vLLM V1, October 2025: kv_cache_utils.py's two lines, the process prefix)
LMCACHE_1739 = ("(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [kv_cache_utils.py:864] GPU KV cache size: "
                "42,656 tokens\n"
                "(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [kv_cache_utils.py:868] Maximum concurrency for "
                "32,768 tokens per request: 1.30x\n")
# vllm-project/vllm PR 13596 (the change that printed tokens: 0.7's blocks line, then 0.8's)
VLLM_13596_BEFORE = ("INFO 02-20 00:01:02 kv_cache_utils.py:522] # GPU blocks: 127626\n"
                     "INFO 02-20 00:01:02 kv_cache_utils.py:525] Maximum concurrency for 2048 tokens per request: "
                     "997.08x\n")
VLLM_13596_AFTER = ("INFO 02-19 23:56:55 kv_cache_utils.py:524] GPU KV cache size: 2,042,016 tokens\n"
                    "INFO 02-19 23:56:55 kv_cache_utils.py:527] Maximum concurrency for 2,048 tokens per request: "
                    "997.08x\n")
# vllm-project/vllm issue 10517 (V0, pasted without the logger's prefix)
VLLM_10517 = "# GPU blocks: 1478, # CPU blocks: 2048\nMaximum concurrency for 29000 tokens per request: 0.82x\n"
# sgl-project/sglang issue 29575 (the scheduler's start-up line)
SGLANG_29575 = ("[2026-06-28 15:16:45] max_total_num_tokens=2086558, chunked_prefill_size=8192, "
                "max_prefill_tokens=16384, max_running_requests=33, context_len=256000, available_gpu_mem=17.22 GB\n")
# a public SGLang start-up log (find_string "KV Cache is allocated. #tokens: ", a hybrid model's TP ranks)
SGLANG_POOL = ("[2026-04-14 16:08:49 TP0] KV Cache is allocated. #tokens: 327310, K size: 2.50 GB, V size: 2.50 GB\n"
               "[2026-04-14 16:08:49 TP1] KV Cache is allocated. #tokens: 327310, K size: 2.50 GB, V size: 2.50 GB\n")


def test_vllm_v1_lines_from_a_public_log():
    got = capacity.observe("vllm", LMCACHE_1739, "log", "0.11.0")
    assert (got.tokens, got.basis, got.max_len, got.concurrency) == (42656, capacity.TOKENS, 32768, 1.30)
    assert got.line == "GPU KV cache size: 42,656 tokens" and not got.unread and not got.conflict


def test_the_v1_blocks_line_and_the_tokens_line_of_pr_13596():
    before = capacity.observe("vllm", VLLM_13596_BEFORE, "log", "0.7.3")
    assert (before.tokens, before.blocks, before.max_len) == (None, 127626, 2048)    # no block size said: no tokens
    after = capacity.observe("vllm", VLLM_13596_AFTER, "log", "0.8.0")
    assert (after.tokens, after.max_len, after.concurrency) == (2042016, 2048, 997.08)


def test_v0_blocks_with_the_block_size_from_metrics():
    page = 'vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="1478"} 1.0\n'
    found = capacity.reports("vllm", VLLM_10517, "log", "0.6.4") + capacity.reports("vllm", page, "metrics", "0.6.4")
    got = capacity.combine(found)
    assert (got.tokens, got.basis, got.blocks, got.block_size, got.max_len) == (23648, capacity.BLOCKS, 1478, 16, 29000)


def test_sglang_scheduler_line_and_pool_lines():
    got = capacity.observe("sglang", SGLANG_29575, "log", "0.5.4")
    assert (got.tokens, got.max_len, got.basis) == (2086558, 256000, capacity.TOKENS)
    pool = capacity.observe("sglang", SGLANG_POOL, "log", "0.5.4")
    assert pool.tokens == 327310 and not pool.conflict            # every rank says the same
    # both: the scheduler's max_total_num_tokens is taken; the pool's own figure never conflicts with it
    both = capacity.observe("sglang", SGLANG_POOL + SGLANG_29575, "log", "0.5.4")
    assert both.tokens == 2086558 and both.format.startswith("scheduler")


def test_the_engines_own_figure_over_blocks_times_block_size():
    """A hybrid or MLA model: the log's figure is derived from the groups (vLLM issues 51041, 51163)
    and differs from num_gpu_blocks x block_size; the engine's own figure is taken, and says so."""
    page = ('vllm:cache_config_info{block_size="256",cache_dtype="fp8_ds_mla",num_gpu_blocks="1208",'
            'kv_cache_size_tokens="150012"} 1.0\n')
    log = "(EngineCore pid=9) INFO 08-11 10:00:00 [kv_cache_utils.py:1711] GPU KV cache size: 150,012 tokens\n"
    found = capacity.reports("vllm", log, "log", "0.20.0") + capacity.reports("vllm", page, "metrics", "0.24.0")
    got = capacity.combine(found)
    assert (got.tokens, got.basis, got.blocks, got.block_size) == (150012, capacity.TOKENS, 1208, 256)
    assert got.tokens != got.blocks * got.block_size


def test_the_0_34_one_line_report_with_its_device():
    line = ("(EngineCore pid=9) INFO 12-01 10:00:00 [kv_cache_utils.py:1168] GPU KV cache size: 300,220 tokens, "
            "Maximum concurrency for 262,144 tokens per request: 1.15x\n")
    got = capacity.observe("vllm", line, "log", "0.34.0")
    assert (got.tokens, got.max_len, got.concurrency) == (300220, 262144, 1.15)
    host = capacity.observe("vllm", line.replace("GPU KV", "XPU + host KV"), "log", "0.34.0")
    assert host.tokens == 300220


@pytest.mark.parametrize("text", [
    # the report inside a config line's model path: the line goes on after it
    "INFO 03-20 10:00:00 [core.py:58] Initializing a V1 LLM engine (v0.8.0) with config: "
    "model='/m/] GPU KV cache size: 999 tokens', speculative_config=None, seed=0\n",
    # cut at the end (the read limit is said by the reader; a line the Pod ends early is no report)
    "INFO 03-20 10:00:00 [kv_cache_utils.py:634] GPU KV cache size: 652,14\n",
    # digits not grouped as f"{x:,}" writes them
    "INFO 03-20 10:00:00 [kv_cache_utils.py:634] GPU KV cache size: 65,2144 tokens\n",
    # something other than the logger's prefix before it
    "my own words GPU KV cache size: 999 tokens\n",
])
def test_forged_and_cut_text_is_never_a_number(text):
    got = capacity.observe("vllm", text, "log", "0.8.0")
    assert got is None or (got.tokens is None and got.max_len is None)
    if got is not None:
        assert got.unread and "not read" in got.unread[0]


def test_a_forged_line_inside_sglang_server_args_is_not_read():
    line = ("[2026-01-01 00:00:00] server_args=ServerArgs(model_path='/m/] max_total_num_tokens=999999, "
            "chunked_prefill_size=1, max_prefill_tokens=1, max_running_requests=1, context_len=1, "
            "available_gpu_mem=1.00 GB', tokenizer_path='/m', kv_cache_dtype='fp8_e4m3')\n")
    got = capacity.observe("sglang", line, "log", "0.5.4")
    assert got is None or got.tokens is None


def test_two_reports_that_disagree_are_a_conflict_and_no_number():
    log = ("INFO 03-20 10:00:00 [kv_cache_utils.py:634] GPU KV cache size: 652,144 tokens\n"
           "INFO 03-20 10:00:01 [kv_cache_utils.py:634] GPU KV cache size: 999,999 tokens\n")
    got = capacity.observe("vllm", log, "log", "0.8.0")
    assert got.tokens is None and "652144" in got.conflict and "999999" in got.conflict
    # the log against /metrics
    page = 'vllm:cache_config_info{block_size="16",num_gpu_blocks="40759",kv_cache_size_tokens="1000"} 1.0\n'
    found = capacity.reports("vllm", log.splitlines()[0] + "\n", "log", "0.24.0") + \
        capacity.reports("vllm", page, "metrics", "0.24.0")
    both = capacity.combine(found)
    assert both.tokens is None and both.conflict and "its /metrics" in both.conflict


def test_a_metric_label_that_is_no_number_is_not_read():
    page = 'vllm:cache_config_info{block_size="16",num_gpu_blocks="12x"} 1.0\n'
    got = capacity.observe("vllm", page, "metrics", "0.11.0")
    assert got.tokens is None and "num_gpu_blocks" in got.unread[0]
    assert capacity.observe("vllm", 'vllm:cache_config_info{block_size="16",num_gpu_blocks="None"} 1.0\n',
                            "metrics", "0.11.0") is not None


def test_keeps_holds_every_format_start_and_nothing_else():
    for line in (LMCACHE_1739 + VLLM_13596_BEFORE + VLLM_10517).splitlines():
        assert capacity.keeps("vllm", "log", line), line
    assert capacity.keeps("sglang", "log", SGLANG_29575) and capacity.keeps(None, "log", SGLANG_POOL)
    assert not capacity.keeps("vllm", "log", "INFO 03-20 [loader.py:1] Loading weights took 14.99 GB")
    assert capacity.keeps("vllm", "metrics", 'vllm:cache_config_info{block_size="16"} 1.0')
    assert not capacity.keeps("sglang", "metrics", 'vllm:cache_config_info{block_size="16"} 1.0')


def test_a_release_the_data_does_not_hold_reads_under_every_format():
    got = capacity.observe("vllm", LMCACHE_1739, "log", "9.9.9")
    assert got.tokens == 42656 and capacity.formats("vllm", "9.9.9")


# A whole vLLM 0.8.2 start-up log from its first line (a public file found with the search tools:
# find_string "[kv_cache_utils.py", id 4795272142; single GPU, 4 weight shards), the user's own
# lines (pydub warnings) included: where the capacity lines fall in the head the plugin reads.
WHOLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "capacity_logs", "vllm-0.8.2-orpheus.log")


def test_a_whole_public_log_read_end_to_end_within_the_head():
    from kubectl_kvcache.load.engine_words import HEAD_BYTES

    with open(WHOLE, "rb") as f:
        raw = f.read()
    at = raw.index(b"GPU KV cache size")
    assert at < 6 * 1024 < HEAD_BYTES           # measured: 4.7 KiB into the head, the bound is 64 KiB
    got = capacity.observe("vllm", raw[:HEAD_BYTES].decode(), "log", "0.8.2")
    assert (got.tokens, got.max_len, got.concurrency, got.basis) == (280480, 131072, 2.14, capacity.TOKENS)
    kept = [ln for ln in raw.decode().splitlines() if capacity.keeps("vllm", "log", ln)]
    assert len(kept) == 2       # only the two capacity lines are kept of the head's 36


def test_the_engine_config_lines_max_seq_len_is_the_max_length_of_last_resort():
    """vLLM's config line (its release's own format, engine/words.py) holds max_seq_len=: the max
    length where no capacity line says it (releases before 0.6.3, a line beyond the head)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("words_lines", os.path.join(os.path.dirname(WHOLE), "..",
                                                                              "test_words.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    V1 = module.V1      # vLLM 0.31-0.34's config line (VllmConfig.__str__), as tests/engine/test_words.py has it
    line = V1.format(model="'Qwen/Qwen3-8B'", revision="None", dtype="fp8", served="Qwen/Qwen3-8B") + "\n"
    got = capacity.observe("vllm", line, "log", "0.34.0")
    assert (got.tokens, got.max_len) == (None, 40960)
    # a revision or served name holding `max_seq_len=999` (the Pod's own text): the release's format
    # puts the real field between fixed literals, so the forgery is no parse of it: the real value
    for field in ("revision", "served"):
        fields = {"model": "'m'", "revision": "None", "dtype": "fp8", "served": "q",
                  field: "x, max_seq_len=999, download_dir=None"}
        assert capacity.observe("vllm", V1.format(**fields) + "\n", "log", "0.34.0").max_len == 40960
    # the capacity line's own max length wins
    with open(WHOLE, encoding="utf-8") as f:
        whole = capacity.observe("vllm", f.read(), "log", "0.8.2")
    assert whole.max_len == 131072 and whole.format.startswith("kv-cache-size")
