"""Parse an engine's argv the way its argparse-based parser does, for --kv-cache-dtype only.

Mirrors argparse's order of events: every token is classified first (an ambiguous
abbreviation fails here, wherever it stands), then options consume their values left to right
(a missing value or, where the release validates every occurrence, an invalid value fails at
that point), and unrecognized arguments fail last. Options that do not start with `--kv` and
positionals are not checked: the engine's full option list is not modelled.
"""

import re
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from kubectl_kvcache.engine.argv import Token
from kubectl_kvcache.engine.releases import DTYPE_OPTION, Profile

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_SPACE = "one element holding a space is not an option"

OK, REJECTED, UNKNOWN = "ok", "rejected", "unknown"
INVALID_VALUE = "invalid-value"
AMBIGUOUS = "ambiguous-option"
MISSING_VALUE = "missing-value"
UNRECOGNIZED = "unrecognized-argument"
IGNORED_VALUE = "ignored-explicit-argument"


@dataclass(frozen=True)
class Occurrence:
    source: str
    index: int
    text: str
    value: Optional[str]
    valid: bool


@dataclass(frozen=True)
class Parse:
    outcome: str                  # ok | rejected | unknown
    effective: Optional[str]      # the value it runs with (ok); None when no flag is given
    error: Optional[str]          # the error class when rejected
    reason: str
    occurrences: Tuple[Occurrence, ...] = ()
    winner: Optional[int] = None  # index into occurrences of the value that wins


@dataclass(frozen=True)
class _Class:
    kind: str          # dd | arg | other | kv | dtype-json | unrecognized | ambiguous | undecided | config
    option: object = None
    explicit: Optional[str] = None
    detail: str = ""


def _rewrite(text, profile):
    """vLLM rewrites `_` to `-` in the name part of every `--` token before argparse sees it."""
    if not (profile.underscores and text.startswith("--")):
        return text
    name, eq, value = text.partition("=")
    return name.replace("_", "-") + eq + value


def _resolve(name, profile):
    """Option, or a _Class for ambiguous/unrecognized/undecided/other, for an option name."""
    if name.startswith("--kv") or name == "--k":
        exact = profile.option(name)
        if exact:
            return exact
        matches = profile.prefix_matches(name)
        if len(matches) > 1:
            return _Class("ambiguous", detail=", ".join(o.name for o in matches))
        if name == "--k":
            return _Class("undecided", detail="`--k` may also abbreviate options this plugin does not model")
        if len(matches) == 1:
            return matches[0]
        return _Class("unrecognized")
    if name.lower().startswith("--kv"):
        # option names are case-sensitive and every engine option is lower case
        return _Class("unrecognized")
    return _Class("other")


def _classify(text, profile, after_dd):
    if after_dd:
        return _Class("arg")
    if text == "--":
        return _Class("dd")
    if not text.startswith("-") or text == "-" or _NEGATIVE_NUMBER.match(text):
        return _Class("arg")
    if profile.config_file and text == "--config":
        return _Class("config")
    if not text.startswith("--"):
        return _Class("other")
    rewritten = _rewrite(text, profile)
    exact = profile.option(rewritten)
    if exact:
        return _Class("kv", exact)
    name, eq, value = rewritten.partition("=")
    explicit = value if eq else None
    if " " in name:
        # argparse: an element holding a space that names no option is a positional, so an
        # option before it may take it as its value; left over, it is unrecognized
        return _Class("arg", detail=_SPACE)
    if eq and profile.option(name):
        return _Class("kv", profile.option(name), explicit)
    if profile.dotted_json and "." in name:
        base = _resolve(name.split(".", 1)[0], profile)
        if getattr(base, "name", None) == DTYPE_OPTION:
            return _Class("dtype-json", base, explicit)
        if not isinstance(base, _Class):
            return _Class("kv", base, explicit)
        return base if base.kind in ("ambiguous", "undecided") else _Class("other")
    resolved = _resolve(name if eq else rewritten, profile)
    if not isinstance(resolved, _Class):
        return _Class("kv", resolved, explicit)
    if resolved.kind == "unrecognized" and " " in rewritten:
        return _Class("arg", detail=_SPACE)
    return resolved


def _unsafe_unknown(token, profile):
    """Why an element whose value is unknown could change the result, or '' if it cannot."""
    prefix = token.prefix
    if prefix and not prefix.startswith("-"):
        return ""
    if prefix.startswith("--") and "=" in prefix:
        kind = _classify(prefix.split("=", 1)[0] + "=", profile, False)
        if kind.kind in ("other",):
            return ""
        if kind.kind == "kv" and kind.option.name != DTYPE_OPTION:
            return ""
    return f"{token.where()} is not known from the spec ({token.reason})"


def _option_like(cls):
    return cls.kind != "arg"


def parse(tokens: Sequence[Token], profile: Profile, platform_may_extend=False, positional_slots=None) -> Parse:
    """The outcome for the tokens after the entrypoint. `positional_slots`: how many positionals
    the parser takes (None: not known); a positional left after a `--kv` option's value is
    fatal beyond them."""
    tokens = list(tokens)
    for tok in tokens:
        if tok.text is None:
            why = _unsafe_unknown(tok, profile)
            if why:
                return Parse(UNKNOWN, None, None, why)

    classes, after_dd = [], False
    for tok in tokens:
        if tok.text is None:  # only safe unknowns get here: their known prefix says what they are
            classes.append(_Class("other" if tok.prefix.startswith("-") else "arg"))
            continue
        cls = _classify(tok.text, profile, after_dd)
        after_dd = after_dd or cls.kind == "dd"
        classes.append(cls)
        if cls.kind == "ambiguous":
            return Parse(REJECTED, None, AMBIGUOUS,
                         f"ambiguous option: {tok.text} could match {cls.detail} ({tok.where()})")
        if cls.kind == "undecided":
            return Parse(UNKNOWN, None, None, f"{tok.where()}: {cls.detail}")
        if cls.kind == "kv" and cls.option.uncertain:
            return Parse(UNKNOWN, None, None,
                         f"{tok.where()}: whether {profile.label} has {cls.option.name} is not known")
        if cls.kind == "kv" and cls.option.takes_value is None:
            return Parse(UNKNOWN, None, None,
                         f"{tok.where()}: whether {cls.option.name} takes a value is not known, so the "
                         f"tokens after it cannot be read")

    occurrences, unrecognized, config_file, unknown_value = [], [], False, ""
    after_dd = False
    i, n = 0, len(tokens)
    # Leading positionals fill the parser's positional slots; beyond them they are unrecognized.
    leading = next((k for k, c in enumerate(classes) if c.kind != "arg"), n)
    slots = positional_slots
    if slots is not None:
        unrecognized.extend(tokens[slots:leading])
        slots = max(0, slots - leading)
    stray_unknown = None
    free = False          # the previous token completed a --kv option: a positional here is stray
    i = leading
    while i < n:
        tok, cls = tokens[i], classes[i]
        nxt = classes[i + 1] if i + 1 < n else None
        was_free, free = free, False
        if after_dd:
            unrecognized.append(tok)
            i += 1
            continue
        if cls.kind == "arg" and was_free and cls.detail != _SPACE:
            if slots == 0:
                unrecognized.append(tok)
            elif stray_unknown is None:
                stray_unknown = tok
        if cls.kind == "dd":
            after_dd = True
        elif cls.kind == "unrecognized" or (cls.kind == "arg" and cls.detail == _SPACE):
            unrecognized.append(tok)
        elif cls.kind == "config":
            if nxt is None or _option_like(nxt):
                return Parse(REJECTED, None, MISSING_VALUE, f"--config: expected one argument ({tok.where()})",
                             tuple(occurrences))
            config_file = True
            i += 1
        elif cls.kind in ("kv", "dtype-json"):
            option = cls.option
            if option.name == DTYPE_OPTION:
                if cls.kind == "dtype-json":
                    value = '{"%s": ...}' % tok.text.split("=", 1)[0].split(".", 1)[1]
                    if cls.explicit is None and nxt is not None and not _option_like(nxt):
                        i += 1
                elif cls.explicit is not None:
                    value = cls.explicit
                elif nxt is None or _option_like(nxt):
                    return Parse(REJECTED, None, MISSING_VALUE,
                                 f"argument {DTYPE_OPTION}: expected one argument ({tok.where()})",
                                 tuple(occurrences))
                else:
                    i += 1
                    value = tokens[i].text
                valid = value in profile.accepted
                occurrences.append(Occurrence(tok.source, tok.index, tok.text, value, valid))
                if value is None:
                    unknown_value = (f"the value of {DTYPE_OPTION} at {tok.where()}, {tokens[i].where()}, "
                                     f"is not known from the spec ({tokens[i].reason})")
                    if not profile.final_value_only:
                        return Parse(UNKNOWN, None, None, unknown_value, tuple(occurrences), len(occurrences) - 1)
                if not valid and not profile.final_value_only:
                    return Parse(REJECTED, None, INVALID_VALUE, _invalid(value, profile, tok),
                                 tuple(occurrences), len(occurrences) - 1)
            elif option.takes_value is True and cls.explicit is None:
                if nxt is None or _option_like(nxt):
                    return Parse(REJECTED, None, MISSING_VALUE,
                                 f"argument {option.name}: expected at least one argument ({tok.where()})",
                                 tuple(occurrences))
                i += 1
            elif option.takes_value is False and cls.explicit is not None:
                return Parse(REJECTED, None, IGNORED_VALUE,
                             f"argument {option.name}: ignored explicit argument {cls.explicit!r} ({tok.where()})",
                             tuple(occurrences))
        free = cls.kind in ("kv", "dtype-json")
        i += 1

    result = _conclude(tuple(occurrences), unrecognized, unknown_value, config_file, profile, platform_may_extend)
    if result.outcome == OK and stray_unknown is not None:
        return Parse(UNKNOWN, None, None,
                     f"{stray_unknown.where()} ({stray_unknown.text!r}) follows a --kv option's value as a "
                     f"positional argument, which this entrypoint may reject", result.occurrences, result.winner)
    return result


def _conclude(occurrences, unrecognized, unknown_value, config_file, profile, platform_may_extend):
    """The outcome once every token is consumed without an immediate error."""
    if unrecognized:
        shown = " ".join(t.text if t.text is not None else t.prefix + "..." for t in unrecognized[:4])
        shown += " ..." if len(unrecognized) > 4 else ""
        return Parse(REJECTED, None, UNRECOGNIZED,
                     f"unrecognized arguments: {shown} ({unrecognized[0].where()})", occurrences)
    if occurrences:
        final = occurrences[-1]
        winner = len(occurrences) - 1
        if final.value is None:
            return Parse(UNKNOWN, None, None, unknown_value, occurrences, winner)
        if not final.valid:
            if platform_may_extend and profile.platform_values:
                return Parse(UNKNOWN, None, None,
                             f"{final.value!r} is not a {profile.label} value, but a platform "
                             f"plugin (e.g. vLLM-Ascend) may register it", occurrences, winner)
            return Parse(REJECTED, None, INVALID_VALUE, _invalid(final.value, profile, final), occurrences, winner)
        if config_file and not profile.final_value_only:
            return Parse(UNKNOWN, None, None,
                         f"--config FILE is read before the command line and {profile.label} "
                         f"validates every value, so a dtype in that file (not in the spec) could still be fatal; "
                         f"the command line says {final.value!r}", occurrences, winner)
        return Parse(OK, final.value, None, _winning(final, len(occurrences)), occurrences, winner)
    if config_file:
        return Parse(UNKNOWN, None, None,
                     "no --kv-cache-dtype on the command line, and --config FILE may set it (the file is not "
                     "in the Pod spec)")
    return Parse(OK, None, None, "no --kv-cache-dtype: the engine uses its default (auto)")


def _where(item):
    return item.where() if isinstance(item, Token) else f"{item.source}[{item.index}]"


def _invalid(value, profile, item):
    return (f"argument {DTYPE_OPTION}: invalid choice: {value!r} for {profile.label} ({_where(item)})")


def _winning(final, count):
    shown = final.text if "=" in final.text else f"{final.text} {final.value}"
    earlier = f", over {count - 1} earlier occurrence{'s' if count > 2 else ''}" if count > 1 else ""
    return f"`{shown}` at {final.source}[{final.index}] wins{earlier}"
