"""Released engine wheels, reduced to their .py files, cached per version.

    ${KVCACHE_ENGINE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/kubectl-kvcache/engines}/<engine>-<version>/

Each entry is filled in a temporary folder next to it (pip download --no-deps of the wheel,
then only `*.py` files and the dist-info METADATA are kept) and renamed into place in one step,
under a per-entry flock: an interrupted download never leaves a half entry, and two concurrent
callers download once. Nothing here is ever committed; it is read to run the real parsers.
"""

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rangewheel  # noqa: E402

MARKER = ".complete"


def cache_base():
    base = os.environ.get("KVCACHE_ENGINE_CACHE")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "kubectl-kvcache", "engines")
    os.makedirs(base, exist_ok=True)
    return os.path.abspath(base)


def entry_path(engine, version):
    return os.path.join(cache_base(), f"{engine}-{version}")


def cached(engine, version):
    """The folder holding the release's .py files, or None when it is not cached."""
    path = entry_path(engine, version)
    return path if os.path.exists(os.path.join(path, MARKER)) else None


# The wheel for the first of these Pythons the release supports (its Requires-Python decides;
# the .py files are the same in every wheel of a release).
PYTHONS = ("3.11", "3.12", "3.13")
PLATFORMS = ([f"manylinux_2_{n}_x86_64" for n in (39, 35, 34, 31, 28, 27, 24, 17)]
             + ["manylinux2014_x86_64", "manylinux1_x86_64", "any"])


def _download(engine, version, into, log):
    for python in PYTHONS:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check", "--no-cache-dir",
               "--only-binary", ":all:", "--python-version", python,
               *[a for p in PLATFORMS for a in ("--platform", p)], "-d", into, f"{engine}=={version}"]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode == 0:
            break
        if "No matching distribution" not in done.stdout:
            raise RuntimeError(f"pip download {engine}=={version} failed:\n{done.stdout[-2000:]}")
    else:
        raise RuntimeError(f"pip download {engine}=={version}: no wheel for Python {', '.join(PYTHONS)}:\n"
                           f"{done.stdout[-1000:]}")
    wheels = [f for f in os.listdir(into) if f.endswith(".whl")]
    if len(wheels) != 1:
        raise RuntimeError(f"pip download {engine}=={version}: expected one wheel, got {wheels}")
    return os.path.join(into, wheels[0])


def kept(name):
    """Whether a file of a wheel (its path inside it, `/`-separated) is kept: the .py files and
    the dist-info METADATA, never a path that could land outside the entry."""
    keep = name.endswith(".py") or (".dist-info/" in name and name.endswith("/METADATA"))
    return keep and not name.startswith("/") and ".." not in name.split("/")


def extract(wheel, tree):
    """The kept files of a wheel (a released one, or a local one: engine_release.py --wheel)
    extracted into `tree`; how many. Raises zipfile.BadZipFile for a file that is not a zip."""
    count = 0
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if kept(name):
                zf.extract(name, tree)
                count += 1
    return count


def copy_kept(source, tree, under):
    """The kept files of a source tree's folder `source` copied into `tree`/`under` (a local
    source checkout, engine_release.py --source: read like a wheel's files, never written to,
    and no compiled extension of a build in it imported); how many."""
    count = 0
    for folder, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        rel = os.path.relpath(folder, source)
        for name in sorted(files):
            inside = "/".join(p for p in (under, "" if rel == "." else rel.replace(os.sep, "/"), name) if p)
            if kept(inside) and os.path.isfile(os.path.join(folder, name)):
                os.makedirs(os.path.join(tree, os.path.dirname(inside)), exist_ok=True)
                shutil.copyfile(os.path.join(folder, name), os.path.join(tree, inside))
                count += 1
    return count


def ensure(engine, version, log=lambda msg: print(msg, file=sys.stderr)):
    """The cached folder of `engine==version`, downloading it if needed. Raises RuntimeError."""
    hit = cached(engine, version)
    if hit:
        return hit
    base = cache_base()
    final = entry_path(engine, version)
    with open(os.path.join(base, f".lock-{engine}-{version}"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        hit = cached(engine, version)
        if hit:
            return hit
        for stale in os.listdir(base):
            if stale.startswith(f".build-{engine}-{version}."):
                shutil.rmtree(os.path.join(base, stale), ignore_errors=True)
        tmp = tempfile.mkdtemp(prefix=f".build-{engine}-{version}.", dir=base)
        try:
            tree = os.path.join(tmp, "tree")
            how = ""
            try:
                if os.environ.get("KVCACHE_ENGINE_FULL_WHEEL"):
                    raise RuntimeError("KVCACHE_ENGINE_FULL_WHEEL is set")
                count, name, size, fetched, yanked = rangewheel.extract(engine, version, tree, kept)
                how = f", range-read {fetched} bytes" + (", yanked on PyPI" if yanked else "")
            except (OSError, RuntimeError, ValueError, KeyError, zipfile.BadZipFile) as exc:
                # a mirror without Range or JSON pages: the whole wheel through pip, as before
                log(f"engine-wheels: {engine}=={version}: range read failed ({exc}); downloading the wheel")
                shutil.rmtree(tree, ignore_errors=True)
                download = os.path.join(tmp, "download")
                os.mkdir(download)
                wheel = _download(engine, version, download, log)
                name, size = os.path.basename(wheel), os.path.getsize(wheel)
                count = extract(wheel, tree)
                shutil.rmtree(download)
            with open(os.path.join(tree, MARKER), "w") as f:
                f.write(f"{engine}=={version} {name} {size} bytes, {count} files kept{how}\n")
            if os.path.exists(final):
                shutil.rmtree(final)
            os.rename(tree, final)
            log(f"engine-wheels: {engine}=={version}: {name} ({size / 1e6:.0f} MB), kept {count} files{how}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def wheel_size(engine, version):
    path = cached(engine, version)
    if not path:
        return None
    with open(os.path.join(path, MARKER)) as f:
        return int(f.read().split()[2])


def main(argv=None):
    """scripts/engine-wheels: fill the cache for every conformance release; print its folder."""
    import argparse
    import concurrent.futures
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from releases import all_releases

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("-j", "--jobs", type=int, default=4)
    ap.add_argument("releases", nargs="*", help="engine==version (default: all conformance releases)")
    args = ap.parse_args(argv)
    wanted = [tuple(r.split("==", 1)) for r in args.releases] or all_releases()
    failed = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(ensure, e, v): (e, v) for e, v in wanted}
        for fut in concurrent.futures.as_completed(futures):
            try:
                fut.result()
            except Exception as exc:  # noqa: BLE001 - reported, then the exit status says it
                failed.append(futures[fut])
                print(f"engine-wheels: {exc}", file=sys.stderr)
    print(cache_base())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
