"""load/engine_words.py's bounds through the real client and transport, against the one loopback
fake server (tests/fakeserver.py): one deadline for every read of an observation, only the lines
that may hold a report kept, and every read that fails or is cut said, the prediction standing.
The lines are the formats the releases' own code writes (vLLM's non-default args line,
vllm/entrypoints/utils.py log_non_default_args; its cache_config_info gauge, vllm/v1/metrics/
loggers.py); the whole command's bounds at scale are measured by tests/load/observe_scale.py."""

import gzip
import os
import subprocess
import sys
import time

import pytest

from kubectl_kvcache.cli.flows.verify import keeps
from kubectl_kvcache.kube import client as kube
from kubectl_kvcache.kube.connection import Connection
from kubectl_kvcache.load import engine_words as ew

NON_DEFAULT = ("INFO 12-03 07:00:01 [utils.py:233] non-default args: {'model_tag': 'Qwen/Qwen3-8B', "
               "'kv_cache_dtype': 'fp8_e5m2'}\n")
REPORT = 'vllm:cache_config_info{block_size="16",cache_dtype="fp8",enable_prefix_caching="True"} 1.0\n'
METRICS = ("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
           "# TYPE vllm:cache_config_info gauge\n" + REPORT)
FILLER = 'vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="Qwen/Qwen3-8B"} 5.0\n'
HERE = os.path.dirname(os.path.abspath(__file__))


def target(pod="p0", log=True, previous=False, port=None, engine="vllm"):
    return ew.Target("team", pod, "main", log, previous, port, engine)


@pytest.fixture
def serve(fake_server):
    """serve({(kind, pod): (status, headers, body)}) -> (client, fake): kind is log, previous or metrics."""
    def start(answers):
        def route(req):
            path = req["path"]
            if path.endswith("/log"):
                kind = ew.PREVIOUS if req["query"].get("previous") == "true" else ew.LOG
                pod = path.split("/")[-2]
            else:
                kind, pod = ew.METRICS, path.split("/")[-3].split(":")[0]
            return answers.get((kind, pod)) or (404, {}, {"kind": "Status", "code": 404, "message": "not found"})
        fake = fake_server(route, namespace="team")
        return kube.Client(Connection(kubeconfig=fake.kubeconfig)), fake
    return start


def text(body):
    return 200, {"Content-Type": "text/plain"}, body.encode() if isinstance(body, str) else body


def test_only_the_lines_that_may_hold_a_report_are_kept(serve):
    page = FILLER * 5000 + METRICS              # ~480 KiB, the report last
    client, _ = serve({("metrics", "p0"): text(page), ("log", "p0"): text("INFO starting\n" + NON_DEFAULT)})
    read = ew.read(client, [target(port=8000)], keeps=keeps)
    got = read.words[("team", "p0")]
    assert got.metrics == METRICS and got.log == NON_DEFAULT and got.cut == frozenset()
    assert (read.failed, read.partial, read.skipped) == ({}, {}, 0)


def test_a_report_line_cut_by_the_head_is_not_read_and_said(serve):
    """Before: the 64 KiB head cut the args line and the reader took it for "no kv_cache_dtype: the default"."""
    line = NON_DEFAULT.replace("'model_tag'", "'chat_template': '" + "x" * ew.HEAD_BYTES + "', 'model_tag'")
    client, fake = serve({("log", "p0"): text(line.encode()[:ew.HEAD_BYTES])})    # the kubelet's limitBytes
    read = ew.read(client, [target()], keeps=keeps)
    got = read.words[("team", "p0")]
    assert got.log == "" and got.cut == frozenset({ew.LOG})
    assert read.partial == {(ew.LOG, ew.LIMIT): 1}
    assert fake.requests[0]["query"]["limitBytes"] == str(ew.HEAD_BYTES)


def test_a_last_line_without_its_end_is_not_taken_whole(serve):
    """A container mid-write: the kubelet hands over a partial line as it is (its CRI `P` record)."""
    client, _ = serve({("log", "p0"): text(NON_DEFAULT.rstrip("\n"))})
    read = ew.read(client, [target()], keeps=keeps)
    assert read.words[("team", "p0")].cut == frozenset({ew.LOG})


def test_a_line_past_the_line_bound_is_dropped_and_said(serve, monkeypatch):
    monkeypatch.setattr(ew._Lines, "max_line", 200)
    long = NON_DEFAULT.replace("'model_tag'", "'x': '" + "y" * 300 + "', 'model_tag'")
    client, _ = serve({("log", "p0"): text("INFO " + "z" * 500 + "\n" + long + NON_DEFAULT)})
    read = ew.read(client, [target()], keeps=keeps)
    got = read.words[("team", "p0")]
    assert got.log == NON_DEFAULT and got.cut == frozenset({ew.LOG})     # the long line that is no report: dropped
    assert read.partial == {(ew.LOG, ew.LONG): 1}


def test_a_line_that_is_not_utf8_is_not_read(serve):
    client, _ = serve({("log", "p0"): text(NON_DEFAULT.replace("fp8_e5m2", "fp8\xff").encode("latin-1")),
                       ("log", "p1"): text(b"INFO \xff\xfe progress\n" + NON_DEFAULT.encode())})
    read = ew.read(client, [target(), target("p1")], keeps=keeps)
    assert read.words[("team", "p0")].cut == frozenset({ew.LOG}) and read.words[("team", "p0")].log == ""
    assert read.words[("team", "p1")].cut == frozenset() and read.words[("team", "p1")].log == NON_DEFAULT
    assert read.partial == {(ew.LOG, ew.UTF8): 2}


def test_a_page_past_the_read_is_not_taken_for_silence(serve):
    page = FILLER * (ew.METRICS_BYTES // len(FILLER) + 10) + METRICS
    client, _ = serve({("metrics", "p0"): text(page)})
    read = ew.read(client, [target(log=False, port=8000)], keeps=keeps)
    assert read.words[("team", "p0")].metrics == "" and read.words[("team", "p0")].cut == frozenset({ew.METRICS})
    assert read.partial == {(ew.METRICS, ew.LIMIT): 1}


def test_a_crash_tail_keeps_its_last_lines_whole(serve):
    tail = "".join(f"line {n}\n" for n in range(100)) + "ValueError: boom\n"
    cut = "x" * 100 + "\nValueError: the last line, cu"
    client, fake = serve({("previous", "p0"): text(tail), ("previous", "p1"): text(cut)})
    read = ew.read(client, [target(log=False, previous=True), target("p1", log=False, previous=True)], keeps=keeps)
    lines = read.words[("team", "p0")].previous.splitlines()
    assert len(lines) == ew.TAIL_LINES and lines[-1] == "ValueError: boom"
    assert read.words[("team", "p1")].previous == "x" * 100 + "\n"
    assert read.words[("team", "p1")].cut == frozenset({ew.PREVIOUS})
    assert {r["query"]["tailLines"] for r in fake.requests} == {str(ew.TAIL_LINES)}


def test_gzip_is_decoded_as_kubectls_client_decodes_it(serve):
    client, _ = serve({("metrics", "p0"): (200, {"Content-Encoding": "gzip"},
                                           gzip.compress((FILLER * 100 + METRICS).encode()))})
    read = ew.read(client, [target(log=False, port=8000)], keeps=keeps)
    assert read.words[("team", "p0")].metrics == METRICS and not read.failed


def test_a_gzip_bomb_costs_only_the_bytes_read(serve):
    """1 GiB of one line in ~1 MiB of gzip: decoded no further than the page's limit."""
    bomb = gzip.compress(b"vllm:cache_config_info{" + b"a" * (1 << 30), 9)
    assert len(bomb) < 2 << 20
    client, _ = serve({("metrics", "p0"): (200, {"Content-Encoding": "gzip"}, bomb)})
    import tracemalloc

    tracemalloc.start()
    t0 = time.monotonic()
    read = ew.read(client, [target(log=False, port=8000)], keeps=keeps)
    took, (_, peak) = time.monotonic() - t0, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert read.words[("team", "p0")].cut == frozenset({ew.METRICS}) and not read.failed
    assert peak < 16 << 20 and took < 5, (peak, took)


@pytest.mark.parametrize("headers, body, said", [
    ({"Content-Encoding": "br"}, b"\x1b\x00", "Content-Encoding 'br' is not one the client decodes"),
    ({"Content-Encoding": "gzip"}, b"not gzip at all\n", "the gzip body is not valid gzip"),
])
def test_an_encoding_not_decoded_is_a_failed_read(serve, headers, body, said):
    client, _ = serve({("metrics", "p0"): (200, headers, body)})
    read = ew.read(client, [target(log=False, port=8000)], keeps=keeps)
    assert read.words[("team", "p0")].metrics is None
    assert read.failed[ew.METRICS][0] == 1 and said in read.failed[ew.METRICS][1]


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_never_followed(serve, status):
    """client-go sets no CheckRedirect, so kubectl would follow it; here the Pod's server (pods/proxy
    passes its answer through) would choose where this user's credentials go next."""
    client, fake = serve({("metrics", "p0"): (status, {"Location": "/api/v1/namespaces/kube-system/secrets"}, b""),
                          ("log", "p0"): (302, {"Location": "https://elsewhere.example/"}, b"")})
    read = ew.read(client, [target(port=8000)], keeps=keeps)
    got = read.words[("team", "p0")]
    assert got.log is None and got.metrics is None
    assert all("a redirect, not followed" in read.failed[k][1] for k in (ew.LOG, ew.METRICS))
    assert not any("secrets" in r["path"] for r in fake.requests) and len(fake.requests) == 2


@pytest.mark.parametrize("port", [0, -1, 65536, 1 << 70, True, "8000", "²", None.__class__])
def test_a_port_that_is_no_port_is_a_failed_read_without_a_request(serve, port):
    client, fake = serve({})
    read = ew.read(client, [target(log=False, port=port)], keeps=keeps)
    assert read.failed[ew.METRICS][0] == 1 and "is not a TCP port" in read.failed[ew.METRICS][1]
    assert fake.requests == []


def test_any_port_in_range_and_any_pod_name_is_asked_or_refused_cleanly(serve):
    client, fake = serve({})
    read = ew.read(client, [target(pod, log=True, port=port) for pod, port in
                            (("a/../b", 1), ("..", 65535), ("é?#%", 8000), ("x" * 300, 30000))], keeps=keeps)
    assert sum(count for count, _ in read.failed.values()) == 8      # 404s and refused paths: failed reads


def test_one_deadline_for_both_rounds(serve):
    """Round one (log heads) meets a server that never ends its answers; round two (/metrics) starts
    with what is left of the same budget, not a fresh one."""
    def drip():
        yield b"INFO starting\n", 0
        while True:
            yield b" ", 0.2

    answers = {}
    for n in range(20):
        answers[("log", f"p{n}")] = (200, {}, drip())
        answers[("metrics", f"p{n}")] = (200, {}, drip())
    client, _ = serve(answers)
    budget = ew.Budget(2.0)
    t0 = time.monotonic()
    first = ew.read(client, [target(f"p{n}") for n in range(20)], workers=4, budget=budget, keeps=keeps)
    second = ew.read(client, [target(f"p{n}", log=False, port=8000) for n in range(20)], workers=4, budget=budget,
                     keeps=keeps)
    took = time.monotonic() - t0
    assert took < 2.0 + 1.5, took
    assert first.skipped == 16 and first.failed[ew.LOG][0] == 4      # 4 in flight until the deadline
    assert second.skipped == 20 and not second.failed
    merged = first.merge(second)
    assert merged.skipped == 36


def test_memory_held_at_many_large_pages():
    """200 Pods, each /metrics page just under 1 MiB: the plugin's peak RSS stays far below the
    bodies' sum (before: every body was kept until the round ended, ~2 MiB each as bytes and str)."""
    sys.path.insert(0, HERE)
    import observe_scale

    took, rss, code, err = observe_scale.measure(200, metrics_bytes=1_040_000)
    assert code == 0, err
    assert rss < 120, rss
    assert "Traceback" not in err


def test_the_scale_script_runs_as_a_script():
    p = subprocess.run([sys.executable, os.path.join(HERE, "observe_scale.py"), "--pods", "3"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and "pods=3" in p.stdout and "exit 0" in p.stdout, p.stderr


@pytest.mark.parametrize("engine, version, argv", [
    ("vllm", "0.11.2", ["Qwen/Qwen3-8B", "--kv-cache-dtype", "fp8", "--port", "8000"]),
    ("vllm", "0.18.0", ["Qwen/Qwen3-8B", "--kv-cache-dtype", "fp8_e5m2", "--api-key", "sk-x"]),
    ("sglang", "0.5.12", ["--model-path", "Qwen/Qwen3-8B", "--kv-cache-dtype", "fp8_e4m3"]),
])
def test_the_kept_lines_read_as_the_whole_head_reads(serve, engine, version, argv):
    """The lines the releases' own code writes (tests/cluster/engine_lines.py: SGLang's ServerArgs
    repr, vLLM's non-default args line and cache_config_info gauge), among other lines: what the
    reader finds in the lines kept is what it finds in the whole head and page."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cluster"))
    import engine_lines
    from kubectl_kvcache import engine as model

    dtype = argv[argv.index("--kv-cache-dtype") + 1]
    noise = "".join(f"INFO 01-01 00:00:0{n} [loader.py:{n}] Loading weights shard {n}/9\n" for n in range(9))
    head = noise + engine_lines.startup_log(engine, version, argv, dtype) + noise
    page = FILLER * 3000 + (engine_lines.vllm_metrics(version, dtype) if engine == "vllm" else "")
    client, _ = serve({("log", "p0"): text(head), ("metrics", "p0"): text(page)})
    read = ew.read(client, [target(port=8000 if engine == "vllm" else None, engine=engine)], keeps=keeps)
    got = read.words[("team", "p0")]
    assert got.cut == frozenset() and len(got.log) < len(head)
    whole, kept = model.observe_words(engine, head), model.observe_words(engine, got.log)
    assert kept == whole and kept is not None and (kept.dtype or kept.resolved), (kept, whole)
    if engine == "vllm":
        assert got.metrics.count("\n") == 3
        assert model.observe_words(engine, got.metrics, source="metrics") == \
            model.observe_words(engine, page, source="metrics")


def test_gzip_in_members_and_chunks(serve):
    """Go's gzip.Reader reads several members one after the other; a chunked body in small pieces."""
    data = gzip.compress((FILLER * 50).encode()) + gzip.compress(METRICS.encode())
    pieces = iter([(data[i:i + 700], 0) for i in range(0, len(data), 700)])
    client, _ = serve({("metrics", "p0"): (200, {"Content-Encoding": "gzip"}, pieces)})
    read = ew.read(client, [target(log=False, port=8000)], keeps=keeps)
    assert read.words[("team", "p0")].metrics == METRICS and not read.failed


def test_one_pods_flood_starves_no_other(serve):
    """Each read keeps its share of the observation's bytes: a head of nothing but lines that may
    hold a report is cut at its share (and said), the next Pod's report is still read whole."""
    flood = NON_DEFAULT * 400
    client, _ = serve({("log", "p0"): text(flood), ("log", "p1"): text(NON_DEFAULT)})
    budget = ew.Budget(keep_bytes=16 << 10)
    read = ew.read(client, [target("p0"), target("p1")], budget=budget, keeps=keeps)
    assert read.words[("team", "p0")].cut == frozenset({ew.LOG}) and read.partial == {(ew.LOG, ew.KEPT): 1}
    assert 0 < len(read.words[("team", "p0")].log) <= 8 << 10
    assert read.words[("team", "p1")].log == NON_DEFAULT and read.words[("team", "p1")].cut == frozenset()
