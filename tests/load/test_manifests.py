"""Saved objects of a known kind whose metadata is missing or malformed are bad input (exit 2, one
`error:` line naming the file, the object and the field), never silently "not in the input"."""

import json

import pytest

import objects as o
from runcli import kvcache

SETTING = {"apiVersion": "gpustack.ai/v1", "kind": "Setting", "spec": {"value": "false"}}


@pytest.mark.parametrize("kind, obj", [
    ("Setting", dict(SETTING, metadata=None)),
    ("Setting", dict(SETTING)),                                       # no metadata at all
    ("Setting", dict(SETTING, metadata={"namespace": "gpustack-system"})),   # no name
    ("Setting", dict(SETTING, metadata="model-deployment-kv-cache-dtype-owned")),
    ("KVCachePoolBinding", dict(o.binding("b1", "fp8"), metadata=None)),
    ("ModelDeployment", dict(o.deployment("md"), metadata=None)),
    ("KVCachePool", dict(o.pool("p"), metadata=None)),
    ("Pod", dict(o.md_pod("p", "md", o.vllm_argv("fp8")), metadata=None)),
])
@pytest.mark.parametrize("command", ["verify", "check"])
def test_a_known_kind_with_bad_metadata_is_malformed_input(tmp_path, kind, obj, command):
    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(o.binding("b1", "fp8"), obj)))
    code, out, err = kvcache(command, "-A", "-f", str(path))
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert str(path) in lines[0] and kind in lines[0] and "metadata" in lines[0]
    assert out == ""


def test_another_setting_is_still_not_the_one_read(tmp_path):
    other = dict(SETTING, metadata={"name": "some-other-setting", "namespace": "gpustack-system"})
    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(o.binding("b1", "fp8"), other)))
    code, out, err = kvcache("check", "-A", "-f", str(path), "-o", "json")
    assert code in (0, 1), err
    assert json.loads(out)["setting"]["source"] != "file"


def test_pools_in_the_input_are_read_and_a_malformed_one_is_bad_input(tmp_path):
    from kubectl_kvcache.load.manifests import load_files
    from kubectl_kvcache.load.scope import Scope

    path = tmp_path / "in.json"
    path.write_text(json.dumps(o.as_list(o.pool("p1", backends=["mc"]), o.pool("p2", backends=[]))))
    snapshot = load_files([str(path)], Scope())
    assert {n: p.backends for n, p in snapshot.pools.items()} == {"p1": ("mc",), "p2": ()}
    assert not [n for n in snapshot.notes if "KVCachePool" in n]
    path.write_text(json.dumps(o.as_list(o.binding("b1", "fp8"))))
    assert load_files([str(path)], Scope()).pools == {}     # read from the input: none in it
    bad = o.pool("p1")
    bad["spec"]["backends"] = "mc"
    path.write_text(json.dumps(o.as_list(bad)))
    code, out, err = kvcache("check", "-A", "-f", str(path))
    assert code == 2 and out == "" and "KVCachePool p1" in err and "spec.backends" in err
