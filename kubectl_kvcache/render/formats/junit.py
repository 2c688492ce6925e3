"""-o junit: the report as JUnit XML, for a CI's test reporter (GitLab's, Jenkins' junit step,
GitHub actions that publish test results): one <testsuite> per namespace (per context and
namespace on a multi-context run), one <testcase> per case of render/report.py -- a replica
(verify), an object judged (check), a Binding (bindings), a role (roles) -- a <failure> whose
message says what is wrong and whose text holds the reason and the fix, <skipped> for what could
not be decided, and the findings that fail nothing in <system-out>. The command line and what
was checked are the suites' <properties>.

The shape is the one Jenkins' junit-10.xsd (the schema pytest checks its own junitxml against)
accepts; tests/render/test_junit.py validates against it. Text is made XML-safe: every control
character is made visible by render.core.escape (XML 1.0 cannot carry most of them even as
character references), and so are U+FFFE/U+FFFF; ElementTree escapes the markup characters."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from kubectl_kvcache import __version__
from kubectl_kvcache.render.core import escape
from kubectl_kvcache.render.report import ERROR, FAILED, SKIPPED, fact_text

_NOT_XML = {0xFFFE: "\\ufffe", 0xFFFF: "\\uffff"}


def text(value) -> str:
    """`value` as text XML 1.0 can hold: one line, every control character visible."""
    return escape("" if value is None else value).translate(_NOT_XML)


def body(*parts) -> str:
    """Lines of the plugin's own (each escaped on its own): the reason, the fix."""
    return "\n".join(text(p) for p in parts if p)


def _properties(parent, doc):
    props = ET.SubElement(parent, "properties")
    pairs = ([("command", doc.subject.command)] if doc.subject.command else []) + \
        [(fact[0], fact_text(fact)) for fact in doc.facts] + [("kubectl-kvcache", doc.version)]
    for name, value in pairs:
        ET.SubElement(props, "property", name=text(name), value=text(value))


def _case(parent, case, command):
    classname = f"kvcache.{command}.{case.suite}"
    el = ET.SubElement(parent, "testcase", name=text(case.name), classname=text(classname))
    if case.outcome == FAILED:
        fix = f"fix: {case.fix}" if case.fix else "fix: none known"
        reason = f"reason: {case.reason}" if case.reason else ""     # one line, whatever the data holds
        said = f"engine said: {case.said}" if case.said else ""       # the engine's own line, as its log has it
        message = (case.summary or case.status) + (f"; engine said: {case.said}" if case.said else "")
        failure = ET.SubElement(el, "failure", type=text(case.status), message=text(message))
        failure.text = body(reason, said, fix)
    elif case.outcome == ERROR:         # a context that could not be read
        error = ET.SubElement(el, "error", type="PluginError", message=text(case.summary))
        error.text = text(f"error: {case.summary}")
    elif case.outcome == SKIPPED:
        skipped = ET.SubElement(el, "skipped", type=text(case.status),
                                message=text(case.reason or case.summary or case.status))
        if case.fix or case.said:
            skipped.text = body(f"engine said: {case.said}" if case.said else "", f"fix: {case.fix}" if case.fix else "")
    if case.notes:
        out = ET.SubElement(el, "system-out")
        out.text = body(*(f"{severity} {code}: {message}" + (f" fix: {fix}" if fix else "")
                          for severity, code, message, fix in case.notes))


def build(doc) -> ET.Element:
    failures = sum(1 for c in doc.cases if c.outcome == FAILED)
    errors = sum(1 for c in doc.cases if c.outcome == ERROR)
    root = ET.Element("testsuites", name=f"kubectl kvcache {doc.command}", tests=str(len(doc.cases)),
                      failures=str(failures), errors=str(errors))
    suites: dict = {}
    for case in doc.cases:
        suites.setdefault(case.suite, []).append(case)
    for name, cases in (suites or {"": []}).items():
        suite = ET.SubElement(root, "testsuite", name=text(f"kvcache {doc.command}" + (f" {name}" if name else "")),
                              tests=str(len(cases)), failures=str(sum(1 for c in cases if c.outcome == FAILED)),
                              errors=str(sum(1 for c in cases if c.outcome == ERROR)),
                              skipped=str(sum(1 for c in cases if c.outcome == SKIPPED)))
        _properties(suite, doc)
        for case in cases:
            _case(suite, case, doc.command)
    return root


def failed_run(command, message, output, out):
    """The document of a run that could not judge anything (the cluster unreachable, a bad
    kubeconfig): one testcase holding the <error>, so the CI reports the failure instead of
    reading a 0-byte file as no tests."""
    subject = output.subject
    root = ET.Element("testsuites", name=f"kubectl kvcache {command}", tests="1", failures="0", errors="1")
    suite = ET.SubElement(root, "testsuite", name=text(f"kvcache {command}"), tests="1", failures="0", errors="1",
                          skipped="0")
    props = ET.SubElement(suite, "properties")
    for name, value in ((("command", subject.command),) if subject is not None and subject.command else ()) + \
            (("kubectl-kvcache", __version__),):
        ET.SubElement(props, "property", name=text(name), value=text(value))
    case = ET.SubElement(suite, "testcase", name=text(f"kubectl kvcache {command}"), classname=text(f"kvcache.{command}"))
    error = ET.SubElement(case, "error", type="PluginError", message=text(message))
    error.text = text(f"error: {message}")
    _write(root, out)


def _write(root, out):
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")


def emit(doc, out):
    """A whole Document (render/report.py), e.g. one across several contexts."""
    _write(build(doc), out)
