"""Generated label values (tests/metrics_corpus.py) through both text formats and prometheus_client's
parsers: each comes back as the same string, and never adds or changes a sample beside it."""

import pytest

import metrics_corpus


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_label_values_come_back_the_same(seed):
    cases, failures = metrics_corpus.run(seed, 300)
    assert cases == 600 and not failures, failures[:5]


def test_the_corpus_holds_what_would_break_an_unescaped_line():
    found = "".join(metrics_corpus.values(1, 300))
    assert all(c in found for c in ('"', "\\", "\n", "# EOF", "}"))
