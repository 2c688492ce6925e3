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

            def record(args, *rest):
                raise Captured(args)
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
        self.reads.on = False
        self.reads.reads.clear()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                fn()
        except Captured as cap:
            self.reads.on = False
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
        if value is not None and not isinstance(value, str):
            value = json.dumps(value, sort_keys=True)
        return {"outcome": "ok", "value": value}

    def run(self, entry, argv):
        if not getattr(self, "_memoized", False):
            self._memoized = True
            try:
                self.run(entry, argv)  # first run: imports everything, then memoize
            finally:
                self._memoize_adders()
        fn = {"serve": self.run_vllm_serve, "api_server": self.run_vllm_api_server,
              "launch_server": self.run_sglang_launch_server, "sglang_serve": self.run_sglang_serve}[entry]
        result = fn(list(argv))
        return {"outcome": "absent"} if result is None else result

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
        start_up_reads = sorted(self.reads.reads)
        options, positionals, choices, required, option_choices = {}, [], None, [], {}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            arity = "1" if action.nargs is None else str(action.nargs)
            if not action.option_strings:
                positionals.append(arity)
                continue
            for name in action.option_strings:
                options[name] = arity
            if action.required:
                required.append("/".join(action.option_strings))
            if "--kv-cache-dtype" in action.option_strings and action.choices is not None:
                choices = sorted(str(c) for c in action.choices)
            elif (action.choices is not None and action.type in (None, str)
                  and all(isinstance(c, str) and " " not in c for c in action.choices)):
                # string choices. Those of the --kv options are fixed; other options' may depend on
                # what is installed (vLLM's guided-decoding backends): the model refuses a value only
                # for --kv options and answers UNKNOWN for a value outside another option's list
                try:
                    for name in action.option_strings:
                        option_choices[name] = sorted(str(c) for c in action.choices)
                except TypeError:
                    pass
        validator = None
        if choices is None and self.engine == "vllm" and self.exists("vllm/config/cache.py"):
            from vllm.config import cache
            known = getattr(cache, "KV_CACHE_DTYPES", None)
            if known is None:
                import typing
                known = typing.get_args(cache.CacheDType)
            validator = sorted(str(v) for v in known)
        return {"options": dict(sorted(options.items())), "positionals": positionals, "choices": choices,
                "validator": validator, "allow_abbrev": parser.allow_abbrev, "required": sorted(required),
                "option_choices": dict(sorted(option_choices.items())),
                "actions": fuzz_types.describe_actions(parser), **self._start_up(entry, argv, start_up_reads)}

    def _start_up(self, entry, model_argv, reads):
        def run(argv):
            answer = self.run(entry, argv)
            return answer, sorted(self.reads.reads)
        parser = self.parsers[-1]
        read, solo = fuzz_types.start_up_probes(run, parser, model_argv, reads)
        return {"start_up_reads": read, "start_up_alone": solo}


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
            for action in actions:
                parser._add_action(action)
            parser._mutually_exclusive_groups.extend(groups)
            parser._defaults.update(defaults)
            return parser
        n_actions, n_groups = len(parser._actions), len(parser._mutually_exclusive_groups)
        defaults = dict(parser._defaults)
        result = func(*args, **kwargs)
        if result is parser or result is None:
            recorded[key] = (parser._actions[n_actions:], parser._mutually_exclusive_groups[n_groups:],
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
