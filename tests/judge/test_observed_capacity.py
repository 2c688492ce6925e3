"""judge/observed.py setting Item.capacity from what was read: the log head and /metrics of two
rounds held together, a head without the line said "not read" (it may lie beyond the head), a
source cut at the read limit losing its partial line, and the sums per deployment and Binding
(judge/capacity_sum.py)."""

from types import SimpleNamespace

from kubectl_kvcache.judge import capacity_sum, observed
from kubectl_kvcache.judge.verify import OK, Item
from kubectl_kvcache.load.engine_words import HEAD_BYTES, Read, Words

# vLLM V1's two lines as LMCache/LMCache issue 1739 pasted them
LOG = ("(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [kv_cache_utils.py:864] GPU KV cache size: 42,656 tokens\n"
       "(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [kv_cache_utils.py:868] Maximum concurrency for 32,768 "
       "tokens per request: 1.30x\n")
METRIC = 'vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="%d"} 1.0\n'


def _item(pod="p-0", version="0.11.0", binding="b", running=True):
    spec = {"name": "main", "image": f"vllm/vllm-openai:v{version}", "command": ["vllm", "serve"], "args": ["m"]}
    state = {"phase": "Running", "waiting": None, "terminating": False} if running else \
        {"phase": "Pending", "waiting": "ContainerCreating", "terminating": False}
    return Item("ns", pod, "main", {"kind": "ModelDeployment", "name": "d"}, "server", "vllm", version, binding,
                "auto", "auto", OK, "", container_spec=spec, state=state)


def _read(pod="p-0", **words):
    return Read({("ns", pod): Words(**words)}, set(), {}, 0)


def test_the_log_heads_lines_set_the_capacity_and_to_dict_says_it():
    item = _item()
    observed.apply([item], _read(log="INFO starting\n" + LOG))
    cap = item.capacity
    assert (cap.tokens, cap.basis, cap.max_len, cap.concurrency) == (42656, "tokens", 32768, 1.30)
    said = item.to_dict()["capacity"]
    assert said["tokens"] == 42656 and said["maxLength"] == 32768 and said["source"] == "log"


def test_metrics_in_the_second_round_is_held_against_the_log():
    item = _item()
    observed.apply([item], _read(log=LOG))
    observed.apply([item], _read(metrics=METRIC % 2666))
    assert item.capacity.tokens == 42656 and item.capacity.blocks == 2666 and item.capacity.block_size == 16
    assert len(item.capacity.reports) == 3


def test_a_head_without_the_line_is_not_read_and_says_the_head_bound():
    item = _item()
    observed.apply([item], _read(log="INFO 10-03 [loader.py:1] Loading weights took 14.99 GB\n"))
    assert item.capacity.tokens is None
    note = " ".join(item.capacity.unread)
    assert "no capacity line in its log head" in note and f"{HEAD_BYTES // 1024} KiB" in note
    assert item.to_dict()["capacity"]["tokens"] is None            # null, never 0
    # /metrics then gives blocks x block size: the note is gone, the basis says blocks
    observed.apply([item], _read(metrics=METRIC % 2666))
    assert (item.capacity.tokens, item.capacity.basis) == (2666 * 16, "blocks") and not item.capacity.unread


def test_a_head_cut_at_the_read_limit_loses_its_partial_line():
    item = _item()
    cut = SimpleNamespace(log=LOG.splitlines()[1] + "\n" + LOG.splitlines()[0][:-9], previous=None, metrics=None,
                          cut=frozenset({"log"}))
    observed.apply([item], Read({("ns", "p-0"): cut}, set(), {}, 0))
    assert item.capacity.tokens is None and item.capacity.max_len == 32768
    assert any("cut at the read limit" in n for n in item.capacity.unread)


def test_sums_per_deployment_and_binding_count_the_replicas_read():
    a, b, c = _item("p-0"), _item("p-1"), _item("p-2", binding="other")
    observed.apply([a], _read("p-0", log=LOG))
    observed.apply([b], _read("p-1", log=LOG))
    sums = capacity_sum.totals([a, b, c])
    dep = sums["deployments"][0]
    assert (dep["name"], dep["replicas"], dep["read"], dep["tokens"], dep["complete"]) == ("d", 3, 2, 85312, False)
    assert capacity_sum.text(dep) == "at least 85,312 tokens (2/3 replicas read)"
    bindings = {g["name"]: g for g in sums["bindings"]}
    assert bindings["b"]["tokens"] == 85312 and bindings["b"]["complete"] and bindings["b"]["maxLength"] == 32768
    assert bindings["other"]["tokens"] is None and capacity_sum.text(bindings["other"]) == "not read (0/1 replicas)"
