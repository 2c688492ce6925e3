"""Held out: the label-value corpus (tests/metrics_corpus.py) on a seed never tuned on, run last in
tests/render; a value that does not come back the same fails, and the rate is printed apart
(`metrics label values, held out`)."""

import metrics_corpus

SEED, COUNT = 51_0051, 500


def test_held_out_seed(capsys):
    cases, failures = metrics_corpus.run(SEED, COUNT)
    with capsys.disabled():
        print(f"\nmetrics label values, held out: {cases - len(failures)}/{cases} came back the same")
    assert not failures, "\n".join(failures[:5])
