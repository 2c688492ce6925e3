"""The real entry point on saved files: outputs, exit codes, and one-line errors for bad input."""

import io
import json
import os

import pytest
import yaml

import objects as o
from kubectl_kvcache.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")


def run(*argv, stdin=""):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_example_cluster_table():
    code, out, err = run("verify", "-f", EXAMPLE)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["NAMESPACE", "POD", "BINDING", "EXPECTED", "EFFECTIVE", "STATUS"]
    status = {line.split()[1]: line.split()[-1] for line in lines[1:]}
    assert status == {
        "deepseek-sgl-server-0": "REJECTED", "embed-takeover-embed-0": "MISMATCH",
        "llama-long-server-0": "MISMATCH", "mistral-legacy-server-0": "MISSING",
        "qwen-chat-server-0": "OK", "qwen-chat-server-1": "OK", "qwen-pd-decode-0": "OK",
        "qwen-pd-prefill-0": "OK", "notebook-vllm-6c8d9b7f5-x2kqp": "OK", "sgl-batch-7b5d4c9f8-m4vzt": "OK"}
    assert "10 pods: 6 OK, 2 MISMATCH, 1 MISSING, 1 REJECTED" in err
    assert "Traceback" not in err


def test_example_json_is_the_documented_contract():
    code, out, _ = run("verify", "-f", EXAMPLE, "-o", "json")
    data = json.loads(out)
    assert code == 1 and data["kind"] == "VerifyReport"
    assert data["summary"]["total"] == 10 and data["summary"]["REJECTED"] == 1
    rejected = [i for i in data["items"] if i["status"] == "REJECTED"][0]
    assert rejected["effective"] is None and "confirmed" in rejected["reason"]


def test_yaml_is_the_same_data_as_json():
    _, as_json, _ = run("verify", "-f", EXAMPLE, "-o", "json")
    _, as_yaml, _ = run("verify", "-f", EXAMPLE, "-o", "yaml")
    assert yaml.safe_load(as_yaml) == json.loads(as_json)


def test_wide_and_no_headers():
    _, out, _ = run("verify", "-f", EXAMPLE, "-o", "wide", "--no-headers")
    first = out.splitlines()[0]
    assert not first.startswith("NAMESPACE")
    assert first.split()[:9] == ["llm-prod", "deepseek-sgl-server-0", "sgl-fp8", "fp8", "<none>", "REJECTED",
                                 "server", "sglang", "0.5.18"]
    # the last exit code, the Pod's node, its GPU (no Node is read from a file: <none>), the engine's
    # own report (not read from a file: -), the cause (none: this row is REJECTED and no previous
    # log is read from a file)
    assert "modeldeployment/deepseek-sgl" in first.split() and first.split()[-5:] == ["2", "gpu-h100-03", "<none>",
                                                                                      "-", "<none>"]


def test_namespace_filter_and_named_pod_details():
    code, out, _ = run("verify", "-f", EXAMPLE, "-n", "llm-prod", "llama-long-server-0")
    assert code == 1
    assert "\nName:       llama-long-server-0\n" in out and "\nStatus:     MISMATCH\n" in out
    assert "<- kv-cache-dtype #2 = 'fp8_e5m2'  (wins)" in out
    table, blocks = out.split("\n\n", 1)
    assert table.splitlines()[0].split() == ["POD", "BINDING", "EXPECTED", "EFFECTIVE", "STATUS"]   # -n: no NAMESPACE
    code, described, _ = run("verify", "-f", EXAMPLE, "-n", "llm-prod", "llama-long-server-0", "-o", "describe")
    assert code == 1 and described == blocks        # -o describe: the blocks alone, once
    code, out, _ = run("verify", "-f", EXAMPLE, "-n", "llm-research")
    assert code == 0 and "llm-prod" not in out


def test_all_ok_exits_zero_and_nothing_found_exits_one(tmp_path):
    """Nothing verified in the namespace asked for is no pass (issue 48: before, exit 0)."""
    path = write(tmp_path, "ok.yaml", yaml.safe_dump_all([
        o.binding("b1", "fp8"), o.deployment("md"), o.md_pod("a", "md", o.vllm_argv("fp8"))]))
    code, out, err = run("verify", "-f", path)
    assert code == 0 and "1 pod: 1 OK" in err
    code, out, err = run("verify", "-f", path, "-n", "elsewhere")
    assert code == 1 and out == "" and "No pool-attached engine pods found" in err
    assert ("verdict: FAILED (exit code 1): no pool-attached engine pods found in the input (namespace elsewhere): "
            "nothing was verified there") in err.splitlines()


def test_stdin_directory_and_label_selector(tmp_path):
    data = json.dumps(o.as_list(o.binding("b1", "fp8"), o.deployment("md"),
                                o.md_pod("a", "md", o.vllm_argv("fp8")), o.md_pod("b", "md", o.vllm_argv(None))))
    code, out, _ = run("verify", "-f", "-", "-o", "json", stdin=data)
    assert code == 1 and json.loads(out)["summary"]["MISSING"] == 1
    folder = tmp_path / "saved"
    folder.mkdir()
    (folder / "a.json").write_text(data)
    (folder / "notes.txt").write_text("ignored: not .json/.yaml")
    code, out, _ = run("verify", "-f", str(folder), "-l", "app.kubernetes.io/instance in (md),!nope", "-o", "json")
    assert json.loads(out)["summary"]["total"] == 2
    code, out, _ = run("verify", "-f", str(folder), "-l", "app.kubernetes.io/instance=other", "-o", "json")
    assert json.loads(out)["summary"]["total"] == 0 and code == 1        # nothing matched -l: nothing verified
    assert json.loads(out)["verdict"]["reasons"][0]["message"] == (
        "no pool-attached engine pods found in the input matching -l app.kubernetes.io/instance=other: "
        "nothing was verified there")


@pytest.mark.parametrize("name, text, message", [
    ("bad.json", '{"kind": "List", "items": [', "not valid JSON"),
    ("bad.yaml", "kind: Pod\n  metadata: : :\n", "not valid YAML"),
    ("nokind.json", '{"metadata": {"name": "x"}}', "an object without a kind"),
    ("noname.json", '{"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {"containers": []}}',
     "missing metadata.name"),
    ("nocontainers.json", '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}',
     "missing spec.containers"),
    ("scalar.yaml", "just a string\n", "expected Kubernetes objects"),
    ("badroles.json", json.dumps(o.deployment("md", roles=[{"kind": "server"}])), "has no name"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, name, text, message):
    code, out, err = run("verify", "-f", write(tmp_path, name, text))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and message in err, err


def test_missing_file_and_bad_flags(tmp_path):
    code, _, err = run("verify", "-f", str(tmp_path / "nope.json"))
    assert code == 2 and "no such file or directory" in err and len(err.splitlines()) == 1
    code, _, err = run("verify", "-o", "toml")
    assert code == 2 and "invalid choice" in err
    # -A wins over -n, as in kubectl: every namespace is read
    code, out, _ = run("verify", "-f", EXAMPLE, "-n", "x", "-A")
    assert code == 1 and "llm-prod" in out and "llm-research" in out


def test_help_and_version_speak_of_kubectl_kvcache():
    code, out, _ = run("--help")
    assert code == 0 and "kubectl kvcache" in out and "verify" in out and "setting" in out
    code, out, _ = run("version")
    assert code == 0 and out.startswith("kubectl-kvcache ")


def test_assume_setting_overrides_the_input():
    _, out, _ = run("verify", "-f", EXAMPLE, "--assume-setting", "off", "-o", "json")
    data = json.loads(out)
    assert data["setting"] == {"value": False, "source": "flag"}
    assert all(i["expected"] is None for i in data["items"])
    assert data["summary"]["MISSING"] == 0 and data["summary"]["REJECTED"] == 1


def test_unknown_says_what_would_decide_it(tmp_path):
    # a Secret's value given where one starting with '-' would be read as an option
    secret = {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "api", "key": "k"}}}
    argv = ["sh", "-c", 'exec vllm serve m --api-key "$KEY" --kv-cache-dtype fp8']
    path = write(tmp_path, "u.yaml", yaml.safe_dump_all([
        o.binding("b1", "fp8"), o.deployment("md"),
        o.md_pod("a", "md", None, containers=[o.container(command=argv, env=[secret])])]))
    code, out, err = run("verify", "-f", path, "-o", "json")
    item = json.loads(out)["items"][0]
    assert item["status"] == "UNKNOWN" and item["cause"] == {"code": "variable", "subject": "$KEY"}
    _, out, _ = run("verify", "-f", path, "-o", "wide")
    head, row = out.splitlines()[:2]
    assert head.split()[-1] == "CAUSE" and row.endswith("variable: $KEY")
    _, out, _ = run("verify", "-f", path, "-o", "describe")
    assert "Cause:" in out and "variable: $KEY" in out
    _, out, _ = run("verify", "-f", EXAMPLE, "-o", "json")
    assert all(("cause" in i) == (i["status"] == "UNKNOWN") for i in json.loads(out)["items"])


def test_a_named_pod_that_does_not_exist_is_notfound_exit_1():
    """kubectl get pod NAME: `Error from server (NotFound): pods "NAME" not found`, exit 1 (not 2:
    the plugin did its job); the Pods that exist are still shown, one error line per missing one;
    the verdict line says why the run fails (judge/verdict.py: nothing was verified there)."""
    code, out, err = run("verify", "-n", "llm-prod", "-f", EXAMPLE, "chat-server-nope")
    assert (code, out) == (1, "")
    assert err == ('error: pods "chat-server-nope" not found in the input\n'
                   'verdict: FAILED (exit code 1): Pod chat-server-nope was not found in the input: nothing was '
                   'verified there\n')
    code, out, err = run("verify", "-n", "llm-prod", "-f", EXAMPLE, "chat-server-nope", "qwen-chat-server-0")
    assert code == 1 and "qwen-chat-server-0" in out
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        'error: pods "chat-server-nope" not found in the input']


def test_pods_named_that_are_none_of_ours_verify_nothing_and_fail(tmp_path):
    """Issue 48: `verify POD` on a Pod that exists but is neither a pool-attached replica nor an
    injection opt-in verified nothing: exit 1 saying so (before: the note, exit 0)."""
    path = write(tmp_path, "plain.yaml", yaml.safe_dump_all([
        o.binding("b1", "fp8"), o.deployment("md"), o.md_pod("a", "md", o.vllm_argv("fp8")),
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "team"},
         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}]))
    code, out, err = run("verify", "-f", path, "web")
    assert code == 1 and err.splitlines()[-1] == (
        "verdict: FAILED (exit code 1): no pool-attached engine pods among the Pods named (web) found in the input: "
        "nothing was verified there"), err
    code, out, err = run("verify", "-f", path, "web", "a")
    assert code == 0 and "1 pod: 1 OK" in err
    code, out, err = run("verify", "-f", path, "gone", "-o", "json")
    assert code == 1 and [r["code"] for r in json.loads(out)["verdict"]["reasons"]] == ["not-found"]


@pytest.mark.parametrize("md, engine_line", [
    (o.deployment("md"), "vllm:0.29.0 (version from spec.engine.version)"),
    (o.deployment("md", version=None, image="vllm/vllm-openai:v0.30.0"), "vllm:0.30.0 (version from spec.roles[].image)"),
    (o.deployment("md", version=None), "vllm:? (version from nowhere: release unknown)"),
])
def test_describe_says_where_a_replica_without_a_pod_takes_its_release_from(tmp_path, md, engine_line):
    """Issue 48 item 4: describe printed `Engine: vllm:0.29.0 (version from None)` for a NO-POD row."""
    path = write(tmp_path, "md.json", json.dumps({"apiVersion": "v1", "kind": "List",
                                                  "items": [o.binding("b1", "fp8"), md]}))
    code, out, _ = run("verify", "-f", path, "-o", "describe")
    engine = [line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Engine:")]
    assert code == 1 and engine == [engine_line], out


def test_help_names_every_status_the_judge_gives():
    """`verify --help` lists the statuses from their one home (judge/statuses.py), each with its
    meaning, and --watch's DELETED (issue 48 item 7: NO-POD and DELETED were missing from a list
    written by hand)."""
    import re

    from kubectl_kvcache.judge import statuses, verify

    assert verify.STATUSES is statuses.STATUSES and verify.MEANINGS is statuses.MEANINGS
    code, out, err = run("verify", "--help")
    assert code == 0, err
    text = " ".join(out.split())
    said = text[text.index("Status: "):]
    for status in statuses.STATUSES + (statuses.DELETED,):
        assert re.search(rf"(?<![\w-]){re.escape(status)} \(", said), status
    assert " ".join(statuses.MEANINGS[statuses.NO_POD].split()) in said
    assert all(s in text[text.index("--fail-on"):] for s in statuses.STATUSES)


def test_json_and_wide_carry_the_pods_node():
    """NODE (issue 48 item 9): each Pod's spec.nodeName, as kubectl get pods -o wide shows it;
    `node` in json, null for a replica without a Pod."""
    with open(EXAMPLE) as f:
        pods = {i["metadata"]["name"]: i["spec"].get("nodeName") for i in json.load(f)["items"] if i["kind"] == "Pod"}
    code, out, err = run("verify", "-A", "-f", EXAMPLE, "-o", "json")
    items = json.loads(out)["items"]
    assert items and all(i["node"] == (pods[i["pod"]] if i["pod"] else None) for i in items)
    assert any(i["node"] for i in items)
    code, out, err = run("verify", "-A", "-f", EXAMPLE, "-o", "wide")
    heads = out.splitlines()[0].split()
    col = heads.index("NODE")
    for row in out.splitlines()[1:]:
        cells = row.split()
        assert cells[col] == (pods.get(cells[1]) or "<none>"), row


def test_watch_prints_a_row_when_a_pod_is_scheduled():
    """--watch -o wide: a Pod bound to a node (spec.nodeName set, nothing else changed) is a changed
    row, as `kubectl get pods -o wide -w` prints one when NODE fills in."""
    from kubectl_kvcache.judge import rollout, verify as judge

    def report(node):
        item = judge.Item("ns", "p", "main", None, None, "vllm", "0.29.0", "b", "fp8", "fp8", "OK", "",
                          state={"phase": "Pending", "terminating": False, "ready": None, "restarts": None,
                                 "waiting": None, "lastExitCode": None}, node=node)
        return judge.Report(True, "cluster", [item])

    changes = rollout.Changes()
    assert len(changes.update(report(None))) == 1
    assert changes.update(report(None)) == []
    assert [i.node for i in changes.update(report("gpu-node-7"))] == ["gpu-node-7"]
