"""verify's view: one row per engine container, the per-Pod argv listing, the summary line."""

from typing import List, Tuple

from kubectl_kvcache.engine import DISPLAY_NAMES, IMAGE_TAG, MINIMUM, SPEC_VERSION
from kubectl_kvcache.render.core import Column, View, cell
from kubectl_kvcache.verify import CRASHING, DONE, NO_POD, REJECTED, STATUSES, STUCK, TO_ROLL, Item, state_label


def version_label(engine, version, source):
    """`vLLM 0.29.0 (spec)`: an engine release and where its version was read."""
    where = {SPEC_VERSION: "spec", IMAGE_TAG: "image tag", MINIMUM: "unknown: operator minimum"}.get(source, "?")
    return f"{DISPLAY_NAMES.get(engine, engine)} {version} ({where})"


def _owner(item):
    return f"{item.owner['kind']}/{item.owner['name']}" if item.owner else None


def _version(item):
    return version_label(item.engine, item.engine_version, item.version_source) if item.engine_version else None


def _pod(item):
    """The Pod's name; a replica that has no Pod shows whose it is (angle brackets: never a Pod name)."""
    return item.pod if item.pod is not None else f"<no pod: {item.deployment}>"


def _ready(item):
    if not item.state or item.state["ready"] is None:
        return None
    return "true" if item.state["ready"] else "false"


def _restarts(item):
    return item.state["restarts"] if item.state and item.state["restarts"] is not None else None


VIEW = View(
    columns=(Column("namespace", lambda i: i.namespace), Column("pod", _pod),
             Column("role", lambda i: i.role), Column("engine", lambda i: i.engine),
             Column("binding", lambda i: i.binding), Column("expected", lambda i: i.expected),
             Column("effective", lambda i: i.effective), Column("status", lambda i: i.status)),
    wide=(Column("container", lambda i: i.container), Column("version", _version), Column("owner", _owner),
          Column("state", state_label), Column("ready", _ready), Column("restarts", _restarts),
          Column("reason", lambda i: i.reason)),
    rows=lambda report: report.items,
    to_dict=lambda report: report.to_dict(),
    empty="pool-attached engine pods",
)


def summary(report):
    counts = report.summary()
    parts = [f"{counts[s]} {s}" for s in STATUSES if counts[s]]
    pods = counts["total"] - counts[NO_POD]
    head = f"{pods} {'pod' if pods == 1 else 'pods'}"
    if counts[NO_POD]:
        head += f", {counts[NO_POD]} {'replica' if counts[NO_POD] == 1 else 'replicas'} without a Pod"
    return f"{head}: " + ", ".join(parts) if parts else head


def deployment_line(d) -> str:
    """`deployment llm-prod/qwen-chat: 2/2 replicas run 'fp8', 0 to roll, 0 crash-looping`."""
    value = f"{d.expected!r}" if d.expected is not None else "as expected (nothing is expected: the Setting is off)"
    text = (f"deployment {d.namespace}/{d.name}: {d.counts[DONE]}/{d.desired} "
            f"{'replica runs' if d.desired == 1 else 'replicas run'} {value}, {d.counts[TO_ROLL]} to roll, "
            f"{d.counts[CRASHING]} crash-looping")
    if d.counts[STUCK]:
        which = ", ".join(f"{n} {s}" for s, n in sorted(d.stuck.items()))
        text += f", {which} that rolling will not fix"
    terminating = sum(r.terminating for r in d.roles)
    if terminating:
        text += f" ({terminating} old {'Pod' if terminating == 1 else 'Pods'} terminating)"
    return text


def deployment_lines(report, err):
    for d in report.deployments:
        err.write(deployment_line(d) + "\n")


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
    """For named Pods: the argv with every kv-cache-dtype occurrence marked."""
    for item in report.items:
        if item.pod is None:
            continue
        out.write(f"\nPod {item.namespace}/{item.pod}, container {cell(item.container)}: {item.status}\n")
        if item.engine:
            out.write(f"  engine:   {version_label(item.engine, item.engine_version, item.version_source)}\n")
        out.write(f"  expected: {cell(item.expected)}    effective: {cell(item.effective)}\n")
        out.write(f"  reason:   {item.reason}\n")
        rows = argv_listing(item)
        if rows:
            width = max(len(r[0]) for r in rows)
            ewidth = min(max(len(r[1]) for r in rows), 60)
            for pos, element, mark in rows:
                line = f"  {pos:<{width}}  {element:<{ewidth}}  {mark}".rstrip()
                out.write(line + "\n")
