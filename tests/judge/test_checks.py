"""checks.py: snapshots built in the test, findings out. Engine versions on both sides of each
boundary that decides a finding."""

import os

import pytest

import enginefiles
import objects as o

from kubectl_kvcache import engine
from kubectl_kvcache.judge import checks
from kubectl_kvcache.operator import api, decode, records
from kubectl_kvcache.engine import releases as engines
from kubectl_kvcache.engine.argv import Token
from kubectl_kvcache.render.checks import engine_label

NS = "team"


# -- builders: records made from the shared object builders (tests/objects.py) ---------------

def binding(name, dtype, ns=NS, pool="pool-a", domain=None, used_by=()):
    """A Binding on its own domain (named after it): Bindings sharing one are the claims tests'."""
    return decode.binding_record(o.binding(name, dtype, ns=ns, pool=pool, domain=domain or name, used_by=used_by))


role = o.role


def deployment(name, engine="vLLM", version="0.29.0", binding_name="b", roles=None, ns=NS, image=None,
               kv_cache=True):
    return decode.deployment_record(o.deployment(name, engine, version, binding_name, ns=ns, roles=roles,
                                               image=image, kv_cache=kv_cache))


def md_pod(md_name, role_name, command, image="gpustack/runner:cuda12.9-vllm0.29.0", name=None, ns=NS,
           created="2026-03-10T09:00:00Z", exit_code=None):
    return decode.pod_record(o.md_pod(name or f"{md_name}-{role_name}-0", md_name, list(command), ns=ns,
                                    role=role_name, exit_code=exit_code, image=image, created=created))


def container(name="engine", image="vllm/vllm-openai:v0.29.0", command=None, args=None):
    return o.container(name, command=list(command) if command is not None else None,
                       args=list(args) if args is not None else None, image=image)


# An args-only container is refused unless the Pod declares that its image's ENTRYPOINT forwards
# appended arguments (pod_kv_cache_inject.go: checkLaunchArgs); tests of other rules declare it.
FORWARDED = {"kvcache.gpustack.ai/launch-args-forwarded": "true"}


def workload(name, containers, kind="Deployment", binding_name="b", engine="vLLM", annotations=None, ns=NS,
             inject=True):
    return decode.workload_record(o.workload(name, containers, kind, binding_name, engine, annotations, ns, inject))


def injected_pod(name, containers, binding_name="b", engine="vLLM", annotations=None, ns=NS, owner=None):
    return decode.pod_record(o.injected_pod(name, binding_name, engine, containers, ns, extra_ann=annotations,
                                          owner=owner))


def setting(value="true"):
    status = {} if value is None else {"value": value}
    return decode.setting_record({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                                "metadata": {"name": api.SETTING_NAME, "namespace": api.SETTING_NAMESPACE},
                                "spec": {}, "status": status}, "file")


def snapshot(*objs, setting_value="true", namespace=None, source="file"):
    s = records.Snapshot(source=source, namespace=namespace)
    s.setting = setting(setting_value) if setting_value != "absent" else records.default_setting()
    for r in objs:
        if isinstance(r, records.Pod):
            s.pods.append(r)
        elif isinstance(r, records.Deployment):
            s.deployments[(r.namespace, r.name)] = r
        elif isinstance(r, records.Binding):
            s.bindings[(r.namespace, r.name)] = r
        elif isinstance(r, records.Workload):
            s.workloads.append(r)
    return s


def run(*objs, **kw):
    return checks.check(snapshot(*objs, **kw))


def codes(report, code=None, severity=None):
    return [f for f in report.findings if (code is None or f.code == code)
            and (severity is None or f.severity == severity)]


def only(report, code):
    found = codes(report, code)
    assert len(found) == 1, [f.to_dict() for f in report.findings]
    return found[0]


def entry(report, name):
    return next(b for b in report.bindings if b.name == name)


def role_entry(report, deployment_name, role_name="server"):
    return next(r for r in report.roles if r.deployment == deployment_name and r.role == role_name)


# -- the code table --------------------------------------------------------------------------

def test_every_emitted_code_is_in_the_table_with_a_known_severity():
    for code, row in checks.CODES.items():
        assert row.code == code and row.severity in checks.SEVERITIES and row.title and row.about
    report = run(binding("b", "bf16"), binding("auto-b", "auto"), deployment("md", version="0.10.2",
                 roles=[role(extra_args=["--kv-cache-dtype", "fp8"]), role("t", command=["/run.sh"])]),
                 workload("w", [container(command=["sh", "-c", "vllm serve m"])]))
    assert {f.code for f in report.findings} <= set(checks.CODES)


# -- 1. Binding spellings --------------------------------------------------------------------

@pytest.mark.parametrize("version, ok", [("0.5.3", False), ("0.5.4", True), ("0.5.3.post1", False)])
def test_bf16_on_sglang_is_accepted_from_0_5_4(version, ok):
    report = run(binding("b", "bf16"), deployment("md", engine="SGLang", version=version))
    e = entry(report, "b")
    if ok:
        assert e.verdict == "OK" and not codes(report, "binding-dtype-rejected")
    else:
        f = only(report, "binding-dtype-rejected")
        assert f.severity == "error" and f.kind == "KVCachePoolBinding" and f.name == "b"
        assert f"SGLang {version}" in f.message and "crash-loop" in f.message and "md" in f.message
        assert e.verdict == f"REJECTED by sglang {version}"
        # no spelling of bf16 exists at 0.5.3: the fix says from which release it does
        assert "SGLang accepts 'bf16' from 0.5.4" in f.fix


@pytest.mark.parametrize("version, ok", [("0.10.2", False), ("0.10.1.1", False), ("0.11.0", True)])
def test_bfloat16_on_vllm_is_accepted_from_0_11_0(version, ok):
    report = run(binding("b", "bfloat16"), deployment("md", engine="vllm", version=version))
    assert bool(codes(report, "binding-dtype-rejected")) is not ok
    if not ok:
        assert "vLLM accepts 'bfloat16' from 0.11.0" in only(report, "binding-dtype-rejected").fix


def test_bf16_on_vllm_suggests_bfloat16_and_the_guides_recovery():
    report = run(binding("b", "bf16", pool="h100", domain="dom"), deployment("md", engine="vLLM", version="0.29.0"))
    f = only(report, "binding-dtype-rejected")
    assert "vLLM 0.29.0 (from spec.engine.version)" in f.message
    assert "invalid choice: 'bf16'" in f.message and "operator[" not in f.message
    assert "pool h100" in f.fix and "dtype 'bfloat16'" in f.fix and "new domain.name (not 'dom')" in f.fix
    assert "its users (md) moved to it" in f.fix
    # one fix vocabulary: the rejected Binding's fix is its recover command, as verify says it
    assert f.fix.startswith("recover it: kubectl kvcache recover b -n team (the Setting off while it runs")
    assert entry(report, "b").suggestion == "bfloat16"


def test_fp8_on_sglang_suggests_fp8_e4m3_and_setting_off_needs_no_recovery_toggle():
    report = run(binding("b", "fp8"), deployment("md", engine="sglang", version="0.5.18"), setting_value="false")
    f = only(report, "binding-dtype-rejected")
    assert "dtype 'fp8_e4m3'" in f.fix and "Setting off" not in f.fix


@pytest.mark.parametrize("dtype, suggestion", [("fp8", "fp8_e4m3"), ("bf16", "bfloat16"), ("bfloat16", "bfloat16")])
def test_a_binding_used_by_both_engines_needs_a_value_in_both_sets(dtype, suggestion):
    report = run(binding("b", dtype), deployment("v", engine="vLLM", version="0.29.0"),
                 deployment("s", engine="SGLang", version="0.5.18"))
    e = entry(report, "b")
    assert [engine_label(a) for a in e.engines()] == ["SGLang 0.5.18", "vLLM 0.29.0"]
    if dtype == suggestion:
        assert e.verdict == "OK"
    else:
        f = only(report, "binding-dtype-rejected")
        assert f"dtype {suggestion!r}" in f.fix
        assert e.suggestion == suggestion


def test_float16_on_sglang_has_no_spelling_and_the_fix_lists_the_common_values():
    report = run(binding("b", "float16"), deployment("v", version="0.29.0"),
                 deployment("s", engine="SGLang", version="0.5.18"))
    f = only(report, "binding-dtype-rejected")
    assert "SGLang has no spelling of 'float16'" in f.fix
    assert "bfloat16" in f.fix and "fp8_e4m3" in f.fix
    assert "REJECTED by sglang 0.5.18" == entry(report, "b").verdict


def test_fp8_rejected_by_vllm_before_0_4_1_only():
    assert codes(run(binding("b", "fp8"), deployment("md", version="0.4.0")), "binding-dtype-rejected")
    assert not codes(run(binding("b", "fp8"), deployment("md", version="0.4.1")), "binding-dtype-rejected")


def test_version_from_the_role_image_else_engine_version_else_unknown_and_the_message_says_which():
    # no version, the role's image (a stated image always wins)
    r = run(binding("b", "bf16"), deployment("md", engine="SGLang", version=None, image="lmsysorg/sglang:v0.5.3-cu124"))
    assert "SGLang 0.5.3 (from spec.roles[].image)" in only(r, "binding-dtype-rejected").message
    assert engine_label(entry(r, "b").engines()[0]) == "SGLang 0.5.3 (role image)"
    # no version, no image: the operator synthesizes nothing; the Pods' images (oldest first) tell
    pods = [md_pod("md", "server", ["python3", "-m", "sglang.launch_server"], image="lmsysorg/sglang:v0.5.3",
                   name="p-old", created="2026-01-01T00:00:00Z"),
            md_pod("md", "server", ["python3", "-m", "sglang.launch_server"], image="lmsysorg/sglang:v0.5.4",
                   name="p-new", created="2026-02-01T00:00:00Z")]
    r = run(binding("b", "bf16"), deployment("md", engine="SGLang", version=None), *pods)
    f = only(r, "binding-dtype-rejected")
    assert "SGLang 0.5.3 (from Pod image)" in f.message
    # nothing at all: the release is unknown, judged across every release (fp8: all reject it)
    r = run(binding("b", "fp8"), deployment("md", engine="SGLang", version=None))
    message = only(r, "binding-dtype-rejected").message
    assert "SGLang (release unknown: spec.roles[0] names no image and spec.engine.version is empty" in message
    assert "0.5.18" not in message.split("judged across")[0]
    assert engine_label(entry(r, "b").engines()[0]) == "SGLang (release unknown)"


def test_an_unparseable_declared_version_is_an_unknown_release_not_the_minimum():
    r = run(binding("b", "bf16"), deployment("md", version="main-nightly"))
    assert "vLLM (release unknown: spec.engine.version 'main-nightly' is not a release number" in \
        only(r, "binding-dtype-rejected").message


def test_the_role_image_decides_the_release_not_engine_version():
    """Issue 37: a role image vllm/vllm-openai:v0.10.2 beside engine.version 0.29.0 runs 0.10.2,
    whose parser rejects bfloat16 (the real 0.10.2 parser: parsers.py, ACCEPTED_VALUES)."""
    assert "bfloat16" not in engine.profile("vllm", engine.parse_version("0.10.2")).accepted
    md = deployment("md", version="0.29.0", roles=[role(image="vllm/vllm-openai:v0.10.2")])
    r = run(binding("b", "bfloat16"), md)
    f = only(r, "binding-dtype-rejected")
    assert "vLLM 0.10.2 (from spec.roles[].image)" in f.message
    assert entry(r, "b").verdict == "REJECTED by vllm 0.10.2"


def test_without_a_role_image_engine_version_decides():
    r = run(binding("b", "bfloat16"), deployment("md", version="0.29.0"))
    assert not codes(r, "binding-dtype-rejected")
    assert [engine_label(a) for a in entry(r, "b").engines()] == ["vLLM 0.29.0"]
    r = run(binding("b", "bfloat16"), deployment("md", version="0.10.2"))
    assert "vLLM 0.10.2 (from spec.engine.version)" in only(r, "binding-dtype-rejected").message


def test_each_role_at_its_own_image():
    md = deployment("md", version="0.29.0", roles=[role("a"), role("b", image="vllm/vllm-openai:v0.10.2")])
    r = run(binding("b", "bfloat16"), md)
    assert [engine_label(a) for a in entry(r, "b").engines()] == ["vLLM 0.29.0", "vLLM 0.10.2 (role image)"]
    assert "vLLM 0.10.2 (from spec.roles[].image)" in only(r, "binding-dtype-rejected").message


def test_an_unreadable_tag_is_unknown_not_the_minimum_release():
    """bfloat16 is accepted from vLLM 0.11.0 on: at an unreadable tag the releases disagree, so the
    verdict is UNKNOWN (the old code judged the operator's minimum, 0.29.0, and said OK)."""
    md = deployment("md", version="0.29.0", roles=[role(image="vllm/vllm-openai:nightly")])
    r = run(binding("b", "bfloat16"), md)
    assert not codes(r, "binding-dtype-rejected")
    assert entry(r, "b").verdict == "UNKNOWN"
    f = [f for f in codes(r, "unchecked") if "release unknown" in f.message]
    assert f and "tag 'nightly' of vllm/vllm-openai names no release" in f[0].message
    assert "0.10.2: rejected" in f[0].message or "rejected" in f[0].message
    # a release every release agrees on is answered: fp8_e4m3 from 0.4.3 ... but not by 0.3.3-0.4.2
    r = run(binding("b", "bf16"), md)
    assert codes(r, "binding-dtype-rejected")     # no vLLM release accepts bf16


def test_injected_pods_and_templates_are_binding_users_with_the_image_version():
    pod = injected_pod("p", [container(image="lmsysorg/sglang:v0.5.3", command=["python3", "-m",
                                                                                 "sglang.launch_server"])],
                       engine="SGLang")
    tpl = workload("w", [container(image="lmsysorg/sglang:v0.5.4", command=["python3", "-m",
                                                                            "sglang.launch_server"])],
                   engine="sglang", kind="StatefulSet")
    r = run(binding("b", "bf16"), pod, tpl)
    e = entry(r, "b")
    assert [u.ref for u in e.uses] == ["Pod/p", "StatefulSet/w"]
    f = only(r, "binding-dtype-rejected")
    assert "Pod p on SGLang 0.5.3 (from image tag)" in f.message and "StatefulSet" not in f.message
    assert "kubectl kvcache recover b -n team --dtype DTYPE" in f.fix and "Pod p" in f.message
    # no release in the tag: judged across every SGLang release, which disagree on bf16 (from 0.5.4)
    r = run(binding("b", "bf16"), workload("w", [container(image="registry.local/sglang:custom",
                                                            command=["python3", "-m", "sglang.launch_server"])],
                                            engine="SGLang"))
    assert entry(r, "b").verdict == "UNKNOWN" and entry(r, "b").engines()[0].source == engine.UNREAD


def test_take_over_only_deployments_do_not_receive_the_dtype():
    md = deployment("md", version="0.29.0", roles=[role("t", command=["vllm", "serve", "m"])])
    r = run(binding("b", "bf16"), md)
    assert not codes(r, "binding-dtype-rejected")
    assert entry(r, "b").uses[0].renders is False and entry(r, "b").verdict == "OK"


def test_auto_is_a_warning_and_unused_is_info():
    r = run(binding("a", "auto"), binding("u", "fp8_e4m3"), binding("x", "auto"), deployment("md", binding_name="x"))
    auto = codes(r, "binding-auto")
    assert sorted(f.name for f in auto) == ["a", "x"] and {f.severity for f in auto} == {"warning"}
    assert "keeps working" in auto[0].message and "new Binding may not declare auto" in auto[0].message
    unused = codes(r, "binding-unused")
    assert sorted(f.name for f in unused) == ["a", "u"] and {f.severity for f in unused} == {"info"}
    assert entry(r, "a").verdict == "WARNING auto, UNUSED"
    assert entry(r, "u").verdict == "UNUSED"
    assert entry(r, "x").verdict == "WARNING auto"


def test_used_by_a_deployment_not_in_the_input_is_unchecked_not_unused():
    r = run(binding("b", "fp8", used_by=["elsewhere"]))
    assert not codes(r, "binding-unused")
    f = only(r, "unchecked")
    assert f.severity == "warning" and "elsewhere" in f.message and "not in the input" in f.message


def test_missing_binding_is_an_error_for_deployments_and_opt_ins():
    r = run(deployment("md", binding_name="gone"),
            workload("w", [container(args=["m"])], binding_name="gone2"))
    missing = codes(r, "binding-missing")
    assert {(f.kind, f.name) for f in missing} == {("ModelDeployment", "md"), ("Deployment", "w")}
    assert all(f.severity == "error" for f in missing)
    assert "gone" in missing[0].message
    assert {b.verdict for b in r.bindings} == {"MISSING"}


def test_ascend_on_vllm_0_33_may_register_extra_values_so_it_is_unchecked():
    tpl = workload("w", [container(image="quay.io/ascend/vllm-ascend:v0.33.0", args=["m"])],
                   annotations={"kvcache.gpustack.ai/manufacturer": "ascend"})
    r = run(binding("b", "bf16"), tpl)
    assert not codes(r, "binding-dtype-rejected")
    assert "platform plugin" in only(r, "unchecked").message


def test_a_deployment_with_an_unknown_engine_is_reported_unchecked():
    r = run(binding("b", "fp8"), deployment("md", engine="tgi"))
    assert {f.code for f in r.findings} == {"unchecked", "setting"}
    assert all("not vLLM or SGLang" in f.message for f in codes(r, "unchecked"))


def test_namespace_scope_applies_to_deployments_and_bindings_too():
    r = run(binding("b", "bf16", ns="other"), deployment("md", ns="other", binding_name="b"), namespace=NS)
    assert r.bindings == [] and not codes(r, "binding-dtype-rejected")


# -- 2. roles that pass the flag themselves --------------------------------------------------

def test_the_guides_regex_false_positive_skip_layers_is_not_a_finding():
    args = ["--kv-cache-dtype-skip-layers", "3", "--kv-cache-dtype-skip-layers=4"]
    for version in ("0.19.0", "0.29.0", "0.33.0"):
        r = run(binding("b", "fp8"), deployment("md", version=version, binding_name="b", roles=[role(extra_args=args)]))
        assert not codes(r, "role-own-flag") and r.roles == []


def test_the_guides_regex_false_negative_abbreviation_found_on_0_18():
    args = ["--max-model-len", "4096", "--kv-cache-dt=fp8_e5m2"]
    r = run(binding("b", "fp8"), deployment("md", version="0.18.0", roles=[role(extra_args=args)]))
    f = only(r, "role-own-flag")
    assert f.severity == "error" and f.kind == "ModelDeployment" and f.name == "md"
    assert "spec.roles[0].extraArgs[2]" in f.message and "spec.roles[0].extraArgs[2]" in f.fix
    assert "`--kv-cache-dt=fp8_e5m2`" in f.message and "fp8_e5m2" in f.message
    e = role_entry(r, "md")
    assert e.verdict == "MISMATCH" and e.after == "fp8_e5m2"
    assert e.flags == [{"path": "spec.roles[0].extraArgs[2]", "text": "--kv-cache-dt=fp8_e5m2", "value": "fp8_e5m2"}]


def test_a_role_whose_pods_run_another_value_today_is_not_said_to_keep_it():
    """Issue 39 item 7: "the role keeps running fp8_e5m2" beside "Today: bfloat16 (1 pod)"."""
    md = deployment("md", version="0.29.0", roles=[role(extra_args=["--kv-cache-dtype", "fp8_e5m2"])])
    older = md_pod("md", "server", ["vllm", "serve", "m", "--kv-cache-dtype", "bfloat16"])
    f = only(run(binding("b", "fp8"), md, older), "role-own-flag")
    assert "Today: bfloat16 (1 pod)" in f.message and "keeps running" not in f.message, f.message
    assert "after the upgrade the role runs fp8_e5m2, not the Binding's 'fp8'" in f.message
    same = md_pod("md", "server", ["vllm", "serve", "m", "--kv-cache-dtype", "fp8_e5m2"])
    assert "the role keeps running fp8_e5m2" in only(run(binding("b", "fp8"), md, same), "role-own-flag").message


def test_the_abbreviation_is_ambiguous_from_0_19_and_the_engine_rejects_it():
    args = ["--kv-cache-dt=fp8_e5m2"]
    r = run(binding("b", "fp8"), deployment("md", version="0.19.0", roles=[role(extra_args=args)]))
    f = only(r, "role-own-flag")
    assert f.severity == "error"
    assert "ambiguous option" in f.message and "--kv-cache-dtype-skip-layers" in f.message
    assert "exits" in f.message and "spec.roles[0].extraArgs[0]" in f.message
    e = role_entry(r, "md")
    assert e.verdict == "REJECTED" and e.after == "REJECTED" and e.flags[0]["value"] is None
    assert "ambiguous" in e.flags[0]


@pytest.mark.parametrize("args, index, value", [
    (["--kv-cache-dtype", "fp8"], 0, "fp8"),
    (["--port", "8000", "--kv-cache-dtype=fp8"], 2, "fp8"),
    (["--kv_cache_dtype=fp8"], 0, "fp8"),
    (["--kv-cache_dtype", "fp8"], 0, "fp8"),
])
def test_every_spelling_vllm_reads_is_found_and_same_value_is_a_warning(args, index, value):
    r = run(binding("b", "fp8"), deployment("md", version="0.29.0", roles=[role(extra_args=args)]))
    f = only(r, "role-own-flag")
    assert f.severity == "warning" and f"spec.roles[0].extraArgs[{index}]" in f.message
    assert "next edit" in f.message
    assert role_entry(r, "md").verdict == "SAME"


def test_underscores_are_not_read_by_sglang_but_unique_prefixes_are():
    md = deployment("md", engine="SGLang", version="0.5.18", roles=[role(extra_args=["--kv_cache_dtype=fp8_e4m3"])])
    assert not codes(run(binding("b", "fp8_e4m3"), md), "role-own-flag")
    md = deployment("md", engine="SGLang", version="0.5.18", roles=[role(extra_args=["--kv-cache-d", "bf16"])])
    f = only(run(binding("b", "fp8_e4m3"), md), "role-own-flag")
    assert f.severity == "error" and "`--kv-cache-d bf16`" in f.message


def test_the_value_today_comes_from_the_pods_and_after_from_the_role():
    args = ["--kv-cache-dtype", "fp8_e5m2"]
    md = deployment("md", version="0.29.0", binding_name="bb",
                    roles=[role("a"), role("b", extra_args=["--port", "1"] + args)])
    # the Pod has not rolled yet: today it runs with the role's value alone
    pod = md_pod("md", "b", ["vllm", "serve", "m", "--port", "1"] + args)
    r = run(binding("bb", "fp8"), md, pod, setting_value="false")
    md_b = role_entry(r, "md", "b")
    assert md_b.today == "fp8_e5m2 (1 pod)" and md_b.after == "fp8_e5m2" and md_b.verdict == "MISMATCH"
    assert md_b.flags[0]["path"] == "spec.roles[1].extraArgs[2]"
    f = only(r, "role-own-flag")
    assert "role b" in f.message and "spec.roles[1].extraArgs[2]" in f.message
    # no Pods: predicted, and said so
    r = run(binding("bb", "fp8"), md, setting_value="false")
    assert role_entry(r, "md", "b").today == "fp8_e5m2 (no Pods: predicted)"


def test_binding_md_name_mismatch_is_reported_once():
    md = deployment("md", binding_name="bb", roles=[role(extra_args=["--kv-cache-dtype", "fp8"])])
    r = run(binding("bb", "fp8"), md)
    assert len(r.roles) == 1


def test_a_value_the_engine_rejects_is_an_error():
    md = deployment("md", version="0.29.0", roles=[role(extra_args=["--kv-cache-dtype", "bf16"])])
    f = only(run(binding("b", "fp8"), md), "role-own-flag")
    assert f.severity == "error" and "invalid choice: 'bf16'" in f.message


def test_a_rejected_binding_value_before_the_roles_is_fatal_until_vllm_0_33():
    roles = [role(extra_args=["--kv-cache-dtype", "bfloat16"])]
    r = run(binding("b", "bf16"), deployment("md", version="0.32.0", roles=roles))
    e = role_entry(r, "md")
    assert e.verdict == "REJECTED" and "the operator's --kv-cache-dtype" in e.reason
    assert only(r, "role-own-flag").severity == "error"
    r = run(binding("b", "bf16"), deployment("md", version="0.33.0", roles=roles))
    e = role_entry(r, "md")
    assert e.after == "bfloat16" and e.verdict == "MISMATCH"


def test_roles_with_command_and_deployments_without_kvcache_are_not_own_flag_findings():
    args = ["--kv-cache-dtype", "fp8_e5m2"]
    r = run(binding("b", "fp8"), deployment("no-kv", kv_cache=False, roles=[role(extra_args=args)]))
    assert r.roles == [] and not codes(r, "role-own-flag")
    cmd = ["vllm", "serve", "m", "--kv-cache-dtype", "fp8"]
    r = run(binding("b", "fp8"), deployment("t", roles=[role(command=cmd, extra_args=args)]))
    assert not codes(r, "role-own-flag") and role_entry(r, "t").type == "take-over"


def test_a_missing_binding_leaves_the_own_flag_a_warning():
    md = deployment("md", binding_name="gone", roles=[role(extra_args=["--kv-cache-dtype=fp8"])])
    r = run(md)
    assert only(r, "role-own-flag").severity == "warning"
    assert only(r, "binding-missing").severity == "error"


# -- 3. take-over roles --------------------------------------------------------------------------

@pytest.mark.parametrize("command, severity, verdict", [
    (["vllm", "serve", "m", "--kv-cache-dtype", "fp8"], "info", "OK"),
    (["vllm", "serve", "m", "--kv-cache-dtype", "fp8_e4m3"], "warning", "MISMATCH"),
    (["vllm", "serve", "m"], "warning", "MISSING"),
    (["vllm", "serve", "m", "--kv-cache-dtype", "bf16"], "error", "REJECTED"),
    (["/opt/start-engine"], "warning", "UNKNOWN"),
])
def test_take_over_roles(command, severity, verdict):
    md = deployment("md", version="0.29.0", roles=[role("embed", command=command)])
    r = run(binding("b", "fp8"), md)
    f = only(r, "takeover-role")
    assert f.severity == severity and "renders nothing" in f.message
    e = role_entry(r, "md", "embed")
    assert e.verdict == verdict and e.type == "take-over"
    if verdict == "UNKNOWN":
        assert "/opt/start-engine" in f.message      # the reason it cannot be known


def test_take_over_role_value_through_env_and_the_pods_today():
    cmd = ["vllm", "serve", "m", "--kv-cache-dtype", "$(DT)"]
    md = deployment("md", version="0.29.0", roles=[role("embed", command=cmd, env=[{"name": "DT", "value": "fp8"}])])
    pod = md_pod("md", "embed", ["vllm", "serve", "m"])
    r = run(binding("b", "fp8"), md, pod)
    e = role_entry(r, "md", "embed")
    assert e.verdict == "OK" and e.after == "fp8" and e.today == "auto (1 pod)"
    assert e.flags == [{"path": "spec.roles[0].command[3]", "text": "--kv-cache-dtype", "value": "fp8"}]


# -- 4. injection opt-ins ------------------------------------------------------------------------

def refused(report, kind, name):
    return [f for f in codes(report, "injection-refused") if (f.kind, f.name) == (kind, name)]


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"])
def test_every_workload_kind_with_the_flag_in_args_is_refused(kind):
    tpl = workload("w", [container(args=["m", "--kv-cache-dtype=fp8"])], kind=kind)
    f, = refused(run(binding("b", "fp8"), tpl), kind, "w")
    assert f.severity == "error" and "args[1]" in f.message and "`--kv-cache-dtype=fp8`" in f.message
    assert "next Pods" in f.message and "FailedCreate" in f.message
    assert "remove args[1]" in f.fix


def test_the_flag_in_command_in_vllm_spellings_and_abbreviations():
    tpl = workload("w", [container(command=["vllm", "serve", "m", "--kv_cache_dtype", "fp8"])])
    assert "command[3]" in refused(run(binding("b", "fp8"), tpl), "Deployment", "w")[0].message
    # 0.18: a unique prefix; 0.19: ambiguous (refused as well: the engine could not start either)
    tpl = workload("w", [container(image="vllm/vllm-openai:v0.18.0", args=["m", "--kv-cache-dt", "fp8"])])
    assert "args[1] `--kv-cache-dt fp8`" in refused(run(binding("b", "fp8"), tpl), "Deployment", "w")[0].message
    tpl = workload("w", [container(image="vllm/vllm-openai:v0.19.0", args=["m", "--kv-cache-dt", "fp8"])])
    assert "ambiguous" in refused(run(binding("b", "fp8"), tpl), "Deployment", "w")[0].message


def test_skip_layers_and_other_engines_spellings_are_not_refused():
    tpl = workload("w", [container(args=["m", "--kv-cache-dtype-skip-layers", "2"])], annotations=FORWARDED)
    assert not refused(run(binding("b", "fp8"), tpl), "Deployment", "w")
    tpl = workload("w", [container(image="lmsysorg/sglang:v0.5.18", command=["python3", "-m", "sglang.launch_server",
                                                                             "--kv_cache_dtype", "fp8"])],
                   engine="SGLang")
    assert not refused(run(binding("b", "fp8_e4m3"), tpl), "Deployment", "w")


@pytest.mark.parametrize("command, word", [
    (["sh", "-c", "vllm serve m"], "sh -c"),
    (["/bin/bash", "-lc", "vllm serve m"], "bash -c"),
    (["bash", "-o", "pipefail", "-c", "vllm serve m"], "bash -c"),
    (["env", "A=1", "zsh", "-c", "vllm serve m"], "zsh -c"),
    (["tini", "--", "dash", "-c", "x"], "dash -c"),
    (["dumb-init", "ash", "-c", "x"], "ash -c"),
    (["busybox", "sh", "-c", "x"], "sh -c"),
    (["toybox", "sh", "-c", "x"], "sh -c"),
    (["timeout", "-s", "TERM", "10", "ksh", "-c", "x"], "ksh -c"),
    (["env", "-S", "vllm serve m"], "env -S"),
    (["/entrypoint.sh", "serve"], "/entrypoint.sh"),
    (["tini", "--", "./start.sh"], "./start.sh"),
])
def test_shells_env_split_and_scripts_are_refused(command, word):
    f, = refused(run(binding("b", "fp8"), workload("w", [container(command=command)])), "Deployment", "w")
    assert word in f.message


def test_plain_commands_and_shell_without_c_are_not_refused():
    for command in (["vllm", "serve", "m"], ["env", "A=1", "vllm", "serve", "m"], ["tini", "--", "vllm", "serve"]):
        assert not refused(run(binding("b", "fp8"), workload("w", [container(command=command)])), "Deployment", "w")


def test_no_command_and_no_args_and_container_choice():
    f, = refused(run(binding("b", "fp8"), workload("w", [container()])), "Deployment", "w")
    assert "no command and no args" in f.message
    two = [container("a", args=["m"]), container("b", args=["m"])]
    f, = refused(run(binding("b", "fp8"), workload("w", two)), "Deployment", "w")
    assert "2 containers" in f.message and "kvcache.gpustack.ai/container" in f.fix
    tpl = workload("w", two, annotations={"kvcache.gpustack.ai/container": "c"})
    assert "'c'" in refused(run(binding("b", "fp8"), tpl), "Deployment", "w")[0].message
    tpl = workload("w", [container("side", args=["--kv-cache-dtype=fp8"]), container("eng", args=["m"])],
                   annotations={"kvcache.gpustack.ai/container": "eng", **FORWARDED})
    assert not refused(run(binding("b", "fp8"), tpl), "Deployment", "w")


def test_existing_pod_and_its_template_are_both_reported_with_distinct_messages():
    c = container(args=["m", "--kv-cache-dtype", "fp8"])
    r = run(binding("b", "fp8"), injected_pod("w-abc-1", [c], owner=("ReplicaSet", "w-abc")), workload("w", [c]))
    pod, = refused(r, "Pod", "w-abc-1")
    tpl, = refused(r, "Deployment", "w")
    assert "already exists and keeps running" in pod.message and "ReplicaSet w-abc reports FailedCreate" in pod.message
    assert "next Pods" in tpl.message and "already exists" not in tpl.message


def test_the_webhooks_own_appended_pair_is_not_the_pods_flag():
    injected = {"kvcache.gpustack.ai/injected": '{"binding":"b"}', **FORWARDED}
    c = container(args=["m", "--kv-cache-dtype", "fp8"])
    assert not codes(run(binding("b", "fp8"), injected_pod("p", [c], annotations=injected)), "injection-refused")
    # without the injected record the pair is the Pod's own
    assert codes(run(binding("b", "fp8"), injected_pod("p", [c])), "injection-refused")
    # an own flag before the webhook's pair is still found
    c = container(args=["m", "--kv-cache-dtype=fp8_e5m2", "--kv-cache-dtype", "fp8"])
    f = only(run(binding("b", "fp8"), injected_pod("p", [c], annotations=injected)), "injection-refused")
    assert "args[1]" in f.message


def test_opt_ins_without_the_label_or_owned_by_a_deployment_are_ignored():
    r = run(binding("b", "fp8"), workload("w", [container(args=["m", "--kv-cache-dtype=fp8"])], inject=False))
    assert not codes(r, "injection-refused")


def test_missing_engine_annotation_is_unchecked_but_shell_rules_still_apply():
    tpl = workload("w", [container(command=["sh", "-c", "x"])], engine=None)
    r = run(binding("b", "fp8"), tpl)
    assert "kvcache.gpustack.ai/engine" in only(r, "unchecked").message
    assert refused(r, "Deployment", "w")


# -- 5. the Setting ------------------------------------------------------------------------------

@pytest.mark.parametrize("value, words", [
    ("true", "already on"), ("false", "off"), ("0", "off"), (None, "unset"), ("absent", "not in the input"),
])
def test_setting_finding(value, words):
    f = only(run(setting_value=value), "setting")
    assert f.severity == "info" and words in f.message
    assert f.kind == "Setting" and f.namespace == api.SETTING_NAMESPACE


def test_setting_not_a_boolean_is_an_error():
    assert only(run(setting_value="yes"), "setting").severity == "error"


def test_setting_off_fix_points_at_the_command():
    assert "kubectl kvcache setting on" in only(run(setting_value="false"), "setting").fix


# -- helpers -------------------------------------------------------------------------------------

def test_flag_tokens_on_the_engine_model():
    p = engines.profile("vllm", engines.parse_version("0.29.0"))
    toks = [Token(t, "extraArgs", i) for i, t in enumerate(
        ["--kv-cache-dtype-skip-layers", "1", "--kv-cache-dtype", "--port", "--kv-cache-dtype.x", "1"])]
    found = checks.flag_tokens(toks, p)
    assert [(f.index, f.value) for f in found] == [(2, None), (4, '{"x": ...}')]


def test_accepted_since_and_suggest():
    assert checks.accepted_since("sglang", "fp4_e2m1") is None      # removed in 0.5.21
    assert checks.accepted_since("vllm", "float16") == "0.18.0"
    assert checks.accepted_since("vllm", "fp8_e5m2") == "0.4.3"     # removed in 0.4.1, back in 0.4.3
    p = [checks.EngineAt("sglang", engines.parse_version("0.5.18"), "test")]
    assert checks.suggest_dtype("fp8", p) == "fp8_e4m3" and checks.suggest_dtype("float16", p) is None
    # the suggestion is a spelling that starts: vLLM 0.14.1's parser takes bfloat16, its CUDA backends do not
    old, new = (checks.EngineAt("vllm", engines.parse_version(v), "test", platform="cuda") for v in ("0.14.1", "0.18.0"))
    assert "bfloat16" in old.profile.accepted and "bfloat16" not in old.starting and "bfloat16" in new.starting
    assert checks.suggest_dtype("bfloat16", [old]) is None and checks.suggest_dtype("bfloat16", [new]) == "bfloat16"


def test_accepted_since_reads_added_releases_and_the_fix_names_them():
    """Issue 31: a 0.35 file that accepts `fp4_e2m1`: the fix says vLLM accepts it from 0.35.0
    (not "no such spelling"), and without the file it says vLLM has none."""
    report = run(binding("b", "fp4_e2m1"), deployment("md", version="0.34.0"))
    assert "vLLM has no spelling of 'fp4_e2m1'" in only(report, "binding-dtype-rejected").fix
    doc = enginefiles.release_slice("vllm", "0.34.0", "0.35.0")
    doc["data"]["values"]["fp4_e2m1"] = [["0.35.0", None]]
    try:
        engine.add_releases([("vllm-0.35.0.json", doc)])
        assert checks.accepted_since("vllm", "fp4_e2m1") == "0.35.0"
        assert checks.accepted_since("sglang", "fp4_e2m1") is None and checks.accepted_since("vllm", "fp8") == "0.4.1"
        f = only(run(binding("b", "fp4_e2m1"), deployment("md", version="0.34.0")), "binding-dtype-rejected")
        assert "vLLM accepts 'fp4_e2m1' from 0.35.0" in f.fix and "no spelling" not in f.fix
        assert not codes(run(binding("b", "fp4_e2m1"), deployment("md", version="0.35.0")), "binding-dtype-rejected")
    finally:
        engine.add_releases([])
    assert checks.accepted_since("vllm", "fp4_e2m1") is None


def test_two_rejecting_releases_of_one_engine_give_one_hint():
    report = run(binding("b", "ultraquant_4bit"), deployment("a", version="0.29.0"),
                 deployment("c", version="0.30.0"), deployment("s", engine="SGLang", version="0.5.18"),
                 deployment("t", engine="SGLang", version="0.5.20"))
    f = only(report, "binding-dtype-rejected")
    assert "vLLM 0.29.0" in f.message and "vLLM 0.30.0" in f.message
    assert f.fix.count("vLLM accepts 'ultraquant_4bit' from 0.32.0") == 1
    assert f.fix.count("SGLang has no spelling of 'ultraquant_4bit'") == 1


def test_findings_are_sorted_by_severity_and_the_setting_comes_last():
    r = run(binding("u", "fp8"), binding("a", "auto"), binding("b", "bf16"), deployment("md", binding_name="b"))
    ranks = [checks.SEVERITIES.index(f.severity) for f in r.findings[:-1]]
    assert ranks == sorted(ranks) and r.findings[-1].code == "setting"
    from kubectl_kvcache.render.checks import CHECK

    d = CHECK.to_dict(r)        # the JSON contract is the view's: the report's fields, its kind first
    assert list(d)[0] == "kind" and d["kind"] == "CheckReport" and d["summary"] == {"error": 1, "warning": 1, "info": 3}
    assert set(d["findings"][0]) == {"severity", "code", "namespace", "kind", "name", "message", "fix"}


def _docs_findings_table():
    """(code, severity column, object column) of each row of docs/check.md "Finding codes"."""
    page = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs",
                        "check.md")
    with open(page, encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Finding codes", 1)[1]
    rows = [line for line in section.split("\n\n", 3)[2].splitlines() if line.startswith("| `")]
    return [tuple(cell.strip().strip("`") for cell in row.strip("|").split(" | ")[:3]) for row in rows]


def test_the_docs_findings_table_is_the_registry():
    """One row per code, in the registry's order, with its usual severity first and its object."""
    table = _docs_findings_table()
    assert [code for code, _, _ in table] == list(checks.CODES)
    for code, severity, about in table:
        row = checks.CODES[code]
        assert severity.split()[0] == row.severity, code
        assert about == row.about, code


def test_the_bindings_exit_code_follows_the_registry():
    failing = {c.code for c in checks.CODES.values() if c.fails_bindings}
    assert failing == set(checks.BINDING_FAILURES) and failing <= {c for c, r in checks.CODES.items()
                                                                  if r.severity == checks.ERROR}


def test_the_launch_the_webhook_cannot_see_is_refused_unless_declared():
    # pod_kv_cache_inject.go: checkLaunchArgs -- args without a command hide the image's ENTRYPOINT
    f, = refused(run(binding("b", "fp8"), workload("w", [container(args=["m"])])), "Deployment", "w")
    assert "args but no command" in f.message and "launch-args-forwarded" in f.fix
    assert not refused(run(binding("b", "fp8"), workload("w", [container(args=["m"])], annotations=FORWARDED)),
                       "Deployment", "w")
    # launchEngine knows `vllm` and `python3 -m sglang.launch_server`; launchMatchesEngine the rest
    tpl = workload("w", [container(command=["vllm", "serve", "m"])], engine="SGLang")
    assert "the annotations select sglang" in refused(run(binding("b", "bf16"), tpl), "Deployment", "w")[0].message
    tpl = workload("w", [container(command=["python", "-m", "vllm.entrypoints.openai.api_server"])])
    assert "cannot identify" in refused(run(binding("b", "fp8"), tpl), "Deployment", "w")[0].message


def test_a_roles_own_flag_is_judged_at_its_role_image():
    """The role runs vllm/vllm-openai:v0.10.2 (its stated image), whose parser rejects bfloat16,
    whatever engine.version says: its own `--kv-cache-dtype bfloat16` is REJECTED there."""
    md = deployment("md", version="0.29.0",
                    roles=[role(image="vllm/vllm-openai:v0.10.2", extra_args=["--kv-cache-dtype", "bfloat16"])])
    r = run(binding("b", "fp8"), md)
    (entry_,) = r.roles
    assert entry_.verdict == "REJECTED" and str(entry_.engine.version) == "0.10.2"
    assert entry_.engine.source == engine.ROLE_IMAGE
    md = deployment("md", version="0.29.0", roles=[role(extra_args=["--kv-cache-dtype", "bfloat16"])])
    (entry_,) = run(binding("b", "bfloat16"), md).roles
    assert entry_.verdict == "SAME"


# -- what the ModelDeployment webhook does to the next edit, today and after `setting on` --------
#
# gpustack/gpustack-operator, pkg/worker/webhooks/worker/model_deployment_kv_cache_dtype_test.go at
# 6678d71d3c725c4ec79d4c06992cf621f1df8b5a (TestValidateModelDeploymentKVCacheDtype,
# TestModelDeploymentWebhook_KVCacheDtypeReadsTheSetting) for the dtype; model_deployment.go at
# 049325a5dfca3da815de7decdd4360bbb238ba15 (validateModelDeploymentRoleExtraArgs) for the owned keys.

def _deleting(md_obj):
    md_obj["metadata"]["deletionTimestamp"] = "2026-03-10T10:00:00Z"
    md_obj["metadata"]["finalizers"] = ["worker.gpustack.ai/binding-in-use"]
    return decode.deployment_record(md_obj)


@pytest.mark.parametrize("case, setting_value, refused_now", [
    ("create, the setting on", "true", True),
    ("update, the setting off", "false", False),
    ("create, the setting unset reads its default", None, True),
])
def test_an_own_flag_says_what_the_webhook_does_today_and_after_setting_on(case, setting_value, refused_now):
    # TestModelDeploymentWebhook_KVCacheDtypeReadsTheSetting, case `case`
    md = deployment("md", roles=[role(extra_args=["--kv-cache-dtype=fp8_e5m2"])])
    f = only(run(binding("b", "fp8"), md, setting_value=setting_value), "role-own-flag")
    now = "The webhook refuses the deployment's next edit (the Setting is on) until it is removed"
    later = ("Today (the Setting off) the webhook admits the deployment's edits; after `setting on` its next edit "
             "is refused until the flag is removed")
    assert (now in f.message, later in f.message) == (refused_now, not refused_now), f.message


def test_a_same_value_own_flag_with_the_setting_off_is_refused_only_after_setting_on():
    md = deployment("md", roles=[role(extra_args=["--kv-cache-dtype", "fp8"])])
    f = only(run(binding("b", "fp8"), md, setting_value="false"), "role-own-flag")
    assert "after `setting on` only the deployment's next edit is refused" in f.message
    assert "The webhook refuses the deployment's next edit (the Setting is on)" not in f.message


def test_a_deployment_being_deleted_is_not_refused_for_its_own_flag():
    # TestValidateModelDeploymentKVCacheDtype, "a deployment being deleted"
    md = _deleting(o.deployment("md", "vLLM", "0.29.0", "b", ns=NS, roles=[role(extra_args=["--kv-cache-dtype=fp8"])]))
    assert md.deleting
    f = only(run(binding("b", "fp8"), md), "role-own-flag")
    assert "It is being deleted: the webhook does not judge this flag on it" in f.message
    assert "refuses the deployment's next edit" not in f.message


QWEN_PREFILL = ["--disaggregation-mode", "prefill", "--disaggregation-transfer-backend", "mooncake",
                "--disaggregation-bootstrap-port", "8998"]


@pytest.mark.parametrize("setting_value", ["true", "false"])
def test_sglang_disaggregation_keys_make_every_edit_refused_whatever_the_setting(setting_value):
    md = deployment("pd", engine="SGLang", version="0.5.19", binding_name="b",
                    roles=[role("prefill", extra_args=QWEN_PREFILL)])
    f = only(run(binding("b", "bf16"), md, setting_value=setting_value), "role-owned-arg")
    assert f.severity == "error" and (f.kind, f.name) == ("ModelDeployment", "pd")
    assert all(f"spec.roles[0].extraArgs[{j}]" in f.message for j in (0, 2, 4))
    assert "refuses every create and update of the deployment" in f.message and "whatever the Setting" in f.message
    assert f.fix.startswith("remove spec.roles[0].extraArgs[0], spec.roles[0].extraArgs[1], "
                            "spec.roles[0].extraArgs[2], spec.roles[0].extraArgs[3], spec.roles[0].extraArgs[4], "
                            "spec.roles[0].extraArgs[5] from ModelDeployment pd")
    # not a consequence of the Setting: `setting on` is not gated on it (judge/gate.py)
    assert f not in checks.caused_by_setting_on(run(binding("b", "bf16"), md).findings)


def test_owned_keys_are_refused_without_a_pool_and_while_the_deployment_is_deleted():
    no_pool = deployment("pd", engine="SGLang", version="0.5.19", kv_cache=False,
                         roles=[role("decode", extra_args=["--disaggregation-mode=decode"])])
    assert "spec.roles[0].extraArgs[0]" in only(run(no_pool), "role-owned-arg").message
    going = _deleting(o.deployment("pd", "SGLang", "0.5.19", "b", ns=NS,
                                   roles=[role("decode", extra_args=["--disaggregation-mode=decode"])]))
    assert "while it is being deleted too" in only(run(binding("b", "bf16"), going), "role-owned-arg").message
    vllm = deployment("v", roles=[role(extra_args=["--disaggregation-mode=decode"])])
    assert not codes(run(binding("b", "bf16"), vllm), "role-owned-arg")     # SGLang's key, not vLLM's


def test_the_example_qwen_pd_is_told_its_next_edit_is_refused():
    import json

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "examples", "cluster.json"), encoding="utf-8") as fh:
        items = json.load(fh)["items"]
    qwen = decode.deployment_record(next(i for i in items if i["kind"] == "ModelDeployment"
                                         and i["metadata"]["name"] == "qwen-pd"))
    found = codes(run(binding(qwen.binding, "bf16", ns=qwen.namespace), qwen), "role-owned-arg")
    assert sorted(f.message.split(" ")[1] for f in found) == ["decode", "prefill"]
    assert all("--disaggregation-mode" in f.message and "--disaggregation-transfer-backend" in f.message
               for f in found)
