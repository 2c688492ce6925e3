"""scripts/engine-data --release ENGINE==VERSION --wheel FILE | --source DIR: the parser of a
release that is not on PyPI yet (a release candidate, a nightly wheel, a source checkout at a
tag), read from a local wheel or source tree instead of a download.

Its files are kept as the engine cache keeps a released wheel's (wheels.kept: the .py files and
the METADATA), in a temporary folder the parser is then read from exactly as from the cache
(engine_data.describe_release): the user's tree is never written to, and no extension module a
build left in it is imported. The wheel or tree must be that engine (its METADATA, pyproject.toml
or setup.py names the project) and, where it states its version, a build of the release it is
labelled with (0.34.0rc1 and 0.34.0.dev12+g1234 are builds of 0.34.0).
"""

import contextlib
import glob
import hashlib
import os
import re
import subprocess
import tempfile
import tomllib
import zipfile

import wheels
from kubectl_kvcache.engine.releases import parse_version


class Refused(RuntimeError):
    """A wheel or source tree that is not the engine release it is said to be."""


def _normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()     # PEP 503: vLLM, v_llm -> vllm


def _field(text, name):
    """A header of a METADATA file (`Name: vllm`), or None."""
    for line in text.splitlines():
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == name.lower():
            return value.strip()
    return None


def _release_of(version):
    """The release a version string is a build of: `0.34.0rc1.dev3+g12` -> 0.34.0; None if none."""
    m = re.match(r"v?\d+(?:\.\d+){0,3}(?:\.post\d+)?", version or "")
    return parse_version(m.group(0)) if m else None


def _check(what, engine, version, name, found):
    if _normal(name) != engine:
        raise Refused(f"{what} is the project {name!r}, not {engine}")
    if found and _release_of(found) != parse_version(version):
        release = _release_of(found)
        hint = f" (label it --release {engine}=={release})" if release else ""
        raise Refused(f"{what} is {engine} {found}, not a build of {version}{hint}")


def _has_package(tree, engine, what):
    if not os.path.isfile(os.path.join(tree, engine, "__init__.py")):
        raise Refused(f"{what} has no {engine}/__init__.py: not {engine}'s code")


@contextlib.contextmanager
def wheel(engine, version, path):
    """(folder of the wheel's kept files, where they came from) while in the block."""
    what = f"--wheel {path}"
    if not os.path.isfile(path):
        raise Refused(f"{what}: no such file")
    try:
        with zipfile.ZipFile(path) as zf:
            metas = [n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
            if len(metas) != 1:
                raise Refused(f"{what}: not a wheel (no single *.dist-info/METADATA in it)")
            text = zf.read(metas[0]).decode("utf-8", "replace")
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError):
        raise Refused(f"{what}: not a wheel (not a zip archive)") from None
    name, found = _field(text, "Name") or "", _field(text, "Version")
    _check(what, engine, version, name, found)
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    with tempfile.TemporaryDirectory(prefix="kvcache-engine-") as tree:
        wheels.extract(path, tree)
        _has_package(tree, engine, what)
        yield tree, (f"the wheel {os.path.basename(path)} (sha256 {digest.hexdigest()}, its METADATA: {name} "
                     f"{found})")


def _project(top):
    """(name, version or None) a source tree says it is: pyproject.toml's [project], a
    *.dist-info/METADATA, or setup.py's name=; (None, None) when it says nothing."""
    try:
        with open(os.path.join(top, "pyproject.toml"), "rb") as f:
            project = tomllib.load(f).get("project") or {}
    except (OSError, tomllib.TOMLDecodeError):
        project = {}
    if isinstance(project.get("name"), str):
        version = project.get("version")
        return project["name"], version if isinstance(version, str) else None
    for meta in sorted(glob.glob(os.path.join(top, "*.dist-info", "METADATA"))):
        with open(meta, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if _field(text, "Name"):
            return _field(text, "Name"), _field(text, "Version")
    try:
        with open(os.path.join(top, "setup.py"), encoding="utf-8", errors="replace") as f:
            m = re.search(r"""\bname\s*=\s*["']([A-Za-z0-9_.-]+)["']""", f.read())
    except OSError:
        m = None
    return (m.group(1), None) if m else (None, None)


def _commit(path):
    try:
        done = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and os.path.isdir(os.path.join(path, ".git")) else None


@contextlib.contextmanager
def source(engine, version, path):
    """(folder of the tree's kept files, where they came from) while in the block. The package is
    DIR/ENGINE, or DIR/python/ENGINE (SGLang's repository)."""
    what = f"--source {path}"
    if not os.path.isdir(path):
        raise Refused(f"{what}: no such directory")
    top = next((d for d in (path, os.path.join(path, "python")) if os.path.isfile(os.path.join(d, engine, "__init__.py"))),
               None)
    if top is None:
        raise Refused(f"{what}: no {engine}/__init__.py in it (nor in python/): not a source tree of {engine}")
    name, found = _project(top)
    if name is None:
        raise Refused(f"{what}: names no project (no pyproject.toml [project] name, *.dist-info/METADATA or "
                      f"setup.py name=): cannot tell it is {engine}")
    _check(what, engine, version, name, found)
    commit = _commit(path)
    with tempfile.TemporaryDirectory(prefix="kvcache-engine-") as tree:
        wheels.copy_kept(os.path.join(top, engine), tree, engine)
        info = os.path.join(tree, f"{engine}-{version}.dist-info")
        os.mkdir(info)
        with open(os.path.join(info, "METADATA"), "w") as f:   # as installing the tree would give it
            f.write(f"Metadata-Version: 2.1\nName: {engine}\nVersion: {found or version}\n")
        at = f" at commit {commit}" if commit else ""
        yield tree, f"the source tree {os.path.abspath(path)}{at} ({name}{' ' + found if found else ''})"
