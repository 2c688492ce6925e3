"""The operator's admission webhooks' dtype rules, as the plugin models them
(kubectl_kvcache/operator/webhooks.py), held to the operator's own Go test tables. Each case names
the Go test it comes from (gpustack/gpustack-operator at 6678d71, pkg/worker/webhooks/worker/)."""

import pytest

from kubectl_kvcache.operator import webhooks

import operator_model

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
    errors = operator_model.md_refusals(engine, [(command, extra)], kv_cache, owned, deleting)
    if field is None:
        assert errors == []
        return
    assert len(errors) == 1
    assert (errors[0].field, errors[0].value) == (field, value)
    assert operator_model.MD_REFUSAL in errors[0].detail


def test_the_underscore_spelling_is_vllm_only():
    # MD_TEST names `--kv_cache_dtype=` for vLLM; SGLang's parser does not read `_` as `-`
    assert operator_model.names_dtype("--kv_cache_dtype=fp8", "vllm")
    assert not operator_model.names_dtype("--kv_cache_dtype=fp8", "sglang")



# ModelDeploymentResolveArg (controllers/worker/model_deployment_connector.go): (engine, entry, refused)
RESOLVE_CASES = [
    ("vllm", "--kv-cache-dtype", True),
    ("vllm", "--kv-cache-dtype=fp8", True),
    ("vllm", "--kv_cache_dtype=fp8", True),            # _ -> - (modelDeploymentVLLMFlagKey)
    ("sglang", "--kv_cache_dtype=fp8", False),         # SGLang rewrites nothing
    ("vllm", "--kv-cache-dt=fp8", True),               # a prefix
    ("vllm", "--kv-cache=fp8", True),                  # ANY prefix longer than `--`, not only into `dtype`
    ("vllm", "--kv_cache=fp8", True),
    ("sglang", "--kv-cache", True),
    ("vllm", "--k", True),
    ("vllm", "--", False),                             # ends the options
    ("vllm", "-kv-cache-dtype", False),                # not a long flag
    ("vllm", "--kv-cache-dtype.foo=x", True),          # vLLM: the dotted tail is cut
    ("vllm", "--kv_cache_dtype.some_key=x", True),
    ("sglang", "--kv-cache-dtype.foo=x", False),       # SGLang: no cut, not a prefix
    ("vllm", "--kv-cache-dtype-skip-layers", False),   # longer than the key
    ("vllm", "--kv-events-config", False),             # an exact other owned flag is itself
    ("vllm", "--kv-transfer-config={}", False),
    ("vllm", "fp8", False),
]


@pytest.mark.parametrize("engine, entry, refused", RESOLVE_CASES, ids=[f"{c[0]}:{c[1]}" for c in RESOLVE_CASES])
def test_resolve_arg_is_the_operators(engine, entry, refused):
    assert operator_model.names_dtype(entry, engine) is refused
    errors = operator_model.md_refusals(engine, [(None, [entry])], True, True)
    assert any(operator_model.MD_REFUSAL in e.detail for e in errors) is refused


# -- the arguments the operator owns whatever the Setting ----------------------------------------
#
# gpustack/gpustack-operator, pkg/worker/controllers/worker/model_deployment_connector.go:
# modelDeploymentOwnedKeys, read at 6678d71d3c725c4ec79d4c06992cf621f1df8b5a and at
# 049325a5dfca3da815de7decdd4360bbb238ba15 (the same Args at both); the rule:
# pkg/worker/webhooks/worker/model_deployment.go at 049325a5: validateModelDeploymentRoleExtraArgs,
# called by validateModelDeploymentRoles for every role from ValidateCreate and ValidateUpdate.
GO_OWNED_KEYS = {
    "vllm": ["--kv-transfer-config", "--kv-events-config"],
    "sglang": ["--hicache-storage-backend", "--hicache-storage-backend-extra-config", "--disaggregation-mode",
               "--disaggregation-transfer-backend", "--disaggregation-bootstrap-port"],
}
OWNED_RULE = "model_deployment.go:validateModelDeploymentRoleExtraArgs"
GUARD_TEST = ("deletion_guard_test.go:TestDeletionGuardClassification, "
              "\"ModelDeployment holds every VALIDATION rule against the object alone\"")


def test_the_owned_catalog_is_modelDeploymentOwnedKeys_and_the_dtype_is_not_in_it():
    assert {k: list(v) for k, v in webhooks.OWNED_ARGS.items()} == GO_OWNED_KEYS
    # the dtype is owned only through ModelDeploymentKVCacheOwnedArg (6678d71): pool attached, Setting on
    assert all(webhooks.DTYPE_ARG not in keys for keys in webhooks.OWNED_ARGS.values())


# (case, engine, command, extraArgs, kvCache, Setting on, deleting, refused paths)
QWEN_PREFILL = ["--disaggregation-mode", "prefill", "--disaggregation-transfer-backend", "mooncake",
                "--disaggregation-bootstrap-port", "8998"]      # examples/cluster.json qwen-pd, role prefill
OWNED_CASES = [
    ("sglang, the three disaggregation keys spelled out", "sglang", None, QWEN_PREFILL, True, True, False,
     [0, 2, 4]),
    ("sglang, their = form", "sglang", None, ["--disaggregation-mode=decode"], True, True, False, [0]),
    ("sglang, a prefix argparse resolves (ModelDeploymentOwnedArg)", "sglang", None,
     ["--disaggregation-boot=8998"], True, True, False, [0]),
    ("sglang, the store's extra config", "sglang", None, ["--hicache-storage-backend-extra-config={}"], True, True,
     False, [0]),
    ("the setting off: refused all the same", "sglang", None, QWEN_PREFILL, True, False, False, [0, 2, 4]),
    ("no pool attached: refused all the same", "sglang", None, QWEN_PREFILL, False, True, False, [0, 2, 4]),
    ("a take-over role: its extraArgs are walked too", "sglang", ["python3", "-m", "sglang.launch_server"],
     QWEN_PREFILL, True, True, False, [0, 2, 4]),
    ("a deployment being deleted: its updates are still validated", "sglang", None, QWEN_PREFILL, True, True, True,
     [0, 2, 4]),
    ("vllm owns no disaggregation key: ownership is per (engine, key)", "vllm", None, ["--disaggregation-mode=x"],
     True, True, False, []),
    ("vllm, the events config", "vllm", None, ["--kv-events-config={}"], False, False, False, [0]),
    ("a longer flag of another stem is the role's own", "sglang", None, ["--disaggregation-ib-device", "mlx5_0"],
     True, True, False, []),
]


@pytest.mark.parametrize("name, engine, command, extra, kv_cache, on, deleting, refused", OWNED_CASES,
                         ids=[c[0] for c in OWNED_CASES])
def test_owned_arguments_are_refused_whatever_the_setting(name, engine, command, extra, kv_cache, on, deleting,
                                                          refused):
    # OWNED_RULE, GUARD_TEST: answered from the object alone, so nothing but the object decides it
    errors = [e for e in operator_model.md_refusals(engine, [(command, extra)], kv_cache, on, deleting)
              if operator_model.MD_REFUSAL not in e.detail]
    assert [e.field for e in errors] == [f"spec.roles[0].extraArgs[{j}]" for j in refused]
    for e, j in zip(errors, refused):
        assert (e.type, e.value) == ("Invalid", extra[j])
        assert f'is set by the operator for engine "{engine}" and must not be supplied here' in e.detail
        assert "through spec.roles[0].command to own it instead" in e.detail


def test_a_prefix_names_the_key_it_reaches():
    # OWNED_RULE at the version resolving through ModelDeploymentOwnedArg: `"--disagg" is
    # "--disaggregation-mode", which is set by the operator ...`
    (error,) = operator_model.md_refusals("sglang", [(None, ["--disagg=prefill"])], True, True)
    assert error.detail.startswith('"--disagg" is "--disaggregation-mode", which is set by the operator')
    (owned,) = webhooks.owned_arg_refusals("sglang", [operator_model._Role(None, ["--disagg", "prefill"])])
    assert (owned.key, owned.value_path) == ("--disaggregation-mode", "spec.roles[0].extraArgs[1]")


@pytest.mark.parametrize("name, owned, update", [
    ("create, the setting on", True, False), ("update, the setting on", True, True),
    ("create, the setting off", False, False), ("update, the setting off", False, True),
])
def test_the_dtype_and_an_owned_key_part_ways_with_the_setting_off(name, owned, update):
    # MD_SETTING_TEST, case `name` (create and update are judged alike by both rules), beside OWNED_RULE
    errors = operator_model.md_refusals("sglang", [(None, ["--kv-cache-dtype=fp8", "--disaggregation-mode=x"])],
                                        True, owned)
    assert [e.field for e in errors] == (["spec.roles[0].extraArgs[1]", "spec.roles[0].extraArgs[0]"] if owned
                                         else ["spec.roles[0].extraArgs[1]"])


def test_resolve_arg_names_the_owned_key_reached():
    # "--kv" is a prefix of every vLLM owned key: the first in the catalog's order is the one named
    assert webhooks.resolve_arg("vllm", "--kv", webhooks.OWNED_ARGS["vllm"]) == "--kv-transfer-config"
    assert webhooks.resolve_arg("sglang", "--disagg=x", webhooks.OWNED_ARGS["sglang"]) == "--disaggregation-mode"


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
    errors = operator_model.md_refusals("vllm", [(None, ["--kv-cache-dtype=fp8"])], True, on)
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
    ("the pool repointed", "pool", "other", "spec.poolRef.name: Forbidden: poolRef is immutable"),
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


def test_auto_is_refused_beside_another_error():
    # kv_cache_pool_binding.go ValidateCreate (read at 6678d71d3c725c4ec79d4c06992cf621f1df8b5a):
    # validateKVCachePoolBindingDtypeBinds is appended to the spec's errors unconditionally, so a
    # new "auto" Binding naming no pool gets both refusals
    errors = webhooks.binding_refusals(dict(canonical(), dtype="auto", pool=""), setting_on=True)
    assert [(e.type, e.field) for e in errors] == [("Required", "spec.poolRef.name"), ("Invalid", "spec.domain.dtype")]


def test_immutable_fields_are_forbidden():
    # validateKVCachePoolBindingImmutable: field.Forbidden for poolRef.name and each domain field
    errors = webhooks.binding_refusals(dict(canonical(), pool="other", dtype="float16"), setting_on=True,
                                       old=canonical())
    assert [(e.type, e.field) for e in errors] == [("Forbidden", "spec.poolRef.name"),
                                                   ("Forbidden", "spec.domain.dtype")]
    assert str(errors[1]) == "spec.domain.dtype: Forbidden: dtype is immutable"


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


# -- the rules that read other objects: binding_create_refusals -------------------------------------
# Cases from kv_cache_pool_binding_test.go at 6678d71d3c72 (TestKVCachePoolBindingWebhook_ValidateCreate,
# _ADuplicateDomainIsTrueOfOneMasterOnly, _TheSameDomainOnAnotherMasterIsAdmitted,
# _APoolNamingNoBackendCollidesWithNothing, _AClaimWhosePoolIsGoneCollidesWithNothing,
# _ASecondDistinctDomainNeedsAMasterThatSeparates, _EverySharedMasterIsAsked,
# _TheObservationIsReadOffEitherPool, _ADomainIsNotClaimedByTheObjectUnderAdmission), on the Go
# fixture's shapes: pool `shared` over backend mooncake-dram, 100Ti; the Binding team-a/chat asks 20Ti.

import objects as ob  # noqa: E402


def _candidate(**changes):
    b = ob.binding("chat", "bfloat16", ns="team-a", pool="shared", domain="team-a-chat", ceiling="20Ti")
    spec = b["spec"]
    for key, value in changes.items():
        if key == "ceiling":
            spec["quotaCeiling"] = value
        elif key == "pool":
            spec["poolRef"]["name"] = value
        else:
            spec["domain"][key] = value
    return b


def _holder(domain, pool="shared", ns="team-b", name="batch"):
    return ob.binding(name, "bfloat16", ns=ns, pool=pool, domain=domain, ceiling="20Ti")


def _pool(name="shared", backends=("mooncake-dram",), ledger=None, total="100Ti"):
    return ob.pool(name, backends=backends, total=total, ledger=ledger)


def _cluster(*objs, pools_readable=True, backends_readable=True, complete=True):
    by = {k: {o["metadata"]["name"]: o for o in objs if o["kind"] == k} for k in ("KVCachePool", "KVCacheBackend")}
    return webhooks.Cluster([o for o in objs if o["kind"] == "KVCachePoolBinding"],
                            by["KVCachePool"] if pools_readable else None,
                            by["KVCacheBackend"] if backends_readable else None, complete)


def _judge(candidate, *objs, **kw):
    return webhooks.binding_create_refusals(candidate, True, _cluster(*objs, **kw))


NO_LEDGER = ob.backend("mooncake-dram", multi_tenancy=False)      # the Go fixture's newKVCacheBackend
LEDGER = ob.backend("mooncake-dram", multi_tenancy=True)          # newMultiTenantKVCacheBackend
EXTERNAL = ob.backend("mooncake-dram")                            # newExternalKVCachePoolBackend

CROSS_CASES = [
    # (Go case, the candidate's changes, the other objects, the refusal's field and words, or None)
    ("the canonical binding", {}, [_pool()], None),
    ("a pool nobody created", {"pool": "absent"}, [_pool()], ("spec.poolRef.name", "Not found: 'absent'")),
    ("a domain on the leader's reserved prefix", {"name": "_internal"}, [_pool()],
     ("spec.domain.name", 'must not start with "_"')),
    ("a domain with a control character", {"name": "team\x07a"}, [_pool()],
     ("spec.domain.name", "control character")),
    ("a ceiling of zero", {"ceiling": "0"}, [_pool()], ("spec.quotaCeiling", "must be greater than 0")),
    ("a negative ceiling", {"ceiling": "-1Gi"}, [_pool()], ("spec.quotaCeiling", "must be greater than 0")),
    ("a ceiling past int64 bytes", {"ceiling": "8Ei"}, [_pool(total="16Ei")], ("spec.quotaCeiling", "2^63-1")),
    ("a ceiling exactly the pool's own", {"ceiling": "100Ti"}, [_pool()], None),
    ("a ceiling that fits the pool but oversubscribes it with its siblings", {},
     [_pool(), dict(_holder("team-b-batch"), spec=dict(_holder("team-b-batch")["spec"], quotaCeiling="95Ti"))], None),
    ("a ceiling larger than the whole pool", {"ceiling": "200Ti"}, [_pool()],
     ("spec.quotaCeiling", "must not exceed the pool's own ceiling of 100Ti")),
    ("a domain another namespace already registered on the same master", {}, [_pool(), _holder("team-a-chat")],
     ("spec.domain.name", "already registered by team-b/batch, and both Bindings' pools name mooncake-dram")),
    ("a domain nobody else holds", {}, [_pool(), _holder("team-b-batch")], None),
    ("the same domain on another master is admitted", {"name": "default"},
     [_pool(), _pool("other-pool", backends=("mooncake-other",)), _holder("default", pool="other-pool")], None),
    ("the same domain on another pool over the same master is refused", {},
     [_pool(), _pool("other-pool"), _holder("team-a-chat", pool="other-pool")],
     ("spec.domain.name", "already registered by team-b/batch")),
    ("a pool naming no backend collides with nothing", {"name": "default"},
     [_pool(), _pool("empty-pool", backends=()), _holder("default", pool="empty-pool")], None),
    ("a claim whose pool is gone collides with nothing", {}, [_pool(), _holder("team-a-chat", pool="deleted-pool")],
     None),
    ("the object under admission does not claim against itself", {},
     [_pool(), ob.binding("chat", "bfloat16", ns="team-a", pool="shared", domain="team-a-chat", ceiling="20Ti")],
     None),
    ("a master with a ledger takes a second domain", {}, [_pool(), LEDGER, _holder("team-b-batch")], None),
    ("a managed master with no ledger refuses the second domain", {}, [_pool(), NO_LEDGER, _holder("team-b-batch")],
     ("spec.domain.name", "that backend holds no tenant ledger")),
    ("a managed master with multiTenancy unset refuses it too", {},
     [_pool(), dict(NO_LEDGER, spec={"connection": {"managed": {"leader": {}}}}), _holder("team-b-batch")],
     ("spec.domain.name", "holds no tenant ledger")),
    ("a ledger-less master takes the first domain", {}, [_pool(), NO_LEDGER], None),
    ("an external master reported as running without multi-tenancy refuses it", {},
     [_pool(ledger="MultiTenancyDisabled"), EXTERNAL, _holder("team-b-batch")],
     ("spec.domain.name", "holds no tenant ledger")),
    ("an external master that is merely unreachable still takes it", {},
     [_pool(ledger="LedgerUnreachable"), EXTERNAL, _holder("team-b-batch")], None),
    ("a master nothing has answered for still takes it", {}, [_pool(), _holder("team-b-batch")], None),
    ("a distinct domain on another master is not this rule's business", {},
     [_pool(), NO_LEDGER, _pool("other-pool", backends=("mooncake-other",)),
      _holder("team-b-batch", pool="other-pool")], None),
    ("the observation is read off either pool", {},
     [_pool(), _pool("observed-pool", ledger="MultiTenancyDisabled"), EXTERNAL,
      _holder("team-b-batch", pool="observed-pool")], ("spec.domain.name", "holds no tenant ledger")),
    ("every shared master is asked", {},
     [_pool(backends=("mooncake-dram", "mooncake-second")), _pool("aaa-pool"), _pool("zzz-pool", backends=("mooncake-second",)),
      _holder("team-b-batch", pool="aaa-pool", name="aaa-batch"),
      _holder("team-c-rag", pool="zzz-pool", ns="team-c", name="zzz-rag"), LEDGER,
      ob.backend("mooncake-second", multi_tenancy=False)],
     ("spec.domain.name", "on mooncake-second")),
]


@pytest.mark.parametrize("name, changes, objs, want", CROSS_CASES, ids=[c[0] for c in CROSS_CASES])
def test_binding_create_against_the_cluster(name, changes, objs, want):
    errors, unchecked = _judge(_candidate(**changes), *objs)
    if want is None:
        assert errors == [], [str(e) for e in errors]
    else:
        field, words = want
        assert errors and errors[0].field == field and words in str(errors[0]), [str(e) for e in errors]
    assert unchecked == []


def test_the_cross_object_rules_wait_for_the_shape():
    # ValidateCreate: "the cross-object questions are asked only once the object's own shape holds"
    errors, _ = _judge(_candidate(pool="absent", blockSize=0), _pool())
    assert [e.field for e in errors] == ["spec.domain.blockSize"]


def test_the_quota_dot_ceiling_spelling_is_judged_too():
    b = _candidate()
    b["spec"].pop("quotaCeiling")
    b["spec"]["quota"] = {"ceiling": "200Ti"}
    errors, _ = _judge(b, _pool())
    assert errors[0].field == "spec.quota.ceiling"


def test_what_cannot_be_read_is_unchecked_never_admitted_silently():
    # A pool or backend list RBAC refuses: the Go webhook's read fails (InternalError); here it is
    # not decided, and said so.
    errors, unchecked = _judge(_candidate(pool="absent"), _pool(), pools_readable=False)
    assert errors == [] and "KVCachePool absent" in unchecked[0]
    errors, unchecked = _judge(_candidate(), _pool(), _holder("team-b-batch"), backends_readable=False)
    assert errors == [] and "KVCacheBackend mooncake-dram could not be read" in unchecked[0]
    # files: a pool not in the input is not known to be absent
    errors, unchecked = _judge(_candidate(pool="absent"), _pool(), complete=False)
    assert errors == [] and "not in the input" in unchecked[0]
    errors, unchecked = _judge(_candidate(), _pool(), _holder("team-a-chat", pool="elsewhere"), complete=False)
    assert errors == [] and "KVCachePool elsewhere, which is not in the input" in unchecked[0]
    # from the cluster, a holder's pool that is not there is a pool that is gone: no master, no claim
    assert _judge(_candidate(), _pool(), _holder("team-a-chat", pool="elsewhere")) == ([], [])


_UNITS = [("", 1), ("k", 10 ** 3), ("M", 10 ** 6), ("G", 10 ** 9), ("T", 10 ** 12), ("Ki", 2 ** 10), ("Mi", 2 ** 20),
          ("Gi", 2 ** 30), ("Ti", 2 ** 40), ("Pi", 2 ** 50)]


def test_the_ceiling_against_the_total_on_generated_quantities():
    import random
    rng = random.Random(30)
    for _ in range(400):
        (cu, cf), (tu, tf) = rng.choice(_UNITS), rng.choice(_UNITS)
        c, t = rng.randint(1, 4096), rng.randint(1, 4096)
        errors, _ = _judge(_candidate(ceiling=f"{c}{cu}"), _pool(total=f"{t}{tu}"))
        assert bool(errors) == (c * cf > t * tf), (f"{c}{cu}", f"{t}{tu}", [str(e) for e in errors])


def test_quantity_reads_apimachinerys_forms():
    for text, want in [("1Ti", 2 ** 40), ("1.5Gi", 3 * 2 ** 29), ("1e3", 1000), ("1E3", 1000), ("1E", 10 ** 18),
                       ("500m", 0.5), (".5", 0.5), ("+2k", 2000), (7, 7)]:
        assert webhooks.quantity(text) == want, text
    for text in ("1ki", "Gi", "1 Gi", "1Gib", "", "nan", True, None, "1.2.3"):
        assert webhooks.quantity(text) is None, text


def test_tenant_names_on_generated_control_characters():
    for code in list(range(0, 32)) + list(range(127, 160)):
        errors, _ = _judge(_candidate(name=f"team{chr(code)}a"), _pool())
        assert any("control character" in str(e) for e in errors), code
    errors, _ = _judge(_candidate(name="team-a"), _pool())
    assert errors == []
