"""-o openmetrics: the report's metric families (render/metrics.py) in the OpenMetrics 1.0 text
format, for Prometheus (which scrapes it, as application/openmetrics-text) and any OpenMetrics
reader: HELP and TYPE for each family, UNIT where its name ends with one, the build as an
`info` family, no timestamps, `# EOF` last.

Not for a Pushgateway or node-exporter's textfile collector: both read with expfmt.TextParser,
the Prometheus 0.0.4 text format, which refuses `# TYPE ... info` (prometheus/common
expfmt/text_parse.go readingType; pushgateway handler/push.go, node_exporter
collector/textfile.go); -o prometheus writes the same families in that format (docs/metrics.md).

Label values are cluster text: a backslash, a double quote and a newline are escaped as the
format requires (\\\\, \\", \\n), so a Pod-written string never ends a value or a line; the other
control characters are made visible as every format shows them (render.core.escape), and no
secret the run was given is printed (errors.without_secrets)."""

from __future__ import annotations

from kubectl_kvcache.errors import without_secrets
from kubectl_kvcache.render import metrics
from kubectl_kvcache.render.core import escape

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def label_value(value) -> str:
    """`value` as a quoted label value's inside: newlines kept (escaped by the format), every other
    control character visible, then \\, " and the newline escaped."""
    text = "\n".join(escape(part) for part in without_secrets(str(value)).split("\n"))
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value) -> str:
    """An integer as one (`3`), any other value as Python's shortest repr (`0.5`)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def lines(families, openmetrics: bool = True):
    """The exposition's lines, family by family. `openmetrics` False: the Prometheus 0.0.4 text
    format (render/formats/prometheus.py): no UNIT, an info family as a gauge, no `# EOF`."""
    for family, samples in families:
        kind = family.type if openmetrics else metrics.GAUGE
        name = family.name if openmetrics or family.type != metrics.INFO else family.name + "_info"
        yield f"# HELP {name} {_help(family.help)}"
        yield f"# TYPE {name} {kind}"
        if family.unit and openmetrics:
            yield f"# UNIT {name} {family.unit}"
        sample = family.name + "_info" if family.type == metrics.INFO else family.name
        for values, value in samples:
            labels = ",".join(f'{n}="{label_value(v)}"' for n, v in zip(family.labels, values, strict=True))
            yield f"{sample}{{{labels}}} {_number(value)}" if labels else f"{sample} {_number(value)}"
    if openmetrics:
        yield "# EOF"


def write(families, out, openmetrics: bool = True):
    for ln in lines(families, openmetrics):
        out.write(ln + "\n")


def emit(doc, out):
    """A whole Document (render/report.py), e.g. one across several contexts (`context` labels)."""
    write(metrics.samples(doc), out)


def failed_run(command, message, output, out):
    """A run that could not judge anything still says so: run_failed 1, exit code 2, nothing
    counted (the error itself is on stderr, never a label)."""
    write(metrics.failed_samples(command, getattr(output, "subject", None)), out)
