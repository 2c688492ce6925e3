"""pytest fixtures for tests against a real kube-apiserver (see harness.py).

Fixtures (session scope, started lazily on first use):
  cluster       etcd + kube-apiserver with the operator CRDs, RBAC users and
                the gpustack-system namespace (a harness.Cluster)
  bare_cluster  a second API server WITHOUT any CRDs (for "CRD missing" errors)
  cluster_binaries  the folder with kube-apiserver, etcd, kubectl
  kubelet       the kubelet stand-in of Node kvcache-node on `cluster` (kubelet_standin.py):
                pods/log and pods/proxy through the real API server reach it

Tests using them are marked `cluster` automatically (deselect with -m "not cluster").
If the binaries cannot be had the tests are skipped with the reason, or fail
when KVCACHE_REQUIRE_CLUSTER=1 (CI).
"""

import importlib.util
import os
import sys

import pytest

import background

_HARNESS_MODULE = "kvcache_test_harness"


def _load_harness():
    mod = sys.modules.get(_HARNESS_MODULE)
    if mod is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness.py")
        spec = importlib.util.spec_from_file_location(_HARNESS_MODULE, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[_HARNESS_MODULE] = mod
        spec.loader.exec_module(mod)
    return mod


harness = _load_harness()

CLUSTER_FIXTURES = {"cluster", "bare_cluster", "cluster_binaries", "kubelet"}


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "cluster: needs a real kube-apiserver (tests/cluster harness; built by "
        "scripts/test-binaries or from KUBEBUILDER_ASSETS)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.cluster)


def _required():
    return os.environ.get("KVCACHE_REQUIRE_CLUSTER", "") not in ("", "0", "false", "no")


def _unavailable(reason):
    msg = f"real-API-server tests unavailable: {reason}"
    if _required():
        pytest.fail(msg + "\n(KVCACHE_REQUIRE_CLUSTER=1 is set, so this is a failure)",
                    pytrace=False)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def cluster_binaries():
    """Folder with kube-apiserver, etcd and kubectl of the pinned release (waiting for
    scripts/test's background build of them, if one runs)."""
    try:
        built = background.wait(background.BINARIES)
        if built:
            os.environ["KUBEBUILDER_ASSETS"] = built
        return harness.find_binaries()
    except background.Failed as e:
        reason = str(e)
    except harness.BinariesUnavailable as e:
        reason = str(e)
    _unavailable(reason)  # outside the except: no chained traceback noise


def _start(bin_dir, **kw):
    c = harness.Cluster(bin_dir, **kw)
    try:
        c.start()
        return c
    except harness.ClusterError as e:
        reason = str(e)
    pytest.fail(f"could not start the test cluster: {reason}", pytrace=False)


@pytest.fixture(scope="session")
def cluster(cluster_binaries):
    """A running API server with the operator CRDs (harness.Cluster)."""
    c = _start(cluster_binaries, with_crds=True, name="kvcache")
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="session")
def bare_cluster(cluster_binaries):
    """A second running API server without any CRDs (harness.Cluster)."""
    c = _start(cluster_binaries, with_crds=False, name="kvcache-bare")
    try:
        yield c
    finally:
        c.stop()


def _load_kubelet_standin():
    mod = sys.modules.get("kvcache_kubelet_standin")
    if mod is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kubelet_standin.py")
        spec = importlib.util.spec_from_file_location("kvcache_kubelet_standin", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["kvcache_kubelet_standin"] = mod
        spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def kubelet(cluster):
    """The kubelet stand-in of Node kvcache-node (kubelet_standin.KubeletStandIn), serving the
    session cluster's pods/log and pods/proxy; Pods placed on it with spec.nodeName kvcache-node."""
    k = _load_kubelet_standin().KubeletStandIn(cluster)
    k.start()
    try:
        yield k
    finally:
        k.stop()
