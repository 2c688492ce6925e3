"""releasefile: what a file of an added release must hold. A file for a built-in release is
accepted only when it is that release's own data, whichever release; any change to it is
refused naming the field; what the model derived from the data before is not kept."""

import copy
import random

import pytest

import enginefiles
from kubectl_kvcache.engine import EngineDataError, add_releases, data, known_releases, predict, profile
from kubectl_kvcache.engine.releasefile import builtin_slice, path_of
from kubectl_kvcache.engine.releases import parse_version


@pytest.fixture(autouse=True)
def built_in_data():
    add_releases([])
    yield
    add_releases([])


BUILT_IN = [(e, r) for e in ("vllm", "sglang") for r in data.parsers()[e]["releases"]]


@pytest.mark.parametrize("engine,release", BUILT_IN)
def test_a_built_in_release_s_own_data_is_accepted_and_changes_nothing(engine, release):
    """The package's slice is tests/enginefiles.py's (an independent cut of the same data, and
    by tests/conformance/test_engine_release.py the script's real output)."""
    doc = enginefiles.release_slice(engine, release)
    assert builtin_slice(engine, release) == doc["data"]
    before = profile(engine, parse_version(release))
    add_releases([("same.json", doc)])
    after = profile(engine, parse_version(release))
    assert after.added and (release, "same.json") in known_releases(engine)
    assert (after.accepted, after.table, after.choices, after.entry_positionals, after.required_options) == \
        (before.accepted, before.table, before.choices, before.entry_positionals, before.required_options)


def _leaves(value, parts=()):
    """Every (path, value) of a JSON value's scalars (span bounds excluded: those are the release)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, parts + (key,))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _leaves(inner, parts + (i,))
    else:
        yield parts, value


def _set(doc, parts, value):
    for part in parts[:-1]:
        doc = doc[part]
    doc[parts[-1]] = value


@pytest.mark.parametrize("engine,release", [("sglang", "0.5.18"), ("vllm", "0.29.0"), ("vllm", "0.33.0"),
                                            ("sglang", "0.5.23"), ("vllm", "0.11.1")])
def test_any_one_change_to_a_built_in_release_is_refused_naming_its_path(engine, release):
    """Sampled edits of the values of every table (a value replaced by another one the same table
    holds elsewhere, so that the shape stays right), an entry added, an entry left out."""
    base = enginefiles.release_slice(engine, release)
    rng = random.Random(f"{engine}{release}")
    tables = {k: v for k, v in base["data"].items() if isinstance(v, dict) and v}
    edits = []
    for key, table in tables.items():
        valued = [(p, v) for p, v in _leaves(table) if len(p) == 3 and p[2] == 0 and isinstance(v, str)
                  and len(table[p[0]][0]) == 3]
        others = sorted({row[0] for rows in data.parsers()[engine][key].values() for row in rows if len(row) == 3})
        for parts, value in rng.sample(valued, min(3, len(valued))):
            other = next((o for o in rng.sample(others, len(others)) if o != value), None)
            if other is not None:
                edits.append((("data", key) + parts, lambda d, p=("data", key) + parts, o=other: _set(d, p, o)))
        name = rng.choice(sorted(table))
        edits.append((("data", key, name), lambda d, k=key, n=name: d["data"][k].pop(n)))
    edits.append((("data", "values", "fp8_x"), lambda d: d["data"]["values"].update(fp8_x=[[release, None]])))
    assert len(edits) > 10
    for parts, change in edits:
        doc = copy.deepcopy(base)
        change(doc)
        with pytest.raises(EngineDataError) as err:
            add_releases([("edit.json", doc)])
        assert str(err.value).startswith(f"edit.json: {path_of(parts)}: redefines "), (parts, str(err.value))
        assert not any(source for _, source in known_releases(engine))


def test_the_model_forgets_what_it_derived_from_earlier_data():
    """kvparse's facts (kinds, start-up checks) of a release follow the data it is judged with:
    `--port abc` is an invalid int at vLLM 0.45.0 (judged as 0.33.0), any string once a file of
    0.45.0 says so, an invalid int again once the file is gone."""
    def port(value):
        return predict({"name": "c", "image": "", "command": ["vllm", "serve", "m", "--port", value]},
                       "vllm", "0.45.0").outcome

    assert port("abc") == "rejected"
    doc = enginefiles.release_slice("vllm", "0.33.0", "0.45.0")
    doc["data"]["kinds"]["--port"] = [["store str", "0.45.0", None]]
    add_releases([("v45.json", doc)])
    assert port("abc") == "ok"
    add_releases([])
    assert port("abc") == "rejected"


def test_one_release_spelled_two_ways_is_refused():
    a = enginefiles.release_slice("vllm", "0.33.0", "0.45.0")
    b = enginefiles.release_slice("vllm", "0.33.0", "0.45.0.0")
    with pytest.raises(EngineDataError) as err:
        add_releases([("a.json", a), ("b.json", b)])
    assert str(err.value) == "b.json: release: '0.45.0.0' is the release '0.45.0' of a.json: spell it the same way"


def test_paths_quote_what_is_not_a_word():
    assert path_of(["data", "options", "--port", 0, 1]) == 'data.options["--port"][0][1]'
    assert path_of(["data", "values", "fp8"]) == "data.values.fp8"
    assert path_of(["data", "kinds", "a\nb"]) == 'data.kinds["a\\nb"]'
