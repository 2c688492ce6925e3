"""No interpolation (issue 38): a release between two the engine data holds was never read, so
whatever its argv, the verdict is UNKNOWN naming the release and the command that adds it; a
release the data holds (or one added from a file) is judged with its own parser."""

import pytest
from packaging.version import Version

import enginefiles
from kubectl_kvcache.engine import add_releases, known_releases, predict


@pytest.fixture(autouse=True)
def built_in_data():
    add_releases([])
    yield
    add_releases([])


def serve(engine, version, *args):
    cmd = ["vllm", "serve", "m"] if engine == "vllm" else ["python3", "-m", "sglang.launch_server", "--model-path", "m"]
    return predict({"name": "c", "image": "", "command": cmd + list(args)}, engine, version)


def between(engine):
    """(a release the data holds, the release one patch after it that the data lacks and that
    comes before the next one it holds), derived from the data, not hard-coded."""
    held = [r for r, _ in known_releases(engine)]
    for a, b in zip(held, held[1:]):
        major, minor, patch = Version(a).release[:3]
        candidate = f"{major}.{minor}.{patch + 1}"
        if Version(a) < Version(candidate) < Version(b):
            return a, candidate
    raise AssertionError("the data holds no gap")


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_release_between_two_in_the_data_is_unknown_with_the_command_that_adds_it(engine):
    held, gap = between(engine)
    for args in ([], ["--kv-cache-dtype", "auto"], ["--no-such-option-anywhere"]):
        own = serve(engine, held, *args)
        assert own.outcome in ("ok", "rejected"), own.reason
        pred = serve(engine, gap, *args)
        assert pred.outcome == "unknown", (gap, args, pred.outcome, pred.reason)
        assert pred.cause.to_dict() == {"code": "release", "subject": f"{engine}=={gap}"}
        assert f"scripts/engine-data --release {engine}=={gap} --output" in pred.reason
        assert "not in the engine data" in pred.reason


def test_an_added_release_is_judged_with_its_own_parser_again():
    held, gap = between("vllm")
    assert serve("vllm", gap).outcome == "unknown"
    add_releases([("gap.json", enginefiles.release_slice("vllm", held, gap))])
    assert serve("vllm", gap).outcome == "ok"


def test_newer_and_held_releases_keep_their_definite_verdicts():
    newest = known_releases("vllm")[-1][0]
    assert serve("vllm", newest, "--kv-cache-dtype", "auto").outcome == "ok"
    assert serve("vllm", "99.0.0", "--kv-cache-dtype", "auto").outcome == "ok"   # newer: judged, with a note
