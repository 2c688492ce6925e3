"""`version`: the plugin's version, as --version prints it."""

from kubectl_kvcache import __version__
from kubectl_kvcache.cli import flags

NAME = "version"
ENGINE_DATA = None          # judges nothing: --engine-data is not read
HELP = dict(help="print the plugin version", description="Print the plugin version (as --version does).",
            examples=("version",))


def add(sub, commands):
    commands[(NAME, None)] = flags.command(sub, NAME, HELP["help"], HELP["description"], HELP["examples"])


def options(ns):
    return None


def run(options, io) -> int:
    from kubectl_kvcache import exitcodes, render

    render.line(io.stdout, f"kubectl-kvcache {__version__}")
    return exitcodes.OK
