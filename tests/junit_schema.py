"""Jenkins' junit-10.xsd (the xunit plugin's JUnit schema, which pytest checks its own --junitxml
output against), taken from the sdist of the pytest that runs the tests -- PyPI, with pip --
and cached in ~/.cache/kubectl-kvcache/schemas; never committed. Loaded by xmlschema."""

import os
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kubectl-kvcache" / "schemas"
MEMBER = "testing/example_scripts/junit-10.xsd"


def path() -> Path:
    version = metadata.version("pytest")
    xsd = CACHE / f"pytest-{version}" / "junit-10.xsd"
    if xsd.is_file():
        return xsd
    download = xsd.parent / "sdist"
    download.mkdir(parents=True, exist_ok=True)
    # --no-binary pytest, not :all: (which would build pytest's build dependencies from source too)
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "pytest",
                        "--disable-pip-version-check", f"pytest=={version}", "-d", str(download)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"could not download pytest {version}'s sdist from PyPI: {r.stderr[-2000:]}")
    (sdist,) = download.glob("pytest-*.tar.gz")
    with tarfile.open(sdist) as tar:
        data = tar.extractfile(tar.getmember(f"pytest-{version}/{MEMBER}")).read()
    tmp = xsd.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, xsd)
    return xsd


def schema():
    import xmlschema

    return xmlschema.XMLSchema(str(path()))
