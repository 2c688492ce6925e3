"""operator/masters.py: the two rules that read a pool's backends, the webhook's intersection and
the reconciler's one served master, and the webhook model (webhooks.shared_masters) on the same."""

import objects as o
import pytest

from kubectl_kvcache.operator import decode, masters, webhooks


@pytest.mark.parametrize("backends, served", [(("mc",), "mc"), ((), None), (("a", "b"), None), (("",), None)])
def test_a_pool_is_served_only_by_its_one_backend(backends, served):
    assert masters.serving(decode.pool_record(o.pool("p", backends=backends)).backends) == served


def test_shared_is_the_intersection_in_the_first_pools_order():
    assert masters.shared(("b", "a", "c"), ("a", "b")) == ["b", "a"]
    assert masters.shared((), ("a",)) == [] and masters.shared(("a",), ()) == []


def test_the_webhook_model_shares_nothing_with_a_pool_that_does_not_exist():
    pools = {"p1": o.pool("p1", backends=["a", "b"]), "p2": o.pool("p2", backends=["b"])}
    assert webhooks.shared_masters("p1", "p2", pools) == ["b"]
    assert webhooks.shared_masters("p1", "gone", pools) == []


def test_a_binding_being_deleted_releases_its_claim_only_when_nothing_holds_it():
    b = o.binding("b", "fp8", used_by=["md"])
    b["metadata"]["deletionTimestamp"] = "2026-03-01T00:00:00Z"
    assert decode.binding_record(b).deleting and not decode.binding_record(b).releasing
    b["status"].pop("usedBy")
    assert decode.binding_record(b).releasing
    assert not decode.binding_record(o.binding("c", "fp8")).releasing
