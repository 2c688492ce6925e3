"""Where a snapshot comes from: saved files (`-f`) or a live cluster. The two give the same
records, so everything after this module cannot tell them apart."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import threading
from collections.abc import Callable

from kubectl_kvcache.operator import api, records
from kubectl_kvcache.errors import Forbidden, InvalidObject, NotFound, PluginError
from kubectl_kvcache import label_selector
from kubectl_kvcache.options import Connection, Scope
from kubectl_kvcache.record import Record

_FILE_SUFFIXES = (".json", ".yaml", ".yml")
# Kinds a saved cluster commonly holds that no command reads: not worth a note.
_KNOWN_UNUSED = {"KVCachePool", "KVCacheBackend", "Namespace", "Service", "ConfigMap", "Event"}


# -- files ---------------------------------------------------------------------------------
#
# What kubectl's reader (k8s.io/apimachinery's YAMLOrJSONDecoder, sigs.k8s.io/yaml) accepts, and
# nothing that would let malformed input pass as "nothing found": every file (and stdin) must
# hold at least one object or one List; a List's `items` must be a list; a kind must be a string.
# JSON is decoded value by value (a List item by item), so memory follows the records, not the
# decoded file; YAML goes through libyaml's loader when it is available, with go-yaml's limit on
# alias expansion (an alias bomb is refused in time linear in the file) and libyaml's nesting
# limit (1000).

_MAX_DEPTH_MESSAGE = "nested too deeply"


def _expand_paths(paths):
    for path in paths:
        if path == "-":
            yield path
        elif os.path.isdir(path):
            try:
                listed = os.listdir(path)
            except OSError as exc:
                raise PluginError(f"{path}: cannot read: {exc.strerror or exc}")
            names = sorted(n for n in listed if n.endswith(_FILE_SUFFIXES))
            if not names:
                raise PluginError(f"{path}: no .json, .yaml or .yml files in this directory")
            for name in names:
                yield os.path.join(path, name)
        elif os.path.exists(path):
            yield path
        else:
            raise PluginError(f"{path}: no such file or directory")


def _read_text(path, stdin):
    """(text, where) of a path or '-': UTF-8, a byte-order mark dropped."""
    if path == "-":
        if stdin is None:
            raise PluginError("-f -: no standard input")
        where = "<stdin>"
        raw = getattr(stdin, "buffer", None)
        try:
            data = raw.read() if raw is not None else stdin.read()
        except UnicodeDecodeError as exc:
            raise PluginError(f"{where}: not UTF-8: {exc}")
        except OSError as exc:
            raise PluginError(f"{where}: cannot read: {exc.strerror or exc}")
    else:
        where = path
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise PluginError(f"{path}: cannot read: {exc.strerror or exc}")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise PluginError(f"{where}: not UTF-8: {exc}")
    elif data.startswith("\ufeff"):
        data = data[1:]
    return data, where


class _Counter:
    """How many objects and Lists a source held: a source with neither is an error."""

    __slots__ = ("objects", "lists")

    def __init__(self):
        self.objects = 0
        self.lists = 0


def _documents(text, where):
    """(document, location) for each document of a file: JSON values or YAML documents."""
    stripped = text.lstrip(" \t\r\n")
    if stripped.startswith(("{", "[")):
        return _json_values(text, where)
    return _yaml_documents(text, where)


# JSON, decoded value by value ----------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _json_error(where, exc):
    if isinstance(exc, RecursionError):
        return PluginError(f"{where}: not valid JSON: {_MAX_DEPTH_MESSAGE}")
    return PluginError(f"{where}: not valid JSON: {exc}")


def _json_value(text, pos, where):
    try:
        return _DECODER.raw_decode(text, pos)
    except (ValueError, RecursionError) as exc:
        raise _json_error(where, exc)


def _json_values(text, where):
    """A stream of JSON values (one, or several one after another, as kubectl reads them). A
    top-level object's `items` array and a top-level array are decoded element by element and
    handed on one at a time: the whole file is never held decoded."""
    pos, end, n = _WS.match(text, 0).end(), len(text), 0
    while pos < end:
        location = f"value {n + 1}" if n else ""
        if text[pos] == "{":
            pos = yield from _json_object(text, pos, where, location)
        elif text[pos] == "[":
            pos = yield from _json_array(text, pos, where, location, False)
        else:
            value, pos = _json_value(text, pos, where)
            yield value, location
        pos = _WS.match(text, pos).end()
        n += 1


def _join(location, more):
    return f"{location}, {more}" if location else more


def _json_array(text, pos, where, prefix, items):
    """Yields (element, `prefix[i]`) for each element of the array at text[pos], each element
    wrapped in _Item when `items`; returns the position after the array."""
    pos = _WS.match(text, pos + 1).end()
    if text.startswith("]", pos):
        return pos + 1
    i = 0
    while True:
        value, pos = _json_value(text, pos, where)
        yield (_Item(value) if items else value), f"{prefix}[{i}]"
        i += 1
        pos = _WS.match(text, pos).end()
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()
        elif text.startswith("]", pos):
            return pos + 1
        else:
            raise _json_error(where, json.JSONDecodeError("Expecting ',' delimiter", text, pos))


def _json_object(text, pos, where, location):
    """A top-level object; when its `items` is an array, the items are yielded one by one as
    (_Item, location) before the object itself (without `items`, marked as a List)."""
    obj, items = {}, None
    pos = _WS.match(text, pos + 1).end()
    if text.startswith("}", pos):
        yield obj, location
        return pos + 1
    while True:
        if not text.startswith('"', pos):
            raise _json_error(where, json.JSONDecodeError(
                "Expecting property name enclosed in double quotes", text, pos))
        try:
            key, pos = json.decoder.scanstring(text, pos + 1)
        except ValueError as exc:
            raise _json_error(where, exc)
        pos = _WS.match(text, pos).end()
        if not text.startswith(":", pos):
            raise _json_error(where, json.JSONDecodeError("Expecting ':' delimiter", text, pos))
        pos = _WS.match(text, pos + 1).end()
        if key == "items" and text.startswith("[", pos):
            items = []
            pos = yield from _json_array(text, pos, where, _join(location, "items"), True)
            obj[key] = items           # a list: its elements were handed on already
        else:
            obj[key], pos = _json_value(text, pos, where)
        pos = _WS.match(text, pos).end()
        if text.startswith(",", pos):
            pos = _WS.match(text, pos + 1).end()
        elif text.startswith("}", pos):
            break
        else:
            raise _json_error(where, json.JSONDecodeError("Expecting ',' delimiter", text, pos))
    if items is not None:
        obj = _StreamedList(obj)
    yield obj, location
    return pos + 1


class _Item:
    """An element of a top-level object's `items`, handed on before that object's kind is read."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _StreamedList(dict):
    """A top-level object whose `items` array was handed on element by element."""


# YAML ---------------------------------------------------------------------------------------
#
# libyaml parses (PyYAML's CParser, when PyYAML was built with it), and the nodes are composed
# and constructed one top-level value at a time: a List's items one by one, so that a `kubectl
# get -o yaml` dump is never held as one node graph (libyaml's own composer keeps every node of
# a document, with two position marks each: ~40x the file in memory).

# go-yaml's (gopkg.in/yaml.v2 and v3, behind sigs.k8s.io/yaml and so kubectl) limit on alias
# expansion: after 1000 decoded nodes and 100 from aliases, the share of nodes decoded through
# aliases may be at most 99% up to 400,000 nodes, 10% from 4,000,000, linear in between.
_ALIAS_RANGE_LOW, _ALIAS_RANGE_HIGH = 400_000, 4_000_000
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _allowed_alias_ratio(decoded):
    if decoded <= _ALIAS_RANGE_LOW:
        return 0.99
    if decoded >= _ALIAS_RANGE_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _ALIAS_RANGE_LOW) / (_ALIAS_RANGE_HIGH - _ALIAS_RANGE_LOW)


def _children(node):
    value = node.value
    if isinstance(value, str):          # a scalar
        return ()
    if value and isinstance(value[0], tuple):     # a mapping: (key, value) node pairs
        return [n for pair in value for n in pair]
    return value


def _expanded_sizes(root, sizes):
    """The number of nodes decoding each node expands to (aliases expanded), memoised in
    `sizes` by node id; iterative; a node that contains itself is an error."""
    if id(root) in sizes:
        return
    active = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            continue
        if key in sizes:
            continue
        active.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in active:
                raise ValueError("an anchor's value contains an alias of itself")
            if id(child) not in sizes:
                stack.append((child, False))


class _AliasCount:
    """go-yaml's decode counts over one document, in document order: the first occurrence of a
    node is decoded as written, every later one (an alias) expands to its whole subtree."""

    __slots__ = ("decoded", "aliased")

    def __init__(self):
        self.decoded = 0
        self.aliased = 0

    def add(self, root, anchors, mark):
        """Count the graph of one composed value; `anchors`: the document's _Anchors, of which
        the first `mark` were decoded by earlier values (an alias to them expands them again)."""
        seen, sizes = set(), {}
        order = anchors.order
        stack = [root]
        while stack:
            node = stack.pop()
            key = id(node)
            if key in seen or order.get(key, mark) < mark:
                _expanded_sizes(node, sizes)
                self.decoded += 1 + sizes[key]
                self.aliased += sizes[key]
            else:
                seen.add(key)
                self.decoded += 1
                children = _children(node)
                if children:
                    stack.extend(reversed(children))
            if self.aliased > 100 and self.decoded > 1000 and \
                    self.aliased / self.decoded > _allowed_alias_ratio(self.decoded):
                raise ValueError("document contains excessive aliasing")


class _Anchors(dict):
    """The composer's anchors of one document, remembering in which order their nodes came (an
    id -> number map: which anchors an earlier value defined is one lookup, not a copy)."""

    def __init__(self):
        super().__init__()
        self.order = {}

    def __setitem__(self, name, node):
        self.order.setdefault(id(node), len(self.order))
        super().__setitem__(name, node)


_LOADER = None


def _loader():
    """libyaml's parser when PyYAML has it, else the pure-Python one; PyYAML's composer and safe
    constructor; timestamps stay strings, as in the JSON kubectl would have printed."""
    global _LOADER
    if _LOADER is None:
        _LOADER = build_loader()
    return _LOADER


def build_loader(libyaml=True):
    import yaml
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.resolver import Resolver

    try:
        if not libyaml:
            raise ImportError("not asked for")
        from yaml.cyaml import CParser
    except ImportError:
        class Loader(yaml.SafeLoader):
            pass
    else:
        class Loader(CParser, Composer, SafeConstructor, Resolver):
            def __init__(self, stream):
                CParser.__init__(self, stream)
                Composer.__init__(self)
                SafeConstructor.__init__(self)
                Resolver.__init__(self)

    Loader.add_constructor("tag:yaml.org,2002:timestamp", SafeConstructor.construct_yaml_str)
    return Loader


def _yaml_documents(text, where):
    import yaml

    aliases = "*" in text and "&" in text      # else no alias can exist: no counting
    n, loader = 0, None
    try:
        try:
            loader = _loader()(text)           # the pure-Python reader checks characters here
            loader.get_event()                 # stream start
            while not loader.check_event(yaml.StreamEndEvent):
                n += 1
                yield from _yaml_document(loader, f"document {n}" if n > 1 else "", aliases, where)
        except yaml.YAMLError as exc:
            raise PluginError(f"{where}: not valid YAML: {' '.join(str(exc).split())}")
        except RecursionError:
            raise PluginError(f"{where}: not valid YAML: {_MAX_DEPTH_MESSAGE}")
        except ValueError as exc:      # an integer too long to convert, excessive aliasing
            raise PluginError(f"{where}: not valid YAML: document {n}: {exc}")
    finally:
        if loader is not None:
            loader.dispose()


def _yaml_document(loader, location, aliases, where):
    """One document; a root mapping is read key by key and the values of its `items` one by
    one (yielded as _Item before the root, which then carries `items: []`)."""
    import yaml

    loader.get_event()                          # document start
    anchors = loader.anchors = _Anchors()
    count = _AliasCount() if aliases else None

    def value():
        mark = len(anchors.order)
        node = loader.compose_node(None, None)
        if count is not None:
            count.add(node, anchors, mark)
        return node

    start = loader.peek_event()
    if isinstance(start, yaml.MappingStartEvent) and start.anchor is None and \
            start.tag in (None, "!", "tag:yaml.org,2002:map"):
        loader.get_event()
        doc, merged, streamed = {}, [], False
        while not loader.check_event(yaml.MappingEndEvent):
            key_node = value()
            if key_node.tag == _MERGE_TAG:     # `<<: *base` at the root: the keys written win
                merged.append(loader.construct_document(value()))
                continue
            key = loader.construct_document(key_node)
            try:
                hash(key)
            except TypeError:
                raise PluginError(f"{where}: not valid YAML: {_join(location, 'a key')} is a "
                                  f"{type(key).__name__}, not a string")
            if key == "items" and not streamed and loader.check_event(yaml.SequenceStartEvent) and \
                    loader.peek_event().anchor is None:
                loader.get_event()
                i = 0
                while not loader.check_event(yaml.SequenceEndEvent):
                    yield _Item(loader.construct_document(value())), f"{_join(location, 'items')}[{i}]"
                    i += 1
                loader.get_event()
                doc[key], streamed = [], True
            else:
                doc[key] = loader.construct_document(value())
        loader.get_event()
        for extra in merged:
            for source in extra if isinstance(extra, list) else [extra]:
                if not isinstance(source, dict):
                    raise PluginError(f"{where}: not valid YAML: {_at(location)}a merge (<<) of "
                                      f"{records.type_name(source)}, not a mapping")
                for k, v in source.items():
                    doc.setdefault(k, v)
        doc = _StreamedList(doc) if streamed else doc
    else:
        doc = loader.construct_document(value())
    loader.get_event()                          # document end
    if doc is not None:
        yield doc, location


# objects --------------------------------------------------------------------------------------

def _at(location):
    return f"{location}: " if location else ""


def _flatten(doc, where, location, counter):
    """The objects of one document, with their locations; Lists are opened. An object with
    `items` is a List, as kubectl's decoder reads it: its kind must end in List."""
    if isinstance(doc, _StreamedList):
        _check_list(doc, where, location)
        counter.lists += 1
        return
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            yield from _flatten(item, where, _join(location, f"[{i}]"), counter)
        return
    if not isinstance(doc, dict):
        raise PluginError(f"{where}: {_at(location)}expected Kubernetes objects, found {records.type_name(doc)}")
    kind = doc.get("kind")
    if "items" in doc:
        _check_list(doc, where, location)
        counter.lists += 1
        for i, item in enumerate(doc["items"]):
            yield from _flatten(item, where, _join(location, f"items[{i}]"), counter)
        return
    if kind is None or kind == "":
        raise PluginError(f"{where}: {_at(location)}an object without a kind")
    if not isinstance(kind, str):
        raise PluginError(f"{where}: {_at(location)}kind must be a string, not {records.type_name(kind)}")
    if kind.endswith("List"):
        raise PluginError(f"{where}: {_at(location)}a {kind} without items")
    api_version = doc.get("apiVersion")
    if api_version is not None and not isinstance(api_version, str):
        raise PluginError(f"{where}: {_at(location)}apiVersion must be a string, not {records.type_name(api_version)}")
    counter.objects += 1
    yield doc, location


def _check_list(doc, where, location):
    kind = doc.get("kind")
    items = doc.get("items")
    if kind is not None and not isinstance(kind, str):
        raise PluginError(f"{where}: {_at(location)}kind must be a string, not {records.type_name(kind)}")
    if kind is not None and not kind.endswith("List"):
        raise PluginError(f"{where}: {_at(location)}kind {kind!r} has items but is not a List kind "
                          f"(a list's kind ends in 'List', case-sensitive)")
    if not isinstance(items, list):
        raise PluginError(f"{where}: {_at(location)}items must be a list, not {records.type_name(items)}")


def read_objects(paths, stdin=None):
    """Every object in the given files, directories or '-' (stdin), as (object, where, location):
    `where` the file, `location` the object's place in it ('' for the only one, `items[3]`,
    `document 2, items[0]`). A file or stdin holding no object and no List is an error."""
    for path in _expand_paths(paths):
        text, where = _read_text(path, stdin)
        counter = _Counter()
        try:
            for doc, location in _documents(text, where):
                if isinstance(doc, _Item):     # an element of a streamed List's items
                    doc = doc.value
                for obj, loc in _flatten(doc, where, location, counter):
                    yield obj, where, loc
        except PluginError:
            raise
        except RecursionError:
            raise PluginError(f"{where}: {_MAX_DEPTH_MESSAGE}") from None
        except Exception as exc:     # a bug: still name the file
            if os.environ.get("KVCACHE_DEBUG"):
                raise
            raise PluginError(f"{where}: internal error while reading it: {exc.__class__.__name__}: {exc} "
                              f"(set KVCACHE_DEBUG=1 for the traceback; please report it)") from None
        if not counter.objects and not counter.lists:
            raise PluginError(f"no objects in {where}" + (" (is it empty?)" if not text.strip() else ""))


def _object_name(obj, location):
    name = records.describe(obj)
    return name if " " in name or not location else f"{name} at {location}"


def _add_object(obj, scope, result, ignored, intern):
    kind = obj.get("kind")
    group = api.group_of(obj)
    if kind == "Pod" and group == "":
        record = records.pod_record(obj, intern)
        if (records.in_namespace(record.namespace, scope.namespace)
                and (not scope.names or record.name in scope.names)
                and label_selector.matches(record.labels, scope.selector)):
            result.pods.append(record)
    elif kind == api.MD_KIND and group == api.MODEL_DEPLOYMENT.group:
        record = records.deployment_record(obj)
        result.deployments[(record.namespace, record.name)] = record
    elif kind == api.BINDING_KIND and group == api.BINDING.group:
        record = records.binding_record(obj)
        result.bindings[(record.namespace, record.name)] = record
    elif kind == api.SETTING_KIND and group == api.SETTING.group:
        if records.is_setting(obj):
            result.setting = records.setting_record(obj, "file")
    elif scope.workloads and kind in api.WORKLOAD_KINDS and group in api.WORKLOAD_GROUPS:
        record = records.workload_record(obj)
        if records.in_namespace(record.namespace, scope.namespace):
            result.workloads.append(record)
    elif kind not in _KNOWN_UNUSED and kind not in api.WORKLOAD_KINDS:
        ignored[kind] = ignored.get(kind, 0) + 1


def load_files(paths, scope: Scope, stdin=None) -> records.Snapshot:
    return snapshot_of(read_objects(paths, stdin), scope)


def snapshot_of(objects, scope: Scope) -> records.Snapshot:
    """The snapshot of saved objects, `(object, where, location)` as read_objects yields them."""
    result = records.Snapshot(source="file")
    ignored = {}
    intern = records.Interner()
    for obj, where, location in objects:
        try:
            _add_object(obj, scope, result, ignored, intern)
        except InvalidObject as exc:
            raise exc.located(where, location) from None
        except PluginError as exc:
            raise PluginError(f"{where}: {exc}") from None
        except RecursionError:
            raise PluginError(f"{where}: {_object_name(obj, location)}: {_MAX_DEPTH_MESSAGE}") from None
        except Exception as exc:     # a bug: still name what was being read
            if os.environ.get("KVCACHE_DEBUG"):
                raise
            raise PluginError(f"{where}: {_object_name(obj, location)}: internal error while reading it: "
                              f"{exc.__class__.__name__}: {exc} (set KVCACHE_DEBUG=1 for the traceback; "
                              f"please report it)") from None
    if ignored:
        kinds = ", ".join(f"{k} ({n})" for k, n in sorted(ignored.items(), key=lambda kv: str(kv[0])))
        result.notes.append(f"ignored objects of other kinds: {kinds}")
    if scope.assume_setting is not None:
        result.setting = records.assumed_setting(scope.assume_setting)
    elif result.setting is None:
        result.setting = records.default_setting()
    if scope.workloads_skipped:
        result.notes.append(WORKLOADS_SKIPPED)
    missing = [n for n in scope.names if n not in {p.name for p in result.pods}]
    if missing:
        raise PluginError(f"pod {missing[0]!r} not found in the input")
    return result


# -- cluster -------------------------------------------------------------------------------

def _and(*selectors):
    return ",".join(s for s in selectors if s) or None


def load_cluster(client, scope: Scope, chunk, versions=None) -> records.Snapshot:
    """Lists run concurrently; each kind is fetched once (pods by two server-side selectors).
    `versions`: a dict that receives the resourceVersion of each list a watch follows
    (keys as in `watch_targets`)."""
    from kubectl_kvcache.kube import collection_path, object_path

    ns = scope.namespace
    where = f"in namespace {ns}" if ns else "in all namespaces"

    def listed(key):
        """client.list, or, when a watch will follow, the list that also gives its resourceVersion."""
        if versions is None:
            return client.list

        def list_versioned(*args, **kw):
            records, versions[key] = client.list_versioned(*args, **kw)
            return records
        return list_versioned

    def operator_objects():
        """The operator's objects at the versions the server serves: discovery first, then their
        lists concurrently (the Pods and workloads, core APIs, are asked for meanwhile)."""
        client.discover(api.GROUP, *([api.SETTING_GROUP] if scope.assume_setting is None else []))
        md_path = api.collection_path(client, api.MODEL_DEPLOYMENT, ns)
        binding_path = api.collection_path(client, api.BINDING, ns)
        setting_version = None
        if scope.assume_setting is None:
            try:
                setting_version = api.version_for(client, api.SETTING)
            except NotFound:    # before the upgrade: the operator does not serve the Setting yet
                setting_version = None
        lists = {
            "deployments": lambda: listed("deployments")(
                md_path, records.deployment_record, chunk=chunk, what=f"list {api.MODEL_DEPLOYMENT.name} {where}"),
            "bindings": lambda: client.list(binding_path, records.binding_record, chunk=chunk,
                                            what=f"list {api.BINDING.name} {where}"),
        }
        if setting_version is not None:
            lists["setting"] = lambda: _get_setting(client, setting_version)
        found = _run_all(lists)
        found["setting_version"] = setting_version
        return found

    jobs = {"operator": operator_objects}      # first: its errors (a CRD not served) win
    if scope.names:
        jobs["pods"] = lambda: [records.pod_record(client.get(
            object_path("", api.POD.version, api.POD.plural, ns or "default", name),
            what=f"get pod {name} in namespace {ns or 'default'}")) for name in scope.names]
    else:
        intern = records.Interner()     # replicas share their containers and labels

        def pod_record(obj):
            return records.pod_record(obj, intern)

        md_selector = _and("=".join(api.MD_NAME_LABEL), scope.selector)
        inject_selector = _and(f"{api.INJECT_LABEL}=true", scope.selector)
        jobs["md_pods"] = lambda: listed("md_pods")(collection_path("", api.POD.version, api.POD.plural, ns), pod_record,
                                                    selector=md_selector, chunk=chunk, what=f"list pods {where}")
        jobs["injected_pods"] = lambda: listed("injected_pods")(collection_path("", api.POD.version, api.POD.plural, ns), pod_record,
                                                                selector=inject_selector, chunk=chunk,
                                                                what=f"list pods {where}")
    if scope.workloads:
        for res in api.WORKLOADS:
            jobs[res.kind] = (lambda r=res: _skippable(lambda: client.list(
                collection_path(r.group, r.version, r.plural, ns),
                lambda o: _opted_in(records.workload_record(dict(o, kind=r.kind))),
                chunk=chunk, what=f"list {r.name} {where}")))
    with _gc_paused():
        results = _run_all(jobs)
    operator = results["operator"]
    setting_version = operator["setting_version"]
    result = records.Snapshot(source="cluster")
    for d in operator["deployments"]:
        result.deployments[(d.namespace, d.name)] = d
    for b in operator["bindings"]:
        result.bindings[(b.namespace, b.name)] = b
    if scope.assume_setting is not None:
        result.setting = records.assumed_setting(scope.assume_setting)
    elif setting_version is None:
        result.setting = records.not_served_setting()
        result.notes.append(f"the cluster does not serve the Setting's API group {api.SETTING_GROUP} yet: the "
                            f"operator is not upgraded, so it renders no --kv-cache-dtype yet (verify expects "
                            f"nothing); the upgrade brings the Setting at its default, on (check, bindings and "
                            f"roles judge that)")
    else:
        result.setting = operator["setting"]
        if result.setting.source == "default":
            result.notes.append(f"the Setting {api.SETTING_NAMESPACE}/{api.SETTING_NAME} does not exist: "
                                f"judging with its default, on, as the operator reads it")
    seen = set()
    for key in ("pods", "md_pods", "injected_pods"):
        for pod in results.get(key, ()):
            if (pod.namespace, pod.name) not in seen:
                seen.add((pod.namespace, pod.name))
                result.pods.append(pod)
    if scope.workloads:
        for kind in api.WORKLOAD_KINDS:
            result.workloads.extend(results[kind])
    if scope.workloads_skipped:
        result.notes.append(WORKLOADS_SKIPPED)
    return result


WORKLOADS_SKIPPED = ("--skip-workloads: the Pod templates of Deployments, StatefulSets, DaemonSets, ReplicaSets, "
                     "Jobs and CronJobs were not read, so their injection opt-ins are not checked")


def _skippable(list_workloads):
    """A workload list RBAC refuses names the flag that does without it."""
    try:
        return list_workloads()
    except Forbidden as exc:
        raise Forbidden(f"{exc} (pass --skip-workloads to go on without the workload templates' injection "
                        f"opt-ins)") from exc


class WatchTarget(Record):
    """A collection `verify --watch/--wait` follows: what load_cluster listed under `key`."""

    __slots__ = ("key", "path", "selector", "convert", "what")

    def __init__(self, key: str, path: str, selector: str | None, convert: Callable[[dict], object], what: str):
        self.key = key
        self.path = path
        self.selector = selector
        self.convert = convert
        self.what = what


def watch_targets(client, scope: Scope):
    """The lists of load_cluster that a rollout changes: ModelDeployments and the two Pod lists,
    with the same paths and selectors (a watch starts from the list's resourceVersion)."""
    from kubectl_kvcache.kube import collection_path

    ns = scope.namespace
    where = f"in namespace {ns}" if ns else "in all namespaces"
    intern = records.Interner()

    def pod_record(obj):
        return records.pod_record(obj, intern)

    pods = collection_path("", api.POD.version, api.POD.plural, ns)
    return (WatchTarget("deployments", api.collection_path(client, api.MODEL_DEPLOYMENT, ns), None,
                        records.deployment_record, f"watch {api.MODEL_DEPLOYMENT.name} {where}"),
            WatchTarget("md_pods", pods, _and("=".join(api.MD_NAME_LABEL), scope.selector), pod_record,
                        f"watch pods {where}"),
            WatchTarget("injected_pods", pods, _and(f"{api.INJECT_LABEL}=true", scope.selector), pod_record,
                        f"watch pods {where}"))


def _opted_in(workload):
    """Only templates opted into injection are kept (the only ones any command reads): the
    label cannot be selected server-side on a template, and old ReplicaSets are many."""
    return workload if workload.labels.get(api.INJECT_LABEL) == "true" else None


def _get_setting(client, version):
    try:
        obj = client.get(api.setting_path(version), what=f"get {api.SETTING.name} {api.SETTING_NAME} "
                                                         f"in namespace {api.SETTING_NAMESPACE}")
    except NotFound:
        return records.default_setting()
    return records.setting_record(obj, "cluster")


@contextlib.contextmanager
def _gc_paused():
    """No cyclic garbage collection while pages are decoded into records: json.loads of a page
    allocates ~10^5 containers, each batch of 700 triggers a collection that walks the young
    pages and the growing records again. Pages and records hold no reference cycles, so
    reference counting frees every page as before; collection resumes afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _run_all(jobs):
    """Run independent API calls concurrently; the first error (in job order) wins.

    A thread per job, all started at once and all finished before anything is raised (a Ctrl-C
    while waiting too: it aborts the requests, so the jobs end at once). Any other exception of a
    job (KeyboardInterrupt from those aborted requests, a bug) is raised here, in the caller's
    thread, ahead of the PluginErrors."""
    outcomes = {}

    def run(name, job):
        try:
            outcomes[name] = (True, job())
        except BaseException as exc:        # raised in the caller's thread below
            outcomes[name] = (False, exc)

    started = []
    try:
        for name, job in jobs.items():
            thread = threading.Thread(target=run, args=(name, job), name=f"kvcache-{name}")
            thread.start()
            started.append(thread)
    finally:
        try:
            for thread in started:
                thread.join()
        except BaseException:
            for thread in started:
                thread.join()
            raise
    results, errors = {}, []
    for name in jobs:
        ok, value = outcomes[name]
        if ok:
            results[name] = value
        elif isinstance(value, PluginError):
            errors.append(value)
        else:
            raise value
    if errors:
        raise errors[0]
    return results


def open_client(connection: Connection, trace=None):
    """The API client for these connection flags (the one warm() started, if any); `trace` prints
    KVCACHE_TRACE lines."""
    from kubectl_kvcache.kube import Client, claim

    return claim(connection) or Client(connection, trace=trace)


def warm(connection: Connection, trace=None, scope: Scope | None = None):
    """Start connecting to the cluster in the background (see kube.warm): the command's modules
    are imported meanwhile. `scope`: the snapshot the command will load first, loaded meanwhile
    too (load() takes it, or raises what loading it raised). Only the command line's own run
    calls this."""
    from kubectl_kvcache.kube import warm as start

    then = None
    if scope is not None and not scope.files:
        def then(client):
            try:
                _PREFETCHED[(connection, scope)] = (_load_cluster_in(client, connection, scope), None)
            except BaseException as exc:    # noqa: B902 - raised again in the thread that asks for it
                _PREFETCHED[(connection, scope)] = (None, exc)

    start(connection, (api.GROUP, api.SETTING_GROUP), trace, then)


_PREFETCHED = {}    # (Connection, Scope) -> (snapshot, None) | (None, what loading it raised)


def resolve_namespace(scope: Scope, client=None) -> str | None:
    """The one namespace to look at, or None for all: -A, else -n, else the context's (files: all)."""
    if scope.all_namespaces:
        return None
    if scope.namespace:
        return scope.namespace
    return client.namespace if client is not None else None


def load(connection: Connection, scope: Scope, stdin=None, trace=None) -> records.Snapshot:
    """The snapshot the command asked for: files when -f is given (no cluster is contacted)."""
    if scope.files:
        namespace = resolve_namespace(scope)
        result = load_files(scope.files, scope.replace(namespace=namespace), stdin=stdin)
        result.namespace = namespace
        return result
    client = open_client(connection, trace)     # waits for warm(), so for a snapshot it loads
    prefetched = _PREFETCHED.pop((connection, scope), None)
    if prefetched is not None:
        result, error = prefetched
        if error is not None:
            raise error
        return result
    return _load_cluster_in(client, connection, scope)


def _load_cluster_in(client, connection: Connection, scope: Scope) -> records.Snapshot:
    namespace = resolve_namespace(scope, client)
    if scope.names and namespace is None:
        raise PluginError("naming pods needs one namespace: drop -A or pass -n")
    result = load_cluster(client, scope.replace(namespace=namespace), chunk=connection.chunk_size)
    result.namespace = namespace
    return result


# -- recovery: the FULL objects around one Binding -----------------------------------------

def _template_opted_in(obj):
    spec = obj.get("spec") or {}
    if obj.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    labels = (((spec.get("template") or {}).get("metadata")) or {}).get("labels") or {}
    return labels.get(api.INJECT_LABEL) == "true"


def load_recovery(connection: Connection, scope: Scope, binding_name, stdin=None, trace=None, backups=()):
    """What `recover` plans from: the normal snapshot (for checks) and the full objects its
    records drop (the Binding, every Binding's domain claim, the namespace's ModelDeployments,
    opted-in workloads), from files (-f) or the cluster. `backups`: objects an earlier run backed
    up; one deleted since (the old Binding) is planned from its backup. Returns recover.Inputs
    and the client (None for files)."""
    from kubectl_kvcache import checks, recover

    backups = list(backups)
    if scope.files:
        objects = list(read_objects(scope.files, stdin))
        namespace = resolve_namespace(scope) or _namespace_of(objects, binding_name)
        snapshot = snapshot_of(objects, scope.replace(namespace=namespace, workloads=True))
        snapshot.namespace = namespace
        full = [o for o, _, _ in objects]
        client = None

        def of(res):
            return [o for o in full if o.get("kind") == res.kind and api.group_of(o) == res.group]
        bindings = of(api.BINDING)
        deployments = [o for o in of(api.MODEL_DEPLOYMENT) if _ns(o) == namespace]
        workloads = [dict(o) for res in api.WORKLOADS for o in of(res)
                     if _ns(o) == namespace and _template_opted_in(o)]
        binding = next((b for b in bindings if _ns(b) == namespace and b["metadata"].get("name") == binding_name),
                       None)
        notes = []
    else:
        from kubectl_kvcache.errors import Forbidden
        from kubectl_kvcache.kube import collection_path

        client = open_client(connection, trace)
        namespace = resolve_namespace(scope.replace(all_namespaces=False), client)
        snapshot = load_cluster(client, scope.replace(namespace=namespace, workloads=True),
                                chunk=connection.chunk_size)
        snapshot.namespace = namespace
        chunk = connection.chunk_size
        as_binding = _typed(api.BINDING, api.version_for(client, api.BINDING))
        notes = []
        try:
            bindings = client.list(api.collection_path(client, api.BINDING), as_binding,
                                   chunk=chunk, what=f"list {api.BINDING.name} in all namespaces")
        except Forbidden:
            bindings = client.list(api.collection_path(client, api.BINDING, namespace), as_binding,
                                   chunk=chunk, what=f"list {api.BINDING.name} in namespace {namespace}")
            notes.append("Bindings of other namespaces could not be listed (RBAC): a domain claimed there is not "
                         "seen; the API server refuses the new Binding if its domain is taken")
        deployments = client.list(api.collection_path(client, api.MODEL_DEPLOYMENT, namespace),
                                  _typed(api.MODEL_DEPLOYMENT, api.version_for(client, api.MODEL_DEPLOYMENT)),
                                  chunk=chunk, what=f"list {api.MODEL_DEPLOYMENT.name} in namespace {namespace}")
        workloads = []
        for res in api.WORKLOADS:
            workloads += client.list(api.collection_path(client, res, namespace),
                                     lambda o, r=res: (dict(o, kind=r.kind, apiVersion=r.api_version())
                                                       if _template_opted_in(o) else None),
                                     chunk=chunk, what=f"list {res.name} in namespace {namespace}")
        binding = next((b for b in bindings if _ns(b) == namespace and b["metadata"].get("name") == binding_name),
                       None)
    gone = False
    if binding is None:
        saved = [o for o in backups if o.get("kind") == "KVCachePoolBinding" and _ns(o) == namespace
                 and (o.get("metadata") or {}).get("name") == binding_name]
        if saved:
            binding, gone = saved[-1], True
            snapshot.bindings[(namespace, binding_name)] = records.binding_record(binding)
    report = checks.check(snapshot)
    inputs = recover.Inputs(namespace=namespace, binding_name=binding_name, binding=binding, binding_gone=gone,
                            bindings=bindings, deployments=deployments, workloads=workloads,
                            pods=[p for p in snapshot.pods if p.namespace == namespace and p.opted_in],
                            report=report, setting=snapshot.setting, backups=backups,
                            notes=notes + list(snapshot.notes))
    return inputs, client


def _namespace_of(objects, binding_name):
    """Files without -n: the namespace of the one Binding of that name in them ('default' when
    none is); several is an error."""
    found = sorted({_ns(o) for o, _, _ in objects if o.get("kind") == "KVCachePoolBinding"
                    and (o.get("metadata") or {}).get("name") == binding_name})
    if len(found) > 1:
        raise PluginError(f"KVCachePoolBinding {binding_name!r} is in several namespaces of the input "
                          f"({', '.join(found)}): pass -n")
    return found[0] if found else "default"


def _typed(res, version):
    """List items as objects: with their kind and apiVersion (a list's items may omit them)."""
    def convert(obj):
        obj.setdefault("kind", res.kind)
        obj.setdefault("apiVersion", res.api_version(version))
        return obj
    return convert


def _ns(obj):
    return (obj.get("metadata") or {}).get("namespace") or "default"
