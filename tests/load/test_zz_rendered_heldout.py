"""Held out: a chart never tuned on (castai/helm-charts' SGLang child chart, its multi-node
StatefulSet path; tests/load/rendered/heldout/), rendered once and judged as it came, run last in
tests/load. Each decision is expected from the rendered objects, our values and the engine
releases' accepted values (engine/data.py ACCEPTED_VALUES, which the conformance tier holds to
the real parsers), never from the plugin's output; the rate is printed apart (`rendered
charts, held out`)."""

import json
import os
import shlex

import yaml

from kubectl_kvcache.engine import data
from runcli import kvcache

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rendered")
CHART = os.path.join(HERE, "heldout", "castai-sglang.yaml")
BINDINGS = os.path.join(HERE, "bindings.yaml")
SHELLS = {"sh", "bash", "dash", "ash", "zsh", "ksh"}


def _docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def _ever_accepted(engine):
    accepted: set = set()
    for _, added, _ in data.ACCEPTED_VALUES[engine]:
        accepted |= set(added)
    return accepted


def _expected():
    """(kind, name, code) of each decision a careful reader of the chart's output expects."""
    dtypes = {d["metadata"]["name"]: d["spec"]["domain"]["dtype"] for d in _docs(BINDINGS)}
    expected = []
    for obj in _docs(CHART):
        template = obj.get("spec", {}).get("template")
        if obj["kind"] not in ("Deployment", "StatefulSet") or not template:
            continue
        meta = template["metadata"]
        if meta.get("labels", {}).get("kvcache.gpustack.ai/inject") != "true":
            continue
        binding = meta["annotations"]["kvcache.gpustack.ai/binding"]
        engine = meta["annotations"]["kvcache.gpustack.ai/engine"].lower()
        if dtypes[binding] not in _ever_accepted(engine):     # no release of its engine takes it
            expected.append(("KVCachePoolBinding", binding, "binding-dtype-rejected"))
        (container,) = template["spec"]["containers"]
        argv = container.get("command", []) + container.get("args", [])
        if os.path.basename(argv[0]) in SHELLS and "-c" in argv:     # the webhook cannot append to a script
            expected.append((obj["kind"], obj["metadata"]["name"], "injection-refused"))
        elif any(a == "--kv-cache-dtype" or a.startswith("--kv-cache-dtype=")
                 for a in shlex.split(" ".join(argv))):
            expected.append((obj["kind"], obj["metadata"]["name"], "injection-refused"))
    return expected


def test_held_out_chart(capsys):
    expected = _expected()
    assert expected, "the held-out chart rendered no opted-in engine workload"
    code, out, err = kvcache("check", "-n", "llm-prod", "-f", CHART, "-f", BINDINGS, "-o", "json")
    assert "Traceback" not in err
    found = {(f["kind"], f["name"], f["code"]) for f in json.loads(out)["findings"]}
    hits = [e for e in expected if e in found]
    errors = {(f["kind"], f["name"], f["code"]) for f in json.loads(out)["findings"] if f["severity"] == "error"}
    unexpected = errors - set(expected)
    total = len(expected) + len(unexpected)
    with capsys.disabled():
        print(f"\nrendered charts, held out: {len(hits)}/{total} decisions as expected"
              + (f" (missed {sorted(set(expected) - found)}; unexpected {sorted(unexpected)})"
                 if len(hits) != total else ""))
    assert code == (1 if expected else 0)
    assert len(hits) == total, (expected, sorted(found))
