"""scripts/engine-data --release ENGINE==VERSION [--output FILE]: the engine data of ONE release,
read from its released wheel's own parser (the same reading and the same format as the
package's parsers.py), as a JSON file the plugin reads with --engine-data FILE,
$KVCACHE_ENGINE_DATA or ~/.local/share/kubectl-kvcache/engines/. A user adds a release this
way without a new plugin release (as pluto's --additional-versions, kubepug's --database).

The file: {"schema": data.ENGINE_DATA_SCHEMA, "engine", "release", "data": what engine_data.build
writes for that engine, over that one release}. The plugin merges it into its own data.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import engine_data  # noqa: E402
import wheels  # noqa: E402
from kubectl_kvcache.engine import data  # noqa: E402


def release_document(engine, version):
    """The engine data document of one release (downloads its wheel into the engine cache)."""
    wheels.ensure(engine, version)
    described = {engine: {version: engine_data.describe_release(engine, version)}}
    saved = engine_data.RELEASES
    engine_data.RELEASES = {engine: [version]}   # build() reads the module's release list
    try:
        built = engine_data.build(described)
    finally:
        engine_data.RELEASES = saved
    return {"schema": data.ENGINE_DATA_SCHEMA, "engine": engine, "release": version,
            "_": "written by scripts/engine-data --release from the released wheel's own parser",
            "data": built[engine]}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="scripts/engine-data --release", description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", required=True, metavar="ENGINE==VERSION", help="e.g. vllm==0.34.0")
    ap.add_argument("--output", "-o", metavar="FILE", help="where to write it (default: stdout)")
    args = ap.parse_args(argv)
    engine, sep, version = args.release.partition("==")
    if engine not in ("vllm", "sglang") or not sep or not version:
        ap.error(f"--release {args.release!r}: expected vllm==VERSION or sglang==VERSION")
    try:
        doc = release_document(engine, version)
    except (RuntimeError, OSError) as exc:
        print(f"error: {engine}=={version}: {str(exc).splitlines()[0][:300]}", file=sys.stderr)
        return 2
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if args.output:
        with open(args.output + ".tmp", "w") as f:
            f.write(text)
        os.replace(args.output + ".tmp", args.output)
        print(f"engine-data: wrote {args.output} ({engine} {version})", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
