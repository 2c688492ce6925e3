"""Positionals the engine's parser has no slot for: `vllm serve [MODEL]` takes one, SGLang's
launch_server none; a positional left after a --kv option's value is `unrecognized arguments`.
The slots come from each release's real parser (parsers.py); expectations here were checked
against the real parsers by tests/conformance."""

import pytest

from kubectl_kvcache.engine.predict import predict

VLLM = ["vllm", "serve"]
SGLANG = ["python3", "-m", "sglang.launch_server"]
API_SERVER = ["python3", "-m", "vllm.entrypoints.openai.api_server"]


def outcome(command, engine, version):
    p = predict({"name": "main", "image": "", "command": command}, engine, version)
    return p.outcome, p.error, p.effective


@pytest.mark.parametrize("command, engine, version, expected", [
    (VLLM + ["m", "--kv-cache-dtype", "fp8", "auto"], "vllm", "0.29.0", ("rejected", "unrecognized-argument", None)),
    (VLLM + ["m", "--kv-cache-dtype=fp8", "auto"], "vllm", "0.29.0", ("rejected", "unrecognized-argument", None)),
    (VLLM + ["m", "--port", "8000", "--kv-cache-dtype", "fp8"], "vllm", "0.29.0", ("ok", None, "fp8")),
    (VLLM + ["m", "extra", "--kv-cache-dtype", "fp8"], "vllm", "0.29.0", ("rejected", "unrecognized-argument", None)),
    # vllm serve moves `--model m` into the model slot (0.11.1+), so `auto` has none left
    (VLLM + ["--model", "m", "--kv-cache-dtype", "fp8", "auto"], "vllm", "0.29.0",
     ("rejected", "unrecognized-argument", None)),
    (VLLM + ["m", "--kv-cache-metrics", "yes"], "vllm", "0.18.0", ("rejected", "unrecognized-argument", None)),
    (SGLANG + ["--model-path", "m", "--kv-cache-dtype", "bf16", "auto"], "sglang", "0.5.18",
     ("rejected", "unrecognized-argument", None)),
    (SGLANG + ["Qwen/Qwen3-8B", "--model-path", "m", "--kv-cache-dtype", "bf16"], "sglang", "0.5.18",
     ("rejected", "unrecognized-argument", None)),
    (SGLANG + ["--model-path", "m", "--kv-cache-dtype", "bf16"], "sglang", "0.5.18", ("ok", None, "bf16")),
    # the api_server module takes an optional model positional from 0.10.0 (its real parser says so)
    (API_SERVER + ["--kv-cache-dtype", "fp8", "auto"], "vllm", "0.29.0", ("ok", None, "fp8")),
    (API_SERVER + ["--kv-cache-dtype", "fp8", "auto"], "vllm", "0.9.0", ("rejected", "unrecognized-argument", None)),
    # the classic $0 slip: the first word after the script is $0, so "$@" loses the flag
    (["sh", "-c", 'exec vllm serve m "$@"', "--kv-cache-dtype", "fp8"], "vllm", "0.29.0",
     ("rejected", "unrecognized-argument", None)),
    (["sh", "-c", 'exec vllm serve m "$@"', "sh", "--kv-cache-dtype", "fp8"], "vllm", "0.29.0", ("ok", None, "fp8")),
], ids=["vllm-stray-after-value", "vllm-stray-after-explicit", "vllm-value-of-other-option", "vllm-second-model",
        "vllm-model-slot-free", "vllm-stray-after-switch", "sglang-stray", "sglang-leading-positional",
        "sglang-model-path", "api-server-model-slot", "api-server-no-slot-before-0.10", "shell-dollar-zero-slip", "shell-dollar-zero-right"])
def test_positionals(command, engine, version, expected):
    assert outcome(command, engine, version) == expected
