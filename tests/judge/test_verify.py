"""verify's judgement on saved objects: every status, both engines, injected and deployment Pods."""

import pytest

import objects as o
from kubectl_kvcache.judge import verify
from kubectl_kvcache.load import manifests
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.engine import IMAGE_TAG, MINIMUM, UNREAD
from kubectl_kvcache.render.verify import argv_listing


def snapshot_of(*objs, tmp_path, namespace=None):
    import json

    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(*objs)))
    return manifests.load_files([str(path)], Scope(namespace))


def judge(*objs, tmp_path):
    return verify.verify(snapshot_of(*objs, tmp_path=tmp_path))


def only(report):
    assert len(report.items) == 1, [i.to_dict() for i in report.items]
    return report.items[0]


@pytest.mark.parametrize("engine, argv, dtype, status, effective", [
    ("vLLM", o.vllm_argv("fp8"), "fp8", "OK", "fp8"),
    ("vllm", o.vllm_argv("fp8", ["--kv-cache-dtype=fp8_e5m2"]), "fp8", "MISMATCH", "fp8_e5m2"),
    ("vLLM", o.vllm_argv(None), "fp8", "MISSING", "auto"),
    ("vLLM", o.vllm_argv("bf16"), "bf16", "REJECTED", None),
    ("vLLM", o.vllm_argv("fp8", ["--kv-cache-dt", "fp8"]), "fp8", "REJECTED", None),  # ambiguous at 0.29
    ("vLLM", o.vllm_argv("fp8", ["--kv_cache_dtype", "fp8_e4m3"]), "fp8", "MISMATCH", "fp8_e4m3"),
    ("SGLang", o.sglang_argv("bf16"), "bf16", "OK", "bf16"),
    ("sglang", o.sglang_argv("fp8"), "fp8", "REJECTED", None),
    ("SGLang", o.sglang_argv("fp8_e4m3", ["--kv_cache_dtype", "fp8_e4m3"]), "fp8_e4m3", "REJECTED", None),
    ("SGLang", o.sglang_argv(None), "bf16", "MISSING", "auto"),
], ids=["vllm-ok", "vllm-role-flag-wins", "vllm-not-rolled", "vllm-bf16", "vllm-ambiguous",
        "vllm-underscores", "sglang-ok", "sglang-fp8", "sglang-underscores", "sglang-not-rolled"])
def test_deployment_pod_statuses(tmp_path, engine, argv, dtype, status, effective):
    version = "0.29.0" if engine.lower() == "vllm" else "0.5.18"
    image = f"gpustack/runner:cuda12.9-{engine.lower()}{version}"
    item = only(judge(o.binding("b1", dtype), o.deployment("md", engine, version),
                      o.md_pod("md-server-0", "md", argv, image=image), tmp_path=tmp_path))
    assert item.status == status, item.reason
    assert item.effective == effective
    assert item.expected == dtype
    assert item.engine == engine.lower()
    assert item.engine_version == version
    assert item.owner == {"kind": "ModelDeployment", "name": "md"}


def test_rejected_confirmed_by_exit_code_2(tmp_path):
    item = only(judge(o.binding("b1", "fp8"), o.deployment("md", "SGLang", "0.5.18"),
                      o.md_pod("p", "md", o.sglang_argv("fp8"), exit_code=2), tmp_path=tmp_path))
    assert item.status == "REJECTED"
    assert "confirmed" in item.reason and "code 2" in item.reason


def test_missing_says_the_binding_will_be_rejected_when_it_rolls(tmp_path):
    item = only(judge(o.binding("b1", "bf16"), o.deployment("md", "vLLM", "0.29.0"),
                      o.md_pod("p", "md", o.vllm_argv(None)), tmp_path=tmp_path))
    assert item.status == "WILL-REJECT"            # not merely MISSING (issue 30 item 9)
    assert "reject 'bf16'" in item.reason


def test_engine_version_decides(tmp_path):
    """bfloat16 arrives in vLLM 0.11.0: the same argv is OK on 0.11.0 and REJECTED on 0.10.2."""
    for version, status in (("0.10.2", "REJECTED"), ("0.11.0", "OK")):
        item = only(judge(o.binding("b1", "bfloat16"), o.deployment("md", "vLLM", version),
                          o.md_pod("p", "md", o.vllm_argv("bfloat16")), tmp_path=tmp_path))
        assert (item.status, item.engine_version) == (status, version)


def test_version_from_image_then_minimum(tmp_path):
    item = only(judge(o.binding("b1", "fp8"), o.deployment("md", "vLLM", None),
                      o.md_pod("p", "md", o.vllm_argv("fp8"), image="vllm/vllm-openai:v0.30.1"),
                      tmp_path=tmp_path))
    assert (item.engine_version, item.version_source) == ("0.30.1", IMAGE_TAG)
    item = only(judge(o.binding("b1", "fp8"), o.deployment("md", "vLLM", None),
                      o.md_pod("p", "md", o.vllm_argv("fp8"), image="registry.local/custom:latest"),
                      tmp_path=tmp_path))
    # no release in the tag: judged across every vLLM release, which disagree on fp8 (from 0.4.1)
    assert (item.engine_version, item.version_source, item.status) == (None, UNREAD, "UNKNOWN")
    assert "is not an engine image" in item.reason and "vLLM 0.3.3-0.4.0.post1: rejected" in item.reason
    assert "operator's minimum" not in item.reason


def test_direct_decode_pod_engine_is_main_not_first_container(tmp_path):
    proxy = o.container("proxy", command=["/router", "--kv-cache-dtype", "nonsense"], image="gpustack/router:v1")
    main = o.container("main", command=o.sglang_argv("bf16"), image="lmsysorg/sglang:v0.5.19-cu129")
    item = only(judge(o.binding("b1", "bf16"), o.deployment("md", "SGLang", None),
                      o.md_pod("p", "md", None, containers=[proxy, main]), tmp_path=tmp_path))
    assert (item.container, item.status, item.engine_version) == ("main", "OK", "0.5.19")


def test_router_pods_and_foreign_pods_are_left_out(tmp_path):
    router = o.md_pod("md-router-0", "md", ["python3", "-m", "sglang_router.launch_router"], role="router")
    helm = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "redis-0", "namespace": "team",
                         "labels": {"app.kubernetes.io/instance": "md"}},
            "spec": {"containers": [o.container("redis", command=["redis-server"])]}}
    report = judge(o.binding("b1", "fp8"), o.deployment("md"), router, helm,
                   o.md_pod("md-server-0", "md", o.vllm_argv("fp8")), tmp_path=tmp_path)
    assert [i.pod for i in report.items] == ["md-server-0"]


def test_deployment_without_kvcache_is_not_pool_attached(tmp_path):
    report = judge(o.deployment("md", binding_name=None), o.md_pod("p", "md", o.vllm_argv(None)),
                   tmp_path=tmp_path)
    assert report.items == []


def test_setting_off_expects_nothing(tmp_path):
    report = judge(o.setting("false"), o.binding("b1", "fp8"), o.deployment("md"),
                   o.md_pod("a", "md", o.vllm_argv(None)), o.md_pod("b", "md", o.vllm_argv("fp8")),
                   o.md_pod("c", "md", o.vllm_argv("bf16")), tmp_path=tmp_path)
    assert report.setting_value is False and report.setting_source == "file"
    assert [(i.pod, i.expected, i.status) for i in report.items] == [
        ("a", None, "OK"), ("b", None, "OK"), ("c", None, "REJECTED")]


@pytest.mark.parametrize("spelling, on", [("0", False), ("F", False), ("False", False), ("1", True),
                                          ("TRUE", True), ("t", True)])
def test_setting_spellings(tmp_path, spelling, on):
    report = judge(o.setting(spelling), o.binding("b1", "fp8"), o.deployment("md"),
                   o.md_pod("a", "md", o.vllm_argv(None)), tmp_path=tmp_path)
    assert report.setting_value is on
    assert report.items[0].status == ("MISSING" if on else "OK")


def test_no_setting_in_input_means_default_on(tmp_path):
    report = judge(o.binding("b1", "fp8"), o.deployment("md"), o.md_pod("a", "md", o.vllm_argv("fp8")),
                   tmp_path=tmp_path)
    assert (report.setting_value, report.setting_source) == (True, "default")


def test_binding_or_deployment_missing_is_unknown(tmp_path):
    report = judge(o.deployment("md", binding_name="gone"), o.md_pod("a", "md", o.vllm_argv("fp8")),
                   o.md_pod("b", "other-md", o.vllm_argv("fp8")), tmp_path=tmp_path)
    by_pod = {i.pod: i for i in report.items}
    assert by_pod["a"].status == "UNKNOWN" and "Binding gone not found" in by_pod["a"].reason
    assert by_pod["b"].status == "UNKNOWN" and "other-md is not in the input" in by_pod["b"].reason


@pytest.mark.parametrize("kind", ["deployment", "injected"])
def test_a_candidate_that_names_no_binding_is_unknown_not_a_crash(tmp_path, kind):
    """Decoding never makes one (spec.kvCache needs a poolRef name; an injected Pod without the
    annotation is a problem), but judge_candidate given one raised AttributeError (binding.dtype)."""
    if kind == "deployment":
        objs = (o.deployment("md", "vLLM", "0.29.0"), o.md_pod("p", "md", o.vllm_argv("fp8")))
        where = "ModelDeployment md spec.kvCache.poolRef.name"
    else:
        objs = (o.injected_pod("p", "b1", "vLLM", [o.container("vllm", args=["m", "--kv-cache-dtype", "fp8"],
                                                               image="vllm/vllm-openai:v0.29.0")]),)
        where = "annotation kvcache.gpustack.ai/binding"
    snapshot = snapshot_of(o.binding("b1", "fp8"), *objs, tmp_path=tmp_path)
    cand = verify.candidate(snapshot.pods[0], snapshot).replace(binding=None)
    item = verify.judge_candidate(cand, snapshot, True)
    assert (item.status, item.reason, str(item.cause)) == ("UNKNOWN", f"no Binding is named ({where})", f"spec: {where}")
    assert verify.judge_candidate(cand, snapshot, False).status == "OK"     # the Setting off: nothing is expected


def test_both_api_versions_and_engine_spellings(tmp_path):
    report = judge(o.binding("b1", "fp8", api_version="worker.gpustack.ai/v1"),
                   o.deployment("md1", "VLLM", api_version="worker.gpustack.ai/v1"),
                   o.deployment("md2", "vllm"),
                   o.md_pod("a", "md1", o.vllm_argv("fp8")), o.md_pod("b", "md2", o.vllm_argv("fp8")),
                   tmp_path=tmp_path)
    assert [(i.pod, i.status) for i in report.items] == [("a", "OK"), ("b", "OK")]


def test_injected_pods(tmp_path):
    vllm_args = ["Qwen/Qwen3-8B", "--port", "8000", "--kv-cache-dtype", "fp8"]
    single = o.injected_pod("nb", "b1", "vLLM",
                            [o.container("vllm", args=vllm_args, image="vllm/vllm-openai:v0.29.0")])
    sidecar = o.container("exporter", command=["/exporter"], image="prom/exporter:1")
    server = o.container("server", command=["python3", "-m", "sglang.launch_server"],
                         args=["--model-path", "m", "--kv-cache-dtype", "fp8"], image="lmsysorg/sglang:v0.5.18")
    targeted = o.injected_pod("sg", "b1", "sglang", [sidecar, server], target="server")
    untargeted = o.injected_pod("amb", "b1", "sglang", [sidecar, server])
    report = judge(o.binding("b1", "fp8"), single, targeted, untargeted, tmp_path=tmp_path)
    by_pod = {i.pod: i for i in report.items}
    assert (by_pod["nb"].status, by_pod["nb"].container, by_pod["nb"].owner) == ("OK", "vllm", None)
    assert by_pod["nb"].occurrences == [{"source": "args", "index": 3, "text": "--kv-cache-dtype", "value": "fp8"}]
    assert (by_pod["sg"].status, by_pod["sg"].container) == ("REJECTED", "server")
    assert by_pod["amb"].status == "UNKNOWN" and "annotation" in by_pod["amb"].reason


def test_declared_engine_mismatch_is_unknown(tmp_path):
    item = only(judge(o.binding("b1", "fp8"), o.deployment("md", "SGLang", "0.5.18"),
                      o.md_pod("p", "md", o.vllm_argv("fp8")), tmp_path=tmp_path))
    assert item.status == "UNKNOWN" and "declared engine is sglang" in item.reason


def test_secret_valued_dtype_is_unknown_and_never_printed(tmp_path):
    env = [{"name": "DT", "valueFrom": {"secretKeyRef": {"name": "engine-secrets", "key": "dtype"}}}]
    pod = o.md_pod("p", "md", None, containers=[o.container("main", command=o.vllm_argv("$(DT)"), env=env)])
    item = only(judge(o.binding("b1", "fp8"), o.deployment("md"), pod, tmp_path=tmp_path))
    assert item.status == "UNKNOWN"
    assert "Secret engine-secrets" in item.reason


def test_unknown_image_entrypoint_is_unknown(tmp_path):
    pod = o.injected_pod("x", "b1", "vLLM", [o.container("c", args=["--kv-cache-dtype", "fp8"],
                                                         image="example.com/private/engine:1")])
    item = only(judge(o.binding("b1", "fp8"), pod, tmp_path=tmp_path))
    assert item.status == "UNKNOWN" and "ENTRYPOINT" in item.reason


def test_json_contract(tmp_path):
    report = judge(o.binding("b1", "fp8"), o.deployment("md"), o.md_pod("a", "md", o.vllm_argv("fp8")),
                   tmp_path=tmp_path)
    from kubectl_kvcache.render.verify import VIEW

    data = VIEW.to_dict(report)     # the JSON contract is the view's: the report's fields, its kind first
    assert list(data)[0] == "kind" and data["kind"] == "VerifyReport"
    assert data["setting"] == {"value": True, "source": "default"}
    assert set(data["items"][0]) == {"namespace", "pod", "container", "owner", "role", "engine", "engineVersion",
                                     "binding", "expected", "effective", "status", "reason", "fix", "occurrences",
                                     "state", "node"}
    assert data["summary"] == {"total": 1, "OK": 1, "MISMATCH": 0, "MISSING": 0, "WILL-REJECT": 0, "REJECTED": 0,
                               "UNKNOWN": 0, "NO-POD": 0}
    assert [(d["name"], d["desired"], d["done"], d["complete"]) for d in data["deployments"]] == [("md", 1, 1, True)]


def test_argv_listing_marks_every_occurrence_and_the_winner(tmp_path):
    item = only(judge(o.binding("b1", "fp8"), o.deployment("md"),
                      o.md_pod("a", "md", o.vllm_argv("fp8", ["--kv-cache-dtype=fp8_e5m2"])), tmp_path=tmp_path))
    rows = argv_listing(item)
    marked = [(pos, mark) for pos, _, mark in rows if mark]
    assert marked == [("command[3]", "<- kv-cache-dtype #1 = 'fp8'"),
                      ("command[5]", "<- kv-cache-dtype #2 = 'fp8_e5m2'  (wins)")]


def test_a_replica_that_will_be_given_a_rejected_spelling_is_will_reject_not_missing(tmp_path):
    """Issue 30 item 9: `verify --assume-setting on` (or the Setting on, before the replica rolls)
    on an SGLang replica whose Binding says fp8 (SGLang rejects it): not merely MISSING, it will
    crash-loop when it rolls; the fix is the recovery, and the wait counts it as to roll."""
    import io
    import json

    from kubectl_kvcache import cli

    objs = [o.binding("sgl-fp8", "fp8"),
            o.deployment("sgl", engine="SGLang", version="0.5.18", binding_name="sgl-fp8"),
            o.md_pod("sgl-server-0", "sgl", o.sglang_argv(None), image="lmsysorg/sglang:v0.5.18"),
            o.binding("b1", "fp8"), o.deployment("chat"), o.md_pod("chat-server-0", "chat", o.vllm_argv(None))]
    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(*objs)))
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["verify", "-f", str(path), "--assume-setting", "on", "-o", "json"], io.StringIO(""), out, err)
    items = {i["pod"]: i for i in json.loads(out.getvalue())["items"]}
    assert code == 1
    assert items["sgl-server-0"]["status"] == verify.WILL_REJECT
    assert "will reject 'fp8': it will crash-loop" in items["sgl-server-0"]["reason"]
    assert "kubectl kvcache recover sgl-fp8 -n team" in items["sgl-server-0"]["fix"]
    assert items["chat-server-0"]["status"] == verify.MISSING          # vLLM accepts fp8: merely not rolled
    code = cli.main(["verify", "-f", str(path), "--assume-setting", "on"], io.StringIO(""), out := io.StringIO(),
                    err := io.StringIO())
    assert "WILL-REJECT" in out.getvalue() and "1 MISSING, 1 WILL-REJECT" in err.getvalue()


@pytest.mark.parametrize("value, expected", [("yes", "fp8"), ("on", "fp8"), ("TRUE", "fp8"), ("False", None)])
def test_an_unreadable_setting_value_counts_as_on(value, expected, tmp_path):
    """ModelDeploymentOwnsKVCacheDtype returns `err != nil || owned`: a status.value strconv.ParseBool
    cannot read ("yes", "on") is ON for the operator (the old code stopped with an error)."""
    item = only(judge(o.setting(value), o.binding("b1", "fp8"), o.deployment("md", "vLLM", "0.29.0"),
                      o.md_pod("p", "md", o.vllm_argv("fp8")), tmp_path=tmp_path))
    assert item.expected == expected


def test_an_unreadable_role_image_is_unknown_with_its_fix(tmp_path):
    """The role's image is what runs (a stated image always wins); its tag names no release, and
    bfloat16 is accepted only from vLLM 0.11.0: UNKNOWN, the fix pins the image."""
    md = o.deployment("md", "vLLM", "0.29.0", roles=[o.role(image="vllm/vllm-openai:nightly")])
    item = only(judge(o.binding("b1", "bfloat16"), md,
                      o.md_pod("p", "md", o.vllm_argv("bfloat16"), image="vllm/vllm-openai:nightly"),
                      tmp_path=tmp_path))
    assert (item.status, item.engine_version, item.version_source) == ("UNKNOWN", None, UNREAD)
    # 0.11.1-0.14.1: the parser takes it, every CUDA attention backend refuses it (engine/attention.py)
    assert "vLLM 0.3.3-0.10.2: rejected; vLLM 0.11.0: runs bfloat16; vLLM 0.11.1-0.14.1: rejected; " \
           "vLLM 0.15.0-0.34.0: runs bfloat16" in item.reason
    assert item.fix.startswith("pin spec.roles[0].image of ModelDeployment md to a tag")


def test_a_role_image_pod_is_judged_at_its_tag_not_engine_version(tmp_path):
    md = o.deployment("md", "vLLM", "0.29.0", roles=[o.role(image="vllm/vllm-openai:v0.10.2")])
    item = only(judge(o.binding("b1", "bfloat16"), md,
                      o.md_pod("p", "md", o.vllm_argv("bfloat16"), image="vllm/vllm-openai:v0.10.2"),
                      tmp_path=tmp_path))
    assert (item.status, item.engine_version, item.version_source) == ("REJECTED", "0.10.2", IMAGE_TAG)
