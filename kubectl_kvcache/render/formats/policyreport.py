"""-o policyreport: the report as the policy working group's PolicyReports (wgpolicyk8s.io/v1alpha2,
the CRDs in deploy/crds/ as published by kubernetes-sigs/wg-policy-prototypes), the form
Kyverno's policy-reporter lists and alerts on: one PolicyReport per namespace for what is in a
namespace, one ClusterPolicyReport for what is not (and for the run, when it read every
namespace), printed as a v1 List that `kubectl apply -f` takes, or that --apply-reports applies
(cli/flows/reports.py). -o openreports (openreports.py) is the same report in the OpenReports
form (openreports.io/v1alpha1 Report and ClusterReport).

One result per finding (check: render/report.py's findings, one by one) or per replica (verify:
its cases, an OK replica `pass`), and per thing asked for and not read. Nothing is decided here:
`fail` exactly where the Document says the case fails (the exit code's verdict); a finding a
policy rule ignored, or one the verdict left undecided (UNKNOWN, `unchecked`), is `skip`; what
does not fail and is not OK is `warn`; check's info findings and OK replicas `pass`. Each result
names its code as `policy` and `rule`, the plugin as `source`, and the objects it is about as
`resources`; the summary counts exactly the results.

Names and labels are fixed per command (`kubectl-kvcache-check`, `kubectl-kvcache-verify`, the
label app.kubernetes.io/managed-by=kubectl-kvcache and kubectl-kvcache/command=COMMAND), so a
later run finds and replaces them. Text is the plugin's and the cluster's: no secret the run
was given is in it (errors.without_secrets), every control character is made visible
(render.core.escape), as in -o sarif."""

from __future__ import annotations

import calendar
import json
import time

from kubectl_kvcache import __version__
from kubectl_kvcache.errors import without_secrets
from kubectl_kvcache.record import Record
from kubectl_kvcache.render.core import escape
from kubectl_kvcache.render.report import FAILED, PASSED, SKIPPED

SOURCE = "kubectl-kvcache"
MANAGED_BY = ("app.kubernetes.io/managed-by", "kubectl-kvcache")
COMMAND_LABEL = "kubectl-kvcache/command"
PASS, FAIL, WARN, SKIP = "pass", "fail", "warn", "skip"
RESULTS = (PASS, FAIL, WARN, "error", SKIP)        # the CRDs' summary keys, in their order
# the plugin's severity words as the CRDs' enum (critical, high, medium, low, info) has them
SEVERITIES = {"error": "high", "warning": "medium", "info": "info"}
CATEGORIES = {"verify": "KV-cache dtype in effect", "check": "KV-cache dtype upgrade readiness"}


class Form(Record):
    """One published form of the report: its group/version and the kinds of a namespace's report
    and of the cluster's; `source_field`: the report itself names its source (OpenReports)."""

    __slots__ = ("name", "api_version", "kind", "cluster_kind", "plural", "cluster_plural", "source_field")

    def __init__(self, name, api_version, kind, cluster_kind, plural, cluster_plural, source_field=False):
        self.name = name
        self.api_version = api_version
        self.kind = kind
        self.cluster_kind = cluster_kind
        self.plural = plural
        self.cluster_plural = cluster_plural
        self.source_field = source_field

    @property
    def group(self) -> str:
        return self.api_version.partition("/")[0]


POLICY_REPORT = Form("policyreport", "wgpolicyk8s.io/v1alpha2", "PolicyReport", "ClusterPolicyReport",
                     "policyreports", "clusterpolicyreports")
FORM = POLICY_REPORT


def report_name(command) -> str:
    """The one name of `command`'s report, in each namespace and in the cluster."""
    return f"kubectl-kvcache-{command}"


def labels(command) -> dict:
    return {MANAGED_BY[0]: MANAGED_BY[1], COMMAND_LABEL: command}


def selector(command) -> str:
    """The label selector that finds every report `command` wrote (to replace them)."""
    return ",".join(f"{k}={v}" for k, v in labels(command).items())


def _text(value) -> str:
    return escape(without_secrets("" if value is None else str(value)))


def _seconds(stamp) -> int:
    """RFC 3339 (render/report.now) -> seconds since the epoch."""
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))


def _ref(kind, namespace, name) -> dict:
    """An ObjectReference (the CRDs' resources[] items): apiVersion where the plugin knows it."""
    from kubectl_kvcache.operator import api

    known = {r.kind: r for r in (api.MODEL_DEPLOYMENT, api.BINDING, api.SETTING, api.POOL, api.BACKEND, api.POD)
             + api.WORKLOADS}
    ref = {}
    resource = known.get(kind)
    if resource is not None:
        ref["apiVersion"] = resource.api_version(
            resource.version or (api.SETTING_VERSION if resource is api.SETTING else api.VERSION))
    ref["kind"] = _text(kind)
    if namespace:
        ref["namespace"] = _text(namespace)
    ref["name"] = _text(name)
    return ref


class Result(Record):
    """One result before it is laid out: where it goes (a namespace; None: the cluster's report)."""

    __slots__ = ("namespace", "code", "result", "severity", "message", "refs", "properties", "scored")

    def __init__(self, namespace, code, result, severity, message, refs, properties, scored=True):
        self.namespace = namespace
        self.code = code
        self.result = result
        self.severity = severity
        self.message = message
        self.refs = refs
        self.properties = properties
        self.scored = scored


def _check_results(doc):
    for f in doc.findings:
        namespace = next((name for kind, name in f.path if kind == "namespace"), None)
        kind, name = f.path[-1]
        if f.failed:
            outcome = FAIL
        elif f.suppression is not None or f.undecided:
            outcome = SKIP
        else:
            outcome = PASS if f.severity == "info" else WARN
        props = {"severity": f.severity, "key": f.key}
        if f.fix:
            props["fix"] = f.fix
        if f.suppression is not None:
            props["ignored"] = f.suppression
        if f.file:
            props["file"] = f.file
        refs = ((kind, None if kind == "Namespace" else namespace, name),)
        yield Result(namespace if kind != "Namespace" else None, f.code, outcome,
                     SEVERITIES.get(f.severity, "high" if f.failed else "medium"), f.message, refs, props,
                     scored=f.suppression is None)


def _verify_results(doc):
    for c in doc.cases:
        namespace = next((ns for kind, ns, _ in c.refs if kind not in ("Namespace",) and ns), None)
        if c.outcome == FAILED:
            outcome, severity = FAIL, "high"
        elif c.outcome == SKIPPED or c.ignored is not None:
            outcome, severity = SKIP, "medium"
        elif c.outcome == PASSED and c.status == "OK":
            outcome, severity = PASS, "info"
        else:       # tolerated (--fail-on, a policy's warning): fails nothing, and is not OK
            outcome, severity = WARN, "medium"
        props = {"status": c.status, "replica": c.name} if c.kind == "Pod" else {"status": c.status}
        for key, value in (("reason", c.reason), ("fix", c.fix), ("engineSaid", c.said), ("ignored", c.ignored)):
            if value:
                props[key] = value
        message = c.summary or c.status
        yield Result(namespace, c.status, outcome, severity, message, c.refs, props,
                     scored=c.ignored is None)


# a result per replica (verify's cases) or per finding (check's findings)
_RESULTS = {"verify": _verify_results, "check": _check_results}


def _result(r, command, stamp) -> dict:
    out = {"source": SOURCE, "policy": _text(r.code), "rule": _text(r.code), "category": CATEGORIES[command],
           "result": r.result, "severity": r.severity, "scored": r.scored, "message": _text(r.message)}
    if r.refs:
        out["resources"] = [_ref(*ref) for ref in r.refs]
    out["properties"] = {_text(k): _text(v) for k, v in r.properties.items()}
    if stamp is not None:
        out["timestamp"] = {"seconds": stamp, "nanos": 0}
    return out


def _summary(results) -> dict:
    return {k: sum(1 for r in results if r["result"] == k) for k in RESULTS}


def reports(doc, form: Form = FORM) -> list[dict]:
    """The reports of a Document (render/report.py): a namespace's in it, sorted by namespace, then
    the cluster's (when it has results or the run read every namespace)."""
    if doc.command not in _RESULTS:
        raise ValueError(f"{doc.command} has no policy report form")
    results = list(_RESULTS[doc.command](doc))
    stamp = _seconds(doc.subject.time) if doc.subject.time else None
    groups: dict = {}
    for r in results:
        groups.setdefault(r.namespace, []).append(_result(r, doc.command, stamp))
    annotations = {"kubectl-kvcache/verdict": doc.verdict, "kubectl-kvcache/version": __version__}
    if doc.exit_code is not None:
        annotations["kubectl-kvcache/exit-code"] = str(doc.exit_code)
    if doc.subject.command:
        annotations["kubectl-kvcache/command-line"] = _text(doc.subject.command)
    out = []
    cluster_wide = doc.subject.namespace is None
    for namespace in sorted(n for n in groups if n is not None) + (
            [None] if None in groups or cluster_wide else []):
        items = groups.get(namespace, [])
        meta = {"name": report_name(doc.command), "labels": labels(doc.command), "annotations": dict(annotations)}
        if namespace is not None:
            meta["namespace"] = namespace
        obj = {"apiVersion": form.api_version, "kind": form.kind if namespace is not None else form.cluster_kind,
               "metadata": meta}
        if form.source_field:
            obj["source"] = SOURCE
        obj["summary"] = _summary(items)
        obj["results"] = items
        out.append(obj)
    return out


def as_list(items) -> dict:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def _write(data, out):
    json.dump(data, out, indent=2)
    out.write("\n")


def emit(doc, out, form: Form = FORM):
    _write(as_list(reports(doc, form)), out)


def failed_run(command, message, output, out):
    """A run that judged nothing writes no report (an empty List): a stored report is never
    replaced by one that says nothing; the error is on stderr and the exit code 2."""
    _write(as_list([]), out)
