"""Engine data files of added releases (what `scripts/engine-data --release` writes), found where
a user puts them and decoded; the engine model checks and merges them (engine.add_releases).

Where, in the order they are read (a later file wins for the same release), like pluto's
--additional-versions and kubepug's --database: every *.json in the user data directory
${XDG_DATA_HOME:-~/.local/share}/kubectl-kvcache/engines/, then the files (or directories) named
by KVCACHE_ENGINE_DATA (separated by ':'), then each --engine-data FILE.
"""

from __future__ import annotations

import json
import os

from kubectl_kvcache.errors import PluginError

ENV = "KVCACHE_ENGINE_DATA"


def data_dir(environ=None):
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "kubectl-kvcache", "engines")


def _files(path, named):
    """The JSON files of a path: itself, or a directory's *.json in name order."""
    if os.path.isdir(path):
        try:
            return [os.path.join(path, n) for n in sorted(os.listdir(path)) if n.endswith(".json")]
        except OSError as exc:
            raise PluginError(f"{path}: cannot read the engine data directory: {exc.strerror or exc}")
    if named or os.path.exists(path):
        return [path]
    return []


def paths(flag_paths=(), environ=None):
    environ = os.environ if environ is None else environ
    found = _files(data_dir(environ), named=False)
    for path in (environ.get(ENV) or "").split(os.pathsep):
        if path:
            found += _files(path, named=True)
    for path in flag_paths:
        found += _files(path, named=True)
    return found


def read(flag_paths=(), environ=None) -> list[tuple[str, object]]:
    """[(file name, decoded JSON)] of every engine data file, or PluginError naming the file."""
    out = []
    for path in paths(flag_paths, environ):
        try:
            with open(path, encoding="utf-8") as f:
                out.append((path, json.load(f)))
        except OSError as exc:
            raise PluginError(f"{path}: cannot read the engine data file: {exc.strerror or exc}")
        except (ValueError, RecursionError) as exc:
            raise PluginError(f"{path}: not JSON ({str(exc).splitlines()[0][:120]}); write it with "
                              f"scripts/engine-data --release")
    return out
