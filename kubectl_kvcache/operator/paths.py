"""Where a workload keeps its Pod template in the raw object: one table, read by the decoder
(decode.workload_record, which names the path in its errors), by recover's reader
(load/recovery.py: which workloads opt in) and by its planner (judge/recover.py: the template it
re-points and the merge patch that does it). Pure."""

from __future__ import annotations

# The Pod template's keys from the object's root: spec.template, except where a kind nests it.
_POD_TEMPLATE = ("spec", "template")
_POD_TEMPLATE_OF = {"CronJob": ("spec", "jobTemplate", "spec", "template")}     # its Job template's


def pod_template_path(kind) -> tuple[str, ...]:
    """The keys that lead from a workload object of `kind` to its Pod template."""
    return _POD_TEMPLATE_OF.get(kind, _POD_TEMPLATE)


def pod_template(workload) -> dict | None:
    """A workload object's Pod template as written, or None when it has none (any step along the
    path absent or not an object). Tolerant: for objects not decoded (recover copies them whole)."""
    node = workload
    for key in pod_template_path(workload.get("kind")):
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def pod_template_patch(kind, annotations: dict) -> dict:
    """A JSON merge patch that sets `annotations` on the Pod template of a workload of `kind`."""
    patch: dict = {"metadata": {"annotations": annotations}}
    for key in reversed(pod_template_path(kind)):
        patch = {key: patch}
    return patch
