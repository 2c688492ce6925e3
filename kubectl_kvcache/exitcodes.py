"""The exit-code contract, defined once (README "Exit codes"; docs/input.md "Exit codes in full").

0: all good. 1: findings (something is not OK; for check, an error finding, or a warning with
--strict). 2: the plugin could not do its job (bad flags or input, the API refused or was
unreachable): one `error:` line on stderr. 130: interrupted (Ctrl-C). 141: the reader of stdout
went away (`| head`): quiet, as a shell reports kubectl killed by SIGPIPE (128 + 13).
"""

OK, FINDINGS, ERROR, INTERRUPTED, BROKEN_PIPE = 0, 1, 2, 130, 141


def worst(codes) -> int:
    """The exit code of several contexts' runs (--contexts/--all-contexts): the worst of theirs,
    2 over 1 over 0; none: 0."""
    return max(codes, default=OK)
