"""vLLM's attention-backend check after the parse: does a --kv-cache-dtype its parser accepts start?

From the release that lists `supported_kv_cache_dtypes` per backend, vLLM's CUDA platform walks
its backend priority list at start-up (vllm/platforms/cuda.py get_attn_backend_cls ->
get_valid_backends -> AttentionBackend.validate_configuration, "kv_cache_dtype not supported") and
exits with "No valid attention backend found" when no candidate takes the dtype. vLLM falls down
the list, so one candidate that takes it is enough; which list applies depends on the model's
attention (MLA or not) and the GPU, neither of which the Pod spec says. Hence:

- every candidate refuses it: the engine exits at start-up (REJECTED, error START_UP);
- a candidate of each kind takes it: it starts (the parse's verdict stands);
- otherwise the model's attention kind (MLA or not) or a backend that decides at run time (e.g.
  FLASH_ATTN's fp8 only with FlashAttention 3) decides: the parse's verdict stands with that
  caveat in its reason (the row is about which value wins; `verify --observe` reads whether it
  started), and `starts` is False, so such a value is never proposed or suggested.

A backend forced by VLLM_ATTENTION_BACKEND or --attention-backend is judged alone. Platforms
whose selection does not check the dtype by these lists (ROCm, CPU, XPU in the releases read) and
releases before the lists (0.11.0 and older: the selection falls back on fp8 instead of refusing)
leave the parse's verdict alone; where CUDA refuses a value and the image does not say its
platform, the answer is UNKNOWN (the platform decides). The facts are data
(engine/backends.json), read from each release's wheel by scripts/engine-data.
"""

from __future__ import annotations

from kubectl_kvcache.engine.cause import Cause
from kubectl_kvcache.engine.kvparse import OK, REJECTED, START_UP, UNKNOWN, Parse
from kubectl_kvcache.engine.releases import Version, parse_version
from kubectl_kvcache.record import Record

STARTS, REFUSED, UNDECIDED = "starts", "refused", "unknown"
CUDA = "cuda"
_FACTS: dict | None = None


class Start(Record):
    """The check's answer for one release, platform and dtype."""

    __slots__ = ("verdict", "reason", "cause")

    def __init__(self, verdict: str, reason: str = "", cause: Cause | None = None):
        self.verdict = verdict      # starts | refused | unknown
        self.reason = reason
        self.cause = cause


def _facts():
    global _FACTS
    if _FACTS is None:
        from kubectl_kvcache.engine import knowledge   # only when a dtype is judged
        _FACTS = {parse_version(v): facts for v, facts in knowledge.load("backends").items()}
    return _FACTS


def release_facts(version: Version | None):
    """(facts, modelled): the release's lists; a release newer than the data: the newest's (as its
    parse is judged); one before the lists: (None, True) - nothing to check; one between the
    releases read but missing: (None, False)."""
    facts = _facts()
    if version is None or not facts:
        return None, False
    if version in facts:
        return facts[version], True
    ordered = sorted(facts)
    if version > ordered[-1]:
        return facts[ordered[-1]], True
    return None, version < ordered[0]


def _kind(name):
    return "MLA" if "MLA" in name else "standard"


def _group(names, backends, dtype):
    """starts | refused | unknown for a group of candidate backends (one that starts is enough)."""
    said = [STARTS if dtype in backends[n]["starts"] else REFUSED if dtype in backends[n]["refuses"] else UNDECIDED
            for n in names]
    if STARTS in said:
        return STARTS
    return REFUSED if all(s == REFUSED for s in said) else UNDECIDED


def check(version: Version | None, dtype: str | None, platform: str | None = None,
          backend: str | None = None, gpu=None) -> Start:
    """Does vLLM `version` on `platform` start with `--kv-cache-dtype dtype` (None: auto)? With
    `gpu` (engine.gpu.Gpu, the Node's labels read): on that GPU, where the engine data decides."""
    dtype = dtype or "auto"
    if dtype == "auto":
        return Start(STARTS)
    if gpu is not None and gpu.vendor == "amd" and platform is None:
        platform = "rocm"           # an AMD GPU runs the ROCm build
    if gpu is not None and platform in (None, CUDA):
        decided = on_gpu(version, dtype, gpu, backend)
        if decided is not None:
            return decided
    facts, modelled = release_facts(version)
    if facts is None and modelled and gpu is not None and platform in (None, CUDA):
        # before the lists nothing refuses the dtype at selection, but what that release does on
        # this GPU (a kernel's own check: "FlashMLA V1 with FP8 KV cache not yet supported!") is
        # not in the engine data: asked about a GPU, that is not "starts"
        return Start(UNDECIDED, f"what vLLM {version} does with kv_cache_dtype {dtype!r} on {gpu.named} is not in "
                                f"the engine data (the release's selection does not list the backends' dtypes)",
                     Cause("start-up", "the GPU"))
    if facts is None:
        return Start(STARTS) if modelled else Start(
            UNDECIDED, f"vLLM {version}'s attention backends are not in the engine data",
            Cause("release", f"vllm=={version}"))
    if platform not in (None, CUDA):
        return Start(STARTS)      # its selection does not check the dtype by these lists
    cuda = facts["platforms"].get(CUDA) or []
    backends = facts["backends"]
    if backend == UNSAID:
        return Start(UNDECIDED, "the attention backend is forced by VLLM_ATTENTION_BACKEND, whose value the Pod "
                                "spec does not hold", Cause("variable", UNSAID))
    if backend is not None:
        got = backends.get(backend.upper())
        if got is None or backend.upper() not in cuda:
            return Start(UNDECIDED, f"the attention backend {backend!r} is not one vLLM {version} lists on CUDA",
                         Cause("start-up", "the attention backend"))
        said = _group([backend.upper()], backends, dtype)
        if said == REFUSED:
            return Start(REFUSED, f"the attention backend {backend.upper()} vLLM {version} is told to use does not "
                                  f"list kv_cache_dtype {dtype!r}: the engine exits at start-up (\"No valid "
                                  f"attention backend found ... kv_cache_dtype not supported\")")
        if said == UNDECIDED:
            return Start(UNDECIDED, f"whether it starts is decided at run time by {backend.upper()} (the GPU)",
                         Cause("start-up", "the GPU"))
        return Start(STARTS)
    groups: dict[str, list[str]] = {}
    for name in cuda:
        groups.setdefault(_kind(name), []).append(name)
    said = {kind: _group(names, backends, dtype) for kind, names in groups.items()}
    if said and all(s == REFUSED for s in said.values()):
        if platform is None:
            return Start(UNDECIDED, f"none of vLLM {version}'s CUDA attention backends lists kv_cache_dtype {dtype!r} "
                                    f"(on CUDA the engine exits at start-up; ROCm, CPU and XPU do not check it), and "
                                    f"the image does not say its platform", Cause("platform", "the image"))
        return Start(REFUSED, f"none of vLLM {version}'s {len(cuda)} CUDA attention backends lists kv_cache_dtype "
                              f"{dtype!r}: the engine exits at start-up (\"No valid attention backend found ... "
                              f"kv_cache_dtype not supported\")")
    if all(s == STARTS for s in said.values()):
        return Start(STARTS)
    refused = [kind for kind, s in said.items() if s == REFUSED]
    if refused:
        takes = [kind for kind, s in said.items() if s != REFUSED]
        models = "models without MLA" if takes == ["standard"] else "MLA models"
        return Start(UNDECIDED, f"it starts only on {models}: vLLM {version}'s {' and '.join(refused)} attention "
                                f"backends refuse {dtype!r}",
                     Cause("start-up", "the model's attention"))
    runtime = sorted(n for n in cuda if dtype not in backends[n]["starts"] and dtype not in backends[n]["refuses"])
    return Start(UNDECIDED, f"whether it starts is decided at run time by {', '.join(runtime)} (the GPU)",
                 Cause("start-up", "the GPU"))


def after_parse(result: Parse, engine: str | None, version: Version | None, platform: str | None = None,
                backend: str | None = None, gpu=None) -> Parse:
    """The parse's verdict held against the attention-backend check: REJECTED (START_UP) where
    every backend refuses the dtype (or, `gpu` read, the one picked on that GPU dies), UNKNOWN
    where a GPU label that decides is absent, the caveat where the model decides, else unchanged."""
    if engine != "vllm" or result.outcome != OK:
        return result
    start = check(version, result.effective, platform, backend, gpu)
    if start.verdict == STARTS:
        return result
    if start.verdict == REFUSED:
        return Parse(REJECTED, None, START_UP, start.reason, result.occurrences, result.winner)
    if start.cause is not None and start.cause.code in ("platform", "release", "variable", "gpu"):
        return Parse(UNKNOWN, None, None, f"the parse accepts {result.effective!r}, but {start.reason}",
                     result.occurrences, result.winner, start.cause)
    # the model's attention kind or the GPU decides: the parse's verdict stands, said with its caveat
    return Parse(result.outcome, result.effective, result.error, f"{result.reason} ({start.reason})",
                 result.occurrences, result.winner, result.cause)


def starts(engine: str | None, version: Version | None, dtype: str, platform: str | None = None,
           gpu=None) -> bool:
    """Known to start after the parse (to propose or suggest a dtype: never one that may not), on
    `gpu` when its Node's labels were read."""
    return engine != "vllm" or check(version, dtype, platform, gpu=gpu).verdict == STARTS


UNSAID = "$VLLM_ATTENTION_BACKEND"   # forced by a variable whose value the spec does not hold


def refuses(engine: str | None, version: Version | None, dtype: str, platform: str | None = None,
            gpu=None) -> bool:
    """Known to exit at start-up after the parse accepted it (every backend refuses it, or on `gpu`)."""
    return engine == "vllm" and check(version, dtype, platform, gpu=gpu).verdict == REFUSED


def forced_backend(env, tokens) -> str | None:
    """The backend a container forces: --attention-backend (the last one) or VLLM_ATTENTION_BACKEND
    (UNSAID when set from a Secret/ConfigMap the spec does not hold); None: the selection picks."""
    found = None
    texts = [getattr(t, "text", t) for t in tokens or ()]
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            continue
        if text.startswith(("--attention-backend=", "--attention_backend=")):
            found = text.split("=", 1)[1]
        elif text in ("--attention-backend", "--attention_backend") and i + 1 < len(texts) \
                and isinstance(texts[i + 1], str):
            found = texts[i + 1]
    if found is None and env is not None:
        value = env.lookup("VLLM_ATTENTION_BACKEND") if hasattr(env, "lookup") else env.get("VLLM_ATTENTION_BACKEND")
        if isinstance(value, str):
            found = value or None
        elif value is not None:
            found = UNSAID
    return found


# -- the GPU decides (engine/gpus.json: tools/enginedata/gpus_data.py) ---------------------------

_GPUS: dict | None = None


def gpu_facts(version: Version | None):
    """The release's per-compute-capability answers (a release newer than the data: the newest's),
    or None: not modelled (0.10.x and older choose V0/V1 by arg_utils' oracle)."""
    global _GPUS
    if _GPUS is None:
        from kubectl_kvcache.engine import knowledge
        _GPUS = {parse_version(v): facts for v, facts in knowledge.load("gpus").items()}
    if version is None or not _GPUS:
        return None
    if version in _GPUS:
        return _GPUS[version]
    ordered = sorted(_GPUS)
    return _GPUS[ordered[-1]] if version > ordered[-1] else None


def _answers(facts, cap: str, dtype: str) -> dict:
    per = facts["capabilities"].get(cap) or {}
    return {kind: (per.get(kind) or {}).get(dtype) for kind in ("standard", "mla")}


def depends_on_gpu(facts, dtype: str) -> bool:
    """The release answers differently for `dtype` on different compute capabilities."""
    seen = {tuple(a or (None,)) for cap in facts["capabilities"] for a in _answers(facts, cap, dtype).values()}
    return len(seen) > 1


def on_gpu(version: Version | None, dtype: str, gpu, backend: str | None = None) -> Start | None:
    """What the engine data says for `dtype` on the Node's GPU, or None: it does not decide (the
    release not modelled, a forced backend other than Triton, the model's attention decides)."""
    facts = gpu_facts(version)
    if facts is None or dtype not in next(iter(facts["capabilities"].values()))["standard"]:
        return None     # not modelled, or answered alike on every GPU (gpus_data.py leaves it out)
    if backend not in (None, "TRITON_ATTN", "triton_attn"):
        return None
    if not depends_on_gpu(facts, dtype):
        return None
    if gpu.compute is None:
        label = gpu.missing[0] if gpu.missing else "nvidia.com/gpu.compute.major"
        return Start(UNDECIDED, f"whether vLLM {version} starts with kv_cache_dtype {dtype!r} depends on the GPU's "
                                f"compute capability, and the Node's label {label} is absent",
                     Cause("gpu", label))
    cap = f"{gpu.compute[0]}.{gpu.compute[1]}"
    if cap not in facts["capabilities"]:
        return Start(UNDECIDED, f"compute capability {cap} ({gpu.named}) is not one the engine data reads vLLM "
                                f"{version}'s selection for", Cause("gpu", f"compute capability {cap}"))
    floor = facts.get("tritonFp8Floor")
    if backend is not None:         # TRITON_ATTN forced: only its fp8 floor is modelled
        if floor and dtype.startswith("fp8") and gpu.compute < tuple(int(p) for p in floor.split(".")):
            return Start(REFUSED, _fails(version, dtype, gpu, "TRITON_ATTN", facts))
        return None
    said = _answers(facts, cap, dtype)
    outcomes = {kind: (a[0] if a else None) for kind, a in said.items()}
    mla_note = ""
    if outcomes["standard"] in ("fails", "refused") and outcomes["mla"] is None:
        # an MLA model's backend on this GPU is not read (0.11.0 picks it by kernels' availability)
        outcomes["mla"] = outcomes["standard"]
        mla_note = " (a model without MLA; an MLA model's backend here is not in the engine data)"
    if all(o in ("fails", "refused") for o in outcomes.values()):
        kind, answer = next((k, a) for k, a in said.items() if a)
        if answer[0] == "fails":
            return Start(REFUSED, _fails(version, dtype, gpu, answer[1], facts) + mla_note)
        return Start(REFUSED, f"on {gpu.named}, none of vLLM {version}'s CUDA attention backends takes "
                              f"kv_cache_dtype {dtype!r}: the engine exits at start-up (\"No valid attention "
                              f"backend found\")")
    if all(o == "starts" for o in outcomes.values()):
        return Start(STARTS)
    if outcomes["standard"] == "starts" and outcomes["mla"] in ("fails", "refused"):
        return Start(UNDECIDED, f"on {gpu.named} it starts only on models without MLA (vLLM {version}'s MLA "
                                f"backends do not run {dtype!r} there)", Cause("start-up", "the model's attention"))
    if outcomes["standard"] in ("fails", "refused") and outcomes["mla"] == "starts":
        return Start(UNDECIDED, f"on {gpu.named} vLLM {version} does not start {dtype!r} on models without MLA; "
                                f"the model's attention decides", Cause("start-up", "the model's attention"))
    # the engine data does not decide it on this GPU (a backend's own limit not read, or the model
    # picks between lists): never proposed there, the parse's verdict stands with this caveat
    return Start(UNDECIDED, f"on {gpu.named} whether vLLM {version} starts {dtype!r} is not decided by the engine "
                            f"data (the backend picked there, or its own limit, is not read)",
                 Cause("start-up", "the GPU"))


def _fails(version, dtype, gpu, backend, facts) -> str:
    if dtype == "bfloat16":        # 0.24.0+: TritonAttentionImpl.__init__'s own guard
        floor = facts.get("tritonBf16Floor")
        return (f"on {gpu.named}, vLLM {version} picks the {backend} attention backend for kv_cache_dtype "
                f"'bfloat16', which needs compute capability {floor} or newer: the engine exits at start-up "
                f"(\"bfloat16 KV cache is not supported on ... bfloat16 requires SM{floor.replace('.', '')}+\")")
    floor = facts.get("tritonFp8Floor")
    if facts.get("tritonFp8Form") == "raises":
        said = ("\"FP8 KV cache is not supported by the Triton attention backend ... native FP8 (fp8e4nv) requires "
                f"SM{floor.replace('.', '')}+\"")
    else:
        said = "\"type fp8e4nv not supported in this architecture\""
    return (f"on {gpu.named}, vLLM {version} picks the {backend} attention backend for kv_cache_dtype {dtype!r}, "
            f"whose fp8 cache needs compute capability {floor} or newer: the engine exits at start-up ({said})")
