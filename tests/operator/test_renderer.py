"""The operator's renderer, as the plugin models it (kubectl_kvcache/operator/renderer.py), held to
the operator's own Go test tables; and verify/check judging what that renderer does.

Each case names the Go test it comes from (gpustack/gpustack-operator at 6678d71)."""

import json

import pytest

import objects as o
import operator_model
from kubectl_kvcache.judge import checks, setting as setting_mod, verify
from kubectl_kvcache.load import manifests
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.operator import renderer

DTYPE_TEST = "pkg/worker/kvcache/inject/dtype_test.go:TestRenderDtype"
REPLICA_TEST = ("pkg/worker/controllers/worker/model_deployment_kv_cache_dtype_test.go:"
                "TestModelDeploymentKVCacheDtype_ReachesEveryReplica")


def dtype_values(args):
    """dtype_test.go:dtypeValues -- every value a rendered command line gives the flag."""
    return [args[i + 1] for i in range(len(args) - 1) if args[i] == "--kv-cache-dtype"]


def dtype_entries(argv):
    """model_deployment_kv_cache_dtype_test.go:kvCacheDtypeEntries -- each entry with its value joined on."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--kv-cache-dtype" and i + 1 < len(argv):
            out.append(argv[i] + "=" + argv[i + 1])
            i += 1
        elif argv[i].startswith("--kv-cache-dtype="):
            out.append(argv[i])
        i += 1
    return out


# (Go case name, engine, role kind, store, p2p, dtype, want)
RENDER_DTYPE = [
    ("vllm renders the dtype beside its store", "vllm", "", True, False, "fp8_e4m3", ["fp8_e4m3"]),
    ("vllm-ascend renders it too", "vllm-ascend", "", True, False, "bfloat16", ["bfloat16"]),
    ("sglang renders the dtype beside its store", "sglang", "", True, False, "bfloat16", ["bfloat16"]),
    ("a vllm pair on a store renders it once", "vllm", "prefill", True, True, "bfloat16", ["bfloat16"]),
    ("an sglang decode half on a store renders it", "sglang", "decode", True, False, "bfloat16", ["bfloat16"]),
    ("a spelling one engine rejects is still passed verbatim", "vllm", "", True, False, "bf16", ["bf16"]),
    ("no dtype renders no flag", "vllm", "", True, False, None, []),
    ("a point-to-point leg without a store renders no flag", "vllm", "prefill", False, True, "bfloat16", []),
]


@pytest.mark.parametrize("name, engine, kind, store, p2p, dtype, want", RENDER_DTYPE,
                         ids=[c[0] for c in RENDER_DTYPE])
def test_render_dtype(name, engine, kind, store, p2p, dtype, want):
    # from DTYPE_TEST, case `name`
    args = operator_model.rendered_args(engine, dtype, store=store, kind=kind, p2p=p2p)
    assert dtype_values(args) == want
    # what a Pod rendered so shows: a store connector (or SGLang's backend) exactly when a store was rendered
    container = {"name": "main", "command": ["vllm", "serve", "m"] + args,
                 "env": operator_model.rendered_env(engine, store)}
    assert renderer.store_view(container, engine).rendered is store


def test_the_pair_on_a_store_composes_both_legs():
    # DTYPE_TEST "a vllm pair on a store renders it once"; vllm.go:renderVLLM's MultiConnector arm
    args = operator_model.rendered_args("vllm", "bfloat16", store=True, kind="prefill", p2p=True)
    doc = json.loads(args[args.index("--kv-transfer-config") + 1])
    assert doc["kv_connector"] == "MultiConnector"
    legs = [c["kv_connector"] for c in doc["kv_connector_extra_config"]["connectors"]]
    assert legs == ["MooncakeConnector", "MooncakeStoreConnector"]
    # the dtype follows the connector document, and --kv-events-config follows the dtype
    routed = operator_model.rendered_args("vllm", "bfloat16", kv_events=True)
    assert [a for a in routed if a.startswith("--")] == ["--kv-transfer-config", "--kv-cache-dtype",
                                                          "--kv-events-config"]


def test_vllm_ascend_has_its_own_connectors_and_minimum():
    # vllm.go:vllmConnectorFor; docs/reference/engine-versions.md (vLLM-Ascend 0.23.0)
    store = json.loads(operator_model.rendered_args("vllm-ascend", "bfloat16")[1])
    p2p = json.loads(operator_model.rendered_args("vllm-ascend", None, store=False, kind="decode", p2p=True)[1])
    assert store["kv_connector"] == "AscendStoreConnector"
    assert p2p["kv_connector"] == "MooncakeConnectorV1"
    assert renderer.MINIMUMS["vllm-ascend"] == "0.23.0"


# (Go case name, Setting value ("" = unset), engine, extraArgs, want)
REACHES_EVERY_REPLICA = [
    ("an unset setting reads its default and renders the Binding's dtype", "", "vllm", [],
     ["--kv-cache-dtype=bfloat16"]),
    ("the setting on renders the Binding's dtype", "true", "vllm", [], ["--kv-cache-dtype=bfloat16"]),
    ("sglang is handed the same flag", "true", "sglang", [], ["--kv-cache-dtype=bfloat16"]),
    ("the setting off renders nothing, as before the flag was owned", "false", "vllm", [], []),
    ("a stored role's own value stays after the rendered one", "true", "vllm", ["--kv-cache-dtype=fp8"],
     ["--kv-cache-dtype=bfloat16", "--kv-cache-dtype=fp8"]),
]


@pytest.mark.parametrize("name, owned, engine, extra, want", REACHES_EVERY_REPLICA,
                         ids=[c[0] for c in REACHES_EVERY_REPLICA])
def test_dtype_reaches_every_replica(name, owned, engine, extra, want, tmp_path):
    # from REPLICA_TEST, case `name`
    setting = o.setting(owned) if owned else None
    on = setting_mod.effective_value(manifests.snapshot_of(
        [(setting, "in", "")] if setting else [], Scope(None)).setting)
    base = ["vllm", "serve", "Qwen/Qwen3-8B"] if engine == "vllm" else \
        ["python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B"]
    command = operator_model.deployment_command(base, operator_model.rendered_args(engine, "bfloat16" if on else None),
                                          extra)
    assert dtype_entries(command) == want
    # and verify judges the replica the way the engine runs it: the role's later value wins
    objs = [o.binding("b1", "bfloat16"), o.deployment("md", engine="vLLM" if engine == "vllm" else "SGLang",
                                                      version="0.29.0" if engine == "vllm" else "0.5.18",
                                                      roles=[o.role(extra_args=extra)]),
            o.md_pod("md-server-0", "md", command,
                     image="gpustack/runner:cuda12.9-vllm0.29.0" if engine == "vllm" else "lmsysorg/sglang:v0.5.18")]
    if setting:
        objs.append(setting)
    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(*objs)))
    item = next(i for i in verify.verify(manifests.load_files([str(path)], Scope(None))).items if i.pod)
    if not on:
        assert item.status == verify.OK and item.expected is None
    elif extra:
        assert (item.status, item.effective) == (verify.MISMATCH, "fp8")
    else:
        assert (item.status, item.effective) == (verify.OK, "bfloat16")


def _judge(tmp_path, *objs):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(*objs)))
    return verify.verify(manifests.load_files([str(path)], Scope(None)))


P2P_PREFILL = json.dumps({"kv_connector": "MooncakeConnector", "kv_role": "kv_producer",
                          "kv_connector_extra_config": {"mooncake_protocol": "tcp"}})
STORE = json.dumps({"kv_connector": "MooncakeStoreConnector", "kv_role": "kv_both"})


@pytest.mark.parametrize("argv, env, status, progress", [
    # a point-to-point leg without a store: no dtype is rendered, so none is expected (DTYPE_TEST)
    (["vllm", "serve", "m", "--kv-transfer-config", P2P_PREFILL], [], verify.OK, verify.DONE),
    # only a KV event publisher (inject.go:Render admits it for vLLM without a store)
    (["vllm", "serve", "m", "--kv-events-config", renderer.KV_EVENTS_DOC], [], verify.OK, verify.DONE),
    # the store was rendered but not the dtype: rendered before the Setting went on, it rolls
    (["vllm", "serve", "m", "--kv-transfer-config", STORE], [{"name": "MOONCAKE_CONFIG_PATH", "value": "/x"}],
     verify.MISSING, verify.TO_ROLL),
    # a point-to-point document beside MOONCAKE_CONFIG_PATH: a store is there
    (["vllm", "serve", "m", "--kv-transfer-config", P2P_PREFILL], [{"name": "MOONCAKE_CONFIG_PATH", "value": "/x"}],
     verify.MISSING, verify.TO_ROLL),
    # nothing the operator renders: cannot tell a store-less render from an old Pod; it is to roll
    (["vllm", "serve", "m"], [], verify.MISSING, verify.TO_ROLL),
])
def test_verify_expects_no_dtype_without_a_store(tmp_path, argv, env, status, progress):
    pod = o.md_pod("md-server-0", "md", None, containers=[o.container("main", command=argv, env=env)])
    report = _judge(tmp_path, o.binding("b1", "fp8"), o.deployment("md"), pod)
    item = next(i for i in report.items if i.pod)
    assert (item.status, item.progress) == (status, progress)
    if status == verify.OK:
        assert item.expected is None and "only beside a store" in item.reason
        assert report.deployments[0].complete       # --wait counts it done
    else:
        assert item.expected == "fp8" and not report.deployments[0].complete


def test_check_predicts_no_operator_dtype_for_a_role_without_a_store():
    # REPLICA_TEST's ordering (the role's own value after the rendered one) applies only beside a
    # store: a store-less role's own flag is all that runs, so check's "after the upgrade" is it.
    from kubectl_kvcache.operator import decode, records
    md = decode.deployment_record(o.deployment("md", roles=[o.role(extra_args=["--kv-cache-dtype", "fp8_e5m2"])]))
    pod = decode.pod_record(o.md_pod("md-server-0", "md", None, containers=[o.container(
        "main", command=["vllm", "serve", "m", "--kv-transfer-config", P2P_PREFILL, "--kv-cache-dtype", "fp8_e5m2"])]))
    with_store = decode.pod_record(o.md_pod("md-server-0", "md", None, containers=[o.container(
        "main", command=["vllm", "serve", "m", "--kv-transfer-config", STORE, "--kv-cache-dtype", "fp8_e5m2"],
        env=[{"name": "MOONCAKE_CONFIG_PATH", "value": "/x"}])]))
    binding = decode.binding_record(o.binding("b1", "fp8"))
    for p, verdict in ((pod, "NO-STORE"), (with_store, "MISMATCH")):
        s = records.Snapshot(source="file")
        s.setting = records.default_setting()
        s.pods.append(p)
        s.deployments[("team", "md")] = md
        s.bindings[("team", "b1")] = binding
        report = checks.check(s)
        entry = next(r for r in report.roles if r.role == "server")
        assert entry.verdict == verdict, entry.to_dict()


def test_an_injected_sglang_pod_keeps_defaulted_args_after_the_dtype(tmp_path):
    # pod_kv_cache_inject.go:injectPod: rendered args, then the defaulted ones -- the webhook's dtype
    # is not at the end, and is not the Pod's own flag.
    args = operator_model.injected_args("sglang", "decode", ["python3", "-m", "sglang.launch_server"],
                                  ["--model-path", "m"], operator_model.rendered_args("sglang", "bf16"))
    assert args[-3:] == ["--enable-hierarchical-cache", "--disaggregation-decode-retraction-backup", "cpu_tensor"]
    assert renderer.webhook_dtype_positions(args, "sglang") == (4, 5)
    pod = o.injected_pod("p", "b1", engine="SGLang", extra_ann={
        "kvcache.gpustack.ai/injected": json.dumps({"binding": "b1", "engine": "sglang"})},
        containers=[o.container("engine", command=["python3", "-m", "sglang.launch_server"], args=args,
                                image="lmsysorg/sglang:v0.5.18")])
    item = only_pod(_judge(tmp_path, o.binding("b1", "bf16"), pod))
    assert (item.status, item.effective) == (verify.OK, "bf16")
    from kubectl_kvcache.operator import decode, records
    s = records.Snapshot(source="file")
    s.setting = records.default_setting()
    s.pods.append(decode.pod_record(pod))
    s.bindings[("team", "b1")] = decode.binding_record(o.binding("b1", "bf16"))
    assert not [f for f in checks.check(s).findings if f.code == "injection-refused"]


def only_pod(report):
    rows = [i for i in report.items if i.pod]
    assert len(rows) == 1
    return rows[0]


def test_check_does_not_call_a_binding_rejected_by_a_deployment_without_a_store():
    # DTYPE_TEST "a point-to-point leg without a store renders no flag": a vLLM deployment whose
    # Pods have no store is never handed the Binding's dtype, so `bf16` (which vLLM rejects) breaks nothing
    from kubectl_kvcache.operator import decode, records

    def report(command, env=None):
        s = records.Snapshot(source="file")
        s.setting = records.default_setting()
        s.pods.append(decode.pod_record(o.md_pod("md-server-0", "md", None, containers=[
            o.container("main", command=command, env=env)])))
        s.deployments[("team", "md")] = decode.deployment_record(o.deployment("md"))
        s.bindings[("team", "b1")] = decode.binding_record(o.binding("b1", "bf16"))
        return checks.check(s)

    no_store = report(["vllm", "serve", "m", "--kv-transfer-config", P2P_PREFILL])
    assert not [f for f in no_store.findings if f.code == "binding-dtype-rejected"]
    assert no_store.bindings[0].uses[0].renders is False
    with_store = report(["vllm", "serve", "m", "--kv-transfer-config", STORE],
                        [{"name": "MOONCAKE_CONFIG_PATH", "value": "/x"}])
    assert [f for f in with_store.findings if f.code == "binding-dtype-rejected"]
