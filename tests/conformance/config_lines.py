"""vLLM's engine config line as a release's own code writes it: the logger.info calls of
vllm/engine/llm_engine.py (LLMEngine.__init__) and vllm/v1/engine/core.py (EngineCore.__init__)
whose message holds "with config: ", their %-format (the logging module's `msg % args`) or
f-string evaluated as written, with VllmConfig.__str__ (vllm/config.py, vllm/config/__init__.py,
vllm/config/vllm.py) compiled from the wheel and run where the call logs `vllm_config`.

The configs are stand-ins: an attribute is read by its name from `values` (`model`,
`served_model_name`, `revision`, `cache_dtype`...), anything else prints as None (and as 1 where
the format wants a number). Independent of tools/enginedata/words_data.py (which reads the same
calls into templates): this runs the code, that reads it.
"""

from __future__ import annotations

import ast
import os

FILES = ("vllm/engine/llm_engine.py", "vllm/v1/engine/core.py")
CONFIGS = ("vllm/config.py", "vllm/config/__init__.py", "vllm/config/vllm.py")
PREFIX = "INFO 01-01 00:00:00 [core.py:1] "     # vllm/logger.py _FORMAT's head (levelname asctime [file:line])


class _Field:
    """A config attribute: prints as `values[name]`, or None."""

    def __init__(self, name, values):
        self._name, self._values = name, values

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") and name != "__version__":
            raise AttributeError(name)
        return _Field(name, self._values)

    def _value(self):
        return self._values.get(self._name)

    def __str__(self):
        return str(self._value())

    def __repr__(self):
        return repr(self._value())

    def __format__(self, spec):
        return format(str(self._value()), spec)

    def __int__(self):
        value = self._value()
        return value if isinstance(value, int) else 1

    __index__ = __int__


class _Names(dict):
    """The call's free names: each a config stand-in (vllm_config: one whose str() is the release's own)."""

    def __init__(self, values, vllm_str):
        super().__init__()
        self.values, self.vllm_str = values, vllm_str

    def __missing__(self, name):
        if name == "vllm_config" and self.vllm_str is not None:
            cls = type("VllmConfig", (_Field,), {"__str__": self.vllm_str})
            return cls("vllm_config", self.values)
        return _Field(name, self.values)


def _vllm_str(root):
    for rel in CONFIGS:
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == "VllmConfig":
                for fn in node.body:
                    if isinstance(fn, ast.FunctionDef) and fn.name == "__str__":
                        fn.decorator_list = []
                        space: dict = {}
                        exec(compile(ast.Module([fn], []), path, "exec"), space)   # the release's own method
                        found = space["__str__"]
    return locals().get("found")


def lines(root, values) -> list[str]:
    """Every engine config line the release at `root` writes, with `values` for its configs' fields."""
    vllm_str = _vllm_str(root)
    out = []
    for rel in FILES:
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "info" and node.args):
                continue
            if "with config: " not in ast.unparse(node.args[0]):
                continue
            names = _Names(values, vllm_str)
            args = [eval(compile(ast.Expression(a), path, "eval"), {}, names) for a in node.args]  # noqa: S307
            message = args[0] % tuple(args[1:]) if len(args) > 1 else args[0]      # logging's msg % args
            out.append(PREFIX + message)
    return out
