"""The injection webhook's launch rules (engine/webhook.py), from the operator's
pkg/worker/webhooks/worker/pod_kv_cache_inject.go at 6678d71: checkLaunchArgs, launchEngine,
launchMatchesEngine, checkShellWrapper, scriptByPath."""

import pytest

from kubectl_kvcache.engine import launch_refusal, program_refusal

KEY = "kvcache.gpustack.ai/launch-args-forwarded"


@pytest.mark.parametrize("command, args, engine, forwarded, refused", [
    (["vllm", "serve", "m"], [], "vllm", None, ""),                          # launchEngine: vllm
    (["vllm"], ["serve", "m"], "vllm-ascend", None, ""),                     # launchMatchesEngine: the vLLM family
    (["python3", "-m", "sglang.launch_server"], ["--model-path", "m"], "sglang", None, ""),
    (["tini", "--", "vllm", "serve", "m"], [], "vllm", None, ""),            # a launcher it looks through
    ([], ["serve", "m"], "vllm", None, "args but no command"),               # the ENTRYPOINT is not visible
    ([], ["serve", "m"], "vllm", "true", ""),                                # ... unless declared forwarding
    ([], ["serve", "m"], "vllm", "yes", "must be \"true\""),                 # declaresLaunchArgsForwarding
    (["tini", "--"], [], "vllm", None, "no program after it"),
    (["vllm", "serve", "m"], [], "sglang", None, "starts vllm but the annotations select sglang"),
    (["python", "-m", "sglang.launch_server"], [], "sglang", None, "cannot identify"),   # only python3
    (["python3", "-m", "vllm.entrypoints.openai.api_server"], [], "vllm", None, "cannot identify"),
    (["sglang", "serve", "m"], [], "sglang", None, "cannot identify"),
    (["/opt/start-engine"], [], "vllm", "true", ""),                         # an author's declaration admits it
    (["sh", "-c", "vllm serve m"], [], "vllm", None, ""),                    # program_refusal's to refuse
])
def test_launch_refusal(command, args, engine, forwarded, refused):
    why, fix = launch_refusal(command, args, engine, forwarded, KEY)
    if not refused:
        assert (why, fix) == ("", "")
    else:
        assert refused in why and fix


def test_declared_forwarding_admits_env_split_and_scripts_never_a_shells_dash_c():
    # checkShellWrapper: insideOneString and scriptByPath yield to the declaration; `-c` does not
    assert program_refusal(["env", "-S", "vllm serve m"], "L")[0]
    assert program_refusal(["env", "-S", "vllm serve m"], "L", forwarded=True) == ("", "")
    assert program_refusal(["/app/run.sh"], "L")[0]
    assert program_refusal(["/app/run.sh"], "L", forwarded=True) == ("", "")
    assert program_refusal(["sh", "-c", "vllm serve m"], "L", forwarded=True)[0]
