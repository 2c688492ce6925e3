"""Releases newer than the engine data, and releases added from engine data files (the format
scripts/engine-data --release writes; tests/enginefiles.py makes them from the package's data)."""

import copy

import pytest

import enginefiles
from kubectl_kvcache.engine import EngineDataError, add_releases, known_releases, predict, profile
from kubectl_kvcache.engine.releases import parse_version


@pytest.fixture(autouse=True)
def built_in_data():
    add_releases([])
    yield
    add_releases([])


def newer(value="fp6_e3m2"):
    doc = enginefiles.release_slice("vllm", "0.34.0", "0.45.0")
    doc["data"]["values"][value] = [["0.45.0", None]]
    return doc


def serve(dtype, version="0.45.0"):
    return predict({"name": "c", "image": "", "command": ["vllm", "serve", "m", "--kv-cache-dtype", dtype]},
                   "vllm", version)


def test_a_release_newer_than_the_data_names_the_release_that_judged_it():
    p = profile("vllm", parse_version("0.45.0"))
    assert (p.judged_with, p.newer_than_data) == ("0.34.0", True)
    pred = serve("fp8")
    assert pred.outcome == "ok" and pred.newer_than_data and pred.judged_with == "0.34.0"
    assert "vLLM 0.45.0 is newer than the engine data: judged with vLLM 0.34.0's parser" in pred.reason
    assert not serve("fp8", "0.34.0").newer_than_data
    assert "newer than the engine data" not in serve("fp8", "0.34.0").reason


def test_an_added_release_changes_the_verdict():
    assert serve("fp6_e3m2").outcome == "rejected"
    add_releases([("vllm-0.45.0.json", newer())])
    pred = serve("fp6_e3m2")
    assert (pred.outcome, pred.effective, pred.judged_with, pred.newer_than_data) == ("ok", "fp6_e3m2", "0.45.0", False)
    assert ("0.45.0", "vllm-0.45.0.json") in known_releases("vllm")
    assert profile("vllm", parse_version("0.33.0")).accepted == profile("vllm", parse_version("0.33.0")).accepted
    assert "fp6_e3m2" not in profile("vllm", parse_version("0.33.0")).accepted
    add_releases([])
    assert serve("fp6_e3m2").outcome == "rejected" and ("0.45.0", "vllm-0.45.0.json") not in known_releases("vllm")


def test_an_added_release_between_two_built_in_ones_stands_for_the_releases_after_it():
    """vLLM 0.20.5 (not on PyPI; 0.20.0's parser relabelled, without an option): 0.20.7 is judged
    with it (and UNKNOWN: not in the data), 0.20.1 and 0.21.0 still with their own."""
    doc = enginefiles.release_slice("vllm", "0.20.2", "0.20.5")
    dropped = next(n for n in doc["data"]["options"] if n.startswith("--kv-") and n != "--kv-cache-dtype")
    del doc["data"]["options"][dropped]
    add_releases([("mid.json", doc)])
    assert profile("vllm", parse_version("0.20.7")).judged_with == "0.20.5"
    assert dropped not in profile("vllm", parse_version("0.20.7")).options_for()
    assert dropped in profile("vllm", parse_version("0.20.2")).options_for()
    assert profile("vllm", parse_version("0.21.0")).judged_with == "0.21.0"


def test_a_later_file_wins_for_the_same_release():
    add_releases([("a.json", newer("fp6_a")), ("b.json", newer("fp6_b"))])
    accepted = profile("vllm", parse_version("0.45.0")).accepted
    assert "fp6_b" in accepted and "fp6_a" not in accepted


def _broken(change):
    doc = newer()
    change(doc)
    return doc


@pytest.mark.parametrize("doc,field", [
    ([], "not a JSON object"),
    (_broken(lambda d: d.update(schema=99)), "schema: 99"),
    (_broken(lambda d: d.pop("schema")), "schema: None"),
    (_broken(lambda d: d.update(engine="tgi")), "engine: 'tgi'"),
    (_broken(lambda d: d.update(data=[])), "data: a list, not an object"),
    (_broken(lambda d: d["data"].update(releases=["latest"])), "data.releases"),
    (_broken(lambda d: d["data"].update(options={"--x": "1"})), "data.options"),
    (_broken(lambda d: d["data"].update(releases=[])), "data.releases"),
    (_broken(lambda d: d["data"].update(values=[["x"]])), "data.values"),
])
def test_a_bad_file_is_refused_naming_file_and_field(doc, field):
    before = profile("vllm", parse_version("0.45.0"))
    with pytest.raises(EngineDataError) as err:
        add_releases([("bad.json", copy.deepcopy(doc))])
    assert str(err.value).startswith("bad.json: ") and field in str(err.value)
    assert profile("vllm", parse_version("0.45.0")) == before
