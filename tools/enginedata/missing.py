"""scripts/engine-data --missing: the engine releases PyPI has that the engine data lacks.

Reads PyPI's JSON page of each engine (one bounded request each, rangewheel.project) and lists,
one `engine==version` a line on stdout, every final release (patch and post releases included;
pre-releases not) from the first release the data covers (data.FLAG_SINCE) that neither the
built-in data nor an added file holds; a release PyPI marks yanked is followed by `  # yanked`.
Each is added with `scripts/engine-data --release engine==version --output FILE`
(docs/engines.md). Offline, or PyPI answering something else: exit 1 with one `error:` line.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import rangewheel  # noqa: E402
from packaging.version import InvalidVersion, Version  # noqa: E402

from kubectl_kvcache.engine import data, releases  # noqa: E402


def missing(engine, page):
    """[(version, yanked)] of the final releases on `page` (PyPI's JSON) the data lacks."""
    have = {str(releases.data_version(r)) for r, _ in releases.known_releases(engine)}
    since = Version(data.FLAG_SINCE[engine])
    out = []
    for text, files in page.get("releases", {}).items():
        try:
            v = Version(text)
        except InvalidVersion:
            continue
        if v.is_prerelease or v.is_devrelease or v < since or not files:
            continue
        if str(releases.data_version(text)) not in have:
            out.append((v, text, all(f.get("yanked") for f in files)))
    return [(text, yanked) for _, text, yanked in sorted(out)]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="engine-data --missing", description=__doc__.split("\n")[0])
    ap.add_argument("--missing", action="store_true", required=True)
    ap.add_argument("--engine", choices=releases.ENGINES, action="append")
    args = ap.parse_args(argv)
    found = []
    for engine in args.engine or releases.ENGINES:
        try:
            _, page = rangewheel.project(engine)
        except (OSError, ValueError, RuntimeError) as exc:
            reason = getattr(exc, "reason", None) or exc
            print(f"error: cannot read PyPI's list of {engine} releases ({rangewheel.INDEX}/{engine}/json): "
                  f"{reason}; --missing needs network access to PyPI", file=sys.stderr)
            return 1
        found += [(engine, v, y) for v, y in missing(engine, page)]
    for engine, v, yanked in found:
        print(f"{engine}=={v}" + ("  # yanked" if yanked else ""))
    print(f"engine-data: {len(found)} release(s) on PyPI the data lacks; add one with "
          "scripts/engine-data --release ENGINE==VERSION --output FILE", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
