"""scripts/engine-data --release ENGINE==VERSION [--output FILE]: the engine data of ONE release,
read from its released wheel's own parser (the same reading and the same format as the
package's parsers.py), as a JSON file the plugin reads with --engine-data FILE,
$KVCACHE_ENGINE_DATA or ~/.local/share/kubectl-kvcache/engines/. A user adds a release this
way without a new plugin release (as pluto's --additional-versions, kubepug's --database).
With --wheel FILE or --source DIR the parser is read from a local wheel or source tree of a
release not on PyPI yet (local_release.py), labelled with VERSION.

The file: {"schema": knowledge.SCHEMA, "engine", "release", "_": where its parser was
read from, "data": what engine_data.build writes for that engine, over that one release}. The
plugin merges it into its own data.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import engine_data  # noqa: E402
import local_release  # noqa: E402
import wheels  # noqa: E402
from kubectl_kvcache.engine import data, knowledge  # noqa: E402
from kubectl_kvcache.engine.releasefile import is_release  # noqa: E402


def release_document(engine, version, root=None, origin="--release from the released wheel's own parser"):
    """The engine data document of one release, its parser read from `root` (the folder of its
    .py files; by default its released wheel, downloaded into the engine cache), `origin` saying so."""
    root = root or wheels.ensure(engine, version)
    described = {engine: {version: engine_data.describe_release(engine, version, root)}}
    saved = engine_data.RELEASES
    engine_data.RELEASES = {engine: [version]}   # build() reads the module's release list
    try:
        built = engine_data.build(described)
    finally:
        engine_data.RELEASES = saved
    return {"schema": knowledge.SCHEMA, "engine": engine, "release": version,
            "_": f"written by scripts/engine-data {origin}", "data": built[engine]}


def local_document(engine, version, wheel=None, source=None):
    """The document of a release read from a local wheel FILE or source tree DIR."""
    reading = local_release.wheel(engine, version, wheel) if wheel else local_release.source(engine, version, source)
    with reading as (root, where):
        flag = "--wheel" if wheel else "--source"
        return release_document(engine, version, root, f"--release {flag} from the parser in {where}, not a "
                                                        f"release published on PyPI")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="scripts/engine-data", description=__doc__.split("\n\n")[0],
                                 allow_abbrev=False)
    ap.add_argument("--release", required=True, metavar="ENGINE==VERSION", help="e.g. vllm==0.34.0")
    ap.add_argument("--output", "-o", metavar="FILE", help="where to write it (default: stdout)")
    local = ap.add_mutually_exclusive_group()
    local.add_argument("--wheel", metavar="FILE", help="read the parser from this local wheel (a release candidate, "
                                                       "a nightly build of VERSION) instead of PyPI's")
    local.add_argument("--source", metavar="DIR", help="read the parser from this source tree (a checkout of vllm "
                                                       "or sglang at VERSION's tag) instead of PyPI's wheel")
    args = ap.parse_args(argv)
    engine, sep, version = args.release.partition("==")
    if engine not in ("vllm", "sglang") or not sep or not version:
        ap.error(f"--release {args.release!r}: expected vllm==VERSION or sglang==VERSION")
    if not is_release(version):
        print(f"error: --release {args.release}: {version!r} is not a release number the plugin reads (0.34.0, "
              f"0.10.1.1, 0.5.4.post3; no v, rc or dev): label a release candidate or nightly build with the "
              f"release it becomes", file=sys.stderr)
        return 2
    try:
        if args.wheel or args.source:
            doc = local_document(engine, version, args.wheel, args.source)
        else:
            doc = release_document(engine, version)
    except (RuntimeError, OSError) as exc:
        print(f"error: {engine}=={version}: {str(exc).splitlines()[0][:300]}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - a parser this script could not read: one line, no traceback
        print(f"error: {engine}=={version}: its parser could not be read ({type(exc).__name__}: "
              f"{str(exc).splitlines()[0][:200] if str(exc) else ''})", file=sys.stderr)
        return 2
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if args.output:
        try:
            with open(args.output + ".tmp", "w") as f:
                f.write(text)
            os.replace(args.output + ".tmp", args.output)
        except OSError as exc:
            print(f"error: --output {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"engine-data: wrote {args.output} ({engine} {version})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
