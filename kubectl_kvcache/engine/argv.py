"""The argv the kubelet would exec for a container, as Kubernetes builds it.

`command` replaces the image ENTRYPOINT and `args` its CMD (an empty list counts as unset);
`$(NAME)` is expanded per element from the container's environment, `$$` escapes a `$`, an
undefined name stays literal, one element never splits. Values that only the kubelet knows
(valueFrom, envFrom) stay unknown: they are never guessed, and Secret values are never read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kubectl_kvcache.engine import releases as engines
from kubectl_kvcache.record import Record


class Token(Record):
    """One argv element. `text` is None when it depends on values the spec does not hold."""

    __slots__ = ("text", "source", "index", "prefix", "reason")

    def __init__(self, text: str | None, source: str, index: int, prefix: str = "", reason: str = ""):
        self.text = text
        self.source = source    # command | args | image | script
        self.index = index      # position in `source` (for script words: the script element)
        self.prefix = prefix    # the known leading text of an unknown element
        self.reason = reason    # why the element is unknown

    def where(self):
        return f"{self.source}[{self.index}]" if self.source != "image" else "the image ENTRYPOINT"


class EnvValue:
    """A variable that exists but whose value is not in the Pod spec."""

    __slots__ = ("reason",)

    def __init__(self, reason):
        self.reason = reason


# Variables the kubelet adds for Services in the namespace (enableServiceLinks).
_SERVICE_LINK = re.compile(r"^[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$")


def _value_from_reason(name, value_from):
    for key, what in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
        ref = value_from.get(key)
        if ref:
            return f"${name} comes from {what} {ref.get('name', '?')} (key {ref.get('key', '?')})"
    if value_from.get("fieldRef"):
        return f"${name} comes from the Pod field {value_from['fieldRef'].get('fieldPath', '?')}"
    if value_from.get("resourceFieldRef"):
        return f"${name} comes from the container resource {value_from['resourceFieldRef'].get('resource', '?')}"
    return f"${name} comes from valueFrom"


class Environment(Record):
    """name -> str (known) or EnvValue (exists, value unknown); `open_reason` is set when envFrom
    may define names the spec does not list."""

    __slots__ = ("values", "open_reason")

    def __init__(self, values: dict[str, object], open_reason: str = ""):
        self.values = values
        self.open_reason = open_reason

    def lookup(self, name):
        """str, EnvValue, or None when the name is certainly undefined."""
        if name in self.values:
            return self.values[name]
        if self.open_reason:
            return EnvValue(f"$({name}) may be defined by {self.open_reason}")
        if _SERVICE_LINK.match(name):
            return EnvValue(f"$({name}) may be a Service variable added by the kubelet")
        return None

    def for_shell(self):
        """name -> str or None (unknown), as the shell module takes it."""
        return {k: (v if isinstance(v, str) else None) for k, v in self.values.items()}


def container_environment(env: Sequence[dict], env_from: Sequence[dict]) -> Environment:
    sources = []
    for src in env_from or ():
        for key, what in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
            if src.get(key):
                prefix = src.get("prefix")
                sources.append(f"{what} {src[key].get('name', '?')}" + (f" (prefix {prefix})" if prefix else ""))
    open_reason = "envFrom " + ", ".join(sources) if sources else ("envFrom" if env_from else "")
    values: dict[str, object] = {}
    partial = Environment(values, open_reason)
    for entry in env or ():
        name = entry.get("name")
        if not name:
            continue
        if entry.get("valueFrom") is not None:
            values[name] = EnvValue(_value_from_reason(name, entry["valueFrom"]))
            continue
        text, unknown = expand(entry.get("value") or "", partial)
        values[name] = text if unknown is None else EnvValue(f"${name} is built from {unknown}")
    return Environment(values, open_reason)


def expand(text: str, env: Environment) -> tuple[str, str | None]:
    """Kubernetes `$(NAME)` expansion of one element.

    Returns (text, None) when fully known, else (known prefix, reason) for the first reference
    whose value is not known.
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "$" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:
                # Kubernetes keeps an unclosed `$(` literally and goes on scanning after it
                # (so a later `$$` is still an escaped `$`).
                out.append("$(")
                i += 2
                continue
            name = text[i + 2:close]
            value = env.lookup(name)
            if value is None:
                out.append(f"$({name})")
            elif isinstance(value, EnvValue):
                return "".join(out), value.reason
            else:
                out.append(value)
            i = close + 1
        else:
            out.append(ch + nxt)
            i += 2
    return "".join(out), None


def element_tokens(elements: Sequence[str], source: str, env: Environment) -> list[Token]:
    tokens = []
    for index, element in enumerate(elements):
        text, unknown = expand(element if isinstance(element, str) else str(element), env)
        if unknown is None:
            tokens.append(Token(text, source, index))
        else:
            tokens.append(Token(None, source, index, prefix=text, reason=unknown))
    return tokens


class Argv(Record):
    __slots__ = ("tokens", "env", "image_engine")

    def __init__(self, tokens: tuple[Token, ...], env: Environment, image_engine: str | None = None):
        self.tokens = tokens
        self.env = env
        self.image_engine = image_engine  # engine an image's ENTRYPOINT runs, when it says


class Undecidable(Record):
    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


def build_argv(container: dict, version=None):
    """Argv (tokens) or Undecidable, for a container dict with command/args/env/envFrom/image."""
    env = container_environment(container.get("env") or (), container.get("envFrom") or ())
    command = list(container.get("command") or ())
    args = list(container.get("args") or ())
    if command:
        return Argv(tuple(element_tokens(command, "command", env) + element_tokens(args, "args", env)), env)
    image = container.get("image") or ""
    entry = engines.image_entrypoint(image, version)
    if entry is None:
        return Undecidable(f"command is not set and the ENTRYPOINT of image {image or '(none)'} is not known")
    if not args:
        return Undecidable(f"neither command nor args is set: image {image} runs its default CMD")
    head = [Token(word, "image", i) for i, word in enumerate(entry["entrypoint"])]
    return Argv(tuple(head + element_tokens(args, "args", env)), env, entry["engine"])
