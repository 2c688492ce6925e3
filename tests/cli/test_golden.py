"""Golden outputs: every command and every `-o` on examples/, byte for byte (stdout, stderr and
the exit code). They pin what users see while the code under them moves.

Regenerate after an intended change with KVCACHE_GOLDEN_UPDATE=1 (it rewrites the docs' output
samples too: tests/test_docs.py), then review the diff."""

import io
import os

import pytest

from kubectl_kvcache.cli import main
from kubectl_kvcache.render import formats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join("examples", "cluster.json")
GOLDEN = os.path.join(ROOT, "tests", "golden")

# kubectl's formats that take an argument: a template or spec every command's rows answer
ARGUMENTS = {"jsonpath": '{range .items[*]}{.kind}/{.metadata.name}{"\\n"}{end}',
             "jsonpath-file": os.path.join("examples", "kubectl", "rows.jsonpath"),
             "custom-columns": "NAMESPACE:.metadata.namespace,KIND:.kind,NAME:metadata.name,OUTCOME:{.outcome}",
             "custom-columns-file": os.path.join("examples", "kubectl", "columns.txt")}
CASES = {}
for command in formats.JUDGING:
    for fmt in formats.offered(command):        # every format the registry gives the command
        CASES[f"{command}-{fmt}"] = [command, "-A", "-f", EXAMPLE, "-o",
                                     f"{fmt}={ARGUMENTS[fmt]}" if formats.get(fmt).argument else fmt]
    CASES[f"{command}-sort-by"] = [command, "-A", "-f", EXAMPLE, "--sort-by", ".metadata.name"]
    CASES[f"{command}-ns-noheaders"] = [command, "-n", "llm-research", "-f", EXAMPLE, "--no-headers"]
    CASES[f"{command}-assume-off"] = [command, "-f", EXAMPLE, "--assume-setting", "off"]
    CASES[f"{command}-empty-ns"] = [command, "-n", "nowhere", "-f", EXAMPLE]
CASES["verify-pods"] = ["verify", "-n", "llm-prod", "-f", EXAMPLE, "llama-long-server-0", "deepseek-sgl-server-0"]
CASES["verify-pod-json"] = ["verify", "-n", "llm-prod", "-f", EXAMPLE, "qwen-chat-server-0", "-o", "json"]
CASES["check-strict"] = ["check", "-n", "llm-research", "-f", EXAMPLE, "--strict"]
CASES["verify-markdown-ns"] = ["verify", "-n", "llm-research", "-f", EXAMPLE, "-o", "markdown"]
CASES["check-junit-strict"] = ["check", "-n", "llm-research", "-f", EXAMPLE, "--strict", "-o", "junit"]
for fmt in ("text", "json", "yaml"):
    CASES[f"recover-{fmt}"] = ["recover", "sgl-fp8", "-n", "llm-prod", "-f", EXAMPLE, "-o", fmt]
CASES["admission-yaml"] = ["admission", "-A", "-f", EXAMPLE]
CASES["admission-ns-json-warn"] = ["admission", "-n", "llm-prod", "-f", EXAMPLE, "-o", "json",
                                   "--validation-actions", "Warn,Audit"]
CASES["recover-markdown"] = ["recover", "sgl-fp8", "-n", "llm-prod", "-f", EXAMPLE, "-o", "markdown"]
CASES["recover-replace"] = ["recover", "chat-fp8", "-n", "llm-prod", "-f", EXAMPLE, "--dtype", "fp8_e4m3",
                            "--strategy", "replace"]
CASES["recover-optins"] = ["recover", "research-bf16", "-f", EXAMPLE, "--dtype", "bfloat16"]
CASES["recover-refused"] = ["recover", "sgl-fp8", "-n", "llm-prod", "-f", EXAMPLE, "--dtype", "float16"]


@pytest.fixture(autouse=True)
def report_time(monkeypatch):
    """Reports say when they were made: fixed here (SOURCE_DATE_EPOCH) to the examples' snapshot time."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1773133200")      # 2026-03-10T09:00:00Z


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        code = main(argv, stdin=io.StringIO(""), stdout=out, stderr=err)
    finally:
        os.chdir(cwd)
    return f"$ kubectl kvcache {' '.join(argv)}\n--- exit {code}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    got = run(CASES[name])
    path = os.path.join(GOLDEN, name + ".txt")
    if os.environ.get("KVCACHE_GOLDEN_UPDATE"):
        with open(path, "w", encoding="utf-8", newline="") as f:     # as printed: -o csv's CRLF stays
            f.write(got)
    with open(path, encoding="utf-8", newline="") as f:
        assert got == f.read()
