"""`recover` as people read it: the plan as a numbered list with its manifests, and the lines of
an --apply run (each step's outcome, the wait's progress line, what was done and what is left).
Cluster data is escaped before it reaches a terminal."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from kubectl_kvcache.render.core import escape, line, live_line, structured

RULE = "  "


def _ref(target) -> str:
    ns = target.get("namespace")
    return escape(f"{target.get('kind')} {ns + '/' if ns else ''}{target.get('name')}")


_FOR = {"available": "is available (condition Available=True for its current generation)",
        "ready": "is ready (status.phase Ready and condition QuotaGranted=True: its domain is granted a quota)",
        "unused": "is used by no ModelDeployment (status.usedBy)",
        "deleted": "is gone (its finalizers released)"}


def describe(step) -> str:
    """One line for a step of the plan (as the RecoveryPlan document writes it)."""
    if hasattr(step, "to_dict"):       # a typed step (judge/recover.py) in the executor's progress
        step = step.to_dict()
    action = step.get("action")
    if action == "setting":
        word = "true" if step["value"] else "false"
        return (f"Turn the Setting {'on' if step['value'] else 'off'}: merge patch spec.value \"{word}\" of "
                f"Setting gpustack-system/model-deployment-kv-cache-dtype-owned"
                + ("" if step["value"] else " (replicas are recreated without --kv-cache-dtype)"))
    if action == "create":
        obj = step["object"]
        meta = obj.get("metadata") or {}
        source = step.get("from") or ""
        origin = (f" (from a backup verified against the recovery's Binding: sha256 {escape(source[14:26])}...)"
                  if source.startswith("backup sha256:") else "")
        what = _ref({'kind': obj.get('kind'), 'namespace': meta.get('namespace'), 'name': meta.get('name')})
        if step.get("exists"):
            return f"Adopt {what} (it exists with this spec: nothing is created)"
        return f"Create {what}" + origin
    if action == "patch":
        return f"Patch {_ref(step['target'])} (JSON merge patch, backed up first): {escape(json.dumps(step['patch']))}"
    if action == "delete":
        uid = step["target"].get("uid")
        return f"Delete {_ref(step['target'])}" + (f" (uid {escape(uid)}; backed up first)" if uid else
                                                   " (backed up first)")
    if action == "wait":
        cond = step.get("for", "")
        if cond.startswith("value="):
            return f"Wait until the Setting reports status.value {cond[6:]}"
        return f"Wait until {_ref(step['target'])} {_FOR.get(cond, escape(cond))}"
    return escape(f"{action}: {step}")


def _manifest(obj, out, indent="       "):
    import yaml

    from kubectl_kvcache.render import terminal

    # one row per value, as kubectl get -o yaml prints it: never folded by YAML nor wrapped at a
    # space by the plugin (a continuation indented less than its row is no longer the same YAML).
    # On a terminal narrower than a `key: value` row, the value goes alone on the next row,
    # indented under its key: the same YAML (yaml_rows), and the terminal never folds a value (a
    # uid, an image) in its middle; piped, one row per value
    text = yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, allow_unicode=False, width=1 << 16)
    width = terminal.of(out, terminal.NEVER).width
    for row in yaml_rows([indent + r for r in text.splitlines()], width):
        line(out, row, wrap=False)


# `key: value` as PyYAML's block style writes a mapping entry (a sequence item's first key after
# `- `): a plain key, then a scalar that is not a block scalar (| or >)
_ENTRY = re.compile(r"(?P<head> *(?:- )*)(?P<key>[A-Za-z0-9_./-][^:'\"#]*):[ ](?P<value>[^|>\s].*)")


def yaml_rows(rows: list[str], width: int | None) -> list[str]:
    """Block-style YAML rows for a terminal `width` wide (None: as they are): a `key: value` row
    longer than the width is split into `key:` and the value on the next row, indented two
    columns past its key (YAML reads a scalar that starts on a more indented next line as the
    key's value: the same document)."""
    if not width:
        return rows
    out = []
    for row in rows:
        m = _ENTRY.fullmatch(row) if len(row) > width else None
        if m is None:
            out.append(row)
            continue
        out += [f"{m['head']}{m['key']}:", " " * (len(m["head"]) + 2) + m["value"]]
    return out


def dtype_source(t) -> str:
    """Where the target dtype comes from, in words (text and markdown)."""
    return {"flag": "--dtype", "suggestion": "check's suggestion", "adopted": "the Binding its users were moved to",
            "anchor": f"the recovery's Binding {t.get('recoveryBinding')}"}.get(t["dtypeSource"], t["dtypeSource"])


def capacity_by_step(plan_dict) -> dict[int, list[str]]:
    """The KV-cache line of each moved deployment's role (the plan's `capacity`, judge/capacity),
    by the index of the step that creates its replacement: the create of the same name (replace:
    after its delete), else the last create of a ModelDeployment before the old one's delete
    (side-by-side). Not yet escaped."""
    steps = plan_dict.get("steps") or []
    found: dict[int, list[str]] = {}
    for entry in plan_dict.get("capacity") or ():
        name = entry.get("deployment")
        creates = [n for n, s in enumerate(steps) if s.get("action") == "create"
                   and (s.get("object") or {}).get("kind") == "ModelDeployment"]
        at = next((n for n in creates if ((steps[n]["object"].get("metadata") or {}).get("name")) == name), None)
        if at is None:
            delete = next((n for n, s in enumerate(steps) if s.get("action") == "delete"
                           and (s.get("target") or {}).get("kind") == "ModelDeployment"
                           and (s.get("target") or {}).get("name") == name), None)
            at = max((n for n in creates if delete is not None and n < delete), default=None)
        if at is not None:
            role = f" role {entry['role']}" if entry.get("role") else ""
            found.setdefault(at, []).append(f"KV cache of {name}{role} (Pod {entry.get('pod')}): {entry['summary']}")
    return found


def plan(plan_dict, out):
    b, t = plan_dict["binding"], plan_dict["target"]
    rejected = ", ".join(f"{r['kind']} {r['name']} on {r['engine']} {r['version']}" for r in b["rejectedBy"])
    line(out, escape(f"Recovery of KVCachePoolBinding {b['namespace']}/{b['name']} (pool {b['pool']}, domain "
               f"{b['domain']}, dtype {b['dtype']!r}"
               + (f"; rejected by {rejected}" if rejected else "") + ")"
               + ("" if b["exists"] else " [already deleted: planned from its backup]")))
    anchored = t.get("recoveryBinding")
    source = dtype_source(t)
    line(out, escape(f"Target: KVCachePoolBinding {t['namespace']}/{t['name']}, domain {t['domain']}, dtype "
               f"{t['dtype']!r} ({source}); strategy {t['strategy']}"))
    from_anchor = [k for k in ("name", "domain", "strategy") if (t.get("sources") or {}).get(k) == "anchor"]
    if anchored and from_anchor:
        line(out, escape(f"  {', '.join(from_anchor)} from {anchored}, which an earlier run of this recovery created "
                         f"(its annotations name the old Binding's uid); every other step is planned from the cluster"
                         f" or from a backup whose sha256 it records"))
    line(out)
    line(out, "Steps:")
    kv = capacity_by_step(plan_dict)
    for i, step in enumerate(plan_dict["steps"], 1):
        line(out, f"{i:>3}. {describe(step)}")
        for text in kv.get(i - 1, ()):
            line(out, f"       {escape(text)}")
        if step["action"] == "create" and not step.get("exists"):
            _manifest(step["object"], out)
    if plan_dict["warnings"]:
        line(out)
        line(out, "Warnings:")
        for w in plan_dict["warnings"]:
            line(out, f"  - {escape(w)}")
    referrers = plan_dict.get("referrers")
    if referrers:
        line(out)
        line(out, "Pointing at a renamed deployment (change them once the new one is available):")
        for text in referrer_lines(referrers):
            line(out, f"  - {escape(text)}")
    if plan_dict["manual"]:
        line(out)
        line(out, "By hand (the plan cannot do these):")
        for m in plan_dict["manual"]:
            line(out, escape(f"  - {m['kind']} {m['namespace']}/{m['name']}: {m['do']}"))
    where = plan_dict.get("backups")
    if where:
        line(out)
        line(out, backups_line(where))


def referrer_lines(referrers) -> list[str]:
    """The plan's `referrers` in words, one line each (text and markdown; not yet escaped)."""
    out = []
    for f in referrers.get("objects") or ():
        out.append(f"{f['kind']} {f['namespace']}/{f['name']} ({f['deployment']} -> {f['newName']}): {f['points']}; "
                   f"change: {f['do']}")
    if not out and referrers.get("checked"):
        where = "in the input" if referrers.get("source") == "files" else "in the namespace"
        renamed = ", ".join(r["from"] for r in referrers.get("renamed") or ())
        out.append(f"none: no {referrers['checked']} {where} point at {renamed}")
    out += list(referrers.get("unchecked") or ())
    out += list(referrers.get("notServed") or ())
    return out


def backups_line(where) -> str:
    """Where --apply writes its backups (escaped)."""
    return escape(f"Backups (--apply): folder {where['directory']} (from {where['directorySource']}; a rerun "
                  f"writes into the same one) and {where['record']}")


def show_plan(data, output, out):
    """The plan in the format -o asked for: as its record's kind says (render/formats), the
    numbered steps (rows), the RecoveryPlan document (data) or a report of it (a document
    printer's plan())."""
    from kubectl_kvcache.render import formats

    fmt = formats.get(output.format)
    if fmt.kind == formats.DATA:
        structured(data, output.format, out)
    elif fmt.kind == formats.DOCUMENT:
        fmt.printer().plan(data, output.command, out)
    else:
        plan(data, out)


def planned_only(err):
    line(err, "Nothing was changed. Review the plan, then run it with --apply (on a terminal it asks once; "
          "--yes skips the question).")


def requests(lines: Iterable[str], out):
    line(out)
    line(out, "Dry run (client): nothing was sent. The requests, in order (each guarded as described):")
    for text in lines:
        line(out, f"  {escape(text)}")


def server_dry_run(results, out, record=None):
    line(out)
    line(out, "Dry run (server): the API server validated every create, patch and delete (dryRun=All); nothing "
          "was persisted.")
    if record:
        line(out, f"  0. Record the recovery in {escape(record[0])}: {escape(record[1])}")
    for n, step, outcome in results:
        line(out, f"{n:>3}. {describe(step)}: {escape(outcome)}")


def step_result(n, total, step, outcome, out):
    line(out, f"[{n}/{total}] {describe(step)}: {escape(outcome)}", flush=True)


def backup_dir(path, out):
    line(out, f"Backups go to {escape(path)}", flush=True)


def waiting(text, elapsed, limit, err, tty, first):
    """The progress of a wait: one line rewritten in place on a terminal; elsewhere one line when
    the wait starts."""
    shown = f"waiting until {escape(text)} ({elapsed:.0f}s" + (f" of {limit:g}s)" if limit else ")")
    if tty:
        live_line(err, shown)
    elif first:
        line(err, f"waiting until {escape(text)}" + (f" (up to {limit:g}s)" if limit else ""), flush=True)


def waited(err, tty):
    if tty:
        line(err, flush=True)


def stopped(done: list[int], failed: int, left: list[int], total: int, resume: str, err, setting_off_at=None,
            backups=None):
    """Where the run stopped, the state it leaves the cluster in that it created (the Setting off),
    where its backups are (`backups`: folder, record), and the one command that continues it."""
    def span(ns):
        return ", ".join(str(n) for n in ns) if ns else "none"
    line(err, f"Stopped at step {failed} of {total}. Done: {span(done)}. Left: {span(left)}.")
    if setting_off_at is not None:
        line(err, f"The Setting is off: step {setting_off_at} of this recovery turned it off, and it stays off "
                  f"(replicas run without --kv-cache-dtype) until the recovery's last steps turn it on again.")
    if backups is not None:
        line(err, escape(f"Backups so far: folder {backups[0]} and {backups[1]} (the command below continues in "
                         f"the same folder)"))
    line(err, f"To continue: {resume}")


def cancelled(err):
    line(err, "Cancelled: nothing was changed.")


def record(ref, out):
    line(out, f"The recovery's state and backups are recorded in {escape(ref)}: rerunning this command, from "
              f"any machine, continues it", flush=True)


def finished(total, backups, ref, namespace, name, out):
    line(out, f"Recovery finished: {total} steps done. Backups: {escape(backups)} and {escape(ref)} (kubectl get "
              f"configmap {escape(name)} -n {escape(namespace)} -o yaml; delete it once they are no longer needed)")
    # the Binding's replicas may still roll onto the new dtype: name the command that says when they are done
    line(out, f"Replicas may still be rolling: 'kubectl kvcache verify -n {escape(namespace)} --wait' "
              f"exits 0 once every one runs as expected")


def setting_left_off(gate, unread, command, out):
    """The last lines of a recovery that finished with the Setting off: what that state means and
    the one command accepted in it (`gate`: judge/gate.Gate as `setting on` would ask it now; None
    when it could not be read, `unread` says why; `command(*argv)`: a command line on this cluster)."""
    line(out, "The Setting is off, as it was before this recovery: replicas run without --kv-cache-dtype (the "
              "upgrade is not done) until it is turned on.")
    if gate is None:
        line(out, escape(f"Whether turning it on is safe could not be read ({unread}): "
                         f"{command('check', '-A')} says, then {command('setting', 'on')}"))
    elif gate.passes:
        line(out, escape(f"check -A finds no errors that turning it on causes: {command('setting', 'on', '--wait')}"
                         f" (asks first; --yes skips the question)"))
    else:
        n = len(gate.caused)
        line(out, escape(f"Turning it on now is refused by its gate: check -A finds {n} error{'s' if n != 1 else ''} "
                         f"that turning it on causes; each with its fix: {command('check', '-A', '-o', 'describe')}"))


def already_finished(record, out):
    t = record.target
    line(out, escape(f"The recovery of KVCachePoolBinding {record.namespace}/{record.binding} to {t.get('name')} "
                     f"(dtype {t.get('dtype')!r}) finished; nothing to do. Its record and backups: ConfigMap "
                     f"{record.namespace}/{record.name}."))
