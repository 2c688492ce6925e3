"""Capacity lines as a release writes them: the release's own format (engine/capacity.json, which
the conformance tier proves equal to the wheels and to the lines the real format strings write),
its fields filled as the code formats them (%d, f"{x:,}", %.2f), behind the logger's prefix."""

from kubectl_kvcache.engine import capacity

VLLM_PREFIX = "(EngineCore_DP0 pid=7) INFO 01-01 00:00:00 [kv_cache_utils.py:1087] "     # vllm/logger.py _FORMAT
SGLANG_PREFIX = "[2026-01-01 00:00:00 TP0] "                                              # configure_logger


def _cell(field, values, leading):
    if leading:
        return "GPU"
    value = values.get(field["name"], 8192 if field["type"] != "f2" else 12.34)
    kind = field["type"]
    if kind == ",":
        return f"{value:,}"
    if kind.startswith("f") and kind[1:].isdigit():
        return f"{value:.{int(kind[1:])}f}"
    return str(value)


def line(engine, version, kind, first="", **values) -> str:
    """One log line of `kind` (a capacity.json format kind) as `version` writes it; `values` by
    field name (tokens, max_len, concurrency, blocks); the release's first format of that kind
    whose text starts with `first`."""
    template = next(t for _, k, t in capacity.formats(engine, version) if k == kind and t[0].startswith(first))
    out = template[0]
    for i in range(1, len(template), 2):
        out += _cell(template[i], values, i == 1 and template[0] == "") + template[i + 1]
    return (VLLM_PREFIX if engine == "vllm" else SGLANG_PREFIX) + out + "\n"
