"""verify's view: one row per engine container, the per-Pod argv listing, the summary line."""

from typing import List, Tuple

from kubectl_kvcache.engine import DISPLAY_NAMES, IMAGE_TAG, MINIMUM, SPEC_VERSION
from kubectl_kvcache.render.core import Column, View, cell, escape, line
from kubectl_kvcache.verify import REJECTED, STATUSES, Item


def version_label(engine, version, source):
    """`vLLM 0.29.0 (spec)`: an engine release and where its version was read."""
    where = {SPEC_VERSION: "spec", IMAGE_TAG: "image tag", MINIMUM: "unknown: operator minimum"}.get(source, "?")
    return f"{DISPLAY_NAMES.get(engine, engine)} {version} ({where})"


def _owner(item):
    return f"{item.owner['kind']}/{item.owner['name']}" if item.owner else None


def _version(item):
    return version_label(item.engine, item.engine_version, item.version_source) if item.engine_version else None


VIEW = View(
    columns=(Column("namespace", lambda i: i.namespace), Column("pod", lambda i: i.pod),
             Column("role", lambda i: i.role), Column("engine", lambda i: i.engine),
             Column("binding", lambda i: i.binding), Column("expected", lambda i: i.expected),
             Column("effective", lambda i: i.effective), Column("status", lambda i: i.status)),
    wide=(Column("container", lambda i: i.container), Column("version", _version), Column("owner", _owner),
          Column("reason", lambda i: i.reason)),
    rows=lambda report: report.items,
    to_dict=lambda report: report.to_dict(),
    empty="pool-attached engine pods",
)


def summary(report):
    counts = report.summary()
    parts = [f"{counts[s]} {s}" for s in STATUSES if counts[s]]
    noun = "pod" if counts["total"] == 1 else "pods"
    return f"{counts['total']} {noun}: " + ", ".join(parts) if parts else f"{counts['total']} {noun}"


def argv_listing(item: Item) -> List[Tuple[str, str, str]]:
    """(position, element, mark) rows for a Pod's engine container, each occurrence marked."""
    spec = item.container_spec or {}
    marks = {}
    for n, occ in enumerate(item.occurrences):
        mark = f"<- kv-cache-dtype #{n + 1} = {occ['value']!r}"
        if n == item.winner and item.status != REJECTED:
            mark += "  (wins)"
        elif n == item.winner:
            mark += "  (fatal)"
        key = (occ["source"], occ["index"])
        marks[key] = marks[key] + "; " + mark if key in marks else mark
    rows = []
    for source in ("command", "args"):
        for index, element in enumerate(spec.get(source) or ()):
            rows.append((f"{source}[{index}]", element, marks.get((source, index), "")))
    return rows


def pod_details(report, out):
    """For named Pods: the argv with every kv-cache-dtype occurrence marked (elements escaped
    before the columns are measured)."""
    for item in report.items:
        line(out)
        line(out, f"Pod {item.namespace}/{item.pod}, container {cell(item.container)}: {item.status}")
        if item.engine:
            line(out, f"  engine:   {version_label(item.engine, item.engine_version, item.version_source)}")
        line(out, f"  expected: {cell(item.expected)}    effective: {cell(item.effective)}")
        line(out, f"  reason:   {item.reason}")
        rows = [(pos, escape(element), escape(mark)) for pos, element, mark in argv_listing(item)]
        if rows:
            width = max(len(r[0]) for r in rows)
            ewidth = min(max(len(r[1]) for r in rows), 60)
            for pos, element, mark in rows:
                line(out, f"  {pos:<{width}}  {element:<{ewidth}}  {mark}".rstrip())
