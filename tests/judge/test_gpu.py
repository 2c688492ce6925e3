"""The GPU decides (engine/attention.on_gpu over engine/gpus.json; judge/gpu.py): the real cases.

- vLLM issue 26431: an RTX 3090 (compute capability 8.6) on vLLM 0.11.0 with --kv-cache-dtype fp8
  dies with "type fp8e4nv not supported in this architecture" (0.11.0's get_attn_backend_cls
  sends fp8 on SM 8.x but not 9.0 to TRITON_ATTN; Triton's fp8e4nv needs SM 8.9).
- vLLM PR 35720: a Tesla V100-DGXS-32GB (7.0) on vLLM 0.16.0, Llama-3.1-8B, kv_cache_dtype fp8
  crashes: FLASH_ATTN needs 8.0, FlashInfer 7.5, so TRITON_ATTN is picked.
- 0.24.0 on the same 3090 picks FlashInfer (8.0-12.1, fp8 listed) and runs.
- an H100 (9.0) starts fp8 on each; a Node without GFD labels leaves it UNKNOWN naming the label.
GPUs as GFD labels them (tests/engine/test_gpu_labels.py cites the label sets).
"""

import pytest

from kubectl_kvcache import engine
from kubectl_kvcache.engine import attention
from kubectl_kvcache.engine.kvparse import OK, REJECTED, START_UP, UNKNOWN, Parse
from kubectl_kvcache.judge import gpu as judge_gpu
from kubectl_kvcache.judge.checks.engines import EngineAt, SPEC_VERSION, suggest_dtype
from kubectl_kvcache.judge.verify import OK as ROW_OK, Item


def gfd(product, major, minor, family=None):
    labels = {"nvidia.com/gpu.product": product, "nvidia.com/gpu.compute.major": str(major),
              "nvidia.com/gpu.compute.minor": str(minor), "nvidia.com/gpu.count": "1"}
    return engine.gpu_from_labels(labels | ({"nvidia.com/gpu.family": family} if family else {}))


RTX3090 = gfd("NVIDIA-GeForce-RTX-3090", 8, 6, "ampere")
RTX4090 = gfd("NVIDIA-GeForce-RTX-4090", 8, 9, "ada-lovelace")
V100 = gfd("Tesla-V100-DGXS-32GB", 7, 0, "volta")
H100 = gfd("NVIDIA-H100-80GB-HBM3", 9, 0, "hopper")
UNLABELLED = engine.gpu_from_labels({"kubernetes.io/arch": "amd64"})
MIG = engine.gpu_from_labels({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
                              "nvidia.com/mig.strategy": "single"})


def v(text):
    return engine.parse_version(text)


@pytest.mark.parametrize("version, gpu, outcome", [
    ("0.11.0", RTX3090, REJECTED),      # vLLM issue 26431
    ("0.16.0", V100, REJECTED),         # vLLM PR 35720
    ("0.24.0", RTX3090, OK),            # FlashInfer picked
    ("0.11.0", H100, OK),
    ("0.16.0", H100, OK),
    ("0.24.0", H100, OK),
    ("0.11.0", RTX4090, OK),            # 8.9: Triton's fp8e4nv is there
])
def test_the_real_cases(version, gpu, outcome):
    parsed = Parse(OK, "fp8", None, "the last --kv-cache-dtype wins", [], 0)
    got = attention.after_parse(parsed, "vllm", v(version), gpu=gpu)
    assert got.outcome == outcome, got
    if outcome == REJECTED:
        assert got.error == START_UP
        assert gpu.product in got.reason and "TRITON_ATTN" in got.reason and "8.9" in got.reason


@pytest.mark.parametrize("version, gpu, verdict", [
    ("0.24.0", RTX3090, attention.STARTS), ("0.16.0", H100, attention.STARTS), ("0.24.0", H100, attention.STARTS),
    # 0.11.0 before the lists: a Hopper's pick (FA3 or FlexAttention) is not read; an MLA model's neither
    ("0.11.0", H100, attention.UNDECIDED), ("0.11.0", RTX4090, attention.UNDECIDED),
])
def test_what_is_known_to_start_is_what_may_be_proposed(version, gpu, verdict):
    assert attention.check(v(version), "fp8", gpu=gpu).verdict == verdict


def test_the_refusal_quotes_what_each_release_says():
    """Before 0.24.0 Triton fails to compile; from 0.24.0 TritonAttentionImpl raises its own error."""
    assert "type fp8e4nv not supported in this architecture" in attention.check(v("0.11.0"), "fp8", gpu=RTX3090).reason
    said = attention.check(v("0.24.0"), "fp8", gpu=V100)
    assert said.verdict == attention.UNDECIDED and said.cause.code == "start-up"   # V100: MLA models run TRITON_MLA
    assert "requires SM89+" in attention._fails(v("0.24.0"), "fp8", V100, "TRITON_ATTN",
                                                attention.gpu_facts(v("0.24.0")))


@pytest.mark.parametrize("gpu, label", [(UNLABELLED, "nvidia.com/gpu.compute.major"),
                                        (MIG, "nvidia.com/gpu.compute.major")])
def test_a_missing_label_is_unknown_naming_it(gpu, label):
    got = attention.check(v("0.11.0"), "fp8", gpu=gpu)
    assert got.verdict == attention.UNDECIDED and got.cause.code == "gpu" and got.cause.subject == label
    assert label in got.reason


def test_what_the_gpu_does_not_decide_is_left_alone():
    assert attention.check(v("0.11.0"), "auto", gpu=RTX3090).verdict == attention.STARTS
    # 0.10.x: arg_utils' oracle picks V0 or V1 on the dtype: not modelled. Without a GPU the parse's
    # verdict stands as before; asked about a GPU it is not "starts" (a kernel's own check may refuse
    # it there: vLLM 0.8.5 on an H800, "FlashMLA V1 with FP8 KV cache not yet supported!", issue 18888)
    assert attention.gpu_facts(v("0.10.2")) is None
    assert attention.check(v("0.10.2"), "fp8").verdict == attention.STARTS
    got = attention.check(v("0.10.2"), "fp8", gpu=RTX3090)
    assert got.verdict == attention.UNDECIDED and "not in the engine data" in got.reason
    assert got.cause is not None and got.cause.code == "start-up"
    # so recover, which reads its engines' Nodes, proposes no dtype it cannot say starts there
    assert attention.starts("vllm", v("0.10.2"), "fp8") and not attention.starts("vllm", v("0.10.2"), "fp8",
                                                                                   gpu=RTX3090)
    # no GPU read: exactly as before
    assert attention.check(v("0.11.0"), "fp8").verdict == attention.STARTS
    # an AMD Node runs the ROCm build, whose selection does not check these lists
    amd = engine.gpu_from_labels({"amd.com/gpu.family": "AI", "amd.com/gpu.product-name": "Instinct_MI210"})
    assert attention.check(v("0.16.0"), "fp8", gpu=amd).verdict == attention.STARTS


def test_a_forced_triton_backend_is_judged_alone():
    got = attention.check(v("0.24.0"), "fp8", backend="TRITON_ATTN", gpu=RTX3090)
    assert got.verdict == attention.REFUSED and "TRITON_ATTN" in got.reason
    assert attention.check(v("0.24.0"), "fp8", backend="TRITON_ATTN", gpu=H100).verdict == attention.STARTS


def test_after_parse_makes_it_rejected_at_start_up():
    parsed = Parse(OK, "fp8", None, "the last --kv-cache-dtype wins", [], 0)
    got = attention.after_parse(parsed, "vllm", v("0.11.0"), gpu=RTX3090)
    assert got.outcome == REJECTED and got.error == START_UP and "RTX-3090" in got.reason
    unknown = attention.after_parse(parsed, "vllm", v("0.11.0"), gpu=UNLABELLED)
    assert unknown.outcome == UNKNOWN and unknown.cause.subject == "nvidia.com/gpu.compute.major"
    assert attention.after_parse(parsed, "vllm", v("0.24.0"), gpu=RTX3090).outcome == OK


def _row(version, dtype="fp8", node="n1", status=ROW_OK):
    item = Item("team", "p", "main", None, None, "vllm", version, "b1", dtype, dtype, status, "the parse",
                container_spec={"name": "main", "image": f"vllm/vllm-openai:v{version}",
                                "command": ["vllm", "serve", "m", "--kv-cache-dtype", dtype]}, node=node)
    return item


def test_judge_reads_only_the_nodes_the_gpu_decides():
    rows = [_row("0.11.0", node="a"), _row("0.11.0", "auto", node="b"), _row("0.10.2", node="c"),
            _row("0.24.0", node="d"), _row("0.11.0", node=None)]
    assert judge_gpu.targets(rows) == ["a", "d"]
    assert judge_gpu.targets(rows, every=True) == ["a", "b", "c", "d"]


def test_judge_apply_turns_the_verdict():
    refused, unknown, fine = _row("0.11.0", node="rtx"), _row("0.11.0", node="bare"), _row("0.24.0", node="rtx")
    labels = {"rtx": {"nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-3090", "nvidia.com/gpu.compute.major": "8",
                      "nvidia.com/gpu.compute.minor": "6"}, "bare": {}}
    judge_gpu.apply([refused, unknown, fine], labels)
    assert refused.status == "REJECTED" and refused.recover and "kubectl kvcache recover b1" in refused.fix
    assert unknown.status == "UNKNOWN" and unknown.cause.subject == "nvidia.com/gpu.compute.major"
    assert fine.status == ROW_OK and fine.gpu.compute == (8, 6)
    assert refused.to_dict()["gpu"]["computeCapability"] == "8.6"


def test_recover_proposes_only_what_starts_on_the_gpu():
    """EngineAt.starting (what check suggests and recover proposes) on the GPUs its Pods run on:
    0.24.0 on a V100 dies on every fp8 spelling (Triton, SM89) and on bfloat16 (its SM80 guard)."""
    plain = EngineAt("vllm", v("0.24.0"), SPEC_VERSION, platform="cuda")
    on_v100 = plain.replace(gpus=(V100,))
    on_h100 = plain.replace(gpus=(H100,))
    assert {"fp8", "bfloat16"} <= plain.starting and "fp8" in on_h100.starting
    assert not {"fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16"} & on_v100.starting and "float16" in on_v100.starting
    assert suggest_dtype("fp8", [on_v100]) is None and suggest_dtype("fp8", [on_h100]) == "fp8"
    mixed = plain.replace(gpus=(H100, V100))         # replicas on two GPUs: each must start it
    assert "fp8" not in mixed.starting and "float16" in mixed.starting
    facts = attention.gpu_facts(v("0.24.0"))
    assert facts["capabilities"]["7.0"]["standard"]["bfloat16"] == ["fails", "TRITON_ATTN"]
    assert attention.check(v("0.24.0"), "bfloat16", gpu=V100).verdict == attention.UNDECIDED   # MLA: TRITON_MLA
    assert "requires SM80+" in attention._fails(v("0.24.0"), "bfloat16", V100, "TRITON_ATTN", facts)


def test_a_ready_engine_is_not_refused_by_the_data():
    """What ran beats the prediction: a ready container on that GPU keeps its verdict, said."""
    row = _row("0.11.0", node="rtx")
    row.state = {"phase": "Running", "ready": True}
    judge_gpu.apply([row], {"rtx": {"nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "6"}})
    assert row.status == ROW_OK and "but it is ready" in row.reason


def test_recover_reads_the_nodes_of_vllm_engine_pods_only(tmp_path):
    import json

    import objects as o
    from kubectl_kvcache.load import manifests
    from kubectl_kvcache.load.scope import Scope

    vllm = o.injected_pod("a", "b1", containers=[o.container("main", command=o.vllm_argv("fp8"))])
    sgl = o.injected_pod("b", "b1", engine="SGLang", containers=[o.container("main", command=o.sglang_argv("fp8"))])
    vllm["spec"]["nodeName"], sgl["spec"]["nodeName"] = "n-vllm", "n-sgl"
    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(vllm, sgl, o.binding("b1", "fp8"))))
    snapshot = manifests.load_files([str(path)], Scope(None))
    assert judge_gpu.engine_nodes(snapshot) == ["n-vllm"]
    got = judge_gpu.gpus_by_node({"n-vllm": {"nvidia.com/gpu.compute.major": "7", "nvidia.com/gpu.compute.minor": "0"}})
    assert got["n-vllm"].compute == (7, 0)
