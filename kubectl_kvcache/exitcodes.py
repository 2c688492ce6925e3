"""The exit-code contract, defined once (README "Exit codes"; docs/input.md "Exit codes in full").

0: all good. 1: findings (something is not OK; for check, an error finding, or a warning with
--strict). 2: the plugin could not do its job (bad flags or input, the API refused or was
unreachable): one `error:` line on stderr. 130: interrupted (Ctrl-C).
"""

OK, FINDINGS, ERROR, INTERRUPTED = 0, 1, 2, 130
