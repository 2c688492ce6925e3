"""The command line: flags to options, options to the command, outcome to an exit code. No
judgement lives here.

kubectl's Complete -> Validate -> Run: argparse reads the flags, the command's module (COMMANDS,
cli/commands/) turns them into frozen options once (validating them: nothing below cli/ sees
argparse), and its run() runs the command. Only the named command's module is imported to
parse, and its flow (cli/flows/) only to run, so `--help` and `version` stay fast and the
connection starts before the command's modules load (connect_ahead).
"""

import argparse
import contextlib
import importlib
import os
import re
import sys

from kubectl_kvcache import __version__, exitcodes
from kubectl_kvcache.cli.flags import PROG, HelpFormatter
from kubectl_kvcache.errors import AlreadyDone, PluginError

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = exitcodes.OK, exitcodes.FINDINGS, exitcodes.ERROR

# The registry: one line per command, in the order `--help` lists them (cli/commands/<name>.py).
COMMANDS = ("verify", "check", "bindings", "roles", "setting", "recover", "engines", "admission", "completion",
            "version")

DESCRIPTION = """\
What --kv-cache-dtype every vLLM and SGLang engine of the GPUStack Operator will really run
with, judged against its KVCachePoolBinding, before and after the upgrade that makes the
Binding's dtype the engine's argument.
"""

EPILOG = f"""\
Examples:
  # what every engine replica runs with, in every namespace
  {PROG} verify -A

  # everything the upgrade will break, with the fix for each finding
  {PROG} check -A -o wide

  # the same on saved objects (kubectl get -o json output), no cluster needed
  {PROG} check -A -f saved.json

Exit codes: 0 all good, 1 findings (something is not OK), 2 the plugin could not do its job.

Use "{PROG} COMMAND --help" for more about a command.
"""


# A command module's ENGINE_DATA: the engine releases --engine-data adds are loaded and each is
# noted on stderr (NOTED, the default), loaded and not noted (QUIET: the command lists their
# sources itself), or not loaded (None: the command judges nothing).
NOTED, QUIET = "noted", "quiet"


def command_module(name):
    """cli/commands/<name>.py: its help, flags, options and run."""
    return importlib.import_module(f"kubectl_kvcache.cli.commands.{name}")


_INVALID_CHOICE = re.compile(r"argument (\S+?): invalid choice: '(.*)' \(choose from (.*)\)$", re.S)
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2, like kubectl, pointing at
    the help of the (sub)command that was being parsed. No abbreviated long flags (pflag has none)."""

    _commands: dict         # the root's: (command, subcommand) -> its parser (build_parser)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        from kubectl_kvcache.cli import suggest

        hint = ""
        if "ignored explicit argument" in message:      # `-AVALUE`: the value may be anything typed
            message = message.partition(": ignored explicit argument")[0] + ": takes no value"
        elif message.startswith("unrecognized arguments: "):
            self.unknown(message[len("unrecognized arguments: "):].split())
        else:
            choice = _INVALID_CHOICE.match(message)
            if choice and choice.group(1) in ("COMMAND", "ACTION"):    # a (sub)command: cobra's words
                typed, choices = choice.group(2), _QUOTED.findall(choice.group(3))
                message = f'unknown {"command" if choice.group(1) == "COMMAND" else "action"} "{typed}" for ' \
                          f'"{self.prog}"'
                hint = suggest.text(suggest.suggestions(typed, choices))
        self._fail(message, hint)

    def _fail(self, message, hint=""):
        from kubectl_kvcache.errors import without_secrets
        from kubectl_kvcache.render.core import escape   # the message may quote an argument

        self.exit(EXIT_ERROR, f"error: {escape(without_secrets(message))}{without_secrets(hint)}\n"
                              f"See '{self.prog} --help' for usage.\n")

    def unknown(self, extra):
        """Words no flag or argument took, as pflag reports them: the first unknown flag by its
        name only (`--toke=S3CRET` is `unknown flag: --toke`; pflag also stops there), with cobra's
        "Did you mean" for a long flag, else the first word left over. A value typed after an
        unknown flag is never echoed."""
        from kubectl_kvcache.cli import suggest

        for word in extra:
            if word.startswith("--"):
                name = word.partition("=")[0]
                glued = next((f for f in SECRET_FLAGS if name.startswith(f)), None)
                if glued:       # `--tokenS3CRET`: the rest of the name may be the value
                    self._fail(f"unknown flag: {glued}... (a flag that starts with {glued}; its value goes "
                               f"after {glued}= or a space)")
                self._fail(f"unknown flag: {name}",
                           suggest.text(suggest.flag_suggestions(name, self._option_string_actions)))
            if word.startswith("-") and len(word) > 1:
                self._fail(f"unknown shorthand flag: {word[1]!r} in -{word[1]}")
        self._fail(f"unexpected argument: {extra[0]}")

    def parse_known_args(self, args=None, namespace=None):
        return super().parse_known_args(self._as_pflag(sys.argv[1:] if args is None else list(args)), namespace)

    def _as_pflag(self, args):
        """The command line as pflag (kubectl's flag parser) reads it, put in argparse's terms: a
        bool flag takes `--flag=VALUE` (strconv.ParseBool's spellings; the last occurrence wins:
        spf13/pflag bool.go, flag.go parseLongArg), and a flag that takes a value takes the next
        word even when it starts with `-` (`--token -x`: flag.go parseLongArg/parseSingleShortArg).
        Only this parser's own flags are rewritten; a subcommand's parser rewrites its own."""
        from kubectl_kvcache.errors import secret

        flags = self._option_string_actions
        # a parser with subcommands knows the flags before its subcommand's word; the words after
        # it are the subcommand's, which checks them itself
        checking, leaf = True, self._subparsers is None
        out, i = [], 0
        while i < len(args):
            word = args[i]
            if word == "--":
                out += args[i:]
                break
            name, eq, value = word.partition("=")
            if name in SECRET_FLAGS:            # the value is a secret, however it is written
                secret(value if eq else (args[i + 1] if i + 1 < len(args) else ""))
            if checking and word.startswith("-") and len(word) > 1 and name not in flags \
                    and word[:2] not in flags and not _negative_number(word):
                # pflag stops at the first unknown flag, before anything after it is taken for an
                # argument (a value typed after a typo would be): named alone, never its value
                self.unknown([word])
            if checking and not leaf and not word.startswith("-"):
                checking = False                # the subcommand's word
            if word in flags and flags[word].nargs is None and not eq and i + 1 < len(args) \
                    and not args[i + 1].startswith("-"):
                out += [word, args[i + 1]]      # the flag's value: never a flag, nor the subcommand
                i += 2
                continue
            action = flags.get(name) if word.startswith("--") else None
            if action is not None and action.nargs == 0 and eq and isinstance(action, argparse._StoreTrueAction):
                from kubectl_kvcache.judge.setting import parse_bool     # Go's strconv.ParseBool

                truth = parse_bool(value)
                if truth is None:
                    self.error(f'invalid argument "{value}" for "{name}" flag: strconv.ParseBool: parsing '
                               f'"{value}": invalid syntax')
                names = set(action.option_strings)
                out = [w for w in out if w not in names]       # the last occurrence wins
                if truth:
                    out.append(name)
            elif (word in flags and flags[word].nargs is None and i + 1 < len(args)
                  and args[i + 1].startswith("-") and args[i + 1] != "--"):   # pflag would take even "--";
                # argparse drops a "--" value (3.11 _get_values), so `--token --` stays a usage error
                out.append(f"{word}={args[i + 1]}" if word.startswith("--") else word + args[i + 1])
                i += 1
            else:
                out.append(word)
            i += 1
        return out

    def parse_args(self, args=None, namespace=None):
        ns, extra = self.parse_known_args(args, namespace)
        if extra:   # argparse reports these from the top parser: report them from the subcommand's
            commands = getattr(self, "_commands", {})
            target = commands.get((getattr(ns, "command", None), getattr(ns, "action", None))) \
                or commands.get((getattr(ns, "command", None), None)) or self
            target.unknown(extra)
        return ns


SECRET_FLAGS = ("--token", "--password")


def _negative_number(word) -> bool:
    try:
        float(word)
        return True
    except ValueError:
        return False


def build_parser(only=None):
    """The command tree; `only`: just that command's branch. A command line that names its command
    first parses nothing else, and building every branch costs ~10 ms of every start."""
    parser = _Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=f"kubectl-kvcache {__version__}")
    sub = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND", parser_class=_Parser)
    commands: dict = {}
    for name in COMMANDS:
        if only is None or name == only:
            command_module(name).add(sub, commands)
    parser._commands = commands
    return parser


def options_for(ns):
    """The parsed command line's validated options (its command module's Complete and Validate)."""
    return command_module(ns.command).options(ns)


def named_command(args):
    """The command a command line starts with, when it is one (build_parser(only=...))."""
    return args[0] if args and args[0] in COMMANDS else None


def completion_spec(parser=None):
    """The command tree as plain data for completion (nothing below cli/ sees argparse)."""
    from kubectl_kvcache.cli.completion import spec_of

    return spec_of(parser or build_parser())


def run(entry=None):
    """The executables' entry point (console scripts, bin/, the binary, `python -m`): the command
    line (or `entry`), then out. Output is flushed here; when nothing is registered to run at exit
    and no other non-daemon thread runs, the interpreter's teardown (freeing every module and
    object, ~8 ms of a 100-Pod verify) is skipped, as a compiled CLI ends. Otherwise (the
    kubernetes client's temporary files, say) the normal exit runs it."""
    import atexit
    import threading

    try:
        code = (entry or command_line)()
    except KeyboardInterrupt:       # before main() could catch it (imports, completion): as main() says it
        from kubectl_kvcache import render

        render.error(sys.stderr, "interrupted")
        code = exitcodes.INTERRUPTED
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:     # the reader went away: as main() treats it, and no second report
        code = code or exitcodes.BROKEN_PIPE
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    pending = getattr(atexit, "_ncallbacks", lambda: 1)()
    others = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    if not pending and not others:
        os._exit(code or 0)
    sys.exit(code)


def command_line():
    """A real command line: sys.argv, the process's streams, and the connection started ahead."""
    return main(sys.argv[1:], connect_ahead=True)


def run_complete():
    """The `kubectl_complete-kvcache` executable's entry point: complete() through run()."""
    run(complete)


def complete(argv=None):
    """The `kubectl_complete-kvcache` executable: kubectl (1.26+) runs it with the words typed
    after `kubectl kvcache`, the last one being completed."""
    return main(["__complete"] + completion_words(sys.argv[1:] if argv is None else argv))


def completion_words(words):
    from kubectl_kvcache.cli.completion import strip_protocol

    return strip_protocol(words)


def _tracer(err):
    """render.tracer(err), with render imported only when a request is traced (KVCACHE_TRACE)."""
    def trace(text):
        from kubectl_kvcache import render

        render.tracer(err)(text)
    return trace


def connect_early(module, options, stderr):
    """Connect, and read what the command reads first (its prefetch), while the command's modules
    (render included) load. Only with a cluster: -f reads files."""
    first = module.prefetch(options) if hasattr(module, "prefetch") else None
    connection = getattr(options, "connection", None)
    if connection is None or getattr(getattr(options, "scope", None), "files", None):
        return
    from kubectl_kvcache.load import reader

    reader.warm(connection, _tracer(stderr), first)


def main(argv=None, stdin=None, stdout=None, stderr=None, connect_ahead=False):
    """Run one command line (argv None: sys.argv). `connect_ahead`: start connecting (and load the
    command's first snapshot) before the command's modules import, as the executables do
    (command_line); tests that pass their own argv leave it off unless they test it."""
    from kubectl_kvcache.cli.flows import IO
    from kubectl_kvcache.errors import forget_secrets

    forget_secrets()
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    io = IO(stdin=stdin, stdout=stdout, stderr=stderr)
    args = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(None if args[:1] == ["__complete"] else named_command(args))
    if args and args[0] == "__complete":     # cobra's hidden command: the shell scripts and kubectl ask it
        from kubectl_kvcache.cli.flows import completion as complete_command

        try:
            return complete_command.complete(completion_spec(parser), args[1:], io)
        except BrokenPipeError:
            return exitcodes.BROKEN_PIPE
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            ns = parser.parse_args(args)
    except SystemExit as exc:  # argparse exits for --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    if ns.command is None:
        parser.print_help(stdout)
        return EXIT_OK
    ns.argv = args      # the command line as typed: the document formats print it (flags.command_line)
    options = None
    try:
        module = command_module(ns.command)
        engine_data = getattr(module, "ENGINE_DATA", NOTED)
        if engine_data is not None:        # added engine releases, before anything is judged
            from kubectl_kvcache.cli.flags import load_engine_data

            added = load_engine_data(ns)
            if engine_data == NOTED:       # else the command says each release's source itself
                from kubectl_kvcache import render

                for text in added:
                    render.note(stderr, text)
        options = module.options(ns)       # Complete and Validate, before anything is sent
        if connect_ahead:
            connect_early(module, options, stderr)
        return module.run(options, io)
    except AlreadyDone as exc:
        from kubectl_kvcache import render

        render.line(stdout, str(exc))
        return EXIT_OK
    except PluginError as exc:
        from kubectl_kvcache import render

        render.error(stderr, str(exc))
        output = getattr(options, "output", None)
        if output is not None:       # -o markdown|junit: the document says the run failed (not a 0-byte file)
            from kubectl_kvcache.render.report import Subject

            with contextlib.suppress(BrokenPipeError):
                render.failed_document(ns.command, str(exc), output.replace(subject=Subject(output.command)), stdout)
        return EXIT_ERROR
    except KeyboardInterrupt:
        from kubectl_kvcache import render

        render.error(stderr, "interrupted")
        return exitcodes.INTERRUPTED
    except BrokenPipeError:     # `| head`: quiet, the code a shell gives kubectl killed by SIGPIPE
        return exitcodes.BROKEN_PIPE
    except Exception as exc:  # a bug: still one line, unless asked for the traceback
        if os.environ.get("KVCACHE_DEBUG"):
            raise
        from kubectl_kvcache import render

        render.error(stderr, f"internal error: {exc.__class__.__name__}: {exc} (set KVCACHE_DEBUG=1 for the "
                             f"traceback; please report it)")
        return EXIT_ERROR
