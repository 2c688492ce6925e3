"""`check --policy` against a real kube-apiserver: a rule's selector matches the labels of the
objects as the server lists them (a Deployment's own metadata.labels, as `kubectl get -l` does,
not its Pod template's), and what it ignores no longer fails the exit code."""

import io
import json

import pytest
import yaml

import objects as o
from kubectl_kvcache.cli import main
from kubectl_kvcache.load.policy import API_VERSION

NS = "policy-test"


def plugin(kubeconfig, *argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--kubeconfig", kubeconfig], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def labelled(obj, labels):
    obj["metadata"]["labels"] = dict(obj["metadata"].get("labels") or {}, **labels)
    return obj


def deployment(name, containers, labels=None):
    """An apps/v1 Deployment the API server accepts (its selector: its template's labels)."""
    # engine "vllm": ParseEngine's exact spelling (inject/types.go), so only the own flag is refused
    obj = o.workload(name, containers, binding_name="b", ns=NS, engine="vllm")
    obj["spec"]["selector"] = {"matchLabels": dict(obj["spec"]["template"]["metadata"]["labels"])}
    return labelled(obj, labels or {})


@pytest.fixture(scope="module")
def objects(cluster):
    refused = [o.container(args=["m", "--kv_cache_dtype=fp8"])]
    cluster.apply([
        labelled(o.binding("b", "fp8", ns=NS, pool="policy-pool", domain="policy-b"), {"team": "research"}),
        labelled(o.binding("spare", "fp8", ns=NS, pool="policy-pool", domain="policy-spare"), {"team": "prod"}),
        # the Bindings' pool as the injection webhook needs it (pod_kv_cache_resolve.go), on a master
        # of its own so that no other test's Binding claims these domains
        o.pool("policy-pool", backends=("policy-master",), ledger="Available"),
        deployment("bench", refused, {"part-of": "benchmarks"}),
        deployment("serve", refused),
    ])
    return cluster


def _policy(tmp_path, rules):
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": API_VERSION, "kind": "Policy", "rules": rules}))
    return str(path)


def test_a_selector_matches_the_labels_the_server_lists(objects, tmp_path):
    kubeconfig = objects.admin_kubeconfig
    code, out, err = plugin(kubeconfig, "check", "-n", NS, "-o", "json")
    found = json.loads(out)["findings"]
    assert code == 1 and sorted(f["name"] for f in found if f["code"] == "injection-refused") == ["bench", "serve"]

    # the template's labels are the plugin's opt-in labels; the Deployment's own are part-of=benchmarks
    path = _policy(tmp_path, [{"code": "injection-refused", "ignore": True, "selector": "part-of=benchmarks"},
                              {"code": "binding-unused", "severity": "error", "selector": "team=prod"}])
    code, out, err = plugin(kubeconfig, "check", "-n", NS, "-o", "json", "--policy", path)
    data = json.loads(out)
    errors = sorted((f["code"], f["name"]) for f in data["findings"] if f["severity"] == "error")
    assert errors == [("binding-unused", "spare"), ("injection-refused", "serve")], data["findings"]
    assert [(f["code"], f["name"]) for f in data["suppressed"]] == [("injection-refused", "bench")]
    assert code == 1 and data["policy"]["ignored"] == 1 and data["policy"]["changed"] == 2

    path = _policy(tmp_path, [{"code": "injection-refused", "ignore": True, "namespaces": [NS]}])
    code, out, err = plugin(kubeconfig, "check", "-n", NS, "--policy", path)
    assert code == 0, err
    assert f"{path} (sha256:" in err.splitlines()[-1] and "2 findings changed, 2 of them ignored" in err


def test_every_context_of_a_fleet_run_is_judged_with_the_policy(objects, tmp_path):
    """--contexts: two contexts on the one real server, each judged with the policy and counted."""
    with open(objects.admin_kubeconfig) as f:
        config = yaml.safe_load(f)
    (context,) = [c for c in config["contexts"] if c["name"] == config["current-context"]]
    config["contexts"] = [{"name": name, "context": dict(context["context"], namespace=NS)} for name in ("east", "west")]
    config["current-context"] = "east"
    kubeconfig = tmp_path / "two.yaml"
    kubeconfig.write_text(yaml.safe_dump(config))
    code, out, err = plugin(str(kubeconfig), "check", "--contexts", "east,west")
    assert code == 1, err
    path = _policy(tmp_path, [{"code": "injection-refused", "ignore": True}])
    code, out, err = plugin(str(kubeconfig), "check", "--contexts", "east,west", "-o", "json", "--policy", path)
    data = json.loads(out)
    assert code == 0, err
    assert [(c["context"], c["policy"]["ignored"], sorted(s["name"] for s in c["suppressed"]))
            for c in data["contexts"]] == [("east", 2, ["bench", "serve"]), ("west", 2, ["bench", "serve"])]
    assert not any(f["code"] == "injection-refused" for f in data["findings"])


@pytest.fixture(scope="module")
def opted_in(cluster):
    """Two Pods opted into injection whose engine annotation names no engine the plugin judges
    (UNKNOWN whatever the Setting says); one labelled part-of=benchmarks on its own metadata."""
    ns = cluster.new_namespace("vpolicy")
    main_ = [o.container("main", command=["vllm", "serve", "m"], args=[])]
    bench = o.injected_pod("bench-0", "b", engine="tgi", containers=main_, ns=ns)
    bench["metadata"]["labels"]["part-of"] = "benchmarks"
    cluster.apply([o.binding("b", "fp8", ns=ns), bench,
                   o.injected_pod("serve-0", "b", engine="tgi", containers=main_, ns=ns)])
    return ns


def test_verify_a_selector_matches_the_pods_labels_the_server_lists(cluster, opted_in, tmp_path):
    """verify's results are its replicas' Pods: a rule's selector matches their labels as listed."""
    kubeconfig = cluster.admin_kubeconfig
    code, out, err = plugin(kubeconfig, "verify", "-n", opted_in, "-o", "json")
    assert code == 1 and sorted((i["pod"], i["status"]) for i in json.loads(out)["items"]) == [
        ("bench-0", "UNKNOWN"), ("serve-0", "UNKNOWN")]

    path = _policy(tmp_path, [{"code": "UNKNOWN", "ignore": True, "selector": "part-of=benchmarks"}])
    code, out, err = plugin(kubeconfig, "verify", "-n", opted_in, "-o", "json", "--policy", path)
    data = json.loads(out)
    assert [i["pod"] for i in data["items"]] == ["serve-0"] and [s["pod"] for s in data["suppressed"]] == ["bench-0"]
    assert code == 1 and data["policy"]["ignored"] == 1

    path = _policy(tmp_path, [{"code": "UNKNOWN", "severity": "warning", "namespaces": [opted_in]}])
    code, out, err = plugin(kubeconfig, "verify", "-n", opted_in, "--policy", path)
    assert code == 0, err
    assert f"{path} (sha256:" in err and "2 results changed, 0 of them ignored" in err

    code, out, err = plugin(kubeconfig, "verify", "-n", opted_in, "--wait", "--policy", path)
    assert code == 2 and err.startswith("error: --policy/--ignore/--severity judge a report, not a rollout")
