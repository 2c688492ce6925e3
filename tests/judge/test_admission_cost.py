"""The generated policies' CEL cost, measured with the Kubernetes CEL library of the pinned release
(hack/celcost: k8s.io/apiserver v0.37.2's base environment at compatibility 1.37, its
library.CostEstimator, cel-go's cost tracking): the actual cost of judging sample requests, far
under the API server's budgets (k8s.io/apiserver v0.37.2 pkg/apis/cel/config.go:
RuntimeCELCostBudget 10,000,000 per binding's evaluation, PerCallLimit 1,000,000 per expression).
Needs Go (and, once, the module proxy for hack/celcost's modules); docs/admission.md has the numbers."""

import json
import os
import subprocess

import pytest

import celcost as celcost_tool
from kubectl_kvcache import engine
from objects import as_list, binding, deployment
from runcli import kvcache

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "cluster.json")
RUNTIME_BUDGET, PER_CALL = 10_000_000, 1_000_000


@pytest.fixture(scope="module")
def celcost(tmp_path_factory):
    return celcost_tool.build(tmp_path_factory.mktemp("celcost"))


def measure(celcost, tmp_path, policy, obj, namespace, operation="CREATE"):
    """{expression: (estimated max, actual, result)} and the total actual cost of one request."""
    (tmp_path / "policy.json").write_text(json.dumps(policy))
    (tmp_path / "request.json").write_text(json.dumps(
        {"object": obj, "oldObject": None, "request": {"namespace": namespace, "operation": operation}}))
    p = subprocess.run([celcost, str(tmp_path / "policy.json"), str(tmp_path / "request.json")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rows, total = {}, None
    for line in p.stdout.splitlines():
        parts = line.split("\t")
        if parts[0] == "total":
            total = int(parts[1].split()[1])
        else:
            rows[f"{parts[0]} {parts[1]}"] = (parts[2], int(parts[3].split()[1]), parts[4][len("result "):])
    print(p.stdout)
    return rows, total


def policies(tmp_path, args):
    code, out, err = kvcache("admission", *args, "-o", "json")
    assert code == 0, err
    items = json.loads(out)["items"]
    return items[0], items[2]


def test_the_example_costs_little(celcost, tmp_path):
    bindings, deployments = policies(tmp_path, ["-A", "-f", EXAMPLE])
    refused = binding("new", "bf16", ns="llm-prod", pool="h100-pool")
    rows, total = measure(celcost, tmp_path, bindings, refused, "llm-prod")
    assert rows["validation 0"][2] == "false" and "bf16" in rows["messageExpression 0"][2]
    assert 0 < total < RUNTIME_BUDGET / 1000
    admitted = deployment("m", engine="vllm", version="0.29.0", binding_name="chat-fp8", ns="llm-prod")
    rows, total = measure(celcost, tmp_path, deployments, admitted, "llm-prod")
    assert rows["validation 0"][2] == "true" and 0 < total < RUNTIME_BUDGET / 1000


def test_a_crowded_pool_stays_under_the_budget(celcost, tmp_path):
    """100 deployments on one pool, each at another release: the bindings policy's cost grows with
    them (the filter over the pool's engines), and stays far under each limit."""
    releases = [(e, r) for e in engine.ENGINES for r, _ in engine.known_releases(e)][-100:]   # the last 100: SGLang 0.3.4.post2 to 0.5.23
    objs = [binding("b", "auto", ns="team", pool="crowded")]
    objs += [deployment(f"d{i}", engine=e, version=r, binding_name="b", ns="team") for i, (e, r) in enumerate(releases)]
    path = tmp_path / "crowded.json"
    path.write_text(json.dumps(as_list(*objs)))
    bindings, _ = policies(tmp_path, ["-A", "-f", str(path)])
    rows, total = measure(celcost, tmp_path, bindings, binding("new", "bf16", ns="team", pool="crowded"), "team")
    assert rows["validation 0"][2] == "false"
    assert max(actual for _, actual, _ in rows.values()) < PER_CALL / 100 and total < RUNTIME_BUDGET / 100
