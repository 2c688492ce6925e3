"""`engines`: the engine releases the plugin knows (built in and added from engine data files)
and the --kv-cache-dtype spellings each one accepts. Reads no cluster."""

from __future__ import annotations

from kubectl_kvcache.cli import flags
from kubectl_kvcache.record import Record

NAME = "engines"
ENGINE_DATA = "quiet"       # lists each release's source itself (cli/app.py)
HELP = dict(
    help="the engine releases the plugin knows and the --kv-cache-dtype spellings each accepts",
    description="Every vLLM and SGLang release whose parser the plugin's engine data holds, built in or "
                "added (--engine-data FILE, $KVCACHE_ENGINE_DATA, ~/.local/share/kubectl-kvcache/engines/), "
                "with the exact, case-sensitive --kv-cache-dtype values it accepts. A release between two "
                "listed ones is judged as the earlier one; a release after the last one is judged as the "
                "last one, and verify and check say so.",
    examples=("engines", "engines --engine vllm -o json", "engines --engine-data vllm-0.34.0.json"))


class EnginesOptions(Record):
    __slots__ = ("engine", "format")

    def __init__(self, engine: str | None, format: str):
        self.engine = engine    # vllm | sglang | None: both
        self.format = format    # table | json | yaml


def add(sub, commands):
    p = commands[(NAME, None)] = flags.command(sub, NAME, HELP["help"], HELP["description"], HELP["examples"])
    p.add_argument("--engine", choices=("vllm", "sglang"), help="only this engine's releases")
    flags.output_flag(p, NAME, text=True)
    flags.engine_data_flag(p)


def options(ns):
    return EnginesOptions(ns.engine, ns.output)


def releases(options):
    """The listing as data: one row per known release, oldest first, vLLM then SGLang."""
    from kubectl_kvcache import engine

    rows = []
    for name in engine.ENGINES:
        if options.engine not in (None, name):
            continue
        for release, source in engine.known_releases(name):
            prof = engine.profile(name, engine.parse_version(release))
            rows.append({"engine": name, "release": release, "source": source or "built-in",
                         "kvCacheDtypes": sorted(prof.accepted) if prof.has_flag else []})
    return rows


def run(options, io) -> int:
    from kubectl_kvcache import exitcodes, render

    rows = releases(options)
    if options.format != "table":
        render.structured({"kind": "EngineReleases", "items": rows}, options.format, io.stdout)
        return exitcodes.OK
    render.table(["engine", "release", "source", "kv-cache-dtype"],
                 [[r["engine"], r["release"], r["source"], ",".join(r["kvCacheDtypes"])] for r in rows],
                 io.stdout, text=(3,))     # the comma-joined list is whole, last, as kubectl's free text
    return exitcodes.OK
