"""Engine data files of added releases, as `scripts/engine-data --release` writes them, made from
the package's own data (tests/conformance/test_engine_release.py holds the script's real output
to the same slice)."""

import json

from kubectl_kvcache.engine import data
from kubectl_kvcache.engine.releases import parse_version


def _rows_at(rows, release):
    v = parse_version(release)
    for row in rows:
        first, until = row[-2], row[-1]
        if v >= parse_version(first) and (until is None or v < parse_version(until)):
            return row
    return None


def release_slice(engine, release, as_release=None):
    """The document of one built-in release (relabelled `as_release`): each span that holds it,
    cut to that release alone."""
    label = as_release or release
    body = {"releases": [label]}
    for key, value in data.parsers()[engine].items():
        if key == "releases":
            continue
        if isinstance(value, dict):
            body[key] = {}
            for name, rows in value.items():
                row = _rows_at(rows, release)
                if row is not None:
                    body[key][name] = [row[:-2] + [label, None]]
        elif value and not isinstance(value[0], list):     # a plain list (the probes): every release's
            body[key] = list(value)
        else:
            row = _rows_at(value, release)
            body[key] = [row[:-2] + [label, None]] if row is not None else []
    return {"schema": data.ENGINE_DATA_SCHEMA, "engine": engine, "release": label, "data": body}


def write(path, doc):
    path.write_text(json.dumps(doc))
    return str(path)
