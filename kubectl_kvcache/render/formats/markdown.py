"""-o markdown: the report as a change ticket takes it (CommonMark with GitHub's pipe tables),
readable rendered and as plain text: the title and verdict, the command that produced it, what
was checked, each failing case with its reason and fix, what was not decided, the notes, the
per-deployment progress (verify) and every row.

Safety: text from the cluster or the command line is printed only inside code spans (or a
fenced block), where Markdown interprets nothing -- no emphasis, HTML, entity, link or autolink
(GitHub's extended autolinks included) -- after render.core.escape has made every control
character visible; a backtick run inside gets a longer fence, and a `|` in a table cell is
written `\\|` (GFM's table rule). Only the plugin's own words are left bare."""

from __future__ import annotations

import re

from kubectl_kvcache.render.core import escape
from kubectl_kvcache.render.report import ERROR, FAILED, PASSED, SKIPPED, count_text

_BARE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 -]*")     # a word that means nothing to Markdown
_VERDICT = {PASSED: "PASSED", FAILED: "FAILED"}
_NONCHARACTERS = {0xFFFE: "\\ufffe", 0xFFFF: "\\uffff"}    # as -o junit shows them


def code(value, cell=False) -> str:
    """`value` as a code span (nothing inside is interpreted); None or "" is *none*."""
    if value is None or value == "":
        return "*none*"
    text = escape(value).translate(_NONCHARACTERS)
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * (max(runs) + 1 if runs else 1)
    if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ")
                                                       and text.strip(" ")):
        text = f" {text} "      # CommonMark strips one space each side
    if cell:
        text = text.replace("|", "\\|")
    return f"{fence}{text}{fence}"


def word(value, cell=False) -> str:
    """A status or verdict: bare when it is letters, digits, spaces and hyphens only, else code."""
    text = "" if value is None else str(value)
    return text if _BARE.fullmatch(text) else code(text, cell)


def fenced(text, info="sh", indent="") -> list[str]:
    """A fenced block of `text`'s lines, each escaped; the fence longer than any backtick run."""
    rows = [escape(r).translate(_NONCHARACTERS) for r in text.split("\n")]
    runs = [len(r) for row in rows for r in re.findall(r"`{3,}", row)]
    fence = "`" * max([3] + [n + 1 for n in runs])
    return [indent + f"{fence}{info}"] + [indent + r if r else "" for r in rows] + [indent + fence]


def table(headers, rows) -> list[str]:
    """A pipe table padded so that its columns line up as plain text too (tabulate's GitHub form;
    every cell is already a code span or a word, so nothing in it is parsed as a number)."""
    from tabulate import tabulate

    cells = [[code(v, cell=True) if not isinstance(v, int) or isinstance(v, bool) else str(v) for v in row]
             for row in rows]
    heads = [h.title() if h.isupper() else h for h in headers]
    return tabulate(cells, headers=heads, tablefmt="github", disable_numparse=True,
                    stralign="left").splitlines()


def _case_head(n, case):
    where = f" in {code(case.suite)}" if case.suite else ""
    return f"{n}. **{word(case.status)}** {code(case.name)}{where}"


def lines_of(doc) -> list[str]:
    out = [f"# kubectl kvcache {doc.title}", ""]     # the plugin's words and counts only
    counts = ", ".join(word(count_text(n, w)) for w, n in doc.counts if n or w in ("failing", "total"))
    code_ = doc.exit_code if doc.exit_code is not None else doc.subject.exit_code      # the verdict's, as the run's
    verdict = _VERDICT[doc.verdict] + (f" (exit code {code_})" if doc.verdict == FAILED and code_ is not None else "")
    out += [f"**Verdict: {verdict}**" + (f": {counts}" if counts else ""), ""]
    if doc.subject.command:
        out += ["Produced by:", ""] + fenced(doc.subject.command) + [""]
    out += [f"kubectl-kvcache {doc.version}.", ""]

    out += ["## What was checked", ""]
    for label, words, data in doc.facts:      # the plugin's words bare (they are letters and
        shown = [words] if words else []        # punctuation that means nothing here), the data as code
        out.append(f"- **{label}:** " + " ".join(shown + [", ".join(code(d) for d in data)] if data else shown))
    contexts = sorted({c.context for c in doc.cases if c.context})
    if contexts:
        out.append(f"- **Contexts:** {', '.join(code(c) for c in contexts)}")
    out.append("")

    unread = [c for c in doc.cases if c.outcome == ERROR]
    if unread:
        out += ["## Not read", ""]
        out += [f"{n}. {code(c.name)}: {code(c.summary)}" for n, c in enumerate(unread, 1)] + [""]

    failed = [c for c in doc.cases if c.outcome == FAILED]
    out += ["## Failing", ""]
    if not failed:
        out += ["Nothing fails.", ""]
    for n, case in enumerate(failed, 1):
        out.append(_case_head(n, case))
        if case.summary:
            out.append(f"   - What: {code(case.summary)}")
        if case.reason:         # one line: a line break in cluster data is made visible, never split on
            out.append(f"   - Reason: {code(case.reason)}")
        if case.said:           # the engine's own line, beside the plugin's words for it
            out.append(f"   - Engine said: {code(case.said)}")
        out.append(f"   - Fix: {code(case.fix) if case.fix else 'none known'}")
    if failed:
        out.append("")

    skipped = [c for c in doc.cases if c.outcome == SKIPPED]
    if skipped:
        out += ["## Not decided", ""]
        for n, case in enumerate(skipped, 1):
            out.append(_case_head(n, case))
            out.append(f"   - Why: {code(case.reason or case.summary)}")
            if case.said:
                out.append(f"   - Engine said: {code(case.said)}")
            if case.fix:
                out.append(f"   - Fix: {code(case.fix)}")
        out.append("")

    noted = [c for c in doc.cases if c.notes]
    if noted:
        out += ["## Notes", ""]
        for case in noted:
            for severity, what, text, fix in case.notes:
                out.append(f"- **{word(severity)}** {word(what)} {code(case.name)}: {code(text)}"
                           + (f" Fix: {code(fix)}" if fix else ""))
        out.append("")

    if doc.progress is not None:
        headers, rows = doc.progress
        out += ["## Progress per deployment", ""]
        out += (table(headers, rows) if rows else ["No pool-attached ModelDeployment in scope."]) + [""]

    if doc.rows is not None:
        out += ["## Every row", ""]
        out += (table(doc.headers, doc.rows) if doc.rows else ["Nothing was found in scope."]) + [""]
    return out


def plan(data, command, out):
    """recover's plan (a RecoveryPlan document) for a change ticket: what is recovered, the steps
    with their manifests, the warnings and what is left to do by hand."""
    import yaml

    from kubectl_kvcache.render.recover import capacity_by_step, describe, dtype_source, referrer_lines

    b, t = data["binding"], data["target"]
    lines = [f"# kubectl kvcache recover: the plan for KVCachePoolBinding {code(b['namespace'] + '/' + b['name'])}",
             ""]
    if command:
        lines += ["Produced by:", ""] + fenced(command) + [""]
    from kubectl_kvcache import __version__

    lines += [f"kubectl-kvcache {__version__}. Nothing was changed: this is the plan (`--apply` runs it).", ""]
    lines += ["## What is recovered", ""]
    lines.append(f"- **Binding:** {code(b['namespace'] + '/' + b['name'])}, pool {code(b['pool'])}, domain "
                 f"{code(b['domain'])}, dtype {code(b['dtype'])}"
                 + ("" if b["exists"] else " (already deleted: planned from its backup)"))
    for r in b["rejectedBy"]:
        lines.append(f"- **Rejected by:** {code(r['kind'] + ' ' + r['name'])} on {code(r['engine'] + ' ' + r['version'])}: "
                     f"{code(r.get('reason'))}")
    source = dtype_source(t)
    lines.append(f"- **Target:** {code(t['namespace'] + '/' + t['name'])}, domain {code(t['domain'])}, dtype "
                 f"{code(t['dtype'])} ({source}), strategy {word(t['strategy'])}")      # the plugin's words
    lines += ["", "## Steps", ""]
    kv = capacity_by_step(data)
    for i, step in enumerate(data["steps"], 1):
        lines.append(f"{i}. {code(describe(step))}")
        lines += [f"{' ' * len(f'{i}. ')}- {code(text)}" for text in kv.get(i - 1, ())]
        if step["action"] == "create":
            manifest = yaml.safe_dump(step["object"], sort_keys=False, default_flow_style=False, allow_unicode=False)
            lines += [""] + fenced(manifest.rstrip("\n"), "yaml", " " * len(f"{i}. ")) + [""]   # inside the item
    if data["warnings"]:
        lines += ["", "## Warnings", ""] + [f"- {code(w)}" for w in data["warnings"]]
    if data.get("referrers"):
        lines += ["", "## Pointing at a renamed deployment", ""] + [f"- {code(text)}"
                                                                    for text in referrer_lines(data["referrers"])]
    if data["manual"]:
        lines += ["", "## By hand (the plan cannot do these)", ""]
        lines += [f"- {code(m['kind'] + ' ' + m['namespace'] + '/' + m['name'])}: {code(m['do'])}"
                  for m in data["manual"]]
    if data.get("backups"):
        b = data["backups"]
        lines += ["", "## Backups", "", f"- **Folder:** {code(b['directory'])} (from {code(b['directorySource'])}; a "
                                        f"rerun writes into the same one)", f"- **Record:** {code(b['record'])}"]
    while lines and lines[-1] == "":
        lines.pop()
    text = "\n".join(lines)
    out.write(re.sub(r"\n{3,}", "\n\n", text) + "\n")


def failed_run(command, message, output, out):
    """The document of a run that could not judge anything: the error, and how it was asked for."""
    from kubectl_kvcache import __version__

    lines = [f"# kubectl kvcache {command}: could not run", "", "**Verdict: ERROR (exit code 2)**", "",
             f"- **Error:** {code(message)}", ""]
    if output.subject is not None and output.subject.command:
        lines += ["Produced by:", ""] + fenced(output.subject.command) + [""]
    lines += [f"kubectl-kvcache {__version__}."]
    out.write("\n".join(lines) + "\n")


def emit(doc, out):
    """A whole Document (render/report.py), e.g. one across several contexts."""
    lines = lines_of(doc)
    while lines and lines[-1] == "":
        lines.pop()
    out.write("\n".join(lines) + "\n")
