"""The start-up checks in combination (issue 29): the model's answer for argv that combine the
options vLLM's checks read after the parse (tool calling with every registered parser and with
names it does not register, --chat-template inline and as a path, reasoning parsers, -dp and its
companions, the log and metrics flags) equals the real entry point's, and the commonest
production pair, `--enable-auto-tool-choice --tool-call-parser NAME`, is decided wherever the
data holds the release's checks."""

import os
import random
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import combo_draw  # noqa: E402
import tierstats as tier  # noqa: E402
from releases import TIER as RELEASES  # noqa: E402  (this run's slice: releases.tier_releases)
from test_conformance import MODEL, check, model_answer  # noqa: E402

COUNT = int(os.environ.get("KVCACHE_STARTUP_CASES", "60"))
PARAMS = [pytest.param(v, id=f"vllm-{v}") for v in RELEASES["vllm"]]
DTYPE = ["--kv-cache-dtype", "fp8"]
PAIRS = set()   # (release, entry, registered tool parser) of the headline pair's cases


def cases(version, seed=29):
    rng = random.Random(f"{seed} {version}")
    out = []
    for entry in ("api_server", "serve"):
        options = combo_draw.read_options("vllm", version, entry)
        if not options:
            continue
        registered = options.get("--tool-call-parser", ("", ()))[1]
        for name in registered:   # every name, not just the one engine-data probed
            PAIRS.add((version, entry, name))
            out.append((entry, MODEL[entry] + ["--enable-auto-tool-choice", "--tool-call-parser", name] + DTYPE))
        for _ in range(COUNT):
            tail = combo_draw.words(rng, "vllm", version, entry, options)
            if rng.random() < 0.7:
                tail += DTYPE
            out.append((entry, MODEL[entry] + tail))
    return out


@pytest.mark.parametrize("version", PARAMS)
def test_start_up_combinations_agree_with_the_real_entry_points(oracles, version):
    try:
        found = cases(version)
        if not found:
            # never a skip (CI makes a skip a failure): a release before the first one with such data
            # has nothing to test; a gap after it is a failure
            first = next((v for v in RELEASES["vllm"] if cases(v)), None)
            assert first is not None and RELEASES["vllm"].index(version) < RELEASES["vllm"].index(first), (
                f"vllm {version}: its entry points run no start-up checks on the argv, though vllm {first} has some")
            return
        check(oracles, "vllm", version, found)
        decided = 0
        for entry, argv in found:
            pair = argv[len(MODEL[entry]):len(MODEL[entry]) + 3]
            if (argv[len(MODEL[entry]) + 3:] == DTYPE and (version, entry, pair[2]) in PAIRS
                    and pair[:2] == ["--enable-auto-tool-choice", "--tool-call-parser"]):
                mine, pred = model_answer("vllm", version, entry, argv)
                assert mine[0] != "unknown", f"vllm {version} {entry} {argv}: UNKNOWN ({pred.reason})"
                decided += 1
        tier.STATS["start-up tool pairs decided"] += decided
    finally:
        oracles.close_one("vllm", version)


def _old_vllm_cases():
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "engine"))
    import test_old_vllm
    return test_old_vllm.CASES


@pytest.mark.parametrize("version", sorted({c[1] for c in _old_vllm_cases()}))
def test_old_vllm_unit_cases_are_what_the_wheel_does(oracles, version):
    """tests/engine/test_old_vllm.py states real outcomes: each of its definite cases is what the
    release's real entry point does with that argv (its UNKNOWN cases: the real one decides)."""
    try:
        oracle = oracles.get("vllm", version)
        for name, _, command, outcome, detail in [c for c in _old_vllm_cases() if c[1] == version]:
            entry = "serve" if command[:2] == ["vllm", "serve"] else "api_server"
            argv = command[2:] if entry == "serve" else command[3:]
            real = oracle.ask({"entry": entry, "argv": argv})
            assert real["outcome"] in ("ok", "dies"), (name, real)
            if outcome == "ok":
                assert real == {"outcome": "ok", "value": detail or "auto"} or (
                    detail is None and real == {"outcome": "ok", "value": None}), (name, real)
            elif outcome == "rejected":
                assert real["outcome"] == "dies", (name, real)
    finally:
        oracles.close_one("vllm", version)
