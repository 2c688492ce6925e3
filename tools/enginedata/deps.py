"""Whether this interpreter holds the `conformance` extra the oracle needs (conftest.py's guard)."""

import importlib.metadata
import re


def missing_conformance_deps():
    """The `conformance` extra's distributions (setup.cfg) this interpreter lacks. The oracle runs
    the releases' CLI code on this interpreter: without pydantic & co. their imports fail and the
    "real parser" dies on every argv, so the tier would report the plugin's right answers as wrong
    (585 and 641 on vLLM 0.10.2/0.29.0's real-command rows in a venv without the extra)."""
    try:
        reqs = importlib.metadata.requires("kubectl-kvcache") or []
    except importlib.metadata.PackageNotFoundError:
        return ["kubectl-kvcache (pip install -e '.[conformance]')"]
    missing = []
    for req in reqs:
        if 'extra == "conformance"' not in req:
            continue
        name = re.match(r"[A-Za-z0-9_.-]+", req).group(0)
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    return missing
