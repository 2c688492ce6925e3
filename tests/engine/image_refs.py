"""Image references as people write them, collected from public manifests, scripts and docs
(helm values, Kubernetes manifests, compose files, benchmark recipes launching vLLM or SGLang;
read through the code search index, December 2026), with what each runs: (reference, engine,
release or None, the release a pre-release leads up to or None, platform or None).

The expected columns are the image publishers' own conventions (the release workflows' tag
forms), not the reader's output. DEV rows were looked at while writing engine/images.py;
HELD_OUT rows were set aside before it and are run only by test_images.py's held-out test
(its rate is reported in the commit that adds them). Digests that excerpts cut short are
completed with a fixed hex string: the reader never looks inside a digest.
"""

DIGEST = "sha256:" + "6a43a2dfb6fb4681" * 4

DEV = [
    ("vllm/vllm-openai:latest", "vllm", None, None, "cuda"),
    ("vllm/vllm-openai:gemma4", "vllm", None, None, "cuda"),
    ("vllm/vllm-openai:v0.22.0", "vllm", "0.22.0", None, "cuda"),
    ("vllm/vllm-openai:v0.3.0", "vllm", "0.3.0", None, "cuda"),
    ("vllm/vllm-openai:v0.7.0", "vllm", "0.7.0", None, "cuda"),
    ("vllm/vllm-openai@" + DIGEST, "vllm", None, None, "cuda"),
    ("localhost:5000/vllm/vllm-openai:latest", "vllm", None, None, "cuda"),
    ("local-registry:5000/vllm-openai:v0.29.0", "vllm", "0.29.0", None, "cuda"),
    ("docker.ops.fzyun.io:5000/vllm/vllm-openai:latest", "vllm", None, None, "cuda"),
    ("lmsysorg/sglang:v0.4.9.post1-cu126", "sglang", "0.4.9.post1", None, "cuda"),
    ("lmsysorg/sglang:latest", "sglang", None, None, "cuda"),
    ("lmsysorg/sglang:v0.5.19-cu130", "sglang", "0.5.19", None, "cuda"),
    ("lmsysorg/sglang:dev-v4f-2dgx-v2", "sglang", None, None, "cuda"),
    ("lmsysorg/sglang:v0.5.0rc0-cu126", "sglang", None, "0.5.0", "cuda"),
    ("lmsysorg/sglang:v0.4.0", "sglang", "0.4.0", None, "cuda"),
    ("lmsysorg/sglang:v0.4.6.post5-rocm630", "sglang", "0.4.6.post5", None, "rocm"),
    ("lmsysorg/sglang:v0.4.6.post4-cu124", "sglang", "0.4.6.post4", None, "cuda"),
    ("lmsysorg/sglang:v0.4.10.post2-rocm630-mi30x-srt", "sglang", "0.4.10.post2", None, "rocm"),
    ("rocm/sgl-dev:v0.4.9.post2-rocm630-mi30x-20250716", "sglang", "0.4.9.post2", None, "rocm"),
    ("quay.io/ascend/vllm-ascend:v0.20.2rc1-a3", "vllm", None, "0.20.2", "npu"),
    ("quay.io/ascend/vllm-ascend:v0.13.0-a3", "vllm", "0.13.0", None, "npu"),
    ("m.daocloud.io/quay.io/ascend/vllm-ascend:v0.11.0rc0-a3", "vllm", None, "0.11.0", "npu"),
    ("quay.io/ascend/vllm-ascend:v0.18.0", "vllm", "0.18.0", None, "npu"),
    ("rocm/vllm:rocm7.0.0_vllm_0.11.2_20251210", "vllm", "0.11.2", None, "rocm"),
    ("rocm/vllm:rocm7.0_vllm_qwen3coder_next", "vllm", None, None, "rocm"),
    ("docker.io/rocm/vllm:latest", "vllm", None, None, "rocm"),
    ("gpustack/runner:cuda12.8-vllm0.10.2", "vllm", "0.10.2", None, "cuda"),
    ("gpustack/runner:cuda12.9-vllm0.25.1", "vllm", "0.25.1", None, "cuda"),
    ("gpustack/runner:cuda13.0-vllm0.29.0", "vllm", "0.29.0", None, "cuda"),
    ("gpustack/runner:cann9.0-910b-sglang0.5.18", "sglang", "0.5.18", None, "npu"),
    ("gpustack/runner:latest", None, None, None, None),
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.2", "vllm", "0.10.2", None, "cpu"),
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:latest", "vllm", None, None, "cpu"),
    ("intel/vllm:0.10.2-xpu", "vllm", "0.10.2", None, "xpu"),
    ("intel/vllm:0.21.0-ubuntu24.04", "vllm", "0.21.0", None, "xpu"),
    ("10.100.170.3:5000/vllm-gb10:0.28.0-sm121-cu133", None, None, None, None),
    ("reg.xxwolo.com/master/sglang:v0.4.6.post2", None, None, None, None),
]

HELD_OUT = [
    ("lmsysorg/sglang:v0.4.6.post1-cu124", "sglang", "0.4.6.post1", None, "cuda"),
    ("lmsysorg/sglang:v0.4.6.post6", "sglang", "0.4.6.post6", None, "cuda"),
    ("lmsysorg/sglang:v0.4.5.post2-rocm630", "sglang", "0.4.5.post2", None, "rocm"),
    ("lmsysorg/sglang:v0.4.7-rocm630", "sglang", "0.4.7", None, "rocm"),
    ("lmsysorg/sglang:v0.4.2.post3-rocm630", "sglang", "0.4.2.post3", None, "rocm"),
    ("lmsysorg/sglang:v0.5.2-rocm630", "sglang", "0.5.2", None, "rocm"),
    ("lmsysorg/sglang:v0.5.0rc0-rocm630-mi30x-srt", "sglang", None, "0.5.0", "rocm"),
    ("quay.io/ascend/vllm-ascend:v0.14.0rc1", "vllm", None, "0.14.0", "npu"),
    ("quay.io/ascend/vllm-ascend:v0.13.0rc1", "vllm", None, "0.13.0", "npu"),
    ("quay.io/ascend/vllm-ascend:v0.11.0-a3-openeuler", "vllm", "0.11.0", None, "npu"),
    ("quay.io/ascend/vllm-ascend:v0.22.1rc1-310p-openeuler", "vllm", None, "0.22.1", "npu"),
    ("intel/vllm:0.14.1-xpu", "vllm", "0.14.1", None, "xpu"),
    ("intel/vllm:0.21.0-xpu-int4moe", "vllm", "0.21.0", None, "xpu"),
    ("intel/vllm:0.17.0-xpu", "vllm", "0.17.0", None, "xpu"),
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.25.0", "vllm", "0.25.0", None, "cpu"),
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.9.2", "vllm", "0.9.2", None, "cpu"),
    ("gpustack/runner:cuda12.9-vllm0.17.1", "vllm", "0.17.1", None, "cuda"),
    ("vllm/vllm-openai:v0.8.5", "vllm", "0.8.5", None, "cuda"),
    ("192.168.2.42:5000/vllm-gb10:0.18.0", None, None, None, None),
    ("nvcr.io/nvidia/vllm:25.09-py3", "vllm", None, None, "cuda"),
    ("rocm/vllm-dev:nightly_main_20250811", "vllm", None, None, "rocm"),
    ("localhost:5000/vllm-openai:v0.6.3", "vllm", "0.6.3", None, "cuda"),
]
