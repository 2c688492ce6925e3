"""The Python matrix: argparse as every CPython from 3.10 to 3.14 obtainable here runs it
(pythons.py: Pyodide's from npm, required; the host's and pyenv's when present), on the
behaviours kvparse replays and on the conformance cases that meet them (each release's real
option table). Where the Pythons disagree, the model must say UNKNOWN naming them, unless every
Python the engine's images may run behaves as the one it replays. Fails, never skips, when
Pyodide cannot be fetched.
"""

import json
import os
import sys

import pytest

from kubectl_kvcache.engine import data, knowledge, kvparse
from kubectl_kvcache.engine.releases import image_pythons, parse_version, profile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import argparse_probe  # noqa: E402
import generated  # noqa: E402
import pythons  # noqa: E402
import test_conformance as tc  # noqa: E402

N_BEHAVIOURS = len(argparse_probe.BEHAVIOURS)


@pytest.fixture(scope="module")
def matrix(request):
    parsers, cases = pythons.conformance_cases()
    probe = {"parsers": dict(parsers, behaviours=argparse_probe.BEHAVIOUR_PARSER),
             "cases": [["behaviours", argv] for argv in argparse_probe.BEHAVIOURS.values()]
             + [[f"{c.engine} {c.version} {c.entry}", c.prepared] for c in cases]}
    try:
        required, extras, seconds = pythons.measure(probe, extras=True)
    except pythons.FetchError as err:
        pytest.fail(f"the Python matrix needs Pyodide from npm: {err}")
    stats = {"cases": len(probe["cases"]), "differing": 0, "seconds": seconds}
    yield required, extras, cases, stats
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter:
        reporter.write_line(f"\npython matrix: {', '.join(required)} (Pyodide); extras {', '.join(extras) or 'none'}; "
                            f"{stats['cases']} cases per Python ({N_BEHAVIOURS} behaviours); "
                            f"{stats['differing']} conformance cases differ across Pythons; {seconds:.0f} s")


def behaviours(results):
    return {v: answers[:N_BEHAVIOURS] for v, answers in results.items()}


def test_generated_differences_are_the_measured_ones(matrix):
    required = matrix[0]
    assert set(required) == set(pythons.PYODIDE.values())
    diffs, stray = pythons.differences(behaviours(required))
    assert not stray, f"argparse differs on behaviours no detector covers: {stray}"
    with open(generated.target("pythons"), encoding="utf-8") as f:
        current = f.read()
    assert current == pythons.render(behaviours(required), diffs), \
        "engine/pythons.json differs from the measurements: run scripts/engine-data --pythons --write"


def test_other_pythons_here_bring_no_new_behaviour(matrix):
    """Each extra CPython (the host's, pyenv's) answers every case as some measured one does."""
    required, extras = matrix[0], matrix[1]
    classes = {v: [pythons.answer_class(a) for a in answers] for v, answers in required.items()}
    for version, answers in extras.items():
        mine = [pythons.answer_class(a) for a in answers]
        twins = [v for v, theirs in classes.items() if theirs == mine]
        assert twins, f"Python {version} answers unlike every measured Python"
        if version.rsplit(".", 1)[0] == data.ARGPARSE_PYTHON:
            assert any(t.rsplit(".", 1)[0] == data.ARGPARSE_PYTHON for t in twins), version


def test_known_case_explicit_double_dash():
    """CPython 3.12.1 drops an explicit `--` value (a later occurrence wins), 3.12.7 refuses it:
    vLLM images run 3.12 with the patch unpinned, so the model cannot say."""
    groups = knowledge.load("pythons")["differences"]["explicit-double-dash"]["alike"]
    assert "3.12.1" in groups[0] and "3.12.7" in groups[1]
    for argv in (["m", "--kv-cache-dtype=--"], ["m", "--kv-cache-dtype=--", "--kv-cache-dtype", "auto"]):
        (outcome, _), pred = tc.model_answer("vllm", "0.29.0", "serve", argv)
        assert outcome == "unknown", pred.reason
        assert "3.12.1" in pred.reason and "3.12.7" in pred.reason and "patch not pinned" in pred.reason


def test_model_is_unknown_where_plausible_pythons_disagree(matrix):
    required, extras, cases, stats = matrix
    everyone = dict(required, **extras)
    mine = [v for v in required if v.rsplit(".", 1)[0] == data.ARGPARSE_PYTHON]
    wrong = []
    for k, case in enumerate(cases):
        prof = profile(case.engine, parse_version(case.version))
        verdicts = {v: pythons.verdict(answers[N_BEHAVIOURS + k], prof) for v, answers in everyone.items()}
        if len(set(verdicts.values())) == 1:
            continue
        stats["differing"] += 1
        shown = f"{case.engine} {case.version} {case.entry} {case.argv}: {verdicts}"
        met = kvparse.differences_met(case.prepared, prof.options_for(case.entry))
        split = [key for key, _ in met
                 if all(any(a in g and b not in g for g in knowledge.load("pythons")["differences"][key]["alike"])
                        for a in required for b in required if verdicts[a] != verdicts[b])]
        if not split:
            wrong.append(f"no detected difference explains {shown}")
            continue
        minors = image_pythons(case.engine, prof.version)
        plausible = [v for v in required if v.rsplit(".", 1)[0] in minors] + mine
        if len({verdicts[v] for v in plausible}) > 1:
            (outcome, _), pred = tc.model_answer(case.engine, case.version, case.entry, case.argv)
            if outcome != "unknown":
                wrong.append(f"model says {outcome} ({pred.reason}) on {shown}")
    assert not wrong, f"{len(wrong)} cases:\n" + "\n".join(wrong[:20])
    assert stats["differing"] > 0, "the targeted cases must show the known difference"


def test_probe_answers_are_json():
    """argparse_probe's own answer format, on this Python (what the tier parses)."""
    answer = json.loads(argparse_probe.main(""))
    assert answer["python"] == sys.version.split()[0]
    assert len(answer["results"]) == N_BEHAVIOURS
