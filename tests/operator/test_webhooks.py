"""The operator's admission webhooks' dtype rules, as the plugin models them
(kubectl_kvcache/operator/webhooks.py), held to the operator's own Go test tables. Each case names
the Go test it comes from (gpustack/gpustack-operator at 6678d71, pkg/worker/webhooks/worker/)."""

import pytest

from kubectl_kvcache.operator import webhooks

MD_TEST = "model_deployment_kv_cache_dtype_test.go:TestValidateModelDeploymentKVCacheDtype"
MD_SETTING_TEST = "model_deployment_kv_cache_dtype_test.go:TestModelDeploymentWebhook_KVCacheDtypeReadsTheSetting"
BINDING_CREATE = "kv_cache_pool_binding_test.go:TestKVCachePoolBindingWebhook_ValidateCreate"
BINDING_UPDATE = "kv_cache_pool_binding_test.go:TestKVCachePoolBindingWebhook_ValidateUpdate"
BINDING_AUTO = "kv_cache_pool_binding_test.go:TestKVCachePoolBindingWebhook_AutoDtypeIsJudgedAtCreationWhileOwned"

# (Go case name, engine, command, extraArgs, kvCache, deleting, owned, want field, want value)
MD_CASES = [
    ("vllm, the flag spelled out", "vllm", None, ["--max-model-len=4096", "--kv-cache-dtype", "fp8"], True, False,
     True, "spec.roles[0].extraArgs[1]", "--kv-cache-dtype"),
    ("vllm, its underscore spelling", "vllm", None, ["--kv_cache_dtype=fp8"], True, False, True,
     "spec.roles[0].extraArgs[0]", "--kv_cache_dtype=fp8"),
    ("vllm, an abbreviation argparse resolves", "vllm", None, ["--kv-cache-dt=fp8"], True, False, True,
     "spec.roles[0].extraArgs[0]", "--kv-cache-dt=fp8"),
    ("sglang", "sglang", None, ["--kv-cache-dtype=fp8_e4m3"], True, False, True,
     "spec.roles[0].extraArgs[0]", "--kv-cache-dtype=fp8_e4m3"),
    ("a longer flag of the same stem is the role's own", "vllm", None, ["--kv-cache-dtype-skip-layers", "0"], True,
     False, True, None, None),
    ("no pool attached", "vllm", None, ["--kv-cache-dtype=fp8"], False, False, True, None, None),
    ("a role that replaced its command line", "vllm", ["vllm", "serve", "--kv-cache-dtype=fp8"],
     ["--kv-cache-dtype=fp8"], True, False, True, None, None),
    ("a deployment being deleted", "vllm", None, ["--kv-cache-dtype=fp8"], True, True, True, None, None),
    ("the setting off", "vllm", None, ["--kv-cache-dtype=fp8"], True, False, False, None, None),
]


@pytest.mark.parametrize("name, engine, command, extra, kv_cache, deleting, owned, field, value", MD_CASES,
                         ids=[c[0] for c in MD_CASES])
def test_model_deployment_dtype_refusal(name, engine, command, extra, kv_cache, deleting, owned, field, value):
    # from MD_TEST, case `name`
    errors = webhooks.md_refusals(engine, [(command, extra)], kv_cache, owned, deleting)
    if field is None:
        assert errors == []
        return
    assert len(errors) == 1
    assert (errors[0].field, errors[0].value) == (field, value)
    assert webhooks.MD_REFUSAL in errors[0].detail


def test_the_underscore_spelling_is_vllm_only():
    # MD_TEST names `--kv_cache_dtype=` for vLLM; SGLang's parser does not read `_` as `-`
    assert webhooks.names_dtype("--kv_cache_dtype=fp8", "vllm")
    assert not webhooks.names_dtype("--kv_cache_dtype=fp8", "sglang")
    # the plugin's reading of "an abbreviation": a prefix reaching into `dtype`, never a shorter one
    assert not webhooks.names_dtype("--kv-cache=fp8", "vllm")


@pytest.mark.parametrize("name, owned, refused", [
    ("create, the setting unset reads its default", None, True),
    ("create, the setting on", True, True),
    ("update, the setting on", True, True),
    ("create, the setting off", False, False),
    ("update, the setting off", False, False),
])
def test_model_deployment_webhook_reads_the_setting(name, owned, refused):
    # from MD_SETTING_TEST, case `name`: create and update alike; an unset Setting reads true
    from kubectl_kvcache.judge import setting as setting_mod
    from kubectl_kvcache.operator import records
    setting = records.default_setting() if owned is None else records.assumed_setting(owned)
    on = setting_mod.effective_value(setting)
    errors = webhooks.md_refusals("vllm", [(None, ["--kv-cache-dtype=fp8"])], True, on)
    assert bool(errors) is refused


def canonical():
    """kv_cache_pool_binding_test.go:newKVCachePoolBinding"""
    return {"pool": "shared", "name": "team-a-chat", "blockSize": 16, "dtype": "bfloat16"}


# (Go case name, field changed, value, want detail substring or None)
BINDING_CREATE_CASES = [
    ("the canonical binding", None, None, None),
    ("no pool named", "pool", "", "a Binding grants exactly one pool"),
    ("a domain with no name", "name", "", "a reuse domain with no name"),
    ("a domain named like a Kubernetes object", "name", "team-a-chat-v2", None),
    ("a domain with an underscore, which a DNS label refuses", "name", "team_a",
     "a reuse domain is named like a Kubernetes object"),
    ("a domain in capitals", "name", "Team-A", "a reuse domain is named like a Kubernetes object"),
    ("a block size of zero", "blockSize", 0, "the number of tokens one cache block holds"),
    ("a negative block size", "blockSize", -16, "must be greater than 0"),
    ("no dtype", "dtype", "", "the element type the cached tensors carry"),
    ("a dtype in capitals", "dtype", "BFloat16", "two spellings of one type would read as two types"),
    ("a dtype this API has never heard of", "dtype", "fp4_e2m1", None),
    ("a dtype of auto", "dtype", "auto", '"auto" lets each engine resolve its own'),
]


@pytest.mark.parametrize("name, key, value, want", BINDING_CREATE_CASES, ids=[c[0] for c in BINDING_CREATE_CASES])
def test_binding_create(name, key, value, want):
    # from BINDING_CREATE, case `name` (the Setting on, as the Go test's default)
    new = canonical()
    if key:
        new[key] = value
    errors = webhooks.binding_refusals(new, setting_on=True)
    if want is None:
        assert errors == []
    else:
        assert any(want in str(e) for e in errors), [str(e) for e in errors]


BINDING_UPDATE_CASES = [
    ("an update that moves nothing", None, None, None),
    ("the pool repointed", "pool", "other", "poolRef.name: Invalid"),
    ("the domain renamed", "name", "team-a-chat-v2", "name is immutable"),
    ("the block size changed", "blockSize", 32, "blockSize is immutable"),
    ("the dtype changed", "dtype", "float16", "dtype is immutable"),
]


@pytest.mark.parametrize("name, key, value, want", BINDING_UPDATE_CASES, ids=[c[0] for c in BINDING_UPDATE_CASES])
def test_binding_update(name, key, value, want):
    # from BINDING_UPDATE, case `name`
    old, new = canonical(), canonical()
    if key:
        new[key] = value
    errors = webhooks.binding_refusals(new, setting_on=True, old=old)
    if want is None:
        assert errors == []
    else:
        assert any(want in str(e) for e in errors), [str(e) for e in errors]


def test_auto_is_judged_at_creation_while_owned():
    # from BINDING_AUTO: "a stored binding updates" and "the setting off admits a new one"
    auto = dict(canonical(), dtype="auto")
    assert webhooks.binding_refusals(dict(auto), setting_on=True, old=dict(auto)) == []
    assert webhooks.binding_refusals(dict(auto), setting_on=False) == []
    assert webhooks.binding_refusals(dict(auto), setting_on=True)


def test_binding_fields_reads_a_binding_object():
    import objects as o
    fields = webhooks.binding_fields(o.binding("b1", "fp8", pool="pool-a", domain="d1"))
    assert (fields["pool"], fields["name"], fields["dtype"]) == ("pool-a", "d1", "fp8")
