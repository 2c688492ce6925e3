"""The KV-cache capacity of a deployment and of a Binding: the sum of its replicas' own figures
(Item.capacity, engine/capacity.py), and how many of its replicas said one. Pure.

A sum over replicas some of which were not read is a floor, never the total: `complete` says
whether every replica was read, and a group none of whose replicas was read has no sum (None,
shown `-`), never 0. Each replica is counted once per engine container row it has.
"""

from __future__ import annotations


def _group(items, key) -> list[dict]:
    groups: dict = {}
    for item in items:
        name = key(item)
        if name is None or item.pod is None:
            continue
        groups.setdefault((item.namespace, name), []).append(item)
    out = []
    for (namespace, name), rows in sorted(groups.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        read = [r.capacity for r in rows if r.capacity is not None and r.capacity.tokens is not None]
        lens = {c.max_len for c in read if c.max_len is not None}
        out.append({"namespace": namespace, "name": name, "replicas": len(rows), "read": len(read),
                    "tokens": sum(c.tokens for c in read) if read else None, "complete": len(read) == len(rows),
                    "maxLength": lens.pop() if len(lens) == 1 else None})
    return out


def totals(items) -> dict:
    """{"deployments": [...], "bindings": [...]}: per ModelDeployment (or owner) and per Binding,
    the replicas, how many said their capacity, the sum of what they said (None: none did), and
    the max length they all logged (None: not one value)."""
    return {"deployments": _group(items, lambda i: i.deployment),
            "bindings": _group(items, lambda i: i.binding)}


def observed(items) -> bool:
    """Whether any row's capacity was looked at (an --observe run that read a log or /metrics)."""
    return any(i.capacity is not None for i in items)


def text(group: dict) -> str:
    """`1,304,288 tokens (2/2 replicas read)`; none read: `not read (0/2 replicas)`."""
    if group["tokens"] is None:
        return f"not read (0/{group['replicas']} replicas)"
    floor = "" if group["complete"] else "at least "
    return f"{floor}{group['tokens']:,} tokens ({group['read']}/{group['replicas']} " \
           f"{'replica' if group['replicas'] == 1 else 'replicas'} read)"
