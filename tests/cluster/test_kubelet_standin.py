"""The kubelet stand-in (kubelet_standin.py) through the REAL kube-apiserver and kubectl: the API
server proxies pods/log to the Node's kubelet endpoint and pods/proxy to the Pod IP, so what kubectl
prints here is what it prints against a real kubelet with the same container log. Each expectation
is kubelet behaviour from its code (pkg/kubelet/server/server.go getContainerLogs, kubelet_pods.go
validateContainerLogStatus), surfaced by the API server as it surfaces a kubelet's answer."""

import pytest

NODE = "kvcache-node"
MERGE = "application/merge-patch+json"
CURRENT = "INFO first line\nINFO second line\nINFO third line\n"
PREVIOUS = "usage: x\nx: error: argument --kv-cache-dtype: invalid choice: 'fp9'\n"


def place(cluster, kubelet, ns, name, *, crashed=True, waiting=None, container="engine"):
    """A Pod on kvcache-node with a Pod IP from the stand-in and a running (or waiting) container,
    restarted once after exit 2 when `crashed`."""
    ip = kubelet.next_ip()
    cluster.request_ok("POST", f"/api/v1/namespaces/{ns}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": NODE, "containers": [{"name": container, "image": "engine:1"}]}})
    state = ({"waiting": {"reason": waiting}} if waiting
             else {"running": {"startedAt": "2026-01-01T00:00:00Z"}})
    cs = {"name": container, "image": "engine:1", "imageID": "", "ready": not waiting,
          "restartCount": 1 if crashed else 0, "state": state}
    if crashed:
        cs["lastState"] = {"terminated": {"exitCode": 2, "reason": "Error",
                                          "containerID": "containerd://0123abcd"}}
    cluster.request_ok("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status", {"status": {
        "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "containerStatuses": [cs]}},
        content_type=MERGE)
    return ip


@pytest.fixture
def ns(cluster):
    return cluster.new_namespace("kubelet")


def test_the_node_carries_the_standins_endpoint(cluster, kubelet):
    node = cluster.get("nodes", NODE)
    assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == kubelet.port
    assert {"type": "InternalIP", "address": "127.0.0.1"} in node["status"]["addresses"]


def test_kubectl_logs_reads_the_current_and_the_previous_instance(cluster, kubelet, ns):
    place(cluster, kubelet, ns, "p")
    kubelet.set_log(ns, "p", "engine", CURRENT, previous=PREVIOUS)
    assert cluster.kubectl("logs", "-n", ns, "p", check=True).stdout == CURRENT
    assert cluster.kubectl("logs", "-n", ns, "p", "--previous", check=True).stdout == PREVIOUS
    # the request reached the stand-in with kubectl's options, through the API server
    path, query = kubelet.requests[-1]
    assert path == f"/containerLogs/{ns}/p/engine" and query["previous"] == ["true"]


def test_limit_bytes_tail_and_timestamps_as_the_kubelet_applies_them(cluster, kubelet, ns):
    place(cluster, kubelet, ns, "p")
    kubelet.set_log(ns, "p", "engine", CURRENT)
    assert cluster.kubectl("logs", "-n", ns, "p", "--limit-bytes=7", check=True).stdout == "INFO fi"
    assert cluster.kubectl("logs", "-n", ns, "p", "--tail=1", check=True).stdout == "INFO third line\n"
    # limitBytes counts the timestamp prefix too (ReadLogs writes it before the limit applies)
    out = cluster.kubectl("logs", "-n", ns, "p", "--tail=1", "--timestamps", "--limit-bytes=40",
                          check=True).stdout
    assert len(out) == 40 and out[:4].isdigit() and "Z INFO third" in out
    since = cluster.kubectl("logs", "-n", ns, "p", "--since=1h", check=True).stdout
    assert since == CURRENT
    # the raw API as the plugin calls it
    status, body = cluster.request(
        "GET", f"/api/v1/namespaces/{ns}/pods/p/log?container=engine&limitBytes=10&tailLines=2")
    assert status == 200


def test_previous_without_a_terminated_instance_is_the_kubelets_400(cluster, kubelet, ns):
    place(cluster, kubelet, ns, "fresh", crashed=False)
    kubelet.set_log(ns, "fresh", "engine", CURRENT)
    r = cluster.kubectl("logs", "-n", ns, "fresh", "--previous")
    assert r.returncode == 1
    assert r.stderr.strip() == ('Error from server (BadRequest): previous terminated container '
                                '"engine" in pod "fresh" not found')


def test_a_waiting_container_is_the_kubelets_400(cluster, kubelet, ns):
    place(cluster, kubelet, ns, "w", crashed=False, waiting="ContainerCreating")
    r = cluster.kubectl("logs", "-n", ns, "w")
    assert r.returncode == 1
    assert r.stderr.strip() == ('Error from server (BadRequest): container "engine" in pod "w" '
                                'is waiting to start: ContainerCreating')


def test_the_kubelets_query_validation(cluster, kubelet, ns):
    place(cluster, kubelet, ns, "p")
    kubelet.set_log(ns, "p", "engine", CURRENT)
    # the API server validates PodLogOptions itself first (a negative limit never reaches the node)
    status, _ = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/p/log?limitBytes=0")
    assert status == 422
    # a pod the kubelet does not run: its 404 text, through the API server's proxying of it
    status, body = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/ghost/log")
    assert status == 404          # the API server's own: the Pod does not exist


def test_pods_proxy_reaches_the_metrics_server_on_the_pod_ip(cluster, kubelet, ns):
    ip = place(cluster, kubelet, ns, "m")
    assert ip.startswith("198.18.")
    text = '# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{cache_dtype="fp8"} 1.0\n'
    kubelet.set_metrics(ip, 8000, text)
    r = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/pods/m:8000/proxy/metrics",
                        check=True)
    assert r.stdout == text
    # a port nothing listens on: the API server's proxy error, not the metrics
    r = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/pods/m:9999/proxy/metrics")
    assert r.returncode == 1 and "vllm:" not in r.stdout


def test_reader_without_pods_log_is_forbidden_before_the_node(cluster, kubelet, ns):
    place(cluster, kubelet, ns, "p")
    kubelet.set_log(ns, "p", "engine", CURRENT)
    before = len(kubelet.requests)
    r = cluster.kubectl("logs", "-n", ns, "p", kubeconfig=cluster.reader_kubeconfig)
    assert r.returncode == 1 and "Forbidden" in r.stderr and 'pods/log' in r.stderr
    assert len(kubelet.requests) == before


def test_the_operator_standin_places_its_pods_with_the_engines_own_words(cluster, kubelet):
    # the scene of test_observe_cluster.py, read with kubectl: an SGLang 0.5.12 replica its parser
    # refuses (`fp8`: exit 2, the parser's own stderr), a vLLM 0.11.2 replica with bfloat16 that no
    # attention backend of the release lists (exit 1, the selector's error), running replicas with
    # their start-up line and vLLM's cache_config_info on the Pod IP
    import objects as o
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                   "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                   "spec": {"value": "true"}}, with_status=False)
    ns = cluster.new_namespace("kplace")
    cluster.apply([o.binding("e4", "fp8_e4m3", ns=ns), o.binding("f8", "fp8", ns=ns),
                   o.binding("bf", "bfloat16", ns=ns),
                   o.deployment("sg-run", ns=ns, engine="sglang", version="0.5.12", binding_name="e4"),
                   o.deployment("sg-bad", ns=ns, engine="sglang", version="0.5.12", binding_name="f8"),
                   o.deployment("vl-bf", ns=ns, version="0.11.2", binding_name="bf"),
                   o.deployment("vl-run", ns=ns, version="0.18.0", binding_name="f8")], with_status=False)
    standin = cluster.operator_standin([ns], kubelet=kubelet)
    for _ in range(6):
        standin.reconcile()
    assert not standin.errors, standin.errors
    pods = {p["metadata"]["labels"]["app.kubernetes.io/instance"]: p
            for p in cluster.request_ok("GET", f"/api/v1/namespaces/{ns}/pods")["items"]}
    assert {p["spec"]["nodeName"] for p in pods.values()} == {NODE}

    def logs(name, *extra):
        return cluster.kubectl("logs", "-n", ns, pods[name]["metadata"]["name"], *extra)

    def last_exit(name):
        return pods[name]["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"]

    assert "kv_cache_dtype='fp8_e4m3'" in logs("sg-run").stdout
    assert last_exit("sg-bad") == 2
    err = logs("sg-bad", "--previous").stdout
    assert err.startswith("usage: launch_server.py") and err.splitlines()[-1].startswith(
        "launch_server.py: error: argument --kv-cache-dtype: invalid choice: 'fp8'")
    tail = logs("sg-bad", "--previous", "--tail=1").stdout
    assert tail == err.splitlines(keepends=True)[-1]
    assert last_exit("vl-bf") == 1
    assert "No valid attention backend found" in logs("vl-bf", "--previous", "--tail=1").stdout
    assert "'kv_cache_dtype': 'fp8'" in logs("vl-run").stdout
    ip = pods["vl-run"]["status"]["podIP"]
    name = pods["vl-run"]["metadata"]["name"]
    metrics = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/{ns}/pods/{name}:8000/proxy/metrics",
                              check=True).stdout
    assert 'cache_dtype="fp8"' in metrics and ip.startswith("198.1")
