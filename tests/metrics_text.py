"""-o openmetrics and -o prometheus read back by a real parser, prometheus_client's (the
OpenMetrics 1.0 parser for one, the Prometheus 0.0.4 text parser for the other): the parse
refuses what Prometheus would refuse, and gives each family's samples as (labels, value)."""

from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families as text_families

FORMATS = ("openmetrics", "prometheus")


def families(fmt, text) -> dict:
    """{family name: family} as the format's own parser reads `text`."""
    assert fmt in FORMATS, fmt
    if fmt == "openmetrics":
        assert text.endswith("# EOF\n"), text[-200:]
        parsed = list(openmetrics_families(text))
    else:
        assert "# EOF" not in text.splitlines() and "# UNIT" not in text
        parsed = list(text_families(text))
    names = [f.name for f in parsed]
    assert len(names) == len(set(names)), names        # one family once, never split
    return {f.name: f for f in parsed}


def samples(fmt, text, family) -> list:
    """[(labels, value)] of `family` (its name as the openmetrics parser names it: without _info)."""
    found = families(fmt, text)
    name = family if family in found else family.removesuffix("_info")
    return [(dict(s.labels), s.value) for s in found[name].samples] if name in found else []


def value(fmt, text, family, **labels):
    """The one sample of `family` with these labels (None: none)."""
    got = [v for ls, v in samples(fmt, text, family) if all(ls.get(k) == w for k, w in labels.items())]
    assert len(got) <= 1, got
    return got[0] if got else None
