"""Label values a cluster could hold (any text a name, a namespace or a Pod-written string may
carry), generated from a seed: the exposition must give each back unchanged through
prometheus_client's parsers (tests/render/test_metrics_corpus.py on tuned seeds,
test_zz_metrics_heldout.py on a seed never tuned on)."""

import io
import random

import metrics_text
from kubectl_kvcache.render import metrics
from kubectl_kvcache.render.formats import openmetrics

# the characters the text formats give a meaning to, line ends, and text around them (the other
# control characters are made visible, not kept: test_metrics.py)
ALPHABET = ['"', "\\", "\n", "#", " ", "{", "}", ",", "=", "n", "EOF", "# EOF", "\\n", '\\"', "é", "日本", "\u00a0",
            "kubectl_kvcache_run_failed", "0", "1", "-", ".", "/", "_"]


def values(seed, count):
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12))) for _ in range(count)]


def round_trip(value, fmt) -> str | None:
    """`value` as one sample's label of a family, read back by the format's parser (None: the
    exposition did not parse, or the run_failed gauge beside it did not come back as written)."""
    family = metrics.FINDINGS
    rows = [(metrics.RUN_FAILED, [(("verify",), 1)]),
            (family, [(("check", value, value, "code", "error", "true"), 7)])]
    out = io.StringIO()
    openmetrics.write(rows, out, openmetrics=fmt == "openmetrics")
    try:
        got = metrics_text.samples(fmt, out.getvalue(), family.name)
        failed = metrics_text.samples(fmt, out.getvalue(), metrics.RUN_FAILED.name)
    except ValueError:
        return None
    if failed != [({"command": "verify"}, 1.0)] or len(got) != 1 or got[0][1] != 7:
        return None
    return got[0][0]["namespace"] if got[0][0]["context"] == got[0][0]["namespace"] else None


def run(seed, count):
    """(cases, failures) over both formats."""
    failures = []
    cases = 0
    for value in values(seed, count):
        for fmt in metrics_text.FORMATS:
            cases += 1
            back = round_trip(value, fmt)
            if back != value:
                failures.append(f"{fmt}: {value!r} came back as {back!r}")
    return cases, failures
