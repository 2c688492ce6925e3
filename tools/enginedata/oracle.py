"""One engine release's REAL parser, driven through its real entry points, as a batch server.

    python oracle.py ENGINE VERSION ROOT     (ROOT: the cached folder of that release's .py files)

Reads one JSON request per stdin line and answers one JSON line each:
    {"entry": "serve" | "api_server" | "launch_server" | "sglang_serve", "argv": [...]}
 -> {"outcome": "ok", "value": <kv_cache_dtype the engine runs with, or null: flag absent>}
  | {"outcome": "dies", "error": "<the engine's message>"}
  | {"outcome": "absent"}   (the entry point does not exist in this release)
    {"describe": ENTRY} -> the parser's options: name, nargs, takes a value, choices, required

Entry points, as the engine runs them:
- vLLM `vllm serve ...`: the release's CLI main (`vllm.entrypoints.cli.main`, or `vllm.scripts`
  before it), so FlexibleArgumentParser's `--model` move, `--config` loading, `_`->`-` rewriting and
  dotted JSON all run; the serve dispatch is replaced by a recorder. From vLLM 0.33 the value is then
  checked by CacheConfig's own start-up validator (vllm/config/cache.py).
- vLLM `python -m vllm.entrypoints.openai.api_server ...`: the module's own `__main__` block with the
  server start replaced by a recorder.
- SGLang `python -m sglang.launch_server ...`: the module's `__main__` block (prepare_server_args with
  its --config merger); ServerArgs.from_cli_args is replaced by a recorder (it would load the model).
- SGLang `sglang serve ...` (>= 0.5.5): sglang.cli.main; the diffusion-model probe (an HF download)
  answers "not diffusion".
Heavy dependencies that are not installed are stand-ins (standins.py); engine modules whose import
fails through a stand-in are tolerated and listed by {"tolerated": true}, except the parser's own.
"""

import argparse
import ast
import contextlib
import io
import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import standins  # noqa: E402
import fuzz_types  # noqa: E402
import startup_probe  # noqa: E402
import schema_probe  # noqa: E402


class Captured(BaseException):
    def __init__(self, namespace):
        super().__init__()
        self.namespace = namespace


# Modules vLLM imports only to detect a non-CUDA platform: never stood in, so that a release
# detects CUDA (its stand-in pynvml) or no platform, as on a plain GPU node.
PLATFORM_PROBES = ("libtpu", "tpu_inference", "tpu_commons", "transformers_neuronx", "neuronx_distributed",
                   "torch_neuronx", "neuronxcc", "habana_frameworks", "intel_extension_for_pytorch",
                   "oneccl_bindings_for_pytorch", "amdsmi", "zentorch", "vllm_ascend", "torch_npu",
                   "vllm_omni", "vllm_gaudi", "vllm_spyre", "torch_xla", "neuronx_distributed_inference",
                   "optimum", "tpu_info", "jax", "openvino", "optimum_habana")

CRITICAL = {
    "vllm": ["vllm.engine.arg_utils", "vllm.utils.argparse_utils", "vllm.utils", "vllm.entrypoints.cli.main",
             "vllm.entrypoints.cli.serve", "vllm.entrypoints.openai.cli_args", "vllm.entrypoints.common.cli_args",
             "vllm.scripts", "vllm.entrypoints.openai.api_server", "vllm.config"],
    "sglang": ["sglang.srt.server_args", "sglang.srt.server_args_config_parser", "sglang.launch_server",
               "sglang.cli.main", "sglang.cli.serve", "sglang.cli.utils"],
}
CRITICAL_PREFIXES = {"vllm": ("vllm.config.",), "sglang": ()}


class Oracle:
    handed = None

    def __init__(self, engine, version, root):
        self.engine, self.version, self.root = engine, version, root
        sys.path.insert(0, root)
        os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "0")
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self.standins = standins.install(refuse=(engine,) + PLATFORM_PROBES)
        self.tolerant = standins.install_tolerant([engine], CRITICAL[engine], CRITICAL_PREFIXES[engine])
        # argparse's error() and the help action format the usage or help of several hundred
        # options before exiting (~0.1-0.4 s a time); the outcome (the error line, the exit) is
        # the same without that text, so the oracle skips printing it
        argparse.ArgumentParser.print_usage = lambda self, file=None: None
        argparse.ArgumentParser.print_help = lambda self, file=None: None
        self.parsers = []
        self.reads = fuzz_types.ReadRecorder()
        self.post_parse = None
        self._record_parsers()
        self._record_entry_points()

    def _record_entry_points(self):
        """The entry-point groups (installed plugins) anything in this process looked up: code of
        a plugin the image installs can run there, before the parse (SGLang from 0.5.12 loads its
        plugins first: sglang@0.5.12/sglang/launch_server.py), and register more parser names."""
        import importlib.metadata as metadata
        real = metadata.entry_points
        self.entry_point_groups = set()
        oracle = self

        def entry_points(*args, **kwargs):
            group = kwargs.get("group")
            oracle.entry_point_groups.add(str(group) if group is not None else "*")
            return real(*args, **kwargs)
        metadata.entry_points = entry_points

    # --- speed: build each parser's options once -------------------------------------------
    ADDERS = {
        "vllm": [("vllm.engine.arg_utils", "EngineArgs", "add_cli_args"),
                 ("vllm.engine.arg_utils", "AsyncEngineArgs", "add_cli_args"),
                 ("vllm.entrypoints.openai.cli_args", None, "make_arg_parser"),
                 ("vllm.entrypoints.common.cli_args", None, "make_arg_parser")],
        "sglang": [("sglang.srt.server_args", "ServerArgs", "add_cli_args")],
    }

    def _memoize_adders(self):
        """The engine's functions that add its options to a parser (EngineArgs.add_cli_args,
        make_arg_parser, ServerArgs.add_cli_args) introspect hundreds of config fields on every
        call. The first call runs for real and records the actions and groups it added; later
        calls add those same action objects to the new parser (argparse's own _add_action, so
        registration and conflicts behave as before). The parse itself always runs for real."""
        import importlib
        for module_name, class_name, attr in self.ADDERS[self.engine]:
            try:
                module = importlib.import_module(module_name)
            except Exception:  # noqa: BLE001 - not in this release
                continue
            owner = getattr(module, class_name, None) if class_name else module
            if owner is None:
                continue
            raw = owner.__dict__.get(attr) if class_name else getattr(module, attr, None)
            if raw is None or getattr(raw, "__memoized__", False):
                continue
            kind = type(raw) if isinstance(raw, (staticmethod, classmethod)) else None
            func = raw.__func__ if kind else raw
            wrapped = _memoized(func, kind is classmethod)
            if kind is staticmethod:
                setattr(owner, attr, staticmethod(wrapped))
            elif kind is classmethod:
                setattr(owner, attr, classmethod(wrapped))
            else:
                setattr(owner, attr, wrapped)
                for mod in list(sys.modules.values()):  # `from ... import make_arg_parser` copies
                    if getattr(mod, attr, None) is func:
                        setattr(mod, attr, wrapped)

    # --- parser discovery ------------------------------------------------------------------
    def _record_parsers(self):
        """Every parser that reads --kv-cache-dtype, and the namespace the last parse returned."""
        real = argparse.ArgumentParser.parse_known_args
        real_parse_args = argparse.ArgumentParser.parse_args
        oracle = self

        def parse_known_args(parser, args=None, namespace=None):
            if "--kv-cache-dtype" in parser._option_string_actions and parser not in oracle.parsers:
                oracle.parsers.append(parser)
            return real(parser, args, namespace)

        def parse_args(parser, args=None, namespace=None):
            if oracle.handed is None:
                # the argv the release's own preparation (FlexibleArgumentParser.parse_args)
                # hands to argparse: the outermost parse of this run ("prepared" requests)
                oracle.handed = list(sys.argv[1:] if args is None else args)
            result = real_parse_args(parser, args, namespace)
            if hasattr(result, "kv_cache_dtype"):
                oracle.last_namespace = oracle.reads.watch(result)
                oracle.reads.on = True   # what start-up code reads from here on (describe)
                if oracle.stop_after_parse:
                    # python -m ...api_server: what runs after the parse starts the server (and
                    # in old releases builds it inline); the parse, and the argv checks the
                    # release runs right after it (validate_parsed_serve_args), are judged
                    if oracle.post_parse is not None:
                        oracle.post_parse(result)
                    raise Captured(result)
            return result

        argparse.ArgumentParser.parse_known_args = parse_known_args
        argparse.ArgumentParser.parse_args = parse_args

    def exists(self, rel):
        return os.path.exists(os.path.join(self.root, rel))

    def _main_block(self, module_name):
        """The body of `if __name__ == "__main__":` of an engine module, compiled from its source."""
        module = __import__(module_name, fromlist=["_"])
        with open(module.__file__) as f:
            tree = ast.parse(f.read())
        for node in tree.body:
            if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                    and getattr(node.test.left, "id", None) == "__name__"):
                body = ast.Module(body=node.body, type_ignores=[])
                return module, compile(body, module.__file__, "exec")
        raise RuntimeError(f"{module_name} has no __main__ block")

    # --- entry points ------------------------------------------------------------------------
    def run_vllm_serve(self, argv):
        if self.exists("vllm/entrypoints/cli/main.py"):
            import vllm.entrypoints.cli.main as main_mod
            import vllm.entrypoints.cli.serve as serve_mod

            def record(args):
                raise Captured(args)
            serve_mod.ServeSubcommand.cmd = staticmethod(record)
            main = main_mod.main
        elif self.exists("vllm/scripts.py"):
            import vllm.scripts as main_mod
            if getattr(self, "_serve_checks", False) is False:
                # its serve() checks the namespace before run_server (vllm@0.6.5/vllm/scripts.py:
                # `--model` given beside the positional model is a ValueError): run those too
                self._serve_checks = None if getattr(main_mod.serve, "recorder", False) else _inline_checks(main_mod.serve)
            checks = self._serve_checks

            def record(args, *rest):
                if checks is not None:
                    checks(args)
                raise Captured(args)
            record.recorder = True
            main_mod.serve = record
            main = main_mod.main
        else:
            return None
        sys.argv = ["vllm", "serve", *argv]
        return self._call(main)

    stop_after_parse = False

    def run_vllm_api_server(self, argv):
        self.stop_after_parse = True
        try:
            return self._run_vllm_api_server(argv)
        finally:
            self.stop_after_parse = False

    def _run_vllm_api_server(self, argv):
        if getattr(self, "_api_server", None) is None:   # parsing the module's source is slow: once
            module, code = self._main_block("vllm.entrypoints.openai.api_server")
            self._api_server = (module, code, _post_parse_check(module, code))
        module, code, self.post_parse = self._api_server
        namespace = dict(vars(module))
        namespace["__name__"] = "__main__"

        def record(args, *rest, **kw):
            raise Captured(args)
        namespace["run_server"] = record
        # very old releases build the app inline after parse_args(): stop right after parsing
        if callable(namespace.get("parse_args")):
            real_parse = namespace["parse_args"]

            def parse_then_record(*a, **kw):
                raise Captured(real_parse(*a, **kw))
            namespace["parse_args"] = parse_then_record
        sys.argv = ["api_server.py", *argv]
        return self._call(lambda: exec(code, namespace))

    def run_sglang_launch_server(self, argv):
        from sglang.srt import server_args as sa
        module, code = self._main_block("sglang.launch_server")
        namespace = dict(vars(module))
        namespace["__name__"] = "__main__"
        sa.ServerArgs.from_cli_args = classmethod(lambda cls, args: (_ for _ in ()).throw(Captured(args)))
        sys.argv = ["launch_server.py", *argv]
        return self._call(lambda: exec(code, namespace))

    def run_sglang_serve(self, argv):
        if not self.exists("sglang/cli/main.py"):
            return None
        from sglang.srt import server_args as sa
        import sglang.cli.main as main_mod
        import sglang.cli.serve as serve_mod
        serve_mod.get_is_diffusion_model = lambda path: False
        serve_mod.kill_process_tree = lambda *a, **kw: None
        sa.ServerArgs.from_cli_args = classmethod(lambda cls, args: (_ for _ in ()).throw(Captured(args)))
        sys.argv = ["sglang", "serve", *argv]
        return self._call(main_mod.main)

    # --- one run -----------------------------------------------------------------------------
    def _call(self, fn):
        err = io.StringIO()
        self.last_namespace = None
        self.handed = None
        self.reads.on = False
        self.reads.reads.clear()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                fn()
        except Captured as cap:
            self.reads.on = False
            self.captured = cap.namespace
            return self._value(cap.namespace)
        except SystemExit as exc:
            self.reads.on = False
            if exc.code in (0, None):
                return {"outcome": "exit0"}
            return {"outcome": "dies", "error": _last_line(err.getvalue()) or f"exit {exc.code}"}
        except Exception as exc:  # noqa: BLE001 - the engine dies with a traceback
            self.reads.on = False
            return {"outcome": "dies", "error": f"{type(exc).__name__}: {exc}"[:300],
                    "traceback": traceback.format_exc()[-1500:]}
        if self.last_namespace is not None:
            # the entry point returned after parsing (the server start was a stand-in)
            return self._value(self.last_namespace)
        return {"outcome": "noparse"}

    def _value(self, ns):
        value = getattr(ns, "kv_cache_dtype", None)
        if self.engine == "vllm" and self.exists("vllm/config/cache.py"):
            from vllm.config import cache
            validator = getattr(cache.CacheConfig, "_validate_cache_dtype", None)
            if validator is not None:
                fn = getattr(validator, "wrapped", None) or getattr(validator, "__func__", None)
                if hasattr(validator, "wrapped"):  # pydantic's decorator proxy
                    fn = validator.wrapped
                    fn = getattr(fn, "__func__", fn)
                try:
                    fn(cache.CacheConfig, value)
                except Exception as exc:  # noqa: BLE001
                    return {"outcome": "dies", "error": f"start-up: {type(exc).__name__}: {exc}"[:300]}
        died = self._api_server_checks(ns)
        if died is not None:
            return died
        if value is not None and not isinstance(value, str):
            value = json.dumps(value, sort_keys=True)
        return {"outcome": "ok", "value": value}

    def validate_api_server_args(self):
        """vLLM's validate_api_server_args as the release's setup_server calls it before it binds
        the port (the tool-call and reasoning parser names against their registries); before 0.10,
        where those checks are inline in run_server, the same statements of run_server
        (_inline_checks); None where neither exists."""
        if self.engine != "vllm":
            return None
        found = self._setup_server_checks()
        if found is not None:
            return found
        if getattr(self, "_inline", False) is False:
            module = sys.modules.get("vllm.entrypoints.openai.api_server")
            if module is None or not callable(getattr(module, "run_server", None)):
                return None   # not imported yet (or mid-import): again later
            self._inline = _inline_checks(module.run_server)
        return self._inline

    def _setup_server_checks(self):
        if getattr(self, "_validate_api", False) is False:
            import importlib
            import inspect
            found, failed = None, False
            for name in ("vllm.entrypoints.launchers.launcher", "vllm.entrypoints.openai.api_server"):
                if not self.exists(name.replace(".", "/") + ".py"):
                    continue
                try:
                    setup = getattr(importlib.import_module(name), "setup_server", None)
                except Exception:  # noqa: BLE001 - mid-import (another one under way): again later
                    failed = True
                    continue
                if setup is None:
                    failed = True   # partly imported (the run is inside its import), or absent: again
                    continue
                if "validate_api_server_args(" in inspect.getsource(setup):
                    real = inspect.unwrap(setup)
                    found = (real.__globals__.get("validate_api_server_args")
                             or vars(sys.modules[real.__module__]).get("validate_api_server_args"))
                    break
            if found is not None or not failed:
                self._validate_api = found
            return found
        return self._validate_api

    def _api_server_checks(self, ns):
        """The outcome of validate_api_server_args on the parsed namespace: None when it passes.
        Not run with --headless (no API server) or a parser plugin (a file in the image, imported
        first): the reads of those dests are recorded, so the model answers UNKNOWN for them."""
        fn = self.validate_api_server_args()
        if fn is None:
            return None
        self.reads.on = True
        try:
            if getattr(ns, "headless", False):
                return None
            if getattr(ns, "tool_parser_plugin", None) or getattr(ns, "reasoning_parser_plugin", None):
                return None
            fn(ns)
        except Exception as exc:  # noqa: BLE001
            return {"outcome": "dies", "error": f"start-up: {type(exc).__name__}: {exc}"[:300]}
        finally:
            self.reads.on = False
        return None

    def check_roots(self, entry):
        """[(function, position of the namespace parameter)]: what runs on the parsed argv."""
        roots = []
        if self.engine != "vllm":
            return roots
        if entry == "serve" and self.exists("vllm/entrypoints/cli/serve.py"):
            import vllm.entrypoints.cli.serve as serve_mod
            validate = serve_mod.ServeSubcommand.__dict__.get("validate")
            if validate is not None:
                roots.append((validate, 1))
        elif entry == "serve" and self.exists("vllm/scripts.py"):
            import vllm.scripts as scripts   # its main() validates a `serve` namespace itself
            if "validate_parsed_serve_args(" in open(scripts.__file__).read():
                found = vars(scripts).get("validate_parsed_serve_args")
                if found is not None:
                    roots.append((found, 0))
            if getattr(self, "_serve_checks", None) is not None:
                roots.append((self._serve_checks, 0))
        if entry == "api_server" and self.post_parse is not None:
            roots.append((self.post_parse, 0))
        if self.validate_api_server_args() is not None:
            roots.append((self.validate_api_server_args(), 0))
        return roots

    def combos(self, entry):
        """The start-up checks' groups and probed rows (startup_probe.py) for one entry point."""
        model_argv = {"serve": ["m"], "api_server": ["--model", "m"]}.get(entry)
        if model_argv is None:
            return {}
        self.parsers.clear()
        if self.run(entry, model_argv).get("outcome") == "absent" or not self.parsers:
            return None
        parser = self.parsers[-1]
        roots = self.check_roots(entry)
        if not roots:
            return {}
        registries = {d: startup_probe.registry(m) for d, m in startup_probe.REGISTRIES.items()}
        registries = {d: r for d, r in registries.items() if r}

        def run(argv):
            answer = self.run(entry, argv)
            return answer, sorted(self.reads.reads)
        return startup_probe.combos(run, parser, model_argv, roots, registries,
                                    self.validate_api_server_args() is not None, None) or {}

    def schemas(self, entry):
        """The JSON config options' schemas (schema_probe.py) of the parser at one entry point."""
        if self.engine != "vllm":
            return {}
        model_argv = {"serve": ["m"], "api_server": ["--model", "m"]}[entry]
        self.parsers.clear()
        if self.run(entry, model_argv).get("outcome") == "absent" or not self.parsers:
            return None
        return schema_probe.describe(self.parsers[-1])

    def run(self, entry, argv):
        if not getattr(self, "_memoized", False):
            self._memoized = True
            try:
                self.run(entry, argv)  # first run: imports everything, then memoize
                if self.parsers:
                    # what the real adders registered, to hold the memoized parsers to (describe)
                    self.real_table = (entry, sorted(self.parsers[-1]._option_string_actions))
            finally:
                self._memoize_adders()
        fn = {"serve": self.run_vllm_serve, "api_server": self.run_vllm_api_server,
              "launch_server": self.run_sglang_launch_server, "sglang_serve": self.run_sglang_serve}[entry]
        result = fn(list(argv))
        return {"outcome": "absent"} if result is None else result

    def _modules_defining(self, package, text):
        """The modules of `package` in this release's tree whose source holds `text`."""
        found = []
        for base, _, files in os.walk(os.path.join(self.root, package)):
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(base, name)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        if text in f.read():
                            rel = os.path.relpath(path, self.root)[:-3].replace(os.sep, ".")
                            found.append(rel.removesuffix(".__init__"))
        return found

    def words(self, entry, argv):
        """The start-up lines the release's own code writes about its arguments, for the argv
        (engine/words.py reads them): {"outcome", "lines": [...]}. vLLM: log_non_default_args
        (vllm/entrypoints/utils.py) run on the parsed namespace, its log record formatted. SGLang:
        f"{server_args=}" of a ServerArgs holding the parsed values (its generated dataclass repr;
        __post_init__ is not run: it probes the hardware and the model), or from 0.5.20 its
        resolved_dict() where that runs here. An argv the parser refuses: its error output."""
        self.captured = None
        answer = self.run(entry, argv)
        if answer.get("outcome") == "dies":
            return {"outcome": "dies", "lines": [answer.get("error", "")]}
        ns = self.captured
        if ns is None:
            return {"outcome": answer.get("outcome"), "lines": []}
        lines = []
        if self.engine == "vllm":
            import logging
            import importlib
            entry_utils, log = None, None
            # wherever the release defines it (vllm/entrypoints/openai/cli_args.py, utils.py,
            # serve/utils/api_utils.py, common/startup.py, ...): found in its code, not listed
            for where in self._modules_defining("vllm", "def log_non_default_args("):
                try:
                    entry_utils = importlib.import_module(where)
                except Exception:  # noqa: BLE001
                    continue
                log = getattr(entry_utils, "log_non_default_args", None)
                if log is not None:
                    break
            if log is not None:
                records = []

                class Keep(logging.Handler):
                    def emit(self, record):
                        records.append(record.getMessage())
                handler = Keep()
                logger = getattr(entry_utils, "logger", None) or logging.getLogger(entry_utils.__name__)
                logger = getattr(logger, "logger", logger)      # a LoggerAdapter's logger
                was = (logging.root.manager.disable, logger.disabled, logger.level)
                logging.disable(logging.NOTSET)
                logger.disabled = False
                logger.addHandler(handler)
                logger.setLevel(logging.INFO)
                try:
                    log(ns)
                finally:
                    logger.removeHandler(handler)
                    logging.disable(was[0])
                    logger.disabled, logger.level = was[1], was[2]
                lines += records
        else:
            import dataclasses
            from sglang.srt import server_args as sa
            if not dataclasses.is_dataclass(sa.ServerArgs):
                # from 0.5.20 a sealed class whose resolved_dict() needs its resolution (hardware,
                # model): no line is produced here (tests type that format, citing engine.py)
                return {"outcome": answer.get("outcome"), "value": answer.get("value"), "lines": []}
            obj = object.__new__(sa.ServerArgs)
            for f in dataclasses.fields(sa.ServerArgs):
                if hasattr(ns, f.name):
                    value = getattr(ns, f.name)
                elif f.default is not dataclasses.MISSING:
                    value = f.default
                elif f.default_factory is not dataclasses.MISSING:
                    value = f.default_factory()
                else:
                    value = None
                object.__setattr__(obj, f.name, value)
            server_args = obj
            lines.append(f"{server_args=}")
        return {"outcome": answer.get("outcome"), "value": answer.get("value"), "lines": lines}

    def prepared(self, entry, argv):
        """{"outcome": ..., "handed": the argv the entry point's parser hands to argparse after
        its own preparation (without the subcommand word), or null: it died before}."""
        answer = self.run(entry, argv)
        handed = self.handed
        if handed is not None and entry == "serve" and handed[:1] == ["serve"]:
            handed = handed[1:]
        return {"outcome": answer.get("outcome"), "handed": handed, "error": answer.get("error")}

    def describe(self, entry):
        """The option table of the parser that reads --kv-cache-dtype at this entry point:
        {"options": {name: arity}, "positionals": [arity...], "choices": [...] | None,
         "validator": [...] | None}. Arity: "0" (takes no value), "1" (exactly one), "?", "*",
        "+", an int, "A..." (a sub-parser) or "..." (the rest)."""
        self.parsers.clear()
        argv = {"serve": ["m"], "api_server": ["--model", "m"], "launch_server": ["--model-path", "m"],
                "sglang_serve": ["--model-path", "m"]}[entry]
        result = self.run(entry, argv)
        if result.get("outcome") == "absent":
            return None
        if not self.parsers:
            return {"error": f"no parser reads --kv-cache-dtype: {result}"}
        parser = self.parsers[-1]
        real = getattr(self, "real_table", None)
        if real is not None and real[0] == entry and real[1] != sorted(parser._option_string_actions):
            return {"error": f"the memoized parser's option strings differ from the real one's: "
                             f"{sorted(set(real[1]) ^ set(parser._option_string_actions))[:10]}"}
        start_up_reads = sorted(self.reads.reads)
        options, positionals, choices, required, option_choices = {}, [], None, [], {}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            arity = "1" if action.nargs is None else str(action.nargs)
            if not action.option_strings:
                positionals.append(arity)
                continue
            names = fuzz_types.registered_strings(parser, action)
            for name in names:
                options[name] = arity
            if action.required:
                required.append("/".join(action.option_strings))
            if "--kv-cache-dtype" in action.option_strings and action.choices is not None:
                choices = sorted(str(c) for c in action.choices)
            elif action.choices is not None and fuzz_types.choices_as_strings(action):
                # string choices. Those of the --kv options are fixed; other options' may depend on
                # what is installed (vLLM's guided-decoding backends): the model refuses a value only
                # for --kv options and answers UNKNOWN for a value outside another option's list
                try:
                    for name in names:
                        option_choices[name] = sorted(str(c) for c in action.choices)
                except TypeError:
                    pass
        validator = None
        fixed = self.fixed_choices(parser, option_choices)
        if choices is None and self.engine == "vllm" and self.exists("vllm/config/cache.py"):
            from vllm.config import cache
            known = getattr(cache, "KV_CACHE_DTYPES", None)
            if known is None:
                import typing
                known = typing.get_args(cache.CacheDType)
            validator = sorted(str(v) for v in known)
        return {"options": dict(sorted(options.items())), "positionals": positionals, "choices": choices,
                "validator": validator, "allow_abbrev": parser.allow_abbrev, "required": sorted(required),
                "option_choices": dict(sorted(option_choices.items())), "fixed_choices": fixed,
                "plugin_groups": sorted(self.entry_point_groups),
                "actions": fuzz_types.describe_actions(parser), **self._start_up(entry, argv, start_up_reads)}

    def fixed_choices(self, parser, option_choices):
        """{option: the registry its choices were read from}: the options whose string choices
        are exactly the names registered in the release's own parser registry for their dest
        (startup_probe: vLLM's ReasoningParserManager/ToolParserManager, SGLang's DetectorMap/
        ToolCallParserEnum) in a process where no plugin group of the engine's own was looked up
        (vllm@0.9.0/vllm/engine/arg_utils.py AsyncEngineArgs.add_cli_args loads vllm.general_plugins
        first, "the plugin may [add] a new kind of ... to the parser"; SGLang from 0.5.12 loads
        sglang.srt.plugins before the parse). What the release's own modules register is fixed
        in its code: a value outside it is refused."""
        if any(g == "*" or g.split(".")[0] == self.engine for g in self.entry_point_groups):
            return {}
        out = {}
        for action in parser._actions:
            names = [n for n in action.option_strings if n in option_choices]
            if not names:
                continue
            if self.engine == "vllm":
                manager = startup_probe.REGISTRIES.get(action.dest)
                names_of = startup_probe.registry(manager) if manager else None
                source = manager
            else:
                names_of = startup_probe.sglang_registry(action.dest)
                source = ".".join(startup_probe.SGLANG_REGISTRIES.get(action.dest, ()))
            if names_of and sorted(set(names_of)) == sorted(set(option_choices[names[0]])):
                for name in names:
                    out[name] = source
            elif self.engine == "vllm":
                literal = self.literal_choices(action)
                if literal is not None:
                    for name in names:
                        out[name] = literal
        return out

    def literal_choices(self, action):
        """"literal <expression>" where the action takes its value as given (no converting
        `type=`) and every add_argument call of the release's parser-building
        modules (ADDERS) that names one of the action's option strings gives `choices=` as a list,
        tuple or set of string constants, or get_args(<a typing.Literal of its module>), equal to
        the parser's choices (vllm@0.6.5/vllm/engine/arg_utils.py: `choices=get_args(TaskOption)`);
        else None. Only asked where no plugin group of the engine's own was looked up."""
        import importlib
        import typing
        if action.type not in (None, str):
            return None   # the choices are checked on the converted value (type=str.lower, ...)
        found = []
        for module_name in dict.fromkeys(m for m, _, _ in self.ADDERS[self.engine]):
            try:
                module = importlib.import_module(module_name)
                tree = _module_tree(module)
            except Exception:  # noqa: BLE001 - not in this release
                continue
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "add_argument"):
                    continue
                strings = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if not set(strings) & set(action.option_strings):
                    continue
                expr = next((k.value for k in node.keywords if k.arg == "choices"), None)
                if expr is None:
                    return None
                if isinstance(expr, (ast.List, ast.Tuple, ast.Set)) and all(
                        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in expr.elts):
                    values = [e.value for e in expr.elts]
                elif (isinstance(expr, ast.Call) and ast.unparse(expr.func) in ("get_args", "typing.get_args")
                      and len(expr.args) == 1 and isinstance(expr.args[0], ast.Name)):
                    alias = vars(module).get(expr.args[0].id)
                    if typing.get_origin(alias) is not typing.Literal:
                        return None
                    values = list(typing.get_args(alias))
                    if not all(isinstance(v, str) for v in values):
                        return None
                else:
                    return None
                found.append((values, ast.unparse(expr)))
        if not found or any(sorted(set(v)) != sorted(set(map(str, action.choices))) for v, _ in found):
            return None
        return "literal " + found[0][1]

    def _start_up(self, entry, model_argv, reads):
        def run(argv):
            answer = self.run(entry, argv)
            return answer, sorted(self.reads.reads)
        parser = self.parsers[-1]
        read, solo = fuzz_types.start_up_probes(run, parser, model_argv, reads)
        values = fuzz_types.start_up_values(run, parser, model_argv, read) if not self.check_roots(entry) else {}
        return {"start_up_reads": read, "start_up_alone": solo, "start_up_values": values}


def _post_parse_check(module, code):
    """validate_parsed_serve_args when the api_server's main path calls it right after parsing
    (its __main__ block, or the `main` that block imports), else None."""
    import inspect
    blocks = [node for node in ast.parse(inspect.getsource(module)).body
              if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)]
    if not blocks:
        return None
    if "validate_parsed_serve_args(" in ast.unparse(blocks[0]):
        return vars(module).get("validate_parsed_serve_args")
    for node in ast.walk(blocks[0]):
        if isinstance(node, ast.ImportFrom) and any(a.name == "main" for a in node.names):
            main = __import__(node.module, fromlist=["main"]).main
            source = inspect.getsource(main)
            if "validate_parsed_serve_args(" not in source:
                return None
            found = main.__globals__.get("validate_parsed_serve_args")
            for inner in ast.walk(ast.parse(source.lstrip())):
                if found is None and isinstance(inner, ast.ImportFrom) and any(
                        a.name == "validate_parsed_serve_args" for a in inner.names):
                    import importlib
                    package = main.__module__.rsplit(".", 1)[0]
                    name = "." * inner.level + (inner.module or "")
                    found = importlib.import_module(name, package if inner.level else None).validate_parsed_serve_args
            return found
    return None


def _module_tree(module):
    cache = _module_tree.__dict__.setdefault("cache", {})
    if module.__name__ not in cache:
        with open(module.__file__, encoding="utf-8") as f:
            cache[module.__name__] = ast.parse(f.read())
    return cache[module.__name__]


def _inline_checks(run_server):
    """The checks vLLM's run_server runs on the parsed argv before it binds the port, as one
    function, or None (also used for vllm.scripts' serve(), whose first statement is a check): before 0.10 (vllm@0.9.0/vllm/entrypoints/openai/api_server.py run_server)
    the tool-call and reasoning parser names are checked there against their registries, the
    statements 0.10 moved into validate_api_server_args. Taken from run_server's source: from its
    first statement, the `if ...: raise` statements and the assignments of names that read no
    argv, past the logging calls and the --tool-parser-plugin import (_api_server_checks does not
    run with a plugin); up to the first other statement (the socket bind). Compiled in
    run_server's module namespace, its source in linecache (startup_probe reads the groups)."""
    import inspect
    import linecache
    import textwrap
    try:
        fn = inspect.unwrap(run_server)
        node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.args.args:
        return None
    param = node.args.args[0].arg

    def reads_argv(stmt):
        return any(isinstance(n, ast.Name) and n.id == param for n in ast.walk(stmt))

    kept = []
    for stmt in node.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue   # docstring
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and "log" in ast.unparse(stmt.value.func):
            continue   # logger.info("args: %s", args), log_non_default_args(args)
        if isinstance(stmt, ast.If) and not stmt.orelse and all(isinstance(b, ast.Raise) for b in stmt.body):
            kept.append(stmt)
            continue
        if isinstance(stmt, ast.If) and "_plugin" in ast.unparse(stmt.test) and not any(
                isinstance(n, ast.Raise) for n in ast.walk(stmt)):
            continue   # `if args.tool_parser_plugin ...: ToolParserManager.import_tool_parser(...)`
        if isinstance(stmt, ast.Assign) and not reads_argv(stmt):
            kept.append(stmt)
            continue
        break
    if not any(isinstance(s, ast.If) for s in kept):
        return None
    fields = {"type_params": []} if "type_params" in ast.FunctionDef._fields else {}
    checks = ast.FunctionDef(name="run_server_checks", args=ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=param)], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=kept, decorator_list=[], returns=None, **fields)
    source = ast.unparse(ast.fix_missing_locations(ast.Module(body=[checks], type_ignores=[]))) + "\n"
    filename = f"<run_server checks of {fn.__code__.co_filename}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = fn.__globals__
    code = compile(source, filename, "exec")
    scope = {}
    exec(code, namespace, scope)
    return scope["run_server_checks"]


def _memoized(func, is_classmethod):
    recorded = {}

    def adder(*args, **kwargs):
        position = 1 if is_classmethod else 0
        if len(args) <= position or not isinstance(args[position], argparse.ArgumentParser):
            return func(*args, **kwargs)   # builds its own parser (old make_arg_parser()): not memoized
        parser = args[position]
        key = args[0] if is_classmethod else None
        if key in recorded and not kwargs and len(args) == (2 if is_classmethod else 1):
            actions, groups, defaults = recorded[key]
            for action, registered in actions:
                # registered as the real add_argument did it: every option string it put in the
                # parser's table, which can be more than the action keeps (vllm@0.33
                # vllm/utils/argparse_utils.py:_register_action hides --no-enable-x and the like)
                kept, action.option_strings = action.option_strings, registered
                try:
                    parser._add_action(action)
                finally:
                    action.option_strings = kept
            parser._mutually_exclusive_groups.extend(groups)
            parser._defaults.update(defaults)
            return parser
        n_actions, n_groups = len(parser._actions), len(parser._mutually_exclusive_groups)
        defaults = dict(parser._defaults)
        result = func(*args, **kwargs)
        if result is parser or result is None:
            added = parser._actions[n_actions:]
            recorded[key] = ([(a, fuzz_types.registered_strings(parser, a)) for a in added],
                             parser._mutually_exclusive_groups[n_groups:],
                             {k: v for k, v in parser._defaults.items() if defaults.get(k, object()) is not v})
        return result

    adder.__memoized__ = True
    return adder


def _last_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "error:" in ln:
            return ln.strip()[:300]
    return lines[-1].strip()[:300] if lines else ""


def main():
    engine, version, root = sys.argv[1:4]
    real_stdout = sys.stdout
    oracle = Oracle(engine, version, root)
    out = os.fdopen(os.dup(real_stdout.fileno()), "w", buffering=1)
    out.write(json.dumps({"ready": True, "python": sys.version.split()[0]}) + "\n")
    cwd = os.getcwd()
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if "describe" in req:
                res = oracle.describe(req["describe"])
            elif "words" in req:
                res = oracle.words(req["words"], req["argv"])
            elif "prepared" in req:
                res = oracle.prepared(req["prepared"], req["argv"])
            elif "combos" in req:
                res = oracle.combos(req["combos"])
            elif "schemas" in req:
                res = oracle.schemas(req["schemas"])
            elif "tolerated" in req:
                res = {"tolerated": oracle.tolerant.tolerated,
                       "standins": sorted(n for n in oracle.standins.served if "." not in n)}
            else:
                os.chdir(req.get("cwd") or cwd)
                res = oracle.run(req["entry"], req["argv"])
        except Exception as exc:  # noqa: BLE001 - the harness itself failed: say so
            res = {"outcome": "harness-error", "error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc()[-3000:]}
        out.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    main()
