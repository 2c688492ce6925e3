"""Replay an engine's parser on its argv, the way the released engine does it.

Two steps, both from the release's real code:
1. the engine's own preparation of the argv before argparse sees it (vLLM's FlexibleArgumentParser:
   `vllm serve --model M` moved to the front, `--config FILE` cut out, `_`->`-` in option names,
   dotted `--name.key value` turned into JSON for `--name`; SGLang: `--config FILE` cut out,
   `sglang serve` needing a literal `--model-path`);
2. CPython argparse's `_parse_known_args` (data.ARGPARSE_PYTHON) over EVERY option of that
   release's parser with its arity (parsers.py, read from the released wheels): classification of
   every token first (an ambiguous abbreviation fails here, wherever it stands), then options and
   positionals consumed alternately left to right (a missing value, or where the release checks
   `choices` an invalid value, fails at that point), required positionals, then unrecognized
   arguments. Each option's value is converted as its `type=` does, from a small vocabulary
   (TYPES) that engine-data matched to the release's real callable; what the real callable does
   beyond it ("opaque" types, the engine's own Action classes) is known only for the values it
   was asked about, else UNKNOWN naming the option;
3. the checks the entry point runs on the parsed argv before starting (vLLM's
   validate_parsed_serve_args): an option they read is replayed when it is alone and was run
   alone through the real entry point, else UNKNOWN naming it.
Not replayed: mutually exclusive groups, files the argv names (`--chat-template`: UNKNOWN), and
the contents of a `--config` file (not in the Pod spec: UNKNOWN).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from kubectl_kvcache.engine.argv import Token
from kubectl_kvcache.engine.pythons import MEASURED, PYTHON_DIFFERENCES
from kubectl_kvcache.engine.releases import DTYPE_OPTION, Profile
from kubectl_kvcache.record import Record

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


_BASE = {"str": lambda v: None, "int": _int, "float": _float, "json": _json,
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
    for answer, probe in zip(answers, probes):
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


class Facts(Record):
    """What one release's generated data says about its options beyond their arity."""
    __slots__ = ("kinds", "start_up", "behaviours", "probes")

    def __init__(self, kinds, start_up, behaviours, probes):
        self.kinds = kinds            # option -> "action [type] [file]"
        self.start_up = start_up      # (entry, option) -> "ok" | "dies: ..." | "reads"
        self.behaviours = behaviours  # names of the entry points' argv preparations it has
        self.probes = probes


_FACTS = {}


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
        _FACTS[key] = Facts(kinds, start_up, frozenset(behaviours), tuple(real.get("probes", ())))
    return _FACTS[key]

# --- Python differences -----------------------------------------------------------------------
# argparse behaviours this model relies on that differ between CPython releases, measured by
# tests/conformance/pythons.py under every CPython it obtains (engine/pythons.py, generated). The
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
    differences measured (engine/pythons.py) that have a detector here."""
    found = []
    for key, detect in _DETECTORS.items():
        if key in PYTHON_DIFFERENCES:
            index = next((k for k, t in enumerate(texts) if t and t.startswith("-") and detect(t, table)), None)
            if index is not None:
                found.append((key, index))
    return found


def python_dependence(items, table, profile):
    """Why the answer for these prepared argv items depends on which CPython the image runs, or ''."""
    from kubectl_kvcache.engine import data
    from kubectl_kvcache.engine.releases import image_pythons

    minors = image_pythons(profile.engine, profile.version)
    plausible = [v for v in MEASURED if v.rsplit(".", 1)[0] in minors] or list(MEASURED)
    for key, index in differences_met([it.text for it in items], table):
        difference, hit = PYTHON_DIFFERENCES[key], items[index]
        groups = difference["alike"]
        mine = next(g for g in groups if any(v.rsplit(".", 1)[0] == data.ARGPARSE_PYTHON for v in g))
        touched = [g for g in groups if set(g) & set(plausible)]
        if touched == [mine]:
            continue
        behaviours = ", ".join(f"{_versions(g)} {_answered(a)}" for g, a in zip(groups, difference["answers"]))
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
    __slots__ = ("outcome", "effective", "error", "reason", "occurrences", "winner")

    def __init__(self, outcome: str, effective: str | None, error: str | None, reason: str,
                 occurrences: tuple[Occurrence, ...] = (), winner: int | None = None):
        self.outcome = outcome          # ok | rejected | unknown
        self.effective = effective      # the value it runs with (ok); None when no flag is given
        self.error = error              # the error class when rejected
        self.reason = reason
        self.occurrences = occurrences
        self.winner = winner            # index into occurrences of the value that wins


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


def _fail(error, reason, occurrences=(), winner=None):
    raise _Stop(Parse(REJECTED, None, error, reason, tuple(occurrences), winner))


def _unknown(reason, occurrences=(), winner=None):
    raise _Stop(Parse(UNKNOWN, None, None, reason, tuple(occurrences), winner))


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
        _unknown(f"the --config file name at {path.tok.where()} is not known from the spec ({path.unknown})")
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
    if profile.dotted_json:
        # vLLM rewrites only between `--` and the first `.` of the name
        head, dot, tail = name[2:].partition(".")
        name = "--" + head.replace("_", "-") + dot + tail
    else:
        name = name.replace("_", "-")
    return name + eq + value


def _dotted(items, profile):
    """vLLM >= 0.9: `-x.a.b V` / `-x.a.b=V` are removed and `-x '{"a": {"b": V}}'` appended."""
    out, merged, origin, skip = [], {}, {}, set()
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
            if value is None:
                _unknown(f"the value of {text} ({items[k + 1].tok.where()}) is not known from the spec")
            skip.add(k + 1)
        if name.endswith("+"):
            name, value = name[:-1], json.dumps(value.split(","))
        key, *keys = name.split(".")
        try:
            parsed = json.loads(value)
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


def _prepare(tokens, profile, entry):
    items = [_Item(t.text, t, t.reason) for t in tokens]
    behaviours = facts(profile).behaviours
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
                         f"can add: not replayed")
            if ("serve_positional_model" in behaviours and items and items[0].text is not None
                    and not items[0].text.startswith("-")):
                items = [_Item("--model-path", items[0].tok)] + items
            texts = [it.text or "" for it in items]
            names = ("--model-path", "--model") if profile.serve_model_alias else ("--model-path",)
            if not any((t in names and k + 1 < len(texts)) or t.startswith(tuple(n + "=" for n in names))
                       for k, t in enumerate(texts)):
                if any(it.text is None for it in items):
                    _unknown("`sglang serve` needs a literal --model-path, and an element is not known from the spec")
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
        named = [it for it, t in zip(items, texts) if re.match(r"^--served[-_]model[-_]name(=.+|$)", t)]
        if named and texts[0].startswith("-") and not any(re.match(r"^--config(=.+|$)", t) for t in texts):
            _fail(REQUIRED, f"{profile.label}: `vllm serve` with {named[0].tok.text.split('=')[0]} "
                            f"({named[0].tok.where()}) needs the model as the first positional argument")
    items, config = _config(items, profile, entry)
    for it in items:
        if it.text is not None:
            it.text = _underscores(it.text, profile)
    if profile.dotted_json:
        items = _dotted(items, profile)
    if "-O" in profile.options_for(entry):
        # vllm@0.11/vllm/utils/argparse_utils.py:FlexibleArgumentParser.parse_args rewrites -O<level>,
        # -O=<level> and -O <digit> into other options before argparse: not replayed
        hit = next((it for it in items if it.text is not None and it.text.startswith("-O")), None)
        if hit is not None:
            _unknown(f"{hit.text} ({hit.tok.where()}): {profile.label} rewrites -O options before parsing, "
                     f"which this plugin does not replay")
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


def _unsafe_unknown(tok, parser):
    """Why an element whose value is unknown could change the result, or '' if it cannot."""
    prefix = tok.prefix
    if prefix and not prefix.startswith("-"):
        return ""
    if prefix.startswith("--") and "=" in prefix:
        name = prefix.split("=", 1)[0]
        cls = parser.classify(_Item(name, tok)) if name in parser.table else None
        known = facts(parser.profile)
        plain = not known.kinds.get(getattr(cls, "action", None) or "") and not any(
            option == getattr(cls, "action", None) for _, option in known.start_up)
        if isinstance(cls, _Opt) and cls.action and cls.action != DTYPE_OPTION and cls.arity == "1" and plain:
            return ""
    return f"{tok.where()} is not known from the spec ({tok.reason})"


def _parse(tokens, profile, platform_may_extend, entry):
    parser = _Parser(profile, entry)
    for tok in tokens:
        if tok.text is None:
            why = _unsafe_unknown(tok, parser)
            if why:
                return Parse(UNKNOWN, None, None, why)
    items, config_file = _prepare(tokens, profile, entry)
    why = python_dependence(items, parser.table, profile)
    if why:
        return Parse(UNKNOWN, None, None, why)
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
    pattern = "".join(pattern)

    return _Run(profile, entry, items, pattern, opts).run(config_file, platform_may_extend)


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
        self.notes = {"stray": None}
        self.seen = set()
        self.choices = dict(profile.choices)
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
            if not self.profile.final_value_only:
                _unknown(self.notes["unknown_value"], self.occurrences, len(self.occurrences) - 1)
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
                _unknown(f"{item.text} ({item.tok.where()}) combines short options, which this plugin does not replay")
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
        value_item = self.items[start + 1] if opt.explicit is None and stop > start + 1 else None
        if opt.action != DTYPE_OPTION:
            _replay_value(opt.action, values, item, self.known, self.notes, self.occurrences)
        if opt.action == DTYPE_OPTION:
            self.take_dtype(item, values[0] if values else None, value_item)
        elif opt.action in self.choices:
            for value in values:
                if value is None or "\0" in value:
                    continue
                if value in ("", "None"):
                    # vLLM's optional_type turns these into None before the choices check, and the
                    # recorded (string) choices cannot say whether None itself is among them
                    self.notes.setdefault("choice", f"{item.tok.where()}: {opt.action} {value!r} may be read as "
                                                    f"None, which the choices {self.profile.label} had here may "
                                                    f"not hold")
                elif value not in self.choices[opt.action]:
                    if opt.action.startswith("--kv"):
                        _fail(INVALID_VALUE, f"argument {opt.action}: invalid choice: {value!r} "
                                             f"({item.tok.where()})", self.occurrences)
                    # other options' choices can depend on what the image has installed
                    self.notes.setdefault("choice", f"{item.tok.where()}: {opt.action} {value!r} is outside the "
                                                    f"choices {self.profile.label} had where they were read (they "
                                                    f"can depend on what the image installs)")
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
        uncertain = None
        if self.entry:
            try:
                _start_up(self.seen, self.entry, self.known, self.occurrences)
            except _Stop as stop:
                if stop.parse.outcome == REJECTED and not config_file:
                    raise
                uncertain = stop.parse.reason if stop.parse.outcome == UNKNOWN else (
                    stop.parse.reason + ", unless the --config file changes that")
        result = _conclude(tuple(self.occurrences), config_file, self.profile, platform_may_extend,
                           self.notes.get("unknown_value"))
        for why in (uncertain, self.notes.get("file")):
            if result.outcome == OK and why:
                return Parse(UNKNOWN, None, None, why, result.occurrences, result.winner)
        if result.outcome == OK and self.notes.get("choice"):
            return Parse(UNKNOWN, None, None, self.notes["choice"], result.occurrences, result.winner)
        if result.outcome == OK and self.notes["stray"] is not None:
            stray = self.notes["stray"]
            return Parse(UNKNOWN, None, None,
                         f"{stray.tok.where()} ({stray.text!r}) is a positional argument, which this entry point "
                         f"may reject", result.occurrences, result.winner)
        return result


def _replay_value(name, values, item, known, state, occurrences):
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
        _unknown(f"{name} ({where}) runs the release's own argparse Action, which this plugin does not replay",
                 occurrences)
    if "file" in rest and name != "--config":   # --config FILE: see _config
        state.setdefault("file", f"{name} ({where}) names a file in the image, which the engine reads at "
                                 f"start-up (not in the Pod spec)")
    type_name = rest[0] if rest and rest[0] != "file" else "str"
    if type_name == "str":
        return
    for value in values:
        if value == "--":
            # `--opt=--`: CPython 3.10-3.12 drop the `--` (nothing is converted), later ones do not
            # (see PYTHON_DIFFERENCES)
            _unknown(f"{name}=-- ({where}): what argparse does with a `--` value differs between CPython "
                     f"releases", occurrences)
        if value is None or "\0" in value:
            _unknown(f"the value of {name} ({where}) is not known from the spec, and the release converts it "
                     f"({type_name.split(':')[0]})", occurrences)
        ok = type_accepts(type_name, value, known.probes)
        if ok is None:
            _unknown(f"{name} {value!r} ({where}): the release checks this value with its own code (for "
                     f"example a pydantic config), which this plugin does not replay", occurrences)
        if not ok:
            _fail(INVALID_VALUE, f"argument {name}: invalid {type_name.split('|')[-1]} value: {value!r} ({where})",
                  occurrences)


def _start_up(seen, entry, known, occurrences):
    """The entry point's checks after the parse: '' when none applies, else raises."""
    read = sorted(name for name in seen if (entry, name) in known.start_up)
    if not read:
        return
    if len(read) == 1 and known.start_up[(entry, read[0])] != "reads":
        outcome = known.start_up[(entry, read[0])]
        if outcome.startswith("dies"):
            _fail(START_UP, f"{read[0]}: the start-up check refuses it: {outcome[len('dies: '):]}", occurrences)
        return
    _unknown(f"the checks the release runs after parsing read {', '.join(read)}, in a combination this plugin "
             f"does not replay", occurrences)


def _conclude(occurrences, config_file, profile, platform_may_extend, unknown_value=None):
    """The outcome once every token is consumed without an error."""
    if occurrences:
        final = occurrences[-1]
        winner = len(occurrences) - 1
        if final.value is None:
            return Parse(UNKNOWN, None, None, unknown_value or
                         f"the value of {DTYPE_OPTION} at {final.source}[{final.index}] is not known from the spec",
                         occurrences, winner)
        if not final.valid:
            if platform_may_extend and profile.platform_values:
                return Parse(UNKNOWN, None, None,
                             f"{final.value!r} is not a {profile.label} value, but a platform "
                             f"plugin (e.g. vLLM-Ascend) may register it", occurrences, winner)
            return Parse(REJECTED, None, INVALID_VALUE, _invalid(final.value, profile, final), occurrences, winner)
        if config_file:
            return Parse(UNKNOWN, None, None,
                         f"--config FILE is read before the command line and {profile.label} "
                         f"checks every value in it, so that file (not in the spec: it may be missing, empty or "
                         f"hold a value the engine refuses) could still be fatal; the command line says "
                         f"{final.value!r}", occurrences, winner)
        return Parse(OK, final.value, None, _winning(final, len(occurrences)), occurrences, winner)
    if config_file:
        return Parse(UNKNOWN, None, None,
                     "no --kv-cache-dtype on the command line, and --config FILE may set it (the file is not "
                     "in the Pod spec)")
    return Parse(OK, None, None, "no --kv-cache-dtype: the engine uses its default (auto)")


def _invalid(value, profile, item):
    return (f"argument {DTYPE_OPTION}: invalid choice: {value!r} for {profile.label} ({_where(item)})")


def _winning(final, count):
    shown = final.text if "=" in final.text else f"{final.text} {final.value}"
    earlier = f", over {count - 1} earlier occurrence{'s' if count > 2 else ''}" if count > 1 else ""
    return f"`{shown}` at {final.source}[{final.index}] wins{earlier}"
