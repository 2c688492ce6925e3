"""Every result the plugin prints goes through here: tables (upper-case headers, like kubectl),
wide tables, JSON and YAML. Diagnostics go to stderr elsewhere."""

import json

from kubectl_kvcache.engine.releases import DISPLAY_NAMES, IMAGE_TAG, MINIMUM, SPEC_VERSION

NONE = "<none>"


def version_label(engine, version, source):
    """`vLLM 0.29.0 (spec)`: an engine release and where its version was read, for verify."""
    where = {SPEC_VERSION: "spec", IMAGE_TAG: "image tag", MINIMUM: "unknown: operator minimum"}.get(source, "?")
    return f"{DISPLAY_NAMES.get(engine, engine)} {version} ({where})"


def _cell(value):
    if value is None or value == "":
        return NONE
    return str(value)


def table(headers, rows, out, no_headers=False):
    from tabulate import tabulate

    rows = [[_cell(v) for v in row] for row in rows]
    if not rows:
        return
    if no_headers:
        text = tabulate(rows, tablefmt="plain", disable_numparse=True)
    else:
        text = tabulate(rows, headers=[h.upper() for h in headers], tablefmt="plain", disable_numparse=True)
    out.write(text + "\n")


def as_json(data, out):
    buf = []
    for chunk in json.JSONEncoder(indent=2).iterencode(data):
        buf.append(chunk)
        if len(buf) >= 8192:
            out.write("".join(buf))
            buf.clear()
    buf.append("\n")
    out.write("".join(buf))


def as_yaml(data, out):
    import yaml

    out.write(yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True))


def structured(data, fmt, out):
    (as_json if fmt == "json" else as_yaml)(data, out)


VERIFY_COLUMNS = ("namespace", "pod", "role", "engine", "binding", "expected", "effective", "status")
VERIFY_WIDE = VERIFY_COLUMNS + ("container", "version", "owner", "reason")


def verify_rows(report, wide):
    rows = []
    for i in report.items:
        row = [i.namespace, i.pod, i.role, i.engine, i.binding, i.expected, i.effective, i.status]
        if wide:
            owner = f"{i.owner['kind']}/{i.owner['name']}" if i.owner else None
            version = version_label(i.engine, i.engine_version, i.version_source) if i.engine_version else None
            row += [i.container, version, owner, i.reason]
        rows.append(row)
    return rows


def verify_summary(report):
    counts = report.summary()
    parts = [f"{counts[s]} {s}" for s in ("OK", "MISMATCH", "MISSING", "REJECTED", "UNKNOWN") if counts[s]]
    noun = "pod" if counts["total"] == 1 else "pods"
    return f"{counts['total']} {noun}: " + ", ".join(parts) if parts else f"{counts['total']} {noun}"


def verify_report(report, fmt, out, no_headers=False):
    if fmt in ("json", "yaml"):
        structured(report.to_dict(), fmt, out)
        return
    wide = fmt == "wide"
    table(VERIFY_WIDE if wide else VERIFY_COLUMNS, verify_rows(report, wide), out, no_headers)


def pod_details(report, listing, out):
    """For named Pods: the argv with every kv-cache-dtype occurrence marked."""
    for item in report.items:
        out.write(f"\nPod {item.namespace}/{item.pod}, container {_cell(item.container)}: {item.status}\n")
        if item.engine:
            label = version_label(item.engine, item.engine_version, item.version_source)
            out.write(f"  engine:   {label}\n")
        out.write(f"  expected: {_cell(item.expected)}    effective: {_cell(item.effective)}\n")
        out.write(f"  reason:   {item.reason}\n")
        rows = listing(item)
        if rows:
            width = max(len(r[0]) for r in rows)
            ewidth = min(max(len(r[1]) for r in rows), 60)
            for pos, element, mark in rows:
                line = f"  {pos:<{width}}  {element:<{ewidth}}  {mark}".rstrip()
                out.write(line + "\n")
