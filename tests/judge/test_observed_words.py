"""judge/observed.py's use of the engine's word: every report of a row held together (its log head
and its /metrics, read in two rounds), a conflict failing the row (Item.observed_agrees False,
judge/verify.fails), a source cut at the read limit not read, /metrics read from the port the
engine listens on (or not read, with why)."""

from types import SimpleNamespace

from kubectl_kvcache.judge import observed
from kubectl_kvcache.judge.verify import OK, Item, fails
from kubectl_kvcache.load.engine_words import Read, Words

ARGS = "(APIServer pid=1) INFO 12-03 07:00:01 [utils.py:233] non-default args: %r\n"   # log_non_default_args
METRIC = 'vllm:cache_config_info{block_size="16",cache_dtype="%s"} 1.0\n'               # log_metrics_info


def _item(args=("m", "--kv-cache-dtype", "fp8"), effective="fp8", version="0.18.0"):
    spec = {"name": "main", "image": f"vllm/vllm-openai:v{version}", "command": ["vllm", "serve"], "args": list(args)}
    return Item("ns", "p-0", "main", None, "server", "vllm", version, "b", "fp8", effective, OK, "",
                container_spec=spec, state={"phase": "Running", "waiting": None, "terminating": False})


def _read(**words):
    return Read({("ns", "p-0"): Words(**words)}, set(), {}, 0)


def test_log_then_metrics_agreeing_confirm():
    item = _item()
    first = _read(log=ARGS % {"model_tag": "m", "kv_cache_dtype": "fp8"})
    observed.apply([item], first)
    assert observed.verdict(item) == "confirmed"
    assert observed.unread([item], first) == [item]                    # /metrics is read too
    observed.apply([item], _read(metrics=METRIC % "fp8"))
    assert observed.verdict(item) == "confirmed" and len(item.observed.reports) == 2 and not fails(item)


def test_metrics_against_the_log_is_a_conflict_that_fails_the_row():
    item = _item()
    observed.apply([item], _read(log=ARGS % {"model_tag": "m", "kv_cache_dtype": "fp8"}))
    observed.apply([item], _read(metrics=METRIC % "fp8_e5m2"))
    assert item.observed.conflict and item.observed_agrees is False and fails(item)
    assert observed.verdict(item) == "differs"
    said = item.to_dict()["observed"]
    assert said["agrees"] is False and "fp8_e5m2" in said["conflict"] and "fp8" in said["conflict"]


def test_a_fake_line_before_the_real_one_never_confirms():
    item = _item()
    log = ARGS % {"kv_cache_dtype": "fp8"} + ARGS % {"model_tag": "m", "kv_cache_dtype": "fp8_e5m2"}
    observed.apply([item], _read(log=log))
    assert item.observed_agrees is False and fails(item)


def test_a_source_cut_at_the_limit_loses_its_partial_line():
    item = _item()
    line = ARGS % {"model_tag": "m", "kv_cache_dtype": "fp8"}
    # load/engine_words.Words with its `cut` field (the reader's: which sources it cut at its limit)
    cut = SimpleNamespace(log="INFO starting\n" + line[:-12], previous=None, metrics=None, cut=frozenset({"log"}))
    observed.apply([item], Read({("ns", "p-0"): cut}, set(), {}, 0))
    assert item.observed.dtype is None and "cut at the read limit" in " ".join(item.observed.unread)
    assert observed.verdict(item) == "not read" and not fails(item)


def test_metrics_from_the_port_the_engine_listens_on():
    item = _item(args=("m", "--kv-cache-dtype", "fp8", "--port", "8000", "--port", "8001"))
    read = _read(log="INFO starting\n")
    observed.apply([item], read)
    assert observed._port(item) == 8001
    assert observed.targets(observed.unread([item], read), observe=True, metrics=True)[0][5] == 8001


def test_a_port_the_engine_cannot_have_is_a_note_never_an_error():
    item = _item(args=("m", "--kv-cache-dtype", "fp8", "--port", "\u00b2"))
    read = _read(log="INFO starting\n")
    observed.apply([item], read)
    assert observed._port(item) is None
    assert observed.targets(observed.unread([item], read), observe=True, metrics=True) == []
    assert "its /metrics is not read" in item.observed.unread[0] and item.observed.dtype is None
