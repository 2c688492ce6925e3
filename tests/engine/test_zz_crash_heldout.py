"""The held-out crash tails (tests/engine/crash_tails.py HELD_OUT), collected after engine/crash.py
was written and not tuned to: run last, their rate reported apart from the tuned part's."""

from tests.engine.crash_tails import HELD_OUT
from tests.engine.test_crash import _rate


def test_the_held_out_corpus():
    read, wrong, failures = _rate(HELD_OUT)
    print(f"crash tails (held out): {read}/{len(HELD_OUT)} read, {wrong} wrong; not read: {failures}")
    assert wrong == 0, failures
    assert read >= 0.9 * len(HELD_OUT), failures
