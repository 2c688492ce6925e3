"""No internal error on anything a tenant can write (issue 47): image references (nightly and
moving tags, pre-releases, .postN, platform prefixes, digests, odd unicode digits), engine
versions and argv tokens, through the real entry point's `verify` and `check` on saved objects.
Whatever they say, the run ends with a verdict (exit 0 or 1) or one `error:` line about the
input (exit 2), never an internal error or a traceback.

The image forms are those real engine images carry (Docker Hub's vllm/vllm-openai: v0.8.5,
nightly-<commit>, latest; lmsysorg/sglang: v0.4.6.post1-cu124; gpustack/runner's
cuda12.9-vllm0.29.0), and hypothesis draws around them."""

import io
import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import objects as o
from kubectl_kvcache.cli import main

REPOSITORIES = ["vllm/vllm-openai", "docker.io/vllm/vllm-openai", "registry.local:5000/vllm-openai",
                "lmsysorg/sglang", "gpustack/runner", "ascend/vllm-ascend", "rocm/vllm", "ghcr.io/acme/vllm",
                "vllm-openai", ""]
# nightly tags as people pin them in public Dockerfiles and scripts (vLLM's per-commit nightly images)
TAGS = ["nightly-7f1a5398e9610d96c473931a26c0e12bbe0d0423", "nightly-d223c90", "nightly-aarch64", "nightly",
        "latest", "v0.8.5rc1", "0.8.5.post1",
        "cu121-0.6.0", "v0.10.1.1", "v0.4.6.post1-cu124", "cuda12.9-vllm0.29.0", "cuda12.9-vllm0.8.5rc1",
        "cuda-sglang0.5.4.dev3", "v0.9.0.dev", "v1", "v99.0.0", "0.0.0", "v0.29.0-²", "v٣.٤.٥", "v０.８.５",
        "vllm_0.11.2_20251210", "rocm7.0.0_vllm_0.11.2_20251210", "v0.6.3.post1+cu118", "v0.5.4.post3", ""]
DIGITS = st.sampled_from(["0", "1", "9", "²", "٣", "０", "𝟘", "١٢", "⁵", "½"])


@st.composite
def tags(draw):
    base = draw(st.sampled_from(TAGS))
    if draw(st.booleans()):
        pieces = draw(st.lists(st.one_of(DIGITS, st.sampled_from([".", "-", "_", "v", "rc", "post", "dev", "+"]),
                                         st.text(max_size=3)), max_size=8))
        base = draw(st.sampled_from(["", base])) + "".join(pieces)
    return base


@st.composite
def images(draw):
    ref = draw(st.sampled_from(REPOSITORIES))
    tag = draw(tags())
    if tag:
        ref += ":" + tag
    if draw(st.booleans()):
        ref += "@sha256:" + draw(st.sampled_from(["3f5ad92f63e3f4b0073cca935a976d4cbf2a21e22cf06a95fd6df47759e10e04",
                                                  "0" * 64, "z", "ffff"]))
    return ref


VERSIONS = st.one_of(st.none(), st.sampled_from(["0.29.0", "0.8.5rc1", "nightly", "latest", "0.5.4.post3", "²",
                                                  "0.٣.0", "v0.11.2", "1e9", "0.0", ""]), tags())
TOKENS = st.one_of(st.sampled_from(["--kv-cache-dtype", "--kv-cache-dtype=fp8", "fp8", "auto", "fp8_e5m2", "--port",
                                    "--port=²", "²", "٣", "8000", "65536", "0", "-1", "--port=8001", "--model",
                                    "--served-model-name", "kv_cache_dtype=fp8", "$(VAR)", "--config", "x.yaml",
                                    "--hf-overrides", '{"a": 1}', "--", "-", "serve", "vllm", "sh", "-c"]),
                   st.text(max_size=12))


def _run(command, objects):
    out, err = io.StringIO(), io.StringIO()
    code = main([command, "-f", "-", "-o", "json"], stdin=io.StringIO(json.dumps(o.as_list(*objects))),
                stdout=out, stderr=err)
    return code, err.getvalue()


def _holds(objects):
    for command in ("verify", "check"):
        code, err = _run(command, objects)
        assert "internal error" not in err and "Traceback" not in err, (command, err)
        assert code in (0, 1, 2), (command, code, err)
        if code == 2:
            assert err.count("error:") == 1, err


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(image=images(), version=VERSIONS, engine=st.sampled_from(["vLLM", "SGLang", "vllm", "TensorRT", ""]),
       tokens=st.lists(TOKENS, max_size=6), dtype=st.sampled_from(["fp8", "auto", "fp8_e5m2", "bfloat16"]),
       crashed=st.booleans(), role_image=st.booleans())
# the case that ended `verify --observe` with TypeError ('>=' between None and Version): a nightly
# tag, no declared version, no --kv-cache-dtype yet (the MISSING/WILL_REJECT judgement)
@example(image="vllm/vllm-openai:nightly-7f1a5398e9610d96c473931a26c0e12bbe0d0423", version=None, engine="vLLM",
         tokens=[], dtype="fp8", crashed=False, role_image=True)
def test_no_internal_error_on_any_image_version_or_argv(image, version, engine, tokens, dtype, crashed, role_image):
    argv = ["vllm", "serve", "Qwen/Qwen3-8B", *tokens] if engine.lower() != "sglang" else \
        ["python3", "-m", "sglang.launch_server", "--model-path", "m", *tokens]
    md = o.deployment("md", engine=engine, version=version, binding_name="b1", image=image if role_image else None)
    pod = o.md_pod("md-server-0", "md", argv, image=image, exit_code=1 if crashed else None)
    injected = o.injected_pod("free-0", "b1", engine=engine,
                              containers=[o.container("main", command=argv, image=image)])
    _holds([o.binding("b1", dtype), md, pod, injected])
