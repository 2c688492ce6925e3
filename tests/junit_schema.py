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


def pip_download(requirement: str, into: Path, *options: str) -> None:
    """`pip download --no-deps` of one distribution from PyPI into a folder (made if need be)."""
    into.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", *options,
                        "--disable-pip-version-check", requirement, "-d", str(into)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"could not download {requirement} from PyPI: {r.stderr[-2000:]}")


def store(target: Path, data: bytes) -> Path:
    """Write the cached file at once (a rename), so a run stopped half-way leaves no part of it."""
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return target


def path() -> Path:
    version = metadata.version("pytest")
    xsd = CACHE / f"pytest-{version}" / "junit-10.xsd"
    if xsd.is_file():
        return xsd
    download = xsd.parent / "sdist"
    # --no-binary pytest, not :all: (which would build pytest's build dependencies from source too)
    pip_download(f"pytest=={version}", download, "--no-binary", "pytest")
    (sdist,) = download.glob("pytest-*.tar.gz")
    with tarfile.open(sdist) as tar:
        data = tar.extractfile(tar.getmember(f"pytest-{version}/{MEMBER}")).read()
    return store(xsd, data)


def schema():
    import xmlschema

    return xmlschema.XMLSchema(str(path()))
