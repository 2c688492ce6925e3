"""load/cluster.py: the KVCachePools check and bindings read (which master holds a domain), paged
like every list; RBAC or a server that does not serve them is a note and no pools (None), never
an empty cluster; commands that do not judge claims do not ask."""

import objects as o
from fakeapi import FakeAPI, FakeClient, _binding

from kubectl_kvcache.judge import checks
from kubectl_kvcache.load import cluster
from kubectl_kvcache.load.scope import Scope


def load(api, pools=True, chunk=2):
    client = FakeClient(api)
    return client, cluster.load_cluster(client, Scope(all_namespaces=True, pools=pools), chunk=chunk)


def pool_calls(api):
    return [c for c in api.calls if c.path.endswith("/kvcachepools")]


def test_pools_are_listed_page_by_page_into_the_snapshot():
    api = FakeAPI(pools=[o.pool(f"p{i}", backends=[f"mc-{i}"]) for i in range(5)])
    _, snapshot = load(api)
    assert {n: p.backends for n, p in snapshot.pools.items()} == {f"p{i}": (f"mc-{i}",) for i in range(5)}
    assert len(pool_calls(api)) == 3 and {c.query["limit"] for c in pool_calls(api)} == {"2"}
    assert not [n for n in snapshot.notes if "KVCachePools" in n]


def test_a_user_who_may_not_list_pools_gets_a_note_and_the_claims_are_unchecked():
    api = FakeAPI(pools=[o.pool("p1")], forbidden={("GET", "kvcachepools")},
                  bindings=[dict(_binding("a", "x"), spec={"poolRef": {"name": "p1"},
                                                           "domain": {"name": "d", "blockSize": 16, "dtype": "fp8"}}),
                            dict(_binding("b", "y"), spec={"poolRef": {"name": "p2"},
                                                           "domain": {"name": "d", "blockSize": 16, "dtype": "fp8"}})])
    _, snapshot = load(api)
    assert snapshot.pools is None
    (note,) = [n for n in snapshot.notes if "KVCachePools could not be listed" in n]
    assert "forbidden" in note
    unchecked = [f for f in checks.check(snapshot).findings if f.code == "unchecked"]
    assert sorted(f.name for f in unchecked) == ["x", "y"]
    assert all("could not be read" in f.message and "may list kvcachepools" in f.fix for f in unchecked)


def test_a_server_that_does_not_serve_pools_is_a_note_too():
    _, snapshot = load(FakeAPI())
    assert snapshot.pools is None and any("KVCachePools could not be listed" in n for n in snapshot.notes)


def test_commands_that_do_not_judge_claims_do_not_list_pools():
    api = FakeAPI(pools=[o.pool("p1")])
    _, snapshot = load(api, pools=False)
    assert snapshot.pools is None and not pool_calls(api)
    assert not [n for n in snapshot.notes if "KVCachePools" in n]
