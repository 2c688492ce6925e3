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
          '{"kv_connector":"X"}', '{"level": 3}', '{"mode": 3}',
          # the KEY=VALUE form of vLLM's nullable_kvs (--limit-mm-per-prompt before 0.10)
          "image=2", "image=2,video=1", " Image = 3 ", "a=x", "a=1,a=2", "a=1,a=1", "a=1,", "a=1=2", "{x}"]


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

# Values each engine's own Action class (kind "custom", with a str type) is called with, one item
# at a time, besides PROBES: the forms people give LoRA options (name=path, JSON documents with
# and without each field), so that engine_data can match the Action to kvparse.ACTION_RULES.
ACTION_PROBES = PROBES + [
    "a=b", "a=/p", "sql-lora=/models/sql-lora", "a=b=c", "a=b,c", "a=", "=b", "a,b=c", " a=b ", "a b=c",
    '{"name": "a", "path": "/p"}', '{"name": "a", "path": "/p", "base_model_name": "m"}', '{"name": "a"}',
    '{"path": "/p"}', '{"name": "a", "path": "/p", "x": 1}', '{"name": "a", "path": "/p", "base_model_name": null}',
    '[{"name": "a", "path": "/p"}]', '{"lora_name": "a", "lora_path": "/p"}', '{"lora_name": "a"}',
    ' {"lora_name": "a", "lora_path": "/p"} ', '{"lora_name": "a", "lora_path": "/p", "pinned": true}',
    '{"lora_path": "/p"}', "{not json}", '{"name": "a", "path": "/p"}x', "x{}", "/models/adapter"]
# several items at once: the Action judges each on its own (checked, not assumed)
ACTION_MULTI = [["a=b", "c=d"], ["a=b", "{"], ["", "a=b"], ['{"name": "a", "path": "/p"}', "a=b"],
                ["x", '{"lora_name": "a", "lora_path": "/p"}'], ["a=b", "abc"]]

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
    names = registered_strings(parser, action) if parser is not None else list(action.option_strings)
    for name in names:
        ns = argparse.Namespace()
        try:
            action(parser, ns, [], name)
        except BaseException:  # noqa: BLE001
            raised += 1
            continue
        if set(vars(ns)) - {action.dest}:
            return "custom"
    if raised == len(names):
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


def choices_as_strings(action):
    """The choices oracle.py records as a string list (argparse compares the string itself)."""
    return action.type in (None, str) and all(isinstance(c, str) and " " not in c for c in action.choices)


def _in_choices(action, value):
    """argparse's _get_values then _check_value: the type's result must be among the choices."""
    converted = action.type(value) if action.type is not None else value
    if converted not in action.choices:
        raise ValueError(f"invalid choice: {converted!r}")
    return converted


def registered_strings(parser, action):
    """Every option string the parser matches to this action, in the order they were registered:
    what argparse reads the argv with (its _option_string_actions), which can hold more than the
    action's own option_strings (vllm@0.33 vllm/utils/argparse_utils.py:_register_action keeps
    --no-enable-x and --no-disable-x registered but takes them out of the action, for the help)."""
    names = [name for name, owner in parser._option_string_actions.items() if owner is action]
    return names + [name for name in action.option_strings if name not in names]


def probe_action(parser, action, name):
    """For an engine's own Action that takes values: '1'/'0' per ACTION_PROBES item and then per
    ACTION_MULTI list (the Action returns, or raises / exits; '-' where its `type=` refuses the
    value first), or None when it sets another dest than its own (then its outcome is not a
    function of the value alone)."""
    out = []
    for values in [[v] for v in ACTION_PROBES] + ACTION_MULTI:
        ns = argparse.Namespace()
        given = values if action.nargs in ("+", "*") or isinstance(action.nargs, int) else values[0]
        if action.nargs not in ("+", "*") and len(values) > 1:
            out.append("-")
            continue
        # converted by its `type=` first, as argparse's _get_values does (vLLM's optional_type
        # makes "" and "None" None, which its LoRAParserAction skips); where that conversion
        # refuses, argparse stops before the Action runs: its `type=` probes decide, "-" here
        convert = action.type if callable(action.type) else (lambda v: v)
        try:
            given = [convert(v) for v in given] if isinstance(given, list) else convert(given)
        except BaseException:  # noqa: BLE001 - the `type=` refuses: not the Action's answer
            out.append("-")
            continue
        try:
            action(parser, ns, given, name)
            out.append("1")
        except BaseException:  # noqa: BLE001 - argparse's error() exits; anything else kills the engine
            out.append("0")
        if set(vars(ns)) - {action.dest}:
            return None
    return "".join(out)


def probe_const(parser, action, name):
    """'1'/'0': the engine's own Action of an nargs="?" option given without a value, as argparse
    calls it then (its `const`, converted by its `type=` when a string: argparse _get_values)."""
    ns = argparse.Namespace()
    try:
        value = action.const
        if isinstance(value, str) and callable(action.type):
            value = action.type(value)
        action(parser, ns, value, name)
        return "1"
    except BaseException:  # noqa: BLE001 - argparse's error() exits; anything else kills the engine
        return "0"


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
        if kind == "custom" and action.nargs not in (0, "0"):
            row["action_probes"] = probe_action(parser, action, action.option_strings[0])
        if kind == "custom" and action.nargs == "?":
            row["const_probe"] = probe_const(parser, action, action.option_strings[0])
        if action.choices is not None:
            try:
                row["choices"] = sorted(str(c) for c in action.choices)
            except TypeError:
                row["choices"] = None
            kv = [n for n in action.option_strings if n.startswith("--kv") and n != "--kv-cache-dtype"]
            if "probes" in row and kv and not choices_as_strings(action):
                # a --kv option's choices are fixed (the model refuses a value outside them), but
                # these the data cannot hold as strings (a `type=` that converts first:
                # vllm@0.11.1 --kv-offloading-backend): what argparse does with each probe, type
                # and choices both; the model knows only those answers (other options' choices
                # are recorded from this row and judged as not fixed)
                row["probes"] = probe(lambda v, a=action: _in_choices(a, v))
        for name in registered_strings(parser, action):
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
            by_dest.setdefault(action.dest, []).extend(registered_strings(parser, action))
    kinds = {name: action_kind(a, parser) for a in parser._actions for name in registered_strings(parser, a)}
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


# Values a value option whose dest the start-up code reads is run with, alone (start_up_values):
# the level names people give logging options (SGLang from 0.5.12 hands --log-level to
# logging.basicConfig before ServerArgs: sglang@0.5.15/sglang/srt/server_args.py
# prepare_server_args), in the cases they write them, and words that are not levels.
START_UP_VALUES = [w for base in ("debug", "info", "warning", "warn", "error", "critical", "fatal", "notset",
                                  "trace", "verbose", "off", "none", "all")
                   for w in (base, base.upper(), base.capitalize())] + ["", " info", "info ", "10", "20"]


def start_up_values(run, parser, model_argv, reads):
    """{option string: {value: None | the error it dies with}} for each one-value option (store,
    nargs None) whose dest the start-up code reads: the entry point run with the option alone and
    each START_UP_VALUES value. Kept only where every such run read no dest of another option, so
    the outcome is the value's alone."""
    by_dest = {}
    for action in parser._actions:
        if action.option_strings:
            by_dest.setdefault(action.dest, []).append(action)
    out = {}
    for dest in sorted(set(reads) & set(by_dest)):
        for action in by_dest[dest]:
            if action_kind(action, parser) != "store" or action.nargs is not None:
                continue
            names = registered_strings(parser, action)
            long_names = [n for n in names if n.startswith("--")]
            if not long_names:
                continue
            table, alone = {}, True
            for value in START_UP_VALUES:
                answer, more = run(model_argv + [long_names[0] + "=" + value])
                if answer.get("outcome") not in ("ok", "dies") or any(d in by_dest and d != dest for d in more):
                    alone = False
                    break
                table[value] = None if answer["outcome"] == "ok" else (answer.get("error") or "dies")
            if alone:
                for name in names:
                    out[name] = table
    return dict(sorted(out.items()))
