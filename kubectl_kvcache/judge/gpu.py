"""The GPU held against each vLLM row: which Nodes to read, and the verdict the GPU decides.
Pure: the reads are load/nodes.py's, the facts engine/attention.on_gpu's (engine/gpus.json).

A row's verdict depends on the GPU when its release's engine data answers differently for the
row's dtype on different compute capabilities (fp8 on Triton below 8.9, FLASH_ATTN's fp8 only on
Hopper, FlashInfer's capability range). Only those rows' Nodes are read by a plain verify (the
verdict must be right without a flag); -o wide and describe read every row's Node for the GPU
column (the same bound). Where the labels decide, the verdict is definite (REJECTED at start-up
with the GPU named, or the prediction confirmed); where a label that decides is absent, UNKNOWN
naming that label; a Node not read (403, gone, beyond the bound) leaves the prediction standing.
"""

from __future__ import annotations

from kubectl_kvcache import engine
from kubectl_kvcache.judge import fixes
from kubectl_kvcache.judge.verify import MISMATCH, OK, REJECTED, UNKNOWN, Item


def decided_by_gpu(item: Item) -> bool:
    """The row's verdict depends on its Node's GPU (engine data: gpus.json)."""
    if item.engine != "vllm" or item.status not in (OK, MISMATCH) or not item.effective or item.node is None:
        return False
    facts = engine.gpu_facts(engine.parse_version(item.engine_version))
    return facts is not None and engine.depends_on_gpu(facts, item.effective)


def targets(items, every: bool = False) -> list[str]:
    """The Node names to read: those of rows the GPU decides (`every`: of every row with a Node)."""
    return sorted({i.node for i in items if i.node and (every or decided_by_gpu(i))})


def apply(items, labels: dict) -> None:
    """Set each row's GPU from its Node's labels (`labels`: name -> labels, the Nodes read) and
    decide what the GPU decides."""
    for item in items:
        if item.node is None or item.node not in labels:
            continue
        item.gpu = engine.gpu_from_labels(labels[item.node])
        if item.gpu is None or not decided_by_gpu(item):
            continue
        platform = engine.read_image((item.container_spec or {}).get("image") or "", "vllm").platform
        start = engine.start_check(engine.parse_version(item.engine_version), item.effective, platform,
                                engine.forced_backend(None, _tokens(item)), item.gpu)
        if start.verdict == engine.START_REFUSED and (item.state or {}).get("ready") is True:
            # the engine is up on that GPU: what ran beats the engine data's prediction, said
            item.reason += f"; the engine data predicts it exits at start-up ({start.reason}), but it is ready"
        elif start.verdict == engine.START_REFUSED:
            item.status = REJECTED
            item.reason = start.reason
            item.cause = None
            if item.binding and item.expected and item.effective == item.expected and not item.takeover:
                item.fix = (f"the Binding's dtype {item.expected!r} does not start on {item.gpu.named}: "
                            + fixes.recover_fix(item.namespace, item.binding))
                item.recover = True
            else:
                item.fix = f"use a --kv-cache-dtype that starts on {item.gpu.named}"
        elif start.verdict == engine.START_UNDECIDED and start.cause is not None and start.cause.code == "gpu":
            item.status = UNKNOWN
            item.reason = f"the parse accepts {item.effective!r}, but {start.reason}"
            item.cause = start.cause
            item.fix = f"label the Node {item.node} with {start.cause.subject} (GPU Feature Discovery writes it)"


def _tokens(item: Item):
    spec = item.container_spec or {}
    return list(spec.get("command") or ()) + list(spec.get("args") or ())


def engine_nodes(snapshot) -> list[str]:
    """The Nodes vLLM engine Pods in `snapshot` run on (recover: which dtype starts there)."""
    from kubectl_kvcache.judge import verify

    return sorted({c.pod.node for c in verify.candidates(snapshot)
                   if c.pod.node and engine.normalise_engine(c.declared_engine) == "vllm"})


def gpus_by_node(labels: dict) -> dict:
    """{Node name: its Gpu} of the Nodes read."""
    found = {name: engine.gpu_from_labels(node_labels) for name, node_labels in labels.items()}
    return {name: g for name, g in found.items() if g is not None}
