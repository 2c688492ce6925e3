"""engine/templates: a --chat-template value needs no file only where the release's loader takes it
without one (the shipped engine/templates.json, held to the wheels by
tests/conformance/test_templates_data.py); a path is never decided by the plugin."""

from kubectl_kvcache.engine import knowledge, predict, templates
from kubectl_kvcache.engine.releases import parse_version

DATA = knowledge.load("templates")
PATH = "/models/tool_chat_template.jinja"


def _command(engine, version, value):
    if engine == "sglang":
        return ["python3", "-m", "sglang.launch_server", "--model-path", "m", "--chat-template", value]
    if parse_version(version) < parse_version("0.5.0"):
        return ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", "--chat-template", value]
    return ["vllm", "serve", "m", "--chat-template", value]


def _outcome(engine, version, value):
    p = predict({"name": "e", "image": "", "command": _command(engine, version, value)}, engine, version)
    return (p.parsed or p).outcome, (p.parsed or p).reason


def test_each_span_s_names_and_templates_are_decided_and_a_path_is_not():
    for engine, spans in DATA.items():
        for read, first, _ in spans:
            assert templates.needs_no_file(read, PATH) is (read["literal"] == "any")
            outcome, reason = _outcome(engine, first, PATH)
            if read["literal"] == "any":
                assert outcome == "ok", (engine, first, reason)
            else:
                assert outcome == "unknown" and "image or in a volume mounted there" in reason, (engine, first)
                assert ("after parsing, before" in reason) is (read["when"] == "after parsing"), (engine, first)
            for name in read["names"]:
                assert templates.needs_no_file(read, name)
                assert _outcome(engine, first, name)[0] == "ok", (engine, first, name)
            inline = "{{ messages }}"
            assert templates.needs_no_file(read, inline) is bool(read["literal"])


def test_a_value_the_pod_does_not_show_is_never_taken_as_needing_no_file():
    read = templates.reading("vllm", parse_version("0.3.3"))
    assert read is not None and read["literal"] == "any"
    assert not templates.needs_no_file(read, None) and not templates.needs_no_file(read, "a\0b")
    assert not templates.needs_no_file(read, "C:\\templates\\t.jinja")   # unicode_escape may refuse it
