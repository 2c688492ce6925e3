"""A policy file (`--policy FILE`, docs/policy.md): read bounded, decoded (JSON or YAML) and held
to its schema, key by key. Untrusted input: anything else is a PluginError naming the file and
the field, never a traceback. Which finding codes exist is the judge's (judge/policy.py checks
each rule's code against the registry); this module only reads.

    apiVersion: kubectl-kvcache/v1alpha1
    kind: Policy
    rules:
    - code: binding-auto          # a finding code (docs/check.md "Finding codes")
      severity: error             # error | warning | info; or `ignore: true`
      namespaces: [llm-prod]      # optional: only findings about objects in these namespaces
      kinds: [KVCachePoolBinding] # optional: ... of these kinds
      names: [legacy-auto]        # optional: ... with these names
      selector: team=research     # optional: ... whose labels match (kubectl's -l grammar)
      reason: why                 # optional: carried with each finding the rule changes
"""

from __future__ import annotations

import hashlib
import json
import os

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.kube import names as kube_names, selector as label_selector
from kubectl_kvcache.load.strict_json import DuplicateKey, unique_pairs

from kubectl_kvcache import API_VERSION      # one home: the package's (the reports share it)
KIND = "Policy"
# A policy is a few rules (~100 bytes each); past this it is refused before it is decoded.
MAX_BYTES = 256 * 1024
MAX_RULES = 1000
MAX_TEXT = 1024         # a reason, a selector
SEVERITIES = ("error", "warning", "info")
_TOP = ("apiVersion", "kind", "rules")
_RULE = ("code", "severity", "ignore", "namespaces", "kinds", "names", "selector", "reason")


class PolicyFile:
    """What a policy file said: its path, the sha256 of its bytes, and its rules as plain dicts
    (`code`, `severity` or None when ignored, `namespaces`/`kinds`/`names` as tuples or None,
    `selector`, `reason`, and `where`: `FILE: rules[N]`, for errors and reports)."""

    __slots__ = ("path", "digest", "rules")

    def __init__(self, path: str, digest: str, rules: tuple):
        self.path = path
        self.digest = digest
        self.rules = rules


def read(path: str) -> PolicyFile:
    raw = _read_bounded(path)
    where = path
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PluginError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    doc = _decode(text, where)
    return PolicyFile(path, "sha256:" + hashlib.sha256(raw).hexdigest(), _document(doc, where))


def _read_bounded(path):
    try:
        if os.path.isdir(path):
            raise PluginError(f"{path}: a directory, not a policy file")
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise PluginError(f"{path}: cannot read the policy file: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise PluginError(f"{path}: larger than {MAX_BYTES // 1024} KiB, the most a policy file may hold")
    return raw


def _decode(text, where):
    stripped = text.lstrip(" \t\r\n")
    if not stripped:
        raise PluginError(f"{where}: empty: a policy file is one object with apiVersion {API_VERSION}, kind {KIND}")
    if stripped.startswith(("{", "[")):
        try:
            return json.loads(text, object_pairs_hook=unique_pairs,
                              parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"{c} is not JSON")))
        except DuplicateKey as exc:
            raise PluginError(f"{where}: {exc.args[0]!r} is given twice in one object") from None
        except (ValueError, RecursionError) as exc:
            raise PluginError(f"{where}: not valid JSON: {str(exc).splitlines()[0][:200]}") from None
    return _yaml(text, where)


def _yaml(text, where):
    import yaml

    class Loader(yaml.SafeLoader):
        """Safe YAML, one document, no aliases (a policy needs none; an alias bomb gets none),
        no key given twice."""

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                raise _Refused("aliases (*name) are not allowed in a policy file")
            return super().compose_node(parent, index)

        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, str) and key in seen:
                    raise _Refused(f"{key!r} is given twice in one object")
                if isinstance(key, str):
                    seen.add(key)
            return super().construct_mapping(node, deep)

    loader = Loader(text)
    try:
        try:
            doc = loader.get_single_data()
        except _Refused as exc:
            raise PluginError(f"{where}: {exc}") from None
        except yaml.composer.ComposerError as exc:
            if "expected a single document" in str(exc):
                raise PluginError(f"{where}: several YAML documents: a policy file is one") from None
            raise PluginError(f"{where}: not valid YAML: {' '.join(str(exc).split())[:200]}") from None
        except yaml.YAMLError as exc:
            raise PluginError(f"{where}: not valid YAML: {' '.join(str(exc).split())[:200]}") from None
        except (RecursionError, ValueError, TypeError) as exc:
            raise PluginError(f"{where}: not valid YAML: {str(exc)[:200] or 'nested too deeply'}") from None
    finally:
        loader.dispose()
    return doc


class _Refused(Exception):
    pass


def _type(value):
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _document(doc, where):
    if not isinstance(doc, dict):
        raise PluginError(f"{where}: a policy file is one object (apiVersion, kind, rules), not {_type(doc)}")
    for key in doc:
        if key not in _TOP:
            raise PluginError(f"{where}: {_shown(key)}: unknown field (a policy has {', '.join(_TOP)})")
    if doc.get("apiVersion") != API_VERSION:
        raise PluginError(f"{where}: apiVersion: must be {API_VERSION}, not {_value(doc.get('apiVersion'))}")
    if doc.get("kind") != KIND:
        raise PluginError(f"{where}: kind: must be {KIND}, not {_value(doc.get('kind'))}")
    rules = doc.get("rules")
    if rules is None:
        rules = []
    if not isinstance(rules, list):
        raise PluginError(f"{where}: rules: must be a list of rules, not {_type(rules)}")
    if len(rules) > MAX_RULES:
        raise PluginError(f"{where}: rules: {len(rules)} rules, more than the {MAX_RULES} a policy may hold")
    return tuple(_rule(r, f"{where}: rules[{i}]") for i, r in enumerate(rules))


def _shown(key):
    return repr(key)[:80] if not isinstance(key, str) else (key[:80] if key.isprintable() else repr(key)[:80])


def _value(value):
    return "missing" if value is None else repr(value)[:80]


def _rule(rule, where):
    if not isinstance(rule, dict):
        raise PluginError(f"{where}: a rule is an object (code, and severity or ignore), not {_type(rule)}")
    for key in rule:
        if key not in _RULE:
            raise PluginError(f"{where}.{_shown(key)}: unknown field (a rule has {', '.join(_RULE)})")
    code = rule.get("code")
    if not isinstance(code, str) or not code:
        raise PluginError(f"{where}.code: {'missing' if code is None else 'must be a string'} (check's finding code or "
                          f"verify's status, docs/policy.md)")
    if ("severity" in rule) == ("ignore" in rule):
        raise PluginError(f"{where}: give exactly one of severity (error, warning, info) and ignore: true")
    severity = rule.get("severity")
    if "severity" in rule and severity not in SEVERITIES:
        raise PluginError(f"{where}.severity: must be one of {', '.join(SEVERITIES)}, not {_value(severity)}")
    if "ignore" in rule and rule["ignore"] is not True:
        raise PluginError(f"{where}.ignore: must be true (to keep a finding, leave the rule out), not "
                          f"{_value(rule['ignore'])}")
    namespaces = _names(rule, "namespaces", where, kube_names.valid_namespace)
    kinds = _names(rule, "kinds", where, None)
    object_names = _names(rule, "names", where, lambda v: kube_names.valid_name(v, "object"))
    selector = rule.get("selector")
    if selector is not None:
        if not isinstance(selector, str) or len(selector) > MAX_TEXT:
            raise PluginError(f"{where}.selector: must be a label selector string (kubectl's -l), at most "
                              f"{MAX_TEXT} characters")
        try:
            label_selector.validate(selector)
        except PluginError as exc:
            raise PluginError(f"{where}.selector: {exc}") from None
    reason = rule.get("reason", "")
    if not isinstance(reason, str) or len(reason) > MAX_TEXT:
        raise PluginError(f"{where}.reason: must be a string of at most {MAX_TEXT} characters")
    return {"code": code, "severity": severity, "namespaces": namespaces, "kinds": kinds, "names": object_names,
            "selector": selector, "reason": reason, "where": where}


def _names(rule, key, where, validate):
    if key not in rule:
        return None
    value = rule[key]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise PluginError(f"{where}.{key}: must be a non-empty list of names")
    if len(value) > MAX_RULES:
        raise PluginError(f"{where}.{key}: more than {MAX_RULES} names")
    for v in value:
        if len(v) > 253 or not v.isprintable():
            raise PluginError(f"{where}.{key}: {v[:80]!r} is not a Kubernetes name")
        if validate is not None:
            try:
                validate(v)
            except PluginError as exc:
                raise PluginError(f"{where}.{key}: {exc}") from None
    return tuple(value)
