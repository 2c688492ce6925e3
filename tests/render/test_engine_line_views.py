"""The engine's own words in every view that shows a cause (issue 48 item 6), and what --observe
read in the default table. A crash-looping SGLang 0.5.18 replica whose previous log is the
release's own argparse output (its real parser, tests/cluster/engine_lines.py: usage, then
`launch_server.py: error: argument --kv-cache-dtype: invalid choice: 'fp8' (choose from ...)`),
served through the real client by the loopback fake API server. Each format must carry that
line as the engine wrote it (escaped for the format), not only the plugin's paraphrase; a line
longer than what is shown is cut with a visible `…`."""

import csv
import html
import io
import json
import os
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

import objects as o
from kubectl_kvcache.cli import main
from kubectl_kvcache.engine.words import MAX_LINE

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cluster"))
import engine_lines  # noqa: E402  (tests/cluster: the engines' own output, from the cached wheels)

VERSION = "0.5.18"
FORMATS = ("wide", "csv", "describe", "markdown", "junit", "sarif", "json", "yaml")


def _rejection(value):
    try:
        stderr, code = engine_lines.sglang_rejection(VERSION, ["--model-path", "Qwen/Qwen3-8B",
                                                               "--kv-cache-dtype", value])
    except engine_lines.Unavailable as exc:         # CI forbids skips: the cache is part of the setup
        pytest.fail(f"sglang=={VERSION} is not in the engine cache (scripts/engine-wheels): {exc}")
    assert code == 2
    return stderr


def listing(items):
    return {"kind": "List", "metadata": {"resourceVersion": "10"}, "items": items}


def crashed_pod(name, dtype):
    pod = o.md_pod(name, "sgl", o.sglang_argv(dtype), image=f"lmsysorg/sglang:v{VERSION}", exit_code=2)
    pod["spec"]["nodeName"] = "gpu-node-7"
    return pod


def scene(dtype, previous):
    pods = [crashed_pod("sgl-server-0", dtype)]

    def route(req):
        path, query = req["path"], req["query"]
        if path.endswith("/log"):
            if query.get("previous") == "true":
                return 200, {"Content-Type": "text/plain"}, previous.encode()
            return 400, {}, {"kind": "Status", "code": 400, "message": "not asked for"}
        if path.endswith("/modeldeployments"):
            return 200, {}, listing([o.deployment("sgl", engine="SGLang", version=VERSION, binding_name="b1")])
        if path.endswith("/kvcachepoolbindings"):
            return 200, {}, listing([o.binding("b1", dtype)])
        if path.endswith("/pods"):
            return 200, {}, listing(pods)
        if path.startswith("/api/v1/namespaces/") and path.count("/") == 4:
            return 200, {}, {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "team"}}
        return 200, {}, listing([])
    return route


def run(fake_server, route, *argv):
    fake = fake_server(route, namespace="team")
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--kubeconfig", fake.kubeconfig], stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def shown_lines(fmt, out):
    """Every piece of text the format gives a reader, decoded as its reader decodes it."""
    if fmt in ("wide", "describe"):
        return [out.replace("\\x20", " ")]
    if fmt == "csv":
        return [cell for row in csv.reader(io.StringIO(out)) for cell in row]
    if fmt == "markdown":
        return [html.unescape(out)]
    if fmt == "junit":
        root = ET.fromstring(out)
        return [e.get("message") or "" for e in root.iter("failure")] + [e.text or "" for e in root.iter("failure")]
    if fmt == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        return [r["message"]["text"] for r in results] + [str(r.get("properties", {}).get("engineSaid"))
                                                         for r in results]
    data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    return [i.get("exitCause", {}).get("line", "") for i in data["items"]]


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_engines_own_line_is_in_every_view(fake_server, fmt):
    previous = _rejection("fp8")
    said = previous.rstrip("\n").splitlines()[-1]       # argparse's own `prog: error: ...` line
    assert said.startswith("launch_server.py: error: argument --kv-cache-dtype: invalid choice: 'fp8'")
    assert len(said) <= MAX_LINE                          # shown whole
    code, out, err = run(fake_server, scene("fp8", previous), "verify", "-o", fmt)
    assert code == 1 and "Traceback" not in err, err
    texts = shown_lines(fmt, out)
    assert any(said in t for t in texts), (fmt, out[:3000])
    if fmt == "junit":      # the failure's message and its body both say it
        assert said in texts[0] and said in texts[1]


@pytest.mark.parametrize("fmt", ("wide", "csv", "markdown", "junit", "sarif"))
def test_a_long_line_is_cut_with_a_visible_mark(fake_server, fmt):
    value = "fp8" + "x" * 400          # the release's parser echoes the refused value whole
    previous = _rejection(value)
    said = previous.rstrip("\n").splitlines()[-1]
    assert len(said) > MAX_LINE
    code, out, err = run(fake_server, scene(value, previous), "verify", "-o", fmt)
    assert code == 1, err
    head = said[:MAX_LINE - 1]
    texts = shown_lines(fmt, out)
    assert any(head + "…" in t for t in texts), (fmt, out[:2000])
    assert not any(said in t for t in texts)


def test_wide_shows_the_node_and_the_line_not_a_dash(fake_server):
    previous = _rejection("fp8")
    said = previous.rstrip("\n").splitlines()[-1]
    code, out, err = run(fake_server, scene("fp8", previous), "verify", "-o", "wide")
    header, row = out.splitlines()[:2]
    heads = header.split()
    assert "NODE" in heads and row.split()[heads.index("NODE")] == "gpu-node-7"
    assert row.split()[heads.index("EXIT")] == "2"
    assert row.replace("\\x20", " ").endswith(said)            # CAUSE: free text, last
    code, out, err = run(fake_server, scene("fp8", previous), "verify", "-o", "json")
    assert json.loads(out)["items"][0]["node"] == "gpu-node-7"


def running_scene(log):
    pod = o.md_pod("sgl-server-0", "sgl", o.sglang_argv("fp8_e4m3"), image=f"lmsysorg/sglang:v{VERSION}")
    pod["status"]["containerStatuses"] = [{"name": "main", "ready": True, "restartCount": 0, "state": {"running": {}}}]

    def route(req):
        path = req["path"]
        if path.endswith("/log"):
            return 200, {"Content-Type": "text/plain"}, log.encode()
        if path.endswith("/modeldeployments"):
            return 200, {}, listing([o.deployment("sgl", engine="SGLang", version=VERSION, binding_name="b1")])
        if path.endswith("/kvcachepoolbindings"):
            return 200, {}, listing([o.binding("b1", "fp8_e4m3")])
        if path.endswith("/pods"):
            return 200, {}, listing([pod])
        if path.startswith("/api/v1/namespaces/") and path.count("/") == 4:
            return 200, {}, {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "team"}}
        return 200, {}, listing([])
    return route


def test_observe_shows_what_it_read_in_the_default_table(fake_server):
    """--observe adds OBSERVED beside EFFECTIVE (kubectl's -L adds a column when asked); without
    it the default columns are as they were."""
    log = engine_lines.sglang_startup_log(VERSION, ["--model-path", "Qwen/Qwen3-8B", "--kv-cache-dtype", "fp8_e4m3"])
    code, out, err = run(fake_server, running_scene(log), "verify", "--observe")
    header, row = out.splitlines()[:2]
    assert header.split() == ["POD", "BINDING", "EXPECTED", "EFFECTIVE", "OBSERVED", "STATUS"], out
    assert row.split() == ["sgl-server-0", "b1", "fp8_e4m3", "fp8_e4m3", "fp8_e4m3", "OK"], out
    code, out, err = run(fake_server, running_scene(log), "verify")
    assert out.splitlines()[0].split() == ["POD", "BINDING", "EXPECTED", "EFFECTIVE", "STATUS"]
    # a line of the report's format that does not close (cut where it was written) is not read:
    # the default table says so, never a blank or the default
    cut = log.rstrip("\n")[:200] + "\n"
    code, out, err = run(fake_server, running_scene(cut), "verify", "--observe")
    header, row = out.splitlines()[:2]
    assert row.split()[header.split().index("OBSERVED")] == "<not-read>", out


def test_observed_cell_words():
    """A conflict is never shown as one of its values; nothing read is `-`."""
    from kubectl_kvcache.engine.words import Observed
    from kubectl_kvcache.judge.verify import Item
    from kubectl_kvcache.render import verify as view

    item = Item("ns", "p", "main", None, None, "vllm", "0.18.0", "b", "fp8", "fp8", "OK", "")
    cell = view.OBSERVED.cell
    assert cell(item, False) == "-"
    item.observed = Observed("fp8", None, "log", "non-default-args", "x",
                             conflict="its reports disagree: the args line (its log) says fp8; /metrics says auto")
    assert cell(item, False) == "<conflict>"
    item.observed = Observed(None, None, "log", "", "x", unread=("cut",))
    assert cell(item, False) == "<not-read>"
    item.observed = Observed("fp8", None, "log", "non-default-args", "x")
    assert cell(item, False) == "fp8"
