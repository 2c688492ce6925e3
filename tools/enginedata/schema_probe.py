"""The schemas of vLLM's JSON config options, read from the real config classes (issue 29).

Runs inside an oracle process (oracle.py `schemas`), never in the plugin. An option whose
`type=` validates the document with a config dataclass (vLLM's `_compute_kwargs` parse_dataclass:
`TypeAdapter(cls).validate_json(val)`, vllm@0.33/vllm/engine/arg_utils.py; optional_type around
it turns "" and "None" into None) has a schema:
- `fields`: field name -> a word of kvparse._field_accepts ("bool", "int", "float", "str",
  "lit:<a>|<b>", "list:<one of the four>", "enum:<NAME>|<NAME>" (an Enum: its member names,
  and their lower case, are probed; the model judges them only where probed), a "?" in front:
  None allowed too, "any": not replayed);
- `forbid`: a key that is no field is refused (vLLM's @config: pydantic `extra="forbid"`),
  decided by a probe through the real callable;
- `coupled`: the fields the class's own checks read together (`__post_init__` and the methods
  it calls, pydantic model validators: every field when they cannot be read), whose values the
  model does not judge alone: a document holding them is decided only where a probed document
  with the same values of those fields was decided;
- `docs`: documents generated from the schema (each field alone with values of its type and of
  others, unknown keys, the coupled fields together) and the real callable's answer for each,
  so that the schema replay is checked against the real thing (test_engine_data) and the
  coupled cases it probed are decided.
"""

import ast
import dataclasses
import enum
import inspect
import itertools
import json
import re
import textwrap
import typing


def is_config_class(value):
    """A config class: a dataclass, or a pydantic model (vLLM < 0.9's KVTransferConfig,
    CompilationConfig: `type=Cls.from_cli`, vllm@0.8.5/vllm/config.py)."""
    return isinstance(value, type) and (dataclasses.is_dataclass(value) or hasattr(value, "model_fields"))


def dataclass_of(fn):
    """(config class, wrapped in optional_type) of a `type=` callable, else (None, False).

    The forms the releases build: parse_dataclass's closure (vLLM >= 0.10), a lambda with the class
    or its bound `from_cli` as a default (0.9: `lambda x, f=cls: f(**json.loads(x))`), either inside
    optional_type / parse_type, and the bound `Cls.from_cli` itself (0.6.5-0.8.5)."""
    optional = False
    for _ in range(4):
        if fn is None:
            return None, False
        owner = getattr(fn, "__self__", None)
        if is_config_class(owner) and getattr(fn, "__name__", "") == "from_cli":
            return owner, optional
        inner = None
        cells = []
        for cell in (getattr(fn, "__closure__", None) or ()):
            try:
                cells.append(cell.cell_contents)
            except ValueError:
                continue
        for value in list(getattr(fn, "__defaults__", None) or ()) + cells:
            if is_config_class(value):
                return value, optional
            owner = getattr(value, "__self__", None)
            if is_config_class(owner) and getattr(value, "__name__", "") == "from_cli":
                return owner, optional
            if inspect.isfunction(value) and value.__module__.startswith("vllm") and inner is None:
                inner = value
        if inner is None:
            return None, False
        optional = optional or "optional" in getattr(fn, "__qualname__", "")
        fn = inner
    return None, False


def _fields(cls):
    """[(name, annotation)] of the fields a document may set."""
    if dataclasses.is_dataclass(cls):
        return [(f.name, f.type) for f in dataclasses.fields(cls) if f.init]
    return [(name, info.annotation) for name, info in cls.model_fields.items()]


def field_type(hint):
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is bool:
        return "bool"
    if hint is int:
        return "int"
    if hint is float:
        return "float"
    if hint is str:
        return "str"
    if origin is typing.Literal and args and all(isinstance(a, str) and "|" not in a for a in args):
        return "lit:" + "|".join(args)
    if isinstance(hint, type) and issubclass(hint, enum.Enum) and all(
            isinstance(m.name, str) and "|" not in m.name for m in hint):
        # an enum (vLLM's CUDAGraphMode, CompilationMode): its member names, probed as values
        # (the class's own "before" validator may take names, in any case); judged only where probed
        return "enum:" + "|".join(m.name for m in hint)
    if is_config_class(hint):
        return "obj"
    item = field_type(args[0]) if origin is list and len(args) == 1 else None
    if item in ("int", "str", "float", "bool"):
        # a list of one plain type (capture sizes, custom ops): a JSON array, each item as a field
        return "list:" + item
    if hint is dict or origin is dict:
        return "dict"
    if args and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            inner = field_type(rest[0])
            return "?" + inner if inner != "any" and not inner.startswith("?") else "any"
    return "any"


def _method_node(fn):
    """(the method's ast node, the name of its self argument); None: its source is not readable."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.args.args:
        return None
    return node, node.args.args[0].arg


def _self_reads(fn, seen, depth=0):
    """The fields `fn` (a method) reads through self; None: it hands self on (not readable)."""
    read = _method_node(fn)
    if read is None:
        return None
    node, me = read
    reads = set()
    owner = fn.__qualname__.rsplit(".", 1)[0]
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == me:
            reads.add(sub.attr)
        elif isinstance(sub, ast.Call):
            handed = [a for a in list(sub.args) + [k.value for k in sub.keywords]
                      if isinstance(a, ast.Name) and a.id == me]
            if handed:
                return None
        elif isinstance(sub, ast.Name) and sub.id == me and isinstance(getattr(sub, "ctx", None), ast.Load):
            pass
    cls = fn.__globals__.get(owner.split(".")[0])
    for name in sorted(reads):
        method = _method(cls, name)
        if method is not None and name not in seen and depth < 4:
            seen.add(name)
            inner = _self_reads(method, seen, depth + 1)
            if inner is None:
                return None
            reads |= inner
    return reads


def _method(cls, name):
    """The function behind `self.<name>` when it is a method or a property of the class (a
    property's reads are the check's reads too: vllm@0.34 ProfilerConfig.should_profile_frontend),
    else None."""
    if cls is None:
        return None
    try:
        found = inspect.getattr_static(cls, name)
    except AttributeError:
        return None
    if isinstance(found, property):
        found = found.fget
    elif hasattr(found, "func") and type(found).__name__ == "cached_property":
        found = found.func
    return found if inspect.isfunction(found) else None


def _after_validators(cls):
    """pydantic's model validators run on the built instance (mode "after": `def v(self)`), or None
    when one runs on the raw input (mode "before"/"wrap", a root validator: not readable here)."""
    decorators = getattr(cls, "__pydantic_decorators__", None)
    if decorators is None:
        return []
    if getattr(decorators, "root_validators", None):
        return None
    out = []
    for dec in (getattr(decorators, "model_validators", None) or {}).values():
        if getattr(dec.info, "mode", None) != "after" or not inspect.isfunction(getattr(dec, "func", None)):
            return None
        out.append(dec.func)
    return out


def _checks(cls):
    """The class's own checks after the fields are set: __post_init__, model_post_init (the first
    of each in the MRO that the release defines), and pydantic's "after" model validators
    (vllm@0.34/vllm/config/parallel.py EPLBConfig._validate_eplb_config; issue 52)."""
    out = []
    for name in ("__post_init__", "model_post_init"):
        for klass in cls.__mro__:
            fn = klass.__dict__.get(name)
            if fn is not None:
                if klass.__module__.startswith("vllm"):
                    out.append(fn)
                break
    return out + (_after_validators(cls) or [])


def coupled_fields(cls, names):
    """The fields the class's own checks read together, or all of them when not readable."""
    decorators = getattr(cls, "__pydantic_decorators__", None)
    if _after_validators(cls) is None:
        return set(names)
    reads = set()
    for fn in _checks(cls):
        found = _self_reads(fn, set())
        if found is None:
            return set(names)
        reads |= found
    if decorators is not None:
        for info in getattr(decorators, "field_validators", {}).values():
            reads |= set(getattr(info.info, "fields", ()))
    return reads & set(names)


# A string that no check compares a value with: it stands, in the probed documents, for every
# string of a field the class's checks only test against None (or for truth); kvparse.ANY_STRING
ANY_STRING = "zz_any_string"
_TESTS = (ast.If, ast.While, ast.IfExp, ast.Assert)


def _in_test(node, parents):
    """The node's value is used only for its truth (an `if`, `not`, or an and/or in such a place)."""
    parent = parents.get(node)
    if isinstance(parent, _TESTS) and parent.test is node:
        return True
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return True
    if isinstance(parent, ast.BoolOp):
        return _in_test(parent, parents)
    return False


def _uses(fn, seen, depth=0):
    """{field: {"null", "truth", "store", "other"}}: how the checks use each `self.<field>` (the
    methods and properties they reach included); None when not readable (self handed on, super())."""
    read = _method_node(fn)
    if read is None:
        return None
    node, me = read
    parents = {child: sub for sub in ast.walk(node) for child in ast.iter_child_nodes(sub)}
    uses = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "super":
            return None
        if isinstance(sub, ast.Name) and sub.id == me and not isinstance(parents.get(sub), (ast.Attribute, ast.Return)):
            return None   # self itself handed on or kept (an "after" validator returns it)
        if not (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == me):
            continue
        parent = parents.get(sub)
        if isinstance(sub.ctx, ast.Store):
            kind = "store"
        elif (isinstance(parent, ast.Compare) and len(parent.ops) == 1 and isinstance(parent.ops[0], (ast.Is, ast.IsNot))
              and any(isinstance(c, ast.Constant) and c.value is None for c in [parent.left] + parent.comparators)):
            kind = "null"
        elif _in_test(sub, parents):
            kind = "truth"
        else:
            kind = "other"
        uses.setdefault(sub.attr, set()).add(kind)
    cls = fn.__globals__.get(fn.__qualname__.rsplit(".", 1)[0].split(".")[0])
    if not isinstance(cls, type):
        return None   # its class not found: a method or property it reads could not be followed
    for name in sorted(uses):
        method = _method(cls, name)
        if method is not None:
            if name in seen or depth >= 4:
                return None
            seen.add(name)
            inner = _uses(method, seen, depth + 1)
            if inner is None:
                return None
            for field, kinds in inner.items():
                uses.setdefault(field, set()).update(kinds)
    return uses


def tested_fields(cls, names):
    """{field: "null" | "truth"}: the string fields the class's checks use only in `is None` tests
    ("null") or also for their truth ("truth"), no field validator of their own: for those checks
    every string (every non-empty one for "truth") is the same value (issue 52: KVTransferConfig's
    kv_connector and engine_id, vllm@0.9.0-0.34/vllm/config/kv_transfer.py __post_init__; the
    connector name is looked up only when the engine builds the connector)."""
    checks = _checks(cls)
    if _after_validators(cls) is None:
        return {}
    uses = {}
    for fn in checks:
        found = _uses(fn, set())
        if found is None:
            return {}
        for field, kinds in found.items():
            uses.setdefault(field, set()).update(kinds)
    decorators = getattr(cls, "__pydantic_decorators__", None)
    validated = set()
    if decorators is not None:
        for info in getattr(decorators, "field_validators", {}).values():
            validated |= set(getattr(info.info, "fields", ()))
    out = {}
    for name in names:
        kinds = uses.get(name, set())
        if name in validated or not kinds or "other" in kinds:
            continue
        out[name] = "truth" if "truth" in kinds else "null"
    return out


def compared_strings(cls):
    """The strings the class's checks compare a value to (`self.kv_role not in ["kv_producer",
    ...]`, vllm@0.8.5/vllm/config.py KVTransferConfig.model_post_init): probed as values."""
    found = []
    for fn in _checks(cls):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                for part in [node.left] + list(node.comparators):
                    for sub in ast.walk(part):
                        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value not in found:
                            found.append(sub.value)
    return found[:12]


def _member_values(hint):
    """An enum field's member values a JSON document can hold (an IntEnum's numbers: vLLM's
    CompilationMode), probed beside the names."""
    for cls in [hint] + list(typing.get_args(hint)):
        if isinstance(cls, type) and issubclass(cls, enum.Enum):
            return [m.value for m in cls if isinstance(m.value, (int, str)) and not isinstance(m.value, bool)]
    return []


def _metadata(cls, name):
    """The pydantic constraints of a field (`Field(default=1000, gt=0)`: annotated_types.Gt(0))."""
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            if f.name == name:
                return list(getattr(f.default, "metadata", None) or [])
        return []
    info = getattr(cls, "model_fields", {}).get(name)
    return list(getattr(info, "metadata", None) or [])


def bounded(kind, metadata):
    """An int or float field with one lower bound and no other constraint: "int>0", "?int>=0"
    (vllm@0.34/vllm/config/parallel.py EPLBConfig.window_size: `Field(default=1000, gt=0)`); the
    replay keeps it only where it agreed with the real callable (engine_data.schema_data)."""
    if kind.lstrip("?") not in ("int", "float") or len(metadata) != 1:
        return kind
    item = metadata[0]
    for attr, op in (("gt", ">"), ("ge", ">=")):
        value = getattr(item, attr, None)
        if type(item).__name__ in ("Gt", "Ge") and isinstance(value, int) and not isinstance(value, bool):
            return kind + op + str(value)
    return kind


def schema(cls, depth=0):
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - a forward reference the stand-ins cannot resolve
        hints = {}
    fields, nested, members = {}, {}, {}
    for name, annotation in _fields(cls):
        hint = hints.get(name, annotation)
        fields[name] = field_type(hint) if name in hints else "any"
        try:
            fields[name] = bounded(fields[name], _metadata(cls, name))
        except Exception:  # noqa: BLE001 - constraints not readable: the plain type
            pass
        if fields[name].lstrip("?").startswith("enum:"):
            members[name] = _member_values(hint)
        if fields[name] == "obj" and depth == 0:
            try:
                nested[name] = schema(hint, depth + 1)
            except Exception:  # noqa: BLE001 - not readable: no nested documents
                pass
    config = getattr(cls, "__pydantic_config__", None) or getattr(cls, "model_config", None) or {}
    extra = config.get("extra") if isinstance(config, dict) else None
    coupled = coupled_fields(cls, fields)
    tested = {n: t for n, t in tested_fields(cls, sorted(coupled)).items() if fields[n].lstrip("?") == "str"}
    return {"class": f"{cls.__module__}.{cls.__qualname__}", "fields": dict(sorted(fields.items())),
            "coupled": sorted(coupled), "tested": tested, "strings": compared_strings(cls), "nested": nested,
            "members": members,
            "extra": extra if isinstance(extra, str) or extra is None else str(extra)}


RAW = ["0", "1", "2", "3", "4", "null", "[]", '"x"', "", "None", "{", "{}"]
# fields whose string values the engine looks up in a registry of its own (read here, from the
# release: the connector factories), crossed with the other coupled fields
NAMED = {"kv_connector": "KVConnectorFactory", "ec_connector": "ECConnectorFactory"}


def _factory_names(name):
    import sys
    for module_name, mod in list(sys.modules.items()):
        if not module_name.startswith("vllm") or mod is None or not hasattr(mod, "__dict__"):
            continue
        factory = mod.__dict__.get(name)
        if isinstance(factory, type) and isinstance(getattr(factory, "_registry", None), dict):
            return sorted(str(n) for n in factory._registry)
    return []


VALUES = {"bool": [True, False], "int": [0, 1, 8, -1], "float": [0.5, 1, 0, -0.5], "str": ["x", ""],
          "list:int": [[1, 2, 4, 8], [], [0], [512, 256]], "list:str": [["x"], [], ["x", ""]],
          "list:float": [[0.5], []], "list:bool": [[True], []]}
# what pydantic's lax mode may take for a field of the type (judged only where probed)
# (plain decimal strings for an int field: launch commands write `"kv_port": "30000"`; kvparse.DIGITS)
LAX = {"bool": ["True", "true", "false", "False", "1", 1, 0],
       "int": ["1", 2.0, "0", "8", "30000", "14579", "2147483648", "123456789012345678"], "float": ["1.5", 2],
       "list:int": [["1"], [2.0], [True]], "list:bool": [["true"], [1]], "list:float": [[1], ["0.5"]]}
# connector names launch commands and the operator write, whether or not the release registers them
KNOWN_CONNECTORS = ["NixlConnector", "LMCacheConnectorV1", "LMCacheConnector", "P2pNcclConnector",
                    "MooncakeConnector", "MooncakeStoreConnector", "MultiConnector", "OffloadingConnector",
                    "SharedStorageConnector", "PyNcclConnector", "ExampleConnector"]
WRONG = [[1], {"a": 1}, "x", 1.5, None, True, 3]


def _typed(sch, name, kind):
    base = BOUND.sub("", kind.lstrip("?"))
    values = list(VALUES.get(base, []))
    if base.startswith("lit:"):
        values = base[4:].split("|") + ["no_such_value"]
    if base.startswith("enum:"):
        names = base[5:].split("|")
        values = names + [n.lower() for n in names if n.lower() != n] + [
            v for v in sch.get("members", {}).get(name, []) if v not in names] + ["no_such_value"]
    if base == "str":
        values = [v for v in sch.get("strings", [])] + values
    if base == "list:str":
        values = [[v] for v in sch.get("strings", [])[:6]] + values
    if kind.startswith("?"):
        values.append(None)
    return values


BOUND = re.compile(r"(>=|>)-?[0-9]+$")   # bounded()'s suffix


def documents(sch):
    """Generated documents: each field with values of its type, pydantic's lax ones and wrong ones,
    a nested config's fields one at a time and its switches two at a time, unknown keys, the
    coupled fields together (their typed values crossed, at most a few thousand)."""
    # an unknown key given 1, true and null: whether the document is read as JSON (vLLM 0.6.5-0.8.5's
    # CompilationConfig.from_cli reads it with ast.literal_eval, which has no true/false/null)
    docs = [{}, {"zz_no_such_field": 1}, {"zz_no_such_field": True}, {"zz_no_such_field": None}]
    typed = {}
    for name, kind in sch["fields"].items():
        values = _typed(sch, name, kind)
        typed[name] = values[:16 if kind.lstrip("?").startswith("enum:") else 8] or ["x"]
        if name in NAMED:
            names = _factory_names(NAMED[name])
            typed[name] = names[:24] + [n for n in KNOWN_CONNECTORS if n not in names] + typed[name]
        for v in values + LAX.get(BOUND.sub("", kind.lstrip("?")), []) + WRONG:
            docs.append({name: v})
        inner = sch.get("nested", {}).get(name)
        if inner:
            docs += [{name: {}}, {name: {"zz_no_such_field": 1}}]
            for sub, sub_kind in inner["fields"].items():
                for v in _typed(inner, sub, sub_kind) + LAX.get(sub_kind.lstrip("?"), []) + WRONG[:3]:
                    docs.append({name: {sub: v}})
            # two switches of a nested config together (`{"pass_config": {"fuse_allreduce_rms":
            # true, "eliminate_noops": true}}`: its own checks may read them together)
            switches = [sub for sub, sub_kind in inner["fields"].items() if sub_kind == "bool"]
            for a, b in itertools.combinations(switches[:16], 2):
                for va, vb in ((True, True), (True, False), (False, True)):
                    docs.append({name: {a: va, b: vb}})
    coupled = [n for n in sch["coupled"] if n in typed]

    def width(n):
        if n in NAMED:
            return 40
        kind = sch["fields"][n].lstrip("?")
        if kind.startswith("enum:"):
            return len(kind[5:].split("|"))
        return 8 if kind == "str" and sch.get("strings") else 3
    if coupled and len(coupled) <= 6:
        for picks in itertools.islice(itertools.product(*[[...] + typed[n][:width(n)] for n in coupled]), 3000):
            doc = {n: v for n, v in zip(coupled, picks) if v is not ...}
            docs.append(doc)
    # the coupled fields crossed again with each tested field (tested_fields) as absent, null, ""
    # (a "truth" one) or ANY_STRING: the documents kvparse.judge_document maps a string to
    tested = sch.get("tested") or {}
    if coupled and any(n in tested for n in coupled):
        def stand_ins(n):
            if n in tested:
                return [..., None, ANY_STRING] + ([""] if tested[n] == "truth" else [])
            few = sch["fields"][n].lstrip("?").startswith(("lit:", "enum:")) or sch["fields"][n].lstrip("?") == "bool"
            return [...] + (typed[n] if few else typed[n][:width(n)])
        for picks in itertools.islice(itertools.product(*[stand_ins(n) for n in coupled]), 3000):
            docs.append({n: v for n, v in zip(coupled, picks) if v is not ...})
    # pairs of coupled fields whose values are few (enums, literals, booleans): every pair of values,
    # whatever the number of coupled fields (the product above stops at 6; a launch command sets
    # cudagraph_mode with mode, or with a boolean switch)
    few = [n for n in sch["coupled"] if n in typed and (
        sch["fields"][n].lstrip("?").startswith(("enum:", "lit:")) or sch["fields"][n].lstrip("?") == "bool")]
    for a, b in itertools.combinations(few, 2):
        for va in typed[a]:
            for vb in typed[b]:
                docs.append({a: va, b: vb})
    out, seen = [], set()
    for doc in docs:
        text = json.dumps(doc, sort_keys=True)
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out + [r for r in RAW if r not in seen]


def describe(parser, extra_documents=()):
    """{option: schema with the real callable's answer for each generated document}."""
    out = {}
    for action in parser._actions:
        if not action.option_strings or action.type is None:
            continue
        cls, optional = dataclass_of(action.type)
        if cls is None:
            continue
        try:
            sch = schema(cls)
        except Exception:  # noqa: BLE001 - not readable: the option stays opaque
            continue
        sch["optional"] = optional
        answers = {}
        for doc in documents(sch) + list(extra_documents):
            try:
                action.type(doc)
                answers[doc] = True
            except BaseException:  # noqa: BLE001
                answers[doc] = False
        sch["forbid"] = answers.get('{"zz_no_such_field": 1}') is False
        sch["docs"] = answers
        for name in action.option_strings:
            out[name] = sch
    return out
