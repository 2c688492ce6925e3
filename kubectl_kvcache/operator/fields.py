"""The typed reading of one field of a raw JSON object: every field a record reads is checked
against the type the API server's schema enforces (the core v1 Pod, the operator's CRDs). A saved
file can hold anything, and a value of the wrong type must be an InvalidObject naming the object and
the field path, never a crash or a silent verdict. The checks are `value.__class__ is T` tests on
the fields read, nothing else is walked. decode.py builds the records with them."""

from __future__ import annotations

from kubectl_kvcache.errors import InvalidObject
from kubectl_kvcache.operator.api import ANNOTATION_PREFIX

INT64 = (-(1 << 63), (1 << 63) - 1)
INT32 = (-(1 << 31), (1 << 31) - 1)
EMPTY: dict = {}


def type_name(value):
    """How an error names a value's JSON type (`a string`, `null`, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def bad(what, path, expected, value):
    return InvalidObject(what, path, f"must be {expected}, not {type_name(value)}")


def as_str(value, what, path):
    """A string field: the string, or None when absent (null)."""
    if value.__class__ is str or value is None:
        return value
    raise bad(what, path, "a string", value)


def as_bool(value, what, path):
    if value is None or value.__class__ is bool:
        return value
    raise bad(what, path, "a boolean", value)


def as_int(value, what, path, bounds=INT64):
    if value is None:
        return None
    if value.__class__ is not int:
        raise bad(what, path, "an integer", value)
    if not bounds[0] <= value <= bounds[1]:
        raise InvalidObject(what, path, f"integer out of range ({value if len(str(value)) < 30 else 'too long'})")
    return value


def as_obj(value, what, path):
    """An object field: the dict, or an empty one when absent (null)."""
    if value.__class__ is dict:
        return value
    if value is None:
        return EMPTY
    raise bad(what, path, "an object", value)


def as_list(value, what, path):
    if value.__class__ is list:
        return value
    if value is None:
        return ()
    raise bad(what, path, "a list", value)


def as_objects(value, what, path):
    """The objects of a list field, each with its path (`spec.roles[2]`); any other element is an
    error naming it."""
    for i, item in enumerate(as_list(value, what, path)):
        at = f"{path}[{i}]"
        if item.__class__ is not dict:
            raise bad(what, at, "an object", item)
        yield at, item


def as_str_list(value, what, path):
    """A list of strings (command, args, extraArgs) as a tuple."""
    if value is None:
        return ()
    if value.__class__ is not list:
        raise bad(what, path, "a list of strings", value)
    for i, element in enumerate(value):
        if element.__class__ is not str:
            raise bad(what, f"{path}[{i}]", "a string", element)
    return value


def as_str_map(value, what, path):
    """map[string]string (labels, annotations)."""
    if value is None:
        return EMPTY
    if value.__class__ is not dict:
        raise bad(what, path, "an object of strings", value)
    for k, v in value.items():
        if k.__class__ is not str:
            raise InvalidObject(what, path, f"key {k!r} must be a string, not {type_name(k)}")
        if v.__class__ is not str:
            raise bad(what, f"{path}[{k!r}]" if not k.isidentifier() else f"{path}.{k}", "a string", v)
    return value


_ENV_REFS = (("secretKeyRef", ("name", "key")), ("configMapKeyRef", ("name", "key")), ("fieldRef", ("fieldPath",)),
             ("resourceFieldRef", ("resource",)))


def as_env(value, what, path):
    """A container's (or a role's) env: [{name, value, valueFrom}]."""
    entries = as_list(value, what, path)
    for i, entry in enumerate(entries):
        if entry.__class__ is not dict:
            raise bad(what, f"{path}[{i}]", "an object", entry)
        if as_str(entry.get("name"), what, f"{path}[{i}].name") is None:
            raise InvalidObject(what, f"{path}[{i}].name", "missing")  # required by the schema
        as_str(entry.get("value"), what, f"{path}[{i}].value")
        source = entry.get("valueFrom")
        if source is not None:
            source = as_obj(source, what, f"{path}[{i}].valueFrom")
            for ref, keys in _ENV_REFS:
                sub = as_obj(source.get(ref), what, f"{path}[{i}].valueFrom.{ref}")
                for key in keys:
                    as_str(sub.get(key), what, f"{path}[{i}].valueFrom.{ref}.{key}")
    return entries


def as_env_from(value, what, path):
    entries = as_list(value, what, path)
    for i, entry in enumerate(entries):
        if entry.__class__ is not dict:
            raise bad(what, f"{path}[{i}]", "an object", entry)
        as_str(entry.get("prefix"), what, f"{path}[{i}].prefix")
        for ref in ("configMapRef", "secretRef"):
            as_str(as_obj(entry.get(ref), what, f"{path}[{i}].{ref}").get("name"), what, f"{path}[{i}].{ref}.name")
    return entries


def describe(obj, kind=None):
    """`Pod ns/name` for messages; tolerant of any shape (it names objects that are malformed)."""
    if obj.__class__ is not dict:
        return kind or "object"
    meta = obj.get("metadata")
    meta = meta if meta.__class__ is dict else EMPTY
    name, ns = meta.get("name"), meta.get("namespace")
    kind = obj.get("kind") if obj.get("kind").__class__ is str and obj.get("kind") else kind or "object"
    if name.__class__ is not str or not name:
        return kind
    if ns.__class__ is str and ns:
        return f"{kind} {ns}/{name}"
    return f"{kind} {name}"


def metadata(obj, what):
    """metadata with a name (a string) and, when set, a namespace (a string)."""
    meta = obj.get("metadata")
    if meta.__class__ is not dict:
        raise InvalidObject(what, "metadata", "missing" if meta is None else f"must be an object, not "
                                                                            f"{type_name(meta)}")
    name = meta.get("name")
    if name.__class__ is not str or not name:
        raise InvalidObject(what, "metadata.name", "missing" if name in (None, "") else
                            f"must be a string, not {type_name(name)}")
    as_str(meta.get("namespace"), what, "metadata.namespace")
    return meta


def with_spec(obj, kind):
    """(description, metadata, spec) of an object that must have both."""
    what = describe(obj, kind)
    meta = metadata(obj, what)
    spec = obj.get("spec")
    if spec.__class__ is not dict:
        raise InvalidObject(what, "spec", "missing" if spec is None else f"must be an object, not {type_name(spec)}")
    return what, meta, spec


def kv_annotations(meta, what, path="metadata.annotations"):
    ann = meta.get("annotations")
    if not ann:
        return {}
    if ann.__class__ is not dict:
        raise bad(what, path, "an object of strings", ann)
    kept = {}
    for k, v in ann.items():
        if k.__class__ is not str:
            raise InvalidObject(what, path, f"key {k!r} must be a string, not {type_name(k)}")
        if k.startswith(ANNOTATION_PREFIX):
            if v.__class__ is not str:
                raise bad(what, f"{path}[{k!r}]", "a string", v)
            kept[k] = v
    return kept
