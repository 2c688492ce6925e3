"""Issue 49's readers on the held-out part of the capacity corpus (capacity_corpus/heldout.json: threads
kept apart from the tuned part, never tuned on). Named to run last in tests/engine; its rates are
printed apart from the tuned ones. A definite wrong answer fails, as on the tuned part; the rate of
decided cases answered is reported, not held to a floor."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "capacity_corpus"))

import capacity_score as score  # noqa: E402


def _report(s):
    print("\n" + s.line().replace(s.name, f"capacity corpus, held out, {s.name}", 1))
    assert not s.wrong, s.wrong


def test_held_out_capacity_lines():
    _report(score.score_capacity(score.load("heldout")["capacity"]))


def test_held_out_fits():
    _report(score.score_fits(score.load("heldout")["fits"]))


def test_held_out_gpus():
    _report(score.score_gpus(score.load("heldout")["gpus"]))
