"""kubectl_kvcache/engine/templates.json (issue 52 item 2) against the released code.

1. Each release of this run's slice (releases.TIER) reads, in the shipped spans, what
   tools/enginedata/templates_data.py reads from its cached wheel (ast of its own loader).
2. Independently of that reader: SGLang's registered names are the release's own conversation
   module run (its `chat_templates` after the module's register_conv_template calls; its imports
   of the rest of sglang stood in); vLLM's data agrees with the release's real entry point
   (validate_parsed_serve_args included): a path that is not there dies there exactly when the
   data says the release checks it after parsing, each built-in name and a template in the argv
   are accepted; and the plugin says so, never definite about a path.
"""

import json
import os
import subprocess
import sys

import pytest

import templates_data  # noqa: E402  (tools/enginedata: conftest.py puts it on the path)
import wheels  # noqa: E402
from releases import RELEASES as EVERY, TIER  # noqa: E402

from kubectl_kvcache.engine import knowledge, predict, templates
from kubectl_kvcache.engine.releases import parse_version

SHIPPED = knowledge.load("templates")
MISSING = "/nonexistent-kvcache-template/chat.jinja"
INLINE = "{% for m in messages %}{{ m.content }}{% endfor %}"

# run a release's conversation module with its sglang imports stood in: prints its registry
CONVERSATION_RUN = r"""
import importlib.util, json, sys, types
class Stub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: ""
for mod in ("sglang", "sglang.srt", "sglang.srt.utils", "sglang.srt.entrypoints", "sglang.srt.entrypoints.openai",
            "sglang.srt.entrypoints.openai.protocol", "sglang.srt.openai_api", "sglang.srt.openai_api.protocol",
            "sglang.srt.multimodal", "sglang.srt.multimodal.mm_utils", "sglang.srt.managers"):
    sys.modules[mod] = Stub(mod)
spec = importlib.util.spec_from_file_location("conversation", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps(sorted(module.chat_templates)))
"""


def _cached(engine, version):
    root = wheels.cached(engine, version)
    if root is None:
        pytest.skip(f"{engine} {version} is not cached (scripts/engine-wheels)")
    return root


def test_the_shipped_spans_cover_every_release_and_equal_the_wheels():
    for engine, versions in EVERY.items():
        spans = SHIPPED[engine]
        assert spans[0][1] == versions[0] and spans[-1][2] is None
        assert all(a[2] == b[1] for a, b in zip(spans, spans[1:]))
    read = {"vllm": templates_data.vllm_release, "sglang": templates_data.sglang_release}
    for engine, versions in TIER.items():
        for version in versions:
            got = read[engine](_cached(engine, version))
            assert templates.reading(engine, parse_version(version)) == got, \
                f"{engine} {version}: templates.json differs from the wheel: run scripts/engine-data --templates --write"


@pytest.mark.parametrize("version", sorted(set(TIER["sglang"]), key=parse_version))
def test_sglang_names_are_the_release_s_own_registry(version):
    root = _cached("sglang", version)
    rel = next(r for r in ("sglang/srt/parser/conversation.py", "sglang/srt/conversation.py")
               if os.path.exists(os.path.join(root, r)))
    done = subprocess.run([sys.executable, "-c", CONVERSATION_RUN, os.path.join(root, rel)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == templates.reading("sglang", parse_version(version))["names"]


VLLM = sorted({v for v in TIER["vllm"]} | {"0.4.0", "0.6.2", "0.6.3", "0.13.0", "0.34.0"}, key=parse_version)


@pytest.mark.parametrize("version", VLLM)
def test_vllm_data_is_what_the_release_s_entry_point_does(oracles, version):
    _cached("vllm", version)
    read = templates.reading("vllm", parse_version(version))
    entry = "serve" if parse_version(version) >= parse_version("0.5.0") else "api_server"
    head = ["m"] if entry == "serve" else ["--model", "m"]
    launcher = ["vllm", "serve"] if entry == "serve" else ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    try:
        oracle = oracles.get("vllm", version)

        def real(value):
            got = oracle.ask({"entry": entry, "argv": head + ["--chat-template", value]})
            assert got["outcome"] in ("ok", "dies"), (version, value, got)
            return got

        def mine(value):
            p = predict({"name": "e", "image": "", "command": launcher + head + ["--chat-template", value]},
                        "vllm", version)
            return (p.parsed or p).outcome

        assert real(MISSING)["outcome"] == ("dies" if read["when"] == "after parsing" else "ok"), version
        assert mine(MISSING) == ("ok" if read["literal"] == "any" else "unknown"), version
        assert real(INLINE)["outcome"] == "ok" and mine(INLINE) == "ok", version
        for value in read["names"]:
            # the cache keeps a wheel's .py files only, so the real check, looking the name up in the
            # package's own chat_templates folder, finds no file here; the wheel ships it (its zip
            # listing, read with rangewheel's range requests: vLLM 0.13.0 and 0.34.0 hold every name
            # registry.py gives). What is held: the release looks there, and nowhere but the argv else.
            got = real(value)
            builtin = os.path.join(wheels.cached("vllm", version), "vllm", "transformers_utils", "chat_templates", value)
            assert got["outcome"] == "ok" or builtin in got.get("error", ""), (version, value, got)
            assert mine(value) == "ok", (version, value)
    finally:
        oracles.close_one("vllm", version)
