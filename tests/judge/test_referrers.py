"""judge/referrers.py: which objects point at a deployment side-by-side renames, and what to change.
Pure: objects in, findings out; the label sets come from the operator's labels (judge/live) and
from the Pods as the cluster carries them."""

import objects as ob
import pytest

from kubectl_kvcache.judge import referrers as refs
from kubectl_kvcache.load.recovery import Referrers
from kubectl_kvcache.operator import decode

NS = "team"


def md(name="sgl", roles=None):
    return ob.deployment(name, engine="SGLang", version="0.5.9", binding_name="b1", ns=NS, roles=roles)


def service(name, selector):
    return {"kind": "Service", "apiVersion": "v1", "metadata": {"namespace": NS, "name": name},
            "spec": {"selector": selector} if selector is not None else {}}


def pdb(name, selector):
    return {"kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": {"namespace": NS, "name": name},
            "spec": {"selector": selector} if selector is not None else {}}


def hpa(name, kind="ModelDeployment", target="sgl", api_version=ob.OPERATOR_API_VERSION):
    return {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2",
            "metadata": {"namespace": NS, "name": name},
            "spec": {"scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": target}}}


def ingress(name, *services, default=None):
    spec = {"rules": [{"http": {"paths": [{"path": "/", "backend": {"service": {"name": s}}} for s in services]}}]}
    if default:
        spec["defaultBackend"] = {"service": {"name": default}}
    return {"kind": "Ingress", "apiVersion": "networking.k8s.io/v1", "metadata": {"namespace": NS, "name": name},
            "spec": spec}


def route(name, *refs_):
    return {"kind": "HTTPRoute", "apiVersion": "gateway.networking.k8s.io/v1",
            "metadata": {"namespace": NS, "name": name}, "spec": {"rules": [{"backendRefs": list(refs_)}]}}


def found(*objs, unchecked=(), not_served=()):
    by = {}
    for o in objs:
        by.setdefault(o["kind"], []).append(o)
    return Referrers(by, list(unchecked), list(not_served), "cluster")


def judge(*objs, deployment=None, pods=()):
    r = refs.renamed(deployment or md(), "sgl-fp8-e4m3", pods)
    return {(f["kind"], f["name"]): f for f in refs.pointing_at(found(*objs), [r])}


INSTANCE = "app.kubernetes.io/instance"


def test_a_service_selecting_the_old_instance_is_told_to_select_the_new_one():
    out = judge(service("sgl", {INSTANCE: "sgl"}), service("other", {INSTANCE: "other"}),
                service("headless", None), service("empty", {}))
    assert set(out) == {("Service", "sgl")}
    f = out[("Service", "sgl")]
    assert f["change"] and f["do"] == f"set spec.selector.{INSTANCE} to sgl-fp8-e4m3"
    assert f["deployment"] == "sgl" and f["newName"] == "sgl-fp8-e4m3" and f["namespace"] == NS


def test_a_service_selecting_every_model_deployment_follows_by_itself():
    f = judge(service("all", {"app.kubernetes.io/name": "model-deployment"}))[("Service", "all")]
    assert f["change"] is False and "selects the Pods of sgl-fp8-e4m3 too" in f["do"]


def test_a_service_selecting_a_label_the_operator_does_not_write_is_judged_on_the_pods_as_they_are():
    """A label only the running Pods carry (the cluster's, not the operator's rendering) still decides."""
    pod = ob.md_pod("sgl-server-0", "sgl", ob.sglang_argv(), ns=NS)
    pod["metadata"]["labels"]["team"] = "search"
    pods = [decode.pod_record(pod)]
    out = judge(service("by-team", {"team": "search", INSTANCE: "sgl"}), pods=pods)
    assert out[("Service", "by-team")]["change"]
    assert judge(service("by-team", {"team": "search", INSTANCE: "sgl"})) == {}     # no such Pod: not selected


def test_a_role_selector_matches_only_that_roles_pods():
    d = md(roles=[ob.role("prefill"), ob.role("decode")])
    out = judge(service("prefill", {INSTANCE: "sgl", "app.kubernetes.io/component": "prefill"}),
                service("ghost", {INSTANCE: "sgl", "app.kubernetes.io/component": "router"}), deployment=d)
    assert set(out) == {("Service", "prefill")}


@pytest.mark.parametrize("selector, selected, change", [
    ({"matchLabels": {INSTANCE: "sgl"}}, True, True),
    ({"matchExpressions": [{"key": INSTANCE, "operator": "In", "values": ["sgl", "x"]}]}, True, True),
    ({"matchExpressions": [{"key": INSTANCE, "operator": "NotIn", "values": ["sgl"]}]}, False, None),
    ({"matchExpressions": [{"key": INSTANCE, "operator": "Exists"}]}, True, False),
    ({"matchExpressions": [{"key": INSTANCE, "operator": "DoesNotExist"}]}, False, None),
    ({}, True, False),          # policy/v1: an empty selector selects every Pod of the namespace
    (None, False, None),        # no selector: none
])
def test_pod_disruption_budget_selectors_as_the_api_server_matches_them(selector, selected, change):
    out = judge(pdb("p", selector))
    assert (("PodDisruptionBudget", "p") in out) == selected
    if selected:
        assert out[("PodDisruptionBudget", "p")]["change"] is change
    if change:
        assert "sgl-fp8-e4m3" in out[("PodDisruptionBudget", "p")]["do"]


def test_a_pdb_match_labels_names_the_field_to_set():
    f = judge(pdb("p", {"matchLabels": {INSTANCE: "sgl"}}))[("PodDisruptionBudget", "p")]
    assert f["do"] == f"set spec.selector.matchLabels.{INSTANCE} to sgl-fp8-e4m3"


def test_an_hpa_scaling_the_model_deployment_is_told_to_scale_the_new_one():
    out = judge(hpa("a"), hpa("other-md", target="other"), hpa("a-deploy", kind="Deployment", api_version="apps/v1"),
                hpa("foreign", api_version="example.com/v1"))
    assert set(out) == {("HorizontalPodAutoscaler", "a")}
    assert out[("HorizontalPodAutoscaler", "a")]["do"].startswith("set spec.scaleTargetRef.name to sgl-fp8-e4m3")


def test_ingresses_and_routes_in_front_of_a_service_that_must_change_are_named():
    out = judge(service("sgl", {INSTANCE: "sgl"}), service("all", {"app.kubernetes.io/name": "model-deployment"}),
                ingress("front", "sgl"), ingress("dflt", "nothing", default="sgl"), ingress("elsewhere", "all"),
                route("r", {"name": "sgl", "port": 80}),
                route("other-ns", {"name": "sgl", "namespace": "elsewhere"}),
                route("not-a-service", {"name": "sgl", "group": "example.com", "kind": "Backend"}),
                route("follows", {"name": "all"}))
    assert set(out) == {("Service", "sgl"), ("Service", "all"), ("Ingress", "front"), ("Ingress", "dflt"),
                        ("HTTPRoute", "r")}
    assert "spec.rules[0].http.paths[0].backend.service.name" in out[("Ingress", "front")]["points"]
    assert "spec.defaultBackend.service.name" in out[("Ingress", "dflt")]["points"]
    assert "spec.rules[0].backendRefs[0].name" in out[("HTTPRoute", "r")]["points"]
    assert out[("HTTPRoute", "r")]["change"] is False       # it follows once the Service does


def test_findings_are_ordered_and_what_was_not_checked_is_said():
    r = refs.renamed(md(), "n", ())
    got = refs.pointing_at(found(pdb("z", {"matchLabels": {INSTANCE: "sgl"}}), hpa("h"),
                                 service("b", {INSTANCE: "sgl"}), service("a", {INSTANCE: "sgl"})), [r])
    assert [(f["kind"], f["name"]) for f in got] == [("Service", "a"), ("Service", "b"),
                                                     ("HorizontalPodAutoscaler", "h"), ("PodDisruptionBudget", "z")]
    assert refs.unchecked(found(unchecked=["could not check Services: forbidden"])) == [
        "could not check Services: forbidden"]
    assert refs.pointing_at(None, [r]) == []
