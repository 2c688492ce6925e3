"""judge/capacity: what a KV-cache dtype change does to a replica's capacity, against its max length.

The capacities are Capacity records as helper A's reader builds them (engine/capacity.py), from
real start-up logs in public threads:
- mitchross/talos-argocd-proxmox PR 1995 (vLLM, fp8_e4m3, --max-model-len 262144): "GPU KV cache
  size: 302,921 tokens";
- vllm-project/vllm issue 10517 (vLLM V0, Llama-3.1-8B-Instruct bf16 on an RTX 3090): "# GPU
  blocks: 1478" (block size 16) and "The model's max seq len (29000) is larger than the maximum
  number of tokens that can be stored in KV cache (23648)";
- vllm-project/vllm issue 25350 (fp8, --max-model-len 100000): "GPU KV cache size: 230,528 tokens".
"""

from fractions import Fraction

import pytest

from kubectl_kvcache.engine.capacity import BLOCKS, TOKENS, Capacity
from kubectl_kvcache.engine.words import Observed
from kubectl_kvcache.judge import capacity
from kubectl_kvcache.judge.verify import Item
from kubectl_kvcache.operator.records import Role


def _vllm(version, *args):
    return {"name": "main", "image": f"vllm/vllm-openai:v{version}", "command": ["vllm", "serve", "m", *args]}


def _sglang(version, *args):
    return {"name": "main", "image": f"lmsysorg/sglang:v{version}",
            "command": ["python3", "-m", "sglang.launch_server", "--model-path", "m", *args]}


def _item(engine, version, effective, spec, cap=None, observed=None, occurrences=(), winner=None, owner=None,
          role=None, takeover=False):
    return Item("llm-prod", "p-0", "main", owner, role, engine, version, "b1", effective, effective, "OK", "",
                occurrences=list(occurrences), winner=winner, container_spec=spec, capacity=cap, observed=observed,
                takeover=takeover)


@pytest.mark.parametrize("version", ["0.11.0", "0.24.0", "0.34.0"])
def test_fp8_at_262144_does_not_fit_at_bf16_and_vllm_refuses_to_start(version):
    spec = _vllm(version, "--kv-cache-dtype", "fp8_e4m3", "--max-model-len", "262144")
    item = _item("vllm", version, "fp8_e4m3", spec, Capacity(302921, TOKENS, source="log"))
    ch = capacity.change(item, "bfloat16")
    assert (ch.tokens, ch.predicted, ch.ratio) == (302921, 151460, Fraction(1, 2))
    assert (ch.max_len, ch.max_len_source) == (262144, "--max-model-len")
    assert ch.fits is False and ch.consequence == capacity.REFUSES_START and ch.warns
    assert ch.advice[0] == "--max-model-len at most about 151460 (what the new cache holds)"
    assert "keep the 1-byte cache" in ch.advice[1]
    assert "vLLM refuses to start" in ch.summary()
    d = ch.to_dict()
    assert d["predictedTokens"] == 151460 and d["fits"] is False and d["ratio"] == "1/2"


def test_the_max_length_is_read_as_the_release_s_parser_reads_the_argv():
    # the last occurrence wins, `--opt=value` and an abbreviation argparse accepts
    spec = _vllm("0.11.0", "--max-model-len", "4096", "--kv-cache-dtype", "fp8", "--max-model=262144")
    item = _item("vllm", "0.11.0", "fp8", spec, Capacity(302921, TOKENS))
    assert capacity.max_length(item)[:2] == (262144, "--max-model-len")


def test_without_the_flag_the_logged_max_length_decides():
    spec = _vllm("0.11.0", "--kv-cache-dtype", "fp8")
    item = _item("vllm", "0.11.0", "fp8", spec, Capacity(230528, TOKENS, max_len=100000))
    ch = capacity.change(item, "bfloat16")
    assert (ch.predicted, ch.max_len, ch.max_len_source, ch.fits) == (115264, 100000, "logged", True)
    assert ch.consequence == capacity.FITS and not ch.warns


def test_auto_max_length_is_fitted_by_the_engine_itself():
    spec = _vllm("0.34.0", "--kv-cache-dtype", "fp8", "--max-model-len", "auto")
    item = _item("vllm", "0.34.0", "fp8", spec, Capacity(302921, TOKENS))
    ch = capacity.change(item, "bfloat16")
    assert ch.fits is True and ch.max_len is None and "fits its max length to the memory" in ch.reason


def test_v0_blocks_auto_at_bf16_to_fp8_makes_29000_fit():
    # issue 10517: 1478 blocks x 16 = 23648 tokens at the model's bf16 (auto), max length 29000
    spec = _vllm("0.6.4", "--max-model-len", "29000")
    bf16 = Observed(None, "torch.bfloat16", "log", "engine-config", "")
    item = _item("vllm", "0.6.4", "auto", spec, Capacity(23648, BLOCKS, blocks=1478, block_size=16), observed=bf16)
    ch = capacity.change(item, "fp8")
    assert (ch.predicted, ch.fits) == (47296, True)
    # and the way back to auto: its size is the model's dtype or the checkpoint's KV quantization,
    # which the replica running fp8 does not report: UNKNOWN, the bf16 case said as a condition
    at_fp8 = _item("vllm", "0.6.4", "fp8", _vllm("0.6.4", "--kv-cache-dtype", "fp8", "--max-model-len", "29000"),
                   Capacity(47296, TOKENS), observed=bf16)
    back = capacity.change(at_fp8, "auto")
    assert back.predicted is None and back.fits is None
    assert "would hold about 23,648 tokens, less than the max length 29,000" in back.reason


def test_sglang_starts_and_refuses_long_inputs():
    spec = _sglang("0.5.23", "--kv-cache-dtype", "fp8_e4m3", "--context-length", "262144")
    item = _item("sglang", "0.5.23", "fp8_e4m3", spec, Capacity(302921, TOKENS))
    ch = capacity.change(item, "bf16")
    assert ch.fits is False and ch.consequence == capacity.REFUSES_LONG
    assert ch.advice[0].startswith("--context-length at most about 151460")
    assert "SGLang refuses inputs longer" in ch.summary()


def test_nothing_observed_is_not_read_never_a_guess():
    spec = _vllm("0.11.0", "--kv-cache-dtype", "fp8", "--max-model-len", "262144")
    ch = capacity.change(_item("vllm", "0.11.0", "fp8", spec, None), "bfloat16")
    assert ch.consequence == capacity.NOT_READ and ch.fits is None and ch.predicted is None
    assert ch.summary() == "fp8 -> bfloat16: capacity not read (--observe reads it)"
    ch = capacity.change(_item("vllm", "0.11.0", "fp8", spec, Capacity(None, TOKENS)), "bfloat16")
    assert ch.consequence == capacity.NOT_READ


def test_to_auto_without_the_model_dtype_is_unknown_with_the_16_bit_case_said_as_a_condition():
    spec = _vllm("0.11.0", "--kv-cache-dtype", "fp8", "--max-model-len", "262144")
    ch = capacity.change(_item("vllm", "0.11.0", "fp8", spec, Capacity(302921, TOKENS)), "auto")
    assert ch.fits is None and ch.consequence == capacity.UNKNOWN and ch.predicted is None
    assert "did not report" in ch.reason and "at a 16-bit model dtype it would hold about 151,460" in ch.reason
    assert "less than the max length 262,144" in ch.reason


def test_fp8_ds_mla_needs_the_model_shape():
    spec = _vllm("0.11.0", "--kv-cache-dtype", "fp8_ds_mla", "--max-model-len", "163840")
    ch = capacity.change(_item("vllm", "0.11.0", "fp8_ds_mla", spec, Capacity(500000, TOKENS)), "bfloat16")
    assert ch.fits is None and ch.consequence == capacity.UNKNOWN and "656 bytes per token" in ch.reason


def _role(extra=()):
    return Role("server", "server", None, (), tuple(extra), ())


def test_who_moves_with_the_binding_and_who_keeps_its_own_flag():
    cmd = ["vllm", "serve", "m", "--kv-cache-dtype", "fp8"]
    rendered = [{"source": "command", "index": 4, "text": "fp8", "value": "fp8"}]
    item = _item("vllm", "0.11.0", "fp8", {"name": "main", "command": cmd}, occurrences=rendered, winner=0,
                 owner={"name": "chat"}, role="server")
    assert capacity.moved_to(item, _role(), "bfloat16") == "bfloat16"
    assert capacity.after_setting_off(item, _role()) == "auto"
    own = ["--kv-cache-dtype", "fp8_e5m2"]
    mine = rendered + [{"source": "command", "index": 6, "text": "fp8_e5m2", "value": "fp8_e5m2"}]
    item = _item("vllm", "0.11.0", "fp8_e5m2", {"name": "main", "command": cmd + own}, occurrences=mine, winner=1,
                 owner={"name": "chat"}, role="server")
    assert capacity.moved_to(item, _role(own), "bfloat16") is None      # its own flag still wins
    assert capacity.after_setting_off(item, _role(own)) is None
    taken = _item("vllm", "0.11.0", "fp8", {"name": "main", "command": cmd}, occurrences=rendered, winner=0,
                  owner={"name": "chat"}, role="server", takeover=True)
    assert capacity.moved_to(taken, _role(), "bfloat16") is None        # the operator renders nothing for it


def test_warnings_name_the_deployment_both_capacities_the_max_length_and_what_fits():
    spec = _vllm("0.11.0", "--kv-cache-dtype", "fp8", "--max-model-len", "262144")
    a = _item("vllm", "0.11.0", "fp8", spec, Capacity(302921, TOKENS), owner={"name": "chat"}, role="server")
    b = _item("vllm", "0.11.0", "fp8", spec, Capacity(310000, TOKENS), owner={"name": "chat"}, role="server")
    b.pod = "p-1"
    c = _item("vllm", "0.11.0", "fp8", spec, None, owner={"name": "other"}, role="server")
    pairs = capacity.changes([a, b, c], lambda i: "bfloat16")
    lines = capacity.warnings(pairs)
    assert len(lines) == 2
    assert lines[0].startswith("ModelDeployment llm-prod/chat role server (Pod p-0, vllm 0.11.0): fp8 -> bfloat16")
    assert "from 302,921 to about 151,460 tokens, below its max length 262,144 (--max-model-len)" in lines[0]
    assert "vLLM refuses to start" in lines[0] and "--max-model-len at most about 151460" in lines[0]
    assert lines[1].startswith("ModelDeployment llm-prod/other role server: KV-cache capacity not read")
    view = capacity.view(pairs, "capacity not read (x)")
    assert [v["pod"] for v in view] == ["p-0", "p-1", "p-0"] and view[2]["reason"] == "capacity not read (x)"
    assert capacity.changes([a], lambda i: None) == [] and capacity.changes([a], lambda i: "fp8") == []


def test_another_spelling_of_the_same_size_moves_nothing_even_unread():
    spec = _vllm("0.29.0", "--kv-cache-dtype", "fp8", "--max-model-len", "32768")
    for cap in (None, Capacity(40000, TOKENS)):
        ch = capacity.change(_item("vllm", "0.29.0", "fp8", spec, cap), "fp8_e4m3")
        assert ch.ratio == 1 and not ch.warns
        # unread: nothing moves, and whether it fits now was not read; read: held to its max length
        assert (ch.fits, ch.consequence) == ((None, capacity.STAYS) if cap is None else (True, capacity.FITS))
        assert "take 1 byte an element in vllm 0.29.0: the capacity stays" in ch.summary()
    assert capacity.warnings(capacity.changes([_item("vllm", "0.29.0", "fp8", spec, None)], lambda i: "fp8_e4m3")) == []


def test_vllm_s_logged_concurrency_decides_for_a_hybrid_model():
    # mitchross/talos-argocd-proxmox PR 1995 (Qwen3.8, 16 of 64 layers full attention): "GPU KV cache
    # size: 302,921 tokens", "Maximum concurrency for 131,072 tokens per request: 2.31x"
    spec = _vllm("0.24.0", "--kv-cache-dtype", "fp8_e4m3", "--max-model-len", "131072")
    cap = Capacity(302921, TOKENS, max_len=131072, concurrency=2.31)
    ch = capacity.change(_item("vllm", "0.24.0", "fp8_e4m3", spec, cap), "bfloat16")
    assert ch.fits is True and "becomes about 1.16x" in ch.reason
    # at 1.99x, half is 0.995x: too close to 1 for a figure logged with two decimals
    near = Capacity(260000, TOKENS, max_len=131072, concurrency=1.99)
    ch = capacity.change(_item("vllm", "0.24.0", "fp8_e4m3", spec, near), "bfloat16")
    assert ch.fits is None and "too close to 1" in ch.reason
    low = Capacity(300000, TOKENS, max_len=131072, concurrency=1.5)
    ch = capacity.change(_item("vllm", "0.24.0", "fp8_e4m3", spec, low), "bfloat16")
    assert ch.fits is False and ch.consequence == capacity.REFUSES_START
    # 150,000 tokens would hold 131,072 by the token figure (a hybrid model's blocks x block size);
    # the engine's own concurrency for it (0.75x) says no, and decides
    line = capacity.warnings([(_item("vllm", "0.24.0", "fp8_e4m3", spec, low, owner={"name": "chat"},
                                     role="server"), ch)])[0]
    assert "and its logged concurrency for 131,072 tokens per request, 1.50x, becomes about 0.75x" in line
    assert "--max-model-len at most about 98304" in line


def test_a_future_auto_is_not_resolved_from_the_dtype_running_now():
    # SGLang reports the torch dtype of the cache it runs ("Using KV cache dtype: torch.float8_e4m3fn"):
    # that is fp8_e4m3's, not what auto would give after the change
    spec = _sglang("0.5.23", "--kv-cache-dtype", "fp8_e4m3", "--context-length", "262144")
    fp8 = Observed(None, "torch.float8_e4m3fn", "log", "torch-dtype", "")
    ch = capacity.change(_item("sglang", "0.5.23", "fp8_e4m3", spec, Capacity(302921, TOKENS), observed=fp8), "auto")
    assert ch.fits is None and ch.predicted is None and ch.consequence == capacity.UNKNOWN
    # running auto now, resolved to bf16: that is what auto is, and fp8_e4m3 doubles it
    bf16 = Observed(None, "torch.bfloat16", "log", "torch-dtype", "")
    ch = capacity.change(_item("sglang", "0.5.23", "auto", spec, Capacity(150000, TOKENS), observed=bf16), "fp8_e4m3")
    assert (ch.predicted, ch.fits) == (300000, True)
