"""scripts/engine-data --release: the file it writes from a release's real wheel is the package's
own data of that release (so an added release is judged exactly as a built-in one would be),
and the plugin reads it back to the same profile."""

import json
import os
import subprocess
import sys

import pytest

import enginefiles
from kubectl_kvcache.engine import add_releases, profile
from kubectl_kvcache.engine.releases import parse_version

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import wheels  # noqa: E402


@pytest.mark.parametrize("engine,version", [("vllm", "0.33.0"), ("sglang", "0.5.23"), ("vllm", "0.20.0")])
def test_the_written_file_is_the_release_as_built_in(tmp_path, engine, version):
    if wheels.cached(engine, version) is None and os.environ.get("KVCACHE_REQUIRE_CONFORMANCE") != "1":
        pytest.skip(f"{engine}=={version} is not in the engine cache: run scripts/engine-wheels")
    out = tmp_path / f"{engine}-{version}.json"
    done = subprocess.run([os.path.join(ROOT, "scripts", "engine-data"), "--release", f"{engine}=={version}",
                           "--output", str(out)], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHON=sys.executable))
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["data"] == enginefiles.release_slice(engine, version)["data"]
    before = profile(engine, parse_version(version))
    try:
        add_releases([(str(out), doc)])
        after = profile(engine, parse_version(version))
        assert after.added and after.accepted == before.accepted and after.table == before.table
        assert after.choices == before.choices and after.entry_positionals == before.entry_positionals
    finally:
        add_releases([])
