"""`verify --observe` showing each replica's KV-cache capacity in every format, run through cli.main
on the saved cluster of examples/: the reading of the engines' words (load/engine_words.read) is
replaced at its seam by the lines each replica's release writes (tests/capacity_lines.py, from
engine/capacity.json), kept only where the plugin's own keeps() keeps them; the judge, the
printers and the exit code are the real ones.

The qwen-chat replicas (vLLM 0.29.0) log their capacity, qwen-pd's (SGLang 0.5.19) its scheduler
line, llama-long's log holds no capacity line (not read, never 0), and /metrics adds blocks."""

import io
import json
import os
import re
import xml.etree.ElementTree as ET

import pytest
import yaml

import capacity_lines
from kubectl_kvcache.cli import main
from kubectl_kvcache.load import engine_words, nodes, reader

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARGV = ["verify", "-n", "llm-prod", "-f", os.path.join("examples", "cluster.json"), "--observe"]
NOISE = "(APIServer pid=1) INFO 01-01 00:00:00 [loader.py:1] Loading weights took 14.99 GB\n"
LOGS = {
    "qwen-chat-server-0": NOISE + capacity_lines.line("vllm", "0.29.0", "kv-cache-size", tokens=300220,
                                                     max_len=262144, concurrency=1.15),
    "qwen-chat-server-1": NOISE + capacity_lines.line("vllm", "0.29.0", "kv-cache-size", tokens=298000,
                                                     max_len=262144, concurrency=1.14),
    "qwen-pd-prefill-0": capacity_lines.line("sglang", "0.5.19", "scheduler", first="max_total_num_tokens=",
                                             tokens=2086558, max_len=256000),
    "qwen-pd-decode-0": capacity_lines.line("sglang", "0.5.19", "scheduler", first="max_total_num_tokens=",
                                            tokens=2086558, max_len=256000),
    "llama-long-server-0": NOISE,
}
METRICS = 'vllm:cache_config_info{block_size="16",cache_dtype="fp8",num_gpu_blocks="18763"} 1.0\n'


@pytest.fixture(autouse=True)
def seam(monkeypatch):
    real = reader.read

    def read(connection, scope, *args, **kwargs):
        snapshot = real(connection, scope, *args, **kwargs)
        snapshot.source = "cluster"         # as read from an API server: the engines' words are read
        return snapshot

    def words(client, targets, budget=None, keeps=None, **kwargs):
        found = {}
        for t in targets:
            t = t if isinstance(t, engine_words.Target) else engine_words.Target(*t)

            def kept(text, source, engine=t.engine):
                return "".join(ln + "\n" for ln in text.splitlines() if keeps(engine, source, ln))
            log = kept(LOGS.get(t.pod, ""), "log") if t.log else None
            metrics = kept(METRICS, "metrics") if t.metrics_port is not None and t.pod.startswith("qwen-chat") \
                else None
            found[(t.namespace, t.pod)] = engine_words.Words(log=log, metrics=metrics)
        return engine_words.Read(found, set(), {}, 0)

    monkeypatch.setattr(reader, "read", read)
    monkeypatch.setattr(reader, "open_client", lambda *a, **k: object())
    monkeypatch.setattr(engine_words, "read", words)
    monkeypatch.setattr(nodes, "read", lambda client, names: nodes.Read())     # no Node served: no GPU read
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1773133200")


def run(*extra):
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        code = main(ARGV + list(extra), stdin=io.StringIO(""), stdout=out, stderr=err)
    finally:
        os.chdir(cwd)
    assert code in (0, 1), err.getvalue()
    return out.getvalue(), err.getvalue()


def _rows(table):
    lines = table.splitlines()
    head = lines[0].split()
    return {r.split()[0]: dict(zip(head, r.split(), strict=False)) for r in lines[1:]}


def test_wide_shows_capacity_and_max_len_and_the_sums():
    out, err = run("-o", "wide")
    rows = _rows(out)
    assert (rows["qwen-chat-server-0"]["CAPACITY"], rows["qwen-chat-server-0"]["MAX-LEN"]) == ("300220", "262144")
    assert rows["qwen-pd-prefill-0"]["CAPACITY"] == "2086558" and rows["qwen-pd-prefill-0"]["MAX-LEN"] == "256000"
    assert rows["llama-long-server-0"]["CAPACITY"] == "<not-read>"      # a head without the line: never 0
    assert rows["deepseek-sgl-server-0"]["CAPACITY"] == "-"             # crash-looping: not read at all
    assert "deployment llm-prod/qwen-chat:" in err and "capacity 598,220 tokens (2/2 replicas read)" in err
    assert "binding llm-prod/sgl-bf16: capacity 4,173,116 tokens (2/2 replicas read)" in err


def test_the_default_table_keeps_its_columns():
    out, _ = run()
    assert "CAPACITY" not in out.splitlines()[0]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_json_and_yaml_per_row_and_summed(fmt):
    out, _ = run("-o", fmt)
    data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    rows = {i["pod"]: i for i in data["items"]}
    cap = rows["qwen-chat-server-0"]["capacity"]
    assert (cap["tokens"], cap["basis"], cap["maxLength"], cap["concurrency"], cap["blocks"], cap["blockSize"]) == \
        (300220, "tokens", 262144, 1.15, 18763, 16)
    assert rows["llama-long-server-0"]["capacity"]["tokens"] is None
    assert "capacity" not in rows["deepseek-sgl-server-0"]
    deployments = {g["name"]: g for g in data["capacity"]["deployments"]}
    assert deployments["qwen-chat"]["tokens"] == 598220 and deployments["qwen-chat"]["complete"]
    assert deployments["llama-long"]["tokens"] is None and deployments["llama-long"]["read"] == 0
    bindings = {g["name"]: g for g in data["capacity"]["bindings"]}
    assert bindings["sgl-bf16"]["tokens"] == 4173116 and bindings["sgl-bf16"]["maxLength"] == 256000


def test_describe_names_the_capacity_its_basis_and_its_line():
    out, _ = run("-o", "describe", "qwen-chat-server-0")
    assert "300,220 tokens (the engine's own token figure, its log)" in out
    assert "GPU KV cache size: 300,220 tokens, Maximum concurrency for 262,144 tokens per request: 1.15x" in out
    assert "18,763 blocks of 16 tokens" in out


def test_markdown_junit_and_sarif_carry_the_sums():
    md, _ = run("-o", "markdown")
    assert "**Capacity:**" in md and "deployment llm-prod/qwen-chat: 598,220 tokens (2/2 replicas read)" in md
    assert re.search(r"\| Capacity +\| Max-Len +\|", md) and "| `300220` " in md
    junit, _ = run("-o", "junit")
    props = {p.get("name"): p.get("value") for p in ET.fromstring(junit.encode()).iter("property")}
    assert "binding llm-prod/chat-fp8: at least 598,220 tokens" in props["Capacity"]
    sarif, _ = run("-o", "sarif")
    said = json.loads(sarif)["runs"][0]["properties"]["capacity"]
    assert "deployment llm-prod/qwen-pd: 4,173,116 tokens (2/2 replicas read)" in said


@pytest.mark.parametrize("fmt", ["openmetrics", "prometheus"])
def test_metrics_give_each_replicas_capacity_as_its_row_has_it(fmt):
    """kubectl_kvcache_replica_capacity_tokens (docs/metrics.md), read by prometheus_client's parser:
    one sample per replica whose engine said its capacity, the tokens of its json row; a replica
    not read has none (never 0); summed by Binding, the json's sums where every replica was read."""
    import metrics_text

    data = json.loads(run("-o", "json")[0])
    out, _ = run("-o", fmt)
    got = metrics_text.samples(fmt, out, "kubectl_kvcache_replica_capacity_tokens")
    by_replica = {labels["replica"]: (labels, value) for labels, value in got}
    assert by_replica["llm-prod/qwen-chat/server/0"][1] == 300220
    assert by_replica["llm-prod/qwen-chat/server/1"][1] == 298000
    assert by_replica["llm-prod/qwen-pd/prefill/0"][0]["binding"] == "sgl-bf16"
    read = [i for i in data["items"] if i.get("capacity") and i["capacity"]["tokens"] is not None]
    assert sorted(v for _, v in got) == sorted(i["capacity"]["tokens"] for i in read) and read
    assert not any(labels["deployment"] in ("llama-long", "deepseek-sgl") for labels, _ in got)
    for group in data["capacity"]["bindings"]:
        if group["complete"]:
            assert sum(v for labels, v in got if labels["binding"] == group["name"]) == group["tokens"]
