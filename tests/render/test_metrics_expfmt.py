"""-o prometheus read by the parser a Pushgateway and node-exporter's textfile collector read it
with: expfmt.TextParser of prometheus/common v0.70.0 (pushgateway handler/push.go at 0dc0ac8 and
node_exporter collector/textfile.go at 020ffc1 call TextToMetricFamilies on what they are
given), built from hack/expfmt with Go into the user cache dir once. It takes every family of
-o prometheus with the same samples prometheus_client reads, no timestamp (the textfile collector
skips a file that has one), and it refuses -o openmetrics on its `info` type: docs/metrics.md
says so, and this holds it true. Go is what the cluster tier builds its binaries with
(scripts/test-binaries); without it these tests skip, and fail with KVCACHE_REQUIRE_CLUSTER=1."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import metrics_text
import objects as o
from runcli import kvcache as run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "cluster.json")
MODULE = ROOT / "hack" / "expfmt"


def _go():
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go is None:
        if os.environ.get("KVCACHE_REQUIRE_CLUSTER") == "1":
            pytest.fail("no Go to build hack/expfmt with", pytrace=False)
        pytest.skip("no Go to build hack/expfmt with (scripts/test-binaries needs it too)")
    return go


@pytest.fixture(scope="module")
def reader():
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kubectl-kvcache" / "tools"
    sums = (MODULE / "go.sum").read_bytes() + (MODULE / "main.go").read_bytes() + (MODULE / "go.mod").read_bytes()
    import hashlib

    path = cache / f"expfmt-reader-{hashlib.sha256(sums).hexdigest()[:12]}"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-mod=readonly -buildvcs=false -trimpath")
        p = subprocess.run([_go(), "build", "-o", str(path) + ".tmp", "."], cwd=MODULE, env=env,
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
        os.replace(str(path) + ".tmp", path)
    return str(path)


def read(reader, text):
    p = subprocess.run([reader], input=text, capture_output=True, text=True, timeout=60)
    return p.returncode, (json.loads(p.stdout) if p.returncode == 0 else p.stderr)


EVIL = 'a"b\\c\n# EOF\nkubectl_kvcache_run_failed{command="verify"} 0\n}'


@pytest.mark.parametrize("command", ["verify", "check"])
@pytest.mark.parametrize("scene", ["example", "hostile"])
def test_the_pushgateways_parser_reads_what_prometheus_client_reads(reader, command, scene, tmp_path):
    path = EXAMPLE
    if scene == "hostile":
        path = str(tmp_path / "cluster.json")
        ns = "n" + EVIL
        Path(path).write_text(json.dumps(o.as_list(
            o.binding(ns, "fp8", ns=ns), o.deployment("md" + EVIL, binding_name=ns, ns=ns),
            o.md_pod("md-0", "md" + EVIL, o.vllm_argv("bf16"), ns=ns), o.binding("spare", "fp8", ns=ns),
            o.setting("true"))))
    code, out, err = run(command, "-A", "-f", path, "-o", "prometheus")
    assert code in (0, 1), err
    rc, families = read(reader, out)
    assert rc == 0, families
    ours = metrics_text.families("prometheus", out)
    assert {f["name"] for f in families} == {name for name, f in ours.items() if f.samples}   # empty ones dropped
    for f in families:
        assert f["type"] == "GAUGE" and f["help"] == ours[f["name"]].documentation
        assert not any(s["timestamp"] for s in f["samples"])
        assert sorted((sorted(s["labels"].items()), s["value"]) for s in f["samples"]) == \
            sorted((sorted(s.labels.items()), s.value) for s in ours[f["name"]].samples)
    if scene == "hostile":
        values = {v for f in families for s in f["samples"] for v in s["labels"].values()}
        assert "n" + EVIL in values
        failed = next(f for f in families if f["name"] == "kubectl_kvcache_run_failed")["samples"]
        assert failed == [{"labels": {"command": command}, "value": float(code != 0), "timestamp": False}]


def test_the_pushgateways_parser_refuses_openmetrics_on_its_info_type(reader):
    _, out, _ = run("verify", "-A", "-f", EXAMPLE, "-o", "openmetrics")
    rc, said = read(reader, out)
    assert rc == 1 and 'unknown metric type "info"' in said, said
    rc, _ = read(reader, out.replace("# TYPE kubectl_kvcache_build info\n", ""))
    assert rc == 0      # the rest (UNIT lines, `# EOF`) it skips as comments: the info type is the one refusal
