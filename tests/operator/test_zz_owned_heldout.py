"""Held out (run last, its rate reported apart): spellings of the owned arguments not used while
owned_arg_refusals was written, each decided by the Go rules read (gpustack/gpustack-operator,
pkg/worker/controllers/worker/model_deployment_connector.go at
6678d71d3c725c4ec79d4c06992cf621f1df8b5a: ModelDeploymentOwnedArg -> ModelDeploymentResolveArg,
modelDeploymentVLLMFlagKey; the catalog modelDeploymentOwnedKeys)."""

import pytest

from kubectl_kvcache.operator import webhooks

import operator_model

# (engine, entry, the owned key the Go reads it as, or None)
HELDOUT = [
    ("vllm", "--kv_transfer_config={}", "--kv-transfer-config"),          # vLLM rewrites `_` to `-`
    ("vllm", "--kv-transfer-config.kv_role=kv_both", "--kv-transfer-config"),   # vLLM's dotted merge, cut
    ("vllm", "--kv_events_config.enable_kv_cache_events=true", "--kv-events-config"),
    ("vllm", "--kv-e={}", "--kv-events-config"),                           # a prefix of one key only
    ("vllm", "--kv-cache-dtype=fp8", None),                                # not in the catalog
    ("sglang", "--disaggregation_mode=prefill", None),                     # SGLang rewrites nothing
    ("sglang", "--disaggregation-transfer=mooncake", "--disaggregation-transfer-backend"),
    ("sglang", "--hicache-storage-backend=mooncake", "--hicache-storage-backend"),   # exact beats a longer key
    ("sglang", "--hicache-storage-backend-e={}", "--hicache-storage-backend-extra-config"),
    ("sglang", "--hicache-ratio=2", None),                                 # another hicache flag
    ("sglang", "--disaggregation-mode.x=prefill", None),                   # SGLang cuts no dotted tail
    ("sglang", "--", None),                                                # ends the options
    ("sglang", "disaggregation-mode", None),                               # not a flag
]


@pytest.mark.parametrize("engine, entry, key", HELDOUT, ids=[f"{e}:{a}" for e, a, _ in HELDOUT])
def test_zz_owned_heldout(engine, entry, key):
    found = webhooks.owned_arg_refusals(engine, [operator_model._Role(None, [entry])])
    assert [r.key for r in found] == ([key] if key else [])
