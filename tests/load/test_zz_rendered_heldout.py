"""Held out: charts never tuned on (tests/load/rendered/heldout/: castai/helm-charts' SGLang
child chart, its multi-node StatefulSet path, opted in; ardge-timwu/vllm-helm as its own
values-simple.yaml renders it, which nothing opts in), rendered once and judged as they came,
beside our Bindings, run last in tests/load. Each decision is expected from the rendered objects, our values and the engine
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
CHARTS = [os.path.join(HERE, "heldout", name) for name in ("castai-sglang.yaml", "vllm-helm.yaml")]
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


def _expected(chart):
    """(kind, name, code) of each decision a careful reader of the chart's output expects."""
    dtypes = {d["metadata"]["name"]: d["spec"]["domain"]["dtype"] for d in _docs(BINDINGS)}
    expected, named = [], set()
    for obj in _docs(chart):
        template = obj.get("spec", {}).get("template")
        if obj["kind"] not in ("Deployment", "StatefulSet") or not template:
            continue
        meta = template["metadata"]
        if meta.get("labels", {}).get("kvcache.gpustack.ai/inject") != "true":
            continue
        binding = meta["annotations"]["kvcache.gpustack.ai/binding"]
        named.add(binding)
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
    # a Binding no opted-in template names is unused (a chart whose workloads do not opt in names none)
    expected += [("KVCachePoolBinding", b, "binding-unused") for b in dtypes if b not in named]
    return expected


def test_held_out_charts(capsys):
    hits, total, misses = 0, 0, []
    for chart in CHARTS:
        expected = _expected(chart)
        code, out, err = kvcache("check", "-n", "llm-prod", "-f", chart, "-f", BINDINGS, "-o", "json")
        assert "Traceback" not in err and out, err
        findings = json.loads(out)["findings"]
        found = {(f["kind"], f["name"], f["code"]) for f in findings}
        unexpected = {(f["kind"], f["name"], f["code"]) for f in findings
                      if f["severity"] in ("error", "warning")} - set(expected)
        got = [e for e in expected if e in found]
        hits += len(got) + (code == (1 if any(c != "binding-unused" for _, _, c in expected) else 0))
        total += len(expected) + len(unexpected) + 1        # each decision, and the exit code
        misses += [(os.path.basename(chart), m) for m in sorted(set(expected) - found)] + \
            [(os.path.basename(chart), "unexpected", u) for u in sorted(unexpected)] + \
            ([(os.path.basename(chart), "exit", code)] if code != (1 if any(
                c != "binding-unused" for _, _, c in expected) else 0) else [])
    with capsys.disabled():
        print(f"\nrendered charts, held out: {hits}/{total} decisions as expected"
              + (f" (missed: {misses})" if misses else ""))
    assert not misses and hits == total
