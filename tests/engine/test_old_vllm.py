"""The old vLLM releases (0.5.x-0.9.0) on what real launch commands combine (issue 29), one case
per decision the generated data gives them, each outcome as the release's real entry point gave it
(tools/enginedata/oracle.py on the released wheel; the conformance tiers check thousands more):

- before 0.10 the tool-call (and, in 0.8.5-0.9.0, reasoning) parser names are checked against their
  registries inline in run_server, before the socket bind (vllm@0.9.0/vllm/entrypoints/openai/
  api_server.py); the oracle runs those statements, so a name the release does not register is
  REJECTED there as from 0.10, and `--tool-parser-plugin` (a file in the image, imported first)
  stays UNKNOWN;
- choices given as constants in the code that builds the parser, where no plugin runs before the
  parse (up to 0.7.0: vllm@0.6.5/vllm/engine/arg_utils.py `choices=get_args(TaskOption)`), are
  fixed: outside them REJECTED; from 0.8.5 AsyncEngineArgs.add_cli_args loads vllm.general_plugins
  first, so a value outside stays UNKNOWN;
- vLLM's own StoreBoolean Action (vllm@0.6.5/vllm/utils.py; nargs="?", const "True") takes
  `true`/`false` in any case and nothing else;
- `vllm serve` of 0.5.5-0.7.0 checks `args.model != EngineArgs.model` in vllm/scripts.py serve()
  before run_server: `--model` beside the positional model is read by the start-up checks.
"""

import pytest

from decisions import assert_decision

from kubectl_kvcache.engine import kvparse

SERVE = ["vllm", "serve", "m"]
API = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]
OK, REJECTED, UNKNOWN = kvparse.OK, kvparse.REJECTED, kvparse.UNKNOWN
TOOLS = ["--enable-auto-tool-choice", "--tool-call-parser"]

CASES = [
    # tool calling: the release's registry, checked in run_server before 0.10
    ("tools-registered-0.6.5", "0.6.5", SERVE + TOOLS + ["hermes"], OK, None),
    ("tools-unregistered-0.6.5", "0.6.5", SERVE + TOOLS + ["seed_oss"], REJECTED, "invalid tool call parser"),
    ("tools-unregistered-0.7.0-api-server", "0.7.0", API + TOOLS + ["qwen3_coder"], REJECTED,
     "invalid tool call parser"),
    ("tools-registered-later-0.8.5", "0.8.5", SERVE + TOOLS + ["deepseek_v3"], REJECTED, "invalid tool call parser"),
    ("tools-registered-0.9.0", "0.9.0", SERVE + TOOLS + ["deepseek_v3", "--kv-cache-dtype", "fp8"], OK, "fp8"),
    ("tools-unregistered-0.9.0", "0.9.0", API + TOOLS + ["glm47", "--kv-cache-dtype", "fp8"], REJECTED,
     "invalid tool call parser"),
    ("tools-parser-without-auto-choice-0.9.0", "0.9.0", SERVE + ["--tool-call-parser", "glm47"], OK, None),
    ("tools-plugin-file-0.8.5", "0.8.5", SERVE + TOOLS + ["mine", "--tool-parser-plugin", "/p.py"], UNKNOWN,
     "--tool-parser-plugin"),
    # reasoning parsers read by run_server's check from 0.9.0 (without --enable-reasoning)
    ("reasoning-unregistered-0.9.0", "0.9.0", SERVE + ["--reasoning-parser", "glm45"], REJECTED, "--reasoning-parser"),
    ("reasoning-registered-0.9.0", "0.9.0", SERVE + ["--reasoning-parser", "qwen3"], OK, None),
    # choices given as constants in the parser's code, no plugin before the parse
    ("task-outside-0.6.5", "0.6.5", SERVE + ["--task", "transcription"], REJECTED, "--task"),
    ("task-inside-0.6.5", "0.6.5", SERVE + ["--task", "embed"], OK, None),
    ("tool-parser-choices-0.6.0", "0.6.0", API + ["--tool-call-parser", "llama3_json"], REJECTED,
     "--tool-call-parser"),
    ("task-outside-0.8.5-plugins-first", "0.8.5", SERVE + ["--task", "bogus"], UNKNOWN, "--task"),
    # vllm.scripts' serve() refuses a --model other than EngineArgs' default (0.5.5-0.7.0): read
    # by the start-up checks with a value they were not probed with
    ("serve-model-option-0.6.5", "0.6.5", SERVE + ["--model", "x"], UNKNOWN, "--model"),
    ("serve-model-option-0.5.3", "0.5.3", SERVE + ["--model", "x"], OK, None),
    # vLLM's own StoreBoolean Action
    ("chunked-prefill-bare-0.6.5", "0.6.5", SERVE + ["--enable-chunked-prefill", "--kv-cache-dtype", "fp8"], OK,
     "fp8"),
    ("chunked-prefill-false-0.5.3", "0.5.3", SERVE + ["--enable-chunked-prefill", "FALSE"], OK, None),
    ("chunked-prefill-yes-0.7.0", "0.7.0", SERVE + ["--enable-chunked-prefill", "yes"], REJECTED,
     "--enable-chunked-prefill"),
]


@pytest.mark.parametrize("name,version,command,outcome,detail", CASES, ids=[c[0] for c in CASES])
def test_old_vllm_decisions(name, version, command, outcome, detail):
    assert_decision("vllm", version, command, outcome, detail)
