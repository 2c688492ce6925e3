"""`verify --observe` and a crashed replica's cause, through the real client and transport against
the one loopback fake server (tests/fakeserver.py): what is asked of pods/log and pods/proxy (and
bounded), what a refusal or a flood does, what is shown. The log lines are the formats the
releases' own code writes (tests/conformance/test_engine_words.py holds the reader to lines the
real code produced); the real API server and kubelet path is tests/cluster's."""

import io
import json

import objects as o
from kubectl_kvcache.cli import main
from kubectl_kvcache.load import engine_words

SECRET = "sk-live-5f1e2d3c"
# vllm/entrypoints/utils.py log_non_default_args, as a vLLM 0.29 container writes it
NON_DEFAULT = ("INFO 12-03 07:00:01 [utils.py:233] non-default args: {'model_tag': 'Qwen/Qwen3-8B', "
               "'host': '0.0.0.0', 'api_key': ['" + SECRET + "'], 'kv_cache_dtype': '%s'}\n")   # kubelet: whole lines end with \n
# vllm/v1/metrics/loggers.py: CacheConfig.metrics_info() as the info gauge's labels
METRICS = ('# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n'
           '# TYPE vllm:cache_config_info gauge\n'
           'vllm:cache_config_info{block_size="16",cache_dtype="%s",enable_prefix_caching="True"} 1.0\n')
TRACEBACK = ("Traceback (most recent call last):\n  File \"/usr/bin/vllm\", line 8, in <module>\n"
             "    sys.exit(main())\n"
             "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=128, "
             "dtype=torch.bfloat16, kv_cache_dtype=bfloat16, block_size=None). Reasons: {FLASH_ATTN: "
             "[kv_cache_dtype not supported]}\n")


def listing(items):
    return {"kind": "List", "metadata": {"resourceVersion": "10"}, "items": items}


def running(name, dtype):
    pod = o.md_pod(name, "md", o.vllm_argv(dtype))
    pod["status"]["containerStatuses"] = [{"name": "main", "ready": True, "restartCount": 0,
                                           "state": {"running": {}}}]
    return pod


class Cluster:
    def __init__(self, pods, logs=None, previous=None, metrics=None, forbid=(), flood=False):
        self.pods, self.logs, self.previous, self.metrics = pods, logs or {}, previous or {}, metrics or {}
        self.forbid, self.flood = forbid, flood

    def route(self, req):
        path, query = req["path"], req["query"]
        if path.startswith("/api/v1/namespaces/") and path.count("/") == 4:
            return 200, {}, {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "team"}}
        if path.endswith("/log"):
            if "log" in self.forbid:
                return 403, {}, {"kind": "Status", "code": 403, "reason": "Forbidden",
                                 "message": 'pods "x" is forbidden: cannot get resource "pods/log"'}
            pod = path.split("/")[-2]
            if self.flood:      # a non-default args line longer than the head read: cut by limitBytes
                return 200, {"Content-Type": "text/plain"}, (NON_DEFAULT.split("'kv_cache_dtype'")[0].encode()
                                                             + b"'x': '" + b"x" * (engine_words.HEAD_BYTES * 4)
                                                             + b"', 'kv_cache_dtype': 'fp8'}\n")
            text = (self.previous if query.get("previous") == "true" else self.logs).get(pod)
            if text is None:
                return 400, {}, {"kind": "Status", "code": 400, "message": "previous terminated container not found"}
            return 200, {"Content-Type": "text/plain"}, text.encode()
        if path.endswith("/proxy/metrics"):
            pod = path.split("/")[-3].split(":")[0]
            return 200, {"Content-Type": "text/plain"}, self.metrics.get(pod, "").encode()
        if path.endswith("/modeldeployments"):
            return 200, {}, listing([o.deployment("md")])
        if path.endswith("/kvcachepoolbindings"):
            return 200, {}, listing([o.binding("b1", "fp8")])
        if path.endswith("/pods"):
            return 200, {}, listing(self.pods)
        return 200, {}, listing([])


def run(fake_server, cluster, *argv):
    fake = fake_server(cluster.route, namespace="team")
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--kubeconfig", fake.kubeconfig], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue(), fake


def test_the_engine_confirms_or_contradicts_the_prediction(fake_server):
    cluster = Cluster([running("md-server-0", "fp8"), running("md-server-1", "fp8")],
                      logs={"md-server-0": NON_DEFAULT % "fp8", "md-server-1": NON_DEFAULT % "fp8_e5m2"})
    code, out, err, fake = run(fake_server, cluster, "verify", "--observe", "-o", "json")
    items = {i["pod"]: i for i in json.loads(out)["items"]}
    assert items["md-server-0"]["observed"]["dtype"] == "fp8" and items["md-server-0"]["observed"]["agrees"]
    seen = items["md-server-1"]["observed"]
    assert seen["dtype"] == "fp8_e5m2" and seen["agrees"] is False and items["md-server-1"]["effective"] == "fp8"
    assert code == 1            # the engine says otherwise: never green
    assert SECRET not in out + err
    logs = [r for r in fake.requests if r["path"].endswith("/log")]
    assert logs and all(r["query"].get("limitBytes") == str(engine_words.HEAD_BYTES) for r in logs)


def test_wide_shows_observed_and_describe_the_engines_line(fake_server):
    cluster = Cluster([running("md-server-0", "fp8")], logs={"md-server-0": NON_DEFAULT % "fp8"})
    code, out, _, _ = run(fake_server, cluster, "verify", "--observe", "-o", "wide")
    assert code == 0 and "OBSERVED" in out.splitlines()[0] and " fp8 " in out.splitlines()[1]
    code, out, _, _ = run(fake_server, cluster, "verify", "--observe", "-o", "describe")
    assert "the engine confirms the prediction" in out and "kv_cache_dtype': 'fp8'" in out and SECRET not in out


def test_vllm_metrics_when_the_log_head_says_nothing(fake_server):
    cluster = Cluster([running("md-server-0", "fp8")], logs={"md-server-0": "INFO starting\n"},
                      metrics={"md-server-0": METRICS % "fp8"})
    code, out, _, fake = run(fake_server, cluster, "verify", "--observe", "-o", "json")
    seen = json.loads(out)["items"][0]["observed"]
    assert seen["source"] == "metrics" and seen["dtype"] == "fp8" and code == 0
    assert any(r["path"] == "/api/v1/namespaces/team/pods/md-server-0:8000/proxy/metrics" for r in fake.requests)


def test_without_pods_log_it_says_so_once_and_the_prediction_stands(fake_server):
    cluster = Cluster([running(f"md-server-{n}", "fp8") for n in range(3)], forbid=("log",))
    code, out, err, _ = run(fake_server, cluster, "verify", "--observe")
    assert code == 0 and err.count("not allowed to get pods/log") == 1 and "Traceback" not in err


def test_a_flooding_log_is_bounded(fake_server):
    cluster = Cluster([running("md-server-0", "fp8")], flood=True)
    code, out, err, _ = run(fake_server, cluster, "verify", "--observe", "-o", "json")
    # the line was cut by the read: not read, never "no kv_cache_dtype: the default"
    seen = json.loads(out)["items"][0].get("observed")
    assert seen is not None and seen["dtype"] is None and seen["agrees"] is None and "Traceback" not in err
    assert any("cut at the read limit inside a report" in why for why in seen["notRead"]), seen
    assert err.count("1 of the engines' log heads: the last line is cut past the 64 KiB read; that report is not "
                     "read, the prediction stands") == 1, err


def test_a_crashed_replica_names_the_engines_error_without_observe(fake_server):
    pod = o.md_pod("md-server-0", "md", o.vllm_argv("fp8"), exit_code=1)
    cluster = Cluster([pod], previous={"md-server-0": "INFO loading\n" + TRACEBACK})
    code, out, err, fake = run(fake_server, cluster, "verify", "-o", "json")
    item = json.loads(out)["items"][0]
    assert item["exitCause"]["kind"] == "startup" and "No valid attention backend found" in item["exitCause"]["line"]
    assert code == 1
    prev = [r for r in fake.requests if r["query"].get("previous") == "true"]
    assert prev and prev[0]["query"]["tailLines"] == str(engine_words.TAIL_LINES)


def test_wait_ends_at_once_on_a_start_up_failure(fake_server):
    pod = o.md_pod("md-server-0", "md", o.vllm_argv("fp8"), exit_code=1)
    pod["metadata"]["resourceVersion"] = "11"
    cluster = Cluster([pod], previous={"md-server-0": TRACEBACK})
    code, out, err, _ = run(fake_server, cluster, "verify", "--wait", "--timeout", "20s")
    assert code == 1 and "fails at start-up" in err and "No valid attention backend found" in err
    assert "kubectl kvcache recover b1 -n team" in err
