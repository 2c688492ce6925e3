"""What a release's parser does with each option's value, asked of the REAL parser objects.

Runs inside an oracle process (oracle.py `describe`), never in the plugin. For every action of
the parser that reads --kv-cache-dtype it reports:
- `action`: its argparse action class as a word of a small vocabulary (store, store_true, ...,
  boolean for BooleanOptionalAction and subclasses that keep its __call__, help, version, or
  custom: a class whose __call__ runs the engine's own code at parse time);
- `type`: where its `type=` callable comes from (for reading), and `probes`: for each value of
  PROBES whether that callable accepts it ("1") or argparse reports an error ("0"). argparse
  calls `type(value)` on each value and refuses ArgumentTypeError, TypeError and ValueError
  (CPython Lib/argparse.py:_get_value); any other exception kills the engine too. engine_data
  matches these answers against the plugin's own converters (kvparse.TYPES) and records the one
  that agrees on every probe, or "opaque" with the accepted probes;
- `choices` (as strings) and `file`: its help text says the value names a file.
And the dests the entry point's start-up code reads after the parse (vLLM's
validate_parsed_serve_args and the like): a Namespace that records attribute reads.
"""

import argparse
import re

# Values each `type=` callable is asked about. The fuzzer draws wrong-typed values from here too,
# so that an opaque type's recorded answers are exercised.
PROBES = ["", " ", "0", "1", "-1", "7", " 7 ", "+3", "1_000", "08", "0x10", "1.5", "-0.5", ".5", "1e3", "1E-2",
          "nan", "inf", "-inf", "1k", "1K", "2m", "3M", "4g", "5G", "6t", "7T", "1.5k", "1.5K", "25.6k", "1Ki",
          "auto", "AUTO", "Auto", "none", "None", "null", "true", "false", "True", "yes", "no", "on", "off",
          "abc", "x y", "{", "}", "{}", "[]", "[1]", "[1, 2]", '{"a": 1}', '{"x": null}', " {} ", "{'a': 1}",
          '"s"', "1,2", "a,b", "-", "--", "fp8", "bf16", "\u0661", "0.0", "-0", "1.", "1/2", "/dev/null",
          "m", "org/model", "8000", "65536", "99999999999999999999",
          # what the operator renders for vLLM's connector options (its pkg/worker/kvcache/inject/vllm.go;
          # every document operator/renderer.py writes is added below)
          '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}',
          '{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both"}',
          '{"kv_connector":"MooncakeConnector","kv_role":"kv_producer"}',
          '{"kv_connector":"MooncakeConnector","kv_role":"kv_consumer"}',
          '{"kv_connector":"NixlConnector","kv_role":"kv_both"}',
          '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","topic":"kv-events"}',
          '{"kv_connector":"X"}', '{"level": 3}', '{"mode": 3}']


def _rendered_documents():
    """Every --kv-transfer-config and --kv-events-config document the operator's renderer writes
    (operator/renderer.py, from inject/vllm.go: renderVLLM), and the point-to-point document with
    the extra config its tests use: a Pod the operator rendered is judged on probed values only."""
    from kubectl_kvcache.operator import renderer

    docs = [renderer.KV_EVENTS_DOC,
            '{"kv_connector":"MooncakeConnector","kv_role":"kv_producer",'
            '"kv_connector_extra_config":{"mooncake_protocol":"tcp"}}']
    for engine in renderer.STORE_CONNECTORS:
        for kind in renderer.VLLM_KV_ROLES:
            for store in (True, False):
                for p2p in (True, False):
                    doc = renderer.vllm_transfer_config(engine, kind, store, p2p)
                    if doc is not None:
                        docs.append(doc)
    return docs


PROBES += [d for d in dict.fromkeys(_rendered_documents()) if d not in PROBES]

_KINDS = [("_StoreTrueAction", "store_true"), ("_StoreFalseAction", "store_false"),
          ("_StoreConstAction", "store_const"), ("_AppendConstAction", "append_const"),
          ("_AppendAction", "append"), ("_ExtendAction", "extend"), ("_CountAction", "count"),
          ("_HelpAction", "help"), ("_VersionAction", "version"), ("_StoreAction", "store")]
_FILE_HELP = re.compile(r"(?=.*\bpath\b)(?=.*\bfile\b)", re.I | re.S)   # "the path of the ... file"


def action_kind(action, parser=None):
    """The vocabulary word of an action's class: the argparse class whose __call__ it runs."""
    cls = type(action)
    call = cls.__call__
    for name, word in _KINDS:
        base = getattr(argparse, name, None)
        if base is not None and isinstance(action, base) and call is base.__call__:
            return word
    boolean = getattr(argparse, "BooleanOptionalAction", None)
    if boolean is not None and isinstance(action, boolean) and call is boolean.__call__:
        return "boolean"
    if action.nargs == 0:
        return _flag_kind(action, parser)
    return "custom"


def _flag_kind(action, parser):
    """A custom action that takes no value: "flag" when, for each of its option strings, it sets
    only its own dest and raises nothing (vLLM's EnableDisableAction); "fails" when it raises for
    every one (SGLang's DeprecatedAction: the engine dies at that token); else "custom"."""
    raised = 0
    for name in action.option_strings:
        ns = argparse.Namespace()
        try:
            action(parser, ns, [], name)
        except BaseException:  # noqa: BLE001
            raised += 1
            continue
        if set(vars(ns)) - {action.dest}:
            return "custom"
    if raised == len(action.option_strings):
        return "fails"
    return "flag" if raised == 0 else "custom"


def _type_name(fn):
    if fn is None:
        return "None"
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{getattr(fn, '__module__', '') or ''}.{name}".lstrip(".")


def probe(fn):
    """'1'/'0' per PROBES: the callable accepts the value, or argparse (or the engine) refuses it."""
    if fn is None:
        return "1" * len(PROBES)
    out = []
    for value in PROBES:
        try:
            fn(value)
            out.append("1")
        except BaseException:  # noqa: BLE001 - any exception ends the engine's start
            out.append("0")
    return "".join(out)


def describe_actions(parser):
    """{option string: {action, type, probes, choices, file, dest}} for every option."""
    out = {}
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._SubParsersAction):
            continue
        kind = action_kind(action, parser)
        row = {"action": kind, "dest": action.dest, "type": _type_name(action.type),
               "file": bool(_FILE_HELP.match(str(action.help or "")))}
        if kind in ("store", "append", "extend", "custom") and action.nargs not in (0, "0"):
            row["probes"] = probe(action.type)
        if action.choices is not None:
            try:
                row["choices"] = sorted(str(c) for c in action.choices)
            except TypeError:
                row["choices"] = None
        for name in action.option_strings:
            out[name] = row
    return out


class ReadRecorder:
    """Records the attributes read from parsed namespaces while `on`."""

    def __init__(self):
        self.on = False
        self.reads = set()

    def watch(self, namespace):
        recorder = self
        base = type(namespace)

        class Recording(base):
            def __getattribute__(self, name):
                if recorder.on and not name.startswith("__"):
                    recorder.reads.add(name)
                return base.__getattribute__(self, name)
        try:
            namespace.__class__ = Recording
        except TypeError:
            pass
        return namespace


NO_VALUE = ("store_true", "store_false", "store_const", "append_const", "count", "boolean", "flag")


def start_up_probes(run, parser, model_argv, reads):
    """What the entry point's start-up code does with each no-value option it reads, alone.

    `run(argv)` runs the entry point and returns (answer, dests read after the parse). Starting
    from the dests read with no options, each no-value option whose dest is read is run alone
    (model_argv + [option]); the dests that run reads join the set, until none is new. Returns
    ({dest: [option strings]} read, {option string: None | the error it dies with})."""
    by_dest = {}
    for action in parser._actions:
        if action.option_strings:
            by_dest.setdefault(action.dest, []).extend(action.option_strings)
    kinds = {name: action_kind(a, parser) for a in parser._actions for name in a.option_strings}
    seen, todo, solo = set(), [d for d in reads if d in by_dest], {}
    while todo:
        dest = todo.pop()
        if dest in seen:
            continue
        seen.add(dest)
        for name in by_dest[dest]:
            if kinds.get(name) not in NO_VALUE:
                continue
            answer, more = run(model_argv + [name])
            solo[name] = None if answer.get("outcome") == "ok" else (answer.get("error") or answer.get("outcome"))
            todo.extend(d for d in more if d in by_dest and d not in seen)
    return {d: sorted(by_dest[d]) for d in sorted(seen)}, dict(sorted(solo.items()))
