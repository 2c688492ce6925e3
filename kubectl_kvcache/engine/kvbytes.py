"""Bytes per KV-cache element of each --kv-cache-dtype value, per engine release, as the release's
code sizes its cache (engine/kvbytes.json, read from the wheels by tools/enginedata/kvbytes_data.py).

Why: the memory an engine gives its KV cache does not depend on the cache's dtype (vLLM: what is
left of gpu_memory_utilization after the weights and the profiled activations; SGLang: what is
left of mem_fraction_static), so a dtype change scales the tokens it holds by the ratio of the two
element sizes: fp8 (1 byte) holds twice the tokens of bf16 (2). Where the release's layout does
not reduce to one size per element (fp8_ds_mla's fixed bytes per token, scales per token and head,
a backend's own packing) or "auto" is not resolved, the answer is None: UNKNOWN, never a guess.
"""

from __future__ import annotations

from fractions import Fraction

from kubectl_kvcache.engine.releases import parse_version

# torch's element size of the model dtypes an engine reports ("torch.bfloat16", "bfloat16").
MODEL_DTYPES = {"bfloat16": Fraction(2), "float16": Fraction(2), "half": Fraction(2), "float32": Fraction(4),
                "float": Fraction(4), "bf16": Fraction(2), "fp16": Fraction(2),
                "float8_e4m3fn": Fraction(1), "float8_e5m2": Fraction(1), "float8_e4m3fnuz": Fraction(1),
                "float8_e5m2fnuz": Fraction(1), "uint8": Fraction(1)}
_DATA: dict | None = None


def _data() -> dict:
    global _DATA
    if _DATA is None:
        from kubectl_kvcache.engine import knowledge
        _DATA = knowledge.load("kvbytes")
    return _DATA


def release_table(engine: str, version: str | None) -> tuple[dict | None, str]:
    """(the release's {"source", "dtypes"}, the release read) - a release newer than the data reads
    the newest; one not in the data otherwise: (None, why)."""
    per = _data().get(engine)
    if not per or not version:
        return None, f"the {engine or 'engine'} release is not known"
    if version in per:
        return per[version], version
    wanted = parse_version(version)
    known = {v: parse_version(v) for v in per}
    if wanted is None:
        return None, f"{engine} {version} is not a release this plugin reads"
    newest = max((v for v in known if known[v] is not None), key=lambda v: known[v])  # type: ignore[arg-type,return-value]
    if wanted > known[newest]:
        return per[newest], newest
    return None, f"{engine} {version} is not in the engine data"


def _model_bytes(model_dtype: str | None) -> Fraction | None:
    if not model_dtype:
        return None
    name = model_dtype.strip()
    name = name[len("torch."):] if name.startswith("torch.") else name
    return MODEL_DTYPES.get(name)


def describe(engine: str, version: str | None, dtype: str, model_dtype: str | None = None) -> tuple[Fraction | None, str]:
    """(bytes per element, why None) of `dtype` in the release; "auto" is the model's dtype, known
    only from what the engine reported (`model_dtype`: "torch.bfloat16", the config line's dtype)."""
    table, read = release_table(engine, version)
    if table is None:
        return None, read
    entry = table["dtypes"].get(dtype)
    if entry is None:
        return None, f"{engine} {read} does not size a KV cache of {dtype!r}"
    if isinstance(entry, str):
        return Fraction(entry), ""
    if entry.get("bytes"):
        return Fraction(entry["bytes"]), ""
    layout = entry.get("layout")
    if layout == "auto":
        size = _model_bytes(model_dtype)
        if size is None:
            return None, ("auto is the model's dtype (or the checkpoint's KV-cache quantization), "
                          "which the engine did not report" if not model_dtype else
                          f"auto resolved to {model_dtype}, whose size this plugin does not know")
        return size, ""
    if layout == "per-token":
        per = "/".join(str(n) for n in entry.get("perToken", ()))
        return None, (f"{dtype} stores {per} bytes per token and layer ({entry.get('source', table['source'])}); "
                      "its ratio to another dtype depends on the model's shape")
    if layout == "per-token-head-scales":
        return None, f"{dtype} adds float32 scales per token and head: its size depends on the head size"
    if layout == "conditional":
        return None, f"{dtype} falls back on the model's dtype in some setups ({table['source']})"
    return None, f"{dtype} has a layout of its own in {engine} {read} ({layout})"


def element_bytes(engine: str, version: str | None, dtype: str, model_dtype: str | None = None) -> Fraction | None:
    """Bytes per KV-cache element of `dtype` in the release (a Fraction: nvfp4 is 9/16); None: unknown."""
    return describe(engine, version, dtype, model_dtype)[0]


def ratio(engine: str, version: str | None, old: str, new: str, model_dtype: str | None = None) -> Fraction | None:
    """new capacity / old capacity for a change from `old` to `new` (bytes(old) / bytes(new)):
    fp8 -> bfloat16 is 1/2. None when either size is unknown. `model_dtype` resolves "auto"."""
    a = element_bytes(engine, version, old, model_dtype)
    b = element_bytes(engine, version, new, model_dtype)
    if a is None or b is None or b == 0:
        return None
    return a / b


MAX_LEN_OPTION = {"vllm": "--max-model-len", "sglang": "--context-length"}
AUTO_MAX_LEN = -1     # vLLM --max-model-len -1 / auto (from 0.14.0): the engine fits it to the memory


def argv_max_len(container: dict | None, engine: str, version: str | None) -> tuple[int | None, str]:
    """The max length the Pod's argv sets (--max-model-len / --context-length), as the release's
    own parser reads it (engine/kvparse.option_values: the last wins, `--opt=N`, abbreviations);
    AUTO_MAX_LEN for -1/auto; (None, why) when not set or not read. Only a plain number is read
    (vLLM's later human_readable_int also takes "32k": not read here, the logged length decides)."""
    from kubectl_kvcache.engine import kvparse, releases
    from kubectl_kvcache.engine.launch import engine_launch

    option = MAX_LEN_OPTION.get(engine)
    known = parse_version(version) if version else None
    if option is None or not container or known is None:
        return None, "its argv or release is not known"
    launch, why = engine_launch(container, engine, known)
    if launch is None:
        return None, why
    values = kvparse.option_values(launch.args, releases.profile(engine, known), entry=launch.entry)
    if values is None:
        return None, "the argv replay does not read its argv to the end"
    stored = values.get(option)
    if not stored:
        return None, f"no {option} in its argv"
    text = str(stored[-1]).strip()
    if text in ("-1", "auto"):
        return AUTO_MAX_LEN, ""
    try:
        return int(text), ""
    except ValueError:
        return None, f"{option} {text!r} is not a plain number this plugin reads"
