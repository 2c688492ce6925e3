#!/usr/bin/env python3
"""Writes the malformed-input corpus (files/ and manifest.json) that tests/load/test_files.py runs
through `verify -f` and `check -f`. Every case must end in exit 2 with exactly one `error:` line
naming what the manifest says, nothing on stdout, never "internal error".

    python3 tests/badinput/generate.py        # rewrite files/ and manifest.json; commit both

Classes: empty (no objects), list (List shapes), kind (kind/apiVersion), syntax (not JSON/YAML,
encodings, integers too long), alias (alias bombs, self-reference), depth (deep nesting), field
(a field the plugin reads with the wrong type, per kind and path), dir (directories).
"""

import copy
import json
import os
import shutil
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import objects as o  # noqa: E402

FILES = os.path.join(HERE, "files")
CASES = []
shutil.rmtree(FILES, ignore_errors=True)     # the cases below write the folder afresh


def case(cls, name, content, expect, commands=("verify", "check"), binary=False):
    """`content`: str or bytes (written as is); `expect`: substrings of the error line."""
    CASES.append({"class": cls, "file": name, "expect": list(expect), "commands": list(commands)})
    path = os.path.join(FILES, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content if isinstance(content, bytes) else content.encode("utf-8"))


# -- empty: no objects ----------------------------------------------------------------------

EMPTY = {
    "empty.yaml": "", "empty.json": "", "blank.yaml": "\n\n   \n", "null.yaml": "null\n", "tilde.yaml": "~\n",
    "null.json": "null", "comments.yaml": "# nothing here\n# kubectl printed nothing\n",
    "separators.yaml": "---\n---\n---\n", "comments-and-separators.yaml": "# a\n---\n# b\n---\n...\n",
    "empty-array.json": "[]", "empty-array.yaml": "[]\n", "nested-empty-array.json": "[[], []]",
    "nulls-only.yaml": "---\nnull\n---\n~\n", "bom-only.json": "\ufeff", "bom-blank.yaml": "\ufeff\n  \n",
}
for name, text in EMPTY.items():
    case("empty", name, text, ["no objects in", name])


# -- list: a List's shape -------------------------------------------------------------------

ITEMS = {"null": None, "string": "pods", "object": {"kind": "Pod"}, "number": 3, "boolean": True}
for label, items in ITEMS.items():
    for fmt in ("json", "yaml"):
        doc = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}
        text = json.dumps(doc) if fmt == "json" else yaml.safe_dump(doc)
        case("list", f"items-{label}.{fmt}", text, ["items must be a list", f"items-{label}.{fmt}"])
case("list", "items-missing.json", json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {}}),
     ["a List without items"])
case("list", "items-missing-podlist.yaml", "apiVersion: v1\nkind: PodList\n", ["a PodList without items"])
for kind in ("list", "LIST", "Lists", "Pod", "listing"):
    case("list", f"kind-{kind}-with-items.yaml", yaml.safe_dump({"apiVersion": "v1", "kind": kind, "items": []}),
         [f"kind '{kind}' has items but is not a List kind"])
case("list", "kind-int-with-items.json", json.dumps({"kind": 7, "items": []}), ["kind must be a string, not a number"])
for label, item in {"string": "pod", "null": None, "number": 1, "list-of-strings": ["a"]}.items():
    doc = o.as_list(o.binding("b1", "fp8"), item)
    case("list", f"item-{label}.json", json.dumps(doc), ["expected Kubernetes objects", "items[1]"])
    case("list", f"item-{label}.yaml", yaml.safe_dump(doc), ["expected Kubernetes objects", "items[1]"])
case("list", "top-array-of-strings.json", json.dumps(["a", "b"]), ["expected Kubernetes objects", "[0]"])
case("list", "nested-list-items-null.json", json.dumps(o.as_list({"kind": "List", "items": None})),
     ["items[0]: items must be a list, not null"])
case("list", "second-document-items-string.yaml",
     yaml.safe_dump(o.binding("b1", "fp8")) + "---\n" + yaml.safe_dump({"kind": "List", "items": "x"}),
     ["document 2", "items must be a list"])


# -- kind / apiVersion -----------------------------------------------------------------------

for label, kind in {"int": 5, "float": 1.5, "list": ["Pod"], "object": {"name": "Pod"}, "bool": True}.items():
    doc = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}}
    case("kind", f"kind-{label}.json", json.dumps(doc), ["kind must be a string"])
    case("kind", f"kind-{label}.yaml", yaml.safe_dump(doc), ["kind must be a string"])
for label, kind in {"missing": None, "empty": ""}.items():
    doc = {"apiVersion": "v1", "metadata": {"name": "x"}}
    if kind is not None:
        doc["kind"] = kind
    case("kind", f"kind-{label}.json", json.dumps(doc), ["an object without a kind"])
for label, api in {"int": 1, "list": ["v1"], "object": {"group": ""}, "bool": False}.items():
    doc = {"apiVersion": api, "kind": "Pod", "metadata": {"name": "x"}}
    case("kind", f"apiversion-{label}.json", json.dumps(doc), ["apiVersion must be a string"])
case("kind", "empty-object.json", "{}", ["an object without a kind"])
case("kind", "kind-in-list-item.json", json.dumps(o.as_list({"apiVersion": "v1", "kind": 3})),
     ["items[0]", "kind must be a string"])


# -- syntax ---------------------------------------------------------------------------------

SYNTAX = {
    "truncated.json": ('{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod"', "not valid JSON"),
    "truncated-item.json": (json.dumps(o.as_list(o.binding("b1", "fp8"), o.deployment("md")))[:-40], "not valid JSON"),
    "trailing-comma.json": ('{"kind": "Pod", "metadata": {"name": "x"},}', "not valid JSON"),
    "single-quotes.json": ("{'kind': 'Pod'}", "not valid JSON"),
    "nan.json": ('{"kind": "Pod", "metadata": {"name": "x"}, "x": NaN}', "NaN is not JSON"),
    "infinity.json": ('{"kind": "Pod", "metadata": {"name": "x"}, "x": -Infinity}', "-Infinity is not JSON"),
    "garbage-after.json": ('{"kind": "List", "items": []} trailing', "not valid JSON"),
    "unclosed-array.json": ("[" + json.dumps(o.binding("b1", "fp8")), "not valid JSON"),
    "bad-escape.json": ('{"kind": "P\\od"}', "not valid JSON"),
    "control-in-string.json": ('{"kind": "Po\x01d"}', "not valid JSON"),
    "key-not-string.json": ('{kind: "Pod"}', "not valid JSON"),
    "bad-indent.yaml": ("kind: Pod\n  metadata: : :\n", "not valid YAML"),
    "tab-indent.yaml": ("kind: Pod\nmetadata:\n\tname: x\n", "not valid YAML"),
    "unclosed-quote.yaml": ("kind: \"Pod\nmetadata: {}\n", "not valid YAML"),
    "unclosed-flow.yaml": ("kind: Pod\nmetadata: {name: x\n", "not valid YAML"),
    "undefined-alias.yaml": ("kind: Pod\nmetadata: *nowhere\n", "not valid YAML"),
    "python-tag.yaml": ("kind: !!python/object/apply:os.system ['true']\n", "not valid YAML"),
    "unhashable-key.yaml": ("? [a, b]\n: c\nkind: Pod\n", "not valid YAML"),
    "duplicate-document-marker.yaml": ("--- --- kind: Pod\n", "not valid YAML"),
    "huge-int.json": ('{"kind": "Pod", "metadata": {"name": "x"}, "n": ' + "9" * 5000 + "}", "not valid JSON"),
    "huge-int.yaml": ("kind: Pod\nmetadata: {name: x}\nn: " + "9" * 5000 + "\n", "not valid YAML"),
    "nul-byte.yaml": ("kind: Pod\x00\n", "not valid YAML"),
    "document-end-only.yaml": ("...\n", "not valid YAML"),
    "yaml-flow-as-json.json": ("{kind: Pod, metadata: {name: x}}", "not valid JSON"),
}
for name, (text, expect) in SYNTAX.items():
    case("syntax", name, text, [expect, name])
case("syntax", "latin1.yaml", "kind: Pod\nmetadata: {name: caf\xe9}\n".encode("latin-1"), ["not UTF-8"])
case("syntax", "utf16.json", '{"kind": "Pod"}'.encode("utf-16"), ["not UTF-8"])
case("syntax", "invalid-utf8.json", b'{"kind": "Pod\xff\xfe"}', ["not UTF-8"])


# -- alias: bombs and self-reference ---------------------------------------------------------

def laughs(levels, width, tail="kind: Pod\n"):
    lines = ['a0: &a0 ["lol"' + ', "lol"' * (width - 1) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n" + tail


case("alias", "billion-laughs.yaml", laughs(9, 9), ["excessive aliasing"])
case("alias", "laughs-10x10.yaml", laughs(10, 10), ["excessive aliasing"])
case("alias", "laughs-30x2.yaml", laughs(30, 2), ["excessive aliasing"])
case("alias", "laughs-6x20.yaml", laughs(6, 20), ["excessive aliasing"])
case("alias", "laughs-in-list-items.yaml",
     "apiVersion: v1\nkind: List\nitems:\n- " + laughs(8, 8, "kind: Pod\n").replace("\n", "\n  ").rstrip() + "\n",
     ["excessive aliasing"])
_bomb_pod = o.md_pod("p0", "md", "__CMD__")
case("alias", "laughs-in-command.yaml",
     "x-bomb: [&c0 [x, x, x, x, x, x, x, x, x, x], "
     + ", ".join(f"&c{i} [" + ", ".join([f"*c{i - 1}"] * 10) + "]" for i in range(1, 8)) + "]\n"
     + yaml.safe_dump(_bomb_pod).replace("command: __CMD__", "command: *c7"), ["excessive aliasing"])
case("alias", "merge-key-bomb.yaml",
     "a0: &a0 {k0: v, k1: v, k2: v, k3: v, k4: v, k5: v, k6: v, k7: v, k8: v, k9: v}\n"
     + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 8))
     + "m:\n  <<: *a0\nkind: Pod\n", ["excessive aliasing"])
case("alias", "self-reference.yaml", "&a [*a]\n", ["contains", "itself"])
case("alias", "self-reference-map.yaml", "kind: Pod\nmetadata: &m\n  name: x\n  self: *m\n", ["contains", "itself"])
case("alias", "second-document-bomb.yaml", yaml.safe_dump(o.binding("b1", "fp8")) + "---\n" + laughs(9, 9),
     ["excessive aliasing", "document 2"])


# -- depth ----------------------------------------------------------------------------------

case("depth", "deep-array.json", "[" * 3000 + "]" * 3000, ["nested too deeply"])
case("depth", "deep-object.json", '{"a":' * 3000 + "1" + "}" * 3000, ["nested too deeply"])
case("depth", "deep-in-items.json", '{"kind": "List", "items": [' + "[" * 3000 + "]" * 3000 + "]}", ["nested too deeply"])
case("depth", "deep-flow.yaml", "kind: Pod\nx: " + "[" * 3000 + "]" * 3000 + "\n", ["not valid YAML"])
case("depth", "deep-block.yaml", "kind: Pod\nx: " + "- " * 1200 + "x\n", ["not valid YAML"])
case("depth", "deep-mixed.yaml", "kind: Pod\nx: " + "[{a: " * 600 + "x" + "}]" * 600 + "\n", ["nested too deeply"])


# -- field: a field the plugin reads, with the wrong type -----------------------------------

DELETE = object()


def mutate(obj, path, value):
    obj = copy.deepcopy(obj)
    cur = obj
    keys = []
    for part in path.replace("]", "").replace("[", ".").split("."):
        keys.append(int(part) if part.isdigit() else part)
    for key in keys[:-1]:
        cur = cur[key]
    if value is DELETE:
        del cur[keys[-1]]
    else:
        cur[keys[-1]] = value
    return obj


def field_case(kind, base, path, value, expect_path=None, label=None, fmt=None, commands=("verify", "check"),
               context=()):
    obj = mutate(base, path, value)
    n = sum(1 for c in CASES if c["class"] == "field") + 1
    label = label or type(value).__name__
    fmt = fmt or ("json" if n % 2 else "yaml")
    name = f"field-{n:03d}-{kind}-{path.replace('[', '.').replace(']', '')}-{label}.{fmt}"
    doc = o.as_list(*context, obj)
    text = json.dumps(doc) if fmt == "json" else yaml.safe_dump(doc)
    case("field", name, text, [expect_path or path, name], commands=commands)


POD = o.md_pod("p0", "md", o.vllm_argv("fp8"), exit_code=2)
POD["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"},
                                       {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
POD["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "cm"}, "prefix": "P_"}]
POD["metadata"]["annotations"] = {"kvcache.gpustack.ai/role": "server", "other": "x"}
POD["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
CONTEXT = (o.binding("b1", "fp8"), o.deployment("md"))

NOT_STRING = {"int": 7, "list": ["x"], "object": {"x": 1}, "bool": True, "float": 0.5}
NOT_LIST = {"string": "vllm serve", "object": {"0": "vllm"}, "int": 3}
NOT_OBJECT = {"string": "x", "list": [], "int": 1}

for path in ("metadata.name", "metadata.namespace", "spec.containers[0].name", "spec.containers[0].image",
             "metadata.creationTimestamp", "status.phase"):
    for label, value in NOT_STRING.items():
        if label in ("float", "bool") and path not in ("metadata.name", "spec.containers[0].image"):
            continue
        field_case("pod", POD, path, value, label=label, context=CONTEXT)
for source in ("command", "args"):
    base = mutate(POD, "spec.containers[0].args", ["--port", "8000"]) if source == "args" else POD
    for label, value in NOT_LIST.items():
        field_case("pod", base, f"spec.containers[0].{source}", value, label=label, context=CONTEXT)
    for label, value in {"null": None, "nested-list": ["x"], "int": 8000, "object": {"a": "b"}, "bool": False}.items():
        field_case("pod", base, f"spec.containers[0].{source}[1]", value, label=label, context=CONTEXT)
for label, value in {"string": "main", "object": {"name": "main"}, "null": None}.items():
    field_case("pod", POD, "spec.containers", value, label=label, context=CONTEXT)
for label, value in {"null": None, "int": 1, "list": [], "string": "main"}.items():
    field_case("pod", POD, "spec.containers[0]", value, label=label, context=CONTEXT)
field_case("pod", POD, "spec.containers[0].name", DELETE, label="missing", context=CONTEXT)
for label, value in NOT_OBJECT.items():
    field_case("pod", POD, "metadata", value, label=label, context=CONTEXT)
    field_case("pod", POD, "spec", value, expect_path="spec", label=label, context=CONTEXT)
    field_case("pod", POD, "status", value, label=label, context=CONTEXT)
for label, value in {"string": "app=x", "list": ["a"], "int": 1}.items():
    field_case("pod", POD, "metadata.labels", value, label=label, context=CONTEXT)
    field_case("pod", POD, "metadata.annotations", value, label=label, context=CONTEXT)
for label, value in {"int": 1, "list": ["x"], "object": {}, "bool": False}.items():
    pod = copy.deepcopy(POD)
    pod["metadata"]["labels"]["app.kubernetes.io/component"] = value
    n = sum(1 for c in CASES if c["class"] == "field") + 1
    name = f"field-{n:03d}-pod-label-value-{label}.json"
    case("field", name, json.dumps(o.as_list(*CONTEXT, pod)), ["metadata.labels", "Pod team/p0"])
    pod = copy.deepcopy(POD)
    pod["metadata"]["annotations"]["kvcache.gpustack.ai/binding"] = value
    name = f"field-{n + 1:03d}-pod-annotation-value-{label}.yaml"
    case("field", name, yaml.safe_dump(o.as_list(*CONTEXT, pod)), ["metadata.annotations", "Pod team/p0"])
case("field", "field-pod-label-key-int.yaml",
     yaml.safe_dump(o.as_list(*CONTEXT, mutate(POD, "metadata.labels", {1: "x"}))),
     ["metadata.labels", "key 1 must be a string"])
for label, value in {"string": "md", "list-null": [None], "list-int": [1], "list-list": [["x"]]}.items():
    field_case("pod", POD, "metadata.ownerReferences", value, label=label, context=CONTEXT)
for sub, value in (("controller", "yes"), ("kind", 5), ("name", ["md"]), ("apiVersion", 1)):
    field_case("pod", POD, f"metadata.ownerReferences[0].{sub}", value, context=CONTEXT)
for label, value in {"string": "A=1", "list-null": [None], "list-string": ["A=1"]}.items():
    field_case("pod", POD, "spec.containers[0].env", value, label=label, context=CONTEXT)
for path, value in (("spec.containers[0].env[0].name", 1), ("spec.containers[0].env[0].value", 1),
                    ("spec.containers[0].env[0].value", ["x"]), ("spec.containers[0].env[1].valueFrom", "secret"),
                    ("spec.containers[0].env[1].valueFrom.secretKeyRef", "s"),
                    ("spec.containers[0].env[1].valueFrom.secretKeyRef.name", 5),
                    ("spec.containers[0].env[1].valueFrom.secretKeyRef.key", ["k"]),
                    ("spec.containers[0].env[0].name", DELETE),
                    ("spec.containers[0].envFrom", "cm"), ("spec.containers[0].envFrom[0]", "cm"),
                    ("spec.containers[0].envFrom[0].configMapRef", "cm"),
                    ("spec.containers[0].envFrom[0].configMapRef.name", 1),
                    ("spec.containers[0].envFrom[0].prefix", 1)):
    field_case("pod", POD, path, value, label="missing" if value is DELETE else None, context=CONTEXT)
for path, value in (("status.containerStatuses", "main"), ("status.containerStatuses[0]", None),
                    ("status.containerStatuses[0].name", 1), ("status.containerStatuses[0].lastState", "crashed"),
                    ("status.containerStatuses[0].lastState.terminated", 2),
                    ("status.containerStatuses[0].lastState.terminated.exitCode", "2"),
                    ("status.containerStatuses[0].lastState.terminated.exitCode", 2.0),
                    ("status.containerStatuses[0].lastState.terminated.exitCode", True),
                    ("status.containerStatuses[0].lastState.terminated.exitCode", 1 << 40)):
    field_case("pod", POD, path, value, label="huge" if value == 1 << 40 else None, context=CONTEXT)

MD = o.deployment("md", roles=[{"name": "server", "kind": "server", "replicas": 2, "extraArgs": ["--max-num-seqs", "8"],
                                "env": [{"name": "A", "value": "1"}]},
                               {"name": "embed", "kind": "server", "command": ["vllm", "serve", "m"]}])
MD["spec"]["roles"][0]["image"] = "vllm/vllm-openai:v0.29.0"     # spec.roles[].image (no spec.engine.image)
MD["status"] = {"kvCache": {"domain": {"dtype": "fp8"}}}
MD_CONTEXT = (o.binding("b1", "fp8"),)
for label, value in NOT_OBJECT.items():
    field_case("md", MD, "spec", value, label=label, context=MD_CONTEXT)
    field_case("md", MD, "spec.kvCache", value, label=label, context=MD_CONTEXT)
    field_case("md", MD, "spec.kvCache.poolRef", value, label=label, context=MD_CONTEXT)
    field_case("md", MD, "spec.engine", value, label=label, context=MD_CONTEXT)
    field_case("md", MD, "status.kvCache", value, label=label, context=MD_CONTEXT)
for path in ("spec.kvCache.poolRef.name", "spec.engine.name", "spec.engine.version", "spec.roles[0].image",
             "spec.roles[0].name", "spec.roles[0].kind", "status.kvCache.domain.dtype"):
    for label in ("int", "list", "float") if path != "spec.engine.version" else ("int", "float", "list", "bool"):
        field_case("md", MD, path, NOT_STRING[label], label=label, context=MD_CONTEXT)
for label, value in {"string": "server", "object": {"name": "server"}, "list-null": [None], "list-int": [1]}.items():
    field_case("md", MD, "spec.roles", value, label=label, context=MD_CONTEXT,
               expect_path="spec.roles" if label in ("string", "object") else "spec.roles[0]")
for label, value in {"string": "2", "float": 2.5, "bool": True, "huge": 1 << 70}.items():
    field_case("md", MD, "spec.roles[0].replicas", value, label=label, context=MD_CONTEXT)
for path in ("spec.roles[0].extraArgs", "spec.roles[1].command"):
    field_case("md", MD, path, "--kv-cache-dtype fp8", label="string", context=MD_CONTEXT)
    field_case("md", MD, path + "[1]", None, label="null", context=MD_CONTEXT)
    field_case("md", MD, path + "[0]", ["nested"], label="nested-list", context=MD_CONTEXT)
    field_case("md", MD, path + "[1]", 8, label="int", context=MD_CONTEXT)
for path, value in (("spec.roles[0].env", "A=1"), ("spec.roles[0].env[0]", "A=1"), ("spec.roles[0].env[0].value", 1),
                    ("spec.roles[0].env[0].name", None)):
    field_case("md", MD, path, value, context=MD_CONTEXT)

BINDING = o.binding("b1", "fp8", domain="d")
BINDING["status"]["usedBy"] = [{"kind": "ModelDeployment", "namespace": "team", "name": "md"}]
B_CONTEXT = (o.deployment("md"), o.md_pod("p0", "md", o.vllm_argv("fp8")))
for label, value in {"int": 8, "float": 8.0, "list": ["fp8"], "object": {"fp8": True}, "bool": True}.items():
    field_case("binding", BINDING, "spec.domain.dtype", value, label=label, context=B_CONTEXT)
for label, value in NOT_OBJECT.items():
    field_case("binding", BINDING, "spec.domain", value, label=label, context=B_CONTEXT)
    field_case("binding", BINDING, "spec.poolRef", value, label=label, context=B_CONTEXT)
    field_case("binding", BINDING, "spec", value, label=label, context=B_CONTEXT)
for path, value in (("spec.domain.name", 1), ("spec.poolRef.name", ["p"]), ("status.phase", 1),
                    ("status.usedBy", "md"), ("status.usedBy[0]", "md"), ("status.usedBy[0].name", 1),
                    ("metadata.name", 1), ("metadata.name", DELETE), ("metadata.namespace", ["team"])):
    field_case("binding", BINDING, path, value, label="missing" if value is DELETE else None, context=B_CONTEXT)

POOL = o.pool("pool-a", ledger="Available")       # status: what the injection webhook reads (pod_kv_cache_resolve.go)
POOL_CONTEXT = (o.binding("b1", "fp8", pool="pool-a"),)
for path, value in (("status.clientEndpoint", 50051), ("status.conditions", "QuotaLedgerAvailable"),
                    ("status.conditions[0].status", True), ("status.conditions[0].type", ["QuotaLedgerAvailable"])):
    field_case("pool", POOL, path, value, context=POOL_CONTEXT)

SETTING = o.setting("true")
for path, value in (("status.value", True), ("status.value", 1), ("status.value", ["true"]), ("spec.value", False),
                    ("status.editable", "yes"), ("status.sensitive", "no"), ("status.description", ["d"]),
                    ("metadata.resourceVersion", 1), ("spec", "true"), ("status", ["true"])):
    field_case("setting", SETTING, path, value, context=CONTEXT)

WORKLOAD = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "wl", "namespace": "team"},
            "spec": {"template": {"metadata": {"labels": {"kvcache.gpustack.ai/inject": "true"},
                                               "annotations": {"kvcache.gpustack.ai/binding": "b1",
                                                               "kvcache.gpustack.ai/engine": "vLLM"}},
                                  "spec": {"containers": [o.container("vllm", args=["vllm", "serve", "m"])]}}}}
CRON = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj", "namespace": "team"},
        "spec": {"jobTemplate": {"spec": copy.deepcopy(WORKLOAD["spec"])}}}
for path, value in (("spec.template", "pod"), ("spec.template.spec", ["x"]), ("spec.template.spec.containers", "vllm"),
                    ("spec.template.spec.containers[0].args", "vllm serve"),
                    ("spec.template.spec.containers[0].args[0]", None),
                    ("spec.template.metadata.labels", ["inject"]),
                    ("spec.template.metadata.annotations", "x"), ("spec", "x"), ("spec.template", DELETE)):
    field_case("deployment", WORKLOAD, path, value, label="missing" if value is DELETE else None, context=CONTEXT,
               commands=("check",))
for path, value in (("spec.jobTemplate", "x"), ("spec.jobTemplate.spec", 1),
                    ("spec.jobTemplate.spec.template.spec.containers[0].command", "sh -c x")):
    field_case("cronjob", CRON, path, value, context=CONTEXT, commands=("check",))


# -- dir -------------------------------------------------------------------------------------

def directory(name, files, expect, cls="dir"):
    CASES.append({"class": cls, "file": name, "expect": list(expect), "commands": ["verify", "check"]})
    os.makedirs(os.path.join(FILES, name), exist_ok=True)
    for fname, text in files.items():
        with open(os.path.join(FILES, name, fname), "w", encoding="utf-8") as f:
            f.write(text)


directory("dir-empty-files", {"a.yaml": "", "b.json": "", "c.yml": "# nothing\n"}, ["no objects in", "a.yaml"])
directory("dir-one-empty", {"a.json": json.dumps(o.as_list(*CONTEXT)), "b.json": ""}, ["no objects in", "b.json"])
directory("dir-no-manifests", {"README.txt": "kind: Pod\n"}, ["no .json, .yaml or .yml files"])
directory("dir-one-bad", {"a.json": json.dumps(o.as_list(*CONTEXT)), "b.yaml": "kind: 3\n"},
          ["b.yaml", "kind must be a string"])

# the operator's ModelDeployment status (api/worker/v1alpha1/model_deployment.go): status.roles[]
# and the ReplicasUpToDate condition, shaped by objects.md_status / rollout_condition
MD_STATUS = copy.deepcopy(MD)
MD_STATUS["status"] = {"kvCache": {"domain": {"dtype": "fp8"}},
                       "roles": [{"name": "server", "desired": 2, "ready": 1, "quotaReserved": 2, "unmanaged": False,
                                  "kind": "server", "assignedFlavors": ["h100"]}],
                       "conditions": [o.rollout_condition("UpToDate", generation=1)]}
for path, value in (("status.roles[0].desired", "2"), ("status.roles[0].ready", 1.5),
                    ("status.roles[0].quotaReserved", 1 << 40), ("status.roles[0].unmanaged", "false"),
                    ("status.roles[0].kind", 1), ("status.roles[0].assignedFlavors", "h100"),
                    ("status.conditions", "ReplicasUpToDate"), ("status.conditions[0].reason", 7),
                    ("status.conditions[0].observedGeneration", "1")):
    field_case("md", MD_STATUS, path, value, context=MD_CONTEXT)


if __name__ == "__main__":
    with open(os.path.join(HERE, "manifest.json"), "w", encoding="utf-8") as f:
        f.write('{"cases": [\n' + ",\n".join(json.dumps(c, ensure_ascii=False) for c in CASES) + "\n]}\n")
    print(f"{len(CASES)} cases in {FILES}")
