"""The malformed-input tier: every file of tests/badinput/ (see its generate.py and manifest.json)
through `verify -f` and `check -f` ends in exit 2 with exactly one `error:` line that names the
file and what the manifest expects, nothing on stdout, never an internal error; plus property
tests feeding random JSON/YAML shapes to the file reader, and the pipe of a failed kubectl."""

import io
import json
import os
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

import objects as o
from kubectl_kvcache.judge import checks
from kubectl_kvcache.judge import verify
from kubectl_kvcache.load import files as saved_files, manifests
from kubectl_kvcache.cli import main
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.load.scope import Scope
from kubectl_kvcache.operator.api import GROUP, VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "badinput")
with open(os.path.join(CORPUS, "manifest.json"), encoding="utf-8") as _f:
    CASES = json.load(_f)["cases"]
RUNS = [(c, command) for c in CASES for command in c["commands"]]


def run(*argv, stdin=""):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_the_corpus_covers_every_class_with_enough_files():
    classes = {c["class"] for c in CASES}
    assert classes == {"empty", "list", "kind", "syntax", "alias", "depth", "field", "dir"}
    assert len(CASES) >= 150
    for c in CASES:
        assert os.path.exists(os.path.join(CORPUS, "files", c["file"])), c["file"]


@pytest.mark.parametrize("case, command", RUNS, ids=[f"{command}:{c['file']}" for c, command in RUNS])
def test_malformed_input_is_one_error_line_and_exit_2(case, command):
    path = os.path.join(CORPUS, "files", case["file"])
    code, out, err = run(command, "-A", "-f", path)
    assert (code, out) == (2, ""), (code, out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "internal error" not in err and "Traceback" not in err
    for expected in case["expect"]:
        assert expected in err, (expected, err)


YAML_CASES = [c for c in CASES if c["file"].endswith((".yaml", ".yml")) or c["class"] == "dir"]


def test_the_pure_python_yaml_reader_gives_the_same_errors(monkeypatch, tmp_path):
    """Without libyaml (PyYAML built without it) the reader falls back to PyYAML's own parser:
    every YAML case of the corpus ends the same way."""
    monkeypatch.setattr(saved_files, "_LOADER", saved_files.build_loader(libyaml=False))
    assert "CParser" not in [c.__name__ for c in saved_files._loader().__mro__]
    for case in YAML_CASES:
        code, out, err = run("check", "-A", "-f", os.path.join(CORPUS, "files", case["file"]))
        assert (code, out) == (2, "") and len(err.splitlines()) == 1, (case["file"], err)
        assert "internal error" not in err and all(e in err for e in case["expect"]), (case["file"], err)
    with open(os.path.join(ROOT, "examples", "cluster.json"), encoding="utf-8") as f:
        example = json.load(f)
    saved = tmp_path / "cluster.yaml"                 # `kubectl get -o yaml`: one List document
    saved.write_text(yaml.safe_dump(example))
    code, out, err = run("verify", "-A", "-f", str(saved))
    assert code == 1 and "10 pods: 6 OK, 2 MISMATCH, 1 MISSING, 1 REJECTED" in err


def test_workload_only_defects_do_not_concern_verify():
    """verify does not read Deployments, StatefulSets, ... (README): a malformed template is an
    error for check, ignored by verify, which still judges the Pods."""
    for case in CASES:
        if case["commands"] == ["check"]:
            code, _, err = run("verify", "-A", "-f", os.path.join(CORPUS, "files", case["file"]))
            assert code in (0, 1) and "error" not in err, (case["file"], err)


# -- a failed kubectl piped in -----------------------------------------------------------------

def test_empty_stdin_is_an_error_not_nothing_found():
    for command in ("verify", "check", "bindings", "roles"):
        code, out, err = run(command, "-f", "-", stdin="")
        assert (code, out) == (2, "") and err == "error: no objects in <stdin> (is it empty?)\n"


def test_a_failed_kubectl_through_a_real_pipe():
    """`kubectl get ... -o json | kubectl kvcache verify -f -` where kubectl printed nothing."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    pipe = subprocess.run(f"{sys.executable} -c 'import sys; sys.exit(1)' | "
                          f"{sys.executable} -m kubectl_kvcache verify -f -", shell=True, env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert pipe.returncode == 2 and pipe.stdout == ""
    assert pipe.stderr == "error: no objects in <stdin> (is it empty?)\n"
    devnull = subprocess.run([sys.executable, "-m", "kubectl_kvcache", "check", "-f", os.devnull], env=env,
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert devnull.returncode == 2 and devnull.stderr.startswith("error: no objects in /dev/null")


def test_invalid_utf8_on_real_stdin_is_one_error_line():
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-m", "kubectl_kvcache", "verify", "-f", "-"], input=b"kind: \xff\xfe\n",
                          env=env, cwd=ROOT, capture_output=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.startswith(b"error: <stdin>: not UTF-8") and proc.stderr.count(b"\n") == 1


# -- what stays valid ------------------------------------------------------------------------------

def test_an_empty_list_is_a_valid_answer_not_an_error(tmp_path):
    """`kubectl get pods -o json` in an empty namespace prints a List with no items: a real
    answer ("nothing there"), unlike an empty file (exit 2); the gate does not pass on it
    either: nothing was verified (issue 48), exit 1 saying so."""
    path = tmp_path / "empty-list.json"
    path.write_text(json.dumps(o.as_list()))
    code, out, err = run("verify", "-f", str(path))
    assert code == 1 and out == "" and "No pool-attached engine pods found" in err
    assert "error:" not in err and err.splitlines()[-1] == (
        "verdict: FAILED (exit code 1): no pool-attached engine pods found in the input: nothing was verified there")


def test_json_streams_timestamps_bom_and_moderate_aliases_are_read(tmp_path):
    objs = [o.binding("b1", "fp8"), o.deployment("md"), o.md_pod("a", "md", o.vllm_argv("fp8"))]
    stream = tmp_path / "stream.json"            # `jq -c '.items[]'` output: one object per line
    stream.write_text("\n".join(json.dumps(x) for x in objs))
    code, out, _ = run("verify", "-f", str(stream), "-o", "json")
    assert code == 0 and json.loads(out)["summary"]["OK"] == 1
    pod = objs[2]
    pod["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    text = "\ufeff" + yaml.safe_dump_all(objs).replace("'2026-01-01T00:00:00Z'", "2026-01-01T00:00:00Z")
    assert "creationTimestamp: 2026-01-01T00:00:00Z" in text
    yml = tmp_path / "bom.yaml"
    yml.write_text(text, encoding="utf-8")
    snapshot = manifests.load_files([str(yml)], Scope())
    assert snapshot.pods[0].created == "2026-01-01T00:00:00Z"
    anchored = tmp_path / "anchors.yaml"         # anchors as people write them: a shared argv
    pod = o.md_pod("a", "md", "__ARGV__")
    anchored.write_text(yaml.safe_dump_all(objs[:2]) + "---\n"
                        + "x-argv: &argv [vllm, serve, m, --kv-cache-dtype, fp8]\n"
                        + yaml.safe_dump(pod).replace("command: __ARGV__", "command: *argv"))
    code, out, err = run("verify", "-f", str(anchored), "-o", "json")
    assert code == 0 and json.loads(out)["items"][0]["effective"] == "fp8", err


def test_a_yaml_list_is_read_item_by_item_with_anchors_and_merges(tmp_path):
    """`kubectl get -o yaml` Lists are streamed item by item: anchors defined in one item and
    aliased in a later one still resolve, and are counted against the alias limit; a merge key
    at a document's root merges (keys written win)."""
    objs = [o.binding("b1", "fp8"), o.deployment("md"), o.md_pod("a", "md", "__A__"), o.md_pod("b", "md", "__B__")]
    text = yaml.safe_dump(o.as_list(*objs))
    text = text.replace("command: __A__", "command: &argv [vllm, serve, m, --kv-cache-dtype, fp8]")
    text = text.replace("command: __B__", "command: *argv")
    path = tmp_path / "list.yaml"
    path.write_text(text)
    code, out, err = run("verify", "-f", str(path), "-o", "json")
    assert code == 0 and [i["effective"] for i in json.loads(out)["items"]] == ["fp8", "fp8"], err
    bomb = "".join(f"    - &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9))
    path.write_text("apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  x:\n    - &l0 [a, a, a, a, a, a, a, a, a]\n"
                    + bomb + "- kind: Pod\n  y: [*l8, *l8]\n")
    code, out, err = run("verify", "-f", str(path))
    assert code == 2 and "excessive aliasing" in err
    merged = tmp_path / "merge.yaml"
    merged.write_text(f"x-base: &base {{apiVersion: {GROUP}/{VERSION}, kind: Bogus,\n"
                      "                metadata: {name: b1, namespace: team}}\n"
                      "kind: KVCachePoolBinding\n<<: *base\nspec: {poolRef: {name: p}, domain: {dtype: fp8}}\n")
    snapshot = manifests.load_files([str(merged)], Scope())
    assert list(snapshot.bindings) == [("team", "b1")]


def test_an_unexpected_exception_names_the_file_and_object(tmp_path, monkeypatch):
    from kubectl_kvcache.operator import decode

    def broken(obj, intern=None):
        raise KeyError("boom")

    monkeypatch.setattr(decode, "pod_record", broken)
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(o.as_list(o.md_pod("p0", "md", o.vllm_argv("fp8")))))
    code, out, err = run("verify", "-f", str(path))
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"error: {path}: Pod team/p0: internal error while reading it: KeyError")


# -- property tests: random shapes never raise anything but the plugin's own error ----------------

KEYS = st.sampled_from(["kind", "apiVersion", "metadata", "name", "namespace", "spec", "status", "items",
                        "containers", "command", "args", "env", "envFrom", "value", "valueFrom", "labels",
                        "annotations", "ownerReferences", "controller", "roles", "kvCache", "poolRef", "domain",
                        "dtype", "engine", "version", "image", "template", "jobTemplate", "containerStatuses",
                        "lastState", "terminated", "exitCode", "usedBy", "extraArgs", "replicas",
                        "kvcache.gpustack.ai/inject", "kvcache.gpustack.ai/binding", "app.kubernetes.io/component"])
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(1 << 70), max_value=1 << 70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
           | st.sampled_from(["Pod", "List", "PodList", "ModelDeployment", "KVCachePoolBinding", "Setting",
                              "Deployment", "CronJob", "v1", f"{GROUP}/{VERSION}", "apps/v1", "batch/v1",
                              "gpustack.ai/v1", "main", "true", "vllm", "vLLM", "SGLang", "fp8", "0.29.0",
                              "model-deployment-kv-cache-dtype-owned", "gpustack-system"]))
SHAPES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=6),
                      max_leaves=40)


def _load_and_judge(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    try:
        snapshot = manifests.load_files([str(path)], Scope(workloads=True))
        verify.verify(snapshot)
        checks.check(snapshot)
    except PluginError as exc:      # the plugin's own error: one line, exit 2
        assert "internal error" not in str(exc) and "\n" not in str(exc), str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=SHAPES)
def test_random_json_shapes_raise_only_plugin_errors(tmp_path, doc):
    _load_and_judge(tmp_path, "doc.json", json.dumps(doc))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(SHAPES, min_size=0, max_size=3))
def test_random_yaml_streams_raise_only_plugin_errors(tmp_path, docs):
    _load_and_judge(tmp_path, "doc.yaml", yaml.safe_dump_all(docs))


MUTABLE = [o.md_pod("p0", "md", o.vllm_argv("fp8"), exit_code=2), o.deployment("md"), o.binding("b1", "fp8"),
           o.injected_pod("i0", "b1", containers=[o.container("vllm", args=["vllm", "serve", "m"])]),
           o.setting("true")]


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_one_field_of_a_real_object_replaced_by_anything(tmp_path, data):
    """A valid object with one field (at any depth) replaced by a random shape: the load either
    succeeds and the judges run, or it is the plugin's own one-line error."""
    import copy

    objs = copy.deepcopy(MUTABLE)
    target = data.draw(st.sampled_from(range(len(objs))))
    path = data.draw(st.sampled_from([p for p in _paths(objs[target]) if p]))
    value = data.draw(SHAPES)
    cur = objs[target]
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value
    fmt = data.draw(st.sampled_from(["json", "yaml"]))
    text = json.dumps(o.as_list(*objs)) if fmt == "json" else yaml.safe_dump_all(objs)
    _load_and_judge(tmp_path, f"objs.{fmt}", text)


YAML_TEXT = st.lists(st.sampled_from(list("{}[]:-&*!|>'\"#%@`,?<=~\n\t .0123456789") +
                                     ["kind", "items", "List", "Pod", "a", "b", "&a", "*a", "<<", "---", "...",
                                      "!!str", "!!map", "!!binary", "\x1b", "\ufeff", "\n  ", ": ", "- "]),
                     max_size=60).map("".join)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=YAML_TEXT)
def test_random_text_raises_only_plugin_errors(tmp_path, text):
    """Arbitrary text near YAML's syntax (anchors, merges, tags, flow and block, markers)."""
    _load_and_judge(tmp_path, "text.yaml", text)


JSON_TEXT = st.lists(st.sampled_from(list('{}[]:,"\\ \n\t0123456789.-eE') +
                                     ['"kind"', '"items"', '"List"', '"Pod"', '"apiVersion"', '"v1"', "true", "null",
                                      "NaN", '"metadata"', '{"name": "p"}', "\\u0000", '"\\ud800"']),
                     max_size=60).map(lambda parts: "{" + "".join(parts))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=JSON_TEXT)
def test_random_json_text_raises_only_plugin_errors(tmp_path, text):
    """Arbitrary text near JSON's syntax through the value-by-value decoder."""
    _load_and_judge(tmp_path, "text.json", text)


def test_the_same_objects_as_json_list_yaml_list_yaml_stream_and_json_stream_give_the_same_report(tmp_path):
    """The value-by-value readers change nothing for valid input."""
    with open(os.path.join(ROOT, "examples", "cluster.json"), encoding="utf-8") as f:
        example = json.load(f)
    forms = {"list.json": json.dumps(example, indent=4), "list.yaml": yaml.safe_dump(example),
             "stream.yaml": yaml.safe_dump_all(example["items"]),
             "stream.json": "\n".join(json.dumps(item) for item in example["items"]),
             "array.json": json.dumps(example["items"])}
    reports = {}
    for name, text in forms.items():
        (tmp_path / name).write_text(text)
        for command in ("verify", "check"):
            code, out, err = run(command, "-A", "-f", str(tmp_path / name), "-o", "json")
            reports.setdefault(command, {})[name] = (code, out)
    for command, by_form in reports.items():
        assert len(set(by_form.values())) == 1, command
        code, out = by_form["list.json"]
        assert code == 1 and json.loads(out)["kind"] in ("VerifyReport", "CheckReport")
