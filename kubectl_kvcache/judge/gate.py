"""The one gate before the Setting is turned on: `setting on` and recover's last step both ask it.

Pure: check's report (judged with the Setting as it is before, off) in, the answer out: which
errors turning the Setting on causes now, each with its fix (a rejected Binding's fix is its
`kubectl kvcache recover` command), and which errors exist with the Setting off too (a
deployment naming a missing Binding, a claimed domain, a take-over role's own command): turning
it on does not change those, so they do not hold it back. Which code is which is the registry's
(checks.CODES, `with_setting_on`).
"""

from __future__ import annotations

from kubectl_kvcache.judge.checks import CODES, ERROR
from kubectl_kvcache.record import Record


class Gate(Record):
    __slots__ = ("caused", "unchanged", "summary")
    __hash__ = None

    def __init__(self, caused: list, unchanged: list, summary: dict):
        self.caused = caused            # error findings the Setting on causes
        self.unchanged = unchanged      # error findings that exist with it off too
        self.summary = summary          # the report's counts per severity

    @property
    def passes(self) -> bool:
        return not self.caused


def gate(report) -> Gate:
    errors = [f for f in report.findings if f.severity == ERROR]
    caused = [f for f in errors if CODES[f.code].with_setting_on]
    return Gate(caused, [f for f in errors if f not in caused], report.summary())
