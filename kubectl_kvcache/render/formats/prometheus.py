"""-o prometheus: the families of -o openmetrics (render/metrics.py) in the Prometheus 0.0.4 text
format, the one a Pushgateway (`curl --data-binary @-`) and node-exporter's textfile collector
read (both with expfmt.TextParser): the build info family as a gauge named ..._info, no UNIT
lines, no `# EOF`, no timestamps (the textfile collector skips a file that has any). Label
values are escaped as in render/formats/openmetrics.py (the same three escapes)."""

from __future__ import annotations

from kubectl_kvcache.render import metrics
from kubectl_kvcache.render.formats.openmetrics import write

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def emit(doc, out):
    write(metrics.samples(doc), out, openmetrics=False)


def failed_run(command, message, output, out):
    write(metrics.failed_samples(command, getattr(output, "subject", None)), out, openmetrics=False)
