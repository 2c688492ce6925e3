"""engine/words.py on the tuned corpus of real start-up heads and /metrics lines users pasted in
public issues and files (words_corpus/tuned.json, each entry's source recorded; scoring in
words_corpus/score.py). 0 wrong, at least 90% of whole entries read; the held-out part is
tests/engine/test_zz_words_heldout.py, run last, its rate reported apart."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "words_corpus"))

import score  # noqa: E402


def test_the_tuned_corpus():
    entries = score.load("tuned")
    s = score.score(entries)
    print("\n" + score.summary("words corpus, tuned", s))
    assert not s.wrong, s.wrong
    assert s.read >= 0.9 * s.whole, (score.summary("tuned", s), s.unread)
    assert {e["where"] for e in entries} == {"log", "metrics"} and {e["engine"] for e in entries} == {"vllm", "sglang"}
