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
                              "setting": {"on": True, "turnOff": True, "turnOnAtEnd": True}}
    assert actions(plan) == [
        "setting False", "wait Setting model-deployment-kv-cache-dtype-owned value=false",
        "create KVCachePoolBinding sgl-fp8-e4m3", "wait KVCachePoolBinding sgl-fp8-e4m3 bound",
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
    plan = plan_of("chat-fp8", "-n", "llm-prod", "-f", EXAMPLE, "--dtype", "fp8_e4m3")
    assert plan["steps"][2]["object"]["spec"]["quota"] == {"ceiling": "1Ti"}


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
    (("sgl-fp8", "--dtype", "fp8"), "is the dtype of sgl-fp8 already"),
    (("sgl-fp8", "--dtype", "FP8"), "lower case"),
    (("chat-fp8",), "no engine that receives it rejects it: nothing to recover; pass --dtype"),
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


# -- resuming: the planner reads an earlier run's backups --------------------------------------

def _inputs(files, backups=()):
    from kubectl_kvcache.load import recovery
    from kubectl_kvcache.kube.connection import Connection
    from kubectl_kvcache.load.scope import Scope

    from kubectl_kvcache.judge import checks

    found = recovery.load_recovery(Connection(), Scope(namespace="team", files=(files,)), "b", backups=backups)[0]
    return recover.inputs_for(found, checks.check(found.snapshot))


def test_resume_of_replace_recreates_a_deleted_deployment_from_its_backup(tmp_path):
    old = ob.deployment("s", engine="SGLang", version="0.5.18", binding_name="b")
    old["metadata"]["resourceVersion"] = "7"
    path = tmp_path / "in.json"
    path.write_text(json.dumps(ob.as_list(ob.binding("b", "fp8", pool="p"), ob.setting("false"))))
    setting_before = ob.setting("true")
    plan = recover.plan(_inputs(str(path), backups=[old, setting_before]),
                        recover.Request(dtype="fp8_e4m3", strategy="replace"))
    assert actions(plan.to_dict())[2:4] == ["create ModelDeployment s", "wait ModelDeployment s available"]
    # the Setting is off because the earlier run turned it off: the plan turns it back on
    assert actions(plan.to_dict())[-2:] == ["setting True", "wait Setting model-deployment-kv-cache-dtype-owned "
                                                             "value=true"]


def test_resume_after_the_old_binding_went_plans_from_its_backup(tmp_path):
    path = tmp_path / "in.json"
    new_md = ob.deployment("s-fp8-e4m3", engine="SGLang", version="0.5.18", binding_name="b-fp8-e4m3")
    path.write_text(json.dumps(ob.as_list(ob.binding("b-fp8-e4m3", "fp8_e4m3", pool="p", domain="default-fp8-e4m3"),
                                          new_md, ob.setting("false"))))
    plan = recover.plan(_inputs(str(path), backups=[ob.binding("b", "fp8", pool="p"), ob.setting("true")]),
                        recover.Request(dtype="fp8_e4m3"))
    assert plan.binding["exists"] is False
    assert actions(plan.to_dict()) == ["create KVCachePoolBinding b-fp8-e4m3",
                                       "wait KVCachePoolBinding b-fp8-e4m3 bound",
                                       "setting True", "wait Setting model-deployment-kv-cache-dtype-owned value=true"]


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
