"""hack/celcost built with Go for a test: the Kubernetes CEL library of the pinned release (the
CEL cost of a policy on a request) and the type checker kube-controller-manager runs
(`typecheck`). Skips when Go is not installed; its modules come from the module cache or proxy."""

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(directory) -> str:
    go = shutil.which("go")
    if go is None:
        pytest.skip("Go is not installed: hack/celcost cannot be built")
    out = os.path.join(str(directory), "celcost")
    env = dict(os.environ, GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-mod=readonly -buildvcs=false -trimpath")
    p = subprocess.run([go, "build", "-o", out, "."], cwd=os.path.join(ROOT, "hack", "celcost"), env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    return out
