"""-o sarif: the report as a SARIF 2.1.0 log (OASIS), for code scanning (GitHub's
upload-sarif, and any SARIF viewer): one run, its tool.driver the plugin with one rule per
finding code of the command's registry (check: judge/checks/findings.py CODES; verify: its
statuses, judge/verify.py MEANINGS), one result per finding of render/report.py's per-finding
list: its level (a finding that fails the run is `error`; a warning `warning`; the rest `note`),
its logical locations (namespace, object, role, replica; the context first on a run over
several), its physical location when read from files: the file its object was read from
(each its own, for a directory or several files) and the line the object starts on (`region.
startLine`; the one -f file without a line where load/ did not keep it), `suppressions`
(kind external: the policy file or flags) when a policy rule ignored it, and a partial
fingerprint hashed from the finding's key (no Pod name, no position: a rollout that renames
every Pod leaves every alert where it was). The invocation holds the command line with its
secrets replaced (cli/flags.command_line) and the exit code.

Text is the plugin's and the cluster's: no secret the run was given is in it
(errors.without_secrets), every control character is made visible (render.core.escape), as in
the other document formats; JSON escapes the rest (docs/sarif.md)."""

from __future__ import annotations

import hashlib
import json

from kubectl_kvcache import __version__
from kubectl_kvcache.errors import without_secrets
from kubectl_kvcache.render.core import escape
from kubectl_kvcache.render.report import CAPACITY_FACT, ERROR

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
VERSION = "2.1.0"
INFORMATION_URI = "https://github.com/gpustack/kubectl-kvcache"
FINGERPRINT = "kvcacheFinding/v1"
_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _text(value) -> str:
    """Text for a viewer: no secret the run was given (errors.without_secrets), every control
    character visible."""
    return escape(without_secrets("" if value is None else str(value)))


def _level(severity, failed=False):
    """A finding that fails the run is an error; otherwise check's severity, and a verify status
    that does not fail (tolerated by --fail-on) a warning."""
    if failed:
        return "error"
    return _LEVELS.get(severity, "warning")


def _uri(path) -> str:
    """A -f path as a URI reference: relative paths stay relative (code scanning resolves them
    against the repository), absolute ones become file: URIs."""
    import os
    from urllib.parse import quote

    posix = path.replace(os.sep, "/")
    if os.path.isabs(path):
        return "file://" + quote(posix if posix.startswith("/") else "/" + posix)
    return quote(posix)


def _driver(doc):
    rules = [{"id": r.code, "name": r.code, "shortDescription": {"text": _text(r.title)},
              "defaultConfiguration": {"level": _LEVELS.get(r.severity, "error")},
              "properties": {"severity": r.severity}} for r in doc.rules]
    return {"name": "kubectl-kvcache", "semanticVersion": __version__, "version": __version__,
            "informationUri": INFORMATION_URI, "rules": rules}


def _logical(path):
    """Each level of a finding's place, outermost first; the innermost carries the full name."""
    out, names = [], []
    for kind, name in path:
        names.append(str(name))
        out.append({"name": _text(name), "kind": _text(kind), "fullyQualifiedName": _text("/".join(names))})
    return out


def _result(finding, index, command):
    message = finding.message + (f"; engine said: {finding.said}" if finding.said else "") + \
        (f"; fix: {finding.fix}" if finding.fix else "")
    location = {"logicalLocations": _logical(finding.path)}
    if finding.file:
        physical: dict[str, object] = {"artifactLocation": {"uri": _uri(finding.file)}}
        if getattr(finding, "line", None):
            physical["region"] = {"startLine": finding.line}
        location["physicalLocation"] = physical
    digest = hashlib.sha256(f"{command}|{finding.key}".encode("utf-8", "surrogatepass")).hexdigest()
    result = {"ruleId": finding.code, "level": _level(finding.severity, finding.failed),
              "message": {"text": _text(message)}, "locations": [location],
              "partialFingerprints": {FINGERPRINT: digest},
              "properties": {"severity": finding.severity, "failed": finding.failed}}
    if index is not None:
        result["ruleIndex"] = index
    if finding.fix:
        result["properties"]["fix"] = _text(finding.fix)
    if finding.said:        # the engine's own line (a crashed replica's error), apart from the plugin's words
        result["properties"]["engineSaid"] = _text(finding.said)
    if finding.suppression is not None:     # a policy rule ignored it: kept, never an alert (docs/policy.md)
        result["suppressions"] = [{"kind": "external", "status": "accepted",
                                   "justification": _text(finding.suppression)}]
    return result


def _invocation(subject, exit_code, notifications=()):
    inv: dict[str, object] = {"executionSuccessful": exit_code in (0, 1, None) and not notifications}
    if subject is not None and subject.command:
        inv["commandLine"] = _text(subject.command)
    if exit_code is not None:
        inv["exitCode"] = exit_code
    if notifications:
        inv["toolExecutionNotifications"] = [{"level": "error", "message": {"text": _text(m)}}
                                             for m in notifications]
    return inv


def _exit_code(doc):
    """The exit code the run ends with: its verdict's (render/report.Document.exit_code; several
    contexts: the worst), else as the command said (Subject.exit_code)."""
    return doc.exit_code if doc.exit_code is not None else doc.subject.exit_code


def log(doc) -> dict:
    """The SARIF log of a Document (render/report.py)."""
    indexes = {r.code: i for i, r in enumerate(doc.rules)}
    unread = [f"context {c.context}: {c.summary}" for c in doc.cases if c.outcome == ERROR]
    invocation = _invocation(doc.subject, _exit_code(doc), unread)
    if doc.subject.time:
        invocation["endTimeUtc"] = doc.subject.time
    run: dict[str, object] = {"tool": {"driver": _driver(doc)},
           "automationDetails": {"id": f"kubectl-kvcache/{doc.command}/"},
           "invocations": [invocation],
           "results": [_result(f, indexes.get(f.code), doc.command) for f in doc.findings],
           "properties": {"title": _text(doc.title), "verdict": doc.verdict}}
    capacity = next((data for label, _, data in doc.facts if label == CAPACITY_FACT), None)
    if capacity is not None:        # after --observe: per deployment and Binding (render/report._capacity_facts)
        run["properties"]["capacity"] = [_text(d) for d in capacity]  # type: ignore[index]
    files = sorted({f.file for f in doc.findings if f.file})
    if files:
        run["artifacts"] = [{"location": {"uri": _uri(f)}} for f in files]
    return {"$schema": SCHEMA, "version": VERSION, "runs": [run]}


def _write(data, out):
    json.dump(data, out, indent=2)
    out.write("\n")


def emit(doc, out):
    """A whole Document, e.g. one across several contexts."""
    _write(log(doc), out)


def failed_run(command, message, output, out):
    """The log of a run that could not judge anything: no results, the invocation failed with the
    error as its notification and exit code 2, so code scanning does not read it as all clear."""
    run = {"tool": {"driver": {"name": "kubectl-kvcache", "semanticVersion": __version__, "version": __version__,
                               "informationUri": INFORMATION_URI}},
           "automationDetails": {"id": f"kubectl-kvcache/{command}/"},
           "invocations": [_invocation(output.subject, 2, (message,))], "results": []}
    _write({"$schema": SCHEMA, "version": VERSION, "runs": [run]}, out)
