"""The files of added engine releases (what `scripts/engine-data --release` writes), found where
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
from kubectl_kvcache.load.strict_json import DuplicateKey, unique_pairs

ENV = "KVCACHE_ENGINE_DATA"


def data_dir(environ=None):
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "kubectl-kvcache", "engines")


def _files(path, named):
    """The JSON files of a path as (path, named): itself, or a directory's *.json in name order
    (those not named: a pipe among them is refused rather than waited on)."""
    if os.path.isdir(path):
        try:
            return [(os.path.join(path, n), False) for n in sorted(os.listdir(path)) if n.endswith(".json")]
        except OSError as exc:
            raise PluginError(f"{path}: cannot read the engine data directory: {exc.strerror or exc}") from exc
    if named or os.path.exists(path):
        return [(path, named)]
    return []


def paths(flag_paths=(), environ=None):
    """[(path, named by the user)] of every engine data file, in the order they are merged."""
    environ = os.environ if environ is None else environ
    found = _files(data_dir(environ), named=False)
    for path in (environ.get(ENV) or "").split(os.pathsep):
        if path:
            found += _files(path, named=True)
    for path in flag_paths:
        found += _files(path, named=True)
    return found


# The most a file is read: a release's file is ~90 KB (scripts/engine-data --release); a file
# past this is refused before it is decoded, so that no file can hold the plugin's memory.
MAX_BYTES = 4 * 1024 * 1024
MAX_TOTAL = 64 * 1024 * 1024    # ... and all of them together (a folder of many files)




def _read_bounded(path, named):
    """The bytes of one engine data file, at most MAX_BYTES, or PluginError naming it."""
    try:
        if os.path.exists(path) and not os.path.isfile(path) and not (named and _is_pipe(path)):
            raise PluginError(f"{path}: not a regular file (an engine data file is the JSON file "
                              f"scripts/engine-data --release writes)")
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise PluginError(f"{path}: cannot read the engine data file: {exc.strerror or exc}") from exc
    if len(raw) > MAX_BYTES:
        raise PluginError(f"{path}: larger than {MAX_BYTES // (1024 * 1024)} MiB, the most an engine data file "
                          f"may hold (a release's file is under 100 KB: write it with scripts/engine-data --release)")
    return raw


def _is_pipe(path):
    """A pipe the user named (`--engine-data <(...)`, /dev/stdin): read like a file, still bounded."""
    import stat

    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def read(flag_paths=(), environ=None) -> list[tuple[str, object]]:
    """[(file name, decoded JSON)] of every engine data file, or PluginError naming the file."""
    out, total = [], 0
    for path, named in paths(flag_paths, environ):
        raw = _read_bounded(path, named)
        total += len(raw)
        if total > MAX_TOTAL:
            raise PluginError(f"{path}: the engine data files read so far hold more than "
                              f"{MAX_TOTAL // (1024 * 1024)} MiB, the most the plugin reads (remove files no longer "
                              f"needed from {data_dir(environ)})")
        try:
            out.append((path, json.loads(raw.decode("utf-8-sig"), object_pairs_hook=unique_pairs)))
        except DuplicateKey as exc:
            raise PluginError(f"{path}: {exc.key!r} is given twice in one object (write the file with "
                              f"scripts/engine-data --release)") from exc
        except UnicodeDecodeError as exc:
            raise PluginError(f"{path}: not UTF-8 text (byte {exc.start}); write it with scripts/engine-data "
                              f"--release") from exc
        except (ValueError, RecursionError) as exc:
            raise PluginError(f"{path}: not JSON ({str(exc).splitlines()[0][:120]}); write it with "
                              f"scripts/engine-data --release") from exc
    return out
