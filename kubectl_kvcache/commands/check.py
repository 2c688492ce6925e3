"""`check`, `bindings` and `roles`: one judgement (`checks`), three views.

Exit codes: check 1 on an error finding (a warning too with --strict); bindings 1 when a
Binding is rejected or missing; roles 1 on an error role.
"""

import re

from kubectl_kvcache import checks, exitcodes, render, sources
from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.options import CheckOptions
from kubectl_kvcache.render import checks as views

_BINDING_ERRORS = {"binding-dtype-rejected", "binding-missing", "binding-domain-claimed"}


def exit_code(options: CheckOptions, report) -> int:
    if options.view == "check":
        counts = report.summary()
        bad = counts[checks.ERROR] or (options.strict and counts[checks.WARNING])
    elif options.view == "bindings":
        bad = any(f.code in _BINDING_ERRORS for f in report.findings)
    else:
        bad = any(e.severity == checks.ERROR for e in report.roles)
    return exitcodes.FINDINGS if bad else exitcodes.OK


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_REQUIREMENT = re.compile(rf"\s*(!?{_KEY}|{_KEY}\s*(==?|!=)\s*{_VALUE}|{_KEY}\s+(in|notin)\s+\(\s*{_VALUE}"
                          rf"(\s*,\s*{_VALUE})*\s*\))\s*")


def validate_selector(selector):
    """A label selector as the API server parses one (k, !k, k=v, k==v, k!=v, k in (..), k notin (..),
    comma-separated), else one error naming it."""
    parts, depth, current = [], 0, ""
    for ch in selector:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    bad = next((p for p in parts if not _REQUIREMENT.fullmatch(p)), None)
    if bad is not None:
        raise PluginError(f"invalid label selector {selector!r}: {bad.strip() or 'an empty requirement'!r} is not "
                          f"k, !k, k=v, k!=v, k in (v1,v2) or k notin (v1,v2)")


def select(report, snapshot, selector):
    """-l: keep what is about objects with those labels. Everything in scope was read and judged
    (a Binding's verdict needs all its users); the Setting's finding always stays."""
    if not selector:
        return report
    labels = {("KVCachePoolBinding", b.namespace, b.name): b.labels for b in snapshot.bindings.values()}
    labels.update({("ModelDeployment", d.namespace, d.name): d.labels for d in snapshot.deployments.values()})
    labels.update({("Pod", p.namespace, p.name): p.labels for p in snapshot.pods})
    labels.update({(w.kind, w.namespace, w.name): w.labels for w in snapshot.workloads})

    def chosen(kind, namespace, name):
        return sources.selector_matches(labels.get((kind, namespace, name)) or {}, selector)

    return checks.Report(
        report.setting,
        [f for f in report.findings if f.code == "setting" or chosen(f.kind, f.namespace, f.name)],
        [e for e in report.bindings if chosen("KVCachePoolBinding", e.namespace, e.name)],
        [e for e in report.roles if chosen("ModelDeployment", e.namespace, e.deployment)],
        report.checked)


def run(options: CheckOptions, io) -> int:
    if options.selector:
        validate_selector(options.selector)                 # a malformed selector fails before any request
    snapshot = sources.load(options.connection, options.scope, io.stdin, render.tracer(io.stderr))
    render.notes(snapshot, io.stderr)
    report = select(checks.check(snapshot), snapshot, options.selector)
    view = views.VIEWS[options.view]
    listed = render.show(view, report, options.output, io.stdout, io.stderr)
    if not options.output.structured:
        if options.view == "check":
            if not any(report.checked.values()):
                render.nothing_found(snapshot, view.empty, io.stderr)
            render.line(io.stderr, views.summary(report))
        elif not listed:
            render.nothing_found(snapshot, view.empty, io.stderr)
    return exit_code(options, report)
