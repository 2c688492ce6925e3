"""`kubectl kvcache check|bindings|roles` end to end through `cli.main`, on examples/cluster.json
and on small files written by the test."""

import json
import os

import pytest
import yaml

from kubectl_kvcache.load import cluster as cluster_lists, reader
from runcli import kvcache
from kubectl_kvcache.errors import Forbidden
from kubectl_kvcache.operator.api import GROUP, VERSION

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "cluster.json")


def findings(*argv):
    code, out, err = kvcache(*argv, "-o", "json")
    assert err == "", err
    return code, json.loads(out)


def by(report, code):
    return sorted((f["namespace"], f["kind"], f["name"]) for f in report["findings"] if f["code"] == code)


# -- objects for files -----------------------------------------------------------------------

def md(name, engine="vLLM", version="0.29.0", binding="b", roles=None, ns="team"):
    eng = {"name": engine}
    if version:
        eng["version"] = version
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelDeployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"engine": eng, "kvCache": {"poolRef": {"name": binding}},
                     "roles": roles or [{"name": "server", "kind": "server"}]}}


def kvb(name, dtype, ns="team"):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KVCachePoolBinding",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"poolRef": {"name": "p"}, "domain": {"name": "d", "blockSize": 16, "dtype": dtype}}}


def setting(value):
    return {"apiVersion": "gpustack.ai/v1", "kind": "Setting",
            "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
            "spec": {"value": value}, "status": {"value": value}}


def job(name, args, kind="Job"):
    template = {"metadata": {"labels": {"kvcache.gpustack.ai/inject": "true"},
                             "annotations": {"kvcache.gpustack.ai/binding": "b", "kvcache.gpustack.ai/engine": "vLLM"}},
                "spec": {"containers": [{"name": "c", "image": "vllm/vllm-openai:v0.29.0", "args": args}]}}
    spec = {"template": template} if kind != "CronJob" else {"jobTemplate": {"spec": {"template": template}}}
    return {"apiVersion": "batch/v1", "kind": kind, "metadata": {"name": name, "namespace": "team"}, "spec": spec}


# -- the example cluster: examples/README.md "Expected check findings" ------------------------

def test_example_check_json():
    code, report = findings("check", "-A", "-f", EXAMPLE)
    assert code == 1 and report["kind"] == "CheckReport"
    assert by(report, "binding-dtype-rejected") == [("llm-prod", "KVCachePoolBinding", "sgl-fp8")]
    assert by(report, "binding-auto") == [("llm-prod", "KVCachePoolBinding", "legacy-auto")]
    assert by(report, "binding-unused") == [("llm-prod", "KVCachePoolBinding", "legacy-auto"),
                                            ("llm-prod", "KVCachePoolBinding", "unused")]
    assert by(report, "role-own-flag") == [("llm-prod", "ModelDeployment", "llama-long")]
    assert by(report, "takeover-role") == [("llm-prod", "ModelDeployment", "embed-takeover")]
    # SGLang's disaggregation keys in both roles: every edit refused, whatever the Setting
    assert by(report, "role-owned-arg") == [("llm-prod", "ModelDeployment", "qwen-pd")] * 2
    assert by(report, "injection-refused") == [("llm-research", "Deployment", "bench-vllm"),
                                               ("llm-research", "StatefulSet", "vllm-shell")]
    assert by(report, "binding-missing") == [] and by(report, "unchecked") == []
    assert report["summary"] == {"error": 6, "warning": 2, "info": 3}
    assert report["setting"]["value"] == "true" and report["setting"]["on"] is True
    text = {f["code"] + ":" + f["name"]: f for f in report["findings"]}
    assert "spec.roles[0].extraArgs[2]" in text["role-own-flag:llama-long"]["message"]
    assert "SGLang 0.5.18" in text["binding-dtype-rejected:sgl-fp8"]["message"]
    assert "fp8_e4m3" in text["binding-dtype-rejected:sgl-fp8"]["fix"]
    assert "fp8_e4m3" in text["takeover-role:embed-takeover"]["message"]
    assert "args[1]" in text["injection-refused:bench-vllm"]["message"]
    assert "sh -c" in text["injection-refused:vllm-shell"]["message"]
    assert text["setting:model-deployment-kv-cache-dtype-owned"]["severity"] == "info"


def test_example_check_table_and_wide():
    code, out, err = kvcache("check", "-A", "-f", EXAMPLE)
    assert code == 1
    header = out.splitlines()[0].split()
    assert header == ["NAMESPACE", "SEVERITY", "CODE", "OBJECT", "MESSAGE"]
    assert out.splitlines()[1].split()[:4] == ["llm-prod", "error", "binding-dtype-rejected", "kvcachepoolbinding/sgl-fp8"]
    assert "6 errors, 2 warnings, 3 info" in err.strip().splitlines()[-3:]   # then the verdict, the next step
    code, out, _ = kvcache("check", "-A", "-f", EXAMPLE, "-o", "describe")
    assert out.count("\nFix:        ") == 11 and out.startswith("Name:       sgl-fp8\nNamespace:  llm-prod\n")
    code, out, _ = kvcache("check", "-A", "-f", EXAMPLE, "--no-headers")
    assert not out.startswith("NAMESPACE") and out.startswith("llm-prod")


def test_example_check_yaml_is_the_same_report():
    code, out, _ = kvcache("check", "-A", "-f", EXAMPLE, "-o", "yaml")
    assert code == 1
    assert yaml.safe_load(out) == findings("check", "-A", "-f", EXAMPLE)[1]


def test_example_namespace_scope():
    code, report = findings("check", "-n", "llm-research", "-f", EXAMPLE)
    assert {f["namespace"] for f in report["findings"]} == {"llm-research", "gpustack-system"}
    assert report["summary"]["error"] == 2


def test_example_bindings():
    code, out, err = kvcache("bindings", "-A", "-f", EXAMPLE)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["NAMESPACE", "BINDING", "DTYPE", "ENGINES", "USERS", "VERDICT"]
    rows = {line.split()[1]: line.split() for line in lines[1:]}
    assert rows["sgl-fp8"][-3:] == ["sglang:0.5.18", "1", "REJECTED"]
    assert rows["legacy-auto"][-1] == "AUTO,UNUSED"
    assert rows["unused"][-1] == "UNUSED"
    assert rows["sgl-bf16"][3] == "sglang:0.5.19"
    for ok in ("chat-fp8", "sgl-bf16", "research-fp8", "research-bf16"):
        assert rows[ok][-1] == "OK"
    code, out, _ = kvcache("bindings", "-A", "-f", EXAMPLE, "-o", "json")
    data = json.loads(out)
    assert data["kind"] == "BindingList"
    items = {i["name"]: i for i in data["items"]}
    assert items["sgl-fp8"]["suggestedDtype"] == "fp8_e4m3"
    assert items["sgl-fp8"]["rejectedBy"][0]["name"] == "deepseek-sgl"
    assert [u["name"] for u in items["research-fp8"]["usedBy"]] == [
        "notebook-vllm-6c8d9b7f5-x2kqp", "bench-vllm", "notebook-vllm", "vllm-shell"]


def test_example_roles():
    code, out, _ = kvcache("roles", "-A", "-f", EXAMPLE)
    assert code == 1
    header = out.splitlines()[0]
    assert header.split() == ["NAMESPACE", "DEPLOYMENT", "ROLE", "DTYPE", "AFTER", "UPGRADE", "VERDICT", "TODAY"]
    code, out, _ = kvcache("roles", "-A", "-f", EXAMPLE, "-o", "wide")
    assert out.splitlines()[0].rstrip().endswith("TODAY              ROLE FLAG")
    code, out, _ = kvcache("roles", "-A", "-f", EXAMPLE, "-o", "yaml")
    data = yaml.safe_load(out)
    assert data["kind"] == "RoleList"
    items = {i["deployment"]: i for i in data["items"]}
    assert set(items) == {"llama-long", "embed-takeover"}
    ll = items["llama-long"]
    assert ll["type"] == "own-flag" and ll["flags"][0]["path"] == "spec.roles[0].extraArgs[2]"
    assert ll["today"] == "fp8_e5m2 (1 pod)" and ll["afterUpgrade"] == "fp8_e5m2" and ll["severity"] == "error"
    et = items["embed-takeover"]
    assert et["type"] == "take-over" and et["verdict"] == "MISMATCH" and et["severity"] == "warning"


# -- files written by the test ---------------------------------------------------------------

def test_clean_input_exits_0_and_strict_fails_on_warnings(write):
    path = write(kvb("b", "fp8"), md("m"), setting("true"))
    code, out, err = kvcache("check", "-f", path)
    assert code == 0 and err.strip().endswith("0 errors, 0 warnings, 1 info")
    path = write(kvb("b", "auto"), md("m"), setting("true"))
    assert kvcache("check", "-f", path)[0] == 0
    assert kvcache("check", "-f", path, "--strict")[0] == 1


@pytest.mark.parametrize("engine, version, dtype, rejected", [
    ("SGLang", "0.5.3", "bf16", True), ("SGLang", "0.5.4", "bf16", False),
    ("vLLM", "0.10.2", "bfloat16", True), ("vLLM", "0.11.0", "bfloat16", False),
])
def test_binding_boundaries_from_files(write, engine, version, dtype, rejected):
    path = write(kvb("b", dtype), md("m", engine=engine, version=version))
    code, report = findings("check", "-f", path)
    assert (by(report, "binding-dtype-rejected") != []) is rejected
    assert code == (1 if rejected else 0)
    code, out, _ = kvcache("bindings", "-f", path)
    assert out.splitlines()[1].split()[-3:] == [f"{engine.lower()}:{version}", "1", "REJECTED" if rejected else "OK"]


@pytest.mark.parametrize("version, verdict", [("0.18.0", "MISMATCH"), ("0.18.1", "MISMATCH"), ("0.19.0", "REJECTED")])
def test_abbreviated_role_flag_from_yaml_files(write, version, verdict):
    roles = [{"name": "server", "extraArgs": ["--kv-cache-dtype-skip-layers", "2", "--kv-cache-dt=fp8_e5m2"]}
             if version != "0.18.0" and version != "0.18.1" else
             {"name": "server", "extraArgs": ["--kv-cache-dt=fp8_e5m2"]}]
    path = write(kvb("b", "fp8"), md("m", version=version, roles=roles), name="objs.yaml", fmt="yaml")
    code, data = findings("roles", "-f", path)
    assert code == 1
    item, = data["items"]
    assert item["verdict"] == verdict
    assert item["flags"][-1]["path"].endswith(f"extraArgs[{len(roles[0]['extraArgs']) - 1}]")
    if verdict == "REJECTED":
        assert "ambiguous option" in item["reason"]


def test_skip_layers_alone_is_not_a_role(write):
    roles = [{"name": "server", "extraArgs": ["--kv-cache-dtype-skip-layers", "2"]}]
    path = write(kvb("b", "fp8"), md("m", version="0.29.0", roles=roles))
    code, out, err = kvcache("roles", "-f", path)
    assert code == 0 and out == "" and "No pool-attached roles" in err
    assert findings("roles", "-f", path)[1]["items"] == []


@pytest.mark.parametrize("kind", ["Job", "CronJob"])
def test_batch_templates_refused(write, kind):
    path = write(kvb("b", "fp8"), job("j", ["m", "--kv_cache_dtype=fp8"], kind=kind))
    code, report = findings("check", "-f", path)
    assert code == 1 and by(report, "injection-refused") == [("team", kind, "j")]


def test_missing_binding_and_setting_absent_from_files(write):
    path = write(md("m", binding="nope"))
    code, report = findings("check", "-f", path)
    assert code == 1 and by(report, "binding-missing") == [("team", "ModelDeployment", "m")]
    assert report["setting"]["source"] == "assumed"
    code, out, _ = kvcache("bindings", "-f", path)
    assert code == 1 and out.splitlines()[1].rstrip().endswith("MISSING")


def test_empty_input_says_nothing_was_found_and_fails(write):
    """Nothing check reads in the input: said, and the gate does not pass (issue 48: before, exit 0)."""
    path = write(setting("false"))
    verdict = ("verdict: FAILED (exit code 1): no KVCachePoolBindings, pool-attached ModelDeployments or injection "
               "opt-ins found in the input: nothing was verified there")
    code, out, err = kvcache("check", "-f", path)
    assert code == 1 and "No KVCachePoolBindings" in err and verdict in err.splitlines()
    for command in ("bindings", "roles"):
        code, out, err = kvcache(command, "-f", path)
        assert code == 1 and out == "" and "found in the input." in err and verdict in err.splitlines()


def test_stdin_input():
    with open(EXAMPLE) as f:
        text = f.read()
    code, out, err = kvcache("check", "-A", "-f", "-", "-o", "json", stdin=text)
    assert code == 1 and json.loads(out)["summary"]["error"] == 6


# -- could not check: exit 2, never "no findings" ---------------------------------------------

def test_unreadable_input_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, out, err = kvcache("check", "-f", str(bad))
    assert code == 2 and out == "" and err.startswith("error:")


@pytest.mark.parametrize("command", ["check", "bindings", "roles"])
def test_a_list_refused_by_rbac_exits_2_with_no_report(monkeypatch, command):
    class Client:
        namespace = "team"

    def refused(client, scope, *a, **k):
        raise Forbidden('cannot list statefulsets.apps in namespace team: forbidden (user "dev")')

    monkeypatch.setattr(reader, "open_client", lambda *a, **k: Client())
    monkeypatch.setattr(cluster_lists, "load_cluster", refused)
    code, out, err = kvcache(command)
    assert code == 2 and out == ""
    assert "statefulsets.apps" in err and "No " not in err


def test_check_reads_workload_templates_from_the_cluster_but_roles_need_not(monkeypatch):
    seen = {}

    class Client:
        namespace = "team"

    def load_cluster(client, scope, *a, **k):
        seen[scope.namespace] = scope.workloads
        from kubectl_kvcache.operator.records import Snapshot, default_setting
        return Snapshot(setting=default_setting())

    monkeypatch.setattr(reader, "open_client", lambda *a, **k: Client())
    monkeypatch.setattr(cluster_lists, "load_cluster", load_cluster)
    assert kvcache("check")[0] == 1 and seen == {"team": True}        # 1: nothing found in it (issue 48)
    seen.clear()
    assert kvcache("roles", "-A")[0] == 1 and seen == {None: False}


def test_users_are_counted_and_wide_names_them_all_as_one_word():
    code, out, _ = kvcache("bindings", "-A", "-f", EXAMPLE)
    rows = {line.split()[1]: line for line in out.splitlines()[1:]}
    assert rows["chat-fp8"].split()[-2:] == ["4", "OK"] and "deepseek-sgl" not in rows["sgl-fp8"]
    code, out, _ = kvcache("bindings", "-A", "-f", EXAMPLE, "-o", "wide")
    assert "embed-takeover,llama-long,mistral-legacy,qwen-chat" in out.split()
    assert out.splitlines()[0].rstrip().endswith("SUGGESTED   USED BY")


def test_unknown_replicas_are_counted_by_what_would_decide_them(write):
    secret = {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "api", "key": "k"}}}
    script = 'exec vllm serve m --api-key "$KEY" --kv-cache-dtype fp8'
    roles = [{"name": "a", "kind": "server", "replicas": 3, "command": ["sh", "-c", script], "env": [secret]},
             {"name": "b", "kind": "server", "replicas": 2, "command": ["sh", "-c", script], "env": [secret]},
             {"name": "c", "kind": "server", "replicas": 1, "command": ["run.sh"]}]
    path = write(kvb("b", "fp8"), md("m", roles=roles))
    code, report = findings("check", "-f", path)
    assert report["unknownByCause"] == [{"code": "variable", "subject": "$KEY", "replicas": 5},
                                        {"code": "program", "subject": "run.sh", "replicas": 1}]
    found = [f for f in report["findings"] if f["code"] == "takeover-role"]
    assert sorted(f["replicas"] for f in found) == [1, 2, 3]
    _, _, err = kvcache("check", "-f", path)
    assert "UNKNOWN replicas by what would decide them: 5 variable: $KEY, 1 program: run.sh" in err
    _, out, _ = kvcache("check", "-f", path, "-o", "describe")
    assert "Cause:" in out and "variable: $KEY (3 replicas)" in out


def test_the_default_table_says_where_the_fixes_are():
    """Issue 39 item 7: the README says check lists fixes; the default table (80 columns) has no
    FIX column, so its summary names the command that shows them; -o wide has them."""
    code, out, err = kvcache("check", "-f", EXAMPLE)
    assert "FIX" not in out.splitlines()[0]
    assert "-o wide   (adds the FIX column)" in err.splitlines()[-1], err
    code, out, err = kvcache("check", "-f", EXAMPLE, "-o", "wide")
    assert "FIX" in out.splitlines()[0] and "next:" not in err
