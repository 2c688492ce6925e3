"""The argv the kubelet would exec for a container, as Kubernetes builds it.

`command` replaces the image ENTRYPOINT and `args` its CMD (an empty list counts as unset);
`$(NAME)` is expanded per element from the container's environment, `$$` escapes a `$`, an
undefined name stays literal, one element never splits. Values that only the kubelet knows
(valueFrom, envFrom) stay unknown: they are never guessed, and Secret values are never read.
"""

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from kubectl_kvcache.engine import releases as engines


@dataclass(frozen=True)
class Token:
    """One argv element. `text` is None when it depends on values the spec does not hold."""

    text: Optional[str]
    source: str            # command | args | image | script
    index: int             # position in `source` (for script words: the script element)
    prefix: str = ""       # the known leading text of an unknown element
    reason: str = ""       # why the element is unknown

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


@dataclass(frozen=True)
class Environment:
    """name -> str (known) or EnvValue (exists, value unknown); `open_reason` is set when envFrom
    may define names the spec does not list."""

    values: Dict[str, object]
    open_reason: str = ""

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
    values: Dict[str, object] = {}
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


def expand(text: str, env: Environment) -> Tuple[str, Optional[str]]:
    """Kubernetes `$(NAME)` expansion of one element.

    Returns (text, None) when fully known, else (known prefix, reason) for the first reference
    whose value is not known.
    """
    out: List[str] = []
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


def element_tokens(elements: Sequence[str], source: str, env: Environment) -> List[Token]:
    tokens = []
    for index, element in enumerate(elements):
        text, unknown = expand(element if isinstance(element, str) else str(element), env)
        if unknown is None:
            tokens.append(Token(text, source, index))
        else:
            tokens.append(Token(None, source, index, prefix=text, reason=unknown))
    return tokens


@dataclass(frozen=True)
class Argv:
    tokens: Tuple[Token, ...]
    env: Environment
    image_engine: Optional[str] = None   # engine an image's ENTRYPOINT runs, when it says


@dataclass(frozen=True)
class Undecidable:
    reason: str


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
