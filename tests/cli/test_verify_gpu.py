"""verify reads the Nodes the GPU decides (load/nodes.py, judge/gpu.py) through the real client
over the in-process fake API: one GET a Node, only those a verdict depends on in a plain run,
every row's with -o wide/json; a 403 is one note and the predictions stand; the GPU column and
"gpu" in json. (The real API server: tests/cluster/test_gpu_cluster.py.)"""

import json

from fakeapi import FakeAPI, run  # noqa: F401  (the fixture)
import objects as o
from kubectl_kvcache.load import nodes

RTX = {"nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-3090", "nvidia.com/gpu.compute.major": "8",
       "nvidia.com/gpu.compute.minor": "6", "nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.count": "2"}
H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.compute.major": "9",
        "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.family": "hopper"}


def pod(name, node, release, dtype="fp8", binding="b1"):
    p = o.injected_pod(name, binding, containers=[o.container("main", command=o.vllm_argv(dtype),
                                                              image=f"vllm/vllm-openai:v{release}")])
    p["spec"]["nodeName"] = node
    return p


def api(pods, nodes_=None, forbidden=(), dtype="fp8"):
    return FakeAPI(o.setting("true"), pods=pods, bindings=[o.binding("b1", dtype)], nodes=nodes_ or {},
                   forbidden=set(forbidden))


def node_gets(fake):
    return [c.path for c in fake.calls if c.path.startswith("/api/v1/nodes/")]


def test_a_3090_on_0_11_0_is_rejected_and_0_24_0_starts(run):
    fake = api([pod("old-0", "rtx", "0.11.0"), pod("old-1", "rtx", "0.11.0"), pod("new", "rtx", "0.24.0"),
                pod("hopper", "h100", "0.11.0")], {"rtx": RTX, "h100": H100})
    code, out, err = run(fake, ["verify", "-A", "-o", "json"])
    rows = {i["pod"]: i for i in json.loads(out)["items"]}
    assert code == 1
    assert rows["old-0"]["status"] == "REJECTED" and "NVIDIA-GeForce-RTX-3090 (compute capability 8.6)" in \
        rows["old-0"]["reason"] and "fp8e4nv" in rows["old-0"]["reason"]
    assert rows["new"]["status"] == "OK" and rows["hopper"]["status"] == "OK"
    assert rows["new"]["gpu"] == {"vendor": "nvidia", "product": "NVIDIA-GeForce-RTX-3090",
                                  "computeCapability": "8.6", "family": "ampere"}
    assert node_gets(fake) == ["/api/v1/nodes/h100", "/api/v1/nodes/rtx"]     # one GET a Node


def test_a_plain_run_reads_only_the_nodes_a_verdict_depends_on(run):
    fake = api([pod("old", "rtx", "0.11.0"), pod("auto", "h100", "0.11.0", dtype="auto"),
                pod("legacy", "other", "0.10.2")], {"rtx": RTX, "h100": H100}, dtype="fp8")
    code, out, err = run(fake, ["verify", "-A"])
    assert node_gets(fake) == ["/api/v1/nodes/rtx"]
    assert "REJECTED" in out and code == 1
    fake.calls.clear()
    code, out, err = run(fake, ["verify", "-A", "-o", "wide"])
    assert node_gets(fake) == ["/api/v1/nodes/h100", "/api/v1/nodes/other", "/api/v1/nodes/rtx"]
    header, *lines = out.splitlines()
    col = header.split().index("GPU")
    cells = {line.split()[1]: line.split()[col] for line in lines}
    assert cells == {"old": "NVIDIA-GeForce-RTX-3090/8.6", "auto": "NVIDIA-H100-80GB-HBM3/9.0", "legacy": "<none>"}
    assert "1 node not found (other)" in err


def test_a_node_without_labels_is_unknown_naming_the_label(run):
    fake = api([pod("p", "bare", "0.16.0")], {"bare": {"kubernetes.io/arch": "amd64"}})
    code, out, err = run(fake, ["verify", "-A", "-o", "json"])
    row = json.loads(out)["items"][0]
    assert row["status"] == "UNKNOWN" and row["cause"] == {"code": "gpu", "subject": "nvidia.com/gpu.compute.major"}
    assert "label the Node bare with nvidia.com/gpu.compute.major" in row["fix"]


def test_403_is_one_note_and_the_prediction_stands(run):
    fake = api([pod("a", "rtx", "0.11.0"), pod("b", "h100", "0.11.0")], {"rtx": RTX, "h100": H100},
               forbidden={("GET", "nodes")})
    code, out, err = run(fake, ["verify", "-A", "-o", "json"])
    rows = json.loads(out)["items"]
    assert all(r["status"] == "OK" and "gpu" not in r for r in rows)
    assert err.count("not allowed to get nodes") == 1
    assert len(node_gets(fake)) == 1            # the first 403 stops the reads


def test_many_nodes_are_one_paged_list_and_the_pages_are_bounded(run, monkeypatch):
    monkeypatch.setattr(nodes, "GETS", 2)
    fake = api([pod(f"p{i}", f"n{i}", "0.11.0") for i in range(5)], {f"n{i}": RTX for i in range(5)})
    code, out, err = run(fake, ["verify", "-A", "-o", "json"])
    lists = [c for c in fake.calls if c.path == "/api/v1/nodes"]
    assert not node_gets(fake) and len(lists) == 1 and lists[0].query["limit"] == str(nodes.PAGE)
    assert [r["status"] for r in json.loads(out)["items"]] == ["REJECTED"] * 5
    monkeypatch.setattr(nodes, "PAGE", 2)
    monkeypatch.setattr(nodes, "MAX_PAGES", 2)
    fake.calls.clear()
    code, out, err = run(fake, ["verify", "-A", "-o", "json"])
    assert len([c for c in fake.calls if c.path == "/api/v1/nodes"]) == 2
    assert sorted(r["status"] for r in json.loads(out)["items"]) == ["OK", "REJECTED", "REJECTED", "REJECTED",
                                                                      "REJECTED"]
    assert "1 more node: their GPU labels are not read (at most 4 a run)" in err
