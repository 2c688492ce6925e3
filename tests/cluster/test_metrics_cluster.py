"""-o openmetrics and -o prometheus after `verify --observe` on the real API server: the capacity
scene of tests/cluster/test_capacity_cluster.py (its fixture, a cluster of its own: the operator
stand-in renders the Pods onto the kubelet stand-in's GPU Nodes, whose engines log their
capacity as their releases write it), the plugin run as a user runs it. Each replica's
kubectl_kvcache_replica_capacity_tokens is the tokens its engine logged, read back with
prometheus_client's parsers; the run_failed gauge is the exit code's."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import metrics_text  # noqa: E402
from test_capacity_cluster import NS, _served, plugin, scene  # noqa: E402,F401  (the scene's fixture)


@pytest.mark.parametrize("fmt", metrics_text.FORMATS)
def test_each_replicas_capacity_is_what_its_engine_logged(scene, fmt):  # noqa: F811
    cluster, _, _ = scene
    code, out, err = plugin(cluster, "verify", "-n", NS, "--observe", "-o", fmt)
    assert code == 0, out + err
    served = _served()
    got = metrics_text.samples(fmt, out, "kubectl_kvcache_replica_capacity_tokens")
    assert len(got) == 5, out       # the scene's five replicas, each read
    for labels, value in got:
        assert labels["namespace"] == NS and labels["replica"].startswith(f"{NS}/{labels['deployment']}/")
        assert value == served[labels["deployment"]]["tokens"], (labels, value)
    assert metrics_text.value(fmt, out, "kubectl_kvcache_run_failed", command="verify") == 0
    replicas = metrics_text.samples(fmt, out, "kubectl_kvcache_replicas")
    assert sum(v for _, v in replicas) == 5 and {ls["status"] for ls, _ in replicas} == {"OK"}
