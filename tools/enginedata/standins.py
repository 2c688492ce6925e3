"""Permissive stand-ins for the engines' heavy dependencies (torch, triton, CUDA bindings, ...).

`install()` appends a meta-path finder that is consulted only after every real finder failed:
a module that is importable is always the real one; only a module that is not installed is
served as a permissive object (any attribute, call, subclass, iteration or context use works and
yields another stand-in). Used ONLY by the conformance tier's oracle processes, never by the
plugin. The parsers the tier drives are pure argparse plus the engines' own Python code; the
stand-ins only let that code import.
"""

import importlib.abc
import importlib.machinery
import sys
import types

STANDIN_VERSION = "99.0.0"


class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _new(name)

    def __call__(cls, *args, **kwargs):
        # used as a decorator (`@torch.compile`, `@triton.jit`): keep the function
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], _Meta):
            return args[0]
        return super().__call__()

    def __getitem__(cls, item):
        return cls

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0

    def __bool__(cls):
        return True

    def __int__(cls):
        return 0

    def __index__(cls):
        return 0

    def __float__(cls):
        return 0.0

    def __contains__(cls, item):
        return False

    def __lt__(cls, other):
        return False

    __gt__ = __le__ = __ge__ = __lt__

    def __or__(cls, other):
        return cls

    __ror__ = __or__

    def __repr__(cls):
        return f"<stand-in {cls.__name__}>"


class Standin(metaclass=_Meta):
    """An instance of a stand-in class: as permissive as the class."""

    def __init__(self, *args, **kwargs):
        pass

    def __init_subclass__(cls, **kwargs):
        pass

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        from pydantic_core import core_schema
        return core_schema.any_schema()

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _new(name)

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return Standin()

    def __getitem__(self, item):
        return Standin()

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __bool__(self):
        return False

    def __int__(self):
        return 0

    def __index__(self):
        return 0

    def __float__(self):
        return 0.0

    def __eq__(self, other):
        return isinstance(other, Standin)

    def __ne__(self, other):
        return not isinstance(other, Standin)

    __hash__ = object.__hash__

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __mro_entries__(self, bases):
        return (Standin,)


def _operand(self, *other):
    return Standin()


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "xor", "lshift",
            "rshift", "neg", "pos", "invert", "abs"):
    for _name in (f"__{_op}__", f"__r{_op}__"):
        setattr(Standin, _name, _operand)
        if _name not in ("__or__", "__ror__"):
            setattr(_Meta, _name, _operand)
Standin.__or__ = _operand
Standin.__ror__ = _operand


def _new(name):
    return _Meta(str(name), (Standin,), {})


class StandinModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _new(name)
        setattr(self, name, value)
        return value


# Attributes a stand-in module answers with a fixed value instead of a stand-in: what a GPU node
# with one CUDA device says (vLLM picks its platform from pynvml).
OVERLAYS = {
    "pynvml": {"nvmlDeviceGetCount": lambda: 1, "nvmlInit": lambda: None, "nvmlShutdown": lambda: None},
}
OVERLAYS["vllm.third_party.pynvml"] = OVERLAYS["pynvml"]   # vLLM's vendored copy, a real module


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        module = StandinModule(spec.name)
        for name, value in OVERLAYS.get(spec.name, {}).items():
            setattr(module, name, value)
        module.__path__ = []
        module.__version__ = STANDIN_VERSION
        module.__standin__ = True
        return module

    def exec_module(self, module):
        pass


class StandinFinder(importlib.abc.MetaPathFinder):
    """Serves a stand-in for any module no real finder found, except the refused prefixes."""

    def __init__(self, refuse=()):
        self.refuse = tuple(refuse)
        self.served = set()

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.split(".", 1)[0]
        # the standard library is never stood in for (its `try: import _winapi` probes must fail)
        if top in sys.stdlib_module_names or top in self.refuse:
            return None
        if "." in fullname:
            # a missing submodule of a REAL package is a real ImportError (`from pkg import name`
            # probes submodules), except a compiled extension of the engine (`vllm._C`)
            parent = sys.modules.get(top)
            if not isinstance(parent, StandinModule) and not fullname.rsplit(".", 1)[1].startswith("_"):
                return None
        self.served.add(fullname)
        return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)


def install(refuse=()):
    finder = StandinFinder(refuse)
    sys.meta_path.append(finder)
    return finder


class _TolerantLoader(importlib.abc.Loader):
    """Runs an engine module's real code; if that code fails at import time (it set up kernels,
    custom ops or devices through stand-ins), the module keeps what it defined and becomes
    permissive for the rest. Parser-critical modules are never tolerated: they must import."""

    def __init__(self, real, owner):
        self.real = real
        self.owner = owner

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module):
        try:
            self.real.exec_module(module)
            for name, value in OVERLAYS.get(module.__name__, {}).items():
                setattr(module, name, value)
        except Exception as exc:  # noqa: BLE001 - recorded and shown by the tier
            if module.__name__ in self.owner.critical or module.__name__.startswith(self.owner.critical_prefixes):
                raise
            module.__class__ = StandinModule
            self.owner.tolerated[module.__name__] = f"{type(exc).__name__}: {exc}"[:200]


class TolerantFinder(importlib.abc.MetaPathFinder):
    def __init__(self, packages, critical=(), critical_prefixes=()):
        self.packages = tuple(packages)
        self.critical = frozenset(critical)
        self.critical_prefixes = tuple(critical_prefixes)
        self.tolerated = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".", 1)[0] not in self.packages:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _TolerantLoader(spec.loader, self)
        return spec


def install_tolerant(packages, critical=(), critical_prefixes=()):
    finder = TolerantFinder(packages, critical, critical_prefixes)
    sys.meta_path.insert(0, finder)
    return finder
