"""No secret from an engine's log reaches a report, on the real API server path (issue 47 item 4):
the kubelet stand-in serves a crashed vLLM replica's previous log whose last line (the exit cause)
holds a redis URL's password, a Bearer JWT, a Hugging Face token and AWS_SECRET_ACCESS_KEY, and a
running replica's start-up line holding a token; `verify` reads them through pods/log as kubectl
logs would. The forms are tests/secrets_corpus.py's; every format is held to it on the loopback
fake API in tests/render/test_masking_formats.py."""

import json
import os
import subprocess
import sys

import pytest

import objects as o
import secrets_corpus as corpus
from kubectl_kvcache import masking

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PW, JWT, HF = corpus.token("password", 60), corpus.jwt(60), corpus.token("hf", 60)
AWS = corpus.token("aws-secret", 60)
SECRETS = (PW, JWT, HF, AWS)
# vLLM V1's engine-core traceback ends with the exception that killed it (LMCache/LMCache#1491's shape)
CRASH = ("Traceback (most recent call last):\n"
         "  File \"/usr/local/lib/python3.12/site-packages/redis/connection.py\", line 389, in connect\n"
         f"RuntimeError: remote_url=redis://:{PW}@10.96.0.12:6379 refused; headers Authorization: Bearer {JWT} "
         f"token {HF} AWS_SECRET_ACCESS_KEY={AWS}\n")
STARTED = ("INFO 12-05 10:00:00 [utils.py:233] hf_token=" + HF + " non-default args: {'model_tag': "
           "'Qwen/Qwen3-8B', 'kv_cache_dtype': 'fp8', 'api_key': ['" + PW + "']}\n")


def plugin(cluster, *args, timeout=120):
    p = subprocess.run([sys.executable, "-m", "kubectl_kvcache", *args, "--kubeconfig", cluster.admin_kubeconfig],
                       cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def scene(cluster, kubelet):
    """vLLM 0.11.2 with bfloat16 (its parser accepts it, no attention backend lists it: exit 1)
    and vLLM 0.18.0 running fp8; then their logs replaced by the ones above."""
    cluster.apply({"apiVersion": "gpustack.ai/v1", "kind": "Setting",
                   "metadata": {"name": "model-deployment-kv-cache-dtype-owned", "namespace": "gpustack-system"},
                   "spec": {"value": "true"}}, with_status=False)
    ns = cluster.new_namespace("masking")
    cluster.apply([o.binding("bf", "bfloat16", ns=ns), o.binding("f8", "fp8", ns=ns),
                   o.deployment("vl-bf", ns=ns, version="0.11.2", binding_name="bf"),
                   o.deployment("vl-run", ns=ns, version="0.18.0", binding_name="f8")], with_status=False)
    standin = cluster.operator_standin([ns], kubelet=kubelet)
    for _ in range(6):
        standin.reconcile()
    assert not standin.errors, standin.errors
    crashed = running = 0
    for pod in cluster.get("pods", namespace=ns)["items"]:
        name = pod["metadata"]["name"]
        for cs in pod.get("status", {}).get("containerStatuses") or ():
            if (cs.get("lastState") or {}).get("terminated"):
                kubelet.set_log(ns, name, cs["name"], "", previous=CRASH)
                crashed += 1
            elif (cs.get("state") or {}).get("running") is not None:
                kubelet.set_log(ns, name, cs["name"], STARTED)
                running += 1
    assert crashed and running, cluster.get("pods", namespace=ns)
    return ns


def leaked(text):
    return [s for s in SECRETS if s in text or s in text.replace("\\x20", " ")]


def test_no_secret_from_a_crash_tail_or_a_start_up_line(cluster, scene):
    code, out, err = plugin(cluster, "verify", "-n", scene, "--observe", "-o", "json")
    assert leaked(out + err) == []
    items = {i["pod"].rsplit("-", 2)[0]: i for i in json.loads(out)["items"]}
    line = items["vl-bf"]["exitCause"]["line"]
    assert "redis://:" + masking.MARK in line and "Bearer " + masking.MARK in line, line
    assert items["vl-run"]["observed"]["dtype"] == "fp8"
    assert code == 1
    for fmt in ("describe", "yaml", "markdown", "junit", "sarif"):
        code, out, err = plugin(cluster, "verify", "-n", scene, "--observe", "-o", fmt)
        assert leaked(out + err) == [], fmt


def test_no_secret_in_what_wait_says(cluster, scene):
    code, out, err = plugin(cluster, "verify", "-n", scene, "--observe", "--wait", "--timeout=60s", timeout=120)
    assert code == 1 and "redis://:" + masking.MARK in err, err
    assert leaked(out + err) == []
