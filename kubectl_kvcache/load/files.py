"""Saved objects (`-f`): files, directories or '-' read as kubectl reads them, object by object.

What kubectl's reader (k8s.io/apimachinery's YAMLOrJSONDecoder, sigs.k8s.io/yaml) accepts, and
nothing that would let malformed input pass as "nothing found". Objects out, no records yet
(manifests.py makes them)."""

from __future__ import annotations

import json
import os
import re

from kubectl_kvcache.errors import PluginError
from kubectl_kvcache.operator import fields

_FILE_SUFFIXES = (".json", ".yaml", ".yml")

# -- files ---------------------------------------------------------------------------------
#
# What kubectl's reader (k8s.io/apimachinery's YAMLOrJSONDecoder, sigs.k8s.io/yaml) accepts, and
# nothing that would let malformed input pass as "nothing found": every file (and stdin) must
# hold at least one object or one List; a List's `items` must be a list; a kind must be a string.
# JSON is decoded value by value (a List item by item), so memory follows the records, not the
# decoded file; YAML goes through libyaml's loader when it is available, with go-yaml's limit on
# alias expansion (an alias bomb is refused in time linear in the file) and libyaml's nesting
# limit (1000).

MAX_DEPTH_MESSAGE = "nested too deeply"


def _expand_paths(paths):
    for path in paths:
        if path == "-":
            yield path
        elif os.path.isdir(path):
            try:
                listed = os.listdir(path)
            except OSError as exc:
                raise PluginError(f"{path}: cannot read: {exc.strerror or exc}") from exc
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
            raise PluginError(f"{where}: not UTF-8: {exc}") from exc
        except OSError as exc:
            raise PluginError(f"{where}: cannot read: {exc.strerror or exc}") from exc
    else:
        where = path
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise PluginError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise PluginError(f"{where}: not UTF-8: {exc}") from exc
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
    """(document, location, line) for each document of a file: JSON values or YAML documents;
    `line` is where it starts (1-based), None where it is not known."""
    stripped = text.lstrip(" \t\r\n")
    if stripped.startswith(("{", "[")):
        return _json_values(text, where, _Lines(text))
    return _yaml_documents(text, where)


class _Lines:
    """The 1-based line of a position in a text, counted on from the last position asked for
    (the decoder asks in increasing order): linear in the file, whatever the number of objects."""

    __slots__ = ("text", "pos", "line")

    def __init__(self, text):
        self.text = text
        self.pos = 0
        self.line = 1

    def at(self, pos):
        if pos < self.pos:          # never in the decoder's order; still right
            self.pos, self.line = 0, 1
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


# JSON, decoded value by value ----------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")


def _after_ws(text: str, pos: int) -> int:
    """The position after the JSON whitespace at text[pos:] (_WS matches everywhere, maybe nothing)."""
    space = _WS.match(text, pos)
    return space.end() if space else pos


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _json_error(where, exc):
    if isinstance(exc, RecursionError):
        return PluginError(f"{where}: not valid JSON: {MAX_DEPTH_MESSAGE}")
    return PluginError(f"{where}: not valid JSON: {exc}")


def _json_value(text, pos, where):
    try:
        return _DECODER.raw_decode(text, pos)
    except (ValueError, RecursionError) as exc:
        raise _json_error(where, exc) from exc


def _json_values(text, where, lines):
    """A stream of JSON values (one, or several one after another, as kubectl reads them). A
    top-level object's `items` array and a top-level array are decoded element by element and
    handed on one at a time: the whole file is never held decoded."""
    pos, end, n = _after_ws(text, 0), len(text), 0
    while pos < end:
        location = f"value {n + 1}" if n else ""
        if text[pos] == "{":
            pos = yield from _json_object(text, pos, where, location, lines)
        elif text[pos] == "[":
            pos = yield from _json_array(text, pos, where, location, False, lines)
        else:
            line = lines.at(pos)
            value, pos = _json_value(text, pos, where)
            yield value, location, line
        pos = _after_ws(text, pos)
        n += 1


def _join(location, more):
    return f"{location}, {more}" if location else more


def _json_array(text, pos, where, prefix, items, lines):
    """Yields (element, `prefix[i]`, line) for each element of the array at text[pos], each
    element wrapped in _Item when `items`; returns the position after the array."""
    pos = _after_ws(text, pos + 1)
    if text.startswith("]", pos):
        return pos + 1
    i = 0
    while True:
        line = lines.at(pos)
        value, pos = _json_value(text, pos, where)
        yield (_Item(value) if items else value), f"{prefix}[{i}]", line
        i += 1
        pos = _after_ws(text, pos)
        if text.startswith(",", pos):
            pos = _after_ws(text, pos + 1)
        elif text.startswith("]", pos):
            return pos + 1
        else:
            raise _json_error(where, json.JSONDecodeError("Expecting ',' delimiter", text, pos))


def _json_object(text, pos, where, location, lines):
    """A top-level object; when its `items` is an array, the items are yielded one by one as
    (_Item, location, line) before the object itself (without `items`, marked as a List)."""
    obj: dict = {}
    line = lines.at(pos)
    items: list | None = None
    pos = _after_ws(text, pos + 1)
    if text.startswith("}", pos):
        yield obj, location, line
        return pos + 1
    while True:
        if not text.startswith('"', pos):
            raise _json_error(where, json.JSONDecodeError(
                "Expecting property name enclosed in double quotes", text, pos))
        try:
            key, pos = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]  # the stubs omit it
        except ValueError as exc:
            raise _json_error(where, exc) from exc
        pos = _after_ws(text, pos)
        if not text.startswith(":", pos):
            raise _json_error(where, json.JSONDecodeError("Expecting ':' delimiter", text, pos))
        pos = _after_ws(text, pos + 1)
        if key == "items" and text.startswith("[", pos):
            items = []
            pos = yield from _json_array(text, pos, where, _join(location, "items"), True, lines)
            obj[key] = items           # a list: its elements were handed on already
        else:
            obj[key], pos = _json_value(text, pos, where)
        pos = _after_ws(text, pos)
        if text.startswith(",", pos):
            pos = _after_ws(text, pos + 1)
        elif text.startswith("}", pos):
            break
        else:
            raise _json_error(where, json.JSONDecodeError("Expecting ',' delimiter", text, pos))
    if items is not None:
        obj = _StreamedList(obj)
    yield obj, location, line
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
        seen: set = set()
        sizes: dict = {}
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
        # run time re-exports it; the stubs import it from yaml._yaml without re-exporting
        from yaml.cyaml import CParser  # type: ignore[attr-defined]
    except ImportError:
        class PyLoader(yaml.SafeLoader):
            pass
        loader: type[SafeConstructor] = PyLoader
    else:
        class CLoader(CParser, Composer, SafeConstructor, Resolver):
            def __init__(self, stream):
                CParser.__init__(self, stream)
                Composer.__init__(self)
                SafeConstructor.__init__(self)
                Resolver.__init__(self)
        loader = CLoader

    # the stubs take a constructor's first argument for a Loader; SafeConstructor's own is one of its kind
    loader.add_constructor("tag:yaml.org,2002:timestamp", SafeConstructor.construct_yaml_str)  # type: ignore[type-var]
    return loader


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
            raise PluginError(f"{where}: not valid YAML: {' '.join(str(exc).split())}") from exc
        except RecursionError:
            raise PluginError(f"{where}: not valid YAML: {MAX_DEPTH_MESSAGE}") from None
        except ValueError as exc:      # an integer too long to convert, excessive aliasing
            raise PluginError(f"{where}: not valid YAML: document {n}: {exc}") from exc
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
    marks: list = []            # where the last value composed started (libyaml's marks too)

    def value():
        mark = len(anchors.order)
        marks[:] = [loader.peek_event().start_mark]
        node = loader.compose_node(None, None)
        if count is not None:
            count.add(node, anchors, mark)
        return node

    start = loader.peek_event()
    line = _line(start)
    if isinstance(start, yaml.MappingStartEvent) and start.anchor is None and \
            start.tag in (None, "!", "tag:yaml.org,2002:map"):
        loader.get_event()
        doc: dict = {}
        merged: list = []
        streamed = False
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
                                  f"{type(key).__name__}, not a string") from None
            if key == "items" and not streamed and loader.check_event(yaml.SequenceStartEvent) and \
                    loader.peek_event().anchor is None:
                loader.get_event()
                i = 0
                while not loader.check_event(yaml.SequenceEndEvent):
                    item = value()
                    yield _Item(loader.construct_document(item)), f"{_join(location, 'items')}[{i}]", \
                        _line(marks[-1])
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
                                      f"{fields.type_name(source)}, not a mapping")
                for k, v in source.items():
                    doc.setdefault(k, v)
        doc = _StreamedList(doc) if streamed else doc
    else:
        doc = loader.construct_document(value())
    loader.get_event()                          # document end
    if doc is not None:
        yield doc, location, line


def _line(event_or_mark):
    """The 1-based line an event (or its mark) starts on; None when the parser gave no mark."""
    mark = getattr(event_or_mark, "start_mark", event_or_mark)
    line = getattr(mark, "line", None)
    return line + 1 if isinstance(line, int) else None


# objects --------------------------------------------------------------------------------------

def _at(location):
    return f"{location}: " if location else ""


def _flatten(doc, where, location, counter, line=None):
    """The objects of one document, (object, location, line), Lists opened; `line` is the
    document's, an object inside it has none known here (a streamed List's items come with their
    own). An object with `items` is a List, as kubectl's decoder reads it: its kind must end in List."""
    if isinstance(doc, _StreamedList):
        _check_list(doc, where, location)
        counter.lists += 1
        return
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            yield from _flatten(item, where, _join(location, f"[{i}]"), counter)
        return
    if not isinstance(doc, dict):
        raise PluginError(f"{where}: {_at(location)}expected Kubernetes objects, found {fields.type_name(doc)}")
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
        raise PluginError(f"{where}: {_at(location)}kind must be a string, not {fields.type_name(kind)}")
    if kind.endswith("List"):
        raise PluginError(f"{where}: {_at(location)}a {kind} without items")
    api_version = doc.get("apiVersion")
    if api_version is not None and not isinstance(api_version, str):
        raise PluginError(f"{where}: {_at(location)}apiVersion must be a string, not {fields.type_name(api_version)}")
    counter.objects += 1
    yield doc, location, line


def _check_list(doc, where, location):
    kind = doc.get("kind")
    items = doc.get("items")
    if kind is not None and not isinstance(kind, str):
        raise PluginError(f"{where}: {_at(location)}kind must be a string, not {fields.type_name(kind)}")
    if kind is not None and not kind.endswith("List"):
        raise PluginError(f"{where}: {_at(location)}kind {kind!r} has items but is not a List kind "
                          f"(a list's kind ends in 'List', case-sensitive)")
    if not isinstance(items, list):
        raise PluginError(f"{where}: {_at(location)}items must be a list, not {fields.type_name(items)}")


def read_objects(paths, stdin=None, lines=False):
    """Every object in the given files, directories or '-' (stdin), as (object, where, location):
    `where` the file, `location` the object's place in it ('' for the only one, `items[3]`,
    `document 2, items[0]`); with `lines`, (object, where, location, line): the 1-based line the
    object starts on (None where not known: an object inside a YAML sequence that is not a
    List's streamed items). A file or stdin holding no object and no List is an error."""
    for path in _expand_paths(paths):
        text, where = _read_text(path, stdin)
        counter = _Counter()
        try:
            for doc, location, line in _documents(text, where):
                if isinstance(doc, _Item):     # an element of a streamed List's items
                    doc = doc.value
                for obj, loc, at in _flatten(doc, where, location, counter, line):
                    yield (obj, where, loc, at) if lines else (obj, where, loc)
        except PluginError:
            raise
        except RecursionError:
            raise PluginError(f"{where}: {MAX_DEPTH_MESSAGE}") from None
        except Exception as exc:     # a bug: still name the file
            if os.environ.get("KVCACHE_DEBUG"):
                raise
            raise PluginError(f"{where}: internal error while reading it: {exc.__class__.__name__}: {exc} "
                              f"(set KVCACHE_DEBUG=1 for the traceback; please report it)") from None
        if not counter.objects and not counter.lists:
            raise PluginError(f"no objects in {where}" + (" (is it empty?)" if not text.strip() else ""))
