"""Rendered input: the real `helm template` and `kubectl kustomize` output of public charts and a
kustomization that deploy vLLM and SGLang (tests/load/rendered/: each file's header names its
repository, commit, path, chart version and command; render.sh re-renders them), read and judged
as a user's CI would. What each test expects is derived from the chart's values and the rendered
objects themselves (the image tag, the args, the opt-in labels), never from the plugin's output.
The held-out chart is judged in test_zz_rendered_heldout.py, run last."""

import json
import os
import re

import pytest
import yaml

from kubectl_kvcache.load import files
from runcli import kvcache

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rendered")
BINDINGS = os.path.join(HERE, "bindings.yaml")
PRODUCTION_STACK = os.path.join(HERE, "production-stack.yaml")
CASTAI_VLLM = os.path.join(HERE, "castai-vllm.yaml")
LLMD = os.path.join(HERE, "llm-d-p-d.yaml")
LWS = os.path.join(HERE, "modelservice-lws.yaml")
NONAME = os.path.join(HERE, "bad", "castai-vllm-noname.yaml")
RENDERED = [PRODUCTION_STACK, CASTAI_VLLM, LLMD, LWS, os.path.join(HERE, "heldout", "castai-sglang.yaml")]
INJECT = "kvcache.gpustack.ai/inject"
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"}


def _docs(path):
    """The objects of a rendered file as PyYAML's own loader reads it (not the plugin's reader)."""
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def _values(name):
    with open(os.path.join(HERE, "values", name), encoding="utf-8") as f:
        return yaml.safe_load(f)


def _check(*argv):
    code, out, err = kvcache("check", "-n", "llm-prod", *argv, "-o", "json")
    return code, (json.loads(out) if out else None), err


def _findings(report, kind, name):
    return [f for f in report["findings"] if (f["kind"], f["name"]) == (kind, name)]


def test_every_file_names_its_source():
    for path in RENDERED + [NONAME]:
        with open(path, encoding="utf-8") as f:
            head = [f.readline() for _ in range(3)]
        assert re.match(r"# source: github\.com/[\w.-]+/[\w.-]+ at [0-9a-f]{40}, ", head[1]), path
        assert head[2].startswith("# command: ") and ("helm template" in head[2] or "kubectl kustomize" in head[2])


@pytest.mark.parametrize("path", RENDERED, ids=os.path.basename)
def test_every_object_is_read_where_it_starts(path):
    # `# Source:` comments, empty documents (a template that rendered nothing) and the header:
    # the plugin's reader yields exactly the objects PyYAML's loader finds, each with the line
    # PyYAML's composer marks as its start
    with open(path, encoding="utf-8") as f:
        nodes = [n for n in yaml.compose_all(f) if n is not None]
    read = list(files.read_objects([path], lines=True))
    assert [o for o, _, _, _ in read] == _docs(path)
    assert [line for _, _, _, line in read] == [n.start_mark.line + 1 for n in nodes]
    with open(path, encoding="utf-8") as f:
        text = f.read().splitlines()
    for obj, _, _, line in read:        # the line holds the object's first key, no comment
        assert not text[line - 1].startswith(("#", "---")) and text[line - 1].split(":")[0] in obj


def test_libyaml_and_the_pure_python_parser_give_the_same_lines(monkeypatch):
    # PyYAML without libyaml (a source build) parses with its pure-Python parser: same marks
    fast = [line for *_, line in files.read_objects([PRODUCTION_STACK], lines=True)]
    monkeypatch.setattr(files, "_LOADER", files.build_loader(libyaml=False))
    assert [line for *_, line in files.read_objects([PRODUCTION_STACK], lines=True)] == fast


def _production_stack_models():
    """(Deployment name, its values) of each model the values deploy: the chart names the
    Deployment `<release>-<modelSpec.name>-deployment-vllm` (helm/templates/deployment-vllm-multi.yaml)."""
    return [(f"vllm-{m['name']}-deployment-vllm", m) for m in _values("production-stack-optin.yaml")
            ["servingEngineSpec"]["modelSpec"]]


def test_production_stack_chart():
    code, report, err = _check("-f", PRODUCTION_STACK, "-f", BINDINGS)
    bindings = {d["metadata"]["name"]: d["spec"]["domain"]["dtype"] for d in _docs(BINDINGS)}
    expect_fail = False
    for name, model in _production_stack_models():
        own = model["vllmConfig"].get("extraArgs", [])
        binding = model["podAnnotations"]["kvcache.gpustack.ai/binding"]
        found = _findings(report, "Deployment", name)
        if "--kv-cache-dtype" in own:
            # the chart passes vllmConfig.extraArgs through to `vllm serve`: the webhook refuses
            # a container that passes the flag itself
            value = own[own.index("--kv-cache-dtype") + 1]
            (refused,) = [f for f in found if f["code"] == "injection-refused"]
            assert f"--kv-cache-dtype {value}" in refused["message"]
            assert f"vLLM {model['tag'].lstrip('v')}" in refused["message"]
            expect_fail = True
        else:
            # a pinned vLLM release, launched as `vllm serve`, the dtype left to the Binding
            assert not [f for f in found if f["severity"] == "error"], found
            assert not _findings(report, "KVCachePoolBinding", binding) or all(
                f["code"] != "binding-unused" for f in _findings(report, "KVCachePoolBinding", binding))
            assert bindings[binding] == "fp8"
    # the router Deployment is not opted in: nothing is said about it
    router = [d["metadata"]["name"] for d in _docs(PRODUCTION_STACK)
              if d["kind"] == "Deployment" and INJECT not in d["spec"]["template"]["metadata"].get("labels", {})]
    assert router and not any(_findings(report, "Deployment", r) for r in router)
    assert code == (1 if expect_fail else 0), err
    assert "Traceback" not in err


def test_castai_vllm_chart():
    # the chart launches through its own /scripts/startup.sh and always passes --kv-cache-dtype=
    # (its kvCacheDtype, default "auto"): opted in, the webhook refuses both
    code, report, err = _check("-f", CASTAI_VLLM, "-f", BINDINGS)
    (deployment,) = [d for d in _docs(CASTAI_VLLM) if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    (own,) = [a for a in container["args"] if a.startswith("--kv-cache-dtype=")]
    (refused,) = [f for f in _findings(report, "Deployment", deployment["metadata"]["name"])
                  if f["code"] == "injection-refused"]
    assert container["command"][0] in refused["message"] and own in refused["message"]
    # its image is CAST AI's mirror of vllm-openai: no release is read from it, and where vLLM's
    # releases disagree about the Binding's 'fp8' the answer is not guessed
    binding = deployment["spec"]["template"]["metadata"]["annotations"]["kvcache.gpustack.ai/binding"]
    (unknown,) = _findings(report, "KVCachePoolBinding", binding)
    assert unknown["code"] == "unchecked" and "release unknown" in unknown["message"]
    assert container["image"] in unknown["message"]
    assert code == 1 and report["verdict"]["result"] == "FAILED" and report["verdict"]["failing"] == 1, err


def test_a_kustomization_of_plain_engine_workloads_is_not_a_pass():
    # llm-d's P/D kustomization: vLLM Deployments that are not the operator's (no opt-in label):
    # nothing is judged, and that fails the gate, naming what was read and why
    plain = [f"{d['kind']} {d['metadata']['name']}" for d in _docs(LLMD) if d["kind"] in WORKLOADS
             and d["spec"]["template"]["metadata"].get("labels", {}).get(INJECT) != "true"]
    assert len(plain) == 2
    code, report, err = _check("-f", LLMD)
    assert code == 1 and report["findings"] == [f for f in report["findings"] if f["code"] == "setting"]
    (reason,) = [r for r in report["verdict"]["reasons"] if r["code"] == "nothing-found"]
    assert all(p in reason["fix"] for p in plain) and INJECT in reason["fix"]
    code, _, err = kvcache("check", "-n", "llm-prod", "-f", LLMD)
    assert code == 1 and "nothing was verified" in err and "Traceback" not in err


def test_leaderworkersets_the_plugin_does_not_read_stay_unchecked():
    # llm-d-modelservice's multi-node path renders prefill and decode as LeaderWorkerSets
    # (leaderworkerset.x-k8s.io): their templates opt in, and the plugin does not read that kind:
    # each is an `unchecked` warning (never silence, never a pass under --strict), and the
    # Binding they name is not called unused
    sets = [d for d in _docs(LWS) if d["kind"] == "LeaderWorkerSet"]
    opted = {d["metadata"]["name"]: d["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]
             for d in sets}
    assert len(sets) == 2 and all(m["labels"][INJECT] == "true" for m in opted.values())
    code, report, err = _check("-f", LWS, "-f", BINDINGS)
    for name, meta in opted.items():
        (said,) = _findings(report, "LeaderWorkerSet", name)
        assert said["code"] == "unchecked" and said["severity"] == "warning"
        binding = meta["annotations"]["kvcache.gpustack.ai/binding"]
        assert binding in said["message"]
        assert all(f["code"] != "binding-unused" for f in _findings(report, "KVCachePoolBinding", binding))
    assert code == 0, err
    assert kvcache("check", "-n", "llm-prod", "-f", LWS, "-f", BINDINGS, "--strict")[0] == 1


def test_a_chart_that_renders_a_nameless_deployment_is_bad_input():
    # castai's vLLM chart rendered without service.name (its parent chart's value): the
    # Deployment has `name:` empty; kubectl refuses it too. One error line, exit 2, never a pass.
    for fmt in ("table", "sarif"):
        code, out, err = kvcache("check", "-n", "llm-prod", "-f", NONAME, "-o", fmt)
        assert code == 2 and "Traceback" not in err
        (line,) = err.splitlines()
        assert line.startswith(f"error: {NONAME}: Deployment") and "metadata.name" in line
        with open(NONAME, encoding="utf-8") as f:      # the line of the nameless object, to find it
            text = f.read().splitlines()
        at = int(re.search(r"\(line (\d+)\)", line).group(1))
        assert text[at - 1] == "apiVersion: apps/v1" and text[at] == "kind: Deployment" and text[at + 2] == "  name: "
        if fmt == "sarif":
            log = json.loads(out)
            assert log["runs"][0]["results"] == [] and not log["runs"][0]["invocations"][0]["executionSuccessful"]


def test_a_rendered_chart_as_a_list_reads_the_same(tmp_path):
    # the same objects as one v1 List, in JSON (`kubectl get -o json` or `kubectl create
    # --dry-run=client -o json` shape): the same findings, each line pointing at its item
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": _docs(PRODUCTION_STACK)}, indent=2))
    _, as_yaml, _ = _check("-f", PRODUCTION_STACK, "-f", BINDINGS)
    code, as_list, err = _check("-f", str(listed), "-f", BINDINGS)
    assert [(f["code"], f["name"]) for f in as_list["findings"]] == \
        [(f["code"], f["name"]) for f in as_yaml["findings"]]
    text = listed.read_text()
    for obj, _, location, line in files.read_objects([str(listed)], lines=True):
        start = sum(len(x) + 1 for x in text.split("\n")[:line - 1])
        decoded, _ = json.JSONDecoder().raw_decode(text[start:].lstrip())
        assert decoded == obj and location.startswith("items[")


def test_sarif_points_at_each_objects_file_and_line(tmp_path):
    code, out, _ = kvcache("check", "-n", "llm-prod", "-f", PRODUCTION_STACK, "-f", BINDINGS, "-o", "sarif")
    run = json.loads(out)["runs"][0]
    starts = {}
    for path in (PRODUCTION_STACK, BINDINGS):
        with open(path, encoding="utf-8") as f:
            for node in yaml.compose_all(f):
                if node is not None:
                    obj = yaml.safe_load(yaml.serialize(node))
                    starts[(path, obj["kind"], obj["metadata"]["name"])] = node.start_mark.line + 1
    placed = 0
    for result in run["results"]:
        kind, name = result["locations"][0]["logicalLocations"][-1]["kind"], \
            result["locations"][0]["logicalLocations"][-1]["name"]
        physical = result["locations"][0].get("physicalLocation")
        if kind == "Setting":       # not in the input: assumed, so no place in a file
            assert physical is None
            continue
        uri = physical["artifactLocation"]["uri"]
        path = PRODUCTION_STACK if uri.endswith("production-stack.yaml") else BINDINGS
        assert uri.endswith(os.path.relpath(path, os.path.dirname(HERE)).replace(os.sep, "/"))
        assert physical["region"]["startLine"] == starts[(path, kind, name)]
        placed += 1
    assert placed >= 3
    assert sorted(a["location"]["uri"].rsplit("/", 1)[-1] for a in run["artifacts"]) == \
        ["bindings.yaml", "production-stack.yaml"]


@pytest.mark.parametrize("path", RENDERED, ids=os.path.basename)
def test_verify_on_a_chart_has_no_pods_and_says_so(path):
    # a chart renders Pod templates, not Pods: verify judges running replicas, so nothing is
    # verified (exit 1, never a pass), and it points at check, which judges the templates
    assert not [d for d in _docs(path) if d["kind"] == "Pod"]
    code, _, err = kvcache("verify", "-n", "llm-prod", "-f", path, "-f", BINDINGS)
    assert code == 1 and "nothing was verified" in err and "Traceback" not in err
    assert f"next: kubectl kvcache check -n llm-prod -f {path} -f {BINDINGS}" in err
