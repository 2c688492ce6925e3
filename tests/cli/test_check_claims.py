"""check and bindings on files: binding-domain-claimed per master (judge/checks/claims.py), the
KVCachePools read from the input, a pool the input does not hold said as such, the exit codes."""

import json

import objects as o
from runcli import kvcache


def _bindings(old_pool="pool-a", new_pool="pool-b", domain="sgl"):
    old = o.binding("sgl-fp8", "fp8", domain=domain, ns="prod", pool=old_pool)
    new = o.binding("sgl-fp8-e4m3", "fp8_e4m3", domain=domain, ns="prod", pool=new_pool)
    return [old, new, o.deployment("ds", binding_name="sgl-fp8-e4m3", ns="prod"),
            o.deployment("do", binding_name="sgl-fp8", ns="prod")]


def check(path, *argv):
    code, out, err = kvcache("check", "-A", "-f", path, *argv, "-o", "json")
    return code, json.loads(out), err


def of(report, code):
    return {f["name"]: f for f in report["findings"] if f["code"] == code}


def test_two_pools_sharing_a_backend_contest_the_domain_on_both_sides(write):
    path = write(*_bindings(), o.pool("pool-a", backends=["mooncake"]), o.pool("pool-b", backends=["mooncake"]))
    code, report, _ = check(path)
    claimed = of(report, "binding-domain-claimed")
    assert sorted(claimed) == ["sgl-fp8", "sgl-fp8-e4m3"] and code == 1
    f = claimed["sgl-fp8-e4m3"]
    assert f["severity"] == "error" and "KVCachePoolBinding prod/sgl-fp8 (pool pool-a)" in f["message"]
    assert "backend mooncake serves both Bindings' pools" in f["message"] and "users (ds)" in f["message"]
    code, out, _ = kvcache("bindings", "-A", "-f", path, "-o", "json")
    verdicts = {i["name"]: i["verdict"] for i in json.loads(out)["items"]}
    assert verdicts == {"sgl-fp8": "DOMAIN CLAIMED by prod/sgl-fp8-e4m3", "sgl-fp8-e4m3": "DOMAIN CLAIMED by prod/sgl-fp8"}
    assert code == 1


def test_pools_on_different_backends_are_fine(write):
    path = write(*_bindings(), o.pool("pool-a", backends=["mc-a"]), o.pool("pool-b", backends=["mc-b"]))
    code, report, _ = check(path)
    assert not of(report, "binding-domain-claimed") and not of(report, "unchecked") and code == 0
    _, out, _ = kvcache("bindings", "-A", "-f", path, "-o", "json")
    assert {i["verdict"] for i in json.loads(out)["items"]} == {"OK"}


def test_a_pool_not_in_the_input_is_said_and_strict_fails_on_it(write):
    path = write(*_bindings(), o.pool("pool-a", backends=["mooncake"]))
    code, report, _ = check(path)
    assert not of(report, "binding-domain-claimed") and code == 0
    unchecked = of(report, "unchecked")
    assert sorted(unchecked) == ["sgl-fp8", "sgl-fp8-e4m3"]
    assert "KVCachePool pool-b is not in the input" in unchecked["sgl-fp8"]["message"]
    assert kvcache("check", "-A", "-f", path, "--strict")[0] == 1


def test_one_pool_not_in_the_input_is_still_one_master(write):
    code, report, _ = check(write(*_bindings(new_pool="pool-a")))
    assert sorted(of(report, "binding-domain-claimed")) == ["sgl-fp8", "sgl-fp8-e4m3"] and code == 1


def test_the_input_pools_are_read_not_ignored(write):
    _, _, err = kvcache("check", "-A", "-f", write(*_bindings(), o.pool("pool-a"), o.pool("pool-b")))
    assert "KVCachePool" not in err


def test_the_example_cluster_has_no_claim_its_default_domains_are_on_two_backends():
    # examples/cluster.json: chat-fp8 and legacy-auto both register `default`, on h100-pool
    # (mooncake-h100) and l40s-pool (mooncake-l40s)
    import os
    example = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "examples", "cluster.json")
    _, report, _ = check(example)
    assert not of(report, "binding-domain-claimed") and not of(report, "unchecked")
