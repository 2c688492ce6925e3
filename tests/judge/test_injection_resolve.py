"""What the injection webhook's resolution refuses (operator/webhooks.py injection_refusals, from
gpustack-operator pkg/worker/webhooks/worker/pod_kv_cache_resolve.go, inject/types.go,
inject/engine.go), as check reports it: injection-unresolved, whatever the Setting."""

import objects as o
import pytest

from kubectl_kvcache.judge import checks
from kubectl_kvcache.operator import decode, records, webhooks

P = "kvcache.gpustack.ai/"
ARGV = ["vllm", "serve", "m"]


def snap(*objs, pools=None, source="file"):
    s = records.Snapshot(source=source)
    s.setting = records.default_setting()
    for obj in objs:
        kind = obj["kind"]
        if kind == "KVCachePoolBinding":
            r = decode.binding_record(obj)
            s.bindings[(r.namespace, r.name)] = r
        elif kind == "Pod":
            s.pods.append(decode.pod_record(obj))
        else:
            s.workloads.append(decode.workload_record(obj))
    if pools is not None:
        s.pools = {p["metadata"]["name"]: decode.pool_record(p) for p in pools}
    return s


def unresolved(s):
    return [f for f in checks.check(s).findings if f.code == "injection-unresolved"]


def tpl(engine="vllm", **ann):
    return o.workload("w", [o.container(command=ARGV)], binding_name="b", engine=engine,
                      annotations={P + k: v for k, v in ann.items()})


def test_parse_engine_takes_exact_spellings():
    # inject/types.go ParseEngine: every version in the index compares exactly with vllm and sglang
    assert webhooks.parse_engine("vllm") == ("vllm", None)
    assert webhooks.parse_engine("sglang") == ("sglang", None)
    for value in ("vLLM", "SGLang", "VLLM", " vllm", ""):
        engine, refusal = webhooks.parse_engine(value)
        assert engine is None and "ParseEngine" in refusal.rule
    engine, refusal = webhooks.parse_engine("vllm-ascend")
    assert engine is None and "manufacturer=ascend" in refusal.fix


def test_a_capitalised_engine_annotation_is_refused_unless_the_cluster_injected_one():
    found = unresolved(snap(o.binding("b", "fp8"), tpl("vLLM")))
    assert len(found) == 1 and "ParseEngine takes exactly 'vllm' or 'sglang'" in found[0].message
    assert "assumed" in found[0].message        # no Pod here tells which release runs
    # a Pod the running operator injected with 'vLLM' tells that this release takes it
    told = o.injected_pod("p", "b", engine="vLLM", containers=[o.container(command=ARGV)],
                          extra_ann={P + "injected": "{}"})
    assert not unresolved(snap(o.binding("b", "fp8"), tpl("vLLM"), told))


def test_manufacturer_rules():
    assert not unresolved(snap(o.binding("b", "fp8"), tpl(manufacturer="ascend")))
    found = unresolved(snap(o.binding("b", "fp8"), tpl(manufacturer="Ascend")))
    assert "must be 'ascend'" in found[0].message and "resolveManufacturer" in found[0].message
    found = unresolved(snap(o.binding("b", "fp8"), tpl("sglang", manufacturer="ascend")))
    assert "only accepted with engine 'vllm'" in found[0].message


def test_a_domain_annotation_and_unknown_or_written_keys():
    found = unresolved(snap(o.binding("b", "fp8"), tpl(domain="mine")))
    assert "annotation kvcache.gpustack.ai/domain is not accepted" in found[0].message
    found = unresolved(snap(o.binding("b", "fp8"), tpl(bindng="b")))
    assert "kvcache.gpustack.ai/bindng is not one the webhook accepts" in found[0].message
    found = unresolved(snap(o.binding("b", "fp8"), tpl(injected="{}")))
    assert "written by the webhook" in found[0].message
    found = unresolved(snap(o.binding("b", "fp8"), tpl(role="server")))
    assert "ParseRole" in found[0].message


def test_a_binding_being_deleted():
    b = o.binding("b", "fp8")
    b["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    found = unresolved(snap(b, tpl()))
    assert "KVCachePoolBinding b is being deleted" in found[0].message


def _ledger_pool(status, reason):
    pool = o.pool(ledger=reason)
    pool["status"]["conditions"][0]["status"] = status
    return pool


# pod_kv_cache_resolve.go checkQuotaLedger, read at 6678d71d3c725c4ec79d4c06992cf621f1df8b5a, the
# cases of TestPodKVCacheResolve_QuotaLedgerGate (an older stored version of the Go test, whose
# "reported off" case refused; at 6678d71 the function admits False/MultiTenancyDisabled: "a pool
# whose master is DECLARED or OBSERVED to hold none is joined without a tenant identity"), plus the
# other False reason its comment names (LedgerUnreachable: "stays a refusal").
LEDGER_GATE = [
    ("reported available", ("True", "Available"), None),
    ("reported off: a declared single-tenant master is joined", ("False", "MultiTenancyDisabled"), None),
    ("reported False for another reason", ("False", "LedgerUnreachable"),
     "reports QuotaLedgerAvailable False (LedgerUnreachable"),
    ("reported unknown", ("Unknown", "Probing"), "reports QuotaLedgerAvailable Unknown"),
    ("not reported at all", None, "does not report QuotaLedgerAvailable yet"),
]


@pytest.mark.parametrize("name, ledger, want", LEDGER_GATE, ids=[c[0] for c in LEDGER_GATE])
def test_the_pool_ledger_gate(name, ledger, want):
    b = o.binding("b", "fp8", pool="pool-a")
    pool = o.pool(ledger=None) if ledger is None else _ledger_pool(*ledger)
    found = unresolved(snap(b, tpl(), pools=[pool]))
    if want is None:
        assert not found, [f.message for f in found]
    else:
        assert len(found) == 1 and want in found[0].message and "checkQuotaLedger" in found[0].message


def test_the_pool_client_endpoint_and_existence():
    b = o.binding("b", "fp8", pool="pool-a")
    assert not unresolved(snap(b, tpl(), pools=[o.pool(ledger="Available")]))
    found = unresolved(snap(b, tpl(), pools=[o.pool(ledger="Available", endpoint="")]))
    assert "has not published a client endpoint" in found[0].message
    # from files, a pool not in the input is not known to be absent; from a cluster it is
    assert not unresolved(snap(b, tpl(), pools=[]))
    found = unresolved(snap(b, tpl(), pools=[], source="cluster"))
    assert "pool pool-a does not exist" in found[0].message


def test_transport_rule():
    # inject/engine.go engineTransportConstraint: vllm-ascend's store backend takes only "ascend" (CANN)
    assert webhooks.transport_refusal("vllm-ascend", ["tcp"]).fix.endswith("'CANN'")
    assert webhooks.transport_refusal("vllm-ascend", ["tcp", "ascend"]) is None
    assert webhooks.transport_refusal("vllm", ["tcp"]) is None
    assert webhooks.transport_refusal("sglang", ["rdma"]) is None


def test_an_ascend_opt_in_says_its_transport_is_not_read():
    found = [f for f in checks.check(snap(o.binding("b", "fp8"), tpl(manufacturer="ascend"))).findings
             if f.code == "unchecked" and "transport" in f.message]
    assert len(found) == 1 and "'CANN'" in found[0].message and "MatchTransport" in found[0].message


def test_an_ascend_opt_in_spelled_as_the_clusters_release_takes_it_says_its_transport_too():
    """A `vLLM` the running release takes (a Pod it injected says so) is vLLM: the same unread
    transport is said as for `vllm` (no case-sensitive comparison of the engine)."""
    told = o.injected_pod("p", "b", engine="vLLM", containers=[o.container(command=ARGV)],
                          extra_ann={P + "injected": "{}"})
    found = [f for f in checks.check(snap(o.binding("b", "fp8"), tpl("vLLM", manufacturer="ascend"), told)).findings
             if f.code == "unchecked" and "transport" in f.message]
    assert len(found) == 1 and "MatchTransport" in found[0].message
