"""The command line, the only layer that sees argparse: the registry and the run (app), the
flags every command shares (flags, connection_flags), one module per command (commands/), what
each command does once its options are known (flows/), and shell completion (completion)."""

from kubectl_kvcache.cli.app import (COMMANDS, PROG, build_parser, command_line, complete,  # noqa: F401
                                     completion_spec, main, options_for, run, run_complete)
from kubectl_kvcache.cli.connection_flags import connection  # noqa: F401
