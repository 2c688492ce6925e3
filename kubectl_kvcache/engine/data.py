"""What each engine release accepts for --kv-cache-dtype and which `--kv...` options it has.

Pure data, read from the released engine packages (see docs/architecture.md, "Where engine knowledge comes from").
A new engine release is an edit here, never a code change. Each table is a list of
(first release, change) rows in release order; a release between two rows behaves like the
earlier row.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any, TypedDict

    class _ImageEntrypoint(TypedDict):
        engine: str | None
        entrypoint: tuple[str, ...]

    class ImageEntrypoint(_ImageEntrypoint, total=False):
        """One IMAGE_ENTRYPOINTS entry: "entrypoint_spans" (first or None, until, ENTRYPOINT or None) optional."""
        entrypoint_spans: list[tuple[str | None, str, tuple[str, ...] | None]]

# Releases the GPUStack Operator supports; used when a Pod's engine version cannot be known.
OPERATOR_MINIMUM = {"vllm": "0.29.0", "sglang": "0.5.18"}

# The first release that has --kv-cache-dtype at all.
FLAG_SINCE = {"vllm": "0.3.3", "sglang": "0.2.14"}

# --kv-cache-dtype values, exact and case-sensitive: (release, added, removed).
ACCEPTED_VALUES = {
    "vllm": [
        ("0.3.3", ("auto", "fp8_e5m2"), ()),
        ("0.4.1", ("fp8",), ("fp8_e5m2",)),
        ("0.4.3", ("fp8_e4m3", "fp8_e5m2"), ()),
        ("0.10.0", ("fp8_inc",), ()),
        ("0.11.0", ("bfloat16",), ()),
        ("0.11.1", ("fp8_ds_mla",), ()),
        ("0.18.0", ("float16",), ()),
        ("0.20.0", ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc",
                    "int8_per_token_head", "fp8_per_token_head", "nvfp4"), ()),
        ("0.25.0", ("int4_per_token_head",), ()),
        ("0.28.0", ("nvfp4_4over6",), ()),
        ("0.30.0", ("nvfp4_ds_mla",), ()),
        ("0.32.0", ("ultraquant_4bit",), ()),
        ("0.33.0", ("octave_k3v4", "octave_k3v3", "octave_k3v3_compact"), ()),
    ],
    "sglang": [
        ("0.2.14", ("auto", "fp8_e5m2"), ()),
        ("0.4.1.post6", ("fp8_e4m3",), ()),
        ("0.5.4", ("bf16", "bfloat16"), ()),
        ("0.5.4.post3", ("fp4_e2m1",), ()),
        ("0.5.16", ("mxfp8", "nvfp4", "fp4_mx_block16"), ()),
        ("0.5.21", (), ("fp4_e2m1",)),
    ],
}

# Every option of each release's parser, with its arity, and the positionals of each entry point:
# generated from the released wheels' own parsers (scripts/engine-data) into parsers.json, loaded
# on first use so that importing the plugin stays fast. ACCEPTED_VALUES above must equal what
# those parsers accept (tests/conformance checks it).
# Releases a user added without a new plugin release (`--engine-data FILE`, KVCACHE_ENGINE_DATA,
# ~/.local/share/kubectl-kvcache/engines/*.json: files `scripts/engine-data --release` writes)
# are checked and merged in by releasefile.add_releases; parsers() then answers with them.
def parsers() -> dict[str, dict[str, Any]]:
    return _MERGED if _MERGED is not None else builtin_parsers()


def builtin_parsers() -> dict[str, dict[str, Any]]:
    """The built-in data alone (parsers.json), never a merge with added releases."""
    from kubectl_kvcache.engine import knowledge
    return knowledge.load("parsers")


# {engine: its tables}: JSON, keyed by what scripts/engine-data writes (read generically by
# releasefile, so not a TypedDict). _MERGED: with the added releases merged in (None: there are none).
_MERGED: dict[str, dict[str, Any]] | None = None

# Parser behaviours that change with the release: (feature, first release).
FEATURES = {
    "vllm": {
        "underscores": "0.5.1",         # `_` -> `-` in the name part of every `--` token
        "config_file": "0.6.0",         # exact token `--config FILE` loads YAML placed before argv
        "dotted_json": "0.9.0",         # `--name.key value` becomes JSON for `--name`
        "dotted_single_dash": "0.10.0",  # ... and any `-` token with a `.` (so `-1.5` too)
        # ... with only the name before the first `.` rewritten (`_` -> `-`) and each value read as
        # JSON (vllm@0.10.0 vllm/utils/__init__.py FlexibleArgumentParser.parse_args); before it the
        # whole token's `_` and the value kept a string (vllm@0.9.0 vllm/utils.py)
        "dotted_typed": "0.10.0",
        "final_value_only": "0.33.0",   # only the final value is validated, at engine start
        "platform_values": "0.33.0",    # platform plugins (vLLM-Ascend) may register more values
        "serve_model_option": "0.11.1",  # `vllm serve ... --model M` becomes the model positional
        "serve_model_refused": "0.8.5",  # until serve_model_option: `vllm serve` dies on a `--model` token
    },
    "sglang": {
        "config_file": "0.5.3",
        "serve_model_alias": "0.5.12",  # `sglang serve` finds the model in --model as well as --model-path
    },
}

# The CPython whose argparse the model replays (kvparse): the conformance tier's oracle runs the
# real parsers on it. engine/pythons.json (generated) says what other Pythons do differently.
ARGPARSE_PYTHON = "3.11"

# The CPython minor releases an engine's official images run, as (first release, minors) rows.
# The patch level is never pinned (vLLM and gpustack/runner: 3.12 from deadsnakes, a vLLM 0.20
# image was seen with Ubuntu's 3.12.3; SGLang: 3.10 or 3.12), so every measured patch of a
# minor is a Python the image may run. vLLM's Dockerfile moved from 3.10 to 3.12 during 0.6.x
# (vllm-project/vllm Dockerfile: ARG PYTHON_VERSION); where the release is not pinned down both
# are listed: more Pythons can only mean UNKNOWN more often, never a wrong definite answer.
IMAGE_PYTHONS: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "vllm": [("0.3.3", ("3.10", "3.12")), ("0.7.0", ("3.12",))],
    "sglang": [("0.2.14", ("3.10", "3.12"))],
}

# Keys a --config YAML file may use for the dtype (informational: the file itself is not read).
CONFIG_KEYS = {"vllm": ("kv_cache_dtype", "kv-cache-dtype"), "sglang": ("kv-cache-dtype",)}

# How a container launches when its `command` is empty: the image's ENTRYPOINT, by repository
# (the last two path segments of the image name). `()` means "execs the argv it is given".
# `entrypoint_spans`: [first, until) release spans of another ENTRYPOINT (None: not pinned, so an
# args-only container of such a release is UNKNOWN), from vllm-project/vllm docker/Dockerfile's
# final stage: ["python3", "-m", "vllm.entrypoints.openai.api_server"] in the 0.8.5 era (commit
# 0000977eaf873be6a295cf73017976d49ca2fb9d; a maintainer quoting it in vllm#17172, 2025-05-04),
# ["vllm", "serve"] at dead20baf70df70580ecb093f82b0b7b8676e4f5 (0.11.1 on). The switch between
# them is not pinned to a release. (This was `vllm serve` from 0.5.3, which the real-command tier
# found wrong on the aibrix compose files of vllm-openai:v0.6.6.)
IMAGE_ENTRYPOINTS: dict[str, ImageEntrypoint] = {
    "vllm/vllm-openai": {"engine": "vllm", "entrypoint": ("vllm", "serve"),
                         "entrypoint_spans": [(None, "0.9.0", ("python3", "-m", "vllm.entrypoints.openai.api_server")),
                                              ("0.9.0", "0.11.1", None)]},
    "lmsysorg/sglang": {"engine": "sglang", "entrypoint": ()},
    "gpustack/runner": {"engine": None, "entrypoint": ("tini", "--")},
}

# Image tags that carry the engine version: regular expressions with a named group `version`,
# tried in order for the repository; `engine` names the engine when the tag says it.
IMAGE_VERSION_PATTERNS = [
    ("gpustack/runner", r"(?:^|-)(?P<engine>vllm|sglang)(?P<version>\d+(?:\.\d+){1,3}(?:\.?post\d+)?)(?:-|$)"),
    ("vllm/vllm-openai", r"^v?(?P<version>\d+(?:\.\d+){1,3}(?:\.?post\d+)?)(?:$|-)"),
    ("ascend/vllm-ascend", r"^v?(?P<version>\d+(?:\.\d+){1,3}(?:\.?post\d+)?)(?:$|-)"),
    ("lmsysorg/sglang", r"^v?(?P<version>\d+(?:\.\d+){1,3}(?:\.?post\d+)?)(?:$|-)"),
]

# How people name the engines' images (engine/images.py reads a reference with these): the
# repository (its last path segments, whatever registry or mirror path precedes them), the engine
# it runs, its platform unless the tag says another, and how its tag carries the release:
#   "lead": the tag starts with the release (`v0.10.2`, `0.5.4.post3-cu126`, `v0.9.1rc1-a3`);
#   "runner": gpustack/runner's `<backend><runtime>[-<variant>]-<engine><release>`
#             (SynthesizeModelDeploymentImage, controllers/worker/model_deployment_image.go);
#   "embedded": `<engine>_<release>` inside the tag (rocm/vllm:rocm6.3.1_vllm_0.8.5_20250521).
# From the images' own publishers: vllm-project/vllm (docker/Dockerfile*, the release workflow's
# tags), sgl-project/sglang (docker/*.Dockerfile, the release workflow's tags), vllm-project/vllm-ascend,
# ROCm/vllm, gpustack/runner; checked against the reference table in tests/engine/image_refs.py.
IMAGE_FAMILIES: list[tuple[str, str | None, str | None, str]] = [
    ("gpustack/runner", None, None, "runner"),
    ("vllm/vllm-openai", "vllm", "cuda", "lead"),
    ("q9t5s3a7/vllm-cpu-release-repo", "vllm", "cpu", "lead"),
    ("q9t5s3a7/vllm-arm64-cpu-release-repo", "vllm", "cpu", "lead"),
    ("ascend/vllm-ascend", "vllm", "npu", "lead"),
    ("intel/vllm", "vllm", "xpu", "lead"),
    ("rocm/vllm", "vllm", "rocm", "embedded"),
    ("rocm/vllm-dev", "vllm", "rocm", "embedded"),
    ("lmsysorg/sglang", "sglang", "cuda", "lead"),
    ("rocm/sgl-dev", "sglang", "rocm", "lead"),
]

# What a tag's suffix words say about the platform (`-cu126`, `-rocm630`, `-mi30x`, `-cpu`, `-xpu`,
# `-910b`, `-a3`, `-npu`, `cann8.1`), and gpustack/runner's backend tokens
# (model_deployment_image.go: modelDeploymentBackends): cann is Ascend's npu. Tried in order.
IMAGE_PLATFORM_WORDS: list[tuple[str, str]] = [
    (r"^cu\d+", "cuda"), (r"^cuda\d*", "cuda"), (r"^rocm\d*", "rocm"), (r"^mi\d+x?$", "rocm"),
    (r"^cpu$", "cpu"), (r"^xeon$", "cpu"), (r"^xpu$", "xpu"), (r"^npu$", "npu"), (r"^cann\d*", "npu"),
    (r"^910[bc]?$", "npu"), (r"^a[23]$", "npu"), (r"^310p$", "npu"), (r"^ascend$", "npu"),
]

# gpustack/runner backends that are none of the five platforms the plugin names
# (model_deployment_image.go: modelDeploymentBackends): the accelerator's own stack.
RUNNER_OTHER_BACKENDS = ("maca", "musa", "corex", "dtk", "hggc")

# How an argv reaches the engine's parser: `program subcommand` pairs -> (engine, entry point) and
# `python -m` modules -> (engine, required subcommand or None, entry point). The entry point names
# the parser in parsers.json (its options and positionals) and how the engine prepares the argv.
ENTRY_PROGRAMS = {("vllm", "serve"): ("vllm", "serve"), ("sglang", "serve"): ("sglang", "sglang_serve")}
ENTRY_MODULES = {
    "vllm.entrypoints.openai.api_server": ("vllm", None, "api_server"),
    "vllm.entrypoints.cli.main": ("vllm", "serve", "serve"),
    "sglang.launch_server": ("sglang", None, "launch_server"),
}

# Programs that run the rest of their argv as the real command. `value_options` take the next
# token; `refuse` options make the argv undecidable; `assignments` drops NAME=value words;
# `operands` is how many non-option words precede the command (`unless` an option replaces it).
WRAPPERS = {
    "exec": {},
    "nohup": {},
    "busybox": {},
    "toybox": {},
    "env": {"value_options": ("-u", "--unset", "-C", "--chdir"), "assignments": True,
            "refuse": ("-S", "--split-string")},
    "tini": {"value_options": ("-p", "-e")},
    "dumb-init": {"value_options": ("-r", "--rewrite")},
    "numactl": {"value_options": ("-N", "-m", "-C", "-p", "-i", "-P", "--cpunodebind", "--membind",
                                  "--physcpubind", "--preferred", "--interleave")},
    "taskset": {"value_options": ("-c", "--cpu-list"), "operands": 1, "unless": ("-c", "--cpu-list")},
    "timeout": {"value_options": ("-s", "-k", "--signal", "--kill-after"), "operands": 1},
    "stdbuf": {"value_options": ("-i", "-o", "-e")},
    "chrt": {"operands": 1},
    "nice": {"value_options": ("-n", "--adjustment")},
}

# Shells whose `-c` script the plugin reads (and the injection webhook refuses to append to).
SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh"})

# The wrappers the operator's injection webhook looks through to find the program it appends to
# (operator.md); the rest of WRAPPERS only the plugin looks through.
WEBHOOK_LOOKS_THROUGH = ("env", "tini", "dumb-init", "busybox", "toybox", "timeout")

# Spellings that mean the same cache format, most portable first: the fix for a rejected
# spelling names the first of these every engine involved accepts. (On CUDA vLLM's `fp8` is
# the e4m3 format.)
SAME_FORMAT = {
    "bf16": ("bfloat16",),
    "bfloat16": ("bf16",),
    "fp8": ("fp8_e4m3",),
    "fp8_e4m3": ("fp8",),
    "fp16": ("float16",),
    "half": ("float16",),
}

# Python options that take the next token (besides -m and -c, which end the options).
PYTHON_VALUE_OPTIONS = ("-X", "-W", "--check-hash-based-pycs")
