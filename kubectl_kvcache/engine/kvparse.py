"""Replay an engine's parser on its argv, the way the released engine does it.

Two steps, both from the release's real code:
1. the engine's own preparation of the argv before argparse sees it (vLLM's FlexibleArgumentParser:
   `vllm serve --model M` moved to the front, `--config FILE` cut out, `_`->`-` in option names,
   dotted `--name.key value` turned into JSON for `--name`; SGLang: `--config FILE` cut out,
   `sglang serve` needing a literal `--model-path`);
2. CPython argparse's `_parse_known_args` (data.ARGPARSE_PYTHON) over EVERY option of that
   release's parser with its arity (parsers.json, read from the released wheels): classification of
   every token first (an ambiguous abbreviation fails here, wherever it stands), then options and
   positionals consumed alternately left to right (a missing value, or where the release checks
   `choices` an invalid value, fails at that point), required positionals, then unrecognized
   arguments. Each option's value is converted as its `type=` does, from a small vocabulary
   (TYPES) that engine-data matched to the release's real callable; what the real callable does
   beyond it ("opaque" types, the engine's own Action classes) is known only for the values it
   was asked about, else UNKNOWN naming the option;
3. the checks the entry point runs on the parsed argv before starting (vLLM's
   validate_parsed_serve_args and validate_api_server_args): replayed from the decision table
   engine-data probed through the real entry point (groups of options the checks read together,
   `_combinations`), or where the release has none, an option alone that was run alone; else
   UNKNOWN naming the options. JSON config documents are judged by the config class's schema
   read from the release (`judge_document`).
Not replayed: mutually exclusive groups, files the argv names (a `--chat-template` path: UNKNOWN;
a template in the argv or a name the release ships: engine/templates.py), and
the contents of a `--config` file (not in the Pod spec: UNKNOWN).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from kubectl_kvcache.engine.argv import Token
from kubectl_kvcache.engine.cause import Cause, of_element
from kubectl_kvcache.engine import knowledge, templates
from kubectl_kvcache.engine.releases import DTYPE_OPTION, Profile
from kubectl_kvcache.record import Record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import NoReturn

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_MODEL_OPTION = re.compile(r"^--model(=.+|$)")

OK, REJECTED, UNKNOWN = "ok", "rejected", "unknown"
INVALID_VALUE = "invalid-value"
AMBIGUOUS = "ambiguous-option"
MISSING_VALUE = "missing-value"
UNRECOGNIZED = "unrecognized-argument"
IGNORED_VALUE = "ignored-explicit-argument"
CONFIG_ERROR = "config-file"
REQUIRED = "required-argument"
EXITS = "exits-without-serving"
START_UP = "start-up-check"

# --- option value types: the vocabulary engine-data matches each real `type=` callable to -------
# Each says which strings argparse lets through (the callable returns) and which it refuses
# (ArgumentTypeError/TypeError/ValueError: "invalid ... value", or another exception: a traceback).
# These are this plugin's statements of the behaviour of the callables named in comments; engine-data
# records a name only where the real callable agrees with it on every value of the probe list.

_HRINT_VLLM = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_HRINT_VLLM_OLD = re.compile(r"(\d+(?:\.\d+)?)([kKmMgG])")
_HRINT_SGLANG = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)")
_BRACES = re.compile(r"(?s)^\s*{.*}\s*$")


def _int(v):
    int(v)


def _float(v):
    float(v)


def _json(v):
    json.loads(v)


def _hrint(pattern, binary):
    # vllm@0.16/vllm/utils/argparse_utils.py:human_readable_int (0.10: kKmMgG only), and
    # sglang@0.5.12/sglang/srt/utils/common.py:human_readable_int (SI k M G T, IEC Ki Mi Gi Ti)
    def check(v):
        v = v.strip()
        m = pattern.fullmatch(v)
        if not m:
            int(v)
            return
        number, suffix = m.groups()
        if suffix in binary and "." in number:
            raise ValueError(v)
        float(number)
    return check


def _or_auto(inner):
    # vllm@0.16/vllm/utils/argparse_utils.py:human_readable_int_or_auto
    def check(v):
        if v.strip() == "-1" or v.strip().lower() == "auto":
            return
        inner(v)
    return check


def _optional(inner):
    # vllm@0.10/vllm/engine/arg_utils.py:optional_type: "" and "None" are None
    def check(v):
        if v in ("", "None"):
            return
        inner(v)
    return check


def _dict_or_str(v):
    # vllm@0.10/vllm/engine/arg_utils.py:union_dict_and_str
    if _BRACES.match(v):
        _optional(_json)(v)


def _kvs(v):
    # vllm@0.8.5/vllm/engine/arg_utils.py:nullable_kvs: "KEY=INT,KEY=INT", keys lowered and stripped,
    # one key given twice with two values refused
    out: dict[str, int] = {}
    for item in v.split(","):
        parts = [part.lower().strip() for part in item.split("=")]
        if len(parts) != 2:
            raise ValueError(item)
        key, value = parts
        number = int(value)
        if key in out and out[key] != number:
            raise ValueError(key)
        out[key] = number


def _kvs_or_empty(v):
    # vllm@0.6.5/vllm/engine/arg_utils.py:nullable_kvs: "" is None
    if len(v):
        _kvs(v)


def _kvs_plain(v):
    # vllm@0.5.5/vllm/engine/arg_utils.py:nullable_kvs: "" is None, else KEY=INT items, a key
    # given twice taken (the last one)
    if len(v):
        for item in v.split(","):
            _key, value = item.split("=")
            int(value)


_JSON_BRACES = re.compile("^{.*}$")


def _json_or_kvs(v):
    # vllm@0.9.0/vllm/engine/arg_utils.py:parse_type(json.loads): a value that re.match("^{.*}$")
    # finds is JSON, any other one is nullable_kvs
    if _JSON_BRACES.match(v):
        json.loads(v)
    else:
        _kvs(v)


_BASE = {"str": lambda v: None, "int": _int, "float": _float, "json": _json,
         "kvs": _kvs_or_empty, "kvs-strict": _kvs, "json|kvs": _json_or_kvs, "kvs-plain": _kvs_plain,
         "hrint": _hrint(_HRINT_VLLM, "KMGT"), "hrint-kmg": _hrint(_HRINT_VLLM_OLD, "KMG"),
         "hrint-iec": _hrint(_HRINT_SGLANG, ("Ki", "Mi", "Gi", "Ti"))}
TYPES = dict(_BASE)
TYPES.update({f"auto|{k}": _or_auto(f) for k, f in _BASE.items() if k.startswith("hrint")})
TYPES.update({f"optional|{k}": _optional(f) for k, f in list(TYPES.items()) if k != "str"})
TYPES["dict-or-str"] = _dict_or_str


def type_accepts(name, value, probes=()):
    """True/False: the release's `type=` lets `value` through; None: not known (opaque, unprobed)."""
    if name.startswith("opaque:"):
        answers = name[len("opaque:"):]
        if value in probes:
            return answers[list(probes).index(value)] == "1"
        # a JSON object equal to a probed one: these callables read the value as JSON first
        # (vllm@0.10/vllm/engine/arg_utils.py:parse_dataclass: TypeAdapter(...).validate_json)
        # (only for a callable that refused every probe that is not JSON, but optional_type's None)
        try:
            loaded = json.loads(value)
        except ValueError:
            return None
        if not _json_first(answers, probes):
            return None
        for k, probe in enumerate(probes):
            if isinstance(loaded, dict) and probe.lstrip().startswith("{"):
                try:
                    if json.loads(probe) == loaded:
                        return answers[k] == "1"
                except ValueError:
                    continue
        return None
    try:
        TYPES[name](value)
        return True
    except (ValueError, TypeError, OverflowError):
        return False


def _json_first(answers, probes):
    for answer, probe in zip(answers, probes, strict=False):
        if answer == "1" and probe not in ("", "None"):   # optional_type's None
            try:
                json.loads(probe)
            except ValueError:
                return False
    return True


def classify_type(answers, probes):
    """The TYPES name that answers like the real callable on every probe, else "opaque:<answers>"."""
    for name in TYPES:
        if "".join("1" if type_accepts(name, v) else "0" for v in probes) == answers:
            return name
    return "opaque:" + answers


# --- the engines' own argparse Actions: what each does with one item ---------------------------
# A rule of this vocabulary, matched by engine-data against the real Action called with each probe
# item (tools/enginedata/fuzz_types.py ACTION_PROBES; several items are judged each on its own):
#   "items any"                 every item is taken (sglang@0.4.1 server_args.py LoRAPathAction)
#   "items braces REQ"          an item that is `{...}` once stripped must be a JSON object with the
#                               keys REQ (comma-separated); any other item is taken
#                               (sglang@0.5.23 sglang/srt/arg_groups/argparse_actions.py LoRAPathAction)
#   "items pairs SPLIT JSON"    an item with `=` and no `,` is name=path (SPLIT "first": split at the
#                               first `=`; "exact": exactly one `=`); with JSON "-" every item is;
#                               else "" is skipped and any other item must be a JSON object whose keys
#                               hold every REQ and nothing beyond REQ and OPT (JSON = "REQ/OPT")
#                               (vllm@0.33.0 vllm/entrypoints/common/cli_args.py LoRAParserAction)
#   "items bool"                an item is taken iff it is `true` or `false` in any case
#                               (vllm@0.6.5 vllm/utils.py StoreBoolean: values.lower() == "true"/"false",
#                               else ValueError)
#   "optional RULE"             "" and "None" are taken (its `type=` makes them None, which the
#                               Action skips: vllm@0.33.0 vllm/engine/arg_utils.py optional_type), else RULE
# An Action no rule replays has no entry (its values are UNKNOWN).


def action_accepts(rule, item):
    """True/False: the release's Action takes this one item; None: not known."""
    if not isinstance(rule, str):   # an added release's file is untrusted
        return None
    words = rule.split(" ")
    if words[0] == "optional":
        return True if item in ("", "None") else action_accepts(" ".join(words[1:]), item)
    if words == ["items", "any"]:
        return True
    if words == ["items", "bool"]:
        return item.lower() in ("true", "false")
    if len(words) == 3 and words[:2] == ["items", "braces"]:
        text = item.strip()
        if not (text.startswith("{") and text.endswith("}")):
            return True
        doc = _loads(text)
        return isinstance(doc, dict) and all(k in doc for k in words[2].split(","))
    if len(words) == 4 and words[:2] == ["items", "pairs"] and words[2] in ("first", "exact"):
        pair_ok = item.count("=") == 1 if words[2] == "exact" else "=" in item
        if words[3] == "-":
            return pair_ok
        if item == "":
            return True
        if "=" in item and "," not in item:
            return pair_ok
        required_text, _, optional_text = words[3].partition("/")
        required = set(filter(None, required_text.split(",")))
        allowed = required | set(filter(None, optional_text.split(",")))
        doc = _loads(item)
        return isinstance(doc, dict) and required <= set(doc) <= allowed
    return None


def _loads(text):
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


_NOT_JSON = object()


def classify_action(answers, items, multi=()):
    """The rule (above) that answers like the real Action on every probe (items one at a time,
    then the lists in `multi`; '-' where not asked or where the option's `type=` refused the
    value before the Action could run), else None."""
    single = answers[:len(items)]
    accepted = [_loads(v) for v, a in zip(items, single, strict=False) if a == "1"]
    docs = [d for d in accepted if isinstance(d, dict)]
    required = sorted(set.intersection(*[set(d) for d in docs])) if docs else []
    optional = sorted(set().union(*[set(d) for d in docs]) - set(required)) if docs else []
    candidates = ["items any", "items bool", f"items braces {','.join(required)}" if required else None]
    for split in ("first", "exact"):
        candidates.append(f"items pairs {split} -")
        if required:
            candidates.append(f"items pairs {split} {','.join(required)}/{','.join(optional)}")
    rules = [c for c in candidates if c] + [f"optional {c}" for c in candidates if c]
    for rule in rules:
        mine = ["-" if a == "-" else "1" if action_accepts(rule, v) else "0"
                for v, a in zip(items, single, strict=False)]
        mine += ["-" if a == "-" else "1" if all(action_accepts(rule, v) for v in values) else "0"
                 for values, a in zip(multi, answers[len(items):], strict=False)]
        if "".join(mine) == answers:
            return rule
    return None


class Facts(Record):
    """What one release's generated data says about its options beyond their arity."""
    __slots__ = ("kinds", "start_up", "behaviours", "probes", "rewrites", "actions", "combo_classes", "combo_rows",
                 "registries", "schemas", "start_up_values", "templates")

    def __init__(self, kinds, start_up, behaviours, probes, rewrites=None, actions=None, combo_classes=None,
                 combo_rows=None, registries=None, schemas=None, start_up_values=None, templates=None):
        self.kinds = kinds            # option -> "action [type] [file]"
        self.start_up = start_up      # (entry, option) -> "ok" | "dies: ..." | "reads"
        self.behaviours = behaviours  # names of the entry points' argv preparations it has
        self.probes = probes
        self.rewrites = rewrites or {}   # token family ("-O") -> REWRITES rule, as engine-data matched it
        self.actions = actions or {}     # option -> the rule of its engine-own Action (action_accepts)
        self.combo_classes = combo_classes or {}   # (entry, option) -> (group, dest, class kind)
        self.combo_rows = combo_rows or {}         # (entry, group, atoms) -> (outcome, dests read)
        self.registries = registries or {}         # dest -> frozenset of the parser names registered
        self.schemas = schemas or {}               # option -> its config class's schema (judge_document)
        self.start_up_values = start_up_values or {}   # (entry, option) -> {value: outcome} of it alone
        self.templates = templates      # what the release does with a --chat-template value (templates.py)


_FACTS: dict = {}


def facts(profile) -> Facts:
    key = (profile.engine, profile.version)
    if key not in _FACTS:
        from kubectl_kvcache.engine import data
        from kubectl_kvcache.engine.releases import _in_spans, _sample
        real = data.parsers()[profile.engine]
        at = _sample(profile.engine, profile.version)
        kinds = {n: k for n, rows in real.get("kinds", {}).items() for k in [_in_spans(at, rows)] if k}
        start_up = {tuple(key.split(" ", 1)): k for key, rows in real.get("start_up", {}).items()
                    for k in [_in_spans(at, rows)] if k}
        behaviours = {n for n, rows in real.get("behaviours", {}).items() if _in_spans(at, [[True] + r for r in rows])}
        rewrites = {n: r for n, rows in real.get("rewrites", {}).items() for r in [_in_spans(at, rows)] if r}
        actions = {n: r for n, rows in real.get("actions", {}).items() for r in [_in_spans(at, rows)] if r}
        classes = {tuple(k.split(" ", 1)): tuple(v.split(" ")) for k, rows in real.get("combo_classes", {}).items()
                   for v in [_in_spans(at, rows)] if v}
        combo_rows = {}
        for k, rows in real.get("combo_rows", {}).items():
            v = _in_spans(at, rows)
            if v:
                entry, group, atoms = k.split(" ", 2)
                outcome, _, read = v.rpartition("|")
                combo_rows[(entry, group, atoms)] = (outcome, frozenset(read.split(",")) - {""})
        registries = {d: frozenset(v.split(" ")) for d, rows in real.get("combo_registries", {}).items()
                      for v in [_in_spans(at, rows)] if v}
        _FACTS[key] = Facts(kinds, start_up, frozenset(behaviours), tuple(real.get("probes", ())), rewrites,
                            actions, classes, combo_rows, registries, _schemas(real.get("schemas", {}), at),
                            _start_up_values(real.get("start_up_values", {}), at),
                            templates.reading(profile.engine, profile.version))
    return _FACTS[key]


def _schemas(table, at):
    """{option: schema} at the sampled release `at` ("=<option>": the same class as that one); a
    schema that is no JSON object of the shape judge_document reads (an added release file is
    untrusted) is left out: that option's documents stay UNKNOWN."""
    from kubectl_kvcache.engine.releases import _in_spans
    texts = {n: v for n, rows in table.items() for v in [_in_spans(at, rows)] if isinstance(v, str) and v}
    out = {}
    for name, text in texts.items():
        try:
            found = json.loads(texts.get(text[1:], "null") if text.startswith("=") else text)
        except ValueError:
            continue
        if (isinstance(found, dict) and isinstance(found.get("f"), dict) and isinstance(found.get("c"), list)
                and all(isinstance(k, str) for k in found["f"].values())
                and all(isinstance(c, str) for c in found["c"])
                and isinstance(found.get("d", {}), dict) and all(v in (0, 1) for v in found.get("d", {}).values())
                and isinstance(found.get("t", {}), dict) and all(isinstance(v, str) for v in found.get("t", {}).values())
                and isinstance(found.get("ld", []), list) and all(isinstance(v, str) for v in found.get("ld", []))):
            out[name] = found
    return out

def _start_up_values(table, at):
    """{(entry, option): {value: outcome}} at the sampled release `at`; a row that is not a JSON
    object of strings (an added release file is untrusted) is left out: its values stay UNKNOWN."""
    from kubectl_kvcache.engine.releases import _in_spans
    out = {}
    for key, rows in table.items():
        text = _in_spans(at, rows)
        try:
            found = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            found = None
        if (isinstance(found, dict) and " " in key and all(isinstance(v, str) for v in found.values())
                and all(v == "ok" or v.startswith("dies: ") for v in found.values())):
            out[tuple(key.split(" ", 1))] = found
    return out


# --- Python differences -----------------------------------------------------------------------
# argparse behaviours this model relies on that differ between CPython releases, measured by
# tests/conformance/pythons.py under every CPython it obtains (engine/pythons.json, generated). The
# model replays data.ARGPARSE_PYTHON; where an argv meets a difference and the Pythons the
# engine's images may run (data.IMAGE_PYTHONS) do not all behave as that one, it answers UNKNOWN
# naming the versions, never what one plausible Python contradicts.
_OLD_NEGATIVE = _NEGATIVE_NUMBER
_NEW_NEGATIVE = re.compile(r"^-\.?\d")   # CPython 3.14 Lib/argparse.py: _negative_number_matcher
_DIFFERENCE_NAMES = {"explicit-double-dash": "an explicit `--` value",
                     "negative-number-forms": "a negative-number-like value"}


def _explicit_double_dash(text, table):
    """`--name=--`, `-name=--` (or an abbreviation of it) or `-x--` for a value-taking option `-x`."""
    if "=" in text:
        name, explicit = text.split("=", 1)
        return explicit == "--" and any(option.startswith(name) for option in table)
    return (not text.startswith("--") and text[2:] == "--" and table.get(text[:2], "0") != "0")


def _negative_number_form(text, table):
    """A token only CPython 3.14 reads as a negative number (`-1e5`, `-1_000`, `-1x`)."""
    return (bool(_NEW_NEGATIVE.match(text)) and not _OLD_NEGATIVE.match(text) and " " not in text
            and text not in table and not any(_NEW_NEGATIVE.match(option) for option in table))


_DETECTORS = {"explicit-double-dash": _explicit_double_dash, "negative-number-forms": _negative_number_form}


def _versions(versions):
    return versions[0] if len(versions) == 1 else f"{versions[0]}-{versions[-1]}"


def _answered(answer):
    verdict, _, detail = answer.partition(" ")
    return f"stores {detail}" if verdict == "ok" else f"fails ({detail})"


def differences_met(texts, table):
    """[(difference, index of the first word that meets it)] for prepared argv words, over the
    differences measured (engine/pythons.json) that have a detector here."""
    found = []
    measured = knowledge.load("pythons")["differences"]
    for key, detect in _DETECTORS.items():
        if key in measured:
            index = next((k for k, t in enumerate(texts) if t and t.startswith("-") and detect(t, table)), None)
            if index is not None:
                found.append((key, index))
    return found


def python_dependence(items, table, profile):
    """Why the answer for these prepared argv items depends on which CPython the image runs, or ''."""
    from kubectl_kvcache.engine import data
    from kubectl_kvcache.engine.releases import image_pythons

    minors = image_pythons(profile.engine, profile.version)
    pythons = knowledge.load("pythons")
    plausible = [v for v in pythons["measured"] if v.rsplit(".", 1)[0] in minors] or list(pythons["measured"])
    for key, index in differences_met([it.text for it in items], table):
        difference: dict = pythons["differences"][key]
        hit = items[index]
        groups = difference["alike"]
        mine = next(g for g in groups if any(v.rsplit(".", 1)[0] == data.ARGPARSE_PYTHON for v in g))
        touched = [g for g in groups if set(g) & set(plausible)]
        if touched == [mine]:
            continue
        behaviours = ", ".join(f"{_versions(g)} {_answered(a)}" for g, a in zip(groups, difference["answers"], strict=False))
        versions = sorted(set(v for g in touched for v in g) & set(plausible))
        shown = ", ".join(versions[:-1]) + " or " + versions[-1] if len(versions) > 1 else versions[0]
        return (f"{hit.text!r} ({hit.tok.where()}): what argparse does with {_DIFFERENCE_NAMES[key]} depends on "
                f"the Python ({behaviours}); {profile.label} images may run {shown} "
                f"(Python {' or '.join(minors)}, patch not pinned)")
    return ""


class Occurrence(Record):
    __slots__ = ("source", "index", "text", "value", "valid")

    def __init__(self, source: str, index: int, text: str, value: str | None, valid: bool):
        self.source = source
        self.index = index
        self.text = text
        self.value = value
        self.valid = valid


class Parse(Record):
    __slots__ = ("outcome", "effective", "error", "reason", "occurrences", "winner", "cause")

    def __init__(self, outcome: str, effective: str | None, error: str | None, reason: str,
                 occurrences: tuple[Occurrence, ...] = (), winner: int | None = None, cause: Cause | None = None):
        self.outcome = outcome          # ok | rejected | unknown
        self.effective = effective      # the value it runs with (ok); None when no flag is given
        self.error = error              # the error class when rejected
        self.reason = reason
        self.occurrences = occurrences
        self.winner = winner            # index into occurrences of the value that wins
        self.cause = cause              # unknown: what would decide it (engine/cause.py)


class _Stop(Exception):
    def __init__(self, parse):
        super().__init__(parse.reason)
        self.parse = parse


class _Item(Record):
    __slots__ = ("text", "tok", "unknown", "shown")
    __hash__ = None  # mutable: the engine's preparation rewrites `text`

    def __init__(self, text: str | None, tok: Token, unknown: str = "", shown: str | None = None):
        self.text = text        # None: not known from the spec (only where that cannot matter)
        self.tok = tok          # the element it came from (for messages)
        self.unknown = unknown  # why the text is not known
        self.shown = shown      # how a value built by the engine (dotted JSON) is reported


def _where(item):
    return item.where() if isinstance(item, Token) else f"{item.source}[{item.index}]"


def _fail(error, reason, occurrences=(), winner=None) -> NoReturn:
    raise _Stop(Parse(REJECTED, None, error, reason, tuple(occurrences), winner))


def _unknown(reason, cause=None, occurrences=(), winner=None):
    if cause is not None and not isinstance(cause, Cause):
        # a call written before the cause existed: _unknown(reason, occurrences[, winner])
        cause, occurrences, winner = None, cause, (occurrences if isinstance(occurrences, int) else None)
    raise _Stop(Parse(UNKNOWN, None, None, reason, tuple(occurrences), winner, cause))


# --- 1. the engine's preparation --------------------------------------------------------------

def _config(items, profile, entry):
    """Cut `--config FILE` out as the engine does; True when a config file is read."""
    texts = [it.text for it in items]
    if not profile.config_file or "--config" not in texts:
        return items, False
    if texts.count("--config") > 1:
        _fail(CONFIG_ERROR, f"more than one --config ({items[texts.index('--config')].tok.where()}): "
                            f"{profile.label} refuses that")
    index = texts.index("--config")
    if index == len(items) - 1:
        _fail(MISSING_VALUE, f"--config has no file after it ({items[index].tok.where()})")
    path = items[index + 1]
    if path.text is None:
        _unknown(f"the --config file name at {path.tok.where()} is not known from the spec ({path.unknown})",
                 of_element(path.tok.where(), path.unknown))
    suffix = path.text.rsplit(".", 1)[-1] if "." in path.text.rsplit("/", 1)[-1] else ""
    if suffix.lower() not in ("yaml", "yml") or (profile.engine == "vllm" and suffix not in ("yaml", "yml")):
        _fail(CONFIG_ERROR, f"--config {path.text}: {profile.label} reads only .yaml/.yml files "
                            f"({path.tok.where()})")
    return items[:index] + items[index + 2:], True


def _vllm_model_option(items):
    """vllm serve: the first `--model M`/`--model=M` becomes the positional model (from 0.11.1)."""
    for k, it in enumerate(items):
        if it.text is not None and _MODEL_OPTION.match(it.text):
            if it.text == "--model":
                if k + 1 >= len(items):
                    _fail(MISSING_VALUE, f"--model is the last argument ({it.tok.where()})")
                tag, rest = items[k + 1], k + 2
            else:
                tag, rest = _Item(it.text[len("--model="):], it.tok), k + 1
            return [tag] + items[:k] + items[rest:]
    return items


def _underscores(text, profile):
    if not (profile.underscores and text.startswith("--")):
        return text
    name, eq, value = text.partition("=")
    if profile.dotted_json and profile.dotted_typed:
        # vLLM >= 0.10 rewrites only between `--` and the first `.` of the name
        head, dot, tail = name[2:].partition(".")
        name = "--" + head.replace("_", "-") + dot + tail
    else:
        name = name.replace("_", "-")
    return name + eq + value


def _dotted(items, profile):
    """vLLM >= 0.9: `-x.a.b V` / `-x.a.b=V` are removed and `-x '{"a": {"b": V}}'` appended."""
    out, skip = [], set()
    merged: dict = {}
    origin: dict = {}
    for k, it in enumerate(items):
        if k in skip:
            continue
        text = it.text
        lead = "-" if profile.dotted_single_dash else "--"
        if text is None or not text.startswith(lead) or "." not in text:
            out.append(it)
            continue
        if text.startswith("--") and "." not in text.split("=", 1)[0]:
            out.append(it)
            continue
        if "=" in text:
            name, value = text.split("=", 1)
            if "." not in name:
                out.append(it)
                continue
        else:
            if k + 1 >= len(items):
                _fail(MISSING_VALUE, f"{text} is the last argument: {profile.label} needs its value "
                                     f"({it.tok.where()})")
            name, value = text, items[k + 1].text
            if not profile.dotted_typed and value is not None and value.startswith("--") and "." in value:
                # vLLM 0.9 reads the value token as a dotted token of its own too (it does not skip it)
                _unknown(f"{text} {value} ({it.tok.where()}): vLLM 0.9 reads a dotted value that is itself a "
                         f"dotted option twice, which this plugin does not replay", Cause("preprocess", text))
            if value is None:
                _unknown(f"the value of {text} ({items[k + 1].tok.where()}) is not known from the spec",
                         of_element(items[k + 1].tok.where(), items[k + 1].unknown))
            skip.add(k + 1)
        if name.endswith("+") and profile.dotted_typed:   # `.x+ a,b` appends, from vLLM 0.10
            name, value = name[:-1], json.dumps(value.split(","))
        key, *keys = name.split(".")
        try:
            parsed = json.loads(value) if profile.dotted_typed else value   # 0.9: the string as given
        except ValueError:
            parsed = value
        nested = parsed
        for sub in reversed(keys):
            nested = {sub: nested}
        _merge(merged.setdefault(key, {}), nested)
        origin.setdefault(key, it.tok)
    for key, value in merged.items():
        out.append(_Item(key, origin[key]))
        out.append(_Item(json.dumps(value), origin[key], shown='{"%s": ...}' % next(iter(value), "")))
    return out


def _merge(original, update):
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(original.get(k), dict):
            _merge(original[k], v)
        elif isinstance(v, list) and isinstance(original.get(k), list):
            original[k] += v
        else:
            original[k] = v


# --- the -O family: what vLLM's FlexibleArgumentParser.parse_args makes of `-O...` tokens -------
# A rule is a sentence of this vocabulary; engine-data runs probe argv through each release's real
# parse_args, reads what it hands to argparse, and records the rule whose replay (below) gives the
# same argv on every probe, or "opaque" (no rule agrees: such a token is UNKNOWN):
#   "none"                    no rewriting (argparse reads -O as an option, if there is one)
#   "dotted KEY DIGITS"       -O<x> and -O=<x> (x not starting with ".") become -O.KEY=<x>, and
#                             `-O <d>` (d one of DIGITS, comma-separated) -O.KEY <d>; then dotted JSON
#                             (vllm@0.10.0 vllm/utils/__init__.py, 0.11.2 vllm/utils/argparse_utils.py)
#   "option NAME DIGITS"      -O<x> and -O=<x> become `NAME <x>`, `-O <d>` `NAME <d>`
#                             (vllm@0.16.0 vllm/utils/argparse_utils.py: --optimization-level)
REWRITE_FAMILIES = ("-O",)


def rewrite_o(items, rule):
    """The items after the release's -O rewriting (`rule` as above; "opaque": UNKNOWN at an -O token)."""
    if not rule or rule == "none":
        return items
    words = rule.split(" ") if isinstance(rule, str) else []   # an added release's file is untrusted
    out = []
    for k, it in enumerate(items):
        text = it.text
        if text is None or text.startswith("--") or not text.startswith("-O"):
            out.append(it)
            continue
        if len(words) != 3 or words[0] not in ("dotted", "option"):
            _unknown(f"{text} ({it.tok.where()}): the release rewrites -O options before parsing in a way this "
                     f"plugin does not replay", Cause("preprocess", "-O"))
        kind, target, digits = words
        if text != "-O":
            if kind == "dotted" and text[2] == ".":
                out.append(it)
                continue
            rest = text[3:] if text[2] == "=" else text[2:]
            if kind == "dotted":
                out.append(_Item(f"-O.{target}={rest}", it.tok))
            else:
                out += [_Item(target, it.tok), _Item(rest, it.tok)]
            continue
        following = items[k + 1] if k + 1 < len(items) else None
        if following is not None and following.text is None:
            _unknown(f"-O ({it.tok.where()}) is rewritten when the next element is one of {digits}, and "
                     f"{following.tok.where()} is not known from the spec ({following.unknown})",
                     of_element(following.tok.where(), following.unknown))
        if following is not None and following.text in digits.split(","):
            out.append(_Item(f"-O.{target}" if kind == "dotted" else target, it.tok))
        else:
            out.append(it)
    return out


def prepared_texts(texts, profile, entry, rewrites=None):
    """The argv (strings) the release hands to argparse after its own preparation, as this model
    replays it; raises _Stop where the preparation itself decides (engine-data and the tier compare
    it with the real preparation)."""
    tokens = [Token(t, "args", k) for k, t in enumerate(texts)]
    items, _ = _prepare(tokens, profile, entry, rewrites)
    return [it.text for it in items]


def _prepare(tokens, profile, entry, rewrites=None):
    items = [_Item(t.text, t, t.reason) for t in tokens]
    known = facts(profile)
    rewrites = known.rewrites if rewrites is None else rewrites
    behaviours = known.behaviours
    if profile.engine == "sglang":
        if entry == "sglang_serve":
            # sglang@0.5.18/sglang/cli/serve.py:serve: -h/--help anywhere prints help; --model-type
            # picks a serve backend (installed packages can add backends); a first word that is not
            # an option is the model path (the "serve_positional_model" behaviour)
            hit = next((it for it in items if it.text in ("-h", "--help")), None)
            if hit is not None:
                _fail(EXITS, f"`sglang serve` prints its help for {hit.text} ({hit.tok.where()}) and exits")
            hit = next((it for it in items if it.text is not None and
                        (it.text == "--model-type" or it.text.startswith("--model-type="))), None)
            if hit is not None:
                _unknown(f"--model-type ({hit.tok.where()}) selects a serve backend, which installed packages "
                         f"can add: not replayed", Cause("preprocess", "--model-type"))
            if ("serve_positional_model" in behaviours and items and items[0].text is not None
                    and not items[0].text.startswith("-")):
                items = [_Item("--model-path", items[0].tok)] + items
            texts = [it.text or "" for it in items]
            names = ("--model-path", "--model") if profile.serve_model_alias else ("--model-path",)
            if not any((t in names and k + 1 < len(texts)) or t.startswith(tuple(n + "=" for n in names))
                       for k, t in enumerate(texts)):
                if any(it.text is None for it in items):
                    hidden = next(it for it in items if it.text is None)
                    _unknown("`sglang serve` needs a literal --model-path, and an element is not known from the spec",
                             of_element(hidden.tok.where(), hidden.unknown))
                _fail(REQUIRED, "`sglang serve` needs a literal `--model-path M` (its own check, before argparse)")
        return _config(items, profile, entry)
    # vLLM's FlexibleArgumentParser.parse_args, in its order
    if entry == "serve" and profile.serve_model_refused:
        hit = next((it for it in items if it.text == "--model"), None)
        if hit is not None:
            _fail(REQUIRED, f"{profile.label}: `vllm serve` refuses --model ({hit.tok.where()}): the model must "
                            f"be the positional argument")
    if entry == "serve" and profile.serve_model_option:
        items = _vllm_model_option(items)
    if entry == "serve" and "served_name_before_model_refused" in behaviours:
        # vllm@0.18/vllm/utils/argparse_utils.py:FlexibleArgumentParser.parse_args: after the --model
        # move, an argv whose first word is an option, with --served-model-name and no --config, dies
        # (a word not known from the spec is `--name=...` with its name known, or not an option)
        texts = [it.text if it.text is not None else it.tok.prefix for it in items]
        named = [it for it, t in zip(items, texts, strict=True) if re.match(r"^--served[-_]model[-_]name(=.+|$)", t)]
        if named and texts[0].startswith("-") and not any(re.match(r"^--config(=.+|$)", t) for t in texts):
            _fail(REQUIRED, f"{profile.label}: `vllm serve` with {(named[0].tok.text or named[0].tok.prefix).split('=')[0]} "
                            f"({named[0].tok.where()}) needs the model as the first positional argument")
        # `--served-model-name=` + a value not known: the check above applies unless it is empty
        maybe = [it for it, t in zip(items, texts, strict=True) if it.text is None and re.match(r"^--served[-_]model[-_]name=$", t)]
        if maybe and texts[0].startswith("-") and not any(re.match(r"^--config(=.*|$)", t) for t in texts):
            _unknown(f"{profile.label}: `vllm serve` with --served-model-name ({maybe[0].tok.where()}) needs the "
                     f"model as the first positional argument unless its value is empty, and the value is not "
                     f"known from the spec ({maybe[0].unknown})", of_element(maybe[0].tok.where(), maybe[0].unknown))
    items, config = _config(items, profile, entry)
    for it in items:
        if it.text is not None:
            it.text = _underscores(it.text, profile)
    if "-O" in rewrites:
        # vllm@0.33.0 vllm/utils/argparse_utils.py:FlexibleArgumentParser.parse_args: in the same pass
        # as the `_` rewriting (which only touches `--` tokens), before dotted JSON
        items = rewrite_o(items, rewrites["-O"])
    elif "-O" in profile.options_for(entry) or profile.dotted_json:
        # a release whose -O rewriting engine-data did not record (an added release's older data)
        hit = next((it for it in items if it.text is not None and it.text.startswith("-O")), None)
        if hit is not None:
            _unknown(f"{hit.text} ({hit.tok.where()}): {profile.label} rewrites -O options before parsing, "
                     f"which this plugin does not replay", Cause("preprocess", "-O"))
    if profile.dotted_json:
        items = _dotted(items, profile)
    return items, config


# --- 2. argparse ------------------------------------------------------------------------------

class _Opt(Record):
    __slots__ = ("action", "explicit", "arity")

    def __init__(self, action: str | None, explicit: str | None, arity: str = "1"):
        self.action = action      # the option string as registered (None: unrecognized)
        self.explicit = explicit  # `=value` part, or a short option's attached value
        self.arity = arity


class _Parser:
    def __init__(self, profile, entry):
        self.profile = profile
        self.table = profile.options_for(entry)

    def _tuples(self, text):
        """argparse's _get_option_tuples: every option an abbreviation could be."""
        out = []
        if text[1] == "-":
            prefix, explicit = (text.split("=", 1) + [None])[:2] if "=" in text else (text, None)
            for name in self.table:
                if name.startswith(prefix):
                    out.append(_Opt(name, explicit, self.table[name]))
        else:
            short, short_explicit = text[:2], text[2:]
            for name in self.table:
                if name == short:
                    out.append(_Opt(name, short_explicit, self.table[name]))
                elif name.startswith(text):
                    out.append(_Opt(name, None, self.table[name]))
        return out

    def classify(self, item):
        """'A' (a positional), or an _Opt; raises for an ambiguous abbreviation."""
        text = item.text
        if not text or text[0] != "-":
            return "A"
        if text in self.table:
            return _Opt(text, None, self.table[text])
        if len(text) == 1:
            return "A"
        if "=" in text:
            name, explicit = text.split("=", 1)
            if name in self.table:
                return _Opt(name, explicit, self.table[name])
        tuples = self._tuples(text)
        if len(tuples) > 1:
            _fail(AMBIGUOUS, f"ambiguous option: {text} could match {', '.join(t.action for t in tuples)} "
                             f"({item.tok.where()})")
        if len(tuples) == 1:
            return tuples[0]
        if _NEGATIVE_NUMBER.match(text):
            return "A"
        if " " in text:
            return "A"
        return _Opt(None, None)


_NARGS = {"1": "(-*A-*)", "?": "(-*A?-*)", "*": "(-*[A-]*)", "+": "(-*A[A-]*)", "...": "([-AO]*)",
          "A...": "(-*A[-AO]*)"}
_EXPECTED = {"1": "expected one argument", "?": "expected at most one argument",
             "+": "expected at least one argument"}


def _nargs_pattern(arity, optional):
    pattern = _NARGS.get(arity) or ("(-*%s-*)" % "-*".join("A" * int(arity)) if arity != "0" else "(-*-*)")
    if optional:
        pattern = pattern.replace("-*", "").replace("-", "")
    return pattern


def parse(tokens: Sequence[Token], profile: Profile, platform_may_extend=False, positional_slots=None,
          entry=None) -> Parse:
    """The outcome for the tokens after the entrypoint. `entry` names the entry point (data.ENTRY_*)
    whose parser reads them; without it the tokens are a fragment (as checks.py probes them): the
    positionals that parser takes are not known (a positional it might refuse makes the answer
    UNKNOWN) and required options are not asked for. `positional_slots` is accepted for
    compatibility and no longer used: the slots come from the release's real parser."""
    try:
        return _parse(list(tokens), profile, platform_may_extend, entry)
    except _Stop as stop:
        return stop.parse


# Options the engine's preparation reads by their value before argparse (_prepare: vLLM moves
# `--model=M` to the positional, --config cuts a file in, sglang serve wants a literal --model-path,
# --model-type picks a backend; --served-model-name's check is replayed in _prepare): an unknown value
# there is never harmless.
_PREPARED = frozenset({"--model", "--model-path", "--config", "--model-type"})


def _unsafe_unknown(tok, parser):
    """Why an element whose value is unknown could change the result, or '' if it cannot.

    It cannot when argparse classifies it the same whatever its value: one word whose known
    start is not '-' (or whose source never starts with '-': Token.plain), read as a positional
    or an option's value; or `--name=...` for an option that takes any string as its value (an
    explicit value is taken verbatim, for nargs 1, ?, * and + alike), that no check reads."""
    prefix = tok.prefix
    if (prefix and not prefix.startswith("-")) or (not prefix and getattr(tok, "plain", False)):
        return ""
    if prefix.startswith("--") and "=" in prefix:
        name = prefix.split("=", 1)[0]
        cls = parser.classify(_Item(name, tok)) if name in parser.table else None
        known = facts(parser.profile)
        action = getattr(cls, "action", None)
        plain = not known.kinds.get(action or "") and not any(option == action for _, option in known.start_up)
        if (isinstance(cls, _Opt) and action and action != DTYPE_OPTION and cls.arity in ("1", "?", "*", "+")
                and plain and action not in dict(parser.profile.choices) and not {name, action} & _PREPARED):
            return ""
    return (f"{tok.where()} is not known from the spec ({tok.reason}), and its value decides how the parser "
            f"reads it (one starting with '-' is an option)")


def _parse(tokens, profile, platform_may_extend, entry):
    run = _runner(tokens, profile, entry)
    return run if isinstance(run, Parse) else run[0].run(run[1], platform_may_extend)


def option_values(tokens: Sequence[Token], profile: Profile, entry=None) -> dict[str, list] | None:
    """Each option's values as argparse's walk leaves them (the last occurrence wins, `--name=`,
    abbreviations as the release's parser reads them), keyed by the option's own name; None when
    the replay does not walk the whole argv (an element not known from the spec, a refusal, a
    --config file that may set any option). The argv replay's answer to "which value is used"."""
    try:
        run = _runner(list(tokens), profile, entry)
        if isinstance(run, Parse) or run[1]:
            return None
        run[0].run(run[1], False)
    except _Stop:
        return None
    return run[0].values


def _runner(tokens, profile, entry):
    """The walk ready to run, with the --config file it cuts in; or the Parse that ends it first."""
    parser = _Parser(profile, entry)
    for tok in tokens:
        if tok.text is None:
            why = _unsafe_unknown(tok, parser)
            if why:
                return Parse(UNKNOWN, None, None, why, cause=of_element(tok.where(), tok.reason))
    items, config_file = _prepare(tokens, profile, entry)
    why = python_dependence(items, parser.table, profile)
    if why:
        return Parse(UNKNOWN, None, None, why, cause=Cause("python", f"the CPython of the {profile.label} image"))
    for it in items:
        if it.text is None and it.tok.prefix.startswith("--"):
            it.text = it.tok.prefix.split("=", 1)[0] + "=\0unknown"

    # classification, as argparse does it first for every token
    pattern, opts = [], {}
    for k, it in enumerate(items):
        if it.text == "--":
            pattern.append("-")
            pattern.extend("A" for _ in items[k + 1:])
            break
        cls = "A" if it.text is None else parser.classify(it)
        if cls == "A":
            pattern.append("A")
        else:
            opts[k] = cls
            pattern.append("O")
    return _Run(profile, entry, items, "".join(pattern), opts), config_file


class _Run:
    """One replay of argparse's parse over classified items: the walk (consume_optional,
    consume_positionals, as argparse's _parse_known_args), the --kv-cache-dtype occurrences it
    meets, and `notes`: what may still turn an OK into UNKNOWN (a stray positional, a value not
    known from the spec, a choice or a file the image decides)."""

    def __init__(self, profile, entry, items, pattern, opts):
        self.profile, self.entry = profile, entry
        self.items, self.pattern, self.opts = items, pattern, opts
        positional_arities = profile.positionals(entry) if entry else None
        self.positionals = list(positional_arities) if positional_arities is not None else None
        self.occurrences: list[Occurrence] = []
        self.extras: list[_Item] = []
        self.notes: dict = {"stray": None}
        self.seen = set()
        self.values = {}
        self.choices = dict(profile.choices)
        self.fixed_choices = profile.fixed_choices
        self.known = facts(profile)

    def take_dtype(self, item, value, value_item=None):
        known = value is not None and "\0" not in value
        valid = known and value in self.profile.accepted
        shown = value_item.shown if value_item is not None and value_item.shown else value
        self.occurrences.append(Occurrence(item.tok.source, item.tok.index, item.tok.text or item.text,
                                           shown if known else None, valid))
        if not known:
            source = value_item.tok if value_item is not None else item.tok
            why = source.reason or item.tok.reason
            self.notes["unknown_value"] = (f"the value of {DTYPE_OPTION} at {item.tok.where()}, {source.where()}, "
                                           f"is not known from the spec ({why})")
            self.notes["unknown_value_cause"] = of_element(source.where(), why)
            if not self.profile.final_value_only:
                _unknown(self.notes["unknown_value"], self.notes["unknown_value_cause"], self.occurrences,
                         len(self.occurrences) - 1)
            return
        if not valid and not self.profile.final_value_only:
            _fail(INVALID_VALUE, _invalid(shown, self.profile, item.tok), self.occurrences,
                  len(self.occurrences) - 1)

    def consume_optional(self, start):
        opt = self.opts[start]
        item = self.items[start]
        if opt.action is None:
            self.extras.append(item)
            return start + 1
        arity = opt.arity
        if opt.explicit is not None:
            if arity == "0" and not opt.action.startswith("--") and opt.explicit != "":
                # single-dash flags run together (-xyz): not in these engines' argv; not modelled
                _unknown(f"{item.text} ({item.tok.where()}) combines short options, which this plugin does not replay",
                         Cause("preprocess", item.text))
            if arity.isdigit() and int(arity) > 1:
                _fail(MISSING_VALUE, f"argument {opt.action}: expected {arity} arguments ({item.tok.where()})",
                      self.occurrences)
            if arity != "0":
                values, stop = [opt.explicit], start + 1
            else:
                _fail(IGNORED_VALUE, f"argument {opt.action}: ignored explicit argument {opt.explicit!r} "
                                     f"({item.tok.where()})", self.occurrences)
        else:
            rest = self.pattern[start + 1:]
            m = re.match(_nargs_pattern(arity, True), rest)
            if not m:
                expected = _EXPECTED.get(arity) or f"expected {arity} arguments"
                _fail(MISSING_VALUE, f"argument {opt.action}: {expected} ({item.tok.where()})", self.occurrences)
            count = len(m.group(1))
            values, stop = [it.text for it in self.items[start + 1:start + 1 + count]], start + 1 + count
        self.seen.add(opt.action)
        self.values[opt.action] = values
        value_item = self.items[start + 1] if opt.explicit is None and stop > start + 1 else None
        if opt.action != DTYPE_OPTION:
            _replay_value(opt.action, values, item, self.known, self.notes, self.occurrences,
                          value_item.tok if value_item is not None else item.tok)
        if opt.action == DTYPE_OPTION:
            self.take_dtype(item, values[0] if values else None, value_item)
        elif opt.action in self.choices:
            for value in values:
                if value is None or "\0" in value:
                    # only reached through an element _unsafe_unknown lets through: a plain word
                    value_tok = value_item.tok if value_item is not None else item.tok
                    self.notes.setdefault("choice", f"the value of {opt.action} ({value_tok.where()}) is not "
                                                    f"known from the spec ({value_tok.reason}), and "
                                                    f"{self.profile.label} checks it against its choices")
                    self.notes.setdefault("choice_cause", of_element(value_tok.where(), value_tok.reason))
                    continue
                if value in ("", "None"):
                    # vLLM's optional_type turns these into None before the choices check, and the
                    # recorded (string) choices cannot say whether None itself is among them
                    self.notes.setdefault("choice", f"{item.tok.where()}: {opt.action} {value!r} may be read as "
                                                    f"None, which the choices {self.profile.label} had here may "
                                                    f"not hold")
                    self.notes.setdefault("choice_cause", Cause("choices", opt.action))
                elif value not in self.choices[opt.action]:
                    if opt.action.startswith("--kv") or opt.action in self.fixed_choices:
                        # the --kv options' choices, and those read from a parser registry that
                        # only the release's own modules fill before the parse or given as
                        # constants in the code that builds the parser (fixed_choices), are fixed
                        _fail(INVALID_VALUE, f"argument {opt.action}: invalid choice: {value!r} "
                                             f"({item.tok.where()})", self.occurrences)
                    # other options' choices can depend on what the image has installed (plugins
                    # the release loads before it builds its parser)
                    self.notes.setdefault("choice", f"{item.tok.where()}: {opt.action} {value!r} is outside the "
                                                    f"choices {self.profile.label} had where they were read (they "
                                                    f"can depend on what the image installs: plugins the release "
                                                    f"loads before it parses can add to them)")
                    self.notes.setdefault("choice_cause", Cause("choices", opt.action))
        return stop

    def consume_positionals(self, start):
        if self.positionals is None:
            # the parser's positionals are not known: a positional here may be refused
            if start < len(self.items) and self.pattern[start] == "A" and self.notes["stray"] is None:
                self.notes["stray"] = self.items[start]
            n = 0
            while start + n < len(self.pattern) and self.pattern[start + n] == "A":
                n += 1
            return start + n
        selected = self.pattern[start:]
        counts = []
        for i in range(len(self.positionals), 0, -1):
            regex = "".join(_nargs_pattern(a, False) for a in self.positionals[:i])
            m = re.match(regex, selected)
            if m:
                counts = [len(g) for g in m.groups()]
                break
        for count in counts:
            start += count
        del self.positionals[:len(counts)]
        return start

    def run(self, config_file, platform_may_extend):
        indices = sorted(self.opts)
        max_index = indices[-1] if indices else -1
        start = 0
        while start <= max_index:
            nxt = min(i for i in indices if i >= start)
            if start != nxt:
                end = self.consume_positionals(start)
                if end > start:
                    start = end
                    continue
                start = end
            if start not in self.opts:
                self.extras.extend(self.items[start:nxt])
                start = nxt
            start = self.consume_optional(start)
        stop = self.consume_positionals(start)
        self.extras.extend(self.items[stop:])

        if self.positionals:
            required = [a for a in self.positionals if a in ("1", "+") or a.isdigit()]
            if required:
                _fail(REQUIRED, "the following arguments are required: the model (a positional)",
                      self.occurrences)
        for names in (self.profile.required_options if self.entry else ()):   # a fragment is not a whole argv
            if not self.seen & set(names.split("/")) and not config_file:
                _fail(REQUIRED, f"the following arguments are required: {names}", self.occurrences)
        if self.extras:
            shown = " ".join(it.text if it.text is not None and "\0" not in it.text else "..."
                             for it in self.extras[:4])
            shown += " ..." if len(self.extras) > 4 else ""
            _fail(UNRECOGNIZED, f"unrecognized arguments: {shown} ({self.extras[0].tok.where()})",
                  self.occurrences)
        uncertain = uncertain_cause = None
        if self.entry:
            try:
                _start_up(self.seen, self.entry, self.known, self.occurrences, self.values)
            except _Stop as stop:
                if stop.parse.outcome == REJECTED and not config_file:
                    raise
                uncertain = stop.parse.reason if stop.parse.outcome == UNKNOWN else (
                    stop.parse.reason + ", unless the --config file changes that")
                uncertain_cause = stop.parse.cause if stop.parse.outcome == UNKNOWN else Cause("config-file", "--config")
        result = _conclude(tuple(self.occurrences), config_file, self.profile, platform_may_extend,
                           self.notes.get("unknown_value"), self.notes.get("unknown_value_cause"))
        for why, cause in ((uncertain, uncertain and uncertain_cause),
                           (self.notes.get("file"), self.notes.get("file_cause"))):
            if result.outcome == OK and why:
                return Parse(UNKNOWN, None, None, why, result.occurrences, result.winner, cause)
        if result.outcome == OK and self.notes.get("choice"):
            return Parse(UNKNOWN, None, None, self.notes["choice"], result.occurrences, result.winner,
                         self.notes["choice_cause"])
        if result.outcome == OK and self.notes["stray"] is not None:
            stray = self.notes["stray"]
            return Parse(UNKNOWN, None, None,
                         f"{stray.tok.where()} ({stray.text!r}) is a positional argument, which this entry point "
                         f"may reject", result.occurrences, result.winner, Cause("positional", stray.tok.where()))
        return result


def _replay_value(name, values, item, known, state, occurrences, value_tok=None):
    """What the option's action and `type=` do with its values, at the token, as argparse runs them."""
    kind, *rest = (known.kinds.get(name) or "store str").split(" ")
    where = item.tok.where()
    if kind in ("help", "version"):
        _fail(EXITS, f"{name} ({where}) prints {'the help' if kind == 'help' else 'the version'} and exits: the "
                     f"engine does not start", occurrences)
    if kind == "fails":
        _fail(START_UP, f"{name} ({where}) is refused by the release's own parser action (an option it no "
                        f"longer supports)", occurrences)
    if kind == "custom":
        # the Action takes the values one item at a time, and any item it refuses ends the engine
        rule = known.actions.get(name)
        answers = [None if v is None or "\0" in v else action_accepts(rule, v)
                   for v in values] if rule else [None]
        refused = next((v for v, ok in zip(values, answers, strict=False) if ok is False), None)
        if rule and refused is not None:
            _fail(INVALID_VALUE, f"argument {name}: {refused!r} ({where}) is refused by the release's own "
                                 f"argparse Action", occurrences)
        if None in answers:
            _unknown(f"{name} ({where}) runs the release's own argparse Action, which this plugin does not "
                     f"replay" + (" for this value" if rule else ""), Cause("action", name), occurrences)
    inline = any(o == name and c[2] == "inline" for (_, o), c in known.combo_classes.items()) and all(
        v is not None and any(ch in v for ch in INLINE_CHARS) for v in values)
    if name == "--chat-template" and known.templates is not None:
        # a template in the argv or a name the release ships needs no file (templates.json)
        inline = all(templates.needs_no_file(known.templates, v) for v in values)
    if "file" in rest and name != "--config" and not inline:   # --config FILE: see _config; a template inline
        state.setdefault("file", templates.file_reason(known.templates, f"{name} {values[-1]!r} ({where})")
                         if name == "--chat-template" and known.templates is not None and values else
                         f"{name} ({where}) names a file in the image, which the engine reads at "
                         f"start-up (not in the Pod spec)")
        state.setdefault("file_cause", Cause("file", name))
    type_name = rest[0] if rest and rest[0] != "file" else "str"
    if type_name == "str":
        return
    for value in values:
        if value == "--":
            # `--opt=--`: CPython 3.10-3.12 drop the `--` (nothing is converted), later ones do not
            # (see PYTHON_DIFFERENCES)
            _unknown(f"{name}=-- ({where}): what argparse does with a `--` value differs between CPython "
                     f"releases", Cause("python", name + "=--"), occurrences)
        if value is None or "\0" in value:
            _unknown(f"the value of {name} ({where}) is not known from the spec, and the release converts it "
                     f"({type_name.split(':')[0]})", of_element((value_tok or item.tok).where(),
                                                               (value_tok or item.tok).reason), occurrences)
        ok = type_accepts(type_name, value, known.probes)
        why: list[str] = []
        said: list[str] = []
        if ok is None and name in known.schemas:
            ok = judge_document(known.schemas[name], value, why, said)
        if ok is None:
            _unknown(f"{name} {value!r} ({where}): the release checks this value with its own code ("
                     + ("its config class: " + "; ".join(why[:2]) if why else "for example a pydantic config")
                     + "), which this plugin does not replay", Cause("value-check", name), occurrences)
        if not ok:
            # an "opaque:" type is named by its probe answers, no name a user reads: the class says why
            label = type_name.split('|')[-1]
            label = "" if label.startswith("opaque:") else label + " "
            _fail(INVALID_VALUE, f"argument {name}: invalid {label}value: {value!r} ({where})"
                  + (f": {said[0]}" if said else ""), occurrences)


def _start_up(seen, entry, known, occurrences, values=None):
    """The entry point's checks after the parse: '' when none applies, else raises."""
    read = sorted(name for name in seen if (entry, name) in known.start_up)
    if not read:
        return
    if any(e == entry for e, _ in known.combo_classes):
        _combinations(read, entry, known, occurrences, values or {})
        return
    if len(read) == 1 and known.start_up[(entry, read[0])] == "reads" and (entry, read[0]) in known.start_up_values:
        given = (values or {}).get(read[0])
        probed = known.start_up_values[(entry, read[0])]
        if isinstance(given, list) and len(given) == 1 and isinstance(given[0], str) and given[0] in probed:
            # the release's start-up code run with this option alone and this very value (engine-data)
            outcome = probed[given[0]]
            if outcome.startswith("dies"):
                _fail(START_UP, f"{read[0]} {given[0]!r}: the start-up check refuses it: {outcome[len('dies: '):]}",
                      occurrences)
            return
    if len(read) == 1 and known.start_up[(entry, read[0])] != "reads":
        outcome = known.start_up[(entry, read[0])]
        if outcome.startswith("dies"):
            _fail(START_UP, f"{read[0]}: the start-up check refuses it: {outcome[len('dies: '):]}", occurrences)
        return
    _unknown(f"the checks the release runs after parsing read {', '.join(read)}, in a combination this plugin "
             f"does not replay", Cause("start-up", ", ".join(read)), occurrences)


# --- JSON config documents ----------------------------------------------------------------------
# vLLM's config options validate their document with the config class (vllm@0.33/vllm/engine/
# arg_utils.py:_compute_kwargs parse_dataclass: pydantic TypeAdapter(cls).validate_json, the
# class's __post_init__ after it; optional_type around it: "" and "None" are None). engine-data
# reads each class's fields (tools/enginedata/schema_probe.py) and keeps a field's type only where
# this replay agreed with the real callable on every generated document. Per field, what pydantic
# does with a JSON value: definite only where its lax mode leaves no doubt (a JSON string for an
# int field, which lax mode may coerce, is not judged).

# A string field the class's checks only test against None (or for its truth): every string
# (every non-empty one) is this one for them, the value the probed documents hold in its place
# (tools/enginedata/schema_probe.py ANY_STRING; issue 52: KVTransferConfig's kv_connector and
# engine_id, a connector the release does not register included: it is looked up when the engine
# builds it, not when the document is parsed).
ANY_STRING = "zz_any_string"
# A plain decimal string, what pydantic's lax mode reads as that int (`"kv_port": "30000"`), judged
# so only for a field ("ld") that took every such string it was probed with.
DIGITS = re.compile(r"0|[1-9][0-9]{0,17}")


# A number field with a lower bound (pydantic's `Field(gt=0)`, read by schema_probe.bounded)
_BOUNDED = re.compile(r"(int|float)(>=|>)(-?[0-9]+)")


def _field_accepts(kind, value):
    if kind.startswith("?"):
        if value is None:
            return True
        kind = kind[1:]
    bound = _BOUNDED.fullmatch(kind)
    if bound:
        ok = _field_accepts(bound[1], value)
        if ok is not True:
            return ok   # the wrong type, or a lax value: not judged by the bound
        return value > int(bound[3]) if bound[2] == ">" else value >= int(bound[3])
    if kind == "any":
        return None
    if kind == "free":
        return True   # the release took every value it was probed with (engine-data: schema_data)
    if kind == "obj":
        return None if isinstance(value, dict) else False   # a nested config: judged where probed
    if kind.startswith("list:"):
        # a JSON array only (pydantic's JSON mode), each item judged as a field of that type
        if not isinstance(value, list):
            return False
        answers = [_field_accepts(kind[5:], item) for item in value]
        return False if False in answers else None if None in answers else True
    if value is None or isinstance(value, (list, dict)) and kind != "dict":
        return False
    if kind == "dict":
        return True if isinstance(value, dict) else False
    if kind == "bool":
        return True if isinstance(value, bool) else None if isinstance(value, (int, str)) else False
    if kind == "int":
        if isinstance(value, bool) or isinstance(value, str):
            return None
        if isinstance(value, int):
            return True
        return False if value != int(value) else None
    if kind == "float":
        if isinstance(value, bool) or isinstance(value, str):
            return None
        return True
    if kind == "str":
        return isinstance(value, str)
    if kind.startswith("lit:"):
        return isinstance(value, str) and value in kind[4:].split("|")
    return None


def _no_constant(name):
    raise ValueError(name)   # NaN, Infinity: what pydantic's own JSON parser does is not replayed


def _unique_keys(pairs):
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError("a key twice")   # which one pydantic keeps is not replayed
    return dict(pairs)


def _has_literal(value):
    """A JSON true, false or null anywhere in a loaded document."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, dict):
        return any(_has_literal(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_literal(v) for v in value)
    return False


def judge_document(schema, value, why=None, said=None):
    """True/False: the release's config class accepts/refuses the document; None: not known (and
    `why`, a list, gets what left it open; `said`, a list, what refused it where that is known)."""
    why = [] if why is None else why
    docs = schema.get("d", {})
    if value in docs:
        return docs[value] == 1
    if schema.get("o") and value in ("", "None"):
        return True
    try:
        doc = json.loads(value, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except ValueError:
        why.append("a document this plugin does not read as JSON")
        return None
    if not isinstance(doc, dict):
        why.append("a value that is no JSON object")
        return None
    if schema.get("p"):
        # read with ast.literal_eval (vLLM 0.6.5-0.8.5's CompilationConfig.from_cli): JSON's true,
        # false and null are no Python literals; a backslash escape may read otherwise
        if _has_literal(doc):
            return False
        if "\\" in value:
            why.append("a backslash escape, which ast.literal_eval may read otherwise than JSON")
            return None
    fields, coupled = schema["f"], set(schema["c"])
    ignoring = schema.get("ni") if isinstance(schema.get("ni"), dict) else {}
    refusing = schema.get("n") if isinstance(schema.get("n"), dict) else {}
    for key, keep in ignoring.items():
        # a nested config that drops the keys it does not have (engine-data: schema_data)
        if isinstance(doc.get(key), dict) and isinstance(keep, list) and fields.get(key) == "obj":
            doc[key] = {k: v for k, v in doc[key].items() if k in keep}
    verdict: bool | None = True
    for key, item in doc.items():
        if key not in fields:
            if schema.get("x"):
                if said is not None:
                    said.append(f"key {key!r} is no field of the config class, which refuses other keys")
                return False   # extra="forbid": a field error whatever else the document holds
            why.append(f"key {key!r}, no field of the config class (which keeps other keys)")
            verdict = None
            continue
        ok = _field_accepts(fields[key], item)
        if isinstance(item, dict) and isinstance(refusing.get(key), list) and any(
                k not in refusing[key] for k in item):
            return False   # a nested config refuses a key it does not have (pydantic, extra="forbid")
        if key in coupled and ok is not False:
            continue   # judged with the other coupled fields below
        if ok is None and isinstance(item, str) and DIGITS.fullmatch(item) and key in (schema.get("ld") or ()):
            ok = True   # a plain decimal string for an int field that took every one probed
        if ok is None:
            # a field no check reads with others, given a value the replay leaves open: the real
            # answer for it alone where engine-data probed it (a nested config's field, a lax value)
            alone = docs.get(json.dumps({key: item}, sort_keys=True))
            ok = None if alone is None else alone == 1
        if ok is False:
            return False       # a field's own validation fails whatever else the document holds
        if ok is None:
            why.append(f"field {key!r}: a value whose validation (a nested config, pydantic's lax mode) "
                       f"was not probed")
            verdict = None
    if verdict is None:
        return None
    part = {k: v for k, v in doc.items() if k in coupled}
    if not part:
        return True
    found = docs.get(json.dumps(part, sort_keys=True))
    tested = schema.get("t") if isinstance(schema.get("t"), dict) else {}
    if found is None and tested:
        # a string the checks only test against None (or for truth) stands for every one
        stand_in = {k: ANY_STRING if isinstance(v, str) and (v or tested.get(k) == "null") and
                    tested.get(k) in ("null", "truth") else v for k, v in part.items()}
        found = docs.get(json.dumps(stand_in, sort_keys=True))
    if found is None:
        why.append(f"{', '.join(sorted(part))}: read together by the class's own checks "
                   f"(__post_init__), with values they were not probed with")
    return None if found is None else found == 1


# What a start-up check may do with a value, as a few classes (engine-data probed one value of each
# through the real entry point; tools/enginedata/startup_probe.py): "registry": a parser name, ""
# ("empty"), one the release registers ("registered") or another ("other"); "inline": a
# --chat-template given as the template itself (vLLM's validate_chat_template and
# load_chat_template take a value holding `{`, `}` or a newline as the template, not a file);
# "int": the number, one of a few small ones.
COMBO_INTS = ("-1", "0", "1", "2", "4", "8")
INLINE_CHARS = "{}\n"


def combo_class(kind, dest, value, known):
    """The class of an option's value, or None: not one the checks were probed with."""
    if kind == "flag":
        return ""
    if value is None or "\0" in value:
        return None
    if kind == "registry":
        if value == "":
            return "empty"
        return "registered" if value in known.registries.get(dest, ()) else "other"
    if kind == "inline":
        if known.templates is not None:   # a template in the argv, or a name the release ships
            return "inline" if templates.needs_no_file(known.templates, value) else None
        return "inline" if any(c in value for c in INLINE_CHARS) else None
    if kind == "int":
        try:
            number = str(int(value))
        except ValueError:
            return None
        return number if number in COMBO_INTS else None
    return None


def _combinations(read, entry, known, occurrences, values):
    """The checks on the options they read, per group of dests read together (engine-data's
    decision table): in each group, from the empty argv, add the options whose dests the last
    probed run read, until the run reads none that is given; that run's outcome is the group's.
    An option whose dest no run of the walk reads cannot change the outcome: its value is not
    looked at (`-dp 3` where only --data-parallel-multi-port-external-lb makes the checks read it)."""
    given: dict = {}
    for name in read:
        found = known.combo_classes.get((entry, name))
        if found is None:
            _unknown(f"the checks the release runs after parsing read {name}, with a value or in a way this "
                     f"plugin does not replay", Cause("start-up", name), occurrences)
        group, dest, kind = found[:3]
        canonical = found[3] if len(found) > 3 else name   # a short alias stands for its long name
        given.setdefault(group, {}).setdefault(dest, []).append((name, canonical, kind))

    def atom(dest, options):
        if len(options) > 1:
            _unknown(f"{options[0][0]} and {options[1][0]} set the same setting, which the start-up checks read: "
                     f"the last one given wins, which this plugin does not replay", Cause("start-up", options[0][0]), occurrences)
        name, canonical, kind = options[0]
        value = (values.get(name) or [None])[-1]
        cls = combo_class(kind, dest, value, known)
        if cls is None:
            shown = f"{name} {value!r}" if value is not None else name
            if kind == "inline":
                _unknown(templates.file_reason(known.templates, shown), Cause("start-up", name), occurrences)
            _unknown(f"the checks the release runs after parsing read {shown}: a value the release's start-up "
                     f"checks were not probed with", Cause("start-up", name), occurrences)
        return canonical if kind == "flag" else f"{canonical}={cls}"

    for group in sorted(given):
        chosen: dict = {}
        while True:
            key = " ".join(sorted(chosen.values())) or "-"
            row = known.combo_rows.get((entry, group, key))
            if row is None:
                _unknown(f"the checks the release runs after parsing read {key} together, a combination its "
                         f"real entry point was not probed with", Cause("start-up", key), occurrences)
            outcome, dests = row
            new = {d: atom(d, opts) for d, opts in given[group].items() if d in dests and d not in chosen}
            if not new:
                break
            chosen.update(new)
        if outcome.startswith("dies"):
            shown = " ".join(sorted(chosen.values()))
            _fail(START_UP, f"{shown}: the start-up check refuses it: {outcome[len('dies: '):]}", occurrences)


def _conclude(occurrences, config_file, profile, platform_may_extend, unknown_value=None, unknown_cause=None):
    """The outcome once every token is consumed without an error."""
    if occurrences:
        final = occurrences[-1]
        winner = len(occurrences) - 1
        if final.value is None:
            return Parse(UNKNOWN, None, None, unknown_value or
                         f"the value of {DTYPE_OPTION} at {final.source}[{final.index}] is not known from the spec",
                         occurrences, winner, unknown_cause or Cause("element", f"{final.source}[{final.index}]"))
        if not final.valid:
            if platform_may_extend and profile.platform_values:
                return Parse(UNKNOWN, None, None,
                             f"{final.value!r} is not a {profile.label} value, but a platform "
                             f"plugin (e.g. vLLM-Ascend) may register it", occurrences, winner,
                             Cause("platform", final.value))
            return Parse(REJECTED, None, INVALID_VALUE, _invalid(final.value, profile, final), occurrences, winner)
        if config_file:
            return Parse(UNKNOWN, None, None,
                         f"--config FILE is read before the command line and {profile.label} "
                         f"checks every value in it, so that file (not in the spec: it may be missing, empty or "
                         f"hold a value the engine refuses) could still be fatal; the command line says "
                         f"{final.value!r}", occurrences, winner, Cause("config-file", "--config"))
        return Parse(OK, final.value, None, _winning(final, len(occurrences)), occurrences, winner)
    if config_file:
        return Parse(UNKNOWN, None, None,
                     "no --kv-cache-dtype on the command line, and --config FILE may set it (the file is not "
                     "in the Pod spec)", cause=Cause("config-file", "--config"))
    return Parse(OK, None, None, "no --kv-cache-dtype: the engine uses its default (auto)")


def _invalid(value, profile, item):
    return (f"argument {DTYPE_OPTION}: invalid choice: {value!r} for {profile.label} ({_where(item)})")


def _winning(final, count):
    shown = final.text if "=" in final.text else f"{final.text} {final.value}"
    earlier = f", over {count - 1} earlier occurrence{'s' if count > 2 else ''}" if count > 1 else ""
    return f"`{shown}` at {final.source}[{final.index}] wins{earlier}"
