"""The operator stand-in (operator_standin.py) against the real API server: it renders what the
plugin's renderer model says the operator renders, and the plugin judges it the way it judges the
operator's Pods. Each test names the operator behaviour (Go test) it plays."""

import json
import os
import subprocess
import sys

import objects as o
from kubectl_kvcache.operator.api import GROUP, VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
API = f"/apis/{GROUP}/{VERSION}"
SETTING = "/apis/gpustack.ai/v1/namespaces/gpustack-system/settings/model-deployment-kv-cache-dtype-owned"


def set_setting(cluster, value):
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                   "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                   "spec": {"value": value}}, with_status=False)


def plugin(cluster, *args):
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *args, "--kubeconfig", cluster.admin_kubeconfig],
                       cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    return p.returncode, p.stdout, p.stderr


def pods(cluster, ns):
    return sorted(cluster.request_ok("GET", f"/api/v1/namespaces/{ns}/pods")["items"],
                  key=lambda p: p["metadata"]["creationTimestamp"] + p["metadata"]["name"])


def test_it_renders_the_dtype_beside_the_store_and_crash_loops_what_the_engine_rejects(cluster):
    # model_deployment_kv_cache_dtype_test.go: the Binding's dtype on every replica, the role's
    # extraArgs after it; an SGLang release that rejects `fp8` exits with code 2.
    set_setting(cluster, "true")
    ns = cluster.new_namespace("standin")
    cluster.apply([o.binding("vl", "fp8_e4m3", ns=ns), o.binding("sg", "fp8", ns=ns),
                   o.deployment("chat", ns=ns, binding_name="vl",
                                roles=[o.role(extra_args=["--max-model-len", "4096"], replicas=2)]),
                   o.deployment("sgl", ns=ns, engine="sglang", version="0.5.18", binding_name="sg")],
                  with_status=False)
    standin = cluster.operator_standin([ns])
    assert standin.settle(timeout=60)
    chat = [p for p in pods(cluster, ns) if p["metadata"]["labels"]["app.kubernetes.io/instance"] == "chat"]
    assert len(chat) == 2
    command = chat[0]["spec"]["containers"][0]["command"]
    flags = [a for a in command if a.startswith("--")]
    assert flags[:3] == ["--kv-transfer-config", "--kv-cache-dtype", "--max-model-len"]
    assert command[command.index("--kv-cache-dtype") + 1] == "fp8_e4m3"
    assert {"name": "MOONCAKE_CONFIG_PATH"}.items() <= chat[0]["spec"]["containers"][0]["env"][0].items()
    sgl = [p for p in pods(cluster, ns) if p["metadata"]["labels"]["app.kubernetes.io/instance"] == "sgl"]
    assert len(sgl) == 1
    cs = sgl[0]["status"]["containerStatuses"][0]
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff" and cs["lastState"]["terminated"]["exitCode"] == 2
    md = cluster.request_ok("GET", f"{API}/namespaces/{ns}/modeldeployments/chat")
    assert md["status"]["kvCache"]["domain"]["dtype"] == "fp8_e4m3"
    assert md["status"]["conditions"][0]["status"] == "True"
    code, out, err = plugin(cluster, "verify", "-n", ns, "-o", "json")
    report = json.loads(out)
    statuses = sorted((i["pod"].split("-")[0], i["status"]) for i in report["items"])
    assert statuses == [("chat", "OK"), ("chat", "OK"), ("sgl", "REJECTED")], err


def test_it_replaces_one_replica_per_role_per_pass(cluster):
    # docs/reference/settings.md: flipping the Setting recreates every pool-attached replica
    set_setting(cluster, "true")
    ns = cluster.new_namespace("standin")
    cluster.apply([o.binding("b1", "fp8", ns=ns), o.deployment("chat", ns=ns, roles=[o.role(replicas=3)])],
                  with_status=False)
    standin = cluster.operator_standin([ns])
    assert standin.settle(timeout=60)
    set_setting(cluster, "false")
    standin.reconcile()                     # mirrors the Setting and replaces one replica
    rendered = [("--kv-cache-dtype" in p["spec"]["containers"][0]["command"]) for p in pods(cluster, ns)]
    assert sorted(rendered) == [False, True, True]
    assert standin.settle(timeout=60)
    assert not any("--kv-cache-dtype" in p["spec"]["containers"][0]["command"] for p in pods(cluster, ns))
    assert cluster.request_ok("GET", SETTING)["status"]["value"] == "false"


def test_it_marks_what_the_webhooks_refuse(cluster):
    # kv_cache_pool_binding_test.go: `auto` refused on create with the Setting on;
    # model_deployment_kv_cache_dtype_test.go: a role passing the flag itself refused while owned
    set_setting(cluster, "false")
    ns = cluster.new_namespace("standin")
    standin = cluster.operator_standin([ns])
    standin.reconcile()                     # what it finds at its first pass counts as stored
    cluster.apply([o.binding("stored-auto", "auto", ns=ns)], with_status=False)   # admitted: the Setting off
    standin.reconcile()
    set_setting(cluster, "true")
    cluster.apply([o.binding("auto", "auto", ns=ns), o.binding("b1", "fp8", ns=ns),
                   o.deployment("own", ns=ns, roles=[o.role(extra_args=["--kv-cache-dtype=fp8"])]),
                   o.deployment("on-auto", ns=ns, binding_name="auto")], with_status=False)
    assert standin.settle(timeout=60)
    auto = cluster.request_ok("GET", f"{API}/namespaces/{ns}/kvcachepoolbindings/auto")
    assert auto["status"]["conditions"][0]["status"] == "False"
    assert '"auto" lets each engine' in auto["status"]["conditions"][0]["message"]
    own = cluster.request_ok("GET", f"{API}/namespaces/{ns}/modeldeployments/own")
    assert '"--kv-cache-dtype" is set by the operator' in own["status"]["conditions"][0]["message"]
    assert pods(cluster, ns) == []          # neither is rendered
    # a stored `auto` Binding stays usable and updatable (AutoDtypeIsJudgedAtCreationWhileOwned)
    stored = cluster.request_ok("GET", f"{API}/namespaces/{ns}/kvcachepoolbindings/stored-auto")
    assert stored["status"]["phase"] == "Ready"
    assert [c["type"] for c in stored["status"]["conditions"]] == ["DomainExclusive", "QuotaObserved", "QuotaGranted"]
    assert standin.errors == []


def test_it_judges_a_new_binding_against_its_pool_and_renders_the_pools_store(cluster):
    # kv_cache_pool_binding_test.go (ValidateCreate): "a ceiling larger than the whole pool",
    # ASecondDistinctDomainNeedsAMasterThatSeparates: "a managed master with no ledger refuses the
    # second domain"; a pool that reports no status.clientEndpoint renders no store (no dtype).
    set_setting(cluster, "true")
    ns = cluster.new_namespace("standin")
    big, ledgerless, dark = (f"{ns}-big", f"{ns}-ledgerless", f"{ns}-dark")
    cluster.apply([o.pool(big, backends=[f"{ns}-mc"], total="1Ti"),
                   o.pool(ledgerless, backends=[f"{ns}-nl"], total="1Ti"),
                   o.backend(f"{ns}-nl", multi_tenancy=False),
                   o.pool(dark, backends=[f"{ns}-dark"], endpoint=None)])
    standin = cluster.operator_standin([ns])
    standin.reconcile()                     # nothing stored yet: what follows is created under it
    cluster.apply([o.binding("fits", "bfloat16", ns=ns, pool=big, domain="fits", ceiling="1Ti"),
                   o.binding("too-big", "bfloat16", ns=ns, pool=big, domain="too-big", ceiling="2Ti"),
                   o.binding("first", "bfloat16", ns=ns, pool=ledgerless, domain="first"),
                   o.binding("dark", "bfloat16", ns=ns, pool=dark, domain="dark"),
                   o.deployment("chat", ns=ns, binding_name="dark"), o.deployment("lit", ns=ns, binding_name="fits")],
                  with_status=False)
    standin.reconcile()                     # admits the first domain on the ledger-less master
    cluster.apply([o.binding("second", "bfloat16", ns=ns, pool=ledgerless, domain="second")], with_status=False)
    assert standin.settle(timeout=60)

    def condition(name):
        st = cluster.request_ok("GET", f"{API}/namespaces/{ns}/kvcachepoolbindings/{name}").get("status") or {}
        return next((c for c in st.get("conditions") or () if c["type"] == "Admitted"), None)
    assert condition("fits") is None and condition("first") is None and condition("dark") is None
    assert "must not exceed the pool's own ceiling of 1Ti" in condition("too-big")["message"]
    assert "holds no tenant ledger" in condition("second")["message"]
    by = {}
    for p in pods(cluster, ns):
        by.setdefault(p["metadata"]["labels"]["app.kubernetes.io/instance"], []).append(p)
    assert "--kv-cache-dtype" in by["lit"][0]["spec"]["containers"][0]["command"]      # its pool has an endpoint
    # its pool publishes no client endpoint: the connection does not resolve, and the replica is
    # created from a render without a connector, so without a dtype (model_deployment_rollout.go,
    # observeModelDeploymentRollout: "during an outage the desired render carries no connector")
    chat = by["chat"][0]["spec"]["containers"][0]["command"]
    assert "--kv-cache-dtype" not in chat and "--kv-transfer-config" not in chat
    # kv_cache_pool.go: the pool's pass writes its Bindings' status; a pool whose backend publishes
    # no address stops before that, so its Binding carries no phase
    def phase(name):
        return (cluster.request_ok("GET", f"{API}/namespaces/{ns}/kvcachepoolbindings/{name}").get("status")
                or {}).get("phase")
    assert (phase("fits"), phase("first"), phase("dark")) == ("Ready", "Ready", None)
    assert standin.errors == []


def test_a_domain_two_stored_bindings_claim_on_one_master_is_ready_for_neither(cluster):
    # kv_cache_pool_binding_reconcile_test.go (AContestedDomainNamesTheOtherClaimant): managed for
    # neither, phase Error, DomainExclusive False (DomainClaimedByMultipleBindings), each naming the
    # other; the same name on another master is no contest.
    ns = cluster.new_namespace("standin")
    shared, apart = f"{ns}-shared", f"{ns}-apart"
    cluster.apply([o.pool(shared, backends=[f"{ns}-mc"]), o.pool(apart, backends=[f"{ns}-other"])])  # served
    cluster.apply([o.binding("a", "bfloat16", ns=ns, pool=shared, domain="same"),
                   o.binding("b", "bfloat16", ns=ns, pool=shared, domain="same"),
                   o.binding("c", "bfloat16", ns=ns, pool=apart, domain="same")], with_status=False)
    standin = cluster.operator_standin([ns])
    assert standin.settle(timeout=60)
    st = {n: cluster.request_ok("GET", f"{API}/namespaces/{ns}/kvcachepoolbindings/{n}")["status"] for n in "abc"}
    for me, other in (("a", "b"), ("b", "a")):
        exclusive = st[me]["conditions"][0]
        assert (st[me]["phase"], exclusive["type"], exclusive["status"], exclusive["reason"]) == \
            ("Error", "DomainExclusive", "False", "DomainClaimedByMultipleBindings")
        assert f'reuse domain "same" is also claimed by {ns}/{other},' in st[me]["phaseMessage"]
    assert st["c"]["phase"] == "Ready"
    assert standin.errors == []
