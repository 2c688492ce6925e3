"""docs/rendered.md's GitHub Actions job, its check step run as written (bash, the plugin's
console command) on real rendered charts saved in tests/load/rendered/: the log it leaves is
valid SARIF 2.1.0 whose results point at the rendered file's lines, the step passes on
findings (exit 1) and stops the job on input it cannot read (exit 2)."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

import sarif_schema

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RENDERED = os.path.join(ROOT, "tests", "load", "rendered")


def _steps():
    with open(os.path.join(ROOT, "docs", "rendered.md"), encoding="utf-8") as f:
        text = f.read()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    (job,) = yaml.safe_load(block)["jobs"].values()
    return {s.get("name"): s for s in job["steps"]}


def _run_step(tmp_path, chart):
    """The documented check step in a checkout holding `chart` as the render step's output."""
    steps = _steps()
    render, check = steps["render the chart"]["run"], steps["check what it renders"]["run"]
    assert render.rstrip().endswith("> rendered.yaml")      # the check step reads what it wrote
    (tmp_path / "deploy").mkdir()
    shutil.copy(os.path.join(RENDERED, "bindings.yaml"), tmp_path / "deploy" / "bindings.yaml")
    shutil.copy(chart, tmp_path / "rendered.yaml")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kubectl-kvcache"         # the console command pip installs, on this interpreter
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kubectl_kvcache "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": ROOT}
    done = subprocess.run(["bash", "-e", "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    return done, json.loads((tmp_path / "kvcache.sarif").read_text())


@pytest.fixture(scope="module")
def schema():
    return sarif_schema.validator()


def test_the_documented_step_on_a_rendered_chart(schema, tmp_path):
    chart = os.path.join(RENDERED, "production-stack.yaml")
    done, log = _run_step(tmp_path, chart)
    assert done.returncode == 0, done.stderr          # findings: the step goes on to the upload
    assert not list(schema.iter_errors(log))
    (run,) = log["runs"]
    assert run["invocations"][0]["exitCode"] == 1
    with open(chart, encoding="utf-8") as f:
        starts = {(n.start_mark.line + 1) for n in yaml.compose_all(f) if n is not None}
    in_chart = [r["locations"][0]["physicalLocation"] for r in run["results"]
                if r["locations"][0].get("physicalLocation", {}).get("artifactLocation", {}).get("uri")
                == "rendered.yaml"]
    assert in_chart and all(p["region"]["startLine"] in starts for p in in_chart)
    assert any(r["level"] == "error" and r["ruleId"] == "injection-refused" for r in run["results"])


def test_the_documented_step_stops_on_a_render_it_cannot_read(schema, tmp_path):
    done, log = _run_step(tmp_path, os.path.join(RENDERED, "bad", "castai-vllm-noname.yaml"))
    assert done.returncode != 0 and done.stderr.startswith("error: rendered.yaml: Deployment")
    assert not list(schema.iter_errors(log))
    (run,) = log["runs"]
    assert run["results"] == [] and run["invocations"][0]["executionSuccessful"] is False
