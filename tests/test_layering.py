"""The layering the design promises: the engine model and the judges never touch the cluster
client, and `--help`/`version` do not pay for importing it."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PURE = ["kubectl_kvcache.engine", "kubectl_kvcache.verify", "kubectl_kvcache.checks", "kubectl_kvcache.setting"]


def loaded_after(code):
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()
    return set(out)


@pytest.mark.parametrize("module", PURE)
def test_pure_layers_do_not_import_the_kubernetes_client(module):
    modules = loaded_after(f"import {module}")
    assert not {m for m in modules if m == "kubernetes" or m.startswith(("kubernetes.", "urllib3"))}


@pytest.mark.parametrize("argv", [["--help"], ["version"], ["verify", "--help"]])
def test_help_and_version_import_neither_kubernetes_nor_yaml(argv):
    modules = loaded_after("import io, contextlib\nfrom kubectl_kvcache.cli import main\n"
                           f"with contextlib.redirect_stdout(io.StringIO()):\n    main({argv!r})")
    assert "kubernetes" not in modules and "yaml" not in modules and "tabulate" not in modules
